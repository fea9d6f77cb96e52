"""count CHECKPOINT: safetensors and GGUF headers read (never the data), tensors mapped to components,
packed quantized weights counted by their logical values, and the comparison with the config beside them.

Every checkpoint here is synthetic: a header written by the helpers below, the data section a sparse
file of zeros (``truncate``), so a file may claim gigabytes and occupy none. Every expected figure is
derived here from shapes and the formats' documented layouts.
"""

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from output.test_schemas import validate

from ffncalc.errors import InputError
from ffncalc.sources.checkpoint import gguf, safetensors

BITS = {"BF16": 16, "F16": 16, "F32": 32, "I32": 32, "U8": 8, "F8_E4M3": 8, "I64": 64}


def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def write_safetensors(path, tensors, metadata=None, data_bytes=None):
    """tensors: (name, dtype, shape); the data section is a hole of the size the header describes."""
    header, offset = {}, 0
    for name, dtype, shape in tensors:
        size = numel(shape) * BITS[dtype] // 8
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    if metadata:
        header["__metadata__"] = metadata
    raw = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        f.truncate(8 + len(raw) + (offset if data_bytes is None else data_bytes))
    return 8 + len(raw)


TORCH_DTYPES = {
    "F32": "float32",
    "F16": "float16",
    "BF16": "bfloat16",
    "I32": "int32",
    "U8": "uint8",
    "I8": "int8",
    "F8_E4M3": "float8_e4m3fn",
}


def write_with_safetensors(path, tensors, metadata=None):
    """The same checkpoint written by the safetensors package's own writer (zeros of each dtype and shape)."""
    import torch
    from safetensors.torch import save_file

    save_file(
        {name: torch.zeros(shape, dtype=getattr(torch, TORCH_DTYPES[dtype])) for name, dtype, shape in tensors},
        str(path),
        metadata=metadata,
    )


@pytest.fixture(params=["by hand", pytest.param("by safetensors", marks=pytest.mark.torch)])
def write(request):
    """Packed-format checkpoints written both ways: the documented header by hand (no torch needed), and by the
    safetensors package's writer (its own tensor order, alignment and data)."""
    return write_safetensors if request.param == "by hand" else write_with_safetensors


# GGUF, from ggml's docs/gguf.md: metadata value types and a writer of the header.
U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
FMT = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f", BOOL: "<?", U64: "<Q", I64: "<q", F64: "<d"}
GGML_F32, GGML_F16, GGML_Q8_0, GGML_Q4_K, GGML_BF16 = 0, 1, 8, 12, 30


def gstring(s):
    raw = s.encode()
    return struct.pack("<Q", len(raw)) + raw


def gvalue(kind, value):
    if kind == STRING:
        return gstring(value)
    if kind == ARRAY:
        inner, items = value
        return struct.pack("<IQ", inner, len(items)) + b"".join(gvalue(inner, v) for v in items)
    return struct.pack(FMT[kind], value)


def write_gguf(path, kvs, tensors, alignment=32, magic=b"GGUF", version=3):
    """kvs: (key, type, value); tensors: (name, dims innermost first, ggml type, bytes)."""
    out = bytearray(magic + struct.pack("<IQQ", version, len(tensors), len(kvs)))
    for key, kind, value in kvs:
        out += gstring(key) + struct.pack("<I", kind) + gvalue(kind, value)
    offset = 0
    for name, dims, kind, size in tensors:
        out += gstring(name) + struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}Q", *dims)
        out += struct.pack("<IQ", kind, offset)
        offset += -(-size // alignment) * alignment
    header = len(out)
    out += b"\0" * (-len(out) % alignment)
    with open(path, "wb") as f:
        f.write(out)
        f.truncate(len(out) + offset)
    return header


# A small Llama: every component's count written out by hand.
V, D, L, H, KV, F = 320, 64, 2, 4, 2, 160
HD = D // H
LLAMA = {
    "model_type": "llama",
    "vocab_size": V,
    "hidden_size": D,
    "num_hidden_layers": L,
    "num_attention_heads": H,
    "num_key_value_heads": KV,
    "intermediate_size": F,
    "max_position_embeddings": 256,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}
BY_HAND = {
    "embed": V * D,
    "attn.q": L * D * D,
    "attn.k": L * KV * HD * D,
    "attn.v": L * KV * HD * D,
    "attn.o": L * D * D,
    "ffn.gate": L * F * D,
    "ffn.up": L * F * D,
    "ffn.down": L * D * F,
    "norms": L * 2 * D,
    "final_norm": D,
    "lm_head": V * D,
}


def llama_tensors(dtype="BF16", layers=range(L), head=True):
    out = [("model.embed_tokens.weight", dtype, (V, D))]
    for i in layers:
        p = f"model.layers.{i}."
        out += [
            (p + "self_attn.q_proj.weight", dtype, (D, D)),
            (p + "self_attn.k_proj.weight", dtype, (KV * HD, D)),
            (p + "self_attn.v_proj.weight", dtype, (KV * HD, D)),
            (p + "self_attn.o_proj.weight", dtype, (D, D)),
            (p + "mlp.gate_proj.weight", dtype, (F, D)),
            (p + "mlp.up_proj.weight", dtype, (F, D)),
            (p + "mlp.down_proj.weight", dtype, (D, F)),
            (p + "input_layernorm.weight", dtype, (D,)),
            (p + "post_attention_layernorm.weight", dtype, (D,)),
        ]
    out.append(("model.norm.weight", dtype, (D,)))
    if head:
        out.append(("lm_head.weight", dtype, (V, D)))
    return out


def counted(cli, *args):
    """A checkpoint count's JSON, validated against its schema (docs/schemas/checkpoint.json)."""
    code, out, err = cli("count", *args, "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert validate(data) in ("checkpoint", "count")  # a config.json alone is counted analytically
    return data


def by_component(data):
    return {c["component"]: c for c in data["components"]}


def compared(data):
    return {c["component"]: c for c in data["compared"]["components"]}


@pytest.fixture
def llama(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(LLAMA))
    write_safetensors(tmp_path / "model.safetensors", llama_tensors())
    return tmp_path


def test_plain_bf16_equals_the_analytic_count(cli, llama):
    data = counted(cli, str(llama / "model.safetensors"))
    parts = by_component(data)
    assert {k: parts[k]["params"] for k in BY_HAND} == BY_HAND
    assert all(parts[k]["bytes"] == 2 * BY_HAND[k] for k in BY_HAND)  # bf16: two bytes a value
    assert data["totals"]["params"] == sum(BY_HAND.values())
    # ffncalc's own count of the config, component by component, agrees
    analytic = counted(cli, str(llama / "config.json"))
    assert analytic["totals"]["params"] == sum(BY_HAND.values()) == data["compared"]["ffncalc_params"]
    assert all(c["checkpoint_params"] == c["ffncalc_params"] == BY_HAND[c["component"]] for c in data["compared"]["components"])
    assert data["compared"]["unexplained"] == 0
    assert data["header_bytes_read"] == (llama / "model.safetensors").stat().st_size - data["data_bytes"]


def test_folder_and_every_format(cli, llama):
    assert counted(cli, str(llama))["totals"]["params"] == sum(BY_HAND.values())
    code, out, _ = cli("count", str(llama))
    assert code == 0 and f"all {len(BY_HAND)} components agree" in out and "headers only" in out
    code, out, _ = cli("count", str(llama), "-f", "markdown")
    assert code == 0 and "| attn.q | attention |" in out
    code, out, _ = cli("count", str(llama), "-f", "csv")
    lines = out.strip().splitlines()
    assert lines[0].startswith("component,part,tensors,params") and lines[-1].startswith("total,,")
    assert int(lines[-1].split(",")[3]) == sum(BY_HAND.values())


def test_flops_options_refused_for_a_checkpoint(cli, llama):
    code, _, err = cli("count", str(llama), "--seq-len", "128")
    assert code == 2 and "--seq-len" in err and len(err.strip().splitlines()) == 1


def test_tied_head_stored_twice_is_explained(cli, tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({**LLAMA, "tie_word_embeddings": True}))
    write_safetensors(tmp_path / "model.safetensors", llama_tensors())
    data = counted(cli, str(tmp_path))
    head = compared(data)["lm_head"]
    assert (head["checkpoint_params"], head["ffncalc_params"]) == (V * D, 0)
    assert head["explained"] and "second time" in head["why"]
    assert data["compared"]["ffncalc_params"] == sum(BY_HAND.values()) - V * D


def test_sharded_index_with_a_missing_shard(cli, tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(LLAMA))
    first = [t for t in llama_tensors(layers=[0], head=False) if t[0] != "model.norm.weight"]
    second = llama_tensors(layers=[1])[1:]  # the second layer, the final norm and the head
    write_safetensors(tmp_path / "model-00001-of-00002.safetensors", first)
    weight_map = {n: "model-00001-of-00002.safetensors" for n, _, _ in first}
    weight_map |= {n: "model-00002-of-00002.safetensors" for n, _, _ in second}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    data = counted(cli, str(tmp_path))
    assert [m["file"] for m in data["missing"]] == ["model-00002-of-00002.safetensors"] * len(second)
    rows = compared(data)
    # the second layer, the final norm and the head are in the missing shard
    assert rows["attn.q"]["checkpoint_params"] == D * D and rows["attn.q"]["ffncalc_params"] == 2 * D * D
    assert rows["lm_head"]["checkpoint_params"] == 0
    for name in ("attn.q", "ffn.down", "norms", "final_norm", "lm_head"):
        assert rows[name]["explained"] and "model-00002-of-00002.safetensors" in rows[name]["why"]
    assert data["compared"]["unexplained"] == 0
    code, out, _ = cli("count", str(tmp_path))
    assert code == 0 and "missing: 1 file(s)" in out


@pytest.mark.parametrize("bits", [4, 8])
def test_gptq_packed_layer(cli, tmp_path, write, bits):
    """GPTQ: qweight int32 [in·bits/32, out]; qzeros int32 [groups, out·bits/32]; scales fp16 [groups, out];
    g_idx int32 [in]. The logical weight is in × out; the rest decodes it."""
    d_in, d_out, group = 128, 96, 64
    groups = d_in // group
    tensors = [
        ("model.layers.0.self_attn.q_proj.qweight", "I32", (d_in * bits // 32, d_out)),
        ("model.layers.0.self_attn.q_proj.qzeros", "I32", (groups, d_out * bits // 32)),
        ("model.layers.0.self_attn.q_proj.scales", "F16", (groups, d_out)),
        ("model.layers.0.self_attn.q_proj.g_idx", "I32", (d_in,)),
        ("model.layers.0.self_attn.q_proj.bias", "F16", (d_out,)),
    ]
    write(tmp_path / "model.safetensors", tensors)
    quant = {"quant_method": "gptq", "bits": bits, "group_size": group}
    if bits == 4:  # in config.json's quantization_config
        (tmp_path / "config.json").write_text(json.dumps({**LLAMA, "quantization_config": quant}))
    else:  # in AutoGPTQ's own quantize_config.json, no config.json
        (tmp_path / "quantize_config.json").write_text(json.dumps(quant))
    data = counted(cli, str(tmp_path / "model.safetensors"))
    q = by_component(data)["attn.q"]
    assert q["params"] == d_in * d_out + d_out
    assert q["bytes"] == d_in * bits // 8 * d_out + 2 * d_out  # the packed ints, and the fp16 bias
    assert q["decoding"] == {
        "zero-point": {"tensors": 1, "bytes": groups * d_out * bits // 32 * 4},
        "scale": {"tensors": 1, "bytes": groups * d_out * 2},
        "g_idx": {"tensors": 1, "bytes": d_in * 4},
    }
    assert data["totals"]["params"] == d_in * d_out + d_out


def test_mxfp4_blocks_and_scales(cli, tmp_path, write):
    """gpt-oss: *_blocks uint8 [experts, rows, blocks, 16] (32 values a block, two a byte) and *_scales uint8
    [experts, rows, blocks]."""
    e, rows, cols = 4, 96, 64
    blocks = cols // 32
    p = "model.layers.0.mlp.experts."
    write(
        tmp_path / "model.safetensors",
        [
            (p + "gate_up_proj_blocks", "U8", (e, 2 * rows, blocks, 16)),
            (p + "gate_up_proj_scales", "U8", (e, 2 * rows, blocks)),
            (p + "gate_up_proj_bias", "BF16", (e, 2 * rows)),
            (p + "down_proj_blocks", "U8", (e, cols, rows // 32, 16)),
            (p + "down_proj_scales", "U8", (e, cols, rows // 32)),
            (p + "router_never_mind", "BF16", (1,)),
        ],
    )
    data = counted(cli, str(tmp_path / "model.safetensors"))
    experts = by_component(data)["ffn.experts"]
    logical = e * 2 * rows * cols + e * cols * rows
    assert experts["params"] == logical + e * 2 * rows + 1
    assert experts["storage"]["MXFP4: 2 per U8"] == logical
    assert experts["decoding"]["scale"]["bytes"] == e * 2 * rows * blocks + e * cols * (rows // 32)


def test_fp8_with_block_scales(cli, tmp_path, write):
    rows, cols = 300, 256  # 128×128 blocks: ceil(300/128) = 3 by 2
    write(
        tmp_path / "model.safetensors",
        [
            ("model.layers.0.mlp.down_proj.weight", "F8_E4M3", (rows, cols)),
            ("model.layers.0.mlp.down_proj.weight_scale_inv", "F32", (3, 2)),
        ],
    )
    data = counted(cli, str(tmp_path / "model.safetensors"))
    down = by_component(data)["ffn.down"]
    assert (down["params"], down["bytes"]) == (rows * cols, rows * cols)
    assert down["decoding"] == {"scale": {"tensors": 1, "bytes": 3 * 2 * 4}}
    assert down["dtype_bytes"] == {"F8_E4M3": rows * cols, "F32": 24}


def test_nvfp4_and_bitsandbytes(cli, tmp_path, write):
    rows, cols = 64, 128
    write(
        tmp_path / "model.safetensors",
        [
            ("model.layers.0.mlp.up_proj.weight", "U8", (rows, cols // 2)),  # NVFP4: two values a byte
            ("model.layers.0.mlp.up_proj.weight_scale", "F8_E4M3", (rows, cols // 16)),
            ("model.layers.0.mlp.up_proj.weight_scale_2", "F32", ()),
            ("model.layers.0.mlp.up_proj.input_scale", "F32", ()),
            ("model.layers.0.mlp.gate_proj.weight", "U8", (rows * cols // 2, 1)),  # bitsandbytes nf4
            ("model.layers.0.mlp.gate_proj.weight.absmax", "F32", (rows * cols // 64,)),
            ("model.layers.0.mlp.gate_proj.weight.quant_map", "F32", (16,)),
            ("model.layers.0.mlp.gate_proj.weight.quant_state.bitsandbytes__nf4", "U8", (80,)),
        ],
    )
    parts = by_component(counted(cli, str(tmp_path / "model.safetensors")))
    assert parts["ffn.up"]["params"] == parts["ffn.gate"]["params"] == rows * cols
    assert parts["ffn.up"]["decoding"]["scale"] == {"tensors": 3, "bytes": rows * cols // 16 + 4 + 4}
    assert parts["ffn.gate"]["decoding"]["quant state"] == {"tensors": 2, "bytes": 64 + 80}


def test_gguf_q4_k_and_q8_0(cli, tmp_path):
    """Bytes per block from ggml-common.h: block_q8_0 = fp16 d + 32 int8 (34 bytes per 32 values);
    block_q4_K = fp16 d, fp16 dmin, 12 bytes of 6-bit scales, 128 bytes of nibbles (144 per 256)."""
    q8_0, q4_k = 2 + 32, 2 + 2 + 12 + 256 // 2
    vocab, width, ff = 96, 256, 512
    tensors = [
        ("token_embd.weight", [width, vocab], GGML_Q8_0, vocab * (width // 32) * q8_0),
        ("blk.0.attn_norm.weight", [width], GGML_F32, 4 * width),
        ("blk.0.attn_q.weight", [width, width], GGML_Q4_K, width * (width // 256) * q4_k),
        ("blk.0.ffn_down.weight", [ff, width], GGML_Q4_K, width * (ff // 256) * q4_k),
        ("blk.0.ffn_gate_exps.weight", [width, ff, 4], GGML_Q8_0, 4 * ff * (width // 32) * q8_0),
        ("blk.0.ffn_gate_inp.weight", [width, 4], GGML_F16, 2 * width * 4),
        ("output_norm.weight", [width], GGML_F32, 4 * width),
        ("output.weight", [width, vocab], GGML_BF16, 2 * width * vocab),
    ]
    kvs = [
        ("general.architecture", STRING, "llama"),
        ("general.name", STRING, "tiny"),
        ("general.alignment", U32, 64),
        ("llama.block_count", U64, 1),
        ("llama.rope.freq_base", F32, 10000.0),
        ("general.file_type", U32, 15),
        ("some.flag", BOOL, True),
        ("some.f64", F64, 0.5),
        ("some.i8", I8, -3),
        ("tokenizer.ggml.tokens", ARRAY, (STRING, [f"t{i}" for i in range(vocab)])),
        ("tokenizer.ggml.token_type", ARRAY, (I32, [1] * vocab)),
        ("nested", ARRAY, (ARRAY, [(U8, [1, 2]), (U16, [3])])),
    ]
    path = tmp_path / "tiny-Q4_K_M.gguf"
    write_gguf(path, kvs, tensors, alignment=64)
    data = counted(cli, str(path))
    parts = by_component(data)
    assert parts["embed"] == {**parts["embed"], "params": vocab * width, "bytes": vocab * width // 32 * 34}
    assert parts["attn.q"]["params"] == width * width and parts["attn.q"]["bytes"] == width * width // 256 * 144
    assert parts["ffn.down"]["bytes"] == ff * width // 256 * 144
    assert parts["ffn.experts"]["params"] == 4 * ff * width
    assert parts["ffn.router"]["params"] == 4 * width and parts["lm_head"]["bytes"] == 2 * width * vocab
    assert data["totals"]["params"] == sum(numel(t[1]) for t in tensors)
    assert data["totals"]["param_bytes"] == sum(t[3] for t in tensors)
    assert data["metadata"]["general.name"] == "tiny" and data["metadata"]["llama.block_count"] == 1
    assert parts["attn.q"]["storage"] == {"Q4_K": width * width}


def test_gguf_split_files_are_read_together(cli, tmp_path):
    for i, name in ((1, "token_embd.weight"), (2, "output.weight")):
        write_gguf(tmp_path / f"m-{i:05d}-of-00002.gguf", [("split.count", U16, 2)], [(name, [32, 10], GGML_F16, 640)])
    data = counted(cli, str(tmp_path / "m-00001-of-00002.gguf"))
    assert len(data["files"]) == 2 and data["totals"]["params"] == 640
    os.remove(tmp_path / "m-00002-of-00002.gguf")
    data = counted(cli, str(tmp_path / "m-00001-of-00002.gguf"))
    assert data["missing"] == [{"tensor": "(its tensors)", "file": "m-00002-of-00002.gguf"}]


def _bad_safetensors(path, kind):
    if kind == "short":
        path.write_bytes(b"\x10\x00")
    elif kind == "truncated header":
        path.write_bytes(struct.pack("<Q", 500) + b'{"a": 1}')
    elif kind == "header too large":
        path.write_bytes(struct.pack("<Q", 200_000_000) + b"{}")
    elif kind == "bad json":
        path.write_bytes(struct.pack("<Q", 9) + b'{"a": [1,')
    elif kind == "unknown dtype":
        raw = json.dumps({"w": {"dtype": "F7", "shape": [2], "data_offsets": [0, 2]}}).encode()
        path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0\0")
    elif kind == "wrong length":
        raw = json.dumps({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}).encode()
        path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * 4)
    elif kind == "truncated data":
        write_safetensors(path, [("w", "F32", (1000,))], data_bytes=10)
    elif kind == "overlap":
        raw = json.dumps(
            {"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]}, "b": {"dtype": "U8", "shape": [4], "data_offsets": [2, 6]}}
        ).encode()
        path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * 6)


@pytest.mark.parametrize(
    "kind, message",
    [
        ("short", "shorter than the 8-byte header length"),
        ("truncated header", "truncated: the header claims 500 bytes"),
        ("header too large", "larger than the 100,000,000-byte limit"),
        ("bad json", "header is not JSON"),
        ("unknown dtype", "unknown dtype 'F7'"),
        ("wrong length", "span 4 bytes; shape [2] of F32 takes 8"),
        ("truncated data", "truncated: the header describes 4,000 bytes of tensor data, the file holds 10"),
        ("overlap", "overlaps the tensor before it"),
    ],
)
def test_malformed_safetensors(cli, tmp_path, kind, message):
    path = tmp_path / "bad.safetensors"
    _bad_safetensors(path, kind)
    code, out, err = cli("count", str(path))
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and str(path) in err and message in err, err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "kind, message",
    [
        ("magic", "not a GGUF file: it starts with b'GGML'"),
        ("version", "GGUF version 1 is not read"),
        ("type", "unknown ggml type 99"),
        ("value type", "unknown value type 77"),
        ("truncated", "truncated GGUF header"),
        ("truncated vocabulary", "truncated GGUF header: the array tokenizer.ggml.tokens"),
        ("blocks", "Q4_K packs 256 elements a block; its rows of 100 are not whole blocks"),
        ("data", "truncated: the header describes tensor data up to byte"),
    ],
)
def test_malformed_gguf(cli, tmp_path, kind, message):
    path = tmp_path / "bad.gguf"
    ok = [("w", [256, 2], GGML_Q4_K, 2 * 144)]
    if kind == "magic":
        write_gguf(path, [], ok, magic=b"GGML")
    elif kind == "version":
        write_gguf(path, [], ok, version=1)
    elif kind == "type":
        write_gguf(path, [], [("w", [4], 99, 4)])
    elif kind == "value type":
        path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + gstring("k") + struct.pack("<I", 77))
    elif kind == "truncated":
        write_gguf(path, [("general.name", STRING, "x")], ok)
        path.write_bytes(path.read_bytes()[:40])
    elif kind == "truncated vocabulary":
        write_gguf(path, [("tokenizer.ggml.tokens", ARRAY, (STRING, [f"token {i}" for i in range(1000)]))], ok)
        path.write_bytes(path.read_bytes()[:5000])
    elif kind == "blocks":
        write_gguf(path, [], [("w", [100, 2], GGML_Q4_K, 144)])
    elif kind == "data":
        size = write_gguf(path, [], ok)
        os.truncate(path, size + 10)
    code, out, err = cli("count", str(path))
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and str(path) in err and message in err, err


class Counting:
    """A file object that records how many bytes were read from it."""

    def __init__(self, f):
        self.f, self.read_bytes = f, 0

    def read(self, n=-1):
        data = self.f.read(n)
        self.read_bytes += len(data)
        return data


def test_a_huge_checkpoint_costs_its_header(cli, tmp_path):
    """A header that describes 8 GiB of data in a sparse file: the header is all that is read."""
    n = 8 * 2**30 // 2
    path = tmp_path / "model.safetensors"
    header = write_safetensors(path, [("model.embed_tokens.weight", "BF16", (n // D, D))])
    assert path.stat().st_size == header + 2 * n and path.stat().st_blocks * 512 < 1 << 20  # sparse
    with open(path, "rb") as f:
        counting = Counting(f)
        safetensors.read_header(counting, str(path), path.stat().st_size)
    assert counting.read_bytes == header
    data = counted(cli, str(path))
    assert data["totals"]["params"] == n and data["header_bytes_read"] == header

    gpath = tmp_path / "big.gguf"
    size = write_gguf(gpath, [("general.name", STRING, "big")], [("token_embd.weight", [D, n // D], GGML_BF16, 2 * n)])
    with open(gpath, "rb") as f:
        counting = Counting(f)
        tensors, _, read, _ = gguf.read_header(counting, str(gpath), gpath.stat().st_size, gpath.name)
    assert tensors[0].numel == n and counting.read_bytes == read
    assert read < size + gguf.CHUNK  # the header, and at most one read-ahead chunk past it


def test_reading_a_checkpoint_imports_no_torch(tmp_path, llama):
    probe = (
        "import sys\nfrom ffncalc.cli import main\ntry:\n    main(['count', sys.argv[1], '-f', 'json'])\n"
        "except SystemExit as exc:\n    assert exc.code == 0, exc.code\n"
        "heavy = sorted(m for m in ('torch', 'numpy', 'transformers', 'huggingface_hub') if m in sys.modules)\n"
        "sys.stderr.write('HEAVY=' + ','.join(heavy) + '\\n')\n"
    )
    gguf_path = tmp_path / "g.gguf"
    write_gguf(gguf_path, [], [("token_embd.weight", [32, 4], GGML_F32, 512)])
    for target in (llama / "model.safetensors", gguf_path):
        out = subprocess.run(
            [sys.executable, "-c", probe, str(target)],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
        )
        assert out.returncode == 0, out.stderr
        assert out.stderr.strip().splitlines()[-1] == "HEAVY="


@pytest.mark.torch  # huggingface_hub comes with transformers, in the torch set's environment
def test_a_repo_id_offline_names_the_cached_alternative(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    import huggingface_hub.constants as constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.chdir(tmp_path)
    code, _, err = cli("count", "some-org/some-model")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "HF_HUB_OFFLINE" in err and "nothing of it is cached" in err
    # a cached snapshot with only its config: named as the alternative
    snap = tmp_path / "hub" / "models--some-org--some-model" / "snapshots" / ("a" * 40)
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps(LLAMA))
    (snap.parent.parent / "refs").mkdir()
    (snap.parent.parent / "refs" / "main").write_text("a" * 40)
    code, _, err = cli("count", "some-org/some-model")
    assert code == 2 and f"ffncalc count {snap / 'config.json'}" in err
    # its weights cached too: read from the cache, headers only
    write_safetensors(snap / "model.safetensors", llama_tensors())
    data = counted(cli, "some-org/some-model")
    assert data["totals"]["params"] == sum(BY_HAND.values()) and data["compared"]["unexplained"] == 0


def test_a_local_path_wins_over_a_repo_id(cli, tmp_path, monkeypatch, llama):
    monkeypatch.chdir(llama.parent)
    assert counted(cli, f"{llama.name}/model.safetensors")["totals"]["params"] == sum(BY_HAND.values())


def test_header_checks_in_the_library(tmp_path):
    with pytest.raises(InputError, match="data_offsets"):
        safetensors.tensors({"w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}}, "x", "x", None)
    with pytest.raises(InputError, match="gap of 4 bytes"):
        safetensors.tensors({"w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, "x", "x", None)
    found, meta = safetensors.tensors(
        {"__metadata__": {"format": "pt"}, "w": {"dtype": "F4", "shape": [6], "data_offsets": [0, 3]}}, "x", "x", None
    )
    assert meta == {"format": "pt"} and found[0].nbytes == 3


# A small DeepSeek-V3: one dense layer, two MoE layers, one multi-token prediction layer stored as layer 3.
DS = {
    "model_type": "deepseek_v3",
    "vocab_size": 256,
    "hidden_size": 64,
    "intermediate_size": 96,
    "moe_intermediate_size": 32,
    "num_hidden_layers": 3,
    "first_k_dense_replace": 1,
    "n_routed_experts": 4,
    "n_shared_experts": 1,
    "num_experts_per_tok": 2,
    "n_group": 1,
    "topk_group": 1,
    "num_attention_heads": 2,
    "num_key_value_heads": 2,
    "q_lora_rank": 32,
    "kv_lora_rank": 16,
    "qk_nope_head_dim": 8,
    "qk_rope_head_dim": 8,
    "v_head_dim": 8,
    "num_nextn_predict_layers": 1,
    "max_position_embeddings": 512,
    "tie_word_embeddings": False,
}


def deepseek_tensors():
    d, v, h = DS["hidden_size"], DS["vocab_size"], DS["num_attention_heads"]
    qk, vd, ql, kvl, rope = 16, 8, 32, 16, 8
    out = [("model.embed_tokens.weight", "BF16", (v, d))]
    mtp = []
    for i in range(4):
        p = f"model.layers.{i}."
        layer = [
            (p + "self_attn.q_a_proj.weight", "BF16", (ql, d)),
            (p + "self_attn.q_a_layernorm.weight", "BF16", (ql,)),
            (p + "self_attn.q_b_proj.weight", "BF16", (h * qk, ql)),
            (p + "self_attn.kv_a_proj_with_mqa.weight", "BF16", (kvl + rope, d)),
            (p + "self_attn.kv_a_layernorm.weight", "BF16", (kvl,)),
            (p + "self_attn.kv_b_proj.weight", "BF16", (h * (qk - rope + vd), kvl)),
            (p + "self_attn.o_proj.weight", "BF16", (d, h * vd)),
            (p + "input_layernorm.weight", "BF16", (d,)),
            (p + "post_attention_layernorm.weight", "BF16", (d,)),
        ]
        if i == 0:
            layer += [(p + f"mlp.{n}_proj.weight", "BF16", (96, d) if n != "down" else (d, 96)) for n in ("gate", "up", "down")]
        else:
            layer += [(p + "mlp.gate.weight", "BF16", (4, d)), (p + "mlp.gate.e_score_correction_bias", "F32", (4,))]
            layer += [
                (p + f"mlp.experts.{e}.{n}_proj.weight", "BF16", (32, d) if n != "down" else (d, 32))
                for e in range(4)
                for n in ("gate", "up", "down")
            ]
            layer += [
                (p + f"mlp.shared_experts.{n}_proj.weight", "BF16", (32, d) if n != "down" else (d, 32))
                for n in ("gate", "up", "down")
            ]
        if i == 3:
            layer += [
                (p + "embed_tokens.weight", "BF16", (v, d)),
                (p + "enorm.weight", "BF16", (d,)),
                (p + "hnorm.weight", "BF16", (d,)),
                (p + "eh_proj.weight", "BF16", (d, 2 * d)),
                (p + "shared_head.norm.weight", "BF16", (d,)),
                (p + "shared_head.head.weight", "BF16", (v, d)),
            ]
            mtp = layer
        out += layer
    return out + [("model.norm.weight", "BF16", (d,)), ("lm_head.weight", "BF16", (v, d))], mtp


def test_mtp_layers_and_buffers_are_explained(cli, tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(DS))
    tensors, mtp = deepseek_tensors()
    write_safetensors(tmp_path / "model.safetensors", tensors)
    data = counted(cli, str(tmp_path))
    rows = compared(data)
    mtp_params = sum(numel(s) for n, _, s in mtp if "e_score_correction_bias" not in n)
    assert rows["mtp"]["checkpoint_params"] == rows["mtp"]["ffncalc_params"] == mtp_params
    assert "embedding and head copies" in rows["mtp"]["why"]
    bias = rows["buffer: e_score_correction_bias"]
    assert (bias["checkpoint_params"], bias["ffncalc_params"]) == (3 * 4, 0)  # two MoE layers and the MTP layer
    assert bias["explained"] and "buffer" in bias["why"]
    model = [t for t in tensors if t not in mtp and "e_score_correction_bias" not in t[0]]
    assert data["compared"]["ffncalc_params"] == sum(numel(s) for _, _, s in model)
    assert data["compared"]["unexplained"] == 0 and all(
        c["checkpoint_params"] == c["ffncalc_params"]
        for c in data["compared"]["components"]
        if not c["component"].startswith("buffer")
    )
    assert data["totals"]["params"] == sum(numel(s) for n, _, s in tensors if "e_score" not in n)


def test_vision_tower_and_unknown_tensors(cli, tmp_path):
    # a language model's config beside a checkpoint that holds a tower too (every wrapper of the multimodal mappings is
    # read whole or refused): its tower tensors are explained as another part of a multimodal model
    text = {k: v for k, v in LLAMA.items() if k != "tie_word_embeddings"} | {"model_type": "llama", "tie_word_embeddings": False}
    (tmp_path / "config.json").write_text(json.dumps(text))
    lm = list(llama_tensors())
    tower = [
        ("model.vision_tower.transformer.layers.0.attention.q_proj.weight", "BF16", (32, 32)),
        ("model.multi_modal_projector.linear_1.weight", "BF16", (D, 32)),
        ("model.layers.0.mystery.weight", "BF16", (3, 5)),
    ]
    write_safetensors(tmp_path / "model.safetensors", lm + tower)
    data = counted(cli, str(tmp_path))
    rows = compared(data)
    assert {k: rows[k]["checkpoint_params"] for k in BY_HAND} == BY_HAND
    assert rows["tower: vision_tower"]["checkpoint_params"] == 32 * 32 and rows["tower: vision_tower"]["explained"]
    assert rows["tower: multi_modal_projector"]["checkpoint_params"] == D * 32
    assert "no tower config" in rows["tower: vision_tower"]["why"]
    mystery = rows["(unmatched) mystery"]
    assert mystery["checkpoint_params"] == 15 and not mystery["explained"]
    assert data["compared"]["unexplained"] == 1
    code, out, _ = cli("count", str(tmp_path))
    assert code == 0 and "✗ 1 difference(s) unexplained: (unmatched) mystery" in out


@pytest.mark.torch  # huggingface_hub comes with transformers, in the torch set's environment
def test_a_repo_id_read_from_the_hub(cli, tmp_path, monkeypatch):
    """The Hub's answers stood in for: config.json from hf_hub_download, the headers from
    get_safetensors_metadata, both called with the revision after @."""
    import huggingface_hub
    import huggingface_hub.constants as constants
    from huggingface_hub.utils import SafetensorsFileMetadata, SafetensorsRepoMetadata, TensorInfo

    from ffncalc.sources.checkpoint import hub

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(hub, "_reachable", lambda endpoint: True)
    config = tmp_path / "config.json"
    config.write_text(json.dumps(LLAMA))
    calls = []

    def download(repo, filename, revision=None, **kw):
        calls.append((repo, filename, revision))
        return str(config)

    def metadata(repo, revision=None, **kw):
        calls.append((repo, "headers", revision))
        files, offset = {}, 0
        for i, part in enumerate((llama_tensors()[:10], llama_tensors()[10:])):
            infos = {}
            for name, dtype, shape in part:
                size = numel(shape) * BITS[dtype] // 8
                infos[name] = TensorInfo(dtype=dtype, shape=list(shape), data_offsets=(offset, offset + size))
                offset += size
            files[f"model-0000{i + 1}-of-00002.safetensors"] = SafetensorsFileMetadata(metadata={}, tensors=infos)
            offset = 0
        return SafetensorsRepoMetadata(metadata=None, sharded=True, weight_map={}, files_metadata=files)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    monkeypatch.setattr(huggingface_hub, "get_safetensors_metadata", metadata)
    data = counted(cli, "some-org/tiny-llama@v1")
    assert calls == [("some-org/tiny-llama", "config.json", "v1"), ("some-org/tiny-llama", "headers", "v1")]
    assert data["totals"]["params"] == sum(BY_HAND.values()) and data["compared"]["unexplained"] == 0
    assert data["files"][0] == "hf://some-org/tiny-llama@v1/model-00001-of-00002.safetensors"

    class RepositoryNotFoundError(Exception):
        pass

    def missing(repo, revision=None, **kw):
        raise RepositoryNotFoundError("404 Client Error\nmore detail")

    monkeypatch.setattr(huggingface_hub, "get_safetensors_metadata", missing)
    code, _, err = cli("count", "some-org/nothing-here")
    assert code == 2 and err.strip() == (
        "ffncalc: error: some-org/nothing-here: no such file or folder, nor repo on "
        "the Hugging Face Hub (a private one needs HF_TOKEN)"
    )
    monkeypatch.setattr(hub, "_reachable", lambda endpoint: False)
    code, _, err = cli("count", "some-org/tiny-llama")
    assert code == 2 and "no network" in err and len(err.strip().splitlines()) == 1


def test_symlink_loops_and_missing_files_are_one_line(tmp_path, monkeypatch):
    """A link loop, a dangling link and a missing checkpoint file: one line naming the path, exit 2."""
    import os
    import subprocess
    import sys

    (tmp_path / "a.safetensors").symlink_to(tmp_path / "b.safetensors")
    (tmp_path / "b.safetensors").symlink_to(tmp_path / "a.safetensors")
    (tmp_path / "x.gguf").symlink_to(tmp_path / "gone.gguf")
    for name, says in (("a.safetensors", "leads nowhere"), ("x.gguf", "leads nowhere"), ("missing.safetensors", "no such file")):
        run = subprocess.run(
            [sys.executable, "-m", "ffncalc", "count", str(tmp_path / name)],
            capture_output=True,
            text=True,
            env={**os.environ, "COLUMNS": "80"},
            timeout=60,
        )
        assert run.returncode == 2, run.stderr
        lines = run.stderr.strip().splitlines()
        assert len(lines) == 1 and says in lines[0] and name in lines[0]


@pytest.mark.torch  # numpy and the gguf package come with the torch set's environment
def test_gguf_written_by_the_gguf_package(tmp_path, cli):
    """A GGUF file written by gguf-py's own GGUFWriter (llama.cpp's): an F32 table, a Q8_0 and a Q4_K matrix.
    By hand from ggml-common.h: block_q8_0 holds 32 values in 34 bytes (an fp16 scale, 32 int8); block_q4_K
    256 values in 144 bytes (fp16 d and dmin, 12 bytes of 6-bit scales, 128 bytes of 4-bit values)."""
    import numpy as np
    from gguf import GGMLQuantizationType, GGUFWriter, quantize

    path = tmp_path / "tiny.gguf"
    w = GGUFWriter(str(path), "llama")
    w.add_tensor("token_embd.weight", np.zeros((64, 256), np.float32))
    w.add_tensor(
        "blk.0.attn_q.weight", quantize(np.ones((8, 256), np.float32), GGMLQuantizationType.Q8_0), raw_dtype=GGMLQuantizationType.Q8_0
    )
    w.add_tensor("blk.0.ffn_down.weight", np.zeros((4, 2 * 144), np.uint8), raw_dtype=GGMLQuantizationType.Q4_K)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    code, out, err = cli("count", str(path), "--format", "json")
    assert code == 0, err
    parts = {c["component"]: c for c in json.loads(out)["components"]}
    assert (parts["embed"]["params"], parts["embed"]["bytes"]) == (64 * 256, 64 * 256 * 4)
    assert (parts["attn.q"]["params"], parts["attn.q"]["bytes"]) == (8 * 256, 8 * 256 // 32 * 34)
    assert (parts["ffn.down"]["params"], parts["ffn.down"]["bytes"]) == (4 * 512, 4 * 512 // 256 * 144)


@pytest.mark.torch  # transformers writes the checkpoint
def test_sharded_checkpoint_written_by_transformers(tmp_path, cli):
    """A tiny Llama saved by transformers' own save_pretrained, sharded with its index: every parameter by hand
    (vocab 64, width 16, 2 layers, 4 heads of 4 with 2 KV heads, SwiGLU 32, untied), and the comparison with
    the config.json saved beside it finds no difference."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=64,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(tmp_path, max_shard_size="8KB")
    assert (tmp_path / "model.safetensors.index.json").is_file()
    d, v, f, kv = 16, 64, 32, 2 * 4
    per_layer = d * d + 2 * d * kv + d * d + 3 * d * f + 2 * d  # q, k and v, o, gate/up/down, two norms
    total = v * d + 2 * per_layer + d + v * d  # embedding, layers, final norm, head
    code, out, err = cli("count", str(tmp_path), "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert sum(c["params"] for c in data["components"]) == total
    assert len(data["files"]) > 1 and not data["missing"]
    compared = data["compared"]
    assert compared["ffncalc_params"] == total and compared["unexplained"] == 0
    assert compared["components"] and all(c["difference"] == 0 for c in compared["components"])

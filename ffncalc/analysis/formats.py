"""Weight bytes in the formats models are deployed in, exact from each format's block layout.

A matrix of ``rows`` outputs × ``cols`` inputs is stored row by row in blocks along its input dimension;
each format states its bytes per block (and any per-row or per-tensor scales). What is not a matrix (norms,
biases, attention sinks) stays 16-bit (fp32 in GGUF, where llama.cpp keeps 1-D tensors F32); the router stays
16-bit in every format (gpt-oss, GPTQ and llama.cpp leave it unquantized). Outside GGUF the embedding and the
output head stay bf16, as GPTQ/AWQ, fp8 and MXFP4 checkpoints ship them.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..errors import InputError
from ..model.stack import Model
from ..sources.checkpoint.gguf import BLOCKS  # ggml's (elements, bytes) per block, from ggml-common.h
from .plan import Formats


@dataclass(frozen=True)
class Format:
    name: str
    block: int  # elements per block along a row (1: element-wise)
    block_bytes: int  # bytes per block
    source: str
    tile_scale: int = 0  # fp8 block scaling: one fp32 scale per tile × tile block of the matrix
    row_bytes: int = 0  # per output row (a per-channel scale)
    tensor_bytes: int = 0  # per tensor (a global scale)
    gguf: str | None = None  # the ggml type, or the llama.cpp mix ("Q4_K_M", "Q5_K_M")
    zero_bits: int = 0  # per block, packed apart (GPTQ's qzeros)

    def matrix_bytes(self, rows: int, cols: int) -> int:
        if self.gguf and self.gguf in BLOCKS:
            return _ggml_bytes(self.gguf, rows, cols)[0]
        if self.tile_scale:
            t = self.tile_scale
            return rows * cols * self.block_bytes // self.block + 4 * (-(-rows // t)) * (-(-cols // t))
        blocks = rows * (-(-cols // self.block))
        return blocks * self.block_bytes + -(-blocks * self.zero_bits // 8) + rows * self.row_bytes + self.tensor_bytes

    @property
    def bits(self) -> Fraction:
        """Bits per weight of a large matrix, scales included."""
        return Fraction(8 * self.block_bytes + self.zero_bits, self.block) + (
            Fraction(32, self.tile_scale**2) if self.tile_scale else 0
        )


def _gguf(name: str) -> Format:
    block, size = BLOCKS[name]
    return Format(name.lower(), block, size, f"ggml {name}: {size} bytes per {block} weights (ggml-common.h)", gguf=name)


FORMATS: dict[str, Format] = {
    "fp32": Format("fp32", 1, 4, "IEEE float32"),
    "bf16": Format("bf16", 1, 2, "bfloat16"),
    "fp16": Format("fp16", 1, 2, "IEEE float16"),
    "fp8": Format(
        "fp8", 1, 1, "fp8 e4m3 with one fp32 scale per 128×128 block (DeepSeek-V3 §3.3.2, weight_scale_inv)", tile_scale=128
    ),
    "int8": Format("int8", 1, 1, "int8 with one 16-bit scale per output channel (symmetric per-channel W8)", row_bytes=2),
    # GPTQ/AWQ at group size 128: 4-bit values, per group of 128 inputs an fp16 scale (scales) and a 4-bit
    # zero point packed eight to an int32 (qzeros): 64 + 2 + 0.5 bytes per 128 weights = 4.15625 bits
    "int4": Format(
        "int4",
        128,
        66,
        "GPTQ/AWQ 4-bit, group 128: fp16 scale + 4-bit zero per group (Frantar et al. 2023; Lin et al. 2024)",
        zero_bits=4,
    ),
    # OCP Microscaling Formats (MX) v1.0 §5: 32 e2m1 values (16 bytes) share one e8m0 scale byte: 4.25 bits
    "mxfp4": Format("mxfp4", 32, 17, "OCP MX v1.0: 32 fp4 e2m1 values + one e8m0 scale (4.25 bits)"),
    # NVFP4: 16 e2m1 values (8 bytes) share an fp8 e4m3 scale, and each tensor one fp32 scale: 4.5 bits
    "nvfp4": Format("nvfp4", 16, 9, "NVIDIA NVFP4: 16 fp4 values + one e4m3 scale, + fp32 per tensor (4.5 bits)", tensor_bytes=4),
    **{n.lower(): _gguf(n) for n in ("Q8_0", "Q6_K", "Q5_K", "Q4_K", "Q3_K", "Q2_K", "Q5_0", "Q4_0")},
    "q4_k_m": Format(
        "q4_k_m",
        *BLOCKS["Q4_K"],
        "llama.cpp Q4_K_M: Q4_K, with Q6_K for attn_v and ffn_down on "
        "use_more_bits layers and the output (llama-quant.cpp, llama_tensor_get_type)",
        gguf="Q4_K_M",
    ),
    "q5_k_m": Format(
        "q5_k_m",
        *BLOCKS["Q5_K"],
        "llama.cpp Q5_K_M: Q5_K, with Q6_K for attn_v and ffn_down on "
        "use_more_bits layers and the output (llama-quant.cpp, llama_tensor_get_type)",
        gguf="Q5_K_M",
    ),
}

# llama.cpp's fallback when a row's width is not a multiple of the type's block (llama-quant.cpp,
# tensor_type_fallback): 256-wide k-quants fall back to a 32-wide type, then to F16.
FALLBACK = {"Q2_K": "Q4_0", "Q3_K": "Q4_0", "Q4_K": "Q5_0", "Q5_K": "Q5_1", "Q6_K": "Q8_0"}
GGUF_EXTRA = {"Q5_1": (32, 24), "F16": (1, 2), "F32": (1, 4)}


def named(name: str, option: str = "--dtype") -> Format:
    f = FORMATS.get(name.lower())
    if f is None:
        raise InputError(f"{option} {name}: unknown; known: {', '.join(FORMATS)}")
    return f


def deployed(formats: Formats) -> tuple[Format, Format | None]:
    """The weights' format (--dtype) and the routed experts' where stated (--experts-dtype; None: the weights')."""
    return named(formats.dtype), named(formats.experts_dtype, "--experts-dtype") if formats.experts_dtype else None


WEIGHT_BITS = {"fp32": 32, "bf16": 16, "fp16": 16, "fp8": 8, "int8": 8, "int4": 4}  # an element by --kv-dtype
# llama.cpp's KV cache types (-ctk, -ctv): a row of a layer's K or V is stored in ggml blocks along the KV heads'
# width, so an element takes 8 × bytes ÷ elements of its block: q8_0 34 bytes per 32 (an fp16 scale and 32 int8),
# q4_0 18 bytes per 32 (an fp16 scale and 16 bytes of nibbles) (ggml-common.h, block_q8_0 and block_q4_0)
KV_BITS: dict[str, int | Fraction] = {
    **WEIGHT_BITS,
    **{t.lower(): Fraction(8 * BLOCKS[t][1], BLOCKS[t][0]) for t in ("Q8_0", "Q4_0")},
}


def _ggml_bytes(kind: str, rows: int, cols: int) -> tuple[int, str]:
    """Bytes of a rows × cols matrix in a ggml type, with llama.cpp's fallback for widths off its block."""
    while True:
        block, size = BLOCKS.get(kind) or GGUF_EXTRA[kind]
        if cols % block == 0:
            return rows * (cols // block) * size, kind
        kind = FALLBACK.get(kind, "F16")


def use_more_bits(i: int, n: int) -> bool:
    """llama.cpp's layers that get more bits in the _M mixes: the first and last eighth, and every third
    layer between (llama-quant.cpp)."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


@dataclass(frozen=True)
class WeightBytes:
    total: int
    experts: int  # the routed experts' share
    embedding: int  # the input embedding (looked up, never read whole in decode)
    params: int
    by_type: dict[str, int]  # GGUF: bytes by ggml type, to show the mix
    # (dense, routed-expert) bytes of each layer, in order; the rest of ``total`` is outside the layers (the
    # embedding, the final norm, the head, model-level parts), which pipeline stages place
    layers: tuple[tuple[int, int], ...] = ()
    tied: int = 0  # the token table that is also the head (tied embeddings), within ``embedding``
    # bytes of weights whose work is once a sequence (Term.per_sequence: an encoder, the cross-attention's k and v),
    # which a decode step does not read: in each layer, and outside the layers beside the embedding's
    once: tuple[int, ...] = ()
    once_outside: int = 0

    @property
    def bits(self) -> float:
        return 8 * self.total / self.params if self.params else 0.0

    @property
    def outside(self) -> int:
        """Bytes of the tensors no layer holds."""
        return self.total - sum(d + e for d, e in self.layers)


class _PerLayer:
    """Bytes added per layer as rows are sized: a row over layers a..b adds its bytes evenly to each (the
    layers of a row are identical)."""

    def __init__(self, n_layers: int):
        self.bytes = [[0, 0] for _ in range(n_layers)]

    def add(self, r, n: int, layer: int | None = None) -> None:
        if r.layers is None or r.part == "mtp":
            return
        if layer is not None:
            self.bytes[layer][bool(r.expert)] += n
            return
        a, b = r.layers
        for i in range(a, b):
            self.bytes[i][bool(r.expert)] += n // (b - a)

    def done(self) -> tuple[tuple[int, int], ...]:
        return tuple((d, e) for d, e in self.bytes)

    def read(self) -> tuple[int, ...]:
        """Each layer's bytes, dense and expert together."""
        return tuple(d + e for d, e in self.bytes)


def _kind(r) -> str:
    """What a tally row is to a quantizer: matrix, embedding, head, router, or small (kept as is)."""
    if len(r.shape) != 2:  # norms, biases, sinks, and factored tables such as Reformer's axial positions
        return "small"
    if r.role in ("token", "position", "tied"):
        return "embedding"
    if r.role == "head":
        return "head"
    if r.component.endswith("router") or ".router" in r.name:
        return "router"
    return "matrix"


def weight_bytes(spec: Model, fmt: Format, experts: Format | None = None) -> WeightBytes:
    """Every stored tensor of the model in ``fmt`` (its routed experts in ``experts`` if given), exact."""
    from .count import tally

    experts = experts or fmt
    t = tally(spec)
    if fmt.gguf in ("Q4_K_M", "Q5_K_M") or experts.gguf in ("Q4_K_M", "Q5_K_M"):
        return _gguf_mix(spec, t, fmt, experts)
    total = exp = emb = tied = once_outside = 0
    per_layer, once = _PerLayer(spec.n_layers), _PerLayer(spec.n_layers)
    for r in t.rows:
        if not r.params:
            continue
        kind = _kind(r)
        f = experts if r.expert else fmt
        if kind == "matrix" or (kind in ("embedding", "head") and f.gguf):
            n = r.count * f.matrix_bytes(*r.shape)  # GGUF: every matrix in its type (llama-quantize --pure)
        elif kind == "small" and f.gguf:
            n = 4 * r.params  # llama.cpp keeps 1-D tensors F32
        else:
            n = 2 * r.params  # embedding, head, router, norms, biases: 16-bit
        total += n
        exp += n if r.expert else 0
        emb += n if kind == "embedding" else 0
        tied += n if r.role == "tied" else 0
        per_layer.add(r, n)
        if r.per_sequence:
            once.add(r, n)
            once_outside += n if r.layers is None and kind != "embedding" else 0
    return WeightBytes(total, exp, emb, t.params, {}, per_layer.done(), tied, once.read(), once_outside)


def _gguf_mix(spec: Model, t, fmt: Format, experts: Format) -> WeightBytes:
    """llama.cpp's Q4_K_M / Q5_K_M per tensor (llama-quant.cpp, llama_tensor_get_type, non-Falcon path):
    the base k-quant everywhere; Q6_K for the output (Q8_0 when its width is off the block), for attn_v and
    ffn_down on use_more_bits layers; models of 8 experts: attn_v and attn_k Q8_0 and, for Q4_K_M,
    attn_output Q5_K; 80-layer models (llama.cpp's 70B type): attn_v Q5_K where it would be Q4_K. attn_v is
    counted over the attn_v tensors, ffn_down over every ffn_down tensor (dense, experts, shared), indexed by
    layer in a mixture model and by position otherwise. Tied embeddings take the output's type. Widths off
    the block fall back (Q4_K → Q5_0, Q5_K → Q5_1, Q6_K → Q8_0)."""
    base = (fmt.gguf if fmt.gguf in ("Q4_K_M", "Q5_K_M") else experts.gguf)[:4]  # Q4_K or Q5_K
    mix = fmt.gguf if fmt.gguf in ("Q4_K_M", "Q5_K_M") else experts.gguf
    n_expert = max((b.routed_experts() for b in spec.blocks()), default=0)
    n_layers = spec.n_layers

    # per layer, in order: the tensors llama.cpp counts
    v_layers = sorted({i for r in t.rows if r.name == "attn.v.weight" and r.layers for i in range(*r.layers)})
    downs = sorted(
        (i, r.name)
        for r in t.rows
        if r.slot == "ffn" and "down" in r.name and r.name.endswith("weight") and r.layers
        for i in range(*r.layers)
    )
    n_down = len(downs)
    down_index = {key: (key[0] if n_expert > 1 else pos) for pos, key in enumerate(downs)}
    total = exp = emb = tied = 0
    by_type: dict[str, int] = {}
    per_layer, once, outside = _PerLayer(n_layers), _PerLayer(n_layers), [0]

    def read_once(r, n: int, embedding: bool, layer: int | None = None) -> None:  # work once a sequence: no decode step
        if r.per_sequence:
            once.add(r, n, layer)
            outside[0] += n if r.layers is None and not embedding else 0

    def add(kind: str, rows: int, cols: int, count: int, r, embedding: bool = False, layer: int | None = None) -> int:
        nonlocal total, exp, emb, tied
        if kind in ("F16", "F32", "BF16"):
            n, used = rows * cols * (4 if kind == "F32" else 2) * count, kind
        else:
            n, used = _ggml_bytes(kind, rows, cols)
            n *= count
        by_type[used] = by_type.get(used, 0) + n
        total += n
        exp += n if r.expert else 0
        emb += n if embedding else 0
        tied += n if r.role == "tied" else 0
        per_layer.add(r, n, layer)
        read_once(r, n, embedding, layer)
        return n

    for r in t.rows:
        if not r.params:
            continue
        kind = _kind(r)
        f = experts if r.expert else fmt
        if kind == "small":
            add("F32", 1, r.params, 1, r)
            continue
        if kind == "router":
            add("F32", *r.shape, r.count, r)  # ffn_gate_inp is never quantized
            continue
        rows, cols = r.shape
        if f.gguf not in ("Q4_K_M", "Q5_K_M"):  # a plain format beside the mix (--experts-dtype)
            n = r.count * f.matrix_bytes(rows, cols) if (f.gguf or kind == "matrix") else 2 * r.params
            total += n
            exp += n if r.expert else 0
            by_type[f.name] = by_type.get(f.name, 0) + n
            per_layer.add(r, n)
            read_once(r, n, kind == "embedding")
            continue
        if kind == "head" or (kind == "embedding" and spec.tie_embeddings):
            block = BLOCKS[base][0]
            add("Q8_0" if cols % block else "Q6_K", rows, cols, r.count, r, kind == "embedding")
            continue
        if kind == "embedding":
            add(base, rows, cols, r.count, r, True)
            continue
        if r.layers is None:  # a model-level matrix beside the layers: the base type
            add(base, rows, cols, r.count, r)
            continue
        per_layer_count = r.count // (r.layers[1] - r.layers[0])
        for i in range(*r.layers):
            kind_i = base
            if r.name == "attn.v.weight":
                if use_more_bits(v_layers.index(i), len(v_layers)):
                    kind_i = "Q6_K"
                if n_layers == 80 and kind_i == "Q4_K":
                    kind_i = "Q5_K"
                if n_expert == 8:
                    kind_i = "Q8_0"
            elif r.name == "attn.k.weight" and n_expert == 8:
                kind_i = "Q8_0"
            elif r.name == "attn.o.weight" and n_expert == 8 and mix == "Q4_K_M":
                kind_i = "Q5_K"
            elif (i, r.name) in down_index and use_more_bits(down_index[(i, r.name)], n_down):
                kind_i = "Q6_K"
            add(kind_i, rows, cols, per_layer_count, r, layer=i)
    return WeightBytes(total, exp, emb, t.params, by_type, per_layer.done(), tied, once.read(), outside[0])


COMPONENTS = ("attention", "ffn", "experts")


def rules(keep: tuple[str, ...]) -> list[tuple[str, tuple[int, int] | None, Format]]:
    """--keep overrides, each COMPONENT=FORMAT (attention, ffn or experts), layers:A-B=FORMAT (layers A to B,
    counting from 0; layers:A for one) or layers:A-B/COMPONENT=FORMAT, later ones winning: (component or "", layer
    range or None, format)."""
    out: list[tuple[str, tuple[int, int] | None, Format]] = []
    for item in keep:
        what, _, name = item.partition("=")
        if not name:
            raise InputError(f"--keep {item}: COMPONENT=FORMAT or layers:A-B=FORMAT")
        f = named(name, "--keep")
        if what.startswith("layers:"):
            what, _, part = what.partition("/")
            if part and part not in COMPONENTS:
                raise InputError(f"--keep {item}: the component is one of {', '.join(COMPONENTS)}")
            a, _, b = what[7:].partition("-")
            if not (a.isdigit() and (b.isdigit() or not b)):
                raise InputError(f"--keep {item}: layers:A-B, two layer numbers from 0")
            lo, hi = int(a), int(b or a)
            if hi < lo:
                raise InputError(f"--keep {item}: the range's end is before its start")
            out.append((part, (lo, hi + 1), f))
        elif what in COMPONENTS:
            out.append((what, None, f))
        else:
            raise InputError(f"--keep {item}: the component is one of {', '.join(COMPONENTS)} or layers:A-B")
    return out


def overridden(spec: Model, fmt: Format, experts: Format | None, keep: tuple[str, ...]) -> WeightBytes:
    """weight_bytes with per-component formats: each matrix of a layer in the last rule that names its
    component or its layer, else in --dtype (routed experts in --experts-dtype). A mixed checkpoint such as
    Meta's FP8 Llama 3.1 405B keeps attention and its first and last layers in bf16 (its config's
    quantization_config lists the modules left unquantized)."""
    from .count import tally

    if fmt.gguf in ("Q4_K_M", "Q5_K_M") or (experts is not None and experts.gguf in ("Q4_K_M", "Q5_K_M")):
        raise InputError("--keep: llama.cpp's _M mixes choose each tensor's type themselves")
    experts = experts or fmt
    found = rules(keep)
    for _, span, _ in found:
        if span and span[1] > spec.n_layers:
            raise InputError(f"--keep layers:{span[0]}-{span[1] - 1}: the model has {spec.n_layers} layers (0–{spec.n_layers - 1})")
    t = tally(spec)
    total = exp = emb = tied = once_outside = 0
    per_layer, once = _PerLayer(spec.n_layers), _PerLayer(spec.n_layers)

    def pick(r, layer: int | None) -> Format:
        f = experts if r.expert else fmt
        for what, span, g in found:
            if span is not None and (layer is None or not span[0] <= layer < span[1]):
                continue
            if not what or what == "experts" and r.expert or what == r.slot and not r.expert:
                f = g
        return f

    for r in t.rows:
        if not r.params:
            continue
        kind = _kind(r)
        spans = [(i, r.count // (r.layers[1] - r.layers[0])) for i in range(*r.layers)] if r.layers else [(None, r.count)]
        for layer, count in spans:
            f = pick(r, layer)
            if kind == "matrix" or (kind in ("embedding", "head") and f.gguf):
                n = count * f.matrix_bytes(*r.shape)
            elif kind == "small" and f.gguf:
                n = 4 * r.params * count // r.count
            else:
                n = 2 * r.params * count // r.count
            total += n
            exp += n if r.expert else 0
            emb += n if kind == "embedding" else 0
            tied += n if r.role == "tied" else 0
            per_layer.add(r, n, layer)
            if r.per_sequence:
                once.add(r, n, layer)
                once_outside += n if r.layers is None and kind != "embedding" else 0
    return WeightBytes(total, exp, emb, t.params, {}, per_layer.done(), tied, once.read(), once_outside)


def formats_note(fmt: Format, experts: Format | None, keep: tuple[str, ...] = ()) -> str:
    text = f"weights: {fmt.name}, {float(fmt.bits):g} bits per weight in large matrices — {fmt.source}"
    if experts is not None and experts is not fmt:
        text += f"; routed experts: {experts.name}, {float(experts.bits):g} bits — {experts.source}"
    if keep:
        text += f"; kept apart (--keep, or the checkpoint's quantization_config): {', '.join(keep)}"
    return text

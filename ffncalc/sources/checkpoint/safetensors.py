"""The safetensors format, read from its header alone: an 8-byte little-endian unsigned length N, then N
bytes of JSON — an object mapping each tensor's name to {"dtype", "shape", "data_offsets": [begin, end]}
(offsets into the data that follows the header), and an optional "__metadata__" of strings — then the
data, which is never read here. The checks are the format's own: known dtypes, whole non-negative shapes,
each tensor's byte range as long as its shape and dtype make it, ranges that tile the data section, and a
file long enough to hold them.
"""

from __future__ import annotations

import os
import sys
from typing import BinaryIO

from ...errors import InputError
from .. import parse_json
from .tensors import Tensor

MAX_HEADER = 100_000_000  # bytes; the reference implementation refuses longer headers too

# dtype -> bits per element (safetensors' Dtype enum). Sub-byte types pack elements across bytes.
DTYPE_BITS = {
    "BOOL": 8,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "I64": 64,
    "U64": 64,
    "F64": 64,
    "C64": 64,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
}


def read_header(f: BinaryIO, where: str, size: int | None) -> tuple[dict, int]:
    """(the header's JSON object, the bytes the header takes, length field included) from a file open at its
    start; ``size`` is the file's length where known, to check the header fits in it."""
    head = f.read(8)
    if len(head) < 8:
        raise InputError(f"{where}: not a safetensors file: {len(head)} bytes, shorter than the 8-byte header length")
    n = int.from_bytes(head, "little")
    if n > MAX_HEADER:
        raise InputError(
            f"{where}: safetensors header of {n:,} bytes is larger than the {MAX_HEADER:,}-byte limit "
            "(not a safetensors file, or a damaged one)"
        )
    if size is not None and 8 + n > size:
        raise InputError(f"{where}: truncated: the header claims {n:,} bytes but the file holds {size - 8:,} after the length")
    raw = f.read(n)
    if len(raw) < n:
        raise InputError(f"{where}: truncated: the header claims {n:,} bytes but only {len(raw):,} could be read")
    data = parse_json(raw, where, "the safetensors header is ")
    if not isinstance(data, dict):
        raise InputError(f"{where}: the safetensors header is a JSON {type(data).__name__}, not an object")
    return data, 8 + n


def tensors(header: dict, where: str, file: str, data_size: int | None) -> tuple[list[Tensor], dict]:
    """The tensors a parsed header lists, checked; and its ``__metadata__``. ``data_size``: the bytes after
    the header, where known (a local file), to check every range lies inside them."""
    meta = header.get("__metadata__") or {}
    if not isinstance(meta, dict):
        raise InputError(f"{where}: __metadata__ is not an object")
    out, ranges, shared = [], [], _SHARED
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype, shape, (begin, stop) = info["dtype"], info["shape"], info["data_offsets"]
            bits = DTYPE_BITS[dtype]
            numel = 1
            for s in shape:
                if type(s) is not int or s < 0:
                    raise ValueError
                numel *= s
            if type(begin) is not int or type(stop) is not int or not 0 <= begin <= stop or type(shape) is not list:
                raise ValueError
        except (TypeError, KeyError, ValueError):
            _explain(name, info, where)
        bits *= numel
        if bits % 8:
            raise InputError(f"{where}: tensor {name!r}: {numel:,} {dtype} elements are not a whole number of bytes")
        if stop - begin != bits // 8:
            raise InputError(
                f"{where}: tensor {name!r}: data_offsets [{begin}, {stop}] span {stop - begin:,} "
                f"bytes; shape {shape} of {dtype} takes {bits // 8:,}"
            )
        ranges.append((begin, stop, name))
        # shared: names with an index's weight_map, and the dtypes, shapes and sizes that thousands of experts
        # repeat, each held once (a DeepSeek-V3-sized header set: about 30 MB less)
        shape = tuple(shape)
        out.append(
            Tensor(sys.intern(name), sys.intern(dtype), shared.setdefault(shape, shape), shared.setdefault(bits // 8, bits // 8), file)
        )
    ranges.sort()
    end = 0
    for begin, stop, name in ranges:
        if begin != end:
            what = "overlaps the tensor before it" if begin < end else f"leaves a gap of {begin - end:,} bytes before it"
            raise InputError(f"{where}: tensor {name!r}: data_offsets begin at {begin:,}, which {what}")
        end = stop
    if data_size is not None and end > data_size:
        raise InputError(f"{where}: truncated: the header describes {end:,} bytes of tensor data, the file holds {data_size:,}")
    return out, {str(k): str(v) for k, v in meta.items()}


# shapes and sizes seen, shared across the shards of a checkpoint (a few dozen distinct ones)
_SHARED: dict = {}


def _explain(name: str, info, where: str):
    """The first thing wrong with a tensor's entry, as one line."""
    if not isinstance(info, dict):
        raise InputError(f"{where}: tensor {name!r}: expected an object, got {info!r}")
    dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
    if dtype not in DTYPE_BITS:
        raise InputError(f"{where}: tensor {name!r}: unknown dtype {dtype!r} (known: {', '.join(DTYPE_BITS)})")
    if not isinstance(shape, list) or not all(type(s) is int and s >= 0 for s in shape):
        raise InputError(f"{where}: tensor {name!r}: shape {shape!r} is not a list of non-negative integers")
    raise InputError(f"{where}: tensor {name!r}: data_offsets {offsets!r} is not [begin, end] with 0 <= begin <= end")


def read(path: str, counter: list[int] | None = None) -> tuple[list[Tensor], dict, int]:
    """A local .safetensors file -> (tensors, metadata, header bytes read). Reads the header and nothing else."""
    try:
        size = os.stat(path).st_size
        with open(path, "rb", buffering=0) as f:
            header, used = read_header(f, path, size)
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if counter is not None:
        counter[0] += used
    found, meta = tensors(header, path, os.path.basename(path), size - used)
    return found, meta, used

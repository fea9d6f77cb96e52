"""The GGUF format (ggml's ``docs/gguf.md``, versions 2 and 3), read from its header alone: the magic
``GGUF``, a uint32 version, a uint64 tensor count and a uint64 key-value count, the metadata key-values
(a string key, a uint32 value type, the value; arrays hold a uint32 element type, a uint64 length and the
elements), then per tensor its name, uint32 n_dims, n_dims uint64 dims (innermost first), uint32 ggml type
and uint64 offset into the data section, which starts at the next multiple of ``general.alignment``
(default 32). Little-endian throughout. The tensor data is never read.
"""

from __future__ import annotations

import os
import struct
from typing import BinaryIO

from ...errors import InputError
from .tensors import Tensor

MAGIC = b"GGUF"
MAX_DIMS = 4  # GGML_MAX_DIMS
CHUNK = 1 << 16  # read ahead at most this far past the header

# ggml_type -> (name, elements per block, bytes per block): ggml's type traits (ggml/src/ggml.c,
# ``type_traits[GGML_TYPE_COUNT]``: .blck_size and .type_size = sizeof(block_…)), with the block structs of
# ggml/src/ggml-common.h. QK_K = 256; ggml_half is 2 bytes. Numbers 4, 5, 31–33 and 36–38 are retired types.
GGML_TYPES = {
    0: ("F32", 1, 4),
    1: ("F16", 1, 2),
    2: ("Q4_0", 32, 18),  # half d; 16 bytes of nibbles
    3: ("Q4_1", 32, 20),  # half d, m; 16 bytes of nibbles
    6: ("Q5_0", 32, 22),  # half d; 4 bytes of 5th bits; 16 bytes of nibbles
    7: ("Q5_1", 32, 24),  # half d, m; 4; 16
    8: ("Q8_0", 32, 34),  # half d; 32 int8
    9: ("Q8_1", 32, 36),  # half d, s; 32 int8
    10: ("Q2_K", 256, 84),  # 16 scales; 64 quants; half d, dmin
    11: ("Q3_K", 256, 110),  # 32 hmask; 64 quants; 12 scales; half d
    12: ("Q4_K", 256, 144),  # half d, dmin; 12 scales; 128 quants
    13: ("Q5_K", 256, 176),  # half d, dmin; 12 scales; 32 high bits; 128 quants
    14: ("Q6_K", 256, 210),  # 128 low 4 bits; 64 high 2 bits; 16 scales; half d
    15: ("Q8_K", 256, 292),  # float d; 256 int8; 16 int16 sums
    16: ("IQ2_XXS", 256, 66),
    17: ("IQ2_XS", 256, 74),
    18: ("IQ3_XXS", 256, 98),
    19: ("IQ1_S", 256, 50),
    20: ("IQ4_NL", 32, 18),
    21: ("IQ3_S", 256, 110),
    22: ("IQ2_S", 256, 82),
    23: ("IQ4_XS", 256, 136),
    24: ("I8", 1, 1),
    25: ("I16", 1, 2),
    26: ("I32", 1, 4),
    27: ("I64", 1, 8),
    28: ("F64", 1, 8),
    29: ("IQ1_M", 256, 56),
    30: ("BF16", 1, 2),
    34: ("TQ1_0", 256, 54),
    35: ("TQ2_0", 256, 66),
    39: ("MXFP4", 32, 17),  # uint8 e8m0 scale; 16 bytes of e2m1 nibbles
    40: ("NVFP4", 64, 36),  # 4 ue4m3 scales (one per 16); 32 bytes of e2m1 nibbles
    41: ("Q1_0", 128, 18),  # half d; 16 bytes of bits
}
BLOCKS = {name: (block, size) for name, block, size in GGML_TYPES.values()}

# metadata value types: struct format, or None for string (8) and array (9)
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
_U64 = struct.Struct("<Q")
KEEP_ARRAY = 64  # arrays up to this length are kept in the metadata; longer ones (vocabularies) as a summary


class _Cursor:
    """Reads a file forward in chunks, only as far as parsing goes; counts the bytes read."""

    def __init__(self, f: BinaryIO, where: str, size: int | None):
        self.f, self.where, self.size = f, where, size
        self.buf, self.pos, self.base, self.read_bytes = b"", 0, 0, 0  # base: file offset of buf[0]

    @property
    def offset(self) -> int:
        return self.base + self.pos

    def _fill(self, n: int, what: str) -> None:
        """Make ``n`` bytes from the cursor available in the buffer."""
        if self.size is not None and self.offset + n > self.size:
            raise InputError(
                f"{self.where}: truncated GGUF header: {what} at byte {self.offset:,} needs {n:,} bytes, "
                f"the file ends at {self.size:,}"
            )
        rest = self.buf[self.pos :]
        more = self.f.read(max(CHUNK, n - len(rest)))
        self.read_bytes += len(more)
        self.base += self.pos
        self.buf, self.pos = rest + more, 0
        if n > len(self.buf):
            raise InputError(
                f"{self.where}: truncated GGUF header: {what} at byte {self.offset:,} needs {n:,} bytes past the end of the file"
            )

    def take(self, n: int, what: str) -> memoryview:
        if self.pos + n > len(self.buf):
            self._fill(n, what)
        out = memoryview(self.buf)[self.pos : self.pos + n]
        self.pos += n
        return out

    def skip_strings(self, n: int, what: str) -> None:
        """Step over ``n`` strings (a vocabulary, merges) without decoding them."""
        length = _U64.unpack_from
        for _ in range(n):
            if self.pos + 8 > len(self.buf):
                self._fill(8, what)
            size = 8 + length(self.buf, self.pos)[0]
            if self.pos + size > len(self.buf):
                self._fill(size, what)
            self.pos += size

    def unpack(self, fmt: str, what: str):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))[0]

    def string(self, what: str) -> str:
        n = self.unpack("<Q", what)
        raw = bytes(self.take(n, what))
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(f"{self.where}: {what} at byte {self.offset - n:,} is not UTF-8") from None


def _value(c: _Cursor, kind: int, key: str, keep: bool = True):
    if kind in _SCALARS:
        return c.unpack(_SCALARS[kind], f"the value of {key}")
    if kind == _STRING:
        return c.string(f"the value of {key}")
    if kind == _ARRAY:
        inner = c.unpack("<I", f"the array type of {key}")
        n = c.unpack("<Q", f"the array length of {key}")
        if inner in _SCALARS:  # fixed size: skip long ones whole
            width = struct.calcsize(_SCALARS[inner])
            if n > KEEP_ARRAY or not keep:
                c.take(n * width, f"the array {key}")
                return _Summary(inner, n)
            return [c.unpack(_SCALARS[inner], f"the array {key}") for _ in range(n)]
        if inner not in (_STRING, _ARRAY):
            raise InputError(f"{c.where}: metadata {key}: unknown array element type {inner}")
        small = keep and n <= KEEP_ARRAY
        if inner == _STRING and not small:
            c.skip_strings(n, f"the array {key}")
            return _Summary(inner, n)
        items = [_value(c, inner, key, small) for _ in range(n)]
        return items if small else _Summary(inner, n)
    raise InputError(f"{c.where}: metadata {key}: unknown value type {kind}")


class _Summary:
    """A long array (a vocabulary, merges, scores), kept as its type and length."""

    def __init__(self, kind: int, n: int):
        self.kind, self.n = kind, n

    def __repr__(self) -> str:
        return f"[{self.n:,} items]"


def read_header(f: BinaryIO, where: str, size: int | None, file: str) -> tuple[list[Tensor], dict, int, int]:
    """(tensors, metadata, bytes read, bytes of tensor data described) from a file open at its start."""
    c = _Cursor(f, where, size)
    magic = bytes(c.take(4, "the magic"))  # a file shorter than 4 bytes is truncated, not another format
    if magic != MAGIC:
        raise InputError(f"{where}: not a GGUF file: it starts with {magic!r}, not {MAGIC!r}")
    version = c.unpack("<I", "the version")
    if version in (2 << 24, 3 << 24):
        raise InputError(f"{where}: a big-endian GGUF file (version {version >> 24}); only little-endian is read")
    if version not in (2, 3):
        raise InputError(f"{where}: GGUF version {version} is not read (versions 2 and 3 are)")
    n_tensors = c.unpack("<Q", "the tensor count")
    n_kv = c.unpack("<Q", "the key-value count")
    if size is not None and (n_tensors > size or n_kv > size):
        raise InputError(
            f"{where}: GGUF header claims {n_tensors:,} tensors and {n_kv:,} keys, more than a {size:,}-byte file can hold"
        )
    meta: dict = {}
    for _ in range(n_kv):
        key = c.string("a metadata key")
        kind = c.unpack("<I", f"the type of {key}")
        meta[key] = _value(c, kind, key)
    alignment = meta.get("general.alignment", 32)
    if not isinstance(alignment, int) or alignment <= 0:
        raise InputError(f"{where}: general.alignment {alignment!r} is not a positive integer")
    infos = []
    for _ in range(n_tensors):
        name = c.string("a tensor name")
        n_dims = c.unpack("<I", f"tensor {name!r}'s n_dims")
        if not 1 <= n_dims <= MAX_DIMS:
            raise InputError(f"{where}: tensor {name!r}: {n_dims} dimensions (GGUF allows 1 to {MAX_DIMS})")
        dims = [c.unpack("<Q", f"tensor {name!r}'s dims") for _ in range(n_dims)]
        kind = c.unpack("<I", f"tensor {name!r}'s type")
        offset = c.unpack("<Q", f"tensor {name!r}'s offset")
        if kind not in GGML_TYPES:
            raise InputError(f"{where}: tensor {name!r}: unknown ggml type {kind}")
        infos.append((name, dims, kind, offset))
    data_start = -(-c.offset // alignment) * alignment
    out, end = [], 0
    for name, dims, kind, offset in infos:
        type_name, block, block_bytes = GGML_TYPES[kind]
        if dims[0] % block:
            raise InputError(
                f"{where}: tensor {name!r}: {type_name} packs {block} elements a block; its rows of {dims[0]:,} are not whole blocks"
            )
        if offset % alignment:
            raise InputError(f"{where}: tensor {name!r}: offset {offset:,} is not a multiple of the alignment {alignment}")
        rows = 1
        for d in dims[1:]:
            rows *= d
        nbytes = dims[0] // block * block_bytes * rows
        end = max(end, offset + nbytes)
        out.append(Tensor(name, type_name, tuple(reversed(dims)), nbytes, file))
    if size is not None and data_start + end > size:
        raise InputError(
            f"{where}: truncated: the header describes tensor data up to byte {data_start + end:,}, the file holds {size:,}"
        )
    return out, meta, c.read_bytes, end


def read(path: str, counter: list[int] | None = None) -> tuple[list[Tensor], dict, int, int]:
    try:
        size = os.stat(path).st_size
        with open(path, "rb", buffering=0) as f:
            found = read_header(f, path, size, os.path.basename(path))
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if counter is not None:
        counter[0] += found[2]
    return found

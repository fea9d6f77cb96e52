"""Checkpoints read from their headers alone: a ``.safetensors`` file, a sharded folder (with its
``model.safetensors.index.json``, or just its ``*.safetensors``), a ``.gguf`` file (and the other files of
its split), or a Hugging Face repo id (``hub.py``). Tensor data is never read: a checkpoint of any size
costs its headers. No torch, no transformers, no numpy.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from ...errors import InputError
from .. import parse_json
from . import gguf, safetensors
from .tensors import Checkpoint, Tensor

__all__ = ["Checkpoint", "Tensor", "is_checkpoint", "is_repo_id", "load"]

INDEX = "model.safetensors.index.json"
_SPLIT = re.compile(r"^(?P<stem>.+)-(?P<i>\d{5})-of-(?P<n>\d{5})\.gguf$")
_REPO = re.compile(r"^[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*(@[\w./-]+)?$")
SPEC_SUFFIXES = (".yaml", ".yml", ".json")


def is_repo_id(ref: str) -> bool:
    """ORG/NAME or ORG/NAME@REVISION that names no local file or folder."""
    name = ref.split("@", 1)[0]
    return bool(_REPO.match(ref)) and not name.endswith(SPEC_SUFFIXES) and not Path(name).exists() and not Path(ref).exists()


def is_checkpoint(ref: str) -> bool:
    """Whether ``count`` reads ``ref`` as weights: a local weights file or folder, or a repo id. A local path
    always wins over a repo id of the same spelling."""
    from .. import check_name

    check_name(ref)
    path = Path(ref)
    if path.is_file():
        return path.suffix in (".safetensors", ".gguf") or path.name.endswith(".safetensors.index.json")
    if path.is_dir():
        return (path / INDEX).is_file() or any(path.glob("*.safetensors")) or any(path.glob("*.gguf"))
    return is_repo_id(ref)


def load(ref: str, as_family: str | None = None) -> Checkpoint:
    """Read the headers ``ref`` names, and the config.json beside them if there is one."""
    path = Path(ref)
    if path.exists():
        return read_local(path, as_family)
    from . import hub

    return hub.load(ref, as_family)


def read_local(path: Path, as_family: str | None = None, label: str | None = None) -> Checkpoint:
    folder = path if path.is_dir() else path.parent
    generic = path.suffix == ".json" or path.stem == "model" or path.stem.startswith("model-")
    label = label or (path.resolve().name if path.is_dir() else folder.resolve().name if generic else path.stem)
    if path.is_file() and path.suffix == ".gguf":
        return _with_config(_gguf(path, label), folder, as_family)
    if path.is_file() and path.suffix == ".safetensors":
        return _with_config(_safetensors([path], label), folder, as_family)
    index = path if path.is_file() else folder / INDEX
    if index.is_file():
        return _with_config(_indexed(index, label), folder, as_family)
    shards = sorted(folder.glob("*.safetensors"))
    if shards:
        return _with_config(_safetensors(shards, label), folder, as_family)
    ggufs = sorted(folder.glob("*.gguf"))
    firsts = [g for g in ggufs if not _SPLIT.match(g.name) or _SPLIT.match(g.name)["i"] == "00001"]
    if len(firsts) == 1:
        return _with_config(_gguf(firsts[0], label), folder, as_family)
    if firsts:
        raise InputError(
            f"{folder}: {len(firsts)} GGUF models in this folder ({', '.join(g.name for g in firsts[:4])}"
            f"{', …' if len(firsts) > 4 else ''}); name one"
        )
    raise InputError(f"{path}: no .safetensors, {INDEX} or .gguf here")


def _safetensors(files: list[Path], label: str, missing=(), notes=(), total: int | None = None) -> Checkpoint:
    found, meta, read, data = [], {}, 0, 0
    for f in files:
        tensors, m, used = safetensors.read(str(f))
        found += tensors
        meta.update(m)
        read += used
        data += sum(t.nbytes for t in tensors)
    notes = list(notes)
    if total is not None and not missing and total != data:
        notes.append(f"the index's metadata.total_size is {total:,} bytes; the shards' headers describe {data:,}")
    return Checkpoint(
        label, "safetensors", tuple(str(f) for f in files), tuple(found), read, data, tuple(missing), metadata=meta, notes=tuple(notes)
    )


def _indexed(index: Path, label: str) -> Checkpoint:
    try:
        text = index.read_bytes()
    except OSError as exc:
        raise InputError(f"{index}: cannot read ({exc.strerror or exc})") from None
    data = parse_json(text, str(index))
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        raise InputError(f"{index}: weight_map is not an object of tensor name -> file name")
    weight_map = {sys.intern(k): sys.intern(v) for k, v in weight_map.items()}  # shared with the shards' tensors
    files = list(dict.fromkeys(weight_map.values()))
    present = [f for f in files if (index.parent / f).is_file()]
    missing = tuple((name, f) for name, f in weight_map.items() if f not in present)
    total = (data.get("metadata") or {}).get("total_size")
    ckpt = _safetensors([index.parent / f for f in present], label, missing, total=total if isinstance(total, int) else None)
    stored = {t.name: t.file for t in ckpt.tensors}
    notes = list(ckpt.notes)
    unlisted = [n for n in stored if n not in weight_map]
    absent = [n for n, f in weight_map.items() if f in present and stored.get(n) != f]
    if unlisted:
        notes.append(f"{len(unlisted)} tensors stored but not in the index (first: {unlisted[0]})")
    if absent:
        notes.append(f"{len(absent)} tensors in the index but not in the shard it names (first: {absent[0]})")
        missing = missing + tuple((n, weight_map[n]) for n in absent)
    return Checkpoint(
        ckpt.label,
        ckpt.format,
        ckpt.files,
        ckpt.tensors,
        ckpt.header_bytes,
        ckpt.data_bytes,
        missing,
        metadata=ckpt.metadata,
        notes=tuple(notes),
    )


def _gguf(path: Path, label: str) -> Checkpoint:
    split = _SPLIT.match(path.name)
    files = [path]
    missing = []
    if split:
        n = int(split["n"])
        files = [path.parent / f"{split['stem']}-{i:05d}-of-{n:05d}.gguf" for i in range(1, n + 1)]
        missing = [("(its tensors)", f.name) for f in files if not f.is_file()]
        files = [f for f in files if f.is_file()]
    found, meta, read, data = [], {}, 0, 0
    for f in files:
        tensors, m, used, end = gguf.read(str(f))
        found += tensors
        meta = meta or m  # the first split holds the model's metadata
        read += used
        data += end
    keep = {k: v for k, v in meta.items() if not k.startswith("tokenizer.")}
    return Checkpoint(label, "gguf", tuple(str(f) for f in files), tuple(found), read, data, tuple(missing), metadata=keep)


QUANT_FILES = ("quantize_config.json", "quant_config.json")  # AutoGPTQ's and AutoAWQ's own files


def _with_config(ckpt: Checkpoint, folder: Path, as_family: str | None) -> Checkpoint:
    from dataclasses import replace

    path = folder / "config.json"
    if path.is_file():
        ckpt = attach_config(ckpt, path, as_family)
    for name in QUANT_FILES if ckpt.quantization is None else ():
        try:
            quant = parse_json((folder / name).read_bytes(), name)
        except (OSError, InputError):  # absent or unreadable: the quantization is not stated there
            continue
        if isinstance(quant, dict):
            return replace(ckpt, quantization=quant, notes=ckpt.notes + (f"quantization read from {name}",))
    return ckpt


def attach_config(ckpt: Checkpoint, path: Path, as_family: str | None) -> Checkpoint:
    """The checkpoint with the config.json that describes it; one that ffncalc cannot read is named in a
    note, and the weights are still counted."""
    from dataclasses import replace

    from .. import hf

    try:
        c = hf.read_config(path, as_family)
        hf.family_of(c)
    except InputError as exc:
        return replace(ckpt, config_path=str(path), notes=ckpt.notes + (f"not compared with config.json: {exc}",))
    quant = parse_json(c.text, str(path)).get("quantization_config")
    return replace(ckpt, config=c, config_path=str(path), quantization=quant if isinstance(quant, dict) else None)

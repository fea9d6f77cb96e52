"""A Hugging Face repo id (``ORG/NAME`` or ``ORG/NAME@REVISION``) -> its checkpoint's headers, through
``huggingface_hub`` (the optional extra ``hub``; imported here only): config.json and the safetensors
headers, fetched with range requests (``get_safetensors_metadata``), never the weights. huggingface_hub
reads HF_TOKEN, HF_HUB_OFFLINE and the cache itself. A snapshot whose weights are all cached is read
from the cache; with no network, the error names what is cached instead.
"""

from __future__ import annotations

import json
from pathlib import Path

from ...errors import InputError
from . import _REPO, INDEX, read_local
from .safetensors import tensors as checked
from .tensors import Checkpoint


def load(ref: str, as_family: str | None = None) -> Checkpoint:
    repo, _, revision = ref.partition("@")
    revision = revision or None
    try:
        import huggingface_hub  # noqa: F401
    except ImportError:
        raise InputError(
            f"{ref}: no such file or folder; to read it as a Hugging Face repo id, install huggingface_hub: pip install 'ffncalc[hub]'"
        ) from None
    from huggingface_hub import constants

    cached = _cached(repo, revision)
    if cached is not None and _complete(cached):
        return read_local(cached, as_family, label=ref)
    local = f"{ref}: no such file or folder; as a Hugging Face repo:"
    if constants.HF_HUB_OFFLINE:
        raise InputError(f"{local} HF_HUB_OFFLINE is set and the weights are not in the cache; {_alternative(cached)}")
    if not _reachable(constants.ENDPOINT):  # else huggingface_hub retries for half a minute, then fails
        raise InputError(f"{local} no network: {constants.ENDPOINT} cannot be reached; {_alternative(cached)}")
    import logging

    hub_log = logging.getLogger("huggingface_hub")
    level = hub_log.level
    hub_log.setLevel(logging.ERROR)  # its retry warnings; a failure is reported as one line below
    try:
        return _remote(repo, revision, ref, as_family)
    except InputError:
        raise
    except Exception as exc:  # huggingface_hub's and the HTTP client's errors, named below
        raise InputError(_explain(exc, ref, cached)) from None
    finally:
        hub_log.setLevel(level)


def cached_config(ref: str) -> Path | None:
    """The config.json of a repo id (``ORG/NAME[@REVISION]``) in the local Hugging Face cache, or None: nothing
    is fetched, and nothing outside the cache is read."""
    repo, _, revision = ref.partition("@")
    if not _REPO.match(ref) or ".." in ref or "--" in repo or revision.startswith("/"):  # a name, never a way out
        return None
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    try:
        found = try_to_load_from_cache(repo, "config.json", revision=revision or None)
    except Exception:  # not a valid repo id or revision
        return None
    return Path(found) if isinstance(found, str) else None


def _reachable(endpoint: str, timeout: float = 5.0) -> bool:
    """Whether the Hub's host answers a TCP connection; assumed so behind a proxy, which may be the only way
    out."""
    import os
    import socket
    from urllib.parse import urlparse

    if any(os.environ.get(k) for k in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return True
    url = urlparse(endpoint)
    try:
        socket.create_connection((url.hostname, url.port or (443 if url.scheme == "https" else 80)), timeout).close()
    except (OSError, ValueError, TypeError):
        return False
    return True


def _cached(repo: str, revision: str | None) -> Path | None:
    """The cached snapshot folder of this revision, if the cache knows it."""
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(repo, revision=revision, local_files_only=True))
    except Exception:  # not cached, or not a valid repo id
        return None


def _complete(folder: Path) -> bool:
    """Whether the cached snapshot holds every weight file: the index and each shard it names, or a
    single safetensors file."""
    index = folder / INDEX
    if index.is_file():
        try:
            files = set(json.loads(index.read_text(encoding="utf-8")).get("weight_map", {}).values())
        except (OSError, ValueError, AttributeError):
            return False
        return all((folder / f).is_file() for f in files)
    return any(folder.glob("*.safetensors"))


def _alternative(cached: Path | None) -> str:
    if cached is not None and (cached / "config.json").is_file():
        return f"cached: its config.json, which ffncalc counts analytically: ffncalc count {cached / 'config.json'}"
    return "nothing of it is cached"


def _explain(exc: Exception, ref: str, cached: Path | None) -> str:
    name = type(exc).__name__
    names = {c.__name__ for c in type(exc).__mro__}
    first = (str(exc).strip().splitlines() or [""])[0]
    if "GatedRepoError" in names:
        return f"{ref}: a gated repo; accept its terms on the Hub and set HF_TOKEN"
    if "RepositoryNotFoundError" in names:
        return f"{ref}: no such file or folder, nor repo on the Hugging Face Hub (a private one needs HF_TOKEN)"
    if "RevisionNotFoundError" in names:
        return f"{ref}: no such revision"
    if "NotASafetensorsRepoError" in names:
        return f"{ref}: the repo holds no model.safetensors or {INDEX}"
    if "SafetensorsParsingError" in names:
        return f"{ref}: a safetensors header could not be parsed ({first})"
    if names & {
        "OfflineModeIsEnabled",
        "ConnectionError",
        "ConnectError",
        "Timeout",
        "TimeoutException",
        "ReadTimeout",
        "ConnectTimeout",
        "NetworkError",
        "LocalEntryNotFoundError",
    }:
        return f"{ref}: no network: the Hugging Face Hub cannot be reached ({name}); {_alternative(cached)}"
    return f"{ref}: {name}: {first}"


def _remote(repo: str, revision: str | None, ref: str, as_family: str | None) -> Checkpoint:
    from huggingface_hub import get_safetensors_metadata, hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError

    try:
        config = Path(hf_hub_download(repo, "config.json", revision=revision))
    except EntryNotFoundError:
        config = None
    meta = get_safetensors_metadata(repo, revision=revision)
    found, data = [], 0
    for file, info in meta.files_metadata.items():
        header = {
            name: {"dtype": t.dtype, "shape": list(t.shape), "data_offsets": list(t.data_offsets)} for name, t in info.tensors.items()
        }
        tensors, _ = checked(header, f"{ref}:{file}", file, None)
        found += tensors
        data += sum(t.nbytes for t in tensors)
    where = f"{repo}@{revision}" if revision else repo
    ckpt = Checkpoint(
        ref,
        "safetensors",
        tuple(f"hf://{where}/{f}" for f in meta.files_metadata),
        tuple(found),
        0,
        data,
        notes=("headers fetched from the Hugging Face Hub with range requests",),
    )
    if config is None:
        return ckpt
    from . import attach_config

    return attach_config(ckpt, config, as_family)

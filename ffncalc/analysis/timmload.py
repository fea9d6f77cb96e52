"""timm's vision towers for transformers' TimmWrapper (Gemma 3n's MobileNetV5, FastVLM's FastViTHD, Perception LM's PE)
where timm is installed and torchvision is not.

timm imports torchvision at import time for what no tower of these models builds: FrozenBatchNorm2d (timm.layers'
norm registries), the data transforms and datasets (timm.data). The only torchvision wheel for this torch is a CUDA
build that fails to load beside a CPU torch ("operator torchvision::nms does not exist"), so ``enable()`` imports timm
with those names standing in as classes that refuse to be built, and tells transformers' TimmWrapper that timm is
there (transformers asks for torchvision too, only for its image processors). A tower that did build one of them
fails loudly. With torchvision importable, nothing is stood in: timm imports as it is.

Install timm without its dependencies (they would pull torchvision, and a CUDA torch with it):
``pip install --no-deps timm==1.0.31``.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types

TIMM_VERSION = "1.0.31"


class _Absent:
    def __init__(self, *args, **kwargs):
        raise RuntimeError(f"{type(self).__name__} is torchvision's, which is not installed")


class _Names(types.ModuleType):
    """A torchvision module whose every name is a class that refuses to be built (InterpolationMode: an enum)."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        if name == "InterpolationMode":  # timm.data's tables name its members at import
            import enum

            modes = ("nearest", "bilinear", "bicubic", "box", "hamming", "lanczos", "nearest-exact")
            return enum.Enum(name, {m.upper().replace("-", "_"): m for m in modes})
        return type(name, (_Absent,), {})


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name == "torchvision" or name.startswith("torchvision."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _Names(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


def available() -> bool:
    """Whether timm is installed."""
    return importlib.util.find_spec("timm") is not None


def enable() -> bool:
    """Import timm (standing in torchvision's names where torchvision is absent) and make transformers' TimmWrapper
    build with it. False where timm is not installed."""
    if not available():
        return False
    if "timm" not in sys.modules:
        stand_in = importlib.util.find_spec("torchvision") is None
        finder = _Finder()
        if stand_in:
            sys.meta_path.insert(0, finder)
        try:
            import timm  # noqa: F401
        finally:
            if stand_in:  # transformers must not see a torchvision: its image processors would use it
                sys.meta_path.remove(finder)
                for name in [n for n in sys.modules if n.split(".")[0] == "torchvision"]:
                    del sys.modules[name]
    import timm
    from transformers.models.timm_wrapper import modeling_timm_wrapper
    from transformers.utils import import_utils

    # TimmWrapperModel asks for ("vision", "timm"); transformers' timm check also asks for torchvision
    message = import_utils.BACKENDS_MAPPING["timm"][1]
    import_utils.BACKENDS_MAPPING["timm"] = (lambda: True, message)
    modeling_timm_wrapper.timm = timm  # imported there only when transformers' own check passed
    return True

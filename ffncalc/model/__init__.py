"""What a model is: the spec a user writes (``spec``), how it is read (``schema``), the resolved per-layer
stack every analysis walks (``stack``) and the terms blocks count in (``terms``)."""

from __future__ import annotations

from .schema import SpecError
from .spec import ModelSpec
from .stack import Layer, Model, Run, resolve


def from_data(data: dict, *, check: bool = True) -> Model:
    """A spec as plain data -> the resolved model. ``check``: validate with pydantic first (user input);
    without it the data is trusted (shipped presets) and pydantic is never imported."""
    from .schema import build, validate

    spec = validate(ModelSpec, data) if check else build(ModelSpec, data)
    return resolve(spec)


__all__ = ["Layer", "Model", "ModelSpec", "Run", "SpecError", "from_data", "resolve"]

"""ERNIE 4.5-VL's variable-resolution resampler (Ernie4_5_VLMoeVariableResolutionResamplerModel, transformers 5.23's
modeling_ernie4_5_vl_moe.py). Not a part of its own: a projector (parts/projector.py) holds one, in place of its own
stages. Over an image's patches of the tower's width w, with s = w · merge² (spatial_merge_size²), in the order it runs:

- merge × merge patches side by side into one row of s features (a reshape: "imitates convolution");
- spatial_linear (Ernie4_5_VLMoeVisionMLP): fc1 Linear(s, s) with a bias, GELU, fc2 Linear(s, s) with a bias, a
  LayerNorm of s;
- the temporal slicing: an image is one frame, its row duplicated as both frames (``frames`` = temporal_merge_size,
  2, copies side by side: no multiply-adds);
- temporal_linear: fc1 Linear(frames · s, s) with a bias, GELU, fc2 Linear(s, s) with a bias, a LayerNorm of s;
- mlp, Linear(s, the model's width) with a bias, and after_norm, an RMSNorm of the model's width.

Every stage runs once a row: an image of g × g patches is (g / merge)² tokens of the language model."""

from __future__ import annotations

from dataclasses import dataclass

from ..model.schema import Positive
from ..model.spec import Norm
from ..model.terms import ACTIVATION_OPS, Emitter


@dataclass(frozen=True)
class VariableResampler:
    merge: Positive = 2  # patches a side of a token (spatial_merge_size)
    frames: Positive = 2  # frames side by side into temporal_linear (temporal_merge_size; an image's one, repeated)

    def terms(self, width: int, d_model: int, prefix: str) -> list[tuple[str, object]]:
        """Its tensors and their work a token it writes, named under ``prefix`` (its projector's: vision.projector.)."""
        s = width * self.merge**2
        e = Emitter("layers")
        for stage, wide in (("spatial", s), ("temporal", self.frames * s)):
            e.linear(f"{prefix}{stage}.fc1", wide, s, True, 1)
            e.op(f"{prefix}{stage}.act", s * ACTIVATION_OPS["gelu"], 1)
            e.linear(f"{prefix}{stage}.fc2", s, s, True, 1)
            e.norm(f"{prefix}{stage}.norm", Norm(kind="layernorm"), s, 1)
        e.linear(f"{prefix}linear", s, d_model, True, 1)
        e.norm(f"{prefix}post_norm", Norm(kind="rmsnorm"), d_model, 1)
        return [("projector", t) for t in e.out]

    def module(self, width: int, d_model: int):
        """Its reference module (imports torch when called): forward(patches) runs one batch of images' patches."""
        import torch
        from torch import nn

        from ..blocks._torch import ACTIVATIONS, Linear, make_norm

        spec, s = self, width * self.merge**2

        class Stage(nn.Module):
            def __init__(self, wide: int):
                super().__init__()
                self.fc1, self.fc2 = Linear(wide, s, bias=True), Linear(s, s, bias=True)
                self.norm = make_norm(Norm(kind="layernorm"), s)

            def forward(self, x):
                return self.norm(self.fc2(ACTIVATIONS["gelu"](self.fc1(x))))

        class VariableResamplerModule(nn.Module):
            def __init__(self):
                super().__init__()
                self.spatial, self.temporal = Stage(s), Stage(spec.frames * s)
                self.linear = Linear(s, d_model, bias=True)
                self.post_norm = make_norm(Norm(kind="rmsnorm"), d_model)

            def forward(self, x):
                b, n, w = x.shape
                h = self.spatial(x.reshape(b, n // spec.merge**2, w * spec.merge**2))
                h = self.temporal(torch.cat([h] * spec.frames, dim=-1))  # an image's one frame, as every frame
                return self.post_norm(self.linear(h))

        return VariableResamplerModule()

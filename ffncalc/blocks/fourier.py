"""Fourier token mixing (Lee-Thorp et al. 2022, "FNet: Mixing Tokens with Fourier Transforms", §3.2), as transformers
instantiates it (transformers 5.23.0, models/fnet/modeling_fnet.py, ``FNetBasicFourierTransform`` without the TPU
optimizations): the real part of a two-dimensional discrete Fourier transform over the sequence and the hidden
features, torch.fft.fftn(x, dim=(1, 2)).real. No parameters, no matrix multiplications (torch's FlopCounterMode has
no formula for the FFT and counts none); its elementwise work estimated as an FFT's 5 · N · log2 N real operations
(Cooley & Tukey 1965, radix 2) over the N = s · d points of a sequence, log2 rounded up: 5 · d · ⌈log2(s · d)⌉ per
token. Nothing cached: every token mixes with every other (an encoder's mixer)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from . import Block, register


@register
@dataclass(frozen=True)
class FourierMixer(Block):
    """The real part of a 2-D FFT over the sequence and the features (FNet)."""

    kind = "fourier"
    slot = "attention"
    summary = "Fourier token mixing: the real part of a 2-D FFT over sequence and features (Lee-Thorp et al. 2022, FNet)"

    def describe(self) -> str:
        return "2-D Fourier transform, real part"

    def terms(self, e, model, seq_len: int) -> None:
        d = model.d_model
        points = seq_len * d
        e.op("attn.fft", e.n * 5 * d * (points - 1).bit_length())  # 5·N·⌈log2 N⌉ per sequence, per token

    def kept_elements(self, model) -> int:
        """Nothing: the FFT is linear, its gradient the transform of the output's (torch's fft_r2c backward keeps
        no tensor), and the casts to and from fp32 keep none."""
        return 0

    def torch_module(self, model, causal: bool):
        return _module()()


@cache
def _module():
    import torch
    from torch import nn

    class Fourier(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            from . import _fused

            if _fused.active() and x.dtype not in (torch.float32, torch.float64):
                # FFT kernels (cuFFT, pocketfft) take no bf16: the transform in fp32, cast
                # back; neither cast keeps anything
                return torch.fft.fftn(x.float(), dim=(1, 2)).real.to(x.dtype)
            return torch.fft.fftn(x, dim=(1, 2)).real

    return Fourier

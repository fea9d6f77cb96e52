"""What fused kernels keep for backward, for proving the blocks' kept activations (``Block.kept_elements`` and
``score_bytes(flash=True)``) against autograd: inside ``fused()`` the reference modules run rotary positions and
attention as a training stack's kernels do. Rotary positions are recomputed in backward from the positions, keeping
nothing (Megatron-LM's fused_apply_rotary_pos_emb, torchtitan's rotary over a precomputed table); attention runs
torch's own flash kernel for the CPU (scaled_dot_product_attention, FLASH_ATTENTION: it keeps Q, K and V as given,
K and V at their own heads with ``enable_gqa``, the output and the fp32 log-sum-exp of every query and head, as
FlashAttention-2 does, Dao 2023 §3.1), its window, chunk or ALiBi mask a table built once (a kernel's own
arithmetic, never an activation). Outside ``fused()`` nothing changes: the modules count FLOPs as before.
"""

from __future__ import annotations

import contextvars
from contextlib import contextmanager

import torch
from torch.nn import functional as F

_FUSED = contextvars.ContextVar("fused", default=False)


@contextmanager
def fused():
    token = _FUSED.set(True)
    try:
        yield
    finally:
        _FUSED.reset(token)


def active() -> bool:
    return _FUSED.get()


def _turn(x: torch.Tensor, half: int, base: float, sign: float) -> torch.Tensor:
    """x rotated, in x's own layout (a kernel writes its output where its input lies: (B, s, heads, d) in memory)."""
    inv_freq = base ** (-torch.arange(half, device=x.device, dtype=torch.float32) / half)
    angles = torch.arange(x.shape[-2], device=x.device, dtype=torch.float32)[:, None] * inv_freq[None, :]
    cos, sin = angles.cos().to(x.dtype), (sign * angles.sin()).to(x.dtype)
    x1, x2, rest = x[..., :half], x[..., half : 2 * half], x[..., 2 * half :]
    return torch.empty_like(x).copy_(torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos, rest], dim=-1))


class _Rotary(torch.autograd.Function):
    """A rotation by each position's angles; its gradient is the rotation back, recomputed: nothing kept."""

    @staticmethod
    def forward(ctx, x, half: int, base: float):
        ctx.half, ctx.base = half, base
        with torch.no_grad():
            return _turn(x, half, base, 1.0)

    @staticmethod
    def backward(ctx, grad):
        return _turn(grad, ctx.half, ctx.base, -1.0), None, None


def rotary(x: torch.Tensor, half: int, base: float) -> torch.Tensor:
    return _Rotary.apply(x, half, base)


_MASKS: dict = {}


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool, window=None, chunk=None, bias=None):
    """softmax(q·kᵀ/√d)·v by the CPU flash kernel over (B, H, s, d) queries and (B, KV, s, d) keys and values."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    s = q.shape[-2]
    mask = None
    if window is not None or chunk is not None or bias is not None:
        key = (s, causal, window, chunk, q.dtype, None if bias is None else bias.data_ptr())
        if key not in _MASKS:
            with torch.no_grad():
                i = torch.arange(s, device=q.device)
                allowed = i[None, :] <= i[:, None] if causal else torch.ones(s, s, dtype=torch.bool, device=q.device)
                if window is not None:
                    allowed = allowed & (i[None, :] > i[:, None] - window)
                if chunk is not None:
                    allowed = allowed & (i[None, :] // chunk == i[:, None] // chunk)
                table = torch.zeros(s, s, dtype=q.dtype, device=q.device).masked_fill(~allowed, float("-inf"))
                table = table if bias is None else table + bias
                _MASKS[key] = table.expand(1, *table.shape[-3:]) if table.dim() == 3 else table  # (1, H, s, s)
        mask = _MASKS[key]
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        return F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, is_causal=causal and mask is None, enable_gqa=k.shape[1] != q.shape[1]
        )


def is_table(t: torch.Tensor) -> bool:
    """A mask table ``attention`` built: a kernel's constant, not an activation."""
    return any(t.untyped_storage().data_ptr() == m.untyped_storage().data_ptr() for m in _MASKS.values())


class _Norm(torch.autograd.Function):
    """RMSNorm or LayerNorm as fused kernels keep it (Apex's and Liger's fused norms): the input as given and an fp32
    statistic a row (the inverse RMS, and for LayerNorm the mean too); the normalised x recomputed in backward."""

    @staticmethod
    def forward(ctx, x, weight, bias, eps: float, layer: bool):
        with torch.no_grad():
            xf = x.float()
            mean = xf.mean(-1, keepdim=True) if layer else None
            centred = xf - mean if layer else xf
            rstd = torch.rsqrt(centred.square().mean(-1, keepdim=True) + eps)
            out = _scaled(centred * rstd, weight, bias).to(x.dtype)
        ctx.layer, ctx.eps = layer, eps
        ctx.save_for_backward(x, rstd, weight, bias, *(() if mean is None else (mean,)))
        return out

    @staticmethod
    def backward(ctx, grad):
        x, rstd, weight, bias, *mean = ctx.saved_tensors
        with torch.enable_grad():
            xr = x.detach().requires_grad_(True)
            w = weight.detach().requires_grad_(True) if weight is not None else None
            b = bias.detach().requires_grad_(True) if bias is not None else None
            xf = xr.float()
            centred = xf - mean[0] if ctx.layer else xf
            out = _scaled(centred * rstd, w, b).to(x.dtype)
            inputs = [t for t in (xr, w, b) if t is not None]
            grads = iter(torch.autograd.grad(out, inputs, grad))
        return next(grads), next(grads) if w is not None else None, next(grads) if b is not None else None, None, None


def _scaled(x: torch.Tensor, weight, bias) -> torch.Tensor:
    if weight is not None:
        x = x * weight.float()
    return x + bias.float() if bias is not None else x


def norm(x: torch.Tensor, weight, bias, eps: float, layer: bool) -> torch.Tensor:
    return _Norm.apply(x, weight, bias, eps, layer)

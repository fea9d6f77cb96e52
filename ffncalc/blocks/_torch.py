"""Torch pieces the blocks' reference modules share. Imported only when a torch module is built.

Attention is written with explicit matmuls, held by small ``MatMul`` modules (``attn.scores``,
``attn.values``), because FlopCounterMode does not count the CPU kernel of scaled_dot_product_attention
and so that each product is attributed to its own component.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

ACTIVATIONS = {
    "identity": lambda x: x,
    "relu": F.relu,
    "relu2": lambda x: F.relu(x).square(),
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "silu": F.silu,
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "quick_gelu": lambda x: x * torch.sigmoid(1.702 * x),
}


class GatedRMSNorm(nn.Module):
    """An RMSNorm over groups of width / groups features, times one weight, gated by act(z): before the norm
    (Mamba-2's MambaRMSNormGated) or after it (Qwen3-Next's Qwen3NextRMSNormGated, silu; Kimi Linear's
    KimiLinearRMSNormGated, sigmoid)."""

    is_norm = True  # verify counts its weight as one component

    def __init__(self, width: int, *, gate: str = "silu", groups: int = 1, gate_first: bool = False, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.act, self.groups, self.gate_first, self.eps = ACTIVATIONS[gate], groups, gate_first, eps

    def forward(self, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        from . import _fused

        if _fused.active():  # as FusedRMSNormGated keeps it: y, z and an fp32 statistic a group
            return _fused.gated_norm(y, z, self.weight, self.act, self.groups, self.gate_first, self.eps)
        a = self.act(z)
        if self.gate_first:
            y = y * a
        g = y.view(*y.shape[:-1], self.groups, -1)
        g = g * torch.rsqrt(g.pow(2).mean(-1, keepdim=True) + self.eps)
        out = self.weight * g.view(y.shape)
        return out if self.gate_first else out * a


class Linear(nn.Linear):
    """nn.Linear without the random initialisation on the meta device, which has no values to set
    (a third of building DeepSeek-V3's 45,000 linear layers)."""

    def reset_parameters(self) -> None:
        if self.weight.device.type != "meta":
            super().reset_parameters()


class Conv1d(nn.Conv1d):
    """nn.Conv1d without the random initialisation on the meta device; verify attributes its FLOPs to its weight."""

    weight_flops = True

    def reset_parameters(self) -> None:
        if self.weight.device.type != "meta":
            super().reset_parameters()


class Conv2d(nn.Conv2d):
    """nn.Conv2d without the random initialisation on the meta device; verify attributes its FLOPs to its weight."""

    weight_flops = True

    def reset_parameters(self) -> None:
        if self.weight.device.type != "meta":
            super().reset_parameters()


def split_linear(linear: nn.Linear, rank: int, parts: int, by: str) -> nn.Linear:
    """``rank``'s share of ``parts`` of a linear layer, by its ``"outputs"`` (column parallel: its rows of the weight
    and of the bias) or its ``"inputs"`` (row parallel: its columns of the weight, and the bias on rank 0 alone, so
    that the shares' outputs sum to the whole layer's); Megatron-LM's ColumnParallelLinear and RowParallelLinear."""
    out_f, in_f = linear.weight.shape
    whole = out_f if by == "outputs" else in_f
    if whole % parts:
        raise NotImplementedError(f"{whole} features do not split evenly over {parts} devices")
    share = slice(rank * whole // parts, (rank + 1) * whole // parts)
    keep_bias = linear.bias is not None and (by == "outputs" or rank == 0)
    w = linear.weight.detach()
    cut = Linear(
        in_f if by == "outputs" else whole // parts,
        whole // parts if by == "outputs" else out_f,
        bias=keep_bias,
        device=w.device,
        dtype=w.dtype,
    )
    with torch.no_grad():
        cut.weight.copy_(w[share] if by == "outputs" else w[:, share])
        if keep_bias:
            cut.bias.copy_(linear.bias[share] if by == "outputs" else linear.bias)
    return cut


class RMSNorm(nn.RMSNorm):
    """torch's RMSNorm; inside ``_fused.fused()`` as a fused kernel keeps it (its input and an fp32 statistic)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        from . import _fused

        if _fused.active():
            eps = torch.finfo(torch.float32).eps if self.eps is None else self.eps
            return _fused.norm(x, self.weight, getattr(self, "bias", None), eps, False)
        out = super().forward(x)
        return out + self.bias if getattr(self, "bias", None) is not None else out


class LayerNorm(nn.LayerNorm):
    """torch's LayerNorm; inside ``_fused.fused()`` as a fused kernel keeps it (its input, the mean and rstd in fp32)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        from . import _fused

        if _fused.active():
            return _fused.norm(x, self.weight, self.bias, self.eps, True)
        return super().forward(x)


class BiasedRMSNorm(RMSNorm):
    """An RMSNorm with a bias added after its weight (xLSTM's xLSTMRMSNorm with use_bias)."""

    def __init__(self, width: int):
        super().__init__(width)
        self.bias = nn.Parameter(torch.zeros(width))


def make_norm(norm, width: int) -> nn.Module:
    if norm.kind.startswith("layernorm"):  # LayerNorm1p (Nemotron) scales by 1 + w: the same parameters
        return LayerNorm(width, elementwise_affine=norm.affine, bias=norm.has_bias)
    return BiasedRMSNorm(width) if norm.has_bias else RMSNorm(width, elementwise_affine=norm.affine)


class HeadNorm(nn.Module):
    """A norm over head_dim with its own weight (and bias) in every head, on (B, heads, s, head_dim)
    (StableLmLayerNormPerHead, CohereLayerNorm over (heads, head_dim))."""

    is_norm = True  # verify counts its weight and bias as one component

    def __init__(self, norm, heads: int, dim: int):
        super().__init__()
        self.layer, self.dim = norm.kind.startswith("layernorm"), dim
        self.weight = nn.Parameter(torch.ones(heads, dim)) if norm.affine else None
        self.bias = nn.Parameter(torch.zeros(heads, dim)) if norm.has_bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        from . import _fused

        if _fused.active():  # one fused kernel over each head's features, its weights the head's
            w = None if self.weight is None else self.weight[:, None, :]
            b = None if self.bias is None else self.bias[:, None, :]
            return _fused.norm(x, w, b, 1e-5 if self.layer else torch.finfo(torch.float32).eps, self.layer)
        x = F.layer_norm(x, (self.dim,)) if self.layer else F.rms_norm(x, (self.dim,))
        if self.weight is not None:
            x = x * self.weight[:, None, :]
        if self.bias is not None:
            x = x + self.bias[:, None, :]
        return x


class MatMul(nn.Module):
    """``a @ b`` as a module, so FlopCounterMode attributes the product to a named component."""

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b


def rotate(x: torch.Tensor, width: int | None = None, base: float = 10000.0) -> torch.Tensor:
    """Rotary position embedding (Su et al. 2021) over the first 2·⌊width/2⌋ features of (B, H, s, d);
    ``width`` defaults to all d (partial rotary: GPT-NeoX, phi-2)."""
    seq, dim = x.shape[-2], x.shape[-1]
    half = min(width or dim, dim) // 2
    if half == 0:
        return x
    from . import _fused

    if _fused.active():  # as a fused kernel: recomputed in backward, nothing kept
        return _fused.rotary(x, half, base)
    inv_freq = base ** (-torch.arange(half, device=x.device, dtype=torch.float32) / half)
    angles = torch.arange(seq, device=x.device, dtype=torch.float32)[:, None] * inv_freq[None, :]
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2, rest = x[..., :half], x[..., half : 2 * half], x[..., 2 * half :]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos, rest], dim=-1)


def alibi_bias(heads: int, seq: int, device, dtype) -> torch.Tensor:
    """ALiBi (Press et al. 2022): a per-head linear penalty on the query-key distance."""
    slopes = 2.0 ** (-8.0 * torch.arange(1, heads + 1, device=device, dtype=torch.float32) / heads)
    pos = torch.arange(seq, device=device, dtype=torch.float32)
    return (slopes[:, None, None] * (pos[None, None, :] - pos[None, :, None])).to(dtype)


def attend(layer, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """softmax(q·kᵀ/√d)·v with ``layer.scores`` and ``layer.values`` holding the two products;
    over the full square, or the causal triangle only."""
    heads, s = q.shape[1], q.shape[2]
    bias = alibi_bias(heads, s, q.device, q.dtype) if layer.positions == "alibi" else None
    sinks, window, chunk = getattr(layer, "sinks", None), getattr(layer, "window", None), getattr(layer, "chunk", None)
    from . import _fused

    if _fused.active():  # as the flash kernel keeps it
        both = getattr(layer, "both", False)
        return _fused.attention(q, k, v, causal=not both, window=window, chunk=chunk, bias=bias, sinks=sinks)
    if k.shape[1] != heads:  # grouped K/V heads serve several query heads each
        k, v = k.repeat_interleave(heads // k.shape[1], dim=1), v.repeat_interleave(heads // v.shape[1], dim=1)
    q = q * (1.0 / math.sqrt(q.shape[-1]))
    if getattr(layer, "both", False):  # an encoder: no triangle; a window reaches both ways
        return two_sided(layer, q, k, v, bias, window, sinks)
    if layer.causal and chunk is not None and chunk < s:  # a causal triangle inside each chunk, nothing across
        parts = []
        for start in range(0, s, chunk):
            part = slice(start, min(start + chunk, s))
            parts.append(
                causal_attention(
                    q[..., part, :],
                    k[..., part, :],
                    v[..., part, :],
                    layer.scores,
                    layer.values,
                    None if bias is None else bias[..., part, part],
                    sinks=sinks,
                )
            )
        return torch.cat(parts, dim=-2)
    if layer.causal and window is not None and window < s:
        return banded_attention(q, k, v, layer.scores, layer.values, window, bias, sinks)
    if layer.causal:
        return causal_attention(q, k, v, layer.scores, layer.values, bias, sinks=sinks)
    scores = layer.scores(q, k.transpose(-2, -1))  # (B, H, s, s): the full square
    if bias is not None:
        scores = scores + bias
    if window is not None or chunk is not None:  # eager attention computes the square and masks the rest
        i = torch.arange(s, device=q.device)
        outside = i[None, :] > i[:, None]
        if window is not None:
            outside = outside | (i[None, :] <= i[:, None] - window)
        if chunk is not None:
            outside = outside | (i[None, :] // chunk != i[:, None] // chunk)
        scores = scores.masked_fill(outside, float("-inf"))
    return layer.values(softmax(scores, sinks), v)  # (B, H, s, v_dim)


def windowed_view(stack: nn.Module, causal: bool) -> None:
    """A bidirectional stack's view for its windowed layers (an encoder's, built beside the model's layers): in the
    causal (useful) view each computes only its window's band (``two_sided``), in the executed view the square."""
    for module in stack.modules():
        if getattr(module, "both", False) and getattr(module, "window", None) is not None:
            module.causal = causal


def two_sided(layer, q, k, v, bias, window: int | None, sinks) -> torch.Tensor:
    """An encoder's attention: every query meets every key, or within ``window`` on both sides (|i − j| ≤ W), or W
    keys before and ``layer.ahead`` A after (Moonshine Streaming's lookahead). In the causal (useful) view a window
    computes only its band: the middle queries' W + A + 1 keys each as unfolded windows, the queries near the ends one
    product each; in the executed view, the square masked."""
    s = q.shape[-2]
    ahead = getattr(layer, "ahead", None)
    before, after = (window, window if ahead is None else ahead) if window is not None else (s, s)
    if layer.causal and window is not None and min(before, after) < s - 1:
        span, rows = before + after + 1, {}
        middle = range(before, s - after)  # queries whose band lies wholly within the sequence
        for i in [i for i in range(s) if i not in middle]:  # the ends: keys max(0, i − W)..min(s − 1, i + A)
            keys = slice(max(0, i - before), min(s, i + after + 1))
            score = layer.scores(q[..., i : i + 1, :], k[..., keys, :].transpose(-2, -1))
            if bias is not None:
                score = score + bias[..., i : i + 1, keys]
            rows[i] = layer.values(softmax(score, sinks), v[..., keys, :])
        parts = [rows[i] for i in range(s) if i in rows and i < before]
        if len(middle):
            keys = k.unfold(-2, span, 1)  # (..., s − W − A, dim, W + A + 1): the band of query W + j
            values = v.unfold(-2, span, 1).transpose(-2, -1)
            scores = layer.scores(q[..., middle.start : middle.stop, :].unsqueeze(-2), keys).squeeze(-2)
            if bias is not None:
                centre = torch.arange(middle.start, middle.stop, device=q.device)
                scores = scores + bias[..., centre[:, None], centre[:, None] - before + torch.arange(span, device=q.device)]
            parts.append(layer.values(softmax(scores, sinks).unsqueeze(-2), values).squeeze(-2))
        parts += [rows[i] for i in range(s) if i in rows and i >= before]
        return torch.cat(parts, dim=-2)
    scores = layer.scores(q, k.transpose(-2, -1))  # (B, H, s, s): the full square
    if bias is not None:
        scores = scores + bias
    if window is not None:  # eager attention computes the square and masks what lies beyond the window
        i = torch.arange(s, device=q.device)
        gap = i[None, :] - i[:, None]  # key − query
        scores = scores.masked_fill((gap > after) | (-gap > before), float("-inf"))
    return layer.values(softmax(scores, sinks), v)


def banded_attention(q, k, v, scores_mm: MatMul, values_mm: MatMul, window: int, bias=None, sinks=None):
    """Sliding-window attention computing only the band: query i meets keys i − W + 1..i.

    The first W queries are the causal triangle; each later query meets exactly W keys, taken as unfolded
    windows of the keys and values, one batched product per matrix: W(W+1)/2 + (T − W)·W pairs in all.
    """
    *lead, s, dim = q.shape
    head = causal_attention(
        q[..., :window, :],
        k[..., :window, :],
        v[..., :window, :],
        scores_mm,
        values_mm,
        None if bias is None else bias[..., :window, :window],
        sinks=sinks,
    )
    keys = k.unfold(-2, window, 1)[..., 1:, :, :]  # (..., T − W, dim, W): the window ending at query i ≥ W
    values = v.unfold(-2, window, 1)[..., 1:, :, :].transpose(-2, -1)  # (..., T − W, W, v_dim)
    scores = scores_mm(q[..., window:, :].unsqueeze(-2), keys).squeeze(-2)  # (..., T − W, W)
    if bias is not None:
        rows = torch.arange(window, s, device=q.device)
        scores = scores + bias[..., rows[:, None], rows[:, None] - window + 1 + torch.arange(window, device=q.device)]
    probs = softmax(scores, sinks).unsqueeze(-2)  # (..., T − W, 1, W)
    tail = values_mm(probs, values).squeeze(-2)  # (..., T − W, v_dim)
    return torch.cat([head, tail], dim=-2)


def softmax(scores: torch.Tensor, sinks: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax over the keys; with sinks, each head's sink logit joins the normaliser and is then dropped."""
    if sinks is None:
        return scores.softmax(dim=-1)
    sink = sinks.to(scores.dtype).view(1, -1, 1, 1).expand(*scores.shape[:-1], 1)
    return torch.cat([scores, sink], dim=-1).softmax(dim=-1)[..., :-1]


def causal_attention(q, k, v, scores_mm: MatMul, values_mm: MatMul, bias=None, block: int | None = None, sinks=None):
    """Attention over the causal triangle only: query i meets keys 0..i, s(s+1)/2 products in all.

    Queries go in blocks of ``block``: a block meets the keys before it as one rectangle, and the
    triangles on the diagonal are computed row by row, the same row of every block in one batched
    product. About block + s/block products per call, with no product outside the triangle.
    """
    *lead, s, dim = q.shape
    block = block or max(1, math.isqrt(s))
    full = torch.full((*lead, s, s), float("-inf"), device=q.device, dtype=q.dtype)
    starts = list(range(0, s, block))
    for start in starts[1:]:  # rectangles: the block's queries against every earlier key
        stop = min(start + block, s)
        full[..., start:stop, :start] = scores_mm(q[..., start:stop, :], k[..., :start, :].transpose(-2, -1))
    for r in range(min(block, s)):  # row r of every diagonal block meets keys start..start+r
        rows = [st for st in starts if st + r < s]
        qi = torch.stack([q[..., st + r, :] for st in rows], dim=-2).unsqueeze(-2)  # (..., n, 1, dim)
        ki = torch.stack([k[..., st : st + r + 1, :] for st in rows], dim=-3)  # (..., n, r+1, dim)
        part = scores_mm(qi, ki.transpose(-2, -1)).squeeze(-2)  # (..., n, r+1)
        for j, st in enumerate(rows):
            full[..., st + r, st : st + r + 1] = part[..., j, :]
    if bias is not None:
        full = full + bias
    probs = softmax(full, sinks)
    out = q.new_zeros(*q.shape[:-1], v.shape[-1])
    for start in starts[1:]:
        stop = min(start + block, s)
        out[..., start:stop, :] += values_mm(probs[..., start:stop, :start], v[..., :start, :])
    for r in range(min(block, s)):
        rows = [st for st in starts if st + r < s]
        pi = torch.stack([probs[..., st + r, st : st + r + 1] for st in rows], dim=-2).unsqueeze(-2)
        vi = torch.stack([v[..., st : st + r + 1, :] for st in rows], dim=-3)  # (..., n, r+1, dim)
        part = values_mm(pi, vi).squeeze(-2)  # (..., n, dim)
        for j, st in enumerate(rows):
            out[..., st + r, :] += part[..., j, :]
    return out


def lower_product(mm: MatMul, a: torch.Tensor, b: torch.Tensor, block: int) -> torch.Tensor:
    """a @ bᵀ over the lower triangle with the diagonal, zero above: (..., L, n), (..., L, n) -> (..., L, L).
    Blocks of ``block`` rows meet the rows before them as one rectangle; the triangles on the diagonal go
    row by row, the same row of every block in one product. L(L+1)/2 products per feature."""
    *lead, size, _ = a.shape
    out = a.new_zeros(*lead, size, size)
    starts = list(range(0, size, block))
    for start in starts[1:]:
        stop = min(start + block, size)
        out[..., start:stop, :start] = mm(a[..., start:stop, :], b[..., :start, :].transpose(-2, -1))
    for r in range(min(block, size)):
        rows = [st for st in starts if st + r < size]
        ai = torch.stack([a[..., st + r, :] for st in rows], dim=-2).unsqueeze(-2)  # (..., n, 1, dim)
        bi = torch.stack([b[..., st : st + r + 1, :] for st in rows], dim=-3)  # (..., n, r+1, dim)
        part = mm(ai, bi.transpose(-2, -1)).squeeze(-2)  # (..., n, r+1)
        for j, st in enumerate(rows):
            out[..., st + r, st : st + r + 1] = part[..., j, :]
    return out


def lower_apply(mm: MatMul, m: torch.Tensor, v: torch.Tensor, block: int) -> torch.Tensor:
    """m @ v reading only m's lower triangle with the diagonal: L(L+1)/2 products per output feature."""
    *lead, size, _ = m.shape
    out = v.new_zeros(*lead, size, v.shape[-1])
    starts = list(range(0, size, block))
    for start in starts[1:]:
        stop = min(start + block, size)
        out[..., start:stop, :] += mm(m[..., start:stop, :start], v[..., :start, :])
    for r in range(min(block, size)):
        rows = [st for st in starts if st + r < size]
        mi = torch.stack([m[..., st + r, st : st + r + 1] for st in rows], dim=-2).unsqueeze(-2)  # (..., n, 1, r+1)
        vi = torch.stack([v[..., st : st + r + 1, :] for st in rows], dim=-3)  # (..., n, r+1, dim)
        part = mm(mi, vi).squeeze(-2)  # (..., n, dim)
        for j, st in enumerate(rows):
            out[..., st + r, :] += part[..., j, :]
    return out


class CausalConv1d(nn.Module):
    """A depthwise causal Conv1d with nn.Conv1d's parameters (weight (C, 1, K), bias (C,)), left padded by K-1
    zeros with padding 0: T outputs for T inputs, every one counted. verify attributes its FLOPs to its weight,
    as it does a projection's (Mamba, Mamba-2 and Gated DeltaNet's short convolutions)."""

    weight_flops = True

    def __init__(self, channels: int, kernel: int, bias: bool):
        super().__init__()
        self.kernel = kernel
        self.weight = nn.Parameter(torch.empty(channels, 1, kernel))
        self.bias = nn.Parameter(torch.empty(channels)) if bias else None
        if self.weight.device.type != "meta":  # nn.Conv1d's initialisation; the meta device has no values
            nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
            if self.bias is not None:
                nn.init.uniform_(self.bias, -1 / math.sqrt(kernel), 1 / math.sqrt(kernel))

    def forward(self, x: torch.Tensor, silu: bool = False) -> torch.Tensor:  # (B, T, C) -> (B, T, C)
        from . import _fused

        if _fused.active():  # as causal-conv1d's kernel keeps it: its input alone, the SiLU fused in
            return _fused.conv(x, self.weight, self.bias, silu)
        x = F.pad(x.transpose(1, 2), (self.kernel - 1, 0))
        if silu:
            return F.silu(F.conv1d(x, self.weight, self.bias, groups=self.weight.shape[0]).transpose(1, 2))
        return F.conv1d(x, self.weight, self.bias, groups=self.weight.shape[0]).transpose(1, 2)

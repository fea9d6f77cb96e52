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


def _table(s: int, causal: bool, window, chunk, bias, dtype, device):
    """The additive mask a kernel applies (its own arithmetic, built once): None where the causal flag says all."""
    if window is None and chunk is None and bias is None:
        return None
    key = (s, causal, window, chunk, dtype, None if bias is None else bias.data_ptr())
    if key not in _MASKS:
        with torch.no_grad():
            i = torch.arange(s, device=device)
            allowed = i[None, :] <= i[:, None] if causal else torch.ones(s, s, dtype=torch.bool, device=device)
            if window is not None:
                allowed = allowed & (i[None, :] > i[:, None] - window)
            if chunk is not None:
                allowed = allowed & (i[None, :] // chunk == i[:, None] // chunk)
            table = torch.zeros(s, s, dtype=dtype, device=device).masked_fill(~allowed, float("-inf"))
            table = table if bias is None else table + bias
            _MASKS[key] = table.expand(1, *table.shape[-3:]) if table.dim() == 3 else table  # (1, H, s, s)
    return _MASKS[key]


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool, window=None, chunk=None, bias=None, sinks=None):
    """softmax(q·kᵀ/√d)·v by a flash kernel over (B, H, s, d) queries and (B, KV, s, d) keys and values: torch's
    CPU flash kernel where it can (equal q/k and v widths, no sinks), else ``_Flash``, which keeps the same."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    mask = _table(q.shape[-2], causal, window, chunk, bias, q.dtype, q.device)
    if q.shape[-1] != v.shape[-1] or sinks is not None:
        return _Flash.apply(q, k, v, sinks, causal, mask)
    try:
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask, is_causal=causal and mask is None, enable_gqa=k.shape[1] != q.shape[1]
            )
    except RuntimeError:  # shapes torch's CPU flash kernel refuses (no available kernel): the same kept by _Flash
        return _Flash.apply(q, k, v, sinks, causal, mask)


def _attend(q, k, v, sinks, causal: bool, mask):
    """(output in q's dtype, fp32 log-sum-exp a query and head): softmax in fp32, a sink logit per head joining the
    normaliser (gpt-oss's attention sinks) where given."""
    if k.shape[1] != q.shape[1]:
        k, v = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1), v.repeat_interleave(q.shape[1] // v.shape[1], dim=1)
    scores = (q.float() @ k.float().transpose(-2, -1)) / q.shape[-1] ** 0.5
    s = q.shape[-2]
    if mask is not None:
        scores = scores + mask.float()
    elif causal:
        scores = scores.masked_fill(torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    every = scores
    if sinks is not None:
        every = torch.cat([scores, sinks.float().view(1, -1, 1, 1).expand(*scores.shape[:-1], 1)], dim=-1)
    lse = every.logsumexp(-1)
    return ((scores - lse[..., None]).exp() @ v.float()).to(q.dtype), lse


class _Flash(torch.autograd.Function):
    """Attention as FlashAttention-2 keeps it (Dao 2023 §3.1: Q, K, V, the output and the fp32 log-sum-exp of every
    query and head; the probabilities recomputed in backward) for what torch's CPU flash kernel does not take:
    q/k wider than v (MLA: 192 and 128 a head, as cuDNN's fused attention and FlashAttention-3 run it, and
    Megatron-LM's MLA calls through Transformer Engine) and sink logits (gpt-oss; FlashAttention-3's learnable
    sink). Recomputed in backward from what it keeps."""

    @staticmethod
    def forward(ctx, q, k, v, sinks, causal: bool, mask):
        computed, lse = _attend(q, k, v, sinks, causal, mask)
        b, h, s, d = computed.shape  # written (B, s, H, d) in memory, as the flash kernels write it: o reads it as is
        out = computed.new_empty(b, s, h, d).transpose(1, 2).copy_(computed)
        ctx.causal, ctx.mask, ctx.sinks = causal, mask, sinks is not None
        ctx.save_for_backward(q, k, v, out, lse, *(() if sinks is None else (sinks,)))
        return out

    @staticmethod
    def backward(ctx, grad):
        q, k, v, _out, _lse, *sinks = ctx.saved_tensors
        with torch.enable_grad():
            inputs = [t.detach().requires_grad_(True) for t in (q, k, v, *sinks)]
            out, _ = _attend(*inputs[:3], inputs[3] if sinks else None, ctx.causal, ctx.mask)
            grads = torch.autograd.grad(out, inputs, grad)
        return grads[0], grads[1], grads[2], grads[3] if sinks else None, None, None


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
        x, _rstd, weight, bias, *_mean = ctx.saved_tensors
        with torch.enable_grad():
            xr = x.detach().requires_grad_(True)
            w = weight.detach().requires_grad_(True) if weight is not None else None
            b = bias.detach().requires_grad_(True) if bias is not None else None
            # the statistics again, differentiably (a kernel's backward derives their gradient from the kept rstd)
            xf = xr.float()
            centred = xf - xf.mean(-1, keepdim=True) if ctx.layer else xf
            out = _scaled(centred * torch.rsqrt(centred.square().mean(-1, keepdim=True) + ctx.eps), w, b).to(x.dtype)
            inputs = [t for t in (xr, w, b) if t is not None]
            grads = iter(torch.autograd.grad(out, inputs, grad))
        return next(grads), next(grads) if w is not None else None, next(grads) if b is not None else None, None, None


def _scaled(x: torch.Tensor, weight, bias) -> torch.Tensor:
    if weight is not None:
        x = x * weight.float()
    return x + bias.float() if bias is not None else x


def norm(x: torch.Tensor, weight, bias, eps: float, layer: bool) -> torch.Tensor:
    return _Norm.apply(x, weight, bias, eps, layer)


class _Dispatch(torch.autograd.Function):
    """Each routed token-slot's input row copied into expert order (Transformer Engine's moe_permute, Megatron-LM's
    token dispatcher): the copy is the experts' input; the permutation (int64 a slot) is all it keeps, its gradient
    the slots' gradients added back to their tokens."""

    @staticmethod
    def forward(ctx, x, order, top_k: int):
        ctx.top_k, ctx.tokens = top_k, x.shape[0]
        ctx.save_for_backward(order)
        return x[order // top_k]

    @staticmethod
    def backward(ctx, grad):
        (order,) = ctx.saved_tensors
        return grad.new_zeros(ctx.tokens, grad.shape[-1]).index_add_(0, order // ctx.top_k, grad), None, None


class _Combine(torch.autograd.Function):
    """The experts' outputs (in expert order) scaled by their fp32 routing weights and added back to their tokens
    (Transformer Engine's moe_unpermute with probs): keeps the outputs (the weights' gradient is each output's dot
    product with its token's gradient), the weights and the permutation."""

    @staticmethod
    def forward(ctx, y, weights, order, top_k: int):
        ctx.top_k = top_k
        ctx.save_for_backward(y, weights, order)
        w = weights.reshape(-1)[order]
        scaled = (y.float() * w[:, None]).to(y.dtype)
        return y.new_zeros(weights.shape[0], y.shape[-1]).index_add_(0, order // top_k, scaled)

    @staticmethod
    def backward(ctx, grad):
        y, weights, order = ctx.saved_tensors
        g = grad[order // ctx.top_k].float()
        grad_y = (g * weights.reshape(-1)[order][:, None]).to(y.dtype)
        grad_w = torch.zeros(weights.numel(), dtype=weights.dtype, device=weights.device)
        grad_w[order] = (g * y.float()).sum(-1).to(weights.dtype)
        return grad_y, grad_w.view_as(weights), None, None


def routed(x: torch.Tensor, experts: torch.Tensor, weights: torch.Tensor, modules) -> torch.Tensor:
    """The routed experts' weighted outputs for (tokens, d) inputs, as a grouped-GEMM mixture runs them: the
    token-slots sorted by expert (a stable sort), dispatched, each expert run over its contiguous rows, combined."""
    n, top_k = len(modules), experts.shape[1]
    with torch.no_grad():
        flat = experts.reshape(-1)
        order = torch.argsort(flat, stable=True)
        counts = torch.bincount(flat, minlength=n).tolist()
    rows = _Dispatch.apply(x, order, top_k)
    outs = [m(part) for m, part in zip(modules, rows.split(counts)) if part.shape[0]]
    return _Combine.apply(torch.cat(outs), weights, order, top_k)


def _conv(x: torch.Tensor, weight: torch.Tensor, bias, silu: bool) -> torch.Tensor:
    """A depthwise causal convolution over (B, T, C), K − 1 zeros before the first step; SiLU after it if asked."""
    out = F.conv1d(F.pad(x.transpose(1, 2), (weight.shape[-1] - 1, 0)), weight, bias, groups=weight.shape[0])
    out = out.transpose(1, 2)
    return F.silu(out) if silu else out


class _Conv(torch.autograd.Function):
    """A short causal convolution as Dao-AILab/causal-conv1d's CausalConv1dFn runs it (causal_conv1d_interface.py:
    ``ctx.save_for_backward(x, weight, bias)``, the SiLU fused in and recomputed): the input as given, nothing else;
    its output written (B, T, C) in memory, as the input lies."""

    @staticmethod
    def forward(ctx, x, weight, bias, silu: bool):
        ctx.silu = silu
        ctx.save_for_backward(x, weight, bias)
        computed = _conv(x, weight, bias, silu)
        return torch.empty_like(x, memory_format=torch.contiguous_format).copy_(computed)

    @staticmethod
    def backward(ctx, grad):
        x, weight, bias = ctx.saved_tensors
        with torch.enable_grad():
            inputs = [t.detach().requires_grad_(True) for t in (x, weight, *(() if bias is None else (bias,)))]
            out = _conv(inputs[0], inputs[1], inputs[2] if bias is not None else None, ctx.silu)
            grads = torch.autograd.grad(out, inputs, grad)
        return grads[0], grads[1], grads[2] if bias is not None else None, None


def conv(x: torch.Tensor, weight: torch.Tensor, bias, silu: bool = False) -> torch.Tensor:
    return _Conv.apply(x, weight, bias, silu)


SCAN_CHUNK = 2048  # mamba_ssm's selective_scan_fwd keeps the scan's state at the end of every chunk of 2048 steps


def _mamba(xz, conv_w, conv_b, x_proj_w, dt_w, dt_b, a_log, d_skip, rank: int, state: int, normed: bool):
    """Mamba's mixer from in_proj's output to the gated scan output before out_proj: (x_dbl, B, C, y, h), y the scan's
    output before the gate (B, s, d_inner), h every step's state in fp32 (B, s, d_inner, N)."""
    x, z = xz.chunk(2, dim=-1)
    x = _conv(x, conv_w, conv_b, True)
    x_dbl = F.linear(x, x_proj_w)
    dt, bm, cm = x_dbl.split([rank, state, state], dim=-1)
    if normed:  # FalconMamba's weightless RMS over dt, B and C (MambaInnerFn's b/c/dt_rms_weight)
        dt, bm, cm = (t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + 1e-6) for t in (dt, bm, cm))
    dt = F.softplus(F.linear(dt, dt_w, dt_b)).float()
    a = -torch.exp(a_log.float())
    decay = torch.exp(dt[..., None] * a)
    inflow = (dt * x.float())[..., None] * bm.float()[:, :, None, :]
    h, states = torch.zeros_like(inflow[:, 0]), []
    for t in range(xz.shape[1]):
        h = decay[:, t] * h + inflow[:, t]
        states.append(h)
    hs = torch.stack(states, dim=1)
    y = (hs @ cm.float()[..., None]).squeeze(-1) + x.float() * d_skip.float()
    return x_dbl, bm, cm, y.to(xz.dtype), z, decay, hs


class _MambaInner(torch.autograd.Function):
    """Mamba's mixer after in_proj as mamba_ssm's MambaInnerFn runs it in training (checkpoint_lvl 1: the
    convolution's output and delta recomputed in backward; ops/selective_scan_interface.py, ``ctx.save_for_backward(
    xz, conv1d_weight, conv1d_bias, x_dbl, x_proj_weight, delta_proj_weight, out_proj_weight, conv1d_out, delta, A,
    B, C, D, delta_bias, scan_intermediates, b_rms_weight, c_rms_weight, dt_rms_weight, out)`` with conv1d_out and
    delta set to None): xz, x_dbl, contiguous copies of B and C, the scan's output before the gate, and the scan's
    fp32 intermediates (the decay product and the state at the end of every chunk of 2048 steps, 2·N a channel);
    out_proj inside, its input recomputed."""

    @staticmethod
    def forward(ctx, xz, conv_w, conv_b, x_proj_w, dt_w, dt_b, a_log, d_skip, out_w, out_b, rank, state, normed):
        x_dbl, bm, cm, y, z, decay, hs = _mamba(xz, conv_w, conv_b, x_proj_w, dt_w, dt_b, a_log, d_skip, rank, state, normed)
        b, s, di, n = hs.shape
        ends = [min(c + SCAN_CHUNK, s) - 1 for c in range(0, s, SCAN_CHUNK)]
        products = torch.stack([decay[:, start : end + 1].prod(1) for start, end in zip(range(0, s, SCAN_CHUNK), ends)], 2)
        intermediates = torch.cat([products, hs[:, ends].transpose(1, 2)], dim=-1)  # (B, d_inner, chunks, 2·N) fp32
        ctx.args = (rank, state, normed, conv_b is not None, out_b is not None)
        ctx.save_for_backward(xz, conv_w, conv_b, x_dbl, x_proj_w, dt_w, dt_b, a_log, d_skip, out_w, out_b,
                              bm.contiguous(), cm.contiguous(), y, intermediates)  # fmt: skip
        return F.linear(y * F.silu(z), out_w, out_b)

    @staticmethod
    def backward(ctx, grad):
        xz, conv_w, conv_b, _x_dbl, x_proj_w, dt_w, dt_b, a_log, d_skip, out_w, out_b, *_kept = ctx.saved_tensors
        rank, state, normed, has_conv_b, has_out_b = ctx.args
        tensors = (xz, conv_w, conv_b, x_proj_w, dt_w, dt_b, a_log, d_skip, out_w, out_b)
        with torch.enable_grad():
            live = [None if t is None else t.detach().requires_grad_(True) for t in tensors]
            _, _, _, y, z, _, _ = _mamba(*live[:8], rank, state, normed)
            out = F.linear(y * F.silu(z), live[8], live[9])
            wanted = [t for t in live if t is not None]
            found = iter(torch.autograd.grad(out, wanted, grad, allow_unused=True))
            grads = [None if t is None else next(found) for t in live]
        return (*grads, None, None, None)


def mamba_inner(xz, conv_w, conv_b, x_proj_w, dt_w, dt_b, a_log, d_skip, out_w, out_b, rank, state, normed):
    return _MambaInner.apply(xz, conv_w, conv_b, x_proj_w, dt_w, dt_b, a_log, d_skip, out_w, out_b, rank, state, normed)


def _mamba2(zxbcdt, conv_w, conv_b, dt_bias, a_log, d_skip, norm_w, out_w, out_b, dims):
    """Mamba-2's mixer after in_proj, the SSD in its quadratic dual form: (the scan's output before the gated norm,
    None, the output gated by SiLU(z) without a norm)."""
    d_inner, conv_dim, h, p, g, n, eps = dims
    b, s, _ = zxbcdt.shape
    z, xbc, dt = zxbcdt.split([d_inner, conv_dim, h], dim=-1)
    x, bm, cm = _conv(xbc, conv_w, conv_b, True).split([d_inner, g * n, g * n], dim=-1)
    dt = F.softplus(dt + dt_bias).transpose(1, 2)  # (B, H, s)
    cum = torch.cumsum(dt * -torch.exp(a_log)[:, None], dim=-1)
    x = x.view(b, s, h, p).transpose(1, 2)
    bm, cm = (t.view(b, s, g, n).transpose(1, 2).repeat_interleave(h // g, dim=1) for t in (bm, cm))
    below = torch.ones(s, s, dtype=torch.bool, device=zxbcdt.device).tril()
    decay = torch.exp((cum[..., :, None] - cum[..., None, :]).masked_fill(~below, float("-inf")))
    y = ((cm @ bm.transpose(-2, -1)) * decay) @ (x * dt[..., None]) + x * d_skip[:, None, None]
    y = y.transpose(1, 2).reshape(b, s, d_inner)
    return y, None, F.linear(y * F.silu(z), out_w, out_b)


def _mamba2_out(zxbcdt, conv_w, conv_b, dt_bias, a_log, d_skip, norm_w, out_w, out_b, dims, norm_groups: int):
    """(the scan's output, the gated norm's fp32 inverse RMS a group or None, the output): MambaRMSNormGated's
    norm of y·SiLU(z) over each group, then out_proj."""
    d_inner, eps = dims[0], dims[-1]
    y, _, plain = _mamba2(zxbcdt, conv_w, conv_b, dt_bias, a_log, d_skip, None, out_w, out_b, dims)
    if norm_w is None:
        return y, None, plain
    z = zxbcdt[..., :d_inner]
    gated = (y * F.silu(z)).float()
    grouped = gated.view(*gated.shape[:-1], norm_groups, -1)
    rstd = torch.rsqrt(grouped.square().mean(-1, keepdim=True) + eps)
    normed = (grouped * rstd).view(gated.shape) * norm_w.float()
    return y, rstd, F.linear(normed.to(y.dtype), out_w, out_b)


class _Mamba2(torch.autograd.Function):
    """Mamba-2's mixer after in_proj as mamba_ssm's MambaSplitConv1dScanCombinedFn runs it in training
    (ops/triton/ssd_combined.py: ``ctx.save_for_backward(zxbcdt, conv1d_weight, conv1d_bias, out_x, A, D, dt_bias,
    initial_states, seq_idx, rmsnorm_weight, rstd, outproj_weight, outproj_bias)``): in_proj's output, the scan's
    output before the gated norm and the norm's fp32 inverse RMS a group; the convolution, the scan's states and
    out_proj's input recomputed in backward."""

    @staticmethod
    def forward(ctx, zxbcdt, conv_w, conv_b, dt_bias, a_log, d_skip, norm_w, out_w, out_b, dims, norm_groups):
        y, rstd, out = _mamba2_out(zxbcdt, conv_w, conv_b, dt_bias, a_log, d_skip, norm_w, out_w, out_b, dims, norm_groups)
        ctx.dims, ctx.norm_groups = dims, norm_groups
        ctx.save_for_backward(zxbcdt, conv_w, conv_b, y, a_log, d_skip, dt_bias, norm_w, rstd, out_w, out_b)
        return out

    @staticmethod
    def backward(ctx, grad):
        zxbcdt, conv_w, conv_b, _y, a_log, d_skip, dt_bias, norm_w, _rstd, out_w, out_b = ctx.saved_tensors
        tensors = (zxbcdt, conv_w, conv_b, dt_bias, a_log, d_skip, norm_w, out_w, out_b)
        with torch.enable_grad():
            live = [None if t is None else t.detach().requires_grad_(True) for t in tensors]
            _, _, out = _mamba2_out(*live, ctx.dims, ctx.norm_groups)
            wanted = [t for t in live if t is not None]
            found = iter(torch.autograd.grad(out, wanted, grad, allow_unused=True))
            grads = [None if t is None else next(found) for t in live]
        return (*grads, None, None)


def mamba2(zxbcdt, conv_w, conv_b, dt_bias, a_log, d_skip, norm_w, out_w, out_b, dims, norm_groups: int):
    return _Mamba2.apply(zxbcdt, conv_w, conv_b, dt_bias, a_log, d_skip, norm_w, out_w, out_b, dims, norm_groups)


# Mixture variants, latent attention's relatives and the encoders' mixers: what their kernels keep.


class _RowDot(torch.autograd.Function):
    """Each token's dot products with its chosen rows of an expert table (PEER / product-key experts, Doge's
    down_embed): the rows gathered inside the kernel as an embedding bag gathers them (torch's embedding_bag, whose
    backward reads the indices, never gathered copies); keeps the input and the int64 indices, the rows re-read in
    backward."""

    @staticmethod
    def forward(ctx, x, index, table):
        ctx.save_for_backward(x, index, table)
        return (table[index] @ x[..., None]).squeeze(-1)

    @staticmethod
    def backward(ctx, grad):
        x, index, table = ctx.saved_tensors
        rows = table[index]  # (T, k, d), recomputed
        grad_x = (grad[:, None, :] @ rows).squeeze(-2)
        grad_table = torch.zeros_like(table).index_add_(
            0, index.reshape(-1), (grad[..., None] * x[:, None, :]).reshape(-1, x.shape[-1])
        )
        return grad_x, None, grad_table


class _RowSum(torch.autograd.Function):
    """Each token's weighted sum of its chosen rows of an expert table (Doge's up_embed; torch's embedding_bag in
    sum mode with per_sample_weights): keeps the weights and the int64 indices, the rows re-read in backward."""

    @staticmethod
    def forward(ctx, weights, index, table):
        ctx.save_for_backward(weights, index, table)
        return (weights[:, None, :] @ table[index]).squeeze(-2)

    @staticmethod
    def backward(ctx, grad):
        weights, index, table = ctx.saved_tensors
        grad_w = (table[index] @ grad[..., None]).squeeze(-1)
        grad_table = torch.zeros_like(table).index_add_(
            0, index.reshape(-1), (weights[..., None] * grad[:, None, :]).reshape(-1, grad.shape[-1])
        )
        return grad_w, None, grad_table


def row_dot(x: torch.Tensor, index: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    return _RowDot.apply(x, index, table)


def row_sum(weights: torch.Tensor, index: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    return _RowSum.apply(weights, index, table)


def _scatter(x, ids, order, fan: int, weights, gates):
    """Experts' linear layers over token-slots: slot s (expert ids[s], its row x[s // fan]) through its expert's
    weight, the outputs in slot order; with gates (tokens, k), each token's k outputs weighted and summed."""
    counts = torch.bincount(ids, minlength=len(weights)).tolist()
    rows = x[order // fan]
    outs = [F.linear(part, w) for part, w in zip(rows.split(counts), weights) if part.shape[0]]
    y = torch.cat(outs).new_empty(ids.shape[0], outs[0].shape[-1]).index_copy(0, order, torch.cat(outs))
    if gates is None:
        return y, None
    expanded = y.view(gates.shape[0], gates.shape[1], y.shape[-1])
    return (gates[:, None, :] @ expanded).squeeze(1), expanded


class _ScatterLinear(torch.autograd.Function):
    """ScatterMoE's ParallelLinear (shawntan/scattermoe, parallel_experts.py: ``ctx.save_for_backward(x,
    expert_weights, expert_biases, sorted_expert_idxs, sorted_scattered_idxs, expert_offsets, gates,
    output_expanded)``), the grouped GEMM JetMoE's mixtures run: the input as given (never a gathered copy: the
    kernel gathers its rows), the slots' expert ids and their sorting permutation (int64), and where gates combine a
    token's k outputs, the gates and those k outputs; the rest recomputed in backward. The per-expert offsets are
    kept here as a list, not a tensor (E integers a layer, no token's)."""

    @staticmethod
    def forward(ctx, x, ids, order, fan: int, gates, *weights):
        out, expanded = _scatter(x, ids, order, fan, weights, gates)
        ctx.fan, ctx.gated = fan, gates is not None
        ctx.save_for_backward(x, ids, order, *(() if gates is None else (gates, expanded)), *weights)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, ids, order, *rest = ctx.saved_tensors
        gates, weights = (rest[0], rest[2:]) if ctx.gated else (None, rest)
        with torch.enable_grad():
            live = [t.detach().requires_grad_(True) for t in (x, *(() if gates is None else (gates,)), *weights)]
            lg = live[1] if ctx.gated else None
            out, _ = _scatter(live[0], ids, order, ctx.fan, live[2 if ctx.gated else 1 :], lg)
            grads = list(torch.autograd.grad(out, live, grad, allow_unused=True))
        grad_x, grad_gates = grads[0], grads[1] if ctx.gated else None
        return (grad_x, None, None, None, grad_gates, *grads[2 if ctx.gated else 1 :])


def sort_slots(experts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(the token-slots' expert ids sorted, the permutation that sorts them), int64 (scattermoe's
    flatten_sort_count): computed once, read by every ParallelLinear of the mixture."""
    with torch.no_grad():
        order = torch.argsort(experts.reshape(-1), stable=True)
        return experts.reshape(-1)[order], order


def scatter_linear(x, slots, weights, fan: int, gates=None) -> torch.Tensor:
    """``x``'s rows through their slots' experts' weights (``slots`` from ``sort_slots``): ``fan`` = k from a
    token's row to its k slots (the outputs in slot order), or ``fan`` = 1 from slot rows, a token's k outputs
    combined by ``gates``."""
    return _ScatterLinear.apply(x, slots[0], slots[1], fan, gates, *weights)


class _BiasFlash(torch.autograd.Function):
    """Attention with a learned bias a key and KV head added to every query's scores, as flash-dmattn's
    FlashDMAttnFunc runs Doge's dynamic mask (SmallDoges/flash-dmattn, flash_dmattn_interface.py:
    ``ctx.save_for_backward(q, k, v, mask, bias, out_padded, softmax_lse)``): Q, K and V at their own heads, the
    bias at its KV heads broadcast over the queries (B, KV, 1, s), the output and the fp32 log-sum-exp; the
    probabilities recomputed in backward, the bias's gradient summed over the queries there."""

    @staticmethod
    def forward(ctx, q, k, v, bias, causal: bool, mask):
        computed, lse = _attend(q, k, v, None, causal, _with_bias(q, bias, causal, mask))
        b, h, s, d = computed.shape
        out = computed.new_empty(b, s, h, d).transpose(1, 2).copy_(computed)
        ctx.causal, ctx.mask = causal, mask
        ctx.save_for_backward(q, k, v, bias, out, lse)
        return out

    @staticmethod
    def backward(ctx, grad):
        q, k, v, bias, _out, _lse = ctx.saved_tensors
        with torch.enable_grad():
            inputs = [t.detach().requires_grad_(True) for t in (q, k, v, bias)]
            out, _ = _attend(*inputs[:3], None, ctx.causal, _with_bias(inputs[0], inputs[3], ctx.causal, ctx.mask))
            grads = torch.autograd.grad(out, inputs, grad)
        return (*grads, None, None)


def _with_bias(q, bias, causal: bool, mask):
    """The additive mask with the bias of each key at every query head: (B, H, s, s)."""
    s = q.shape[-2]
    if mask is None:
        mask = _table(s, causal, None, None, None, q.dtype, q.device)
    if mask is None:
        mask = torch.zeros(s, s, dtype=q.dtype, device=q.device)
        if causal:
            mask = mask.masked_fill(torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    full = bias.repeat_interleave(q.shape[1] // bias.shape[1], dim=1).float()
    return full + mask.float()


def bias_attention(q, k, v, bias, *, causal: bool, window=None) -> torch.Tensor:
    """softmax(q·kᵀ/√d + bias)·v, ``bias`` (B, KV, 1, s) a key and KV head, as flash-dmattn keeps it."""
    mask = _table(q.shape[-2], causal, window, None, None, q.dtype, q.device)
    return _BiasFlash.apply(q, k, v, bias, causal, mask)


def _causal(x: torch.Tensor, weight: torch.Tensor, bias, groups: int, before) -> torch.Tensor:
    """A causal convolution over (B, T, C): K − 1 positions before the first step, zeros or the vector ``before``."""
    b, _, c = x.shape
    k = weight.shape[-1]
    lead = x.new_zeros(b, c, k - 1) if before is None else before.to(x.dtype)[None, :, None].expand(b, c, k - 1)
    out = F.conv1d(torch.cat([lead, x.transpose(1, 2)], dim=-1), weight, bias, groups=groups)
    return out.transpose(1, 2)


class _CausalConv(torch.autograd.Function):
    """A causal convolution, depthwise or grouped, as a kernel runs it (causal-conv1d's CausalConv1dFn keeps ``x,
    weight, bias``): its input as given, never a padded copy; the positions before the first step read zeros or a
    given vector (CCA's grouped convolution reads the depthwise one's bias there); its output written (B, T, C)."""

    @staticmethod
    def forward(ctx, x, weight, bias, before, groups: int):
        ctx.groups = groups
        ctx.save_for_backward(x, weight, bias, before)
        computed = _causal(x, weight, bias, groups, before)
        return torch.empty_like(x, memory_format=torch.contiguous_format).copy_(computed)

    @staticmethod
    def backward(ctx, grad):
        x, weight, bias, before = ctx.saved_tensors
        with torch.enable_grad():
            live = [None if t is None else t.detach().requires_grad_(True) for t in (x, weight, bias, before)]
            out = _causal(live[0], live[1], live[2], ctx.groups, live[3])
            wanted = [t for t in live if t is not None]
            found = iter(torch.autograd.grad(out, wanted, grad, allow_unused=True))
            grads = [None if t is None else next(found) for t in live]
        return (*grads, None)


def causal_conv(x: torch.Tensor, weight: torch.Tensor, bias, groups: int, before=None) -> torch.Tensor:
    return _CausalConv.apply(x, weight, bias, before, groups)


def _dynamic(x: torch.Tensor, kernel: torch.Tensor, heads: int) -> torch.Tensor:
    """Each position's own k taps a head over the k positions centred on it (zeros beyond the ends): x (B, s, A),
    kernel (B·s·heads, k, 1) -> (B, s, A)."""
    b, s, a = x.shape
    k = kernel.shape[1]
    windows = F.unfold(x.transpose(1, 2).unsqueeze(-1), kernel_size=[k, 1], padding=[(k - 1) // 2, 0])
    windows = windows.transpose(1, 2).reshape(b * s * heads, a // heads, k)
    return (windows @ kernel).view(b, s, a)


class _DynamicConv(torch.autograd.Function):
    """A dynamic convolution (Wu et al. 2019) as fairseq's dynamicconv CUDA kernel runs it (dynamicconv_layer.py:
    ``ctx.save_for_backward(x, weights)``): its input and the per-position taps, never the unfolded windows."""

    @staticmethod
    def forward(ctx, x, kernel, heads: int):
        ctx.heads = heads
        ctx.save_for_backward(x, kernel)
        return _dynamic(x, kernel, heads)

    @staticmethod
    def backward(ctx, grad):
        x, kernel = ctx.saved_tensors
        with torch.enable_grad():
            live = [t.detach().requires_grad_(True) for t in (x, kernel)]
            grads = torch.autograd.grad(_dynamic(*live, ctx.heads), live, grad)
        return (*grads, None)


def dynamic_conv(x: torch.Tensor, kernel: torch.Tensor, heads: int) -> torch.Tensor:
    return _DynamicConv.apply(x, kernel, heads)


def _selection(index: torch.Tensor, size: int, tail: bool, heads: int, dtype) -> torch.Tensor:
    """The additive mask of a block selection: query i meets key j ≤ i where j's block (j // size) is one of
    ``index[b, g, i]`` (block ids, −1 none; g a group of heads // G query heads), and with ``tail`` every key of the
    query's own incomplete block (j ≥ ⌊(i + 1) / size⌋·size) as well: (B, heads, s, s)."""
    s = index.shape[-2]
    j = torch.arange(s, device=index.device)
    allowed = (index[..., None] == (j // size)).any(-2)  # (B, G, s, s)
    if tail:
        allowed = allowed | (j[None, :] >= ((j + 1) // size * size)[:, None])
    allowed = (allowed & (j[None, :] <= j[:, None])).repeat_interleave(heads // index.shape[1], dim=1)
    return torch.zeros(allowed.shape, dtype=dtype, device=index.device).masked_fill(~allowed, float("-inf"))


class _SelectFlash(torch.autograd.Function):
    """Attention over selected key blocks as a block-sparse flash kernel keeps it (FlashAttention-2's Q, K, V at
    their own heads, output and fp32 log-sum-exp, Dao 2023 §3.1, and the selection it reads: each query's chosen
    block ids, int64, as the sparse kernels of selected attention take them, e.g. NSA's block indices and
    DeepSeek-V3.2's top-k indices into FlashMLA's sparse kernel); the mask rebuilt from the ids in backward."""

    @staticmethod
    def forward(ctx, q, k, v, index, size: int, tail: bool):
        computed, lse = _attend(q, k, v, None, True, _selection(index, size, tail, q.shape[1], q.dtype))
        b, h, s, d = computed.shape
        out = computed.new_empty(b, s, h, d).transpose(1, 2).copy_(computed)
        ctx.size, ctx.tail = size, tail
        ctx.save_for_backward(q, k, v, index, out, lse)
        return out

    @staticmethod
    def backward(ctx, grad):
        q, k, v, index, _out, _lse = ctx.saved_tensors
        mask = _selection(index, ctx.size, ctx.tail, q.shape[1], q.dtype)
        with torch.enable_grad():
            inputs = [t.detach().requires_grad_(True) for t in (q, k, v)]
            out, _ = _attend(*inputs, None, True, mask)
            grads = torch.autograd.grad(out, inputs, grad)
        return (*grads, None, None, None)


def select_attention(q, k, v, index: torch.Tensor, size: int, tail: bool = False) -> torch.Tensor:
    """Causal attention over the key blocks ``index`` (B, G, s, n) names for each query (−1: none)."""
    return _SelectFlash.apply(q, k, v, index, size, tail)


def first_ids(chosen: torch.Tensor, n: int) -> torch.Tensor:
    """The first ``n`` block ids a boolean (…, blocks) selection holds, in order, −1 past them: (…, n) int64."""
    blocks = chosen.shape[-1]
    ids = torch.arange(blocks, device=chosen.device).expand_as(chosen)
    ranked = torch.where(chosen, ids, blocks).sort(dim=-1).values
    ranked = torch.cat([ranked, ranked.new_full((*ranked.shape[:-1], max(0, n - blocks)), blocks)], dim=-1)[..., :n]
    return torch.where(ranked < blocks, ranked, -1)


def _disentangled(q, k, v, c2p, p2c, scale: float, span: int):
    """DeBERTa's attention in fp32: q·kᵀ plus each query's content-to-position score at i − j and each key's
    position-to-content score at j − i (clamped to the 2·span rows), all times ``scale``; (output, log-sum-exp)."""
    s = q.shape[-2]
    i = torch.arange(s, device=q.device)
    relative = i[:, None] - i[None, :]
    scores = q.float() @ k.float().transpose(-2, -1)
    shape = scores.shape
    if c2p is not None:
        scores = scores + torch.gather(c2p.float(), -1, (relative + span).clamp(0, 2 * span - 1).expand(shape))
    if p2c is not None:
        scores = scores + torch.gather(p2c.float(), -1, (-relative + span).clamp(0, 2 * span - 1).expand(shape)).transpose(-2, -1)
    scores = scores * scale
    lse = scores.logsumexp(-1)
    return ((scores - lse[..., None]).exp() @ v.float()).to(q.dtype), lse


class _Disentangled(torch.autograd.Function):
    """DeBERTa's disentangled attention as FlashDeBERTa's kernel keeps it (Knowledgator/FlashDeBERTa,
    ops/flash_attention.py, FlashAttentionDisentangled: ``ctx.save_for_backward(q, k, v, k_pos, q_pos, o, L)``):
    Q, K, V, each query's content-to-position scores and each key's position-to-content scores over the 2·span
    relative positions (the products computed before the kernel), the output and the fp32 log-sum-exp; the
    probabilities recomputed in backward."""

    @staticmethod
    def forward(ctx, q, k, v, c2p, p2c, scale: float, span: int):
        computed, lse = _disentangled(q, k, v, c2p, p2c, scale, span)
        b, h, s, d = computed.shape
        out = computed.new_empty(b, s, h, d).transpose(1, 2).copy_(computed)
        ctx.scale, ctx.span = scale, span
        ctx.save_for_backward(q, k, v, c2p, p2c, out, lse)
        return out

    @staticmethod
    def backward(ctx, grad):
        q, k, v, c2p, p2c, _out, _lse = ctx.saved_tensors
        with torch.enable_grad():
            live = [None if t is None else t.detach().requires_grad_(True) for t in (q, k, v, c2p, p2c)]
            out, _ = _disentangled(*live, ctx.scale, ctx.span)
            wanted = [t for t in live if t is not None]
            found = iter(torch.autograd.grad(out, wanted, grad))
            grads = [None if t is None else next(found) for t in live]
        return (*grads, None, None)


def disentangled(q, k, v, c2p, p2c, scale: float, span: int) -> torch.Tensor:
    return _Disentangled.apply(q, k, v, c2p, p2c, scale, span)


def _local(q, k, v, gk, gv, block: int):
    """LongT5's block-local attention in fp32, as the reference module computes it: the queries in blocks of
    ``block``, each meeting its own block's keys and its neighbours' (zero keys and values past either end), and
    the global tokens' keys and values where given; K and V repeated to the query heads inside. (output (B, H, s,
    d) in q's dtype, log-sum-exp (B, H, padded queries))."""
    b, h, s, hd = q.shape
    rep = h // k.shape[1]
    k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
    n = -(-s // block)
    pad = n * block - s

    def blocks(t):
        return F.pad(t.float(), (0, 0, 0, pad)).view(b, h, n, block, t.shape[-1])

    def three(t):
        t = F.pad(t, (0, 0, 0, 0, 1, 1))
        return torch.cat([t[:, :, i : i + n] for i in range(3)], dim=3)

    qb, kb, vb = blocks(q), three(blocks(k)), three(blocks(v))
    if gk is not None:
        g = gk.shape[2]
        side = [t.repeat_interleave(rep, dim=1).float()[:, :, None].expand(b, h, n, g, hd) for t in (gk, gv)]
        kb, vb = torch.cat([kb, side[0]], dim=3), torch.cat([vb, side[1]], dim=3)
    scores = (qb * hd**-0.5) @ kb.transpose(-2, -1)
    lse = scores.logsumexp(-1)
    out = ((scores - lse[..., None]).exp() @ vb).reshape(b, h, n * block, -1)[:, :, :s]
    return out.to(q.dtype), lse.reshape(b, h, n * block)


class _LocalFlash(torch.autograd.Function):
    """Block-local attention as a block-sparse flash kernel keeps it (FlashAttention-2's Q, K and V at their own
    heads, the output and an fp32 log-sum-exp a query and head, here every padded query's, Dao 2023 §3.1; a block
    mask, FlexAttention's, the kernel's own arithmetic), with the global tokens' keys and values as further
    inputs; the probabilities recomputed in backward."""

    @staticmethod
    def forward(ctx, q, k, v, gk, gv, block: int):
        computed, lse = _local(q, k, v, gk, gv, block)
        b, h, s, d = computed.shape
        out = computed.new_empty(b, s, h, d).transpose(1, 2).copy_(computed)
        ctx.block = block
        ctx.save_for_backward(q, k, v, gk, gv, out, lse)
        return out

    @staticmethod
    def backward(ctx, grad):
        q, k, v, gk, gv, _out, _lse = ctx.saved_tensors
        with torch.enable_grad():
            live = [None if t is None else t.detach().requires_grad_(True) for t in (q, k, v, gk, gv)]
            out, _ = _local(*live, ctx.block)
            wanted = [t for t in live if t is not None]
            found = iter(torch.autograd.grad(out, wanted, grad))
            grads = [None if t is None else next(found) for t in live]
        return (*grads, None)


def local_attention(q, k, v, gk, gv, block: int) -> torch.Tensor:
    return _LocalFlash.apply(q, k, v, gk, gv, block)


def _relative(q, k, v, logits, scale: float, mask):
    """softmax(q·kᵀ·scale + b)·v in fp32, b[i, j] = logits[i, head, i − j] for 0 ≤ i − j < E (zero beyond), K and V
    repeated to the query heads inside, ``mask`` the causal (and window) table: (output, log-sum-exp)."""
    b, h, s, _ = q.shape
    rep = h // k.shape[1]
    k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
    extent = logits.shape[-1]
    i = torch.arange(s, device=q.device)
    distance = i[:, None] - i[None, :]
    index = distance.clamp(0, extent - 1).expand(b, h, s, s)
    bias = logits.float().transpose(1, 2).gather(-1, index).masked_fill((distance < 0) | (distance >= extent), 0.0)
    scores = (q.float() @ k.float().transpose(-2, -1)) * scale + bias + mask.float()
    lse = scores.logsumexp(-1)
    return ((scores - lse[..., None]).exp() @ v.float()).to(q.dtype), lse


class _RelFlash(torch.autograd.Function):
    """Attention with a relative bias looked up by distance inside the kernel, as FlashDeBERTa's kernel looks up its
    content-to-position scores (Knowledgator/FlashDeBERTa, ``ctx.save_for_backward(q, k, v, k_pos, q_pos, o, L)``):
    Q, K and V at their own heads, each query's bias over the E distances (B, s, h, E: the relative states times
    the bank, computed before the kernel), the output and the fp32 log-sum-exp; recomputed in backward."""

    @staticmethod
    def forward(ctx, q, k, v, logits, scale: float, mask):
        computed, lse = _relative(q, k, v, logits, scale, mask)
        b, h, s, d = computed.shape
        out = computed.new_empty(b, s, h, d).transpose(1, 2).copy_(computed)
        ctx.scale, ctx.mask = scale, mask
        ctx.save_for_backward(q, k, v, logits, out, lse)
        return out

    @staticmethod
    def backward(ctx, grad):
        q, k, v, logits, _out, _lse = ctx.saved_tensors
        with torch.enable_grad():
            live = [t.detach().requires_grad_(True) for t in (q, k, v, logits)]
            out, _ = _relative(*live, ctx.scale, ctx.mask)
            grads = torch.autograd.grad(out, live, grad)
        return (*grads, None, None)


def relative_attention(q, k, v, logits, scale: float, *, causal: bool, window=None) -> torch.Tensor:
    s = q.shape[-2]
    mask = _table(s, causal, window if window is not None and window < s else None, None, None, q.dtype, q.device)
    if mask is None:
        i = torch.arange(s, device=q.device)
        mask = torch.zeros(s, s, dtype=q.dtype, device=q.device)
        if causal:
            mask = mask.masked_fill(i[None, :] > i[:, None], float("-inf"))
        _MASKS[("relative", s, causal, q.dtype)] = mask  # a table: the kernel's arithmetic, not an activation
    return _RelFlash.apply(q, k, v, logits, scale, mask)


def _compressed(q, kv, entries, index, sinks, scale: float, window: int, m):
    """DeepSeek-V4's attention in fp32: each query head against the one shared key-value head within the window
    (causal) and against the compressed entries complete up to the query (those ``index`` names, where given: (B,
    s, k) entry ids, −1 none), one softmax with a sink logit a head: (output, log-sum-exp)."""
    s = q.shape[-2]
    i = torch.arange(s, device=q.device)
    outside = (i[None, :] > i[:, None]) | (i[None, :] <= i[:, None] - window)
    scores = (q.float() @ kv.float().transpose(-2, -1) * scale).masked_fill(outside, float("-inf"))
    if entries is not None:
        w = entries.shape[-2]
        e = torch.arange(w, device=q.device)
        keep = (e[None, :] < ((i + 1) // m)[:, None]).expand(q.shape[0], s, w)
        if index is not None:
            keep = keep & (index[..., None] == e).any(-2)
        extra = (q.float() @ entries.float().transpose(-2, -1) * scale).masked_fill(~keep[:, None], float("-inf"))
        scores = torch.cat([scores, extra], dim=-1)
    every = scores
    if sinks is not None:
        every = torch.cat([scores, sinks.float().view(1, -1, 1, 1).expand(*scores.shape[:-1], 1)], dim=-1)
    lse = every.logsumexp(-1)
    probs = (scores - lse[..., None]).exp()
    out = probs[..., :s] @ kv.float()
    if entries is not None:
        out = out + probs[..., s:] @ entries.float()
    return out.to(q.dtype), lse


class _CompressedFlash(torch.autograd.Function):
    """DeepSeek-V4's sparse attention as a flash kernel keeps it (FlashMLA's sparse prefill kernel, which
    DeepSeek-V3.2's and V4's training runs over selected keys: Q, the shared key-value head, the compressed
    entries, the indexer's chosen entry ids (int64 here), the output and the fp32 log-sum-exp with the sink; the
    probabilities recomputed in backward)."""

    @staticmethod
    def forward(ctx, q, kv, entries, index, sinks, scale: float, window: int, m):
        computed, lse = _compressed(q, kv, entries, index, sinks, scale, window, m)
        b, h, s, d = computed.shape
        out = computed.new_empty(b, s, h, d).transpose(1, 2).copy_(computed)
        ctx.args = (scale, window, m)
        ctx.save_for_backward(q, kv, entries, index, sinks, out, lse)
        return out

    @staticmethod
    def backward(ctx, grad):
        q, kv, entries, index, sinks, _out, _lse = ctx.saved_tensors
        with torch.enable_grad():
            live = [None if t is None else t.detach().requires_grad_(True) for t in (q, kv, entries, sinks)]
            out, _ = _compressed(live[0], live[1], live[2], index, live[3], *ctx.args)
            wanted = [t for t in live if t is not None]
            found = iter(torch.autograd.grad(out, wanted, grad, allow_unused=True))
            grads = [None if t is None else next(found) for t in live]
        return grads[0], grads[1], grads[2], None, grads[3], None, None, None


def compressed_attention(q, kv, entries, index, sinks, scale: float, window: int, m) -> torch.Tensor:
    return _CompressedFlash.apply(q, kv, entries, index, sinks, scale, window, m)


# Recurrent mixers: the chunked linear-attention kernels (flash-linear-attention) and the gated norms around them.


def _l2norm(x: torch.Tensor, eps: float = 1e-6):
    """(x / ‖x‖ over the last dim in x's dtype, the fp32 reciprocal norm): fla/modules/l2norm.py's l2norm_fwd."""
    rstd = torch.rsqrt(x.float().square().sum(-1, keepdim=True) + eps)
    return (x.float() * rstd).to(x.dtype), rstd


def _l2norm_grad(y: torch.Tensor, rstd: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
    """l2norm_bwd: the input's gradient from the normalised output and the reciprocal norm, r·(dy − y·(y·dy))."""
    y, grad = y.float(), grad.float()
    return rstd * (grad - y * (y * grad).sum(-1, keepdim=True))


def _chunk_cumsum(g: torch.Tensor, length: int) -> torch.Tensor:
    """fla.ops.utils.chunk_local_cumsum: the log-decay's running sum inside each chunk of ``length`` steps, in fp32."""
    b, s = g.shape[:2]
    return g.float().reshape(b, s // length, length, *g.shape[2:]).cumsum(2).reshape(g.shape)


def _chunk_matrices(q, k, g, beta, length: int, cols: int, dtype):
    """The chunk kernels' L × L matrices a token's row, written (B, s, H, cols) in ``dtype`` (FLA's A tensors
    [B, T, H, BT], a chunk's columns first): Akk = (I + strictly_lower((K_β Kᵀ) ∘ Γ))⁻¹, the UT transform the
    kernels keep (solve_tril's output), and Aqk = (Q Kᵀ) ∘ Γ with the diagonal; fp32 operands (B, s, H, d)."""
    b, s, h, d = k.shape
    n = s // length

    def chunks(t):
        return t.transpose(1, 2).reshape(b, h, n, length, *t.shape[3:])

    q, k, g, beta = chunks(q), chunks(k), chunks(g), chunks(beta)
    gamma = g.cumsum(-1)[..., None] if g.dim() == 4 else g.cumsum(-2)
    k_beta = k * beta[..., None]
    below = torch.ones(length, length, dtype=torch.bool, device=k.device).tril()
    if g.dim() == 4:  # one decay a head: Γ on the products
        decay = torch.exp((gamma - gamma.transpose(-2, -1)).masked_fill(~below, float("-inf")))
        kkt, qk = (k_beta @ k.transpose(-2, -1)) * decay, (q @ k.transpose(-2, -1)) * decay
    else:  # one a key channel: through the operands
        right = (k * torch.exp(-gamma)).transpose(-2, -1)
        kkt, qk = (k_beta * torch.exp(gamma)) @ right, (q * torch.exp(gamma)) @ right
    eye = torch.eye(length, device=k.device)
    akk = torch.linalg.solve_triangular(eye + kkt.tril(-1), eye.expand_as(kkt), upper=False)
    out = []
    for m in (akk, qk.tril()):
        table = torch.zeros(b, s, h, cols, dtype=dtype, device=k.device)
        table[..., :length] = m.reshape(b, h, s, length).transpose(1, 2)
        out.append(table)
    return out


class _DeltaRule(torch.autograd.Function):
    """The chunked gated delta rule as flash-linear-attention's kernels keep it, the gate computed inside: Gated
    DeltaNet's ChunkGatedDeltaRuleFunction (fla/ops/gated_delta_rule/chunk.py, ``ctx.save_for_backward(q, q_rstd,
    k, k_rstd, v, g, beta, A, initial_state, cu_seqlens)``) after GDNGateFunction (gate.py, which keeps its raw
    input), and Kimi Delta Attention's ChunkKDAFunction with use_gate_in_kernel (fla/ops/kda/chunk.py: q, q_rstd, k,
    k_rstd, v, g_cumsum, the raw g, beta, Aqk and Akk; w, u, kg, v_new and h recomputed): q and k after the in-kernel
    l2norm (at their own heads: the kernels serve several value heads from one) with their fp32 reciprocal norms, v
    made contiguous (input_guard), the gate's raw input as given, the decay's fp32 running sum a chunk, β as given,
    and the ``mats`` L × L matrices, one row of ``cols`` a token and head each (bf16 as the kernels write them).
    Everything else is recomputed in backward from what it keeps; the output is written (B, s, H, d_v)."""

    @staticmethod
    def forward(ctx, layer, gate, q, k, v, raw, a_log, dt_bias, beta, scale: float, mats: int):
        from ._delta import chunk_length, delta_rule

        b, s, hk, _ = q.shape
        h = v.shape[2]
        length = chunk_length(s, layer.chunk_size)
        with torch.no_grad():
            qn, q_rstd = _l2norm(q)
            kn, k_rstd = _l2norm(k)
            v, raw = v.contiguous(), raw.contiguous()  # input_guard
            g = gate(raw.float(), a_log.float(), dt_bias.float())
            cumsum = _chunk_cumsum(g, length)
            qf, kf = (t.float().repeat_interleave(h // hk, dim=2) for t in (qn, kn))
            computed = delta_rule(layer, qf * scale, kf, v.float(), g, beta.float())
            out = torch.empty(b, s, h, v.shape[-1], dtype=q.dtype, device=q.device).copy_(computed)
            tables = _chunk_matrices(qf * scale, kf, g, beta.float(), length, layer.chunk_size, q.dtype)[:mats]
        ctx.layer, ctx.gate, ctx.scale = layer, gate, scale
        ctx.save_for_backward(qn, q_rstd, kn, k_rstd, v, cumsum, raw, a_log, dt_bias, beta, *tables)
        return out

    @staticmethod
    def backward(ctx, grad):
        from ._delta import delta_rule

        qn, q_rstd, kn, k_rstd, v, _cumsum, raw, a_log, dt_bias, beta, *_tables = ctx.saved_tensors
        h, hk = v.shape[2], qn.shape[2]
        with torch.enable_grad():
            live = [t.detach().float().requires_grad_(True) for t in (qn, kn, v, raw, a_log, dt_bias, beta)]
            lq, lk, lv, lraw, la, ldt, lbeta = live
            g = ctx.gate(lraw, la, ldt)
            qf, kf = (t.repeat_interleave(h // hk, dim=2) for t in (lq, lk))
            out = delta_rule(ctx.layer, qf * ctx.scale, kf, lv, g, lbeta)
            dq, dk, dv, draw, da, ddt, dbeta = torch.autograd.grad(out, live, grad.float(), allow_unused=True)
        dq, dk = _l2norm_grad(qn, q_rstd, dq), _l2norm_grad(kn, k_rstd, dk)
        grads = [t.to(ref.dtype) for t, ref in zip((dq, dk, dv, draw, da, ddt, dbeta), (qn, kn, v, raw, a_log, dt_bias, beta))]
        return (None, None, *grads[:7], None, None)


def delta_rule(layer, gate, q, k, v, raw, a_log, dt_bias, beta, scale: float, mats: int) -> torch.Tensor:
    """q, k (B, s, Hk, d_k) before their l2norm, v (B, s, H, d_v), the gate's raw input (decay = gate(raw, a_log,
    dt_bias), one a head or a key channel), β (B, s, H) -> (B, s, H, d_v)."""
    return _DeltaRule.apply(layer, gate, q, k, v, raw, a_log, dt_bias, beta, scale, mats)


def _gated_rms(y, z, weight, act, groups: int, gate_first: bool, eps: float):
    """GatedRMSNorm's arithmetic in fp32: (output, fp32 inverse RMS a group)."""
    yf, a = y.float(), act(z.float())
    if gate_first:
        yf = yf * a
    grouped = yf.view(*yf.shape[:-1], groups, -1)
    rstd = torch.rsqrt(grouped.square().mean(-1, keepdim=True) + eps)
    out = (grouped * rstd).view(yf.shape) * weight.float()
    return (out if gate_first else out * a), rstd


class _GatedNorm(torch.autograd.Function):
    """An RMSNorm gated by act(z) as flash-linear-attention's FusedRMSNormGated runs it (fla/modules/fused_norm_gate.py,
    LayerNormGatedFunction: ``ctx.save_for_backward(residual_out, g, weight, bias, mean, rstd)``, the norm's input
    and the gate as the kernel reads them, z made contiguous as its reshape to rows does, and an fp32 inverse RMS a
    row); the normalised and gated output recomputed in backward."""

    @staticmethod
    def forward(ctx, y, z, weight, act, groups: int, gate_first: bool, eps: float):
        z = z.contiguous()
        with torch.no_grad():
            out, rstd = _gated_rms(y, z, weight, act, groups, gate_first, eps)
        ctx.args = (act, groups, gate_first, eps)
        ctx.save_for_backward(y, z, weight, rstd)
        return out.to(y.dtype)

    @staticmethod
    def backward(ctx, grad):
        y, z, weight, _rstd = ctx.saved_tensors
        with torch.enable_grad():
            live = [t.detach().requires_grad_(True) for t in (y, z, weight)]
            out, _ = _gated_rms(*live, *ctx.args)
            grads = torch.autograd.grad(out.to(y.dtype), live, grad)
        return (*grads, None, None, None, None)


def gated_norm(y, z, weight, act, groups: int, gate_first: bool, eps: float) -> torch.Tensor:
    return _GatedNorm.apply(y, z, weight, act, groups, gate_first, eps)


class _Kernel(torch.autograd.Function):
    """A recurrent mixer's fused kernel that keeps its inputs as given, made contiguous as its input_guard does,
    whatever else ``extras`` returns of them (fp32 chunk states, normalisers) and, with ``keep_output``, its output
    (flash-linear-attention's HGRN recurrence keeps its gate and its output), recomputing the rest in backward:
    flash-linear-attention's chunk kernels (``ctx.save_for_backward(q, k, v, ...)``) and the like. ``fn`` computes
    the output from the inputs; the output is written contiguous."""

    @staticmethod
    def forward(ctx, fn, extras, keep_output: bool, as_given: bool, *tensors):
        live = [t.contiguous() if t is not None and t.dim() > 1 and not as_given else t for t in tensors]
        with torch.no_grad():
            computed = fn(*live)
            out = torch.empty_like(computed, memory_format=torch.contiguous_format).copy_(computed)
            kept = extras(*live) if extras is not None else ()
        ctx.fn, ctx.count = fn, len(live)
        ctx.save_for_backward(*live, *kept, *((out,) if keep_output else ()))
        return out

    @staticmethod
    def backward(ctx, grad):
        tensors = ctx.saved_tensors[: ctx.count]
        with torch.enable_grad():
            live = [None if t is None else t.detach().requires_grad_(t.is_floating_point()) for t in tensors]
            wanted = [t for t in live if t is not None and t.requires_grad]
            out = ctx.fn(*live)
            found = iter(torch.autograd.grad(out, wanted, grad, allow_unused=True))
            grads = [next(found) if t is not None and t.requires_grad else None for t in live]
        return (None, None, None, None, *grads)


def kernel(fn, *tensors, extras=None, keep_output: bool = False, as_given: bool = False) -> torch.Tensor:
    """fn(*tensors) as a fused kernel keeping ``tensors`` (contiguous, or ``as_given``), ``extras(*tensors)`` and its
    output if asked."""
    return _Kernel.apply(fn, extras, keep_output, as_given, *tensors)


def _sparse_latent(q, kv, ids, rank: int, scale: float, sinks):
    """Multi-head latent attention over the keys ``ids`` names, absorbed, in fp32: q (B, s, H, rank + rope) against
    the one latent row a key (kv, (B, s, rank + rope)), its first ``rank`` features the value; ids (B, s, k), −1
    none; a sink logit a head where given. (output (B, s, H, rank), log-sum-exp (B, s, H))."""
    valid = ids >= 0
    b = torch.arange(q.shape[0], device=q.device)[:, None, None]
    rows = kv.float()[b, ids.clamp(min=0).long()]  # (B, s, k, rank + rope): the keys picked, never kept
    scores = torch.einsum("bshd,bskd->bshk", q.float(), rows) * scale
    scores = scores.masked_fill(~valid[:, :, None, :], float("-inf"))
    every = scores
    if sinks is not None:
        every = torch.cat([scores, sinks.float().view(1, 1, -1, 1).expand(*scores.shape[:-1], 1)], dim=-1)
    lse = every.logsumexp(-1)
    out = torch.einsum("bshk,bskd->bshd", (scores - lse[..., None]).exp(), rows[..., :rank])
    return out.to(q.dtype), lse


class _SparseLatent(torch.autograd.Function):
    """Sparse multi-head latent attention as FlashMLA's sparse kernel runs it (flash_mla_sparse_fwd: q [s_q, h_q,
    576], the latent kv [s_kv, 1, 576], indices [s_q, 1, topk] int32 with −1 for none, the output [s_q, h_q, 512]
    and an fp32 log-sum-exp a query and head; DeepSeek's TileLang sparse_mla_bwd reads q, kv, the output, the
    indices and the log-sum-exp): it keeps the absorbed queries, the latent rows, the int32 ids, the output and the
    log-sum-exp, never the gathered keys; the probabilities recomputed in backward."""

    @staticmethod
    def forward(ctx, q, kv, ids, sinks, rank: int, scale: float):
        with torch.no_grad():
            out, lse = _sparse_latent(q, kv, ids, rank, scale, sinks)
        ctx.rank, ctx.scale = rank, scale
        ctx.save_for_backward(q, kv, ids, out, lse, *(() if sinks is None else (sinks,)))
        return out

    @staticmethod
    def backward(ctx, grad):
        q, kv, ids, _out, _lse, *sinks = ctx.saved_tensors
        with torch.enable_grad():
            live = [t.detach().requires_grad_(True) for t in (q, kv, *sinks)]
            out, _ = _sparse_latent(live[0], live[1], ids, ctx.rank, ctx.scale, live[2] if sinks else None)
            grads = torch.autograd.grad(out, live, grad)
        return grads[0], grads[1], None, grads[2] if sinks else None, None, None


def sparse_latent_attention(q, kv, ids, sinks, rank: int, scale: float) -> torch.Tensor:
    """q (B, s, H, rank + rope) absorbed, kv (B, s, rank + rope) the latent and the rotary key, ids (B, s, k) int32
    -> (B, s, H, rank): each head's attention-weighted latent, before W_UV."""
    return _SparseLatent.apply(q, kv, ids, sinks, rank, scale)

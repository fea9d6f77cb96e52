"""The gated delta rule in its chunkwise form, shared by Gated DeltaNet (``gated_deltanet``: one decay per head) and
Kimi Delta Attention (``kda``: one decay per key channel); not a block kind itself.

The WY/UT representation of Yang et al. 2024b ("Parallelizing Linear Transformers with the Delta Rule over Sequence
Length", arXiv:2406.06484 §3), with the decay of Gated DeltaNet (arXiv:2412.06464 §3.3) or of KDA (arXiv:2510.26692
§3.2). In a chunk of L tokens, per head, with γ the cumulative log-decay inside the chunk (a scalar, or a vector
over the d_k key channels) and Γ[i,j] = exp(γ_i − γ_j) for j ≤ i:

    A      = strictly_lower((K_β Kᵀ) ∘ Γ)                           kkt      L × L × d_k
    [U | W] = (I + A)⁻¹ [V_β | K_β ∘ e^γ]  by forward substitution   solve    L × L × (d_k + d_v)
    P      = (Q Kᵀ) ∘ Γ, lower with the diagonal                    qk       L × L × d_k
    V'     = U − W S                                                state_correct  L × d_k × d_v
    O      = (Q ∘ e^γ) S + P V'                                     state_read, values  L × d_k × d_v, L × L × d_v
    S      ← e^{γ_L} ∘ S + (K ∘ e^{γ_L − γ})ᵀ V'                    state_write    d_k × L × d_v

A per-channel decay enters A and P through their operands instead, (K_β ∘ e^γ)(K ∘ e^{−γ})ᵀ and (Q ∘ e^γ)(K ∘ e^{−γ})ᵀ:
the same products. Per token and head, L·(3·d_k + 2·d_v) multiply-adds inside the chunk (the full L × L square;
the causal convention charges its lower triangle with the diagonal) and 3·d_k·d_v against the state.
"""

from __future__ import annotations

SOFTPLUS_OPS = 3  # log(1 + exp(x)): exp, add, log
L2NORM_OPS = 3  # per element: square, add into the sum, multiply by the reciprocal norm
# the products of the chunkwise form, each a MatMul module of the reference and a core term of the same name
PRODUCTS = ("kkt", "solve", "qk", "values", "state_correct", "state_read", "state_write")


def activation_saved(activation: str, width: int) -> int:
    """What an eager activation over ``width`` features keeps for backward a token: nothing for the identity, its
    input or its output (``width``: SiLU and GELU keep the input, ReLU, ReLU², tanh and sigmoid the output), and
    quick GELU's sigmoid output beside its input (2·width)."""
    if activation == "identity":
        return 0
    return 2 * width if activation == "quick_gelu" else width


def conv_activation_kept(activation: str, channels: int) -> int:
    """What the short convolution's activation keeps a token outside the convolution's kernel: nothing for SiLU,
    which causal-conv1d's kernel applies and recomputes; else what the activation itself keeps."""
    return 0 if activation == "silu" else activation_saved(activation, channels)


def chunk_length(seq_len: int, chunk_size: int) -> int:
    """The largest divisor of seq_len that is at most chunk_size: the sequence in equal chunks."""
    for length in range(min(chunk_size, seq_len), 0, -1):
        if seq_len % length == 0:
            return length
    return 1


def emit_delta_rule(e, prefix: str, n: int, h: int, dk: int, dv: int, length: int, decay: int, recurrence: bool = False) -> None:
    """The terms of the chunkwise delta rule in h heads of d_k keys and d_v values, chunks of ``length``:
    β's products, the decays (``decay`` FLOPs, which the gate's shape sets), the seven products and the state's
    elementwise work. ``recurrence``: also the token-by-token form, each form tagged for the conventions."""
    form = "chunked" if recurrence else ""
    # K_β = β·k and V_β = β·v
    e.op(f"{prefix}.beta", n * h * (dk + dv))
    e.op(f"{prefix}.decay", decay)
    # inside each chunk: attention over L keys (core_flops: exact the square, causal the triangle)
    for name, width in (("kkt", dk), ("solve", dk + dv), ("qk", dk), ("values", dv)):
        e.term(f"{prefix}.{name}", "core", (h, length, width), n, numel=0, macs=n * h * length * width, grows=False, form=form)
    # against the state S (d_k × d_v per head): each token meets one state, so one "key" whose product
    # is the same in every convention that counts attention (exact and causal both charge 2 · d_k·d_v)
    for name in ("state_correct", "state_read", "state_write"):  # W·S, (Q∘e^γ)·S, (K∘e^{γ_L−γ})ᵀ·V'
        e.term(f"{prefix}.{name}", "core", (h, 1, dk * dv), n, numel=0, macs=n * h * dk * dv, grows=False, form=form)
    if recurrence:
        # the same rule token by token, as Megatron-LM counts Gated DeltaNet: four d_k × d_v products per head
        # (KKᵀ, VKᵀ, S·(α(I − βKKᵀ)) and S·Q in its code's words), for conventions that count the recurrence
        e.term(f"{prefix}.recurrence", "recurrence", (h, dk, dv), n, numel=0, macs=n * 4 * h * dk * dv, grows=False, form="recurrent")
    # V' = U − W·S, O = Q·S + P·V' (a subtract and an add per value element), and per chunk the state's decay
    # and update (2·d_k·d_v per head, shared by the chunk's L tokens, rounded up to a whole FLOP per token)
    e.op(f"{prefix}.state_ops", n * (2 * h * dv + -(-2 * h * dk * dv // length)))


def add_products(layer) -> None:
    """The products of the chunkwise form as MatMul modules of ``layer``, so that verify attributes each."""
    from ._torch import MatMul

    for name in PRODUCTS:
        setattr(layer, name, MatMul())


def delta_rule(layer, q, k, v, g, beta):
    """The chunkwise gated delta rule: (B, s, H, d_k) ×2, (B, s, H, d_v), the log-decay g, (B, s, H) one per head
    or (B, s, H, d_k) one per key channel, and β (B, s, H) -> (B, s, H, d_v). ``layer`` holds the products
    (``add_products``), ``chunk_size`` and ``causal`` (the exact square or the causal triangle of each chunk)."""
    import math

    import torch

    from ._torch import lower_apply, lower_product

    b_, s, h, dk = k.shape
    dv = v.shape[-1]
    length = chunk_length(s, layer.chunk_size)
    n = s // length
    per_head = g.dim() == 3

    def chunks(t):  # (B, s, H, ...) -> (B, H, n, L, ...)
        return t.transpose(1, 2).reshape(b_, h, n, length, *t.shape[3:])

    q, k, v, g, beta = chunks(q), chunks(k), chunks(v), chunks(g), chunks(beta)
    # (B, H, n, L, d_k or 1): the log-decay from the chunk's start to each token
    gamma = g.cumsum(-1)[..., None] if per_head else g.cumsum(-2)
    grow = torch.exp(gamma)
    k_beta, v_beta = k * beta[..., None], v * beta[..., None]
    kb_grow, q_grow = k_beta * grow, q * grow
    if per_head:  # Γ on the L × L products, as transformers' torch_chunk_gated_delta_rule applies it
        left_a, left_p, right = k_beta, q, k
    else:  # through the operands, as FLA's chunk_kda forms A and P
        left_a, left_p, right = kb_grow, q_grow, k * torch.exp(-gamma)
    block = max(1, math.isqrt(length))
    if layer.causal:
        kkt = lower_product(layer.kkt, left_a, right, block)
        qk = lower_product(layer.qk, left_p, right, block)
    else:
        kkt = layer.kkt(left_a, right.transpose(-2, -1))  # (B, H, n, L, L): the full square
        qk = layer.qk(left_p, right.transpose(-2, -1))
    if per_head:
        below = torch.ones(length, length, dtype=torch.bool, device=v.device).tril()
        decay = torch.exp((gamma - gamma.transpose(-2, -1)).masked_fill(~below, float("-inf")))
        lower, attn = (kkt * decay).tril(-1), qk * decay  # A: strictly lower; P: lower with the diagonal
    else:
        lower, attn = kkt.tril(-1), qk.tril()
    # (I + A)·X = R by forward substitution, row i after rows 0..i-1: X_i = R_i − A_i·X
    rhs = torch.cat([v_beta, kb_grow], dim=-1)  # [V_β | K_β ∘ e^γ]
    zero = torch.zeros_like(rhs[..., :1, :])
    rows: list = []  # the solved rows, joined for each product (no in-place writes: autograd can differentiate it)
    for i in range(length):
        row = (
            layer.solve(lower[..., i : i + 1, : i + 1], torch.cat([*rows, zero], dim=-2))
            if layer.causal
            else layer.solve(lower[..., i : i + 1, :], torch.cat([*rows, *[zero] * (length - i)], dim=-2))
        )  # exact: the whole row, zeros included
        rows.append(rhs[..., i : i + 1, :] - row)
    u, w = torch.cat(rows, dim=-2).split([dv, dk], dim=-1)
    last = gamma[..., -1:, :]  # (B, H, n, 1, d_k or 1)
    k_out = k * torch.exp(last - gamma)  # keys decayed to the chunk's end
    if v.is_meta:  # no values to carry: the loop's products, each batched over the chunks (the same FLOPs)
        states = v.new_zeros(b_, h, n, dk, dv)
        v_new = u - layer.state_correct(w, states)
        layer.state_write(k_out.transpose(-2, -1), v_new)
    else:
        state = v.new_zeros(b_, h, dk, dv)
        states, fresh = [], []
        for c in range(n):  # the states between chunks, one after the other
            states.append(state)
            v_new = u[:, :, c] - layer.state_correct(w[:, :, c], state)  # (B, H, L, d_v)
            fresh.append(v_new)
            state = state * torch.exp(last[:, :, c]).transpose(-2, -1) + layer.state_write(k_out[:, :, c].transpose(-2, -1), v_new)
        states, v_new = torch.stack(states, dim=2), torch.stack(fresh, dim=2)  # (B, H, n, d_k, d_v), (B, H, n, L, d_v)
    inter = layer.state_read(q_grow, states)  # (B, H, n, L, d_v)
    intra = lower_apply(layer.values, attn, v_new, block) if layer.causal else layer.values(attn, v_new)
    return (inter + intra).reshape(b_, h, s, dv).transpose(1, 2)

"""What a Hugging Face training step keeps for backward: the bytes of every distinct tensor autograd saves in one
forward of a transformers class with eager attention, per component, from the spec and the few facts of the class's
code that the spec does not state (``Style``). Pure arithmetic; no torch. ``verify --memory --hf`` holds it against
the tensors transformers 5.23.0 itself saves (``analysis/hfsavedcheck.py``).

Each figure follows the op that saves it, in the class's forward and in autograd's derivatives
(torch/csrc/autograd/FunctionsManual.cpp, tools/autograd/derivatives.yaml): a linear layer keeps its input; a product
its factors that need a gradient; softmax, SiLU's sigmoid-free form aside, keeps its output (``_softmax_backward_data``
reads the output); SiLU keeps its input; ``topk`` its indices; an index or scatter its index; a cast, a view, an add
and a ``repeat_kv`` view nothing of their own. Where a rule depends on the device (dropout's mask, a layer norm's
statistics) the device is a parameter: the tests run the CPU, and the CUDA kernels' rules are stated beside.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.stack import Model

# transformers classes whose forward these rules follow (their modeling_*.py in 5.23.0), by the style they share
LLAMA_STYLE = ("llama", "mistral", "qwen2", "qwen3", "mixtral", "qwen3_moe")
STYLES = (*LLAMA_STYLE, "qwen3_next", "deepseek_v3", "gpt2")
DEVICES = ("cpu", "cuda")
# tensors of d_ff an activation of transformers' ACT2FN keeps: NewGELUActivation's
# 0.5 * x * (1 + tanh(√(2/π)·(x + 0.044715·x³))) keeps x (by pow), tanh's output, 0.5·x and 1 + tanh (by the last
# product); torch's gelu (exact or tanh) its input; relu its output
GELU_SAVES = {"gelu_new": 4, "gelu": 1, "gelu_pytorch_tanh": 1, "relu": 1}
COMPONENTS = ("embedding", "norms", "attention", "ffn", "final_norm", "head", "loss")


@dataclass(frozen=True)
class Style:
    """What the class's code does that the spec does not say. ``norm_topk``: the router's top-k weights divided by
    their sum in fp32 (Mixtral always, Qwen3-MoE where norm_topk_prob is set). ``cast_weights``: the routing weights
    cast to the activations' dtype before the experts weight their outputs (Qwen3-MoE's router returns
    ``router_top_value.to(router_logits.dtype)``); Mixtral's stay fp32."""

    model_type: str
    norm_topk: bool = False
    cast_weights: bool = False
    # DeepseekV3TopkRouter: F.linear(x.float(), weight.float()) and sigmoid scores, where the others' routers run a
    # linear layer in the activations' dtype and a softmax in fp32
    fp32_router: bool = False
    # GPT-2's dropout probabilities: of the embeddings' sum, of the attention weights, of each sublayer's output
    embd_pdrop: float = 0.0
    attn_pdrop: float = 0.0
    resid_pdrop: float = 0.0
    activation: str = "gelu_new"


def style_of(c) -> Style | None:
    """The style of a config (sources.hf.Config), or None where no rule set here follows its class."""
    t = c.model_type
    if t not in STYLES:
        return None
    if t == "gpt2":
        act = c.data.get("activation_function") or "gelu_new"
        if act not in GELU_SAVES:
            return None
        drops = {k: c.float(k, 0.1) for k in ("embd_pdrop", "attn_pdrop", "resid_pdrop")}
        return Style(t, activation=act, **drops)
    if c.float("attention_dropout", 0.0) != 0.0:
        return None  # eager attention's dropout mask: modelled for GPT-2's layers only
    if t == "deepseek_v3":  # DeepseekV3TopkRouter: sigmoid scores in fp32, norm_topk_prob defaulting to true
        return Style(t, norm_topk=c.bool("norm_topk_prob", True), fp32_router=True)
    if t == "qwen3_next":  # Qwen3NextConfig: norm_topk_prob defaults to true; its router casts the weights
        return Style(t, norm_topk=c.bool("norm_topk_prob", True), cast_weights=True)
    norm = True if t == "mixtral" else c.bool("norm_topk_prob", False) if t == "qwen3_moe" else False
    return Style(t, norm_topk=norm, cast_weights=t == "qwen3_moe")


def unsupported(spec: Model, style: Style | None) -> str | None:
    """Why the rules here do not follow this model, or None."""
    if style is None:
        return f"the saved tensors of transformers' {spec.model_type or 'this'} class are modelled for {', '.join(STYLES)}"
    for layer in spec.layers:
        for slot, b in layer.blocks():
            kinds = {"deepseek_v3": ("mla",), "qwen3_next": ("mha", "gated_deltanet")}.get(style.model_type, ("mha",))
            if slot == "attention" and b.kind not in kinds:
                return f"a {b.kind} attention"
            if slot == "ffn" and b.kind not in (("dense",) if style.model_type == "gpt2" else ("gated", "moe")):
                return f"a {b.kind} FFN"
    return None


def saved_bytes(spec: Model, style: Style, seq_len: int, batch: int = 1, act: int = 2, device: str = "cpu") -> dict[str, int]:
    """Bytes autograd saves in one training forward of ``batch`` sequences of ``seq_len`` tokens, activations of
    ``act`` bytes (bf16 2, fp32 4), with the loss on every position, per component (``COMPONENTS``), summed over the
    layers, on ``device`` (``DEVICES``). Raises ValueError where ``unsupported`` names a reason."""
    why = unsupported(spec, style)
    if why is not None:
        raise ValueError(why)
    if style.model_type == "gpt2":
        out = _gpt2(spec, style, seq_len, batch, act, device)
    else:
        out = _llama(spec, style, seq_len, batch, act)
    out["loss"] = _loss(spec, seq_len, batch)
    return out


def _loss(spec: Model, T: int, batch: int) -> int:
    """ForCausalLMLoss: logits.float(); cross_entropy's log_softmax keeps its fp32 output, nll_loss the targets
    (labels padded by one position then shifted, labels[..., 1:]: of batch 1 a view of the padded T + 1, else a
    contiguous copy of B × T for its view(-1); int64) and its fp32 total weight."""
    labels = 8 * (T + 1) if batch == 1 else 8 * batch * T
    return batch * T * 4 * spec.vocab_size + labels + 4


def _mask(act: int, device: str) -> int:
    """Bytes an element of dropout's kept mask takes: on the CPU ``input * bernoulli_(1 - p) / (1 - p)`` keeps the
    scaled noise in the input's dtype (aten/src/ATen/native/Dropout.cpp, _dropout_impl); on CUDA the fused kernel
    keeps a bool mask (aten/src/ATen/native/cuda/Dropout.cu, native_dropout)."""
    return act if device == "cpu" else 1


def _gpt2(spec: Model, style: Style, T: int, batch: int, act: int, device: str) -> dict[str, int]:
    """GPT2LMHeadModel (modeling_gpt2.py) with eager attention."""
    d, n = spec.d_model, batch * T
    mask = _mask(act, device)
    # nn.LayerNorm keeps its input, mean and rstd: the statistics in the input's dtype on the CPU
    # (aten/src/ATen/native/cpu/layer_norm_kernel.cpp), fp32 on CUDA (layer_norm_kernel.cu: acc_type)
    stat = act if device == "cpu" else 4
    ln = act * d + 2 * stat
    out = dict.fromkeys(COMPONENTS, 0)
    # wte's and wpe's int64 indices (position_ids of batch 1); the embeddings' dropout mask
    out["embedding"] = 8 * n + 8 * T + (n * mask * d if style.embd_pdrop else 0)
    for layer in spec.layers:
        blocks = dict(layer.blocks())
        a, f = blocks["attention"], blocks["ffn"]
        h, hd = a.n_heads, a.head_dim
        out["norms"] += n * 2 * ln
        # c_attn's input; Q, K and V, views of c_attn's fused output, as torch.matmul folds them to 3-D with reshape
        # (aten/src/ATen/native/LinearAlgebra.cpp, _matmul_impl): Q and V copied (act·h·hd each), Kᵀ copied too
        # unless the batch is 1, when it stays a view and keeps c_attn's whole output (3·act·d) alive; the weights
        # after softmax (with dropout: its mask and the dropped weights too); c_proj's input; the output's mask
        k = 3 * act * d if batch == 1 else act * h * hd
        att = act * d + act * h * hd + k + act * h * T + act * h * hd + act * d
        if style.attn_pdrop:
            att += (mask + act) * h * T
        if style.resid_pdrop:
            att += mask * d
        out["attention"] += n * att
        ff = f.d_ff
        # c_fc's input, the activation's kept tensors, c_proj's input, the output's dropout mask
        out["ffn"] += n * (act * d + GELU_SAVES[style.activation] * act * ff + act * ff + (mask * d if style.resid_pdrop else 0))
    out["final_norm"] = n * ln
    out["head"] = n * act * d
    return out


def _llama(spec: Model, style: Style, seq_len: int, batch: int, act: int) -> dict[str, int]:
    """LlamaForCausalLM and the classes written after it, with eager attention."""
    d, n, T = spec.d_model, batch * seq_len, seq_len
    out = dict.fromkeys(COMPONENTS, 0)
    out["embedding"] = 8 * n  # nn.Embedding keeps its int64 indices for the scatter of its gradient
    gemma = style.model_type == "qwen3_next"

    def rms(width: int, heads: int = 1) -> tuple[int, int]:
        """(bytes a token, bytes a layer) of an RMSNorm over ``heads`` groups of ``width``. LlamaRMSNorm (and Qwen3's
        q/k norms over a head): x.to(fp32) kept by pow (4·w), rsqrt(var + eps) kept by the product (4), the normalised
        x cast back kept by weight * x (act·w); in fp32 the casts are no-ops and the same three remain.
        Qwen3NextRMSNorm multiplies in fp32 by (1 + weight.float()): the fp32 input, the rsqrt, the fp32 normalised x
        (8·w + 4), and the fp32 1 + weight once a layer (4·w)."""
        if gemma:
            return heads * (8 * width + 4), 4 * width
        return heads * (4 * width + 4 + act * width), 0

    def norm(width: int, heads: int = 1) -> int:
        per_token, per_layer = rms(width, heads)
        return n * per_token + per_layer

    rope_once = False
    for layer in spec.layers:
        blocks = dict(layer.blocks())
        out["norms"] += 2 * norm(d)  # input_layernorm, post_attention_layernorm
        a = blocks["attention"]
        out["ffn"] += ffn_bytes(blocks["ffn"], style, d, n, act)
        if a.kind == "mla":
            out["attention"] += n * _mla(a, d, T, batch, act) + (0 if rope_once else 2 * act * a.qk_rope_head_dim * T)
            rope_once = True
            continue
        if a.kind == "gated_deltanet":
            out["attention"] += _deltanet(a, d, T, batch, act)
            continue
        h, kv, hd, vd = a.n_heads, a.kv_heads, a.head_dim, a.value_dim
        att = n * act * d  # q/k/v_proj's shared input, the norm's output (a bias keeps nothing more)
        if a.qk_norm != "none":  # Qwen3's q_norm and k_norm over each head
            att += norm(hd, h) + norm(hd, kv)
            if a.gate and act == 4:  # in fp32 q_norm keeps its input itself: a view of q_proj's output, gates and all
                att += n * 4 * h * hd
        # eager_attention_forward: Q after rotary (new), K and V through repeat_kv (a new tensor of h heads when
        # kv < h, K and V themselves when kv = h: h heads either way); matmul keeps Q and K, then V and the weights
        per_token = act * h * (hd + hd + vd)
        # softmax(dtype=float32) keeps its fp32 output; .to(query.dtype) a bf16 copy for the product with V (none in fp32)
        per_token += (4 + (act if act != 4 else 0)) * h * T
        per_token += act * h * vd  # o_proj's input, the heads' output made contiguous
        if a.gate:  # Qwen3NextAttention: output * sigmoid(gate), keeping the output and the sigmoid's
            per_token += 2 * act * h * vd
        att += n * per_token
        if spec.positions == "rotary" and not rope_once:
            # the rotary embedding runs once a forward, for position_ids of batch 1: cos and sin of (1, T, rotary width)
            # in the activations' dtype, kept by q * cos and rotate_half(q) * sin in every layer (one storage each)
            att += 2 * act * a.rotary_dim * T
            rope_once = True
        out["attention"] += att
    out["final_norm"] = norm(d)
    out["head"] = n * act * d  # lm_head keeps its input
    return out


def _deltanet(a, d: int, T: int, batch: int, act: int) -> int:
    """Qwen3NextGatedDeltaNet with transformers' torch kernels (causal_conv1d's fallback, torch_chunk_gated_delta_rule
    with the q/k l2-norm): what it keeps for ``batch`` sequences of T tokens, padded to whole chunks of C."""
    hk, dk, K, C = a.n_key_heads, a.key_head_dim, a.conv_kernel, a.chunk_size
    hv, dv = a.n_value_heads or hk, a.value_head_dim or dk
    n, N = batch * T, -(-T // C)
    P = N * C  # the padded length
    conv = 2 * hk * dk + hv * dv
    kept = n * act * d  # in_proj_qkvz's and in_proj_ba's input
    # the depthwise convolution's input (q, k, v concatenated), its output over T + K - 1 positions kept by the SiLU
    kept += batch * act * conv * (T + K - 1) + n * act * conv
    kept += n * act * hv  # beta = sigmoid(b)
    # g = -exp(A_log) · softplus(a + dt_bias): exp's output and its negation's product partner once a layer, the
    # softplus's input and output a token
    kept += 4 * hv + 4 * hv + n * 8 * hv
    # the l2 norms of Q and K (repeated to the value heads, fp32): each keeps x and its rsqrt
    kept += n * 2 * (4 * hv * dk + 4 * hv)
    per_seq = 0
    per_seq += 4 * hv * P * (1 + dv + dk)  # beta, V and K padded, kept by v·beta and k·beta
    per_seq += 4 * hv * N * C * C * 5  # exp(pairwise decay), the two products it scales, ut_system, the intra-chunk attention
    per_seq += 4 * hv * P * dk * 2  # k_beta and the scaled Q, kept by their products with Kᵀ
    per_seq += 4 * hv * P * 3  # exp(cum_decay) kept by decayed_k_beta, and the decays of Q and K
    per_seq += 4 * hv * P * (dv + dk)  # solve_triangular's outputs: the new values and k_cumdecay
    per_seq += 4 * hv * N  # exp of each chunk's last decay
    # the scan: each chunk's state (dk × dv a head) and v_new (C × dv); once there is a second chunk, the decayed Q
    # and K, read against the carried state
    per_seq += N * 4 * hv * (dk * dv + C * dv) + (8 * hv * P * dk if N > 1 else 0)
    kept += batch * per_seq + C * C  # and the chunk's bool mask, once
    # Qwen3NextRMSNormGated over each value head: its norm (fp32 input, rsqrt, the normalised x cast back) times
    # silu(z.float()): the gate's fp32 copy, the SiLU's output and the weighted x; then out_proj's input
    kept += n * hv * (4 * dv + 4 + act * dv) + n * hv * (8 * dv + act * dv) + n * act * hv * dv
    return kept


def _mla(a, d: int, T: int, batch: int, act: int) -> int:
    """DeepseekV3Attention per token: q_a_proj's (and kv_a_proj_with_mqa's) input; q_a_layernorm over q_lora_rank and
    q_b_proj's input (or, without a query latent, nothing more: q_proj reads the same input); kv_a_layernorm over the
    latent, whose fp32 input in an fp32 run is a view of kv_a_proj_with_mqa's whole output (latent and rotary key),
    and kv_b_proj's input; Q and K of nope + rope width (new tensors: the rotary halves concatenated); the fp32 softmax
    and its cast; V a view of kv_b_proj's output (nope and value of every head) when the batch is 1, else copied by
    matmul's reshape (see _gpt2); o_proj's input. The cos and sin of the rotary width come once a forward."""
    h, r, p, nope, vd = a.n_heads, a.kv_lora_rank, a.qk_rope_head_dim, a.qk_nope_head_dim, a.v_head_dim

    def rms(width: int, kept_input: int) -> int:
        return 4 * kept_input + 4 + act * width

    kept = act * d
    if a.q_lora_rank is not None:
        kept += rms(a.q_lora_rank, a.q_lora_rank) + act * a.q_lora_rank
    kept += rms(r, r + (p if act == 4 else 0)) + act * r
    kept += 2 * act * h * (nope + p)
    kept += (4 + (act if act != 4 else 0)) * h * T
    kept += act * h * ((nope + vd) if batch == 1 else vd)
    return kept + act * h * vd


def ffn_bytes(ffn, style: Style, d: int, n: int, act: int) -> int:
    if ffn.kind == "gated":
        # LlamaMLP: gate/up_proj's shared input, act_fn's input (gate's output), its output, up's output, and the
        # product (down_proj's input): act·(d + 4·d_ff)
        return n * act * (d + 4 * ffn.d_ff)
    # MixtralSparseMoeBlock / Qwen3MoeSparseMoeBlock / DeepseekV3MoE with transformers' grouped experts
    # (integrations/moe.py, grouped_mm_experts_forward):
    E, k, ff = ffn.n_experts, ffn.top_k, ffn.expert.d_ff
    per_token = act * d + 8 * k  # the router's input (its norm's output); topk's int64 indices (gather's in DeepSeek)
    per_layer = 4 * E  # the int32 offsets of the experts' groups
    if style.fp32_router:
        # x.float() and weight.float() copies (none in fp32: the same tensors), the sigmoid's fp32 output; the group
        # choice runs on a branch no gradient flows through, freed before backward
        per_token += 4 * E + (4 * d if act != 4 else 0)
        per_layer += 4 * E * d if act != 4 else 0
    else:
        per_token += 4 * E  # the softmax's fp32 output
    if style.norm_topk:
        per_token += 4 * k + 4  # top_k / sum: the fp32 top-k weights and their sum
    # each routed (token, expert) pair: two int64 sort indices, the gathered input, gate_up's output (act_fn's input,
    # the up half a view of it), act_fn's output, the product (down's input), the routing weight (fp32 unless cast to
    # act), down's output (kept by the weighting), and the scatter's int64 index
    weight = act if style.cast_weights else 4
    routed = 8 + 8 + act * d + act * 2 * ff + act * ff + act * ff + weight + act * d + 8
    shared = 0
    if ffn.shared is not None:  # DeepseekV3MLP over every token: act_fn's input, its output, up's output, the product
        shared = ffn.n_shared_experts * 4 * act * ffn.shared.d_ff
    if ffn.shared_gate:  # Qwen3-Next: sigmoid(shared_expert_gate(x)) * shared output keeps both (the input is x's)
        shared += act + act * d
    return n * (per_token + shared) + n * k * routed + per_layer

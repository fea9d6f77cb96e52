"""A vision encoder whose layers' MLPs have widths of their own: dense SwiGLU MLPs in its first layers, then mixtures of
routed experts whose number grows layer by layer (Dots3 Note's Dots3NoteVisionModel, as transformers 5.23 builds it
from per_layer_config). Not a part of its own: a tower (parts/vision.py) holds one, after its patch embedding and its
norm. Every layer, pre-norm with RMSNorms (norm1, norm2):

- attention (Dots3NoteVisionAttention): qkv, one Linear(width, 3 · width) (its q, k and v rows), an RMSNorm over each
  query and key head (q_norm, k_norm), 2-D rotary positions (no multiply-adds), every patch meeting every patch of its
  image, proj, Linear(width, width); biases as attention_bias;
- a dense layer's MLP (Dots3NoteVisionMLP): gate_proj and up_proj to ``ffn``, down_proj back, biases as mlp_bias;
- a routed layer's (Dots3NoteVisionMoE): a router, Linear(width, experts) without a bias, sigmoid scores, the top
  ``top_k`` experts a patch (min(num_experts_per_tok, experts)); each expert a SwiGLU of ``expert_ffn``
  (Dots3NoteExperts: gate_up_proj (experts, 2 · expert_ffn, width), down_proj (experts, width, expert_ffn)), no shared
  expert; e_score_correction_bias a buffer (no parameter). A patch's work is its top_k experts' whatever the routing;
- then the tower's norm, an RMSNorm (``norm``)."""

from __future__ import annotations

from dataclasses import dataclass

from ..model.schema import NonNegative, Positive, SpecError
from ..model.spec import Norm
from ..model.terms import ACTIVATION_OPS, RESIDUAL_ADDS, SOFTMAX_OPS, Emitter

RMSNORM = Norm(kind="rmsnorm")


@dataclass(frozen=True)
class RoutedLayers:
    width: Positive  # hidden_size
    heads: Positive  # num_attention_heads
    ffn: Positive  # intermediate_size: a dense layer's MLP
    expert_ffn: Positive  # moe_intermediate_size: each routed expert's
    experts: list[NonNegative]  # each layer's routed experts, 0 for a dense layer (per_layer_config's num_local_experts)
    top_k: Positive = 2  # num_experts_per_tok
    attention_bias: bool = False
    mlp_bias: bool = False

    def __post_init__(self) -> None:
        if self.width % self.heads:
            raise SpecError(("heads",), f"{self.heads} heads do not divide the width {self.width}")
        if not self.experts or any(n < 0 for n in self.experts):
            raise SpecError(("experts",), f"expected an expert count a layer (0: dense), got {list(self.experts)}")

    @property
    def depth(self) -> int:
        return len(self.experts)

    def routed(self) -> dict[int, int]:
        """Routed layers by their expert count: {experts: layers}."""
        out: dict[int, int] = {}
        for n in self.experts:
            if n:
                out[n] = out.get(n, 0) + 1
        return out

    def k(self, experts: int) -> int:
        """Experts a patch runs in a layer of ``experts`` (Dots3NoteVisionConfig: min(num_experts_per_tok, count))."""
        return min(self.top_k, experts)

    def terms(self, patches: int) -> list[tuple[str, object]]:
        """Its tensors and their work over an image of ``patches`` patches, each with what it runs over: "patch", or
        "tower" for the attention products (a query meeting every patch)."""
        d, h, n = self.width, self.heads, self.depth
        hd, m = d // h, self.expert_ffn
        e, core = Emitter("layers"), Emitter("layers")
        e.norm("vision.norms", RMSNORM, d, 2 * n)
        for part in "qkv":  # qkv, one Linear(width, 3 · width): its query, key and value rows
            e.linear(f"vision.attn.{part}", d, d, self.attention_bias, n)
        e.norm("vision.attn.q_norm", RMSNORM, hd, n, total=d)  # every head of a patch
        e.norm("vision.attn.k_norm", RMSNORM, hd, n, total=d)
        for part in ("scores", "values"):
            core.term(f"vision.attn.{part}", "core", (h, patches, hd), n, numel=0, macs=0, select="full")
        e.op("vision.attn.softmax", n * h * patches * SOFTMAX_OPS, n, scores=n * h * patches)
        e.linear("vision.attn.o", d, d, self.attention_bias, n)
        dense = sum(1 for x in self.experts if not x)
        if dense:
            e.linear("vision.ffn.gate", d, self.ffn, self.mlp_bias, dense)
            e.linear("vision.ffn.up", d, self.ffn, self.mlp_bias, dense)
            e.op("vision.ffn.act", dense * self.ffn * (ACTIVATION_OPS["silu"] + 1), dense)
            e.linear("vision.ffn.down", self.ffn, d, self.mlp_bias, dense)
        for experts, layers in sorted(self.routed().items()):
            k = self.k(experts)
            e.linear("vision.moe.router", d, experts, False, layers)
            # every expert's weights stored, top_k of them run a patch (Dots3NoteExperts: gate and up in one tensor)
            e.term(
                "vision.moe.experts.gate_up.weight", "weight", (experts, 2 * m, d), layers, macs=layers * k * 2 * m * d, expert=True
            )
            e.term("vision.moe.experts.down.weight", "weight", (experts, d, m), layers, macs=layers * k * d * m, expert=True)
            # the sigmoid scores and their normalisation, each chosen expert's SwiGLU, its output weighted and summed
            e.op(
                "vision.moe.act",
                layers * (experts * ACTIVATION_OPS["sigmoid"] + k * (m * (ACTIVATION_OPS["silu"] + 1) + 2 * d)),
                layers,
            )
        e.op("vision.residual", n * RESIDUAL_ADDS * d, n)
        e.norm("vision.final_norm", RMSNORM, d, 1)
        return [("patch", t) for t in e.out] + [("tower", t) for t in core.out]

    def modules(self):
        """Its layers' reference modules and the final norm (imports torch when called); each layer takes an image's
        patches through it, a routed layer's patches each through ``top_k`` experts (the same work whichever)."""
        import torch
        from torch import nn

        from ..blocks._torch import Linear, MatMul, make_norm

        spec = self
        d, heads = self.width, self.heads
        hd, m = d // heads, self.expert_ffn

        class Experts(nn.Module):
            def __init__(self, shape: tuple[int, int, int]):
                super().__init__()
                self.weight = nn.Parameter(torch.empty(shape))
                self.weight_flops = True  # verify: its FLOPs are its weight's

            def forward(self, x, j: int):
                """Expert ``j`` over ``x``."""
                return nn.functional.linear(x, self.weight[j])

        class Layer(nn.Module):
            def __init__(self, experts: int):
                super().__init__()
                self.n_experts = experts
                self.norms = nn.ModuleList([make_norm(RMSNORM, d), make_norm(RMSNORM, d)])
                self.attn = nn.Module()
                for part in "qkv":
                    setattr(self.attn, part, Linear(d, d, bias=spec.attention_bias))
                self.attn.q_norm, self.attn.k_norm = make_norm(RMSNORM, hd), make_norm(RMSNORM, hd)
                self.attn.scores, self.attn.values = MatMul(), MatMul()
                self.attn.o = Linear(d, d, bias=spec.attention_bias)
                if experts:
                    self.moe = nn.Module()
                    self.moe.router = Linear(d, experts, bias=False)
                    self.moe.experts = nn.Module()
                    self.moe.experts.gate_up = Experts((experts, 2 * m, d))
                    self.moe.experts.down = Experts((experts, d, m))
                else:
                    self.ffn = nn.Module()
                    self.ffn.gate = Linear(d, spec.ffn, bias=spec.mlp_bias)
                    self.ffn.up = Linear(d, spec.ffn, bias=spec.mlp_bias)
                    self.ffn.down = Linear(spec.ffn, d, bias=spec.mlp_bias)

            def forward(self, h):  # (b, patches, d)
                b, n, _ = h.shape
                x = self.norms[0](h)
                q, k, v = (getattr(self.attn, p)(x).reshape(b, n, heads, hd).transpose(1, 2) for p in "qkv")
                q, k = self.attn.q_norm(q), self.attn.k_norm(k)
                probs = self.attn.scores(q, k.transpose(-2, -1)).softmax(-1)
                h = h + self.attn.o(self.attn.values(probs, v).transpose(1, 2).reshape(b, n, d))
                y = self.norms[1](h)
                if not self.n_experts:
                    return h + self.ffn.down(nn.functional.silu(self.ffn.gate(y)) * self.ffn.up(y))
                torch.sigmoid(self.moe.router(y))
                out = torch.zeros_like(y)
                for j in range(spec.k(self.n_experts)):  # a patch's chosen experts: the first top_k stand for them
                    gate, up = self.moe.experts.gate_up(y, j).chunk(2, dim=-1)
                    out = out + self.moe.experts.down(nn.functional.silu(gate) * up, j)
                return h + out

        return nn.ModuleList(Layer(n) for n in spec.experts), make_norm(RMSNORM, d)

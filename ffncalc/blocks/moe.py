"""Mixture of experts: a router picks ``top_k`` of ``n_experts`` routed FFNs per token; shared experts see
every token (Shazeer et al. 2017; Fedus et al. 2021; DeepSeekMoE, Dai et al. 2024).

Identity experts (LongCat-Flash's zero-computation experts, LongCat-Flash Technical Report §2.1) are further
choices of the router that return their input: no parameters, and no work but the weighting and the add that
every chosen expert's output takes. How many of a token's top_k choices are routed experts depends on the router's
scores; the counts here take every choice to be a routed expert (the most a token computes), and the active
parameters and FLOPs are that maximum (a token that picks j identity experts uses j experts fewer).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from typing import Annotated

from ..model.schema import NonNegative, Positive, Slot, SpecError
from ..model.terms import ACTIVATION_OPS, SOFTMAX_OPS
from . import Block, register

Expert = Annotated[object, Slot("ffn", only=("dense", "gated"))]

BALANCED = (
    "MoE routing on meta tensors is balanced: token-slot j goes to expert j mod n_experts, so each "
    "expert gets tokens·top_k/n_experts rows (real top-k routing needs values; its FLOPs are the same)"
)


@register
@dataclass(frozen=True)
class MoEFFN(Block):
    """Mixture of experts: a router picks ``top_k`` of ``n_experts`` routed experts per token;
    ``n_shared_experts`` copies of ``shared`` (if any) see every token."""

    kind = "moe"
    slot = "ffn"
    summary = "mixture of experts: a softmax router, top-k routed FFNs and shared FFNs (DeepSeekMoE)"
    verify_note = BALANCED

    n_experts: Positive
    top_k: Positive
    expert: Expert
    n_shared_experts: NonNegative = 0
    shared: Expert | None = None
    shared_gate: bool = False  # a d_model -> 1 sigmoid gate on the shared experts' output (Qwen2-MoE)
    shared_average: bool = False  # the routed and shared outputs averaged, (routed + shared) / 2 (Cohere2-MoE)
    router_bias: bool = False
    # a per-expert bias added to the router's scores to choose experts, a learned parameter in some families
    # (ERNIE 4.5's moe_statics) and a buffer, not counted, in others (DeepSeek-V3's e_score_correction_bias)
    correction_bias: bool = False
    # experts chosen by a fixed table from the token's id (a buffer, not counted), the router's scores only weighting
    # them: DeepSeek-V4's hash layers (DeepseekV4HashRouter's tid2eid); the same parameters and work as top-k routing
    hash_routed: bool = False
    # a norm of the model's kind over the mixture's output, routed and shared summed (A.X-K1's post_mlp_layernorm)
    output_norm: bool = False
    output_bias: bool = False  # one bias of d_model added to the mixture's output (JetMoE: JetMoeMoE.bias)
    # experts that return their input, among the router's choices: n_experts + identity_experts router outputs,
    # no parameters (LongCat-Flash's zero-computation experts; zero_expert_num)
    identity_experts: NonNegative = 0
    # gate and up weights held for each identity expert as well, never read: transformers' LongcatFlashExperts
    # sizes its gate_up_proj by every router output (n_experts + identity_experts) and down_proj by n_experts
    identity_gate_up: bool = False
    # a router that is a small MLP of this width r (ZAYA1's ZayaRouter): down d -> r with a bias, the model's norm
    # over r, fc1 and fc2 r -> r with biases, each followed by GELU, and out r -> the router's classes, no bias
    router_mlp: Positive | None = None
    # one more router class than the choices, a "skip" that runs no expert and adds nothing (ZAYA1)
    skip_expert: bool = False
    # the previous layer's router state (its down projection's output, r) scaled per feature and added to this
    # layer's before the MLP (ZAYA1's router_states_scale, from the second layer on)
    router_state: bool = False
    # routed experts in a narrower space of this width m (MUSE Spark's moe_hidden_size: MuseSparkMoE): pre_proj d -> m
    # and a norm of the model's kind over m before the experts, each expert's output through one shared norm over m
    # (post_expert_norm, MuseSparkTextInputScaledRMSNorm: scale by 1 + w, then normalise), post_proj m -> d after them
    expert_width: Positive | None = None
    # the router's logits times a constant before its activation (MUSE Spark's output_multiplier): one product a class
    router_scale: bool = False

    def __post_init__(self) -> None:
        if self.top_k > self.n_experts + self.identity_experts:
            raise SpecError(
                ("top_k",),
                f"top_k {self.top_k} exceeds n_experts {self.n_experts}"
                if not self.identity_experts
                else f"top_k {self.top_k} exceeds the router's {self.choices} choices",
            )
        if self.identity_gate_up and not self.identity_experts:
            raise SpecError(("identity_gate_up",), "identity_gate_up needs identity_experts")
        if self.identity_gate_up and getattr(self.expert, "gated", False) is not True:
            raise SpecError(("identity_gate_up",), "identity_gate_up sizes a gated expert's gate and up weights")
        if self.n_shared_experts and self.shared is None:
            raise SpecError(("shared",), f"n_shared_experts is {self.n_shared_experts} but no shared expert FFN is given")
        if self.shared is not None and not self.n_shared_experts:
            raise SpecError(("n_shared_experts",), "a shared expert FFN is given but n_shared_experts is 0")
        if self.shared_gate and self.shared is None:
            raise SpecError(("shared_gate",), "shared_gate needs a shared expert FFN")
        if self.shared_average and self.shared is None:
            raise SpecError(("shared_average",), "shared_average needs a shared expert FFN")
        if self.hash_routed and (self.correction_bias or self.identity_experts or self.skip_expert):
            raise SpecError(
                ("hash_routed",),
                "a hash-routed mixture picks routed experts by token id alone: no correction bias, identity experts or skip class",
            )
        if self.router_mlp is not None and self.router_bias:
            raise SpecError(("router_bias",), "an MLP router states its own biases")
        if self.router_state and self.router_mlp is None:
            raise SpecError(("router_state",), "the router state is an MLP router's: state router_mlp")
        if self.expert_width is not None and (self.identity_experts or self.skip_expert):
            raise SpecError(("expert_width",), "experts in a narrower space return no input: no identity experts or skip")

    @property
    def choices(self) -> int:
        """The experts a token may choose: the routed experts and the identity experts."""
        return self.n_experts + self.identity_experts

    @property
    def router_classes(self) -> int:
        """The router's outputs: the choices, and the skip class where there is one."""
        return self.choices + int(self.skip_expert)

    @property
    def routed_active(self) -> int:
        """Routed experts a token computes, at most: every one of its top_k choices a routed expert."""
        return min(self.top_k, self.n_experts)

    @property
    def count_note(self) -> str | None:
        if not self.identity_experts:
            return None
        held = (
            " ffn.identity_gate_up: gate and up weights held for each identity expert, as transformers' "
            "LongcatFlashExperts sizes its gate_up_proj, never read."
            if self.identity_gate_up
            else ""
        )
        return (
            f"identity experts: {self.identity_experts} of the router's {self.choices} choices return their input "
            f"(no matmul); active parameters and FLOPs take all {self.top_k} of a token's choices to be "
            f"routed experts, the maximum (a token choosing j identity experts computes j routed experts fewer).{held}"
        )

    @property
    def variant(self) -> str:
        identity = f" (+{self.identity_experts} identity)" if self.identity_experts else ""
        hashed = " hash-routed" if self.hash_routed else ""
        return f"MoE {self.top_k}/{self.n_experts}{identity}{hashed} × {self.expert.variant}"

    def resolve(self, d_model: int) -> MoEFFN:
        return replace(
            self, expert=self.expert.resolve(d_model), shared=self.shared.resolve(d_model) if self.shared is not None else None
        )

    def routed_experts(self) -> int:
        return self.n_experts

    def active_experts(self) -> int:
        return self.top_k

    def shared_experts(self) -> int:
        return self.n_shared_experts

    def describe(self) -> str:
        return self.variant

    def facts(self) -> dict[str, object]:
        return {"ffn": self.variant, "d_ff": self.expert.d_ff}

    def terms(self, e, model, seq_len: int) -> None:
        d, n, classes = model.d_model, e.n, self.router_classes
        if self.router_mlp is None:
            e.linear("ffn.router", d, classes, self.router_bias, n)
        else:
            self._mlp_router_terms(e, model)
        if self.router_scale:
            e.op("ffn.router_scale", n * classes)
        e.op("ffn.router_softmax", n * SOFTMAX_OPS * classes)
        if self.correction_bias:
            e.term("ffn.correction_bias", "bias", (classes,), n, elementwise=n * classes)
        m = self.expert_width or d
        if self.expert_width is not None:  # MuseSparkMoE.pre_expert_proj and pre_expert_norm
            e.linear("ffn.pre_proj", d, m, False, n)
            e.norm("ffn.pre_norm", model.norm, m, n)
        self.expert.emit(
            e, "ffn.experts.", m, self.n_experts * n, self.routed_active * n, model.norm, expert=True, component="ffn.experts"
        )
        if self.identity_gate_up:  # held, never read: no token uses them
            e.term(
                "ffn.identity_gate_up",
                "weight",
                (2 * self.expert.d_ff, d),
                self.identity_experts * n,
                0,
                expert=True,
                component="ffn.experts",
            )
        if self.expert_width is not None:  # MuseSparkExperts.post_expert_norm: one weight, over each chosen expert's output
            e.norm("ffn.expert_norm", model.norm, m, n, total=self.routed_active * m)
        e.op("ffn.combine", n * 2 * self.top_k * m)  # scale each chosen expert's output, add it in
        if self.expert_width is not None:
            e.linear("ffn.post_proj", m, d, False, n)
        if self.shared is not None:
            copies = self.n_shared_experts * n
            self.shared.emit(e, "ffn.shared.", d, copies, copies, model.norm, component="ffn.shared")
            if self.shared_gate:  # Qwen2MoeSparseMoeBlock: sigmoid(shared_expert_gate(x)) scales the shared output
                e.linear("ffn.shared_gate", d, 1, False, n)
                e.op("ffn.shared_gate_scale", n * (ACTIVATION_OPS["sigmoid"] + d))  # one gate value, d products
            e.op("ffn.shared_add", copies * d)
            if self.shared_average:
                e.op("ffn.shared_average", n * d)  # one halving per feature
        if self.output_norm:
            e.norm("ffn.output_norm", model.norm, d, n)
        if self.output_bias:
            e.term("ffn.bias", "bias", (d,), n, elementwise=n * d, component="ffn.bias")

    def _mlp_router_terms(self, e, model) -> None:
        """ZayaRouter: down_proj, router_states_scale, router_mlp (norm, fc1, fc2, out_proj)."""
        d, n, r = model.d_model, e.n, self.router_mlp
        e.linear("ffn.router.down", d, r, True, n)
        if self.router_state:  # a parameter of the router module itself (transformers' mlp.gate)
            e.term("ffn.router.state_scale", "norm", (r,), n, elementwise=2 * n * r, component="ffn.router")
        e.norm("ffn.router.norm", model.norm, r, n)
        e.linear("ffn.router.fc1", r, r, True, n)
        e.linear("ffn.router.fc2", r, r, True, n)
        e.op("ffn.router.act", 2 * n * r * ACTIVATION_OPS["gelu"])
        e.linear("ffn.router.out", r, self.router_classes, False, n)

    def kept_elements(self, model) -> int:
        """What a training stack's mixture keeps a token (grouped-GEMM experts behind a permute and an unpermute:
        Megatron-LM's MoE layer with Transformer Engine's moe_permute and moe_unpermute):

        - its input (d: the router's and the shared experts' weight gradients read it);
        - the router's probabilities in fp32 (2 16-bit elements a class: softmax's output, its gradient's input;
          transformers' MixtralSparseMoeBlock takes softmax(..., dtype=torch.float));
        - the top-k's expert indices (int64: 4 elements a choice; top-k's and the weights' gather's gradients),
          the permutation that sorts the token-slots by expert (int64, 4 a choice: the dispatch's and the
          combine's) and the fp32 routing weights (2 a choice: the combine scales each output by its weight);
          with a skip class the 0/1 factor that zeroes a skip's weight (fp32, 2 a choice: ZayaRouter's masked_fill
          of the skip's probability), a skip slot computed by expert 0 at weight 0 as ZayaExperts runs it;
        - for each routed expert it computes: the expert's own elements (its input is the dispatched copy of the
          token, d) and its output (d: the routing weight's gradient is that output's dot product with the
          token's gradient);
        - each shared expert's elements but its input (the block's, counted once); a shared gate its sigmoid's
          output (1) and the shared output it scales (d);
        - an output norm its input (d) and its fp32 statistic a row (2 elements; a LayerNorm's mean too, 4);
        - an MLP router its down projection's output (the norm's input, r), its norm's fp32 statistic, its norm's
          output and fc1's and fc2's before and after their GELU (5·r); a router state one more r (the down
          projection's output, which the scale's product keeps, apart from the norm's input, their sum)."""
        d = model.d_model
        stat = 4 if model.norm.kind.startswith("layernorm") else 2  # fp32 inverse RMS (and mean) a row
        routing = 2 * self.router_classes + (4 + 4 + 2 + (2 if self.skip_expert else 0)) * self.top_k
        routed = self.routed_active * (self.expert.kept_elements(model) + d)
        shared = 0
        if self.shared is not None:
            shared = self.n_shared_experts * (self.shared.kept_elements(model) - d) + (1 + d if self.shared_gate else 0)
        norm = d + stat if self.output_norm else 0
        router = 0
        if self.router_mlp is not None:
            router = 6 * self.router_mlp + stat + (self.router_mlp if self.router_state else 0)
        if self.expert_width is not None:  # the narrow space: each expert's input is m wide, not d
            m = self.expert_width
            # pre_proj's output (the norm's input), its statistic and output; each routed expert its output before
            # its norm (m) and the norm's statistic (2), its own elements at m; the combined output (post_proj's input)
            routed = self.routed_active * (self.expert.kept_elements(model) - d + m + m + m + 2)
            return d + routing + routed + 3 * m + 2 + shared + norm + router
        return d + routing + routed + shared + norm + router

    def torch_module(self, model, causal: bool):
        return _module()(model, self, causal)

    def expert_parallel(self, module, rank: int, ep: int, exchange):
        """Its reference module as one of ``ep`` devices sharing the routed experts, each token-slot dispatched to its
        expert's device and combined back by all-to-alls (``exchange``); NotImplementedError where the mixture
        routes otherwise."""
        odd = self.identity_experts or self.skip_expert or self.hash_routed or self.router_state
        if odd or self.n_experts % ep:
            what = f"{self.n_experts} experts over ep {ep}: not evenly" if not odd else "identity, skip or hash routing"
            raise NotImplementedError(f"{what}: no expert-parallel form here")
        from ._moe_parallel import expert_parallel

        return expert_parallel()(module, rank, ep, exchange)

    def body(self) -> Block:
        return self.expert

    def with_body(self, body: Block) -> MoEFFN:
        return replace(self, expert=body)


@cache
def _module():
    import torch
    from torch import nn

    from ._torch import Linear, make_norm

    class RouterMLP(nn.Module):
        """down, (the previous layer's state scaled and added), norm, fc1, GELU, fc2, GELU, out. This module cannot
        see the previous layer's router state: its own down projection's output stands in (the same shape)."""

        def __init__(self, model, ffn: MoEFFN):
            super().__init__()
            r = ffn.router_mlp
            self.down = Linear(model.d_model, r, bias=True)
            if ffn.router_state:
                self.state_scale = nn.Parameter(torch.ones(r))
            self.norm = make_norm(model.norm, r)
            self.fc1 = Linear(r, r, bias=True)
            self.fc2 = Linear(r, r, bias=True)
            self.out = Linear(r, ffn.router_classes, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = self.down(x)
            if hasattr(self, "state_scale"):
                h = h + h * self.state_scale
            gelu = nn.functional.gelu
            return self.out(gelu(self.fc2(gelu(self.fc1(self.norm(h))))))

    class MoE(nn.Module):
        """A router, routed experts (top_k per token) and shared experts that see every token.

        ``balanced`` routing sends token-slot j (token j // top_k) to expert j mod n_experts: every expert
        gets tokens·top_k/n_experts rows (the remainder to the first experts). It needs no data, so it runs
        on meta tensors; real routing takes the router's top_k and needs values. A choice past the routed
        experts is an identity expert: its token's input, weighted, is added in.
        """

        def __init__(self, model, ffn: MoEFFN, causal: bool):
            super().__init__()
            d = model.d_model
            self.top_k, self.n_experts, self.choices = ffn.top_k, ffn.n_experts, ffn.choices
            self.router = Linear(d, ffn.router_classes, bias=ffn.router_bias) if ffn.router_mlp is None else RouterMLP(model, ffn)
            if ffn.expert_width is None:
                self.experts = nn.ModuleList(ffn.expert.torch_module(model, causal) for _ in range(ffn.n_experts))
            else:  # MuseSparkMoE: the experts in a narrower space between two projections, each followed by one norm
                from .dense_ffn import mlp_module

                m = ffn.expert_width
                self.pre_proj, self.pre_norm = Linear(d, m, bias=False), make_norm(model.norm, m)
                self.experts = nn.ModuleList(mlp_module()(m, ffn.expert, model.norm) for _ in range(ffn.n_experts))
                self.expert_norm, self.post_proj = make_norm(model.norm, m), Linear(m, d, bias=False)
            if ffn.identity_gate_up:  # held, never read
                self.identity_gate_up = nn.Parameter(torch.empty(ffn.identity_experts, 2 * ffn.expert.d_ff, d))
            self.shared = nn.ModuleList(ffn.shared.torch_module(model, causal) for _ in range(ffn.n_shared_experts))
            if ffn.shared_gate:
                self.shared_gate = Linear(d, 1, bias=False)
            if ffn.correction_bias:
                self.correction_bias = nn.Parameter(torch.zeros(ffn.router_classes))
            self.average = ffn.shared_average
            if ffn.output_norm:
                self.output_norm = make_norm(model.norm, d)
            if ffn.output_bias:
                self.bias = nn.Parameter(torch.zeros(d))
            self.balanced = False
            self.skip = ffn.skip_expert

        def route(self, probs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            """(tokens, top_k) expert indices and their weights."""
            tokens = probs.shape[0]
            if self.balanced:
                slots = torch.arange(tokens * self.top_k, device=probs.device).view(tokens, self.top_k)
                experts = slots % self.n_experts
                return experts, probs.gather(1, experts)
            if self.skip:  # ZayaRouter: balancing_biases (a buffer, −1 on the skip class) picks; a skip adds nothing
                with torch.no_grad():
                    bias = torch.zeros(probs.shape[-1], dtype=probs.dtype, device=probs.device)
                    bias[-1] = -1.0
                    experts = (probs.detach() + bias).topk(self.top_k, dim=-1).indices
                return experts, probs.gather(1, experts)
            if hasattr(self, "correction_bias"):  # the bias picks the experts; the weights stay the router's
                experts = (probs + self.correction_bias).topk(self.top_k, dim=-1).indices
                return experts, probs.gather(1, experts)
            weights, experts = probs.topk(self.top_k, dim=-1)
            return experts, weights

        def skipping(self, probs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            """ZayaRouter's choice with its skip class (the last): the top_k of the probabilities plus balancing_biases
            (a buffer: 0 a routed expert, −1 the skip), chosen without gradient; the weights gathered by those indices,
            a skip's 0, and a skip slot sent to expert 0 (router_indices.masked_fill(skip_expert, 0): ZayaExperts
            runs it there, weighted 0): the gathered weights times a 0/1 factor a choice (fp32, kept for their
            gradient)."""
            n = self.n_experts
            experts, weights = self.route(probs)
            routed = (experts != n).to(probs.dtype)
            return experts.masked_fill(experts == n, 0), weights * routed

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            from . import _fused

            shape = x.shape
            flat = x.reshape(-1, shape[-1])
            if hasattr(self, "pre_proj"):  # the router reads the layer's input; the experts the narrow space
                return self.narrow(flat).reshape(shape)
            if _fused.active() and self.choices == self.n_experts and not self.balanced:
                # as a training stack runs it: the router's softmax in fp32 (transformers' MixtralSparseMoeBlock,
                # softmax(..., dtype=torch.float)), the token-slots permuted to their experts and combined back
                probs = torch.softmax(self.router(flat), dim=-1, dtype=torch.float32)
                experts, weights = self.skipping(probs) if self.skip else self.route(probs)
                return self.finish(flat, _fused.routed(flat, experts, weights, self.experts)).reshape(shape)
            probs = self.router(flat).softmax(dim=-1)
            experts, weights = self.route(probs)
            out = torch.zeros_like(flat)
            token_of_slot = torch.arange(flat.shape[0], device=x.device).repeat_interleave(self.top_k)
            expert_of_slot, weight_of_slot = experts.reshape(-1), weights.reshape(-1)
            if self.balanced and x.is_meta:
                # no values, and the experts are alike: one expert's matmuls over every token-slot are the routed
                # experts' matmuls in all (each expert's over its share of the slots), the same FLOPs per component
                self.experts[0](flat.new_empty(expert_of_slot.shape[0], flat.shape[1]))
            for e, expert in enumerate(self.experts):
                if self.balanced and x.is_meta:
                    break
                if self.balanced:  # slot j goes to expert j mod n_experts: a fixed index, no data needed
                    if e >= expert_of_slot.shape[0]:
                        continue  # fewer token-slots than experts: this one gets none
                    slots = torch.arange(e, expert_of_slot.shape[0], self.n_experts, device=x.device)
                else:
                    slots = (expert_of_slot == e).nonzero().squeeze(-1)
                if slots.numel() == 0:
                    continue
                rows = token_of_slot[slots]
                out.index_add_(0, rows, expert(flat[rows]) * weight_of_slot[slots, None].to(flat.dtype))
            if not self.balanced:
                identity = (expert_of_slot >= self.n_experts) & (expert_of_slot < self.choices)  # a copy; skip: nothing
                slots = identity.nonzero().squeeze(-1)
                if slots.numel():
                    rows = token_of_slot[slots]
                    out.index_add_(0, rows, flat[rows] * weight_of_slot[slots, None].to(flat.dtype))
            return self.finish(flat, out).reshape(shape)

        def narrow(self, flat: torch.Tensor) -> torch.Tensor:
            """MuseSparkMoE: the router over the input; pre_proj and pre_norm; each chosen expert's output through
            expert_norm, weighted and summed; post_proj (balanced routing: token-slot j to expert j mod n_experts)."""
            experts, weights = self.route(self.router(flat).softmax(dim=-1))
            h = self.pre_norm(self.pre_proj(flat))
            out = torch.zeros_like(h)
            token_of_slot = torch.arange(flat.shape[0], device=flat.device).repeat_interleave(self.top_k)
            expert_of_slot, weight_of_slot = experts.reshape(-1), weights.reshape(-1)
            for e, expert in enumerate(self.experts):
                if self.balanced and h.is_meta:  # alike experts: the first over every token-slot, the same FLOPs
                    slots = torch.arange(expert_of_slot.shape[0], device=flat.device) if e == 0 else None
                elif self.balanced:
                    slots = torch.arange(e, expert_of_slot.shape[0], self.n_experts, device=flat.device)
                else:
                    slots = (expert_of_slot == e).nonzero().squeeze(-1)
                if slots is None or slots.numel() == 0:
                    continue
                rows = token_of_slot[slots]
                out.index_add_(0, rows, self.expert_norm(expert(h[rows])) * weight_of_slot[slots, None].to(h.dtype))
            return self.finish(flat, self.post_proj(out))

        def finish(self, flat: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
            """The routed experts' output ``out`` with the shared experts', the output norm and the bias."""
            if len(self.shared):
                shared = sum(expert(flat) for expert in self.shared)
                if hasattr(self, "shared_gate"):
                    shared = torch.sigmoid(self.shared_gate(flat)) * shared
                out = out + shared
                if self.average:
                    out = out / 2
            if hasattr(self, "output_norm"):
                out = self.output_norm(out)
            if hasattr(self, "bias"):
                out = out + self.bias
            return out

    return MoE

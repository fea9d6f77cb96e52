"""π0's action expert (Black et al. 2024, "π0: A Vision-Language-Action Flow Model for General Robot Control", §3), as
transformers' PI0ForConditionalGeneration builds and runs it (models/pi0/modeling_pi0.py): a second stack of Gemma
layers beside the PaliGemma language model (the model's own layers), whose tokens are a robot state and a chunk of noisy
actions, and which builds no LM head.

Parameters, at the dit_config's width h (PI0Model.dit, a GemmaModel built by AutoModel):

- ``action_expert.embed_tokens``: the GemmaModel's token table, vocab × h (PI0Config: dit vocab_size is the language
  model's), built and never run (the expert reads ``inputs_embeds``);
- num_hidden_layers Gemma decoder layers (``action_expert.attn.q``, ``k``, ``v``, ``o``; ``action_expert.ffn.gate``,
  ``up`` and ``down``, GeGLU; two RMSNorms, ``action_expert.norms``), and ``action_expert.norm``, its final RMSNorm (h);
- PI0ActionTimeEmbedding: ``state_proj`` (max_state_dim → h), ``action_in_proj`` (max_action_dim → h),
  ``action_time_mlp_in`` (2h → h) and ``action_time_mlp_out`` (h → h), each with a bias; the sinusoid's frequencies are a
  buffer;
- ``action_out_proj`` (h → max_action_dim, with a bias), in place of an LM head.

Work, once a forward (``Term.per_sequence``), over the chunk's T = chunk_size + 1 tokens (the state's, then chunk_size
actions'): the state's projection once, the action projections and time MLP on each action token, the expert's layers
on all T, whose attention meets the prefix's keys and values (PI0Model.forward: the PaliGemma forward's cache, every
expert layer reading the same layer's cache, then its own T; PI0Config: the widths of K and V agree) and its own: T
queries over s + T keys in each layer, as the kernel computes the masked square, in every view (the state's query may
meet s + 1 of them, each action's all), s the sequence's tokens (the prefix); its final norm on all T, and
action_out_proj on the chunk_size action tokens. Each term is charged per token of the sequence at (its tokens) / s;
``sample_actions`` runs the expert num_inference_steps times over one prefix, which a forward does once.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cache

from ..model.schema import NonNegative, Positive
from ..model.stacks import Stack
from ..model.terms import ACTIVATION_OPS
from . import Part, register

PREFIX = "action_expert."


@register
@dataclass(frozen=True)
class ActionExpert(Part):
    key = "action_expert"
    beside = True
    order = 46
    summary = "π0's action expert: Gemma layers over a state and a chunk of actions, attending to the prefix's cache"

    layers: Stack  # the dit_config's Gemma layers (their mask is bidirectional: the kernel computes the square)
    vocab: NonNegative = 0  # rows of its built, never-run token table
    actions: Positive = 32  # max_action_dim
    states: Positive = 32  # max_state_dim
    chunk: Positive = 50  # chunk_size: the action tokens a forward predicts

    def numels(self) -> dict[str, int]:
        """Each component's parameters beside the layers (hand-checkable)."""
        h = self.layers.d_model
        return {
            "embed_tokens": self.vocab * h,
            "norm": h,
            "state_proj": self.states * h + h,
            "action_in_proj": self.actions * h + h,
            "action_time_mlp_in": 2 * h * h + h,
            "action_time_mlp_out": h * h + h,
            "action_out_proj": h * self.actions + self.actions,
        }

    def forward_flops(self, model, prefix: int) -> int:
        """FLOPs of one forward through the expert and the projections after a prefix of ``prefix`` tokens: 2 per
        multiply-add of every matmul, the attention's over the prefix's keys and the chunk's (the terms' own)."""
        from ..model.terms import Emitter

        e = Emitter("final")
        self.sequence_terms(e, model, prefix)
        total = Fraction(0)
        for t in e.out:
            rows = t.positions * prefix
            if t.role == "core":  # every query meets every key: heads × keys × head_dim multiply-adds a query
                heads, keys, head_dim = t.shape
                total += 2 * rows * t.count * heads * keys * head_dim
            else:
                total += 2 * rows * t.macs
        return int(total)

    def note(self, spec) -> str:
        base, step = self.forward_flops(spec, 1), self.forward_flops(spec, 2) - self.forward_flops(spec, 1)
        t = self.chunk + 1
        return (
            f"action expert: a forward runs the state and {self.chunk} actions ({t} tokens) through its "
            f"{self.layers.n_layers} layers, their attention meeting the prefix's s keys and their own: "
            f"{base - step:,} + {step:,}·s forward FLOPs with the state, action and time projections and action_out_proj, "
            f"once a sequence; its token table is built and never run, and no logits are computed "
            f"(sample_actions runs the expert once a denoising step over one prefix)"
        )

    def head_positions(self, seq_len: int, scale: Fraction) -> Fraction:
        """PI0ForConditionalGeneration computes no logits: the (tied) head reads no row."""
        return Fraction(0)

    def sequence_terms(self, e, model, seq_len) -> None:
        h, c = self.layers.d_model, self.chunk
        t = c + 1  # the state's token and the chunk's

        def over(start: int, tokens: int) -> None:  # terms from ``start`` run over ``tokens`` rows once a forward
            e.out[start:] = [
                replace(x, positions=Fraction(tokens, seq_len) * x.positions, per_sequence=True, active_count=0) for x in e.out[start:]
            ]

        start = len(e.out)
        e.term(f"{PREFIX}embed_tokens.weight", "token", (self.vocab, h))  # built, never run
        over(start, 0)
        e.out[start] = replace(e.out[start], part="embedding")  # a token table: the model's embedding parameters
        start = len(e.out)
        e.linear(f"{PREFIX}state_proj", self.states, h, True, 1)
        over(start, 1)
        start = len(e.out)
        e.linear(f"{PREFIX}action_in_proj", self.actions, h, True, 1)
        e.linear(f"{PREFIX}action_time_mlp_in", 2 * h, h, True, 1)
        e.op(f"{PREFIX}action_time_mlp_act", h * ACTIVATION_OPS["silu"], copies=1)
        e.linear(f"{PREFIX}action_time_mlp_out", h, h, True, 1)
        over(start, c)
        start = len(e.out)
        # the layers over T queries, each meeting the prefix's s keys and the chunk's T
        e.out += self.layers.terms(model, PREFIX, seq_len + t, Fraction(1))
        e.norm(f"{PREFIX}norm", model.norm, h, 1)
        over(start, t)
        start = len(e.out)
        e.linear(f"{PREFIX}action_out_proj", h, self.actions, True, 1)
        over(start, c)

    def model_module(self, model):
        return _module()(self, model)


@cache
def _module():
    import torch
    from torch import nn
    from torch.nn import functional

    from ..blocks._torch import Linear, MatMul, make_norm

    class ExpertLayer(nn.Module):
        """A GemmaDecoderLayer whose attention reads the prefix's keys and values (zeros here) before its own."""

        def __init__(self, model, layer, biases: set[str]):
            super().__init__()
            self.norms = nn.ModuleList(make_norm(model.norm, model.d_model) for _ in range(2))
            self.attn, self.ffn = nn.Module(), nn.Module()
            for lin in (*layer.attention.linears(model), *layer.ffn.linears(model)):
                where, name = lin.component.split(".")
                linear = Linear(lin.d_in, lin.d_out, bias=f"{PREFIX}{lin.component}.bias" in biases)
                getattr(self, where).add_module(name, linear)
            self.attn.scores, self.attn.values = MatMul(), MatMul()
            self.heads, self.kv_heads = layer.attention.head_count(), layer.attention.kv_head_count()

        def forward(self, x: torch.Tensor, prefix: int) -> torch.Tensor:
            b, t, _ = x.shape
            h = self.norms[0](x)
            q = self.attn.q(h).view(b, t, self.heads, -1).transpose(1, 2)
            hd = q.shape[-1]
            past = torch.zeros((b, self.kv_heads, prefix, hd), dtype=x.dtype, device=x.device)
            k = torch.cat([past, self.attn.k(h).view(b, t, self.kv_heads, hd).transpose(1, 2)], 2)
            v = torch.cat([past, self.attn.v(h).view(b, t, self.kv_heads, hd).transpose(1, 2)], 2)
            k = k.repeat_interleave(self.heads // self.kv_heads, 1)
            v = v.repeat_interleave(self.heads // self.kv_heads, 1)
            probs = self.attn.scores(q, k.transpose(-2, -1) / hd**0.5).softmax(-1)
            x = x + self.attn.o(self.attn.values(probs, v).transpose(1, 2).reshape(b, t, -1))
            h = self.norms[1](x)
            return x + self.ffn.down(functional.gelu(self.ffn.gate(h), approximate="tanh") * self.ffn.up(h))

    class ExpertModule(nn.Module):
        """``enter`` runs the expert once over the state and the chunk (the sequence's tokens its prefix) and leaves
        the sequence as it is; the head reads none of its rows (``ctx["rows"]``)."""

        def __init__(self, spec: ActionExpert, model):
            super().__init__()
            inner, h = spec.layers.resolve(model), spec.layers.d_model
            biases = {t.name for t in spec.layers.terms(model, PREFIX, 1, 1)}
            self.embed_tokens = nn.Embedding(spec.vocab, h)  # built, never run
            self.state_proj = Linear(spec.states, h)
            self.action_in_proj = Linear(spec.actions, h)
            self.action_time_mlp_in = Linear(2 * h, h)
            self.action_time_mlp_out = Linear(h, h)
            self.layers = nn.ModuleList(ExpertLayer(inner, layer, biases) for layer in inner.layers)
            self.norm = make_norm(model.norm, h)
            self.action_out_proj = Linear(h, spec.actions)
            self.spec = spec

        def enter(self, x: torch.Tensor, ctx: dict) -> torch.Tensor:
            spec, b = self.spec, x.shape[0]
            state = self.state_proj(torch.zeros((b, 1, spec.states), dtype=x.dtype, device=x.device))
            actions = self.action_in_proj(torch.zeros((b, spec.chunk, spec.actions), dtype=x.dtype, device=x.device))
            timed = torch.cat([actions, torch.zeros_like(actions)], -1)  # the time's sinusoid beside each action
            actions = self.action_time_mlp_out(functional.silu(self.action_time_mlp_in(timed)))
            h = torch.cat([state, actions], 1)
            for layer in self.layers:
                h = layer(h, x.shape[1])
            self.action_out_proj(self.norm(h)[:, 1:])
            ctx["rows"] = 0  # no logits
            return x

    return ExpertModule

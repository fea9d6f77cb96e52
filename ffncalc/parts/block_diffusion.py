"""A block-diffusion decoder held beside the model's layers (DiffusionGemma, Google DeepMind 2026, as transformers 5.23's
DiffusionGemmaForBlockDiffusion builds it): the model's layers are its encoder's (DiffusionGemmaEncoderTextModel, over
the prompt, writing the KV cache) and its decoder (DiffusionGemmaDecoderModel) runs the same layers bidirectionally over
a canvas of ``canvas`` tokens, reading that cache. Its parameters are counted by component; a forward over the prompt's
tokens does not run it, and its work, once a denoising step of the canvas, is stated in the count's note and not
charged in the FLOPs.

DiffusionGemmaDecoderModel at a DiffusionGemmaTextConfig (hidden_size h, intermediate_size f, vocab_size V):

- ``self_conditioning`` (DiffusionGemmaSelfConditioning): pre_norm, an RMSNorm of h with its weight; gate_proj and
  up_proj, Linear(h, f), and down_proj, Linear(f, h), none with a bias; post_norm, an RMSNorm of h without a weight;
- ``embed_tokens`` (V × h), ``layers`` (the encoder's layers' shapes) and ``norm`` (h): DiffusionGemmaModel's
  _tied_weights_keys tie them to the encoder's language model's when the wrapper's tie_word_embeddings is true (its
  default; false "undoes all ties": a second copy, ``untied``), and lm_head to the decoder's embed_tokens (the model's
  head, tied by the same flag); their patterns name weights, scales and the experts' tensors, so the layers' biases
  (attention_bias) stay the decoder's own even when tied.

One denoising step over the canvas (DiffusionGemmaDecoderModel.forward, DiffusionGemmaForBlockDiffusion.forward): the
soft embeddings of the previous step's logits, softmax(logits) @ embed_tokens.weight (c × V by V × h: 2·c·V·h FLOPs),
self_conditioning's three matmuls over the c canvas tokens (2·c·3·h·f), then every layer, the final norm and lm_head
over the c tokens, each query meeting the canvas's c keys and the prompt's cached keys (within a sliding layer's
window): 2 FLOPs a multiply-add, as FlopCounterMode counts (the softmax and the norms are elementwise).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.schema import Positive
from . import register
from ._held import HeldPart


@register
@dataclass(frozen=True)
class BlockDiffusion(HeldPart):
    key = "block_diffusion"
    order = 48
    prefix = "decoder"  # its modules' name: its terms' (decoder.self_conditioning.mlp, …)
    summary = "a block-diffusion decoder over a canvas, the layers' second use with self-conditioning (DiffusionGemma)"

    width: Positive = 2304  # hidden_size
    intermediate: Positive = 9216  # intermediate_size: self_conditioning's gate_proj and up_proj
    vocab: Positive = 262_144  # vocab_size: the soft embeddings' table
    canvas: Positive = 256  # canvas_length: the tokens a denoising step refines
    untied: bool = False  # the wrapper's tie_word_embeddings false: the decoder's layers, norm and table its own

    def conditioning_numels(self) -> dict[str, int]:
        """self_conditioning's parameters (the module docstring's shapes)."""
        h, f = self.width, self.intermediate
        return {"decoder.self_conditioning.mlp": 3 * h * f, "decoder.self_conditioning.pre_norm": h}

    def conditioning_flops(self) -> int:
        """Forward FLOPs of one denoising step's soft embeddings and self-conditioning over the canvas (the module
        docstring): 2·c·(V·h + 3·h·f)."""
        return 2 * self.canvas * (self.vocab * self.width + 3 * self.width * self.intermediate)

    def step_flops(self, model) -> tuple[int, int, int]:
        """Forward FLOPs of one denoising step over the canvas with no prompt before it, and what each cached prompt key
        adds in the global layers and in the sliding ones (up to their window): the soft embeddings and
        self_conditioning (conditioning_flops), then each run of layers over the c canvas tokens, every query meeting
        the c canvas keys (its terms at c positions, the attention products' full square, model/stacks.py), the final
        norm and lm_head (V × h a token); a cached key adds QKᵀ and AV of every head (the core terms' share of one
        key). A canvas within the sliding window: each canvas query meets every canvas key."""
        from ..model.stacks import run_terms
        from ..model.terms import Emitter

        c, macs, globals_, sliding = self.canvas, model.vocab_size * model.d_model, 0, 0
        for run in model.runs():
            e = Emitter("layers", run.span)
            run_terms(e, model, run.layer, c)
            macs += sum(t.macs for t in e.out)
            for t in e.out:
                if t.role == "core":  # its macs a token over c keys: c shares of one key
                    if t.window:
                        sliding += t.macs // c
                    else:
                        globals_ += t.macs // c
        return 2 * c * macs + self.conditioning_flops(), 2 * c * globals_, 2 * c * sliding

    def note(self, spec) -> str:
        from dataclasses import replace

        from ..model.stack import resolve

        step, per_global, per_sliding = self.step_flops(resolve(replace(spec, parts=tuple(p for p in spec.parts if p is not self))))
        copy = (
            "its own copy of the layers, final norm and table"
            if self.untied
            else "the layers, final norm and table tied to the encoder's"
        )
        return (
            f"block diffusion: the count's forward is the encoder's over the prompt; the decoder ({copy}, with "
            f"self_conditioning) is not charged in the FLOPs: one denoising step of the {self.canvas:,}-token canvas is "
            f"{step:,} forward FLOPs with no prompt before it ({self.conditioning_flops():,} of them soft embeddings and "
            f"self-conditioning), {per_global:,} more for each cached prompt key in the global layers and {per_sliding:,} "
            f"in the sliding ones, up to their window"
        )

    def held_numels(self, model) -> dict[str, int]:
        return {**self.conditioning_numels(), **self.copy_numels(model)}

    def copy_numels(self, model) -> dict[str, int]:
        """The decoder's own layers, final norm and table where untied: the model's layers' parameters again (each run
        of layers' terms, model/stacks.py), an RMSNorm of h and the V × h table. Tied, the layers' biases alone
        (attention_bias): DiffusionGemmaModel's _tied_weights_keys name weights, scales and the experts' tensors, not
        biases, so transformers leaves the decoder's its own."""
        from ..model.stacks import run_terms
        from ..model.terms import Emitter

        layers = 0
        for run in model.runs():
            e = Emitter("layers", run.span)
            run_terms(e, model, run.layer, 1)
            layers += sum(t.numel * t.stored_count for t in e.out if self.untied or t.role == "bias")
        if not self.untied:
            return {"decoder.layers": layers} if layers else {}
        return {"decoder.layers": layers, "decoder.norm": model.d_model, "decoder.embed_tokens": self.vocab * model.d_model}

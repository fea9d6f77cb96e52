"""A projector: what turns a tower's output features into the language model's input tokens. Not a part of its own:
a tower (parts/vision.py) holds one. In the order they run, each where its model has it, with its source:

0. where ``qformer``, first a Querying Transformer of learned queries reading the tower's positions
   (parts/qformer.py: BLIP-2's), whose queries the linear then projects: the image's tokens;
1. an average pool of the patch grid towards ``pool_to`` tokens a side, by a kernel and stride of ⌊grid / pool_to⌋
   patches (Gemma3MultiModalProjector: 64 × 64 patches to 16 × 16 tokens), which has no multiply-adds;
2. where ``prenorm``, a norm over each patch's features first (Qwen2-VL's ln_q, Qwen3-VL's norm);
3. a pixel shuffle of ``shuffle`` × ``shuffle`` tokens into one of shuffle² times the features, a reshape (Idefics3's
   connector, Aya Vision's and Command A Vision's; Qwen2-VL's and Qwen3-VL's mergers, 2 × 2 patches);
4. a norm over each token's features (VipLLaVA's projector_layernorm over five layers' features concatenated; Gemma
   3's mm_soft_emb_norm, an RMSNorm; Mistral 3's norm, an RMSNorm, before its patch merger; Aya Vision's LayerNorm
   over the shuffled features; Gemma 4's embedding_pre_projection_norm, an RMSNorm without a weight, after its pool);
5. Gemma 4's pooler (Gemma4VisionPooler), where ``pool``: pool × pool neighbouring patches averaged into one token as
   one matmul, a one-hot weight of every token over every patch by the patches' features (_avg_pool_by_positions,
   which FlopCounterMode counts), then scaled by √width;
6. ``merge`` × ``merge`` neighbouring tokens into one: Pixtral's patch merger (Mistral3PatchMerger: their features
   unfolded side by side, Linear(width·merge², width) without a bias); GLM-4V's downsample, a Conv2d of kernel and
   stride merge with a bias to ``merge_out`` features (one Linear(width·merge², merge_out) a token); then, where
   ``lead``, GLM-4V's merger's proj (Linear(features, features), no bias), its norm (post_projection_norm, a LayerNorm)
   and a GELU before its MLP;
7. Llama 4's vision adapter (Llama4VisionPixelShuffleMLP's Llama4VisionMLP2), where ``adapter``: Linear(features,
   adapter) → GELU → Linear(adapter, adapter) → GELU, no biases, before the projector's own linear (then named
   linear_1, as Llama4MultiModalProjector names it); each of their widths as its configuration states it (transformers
   builds them so, and runs an image only where they meet: ``runs``);
8. an MLP: Linear(features, hidden) → activation → Linear(hidden, d_model), biases as stated (LLaVA's
   LlavaMultiModalProjector, Liu et al. 2023 §4.1); with ``gated`` its hidden features halved by a SwiGLU
   (silu(a) ⊙ b, Cohere2VisionMultiModalProjector, AyaVisionMultiModalProjector); or one Linear(features, d_model)
   (PaliGemma's; Gemma 3's bias-free mm_input_projection_weight; Idefics3's modality_projection); or, where not
   ``linear``, none: the tower writes the model's tokens itself (Fuyu's patch embedding at the model's width); then,
   where ``post_norm``, a norm over the tokens it writes (MossTranscribeDiarizeMultiModalProjector's LayerNorm);
9. where ``resampler``, a resampler of learned latents after the MLP, which reads every patch and writes the image's
   tokens (parts/resampler.py: Idefics2's perceiver); the MLP then runs over every patch;
10. where ``query``, in place of the stages above, Aria's learned queries reading the patches by one cross-attention and
   an MLP (parts/query_attention.py).

Each stage's work runs over the tokens it sees: ``terms`` says which, the grid's (after any pool) or the merged."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..model.schema import NonNegative, Positive
from ..model.spec import Norm
from ..model.terms import ACTIVATION_OPS, Activation, Emitter
from .qformer import QFormer
from .query_attention import QueryAttention
from .resampler import Resampler


@dataclass(frozen=True)
class Projector:
    width: Positive  # features it reads per token (the tower's width, × the layers whose outputs it concatenates)
    hidden: NonNegative = 0  # its MLP's hidden width (0: one linear straight to the model's width)
    bias: bool = True
    activation: Activation = "gelu"
    gated: bool = False  # the hidden features halved by a SwiGLU: silu(first half) ⊙ second half
    norm: Literal["none", "layernorm", "rmsnorm"] = "none"  # a norm over its input
    pool_to: NonNegative = 0  # tokens a side an average pool of the patch grid aims at before it (0: none)
    merge: NonNegative = 0  # Pixtral's patch merger of merge × merge tokens (0: none)
    shuffle: NonNegative = 0  # a pixel shuffle of shuffle × shuffle tokens into one (0: none)
    prenorm: bool = False  # its norm over each patch before the shuffle (else over what the shuffle makes)
    out: NonNegative = 0  # the width it writes (0: the model's; Qwen2-VL's merger states its own)
    merge_out: NonNegative = 0  # the features the patch merger writes (0: as many as a patch's; GLM-4V's out_hidden_size)
    merge_bias: bool = False  # a bias on the patch merger (GLM-4V's downsample convolution)
    lead: bool = False  # GLM-4V's proj, then the norm and a GELU, before the MLP
    linear: bool = True  # its linear to the model's width (false: none, the tower's output is the model's input)
    resampler: Resampler | None = None  # learned latents reading the MLP's output: the image's tokens (Idefics2)
    qformer: QFormer | None = None  # learned queries reading the tower's positions before the linear (BLIP-2)
    query: QueryAttention | None = None  # Aria's queries, cross-attention and MLP, the whole projector
    pool: NonNegative = 0  # Gemma 4's pooler: pool × pool patches a token, by a matmul over all of them (0: none)
    norm_affine: bool = True  # its norm's learned weight (Gemma 4's embedding_pre_projection_norm has none)
    # a norm over what it writes, where none is over its input (MOSS-Transcribe-Diarize's)
    post_norm: Literal["none", "layernorm", "rmsnorm"] = "none"
    adapter: NonNegative = 0  # Llama 4's vision adapter's width: two linears without biases, each then a GELU (0: none)
    adapter_in: NonNegative = 0  # the features its first linear reads (Llama 4's intermediate_size; 0: what it is handed)
    adapter_out: NonNegative = 0  # its second linear's width (projector_output_dim; 0: adapter)
    adapter_to: NonNegative = 0  # the features the linear after it reads (vision_output_dim; 0: the adapter's output)

    @property
    def group(self) -> int:
        """Patches a side of the tile one token of it takes (1: a token a patch)."""
        return max(self.merge, self.shuffle, self.pool, 1)

    def terms(self, d_model: int, prefix: str, patches: int = 0) -> list[tuple[str, object]]:
        """Its tensors and their work, each with the tokens it runs over: "grid" (a token of the patch grid, after
        any pool) or "projector" (a token it writes), named under ``prefix`` (its tower's: vision.projector.);
        ``patches``: an image's patches, which Gemma 4's pooler reads for each token."""
        d_model = self.out or d_model
        if self.query:  # Aria's: the whole projector
            return self.query.terms(self.width, d_model, prefix, patches)
        grid, out = Emitter("layers"), Emitter("layers")
        features = self.width * max(self.shuffle, 1) ** 2
        if self.pool:  # each token one row of the one-hot weights over every patch: patches × width multiply-adds
            out.term(f"{prefix}pool", "core", (1, patches, self.width), numel=0, macs=self.width, select="full")
        norm = Norm(kind=self.norm, affine=self.norm_affine) if self.norm != "none" else None
        if norm and not self.lead:
            width = self.width if self.prenorm else features
            (out if (self.shuffle or self.pool) and not self.prenorm else grid).norm(f"{prefix}norm", norm, width, 1)
        if self.merge:
            merged = self.merge_out or features
            out.linear(f"{prefix}patch_merger", features * self.merge**2, merged, self.merge_bias, 1)
            features = merged
        if self.lead:  # GLM-4V's Glm4vVisionPatchMerger: proj, post_projection_norm, GELU
            out.linear(f"{prefix}lead", features, features, False, 1)
            if norm:
                out.norm(f"{prefix}norm", norm, features, 1)
            out.op(f"{prefix}lead.act", features * ACTIVATION_OPS["gelu"], 1)
        if self.adapter:  # Llama4VisionMLP2: fc1, GELU, fc2, GELU
            a_in, a_out, to = self.adapter_widths(features)
            out.linear(f"{prefix}adapter.fc1", a_in, self.adapter, False, 1)
            out.op(f"{prefix}adapter.act", (self.adapter + a_out) * ACTIVATION_OPS["gelu"], 1)
            out.linear(f"{prefix}adapter.fc2", a_out, a_out, False, 1)
            features = to
        mlp = grid if self.resampler else out  # before a resampler, over every patch
        if self.hidden:
            mlp.linear(f"{prefix}linear_1", features, self.hidden, self.bias, 1)
            half = self.hidden // 2 if self.gated else self.hidden
            ops = half * (ACTIVATION_OPS["silu"] + 1) if self.gated else self.hidden * ACTIVATION_OPS[self.activation]
            mlp.op(f"{prefix}act", ops, 1)
            mlp.linear(f"{prefix}linear_2", half, d_model, self.bias, 1)
        elif self.linear or self.adapter:
            mlp.linear(f"{prefix}linear_1" if self.adapter else f"{prefix}linear", features, d_model, self.bias, 1)
        if self.post_norm != "none":  # MossTranscribeDiarizeMultiModalProjector's norm after linear_2
            mlp.norm(f"{prefix}norm", Norm(kind=self.post_norm), d_model, 1)
        resampled = self.resampler.terms(d_model, f"{prefix}resampler.", patches) if self.resampler else []
        queried = self.qformer.terms(f"{prefix}qformer.", patches) if self.qformer else []
        return queried + [("grid", t) for t in grid.out] + [("projector", t) for t in out.out] + resampled

    def adapter_widths(self, features: int) -> tuple[int, int, int]:
        """Llama 4's adapter: the features its fc1 reads, fc2's width, and what the linear after it reads."""
        a_out = self.adapter_out or self.adapter
        return self.adapter_in or features, a_out, self.adapter_to or a_out

    def runs(self) -> str:
        """Where its stated widths do not meet, the first that does not (an image cannot pass); else ""."""
        if not self.adapter:
            return ""
        features = self.width * max(self.shuffle, 1) ** 2
        a_in, a_out, to = self.adapter_widths(features)
        for field, width, handed in (("adapter_in", a_in, features), ("adapter_out", a_out, self.adapter), ("adapter_to", to, a_out)):
            if width != handed:
                return f"{field}: {width} features where {handed} are handed on (transformers builds it and runs no image)"
        return ""

    def grid_tokens(self, grid: int) -> int:
        """Tokens of a square grid of ``grid`` × ``grid`` patch features after any pool."""
        if not self.pool_to:
            return grid**2
        kernel = grid // self.pool_to  # nn.AvgPool2d(kernel, stride=kernel); 0: no image can run (vision.check)
        return (grid // kernel) ** 2 if kernel else 0

    def tokens(self, grid: int) -> int:
        """LM tokens from a square grid of ``grid`` × ``grid`` patch features."""
        return self.fixed or self.grid_tokens(grid) // self.group**2

    @property
    def fixed(self) -> int:
        """The tokens an image becomes whatever its size (a resampler's latents, a Q-Former's queries); 0: by size."""
        return self.resampler.latents if self.resampler else self.qformer.queries if self.qformer else 0

    def image_tokens(self, patches: int) -> int:
        """The tokens an image of ``patches`` patches becomes where its projector's queries depend on them (Aria's); else 0."""
        return self.query.queries(patches) if self.query else 0

    def module(self, d_model: int):
        """Its reference module (imports torch when called)."""
        d_model = self.out or d_model
        if self.query:  # Aria's: the whole projector
            return self.query.module(self.width, d_model)
        import torch
        from torch import nn

        from ..blocks._torch import ACTIVATIONS, Linear, MatMul, make_norm

        proj = self

        class ProjectorModule(nn.Module):
            def __init__(self):
                super().__init__()
                features = proj.width * max(proj.shuffle, 1) ** 2
                if proj.pool:
                    self.pool = MatMul()
                merged = (proj.merge_out or features) if proj.merge else features
                if proj.merge:
                    self.patch_merger = Linear(features * proj.merge**2, merged, bias=proj.merge_bias)
                if proj.norm != "none":
                    norm = Norm(kind=proj.norm, affine=proj.norm_affine)
                    self.norm = make_norm(norm, merged if proj.lead else proj.width if proj.prenorm else features)
                if proj.merge:
                    features = merged
                if proj.lead:
                    self.lead = Linear(features, features, bias=False)
                if proj.adapter:
                    a_in, a_out, to = proj.adapter_widths(features)
                    self.adapter = nn.Module()
                    self.adapter.fc1 = Linear(a_in, proj.adapter, bias=False)
                    self.adapter.fc2 = Linear(a_out, a_out, bias=False)
                    features = to
                if proj.hidden:
                    self.linear_1 = Linear(features, proj.hidden, bias=proj.bias)
                    self.linear_2 = Linear(proj.hidden // 2 if proj.gated else proj.hidden, d_model, bias=proj.bias)
                elif proj.adapter:
                    self.linear_1 = Linear(features, d_model, bias=proj.bias)
                elif proj.linear:
                    self.linear = Linear(features, d_model, bias=proj.bias)
                if proj.post_norm != "none":  # named as the norm its input has none of
                    self.norm = make_norm(Norm(kind=proj.post_norm), d_model)
                if proj.resampler:
                    self.resampler = proj.resampler.module(d_model)
                if proj.qformer:
                    self.qformer = proj.qformer.module()

            def forward(self, x):
                x = self.project(self.qformer(x) if proj.qformer else x)
                x = self.norm(x) if proj.post_norm != "none" else x
                return self.resampler(x) if proj.resampler else x

            def project(self, x):
                b, n, w = x.shape
                grid = int(round(n**0.5))
                if proj.pool_to:  # the patch grid, average-pooled by a kernel and stride of ⌊grid / pool_to⌋
                    k = grid // proj.pool_to
                    x = x.transpose(1, 2).reshape(b, w, grid, grid)
                    x = nn.functional.avg_pool2d(x, k, k).flatten(2).transpose(1, 2)
                if proj.norm != "none" and proj.prenorm:
                    x = self.norm(x)
                if proj.pool:  # one-hot weights of each token over every patch (their values change no count)
                    x = self.pool(x.new_zeros(b, x.shape[1] // proj.pool**2, x.shape[1]), x)
                if proj.shuffle:  # shuffle × shuffle neighbours side by side (their order changes no count)
                    x = x.reshape(b, x.shape[1] // proj.shuffle**2, w * proj.shuffle**2)
                if proj.norm != "none" and not proj.prenorm and not proj.lead:
                    x = self.norm(x)
                if proj.merge:
                    x = self.patch_merger(x.reshape(b, x.shape[1] // proj.merge**2, x.shape[2] * proj.merge**2))
                if proj.lead:
                    x = ACTIVATIONS["gelu"](self.norm(self.lead(x)) if proj.norm != "none" else self.lead(x))
                if proj.adapter:
                    gelu = ACTIVATIONS["gelu"]
                    x = gelu(self.adapter.fc2(gelu(self.adapter.fc1(x))))
                    if not proj.hidden:
                        return self.linear_1(x)
                if proj.hidden:
                    h = self.linear_1(x)
                    if proj.gated:
                        a, g = h.chunk(2, dim=-1)
                        h = nn.functional.silu(a) * g
                    else:
                        h = ACTIVATIONS[proj.activation](h)
                    return self.linear_2(h)
                return self.linear(x) if proj.linear else x

        del torch
        return ProjectorModule()

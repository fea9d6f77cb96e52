"""A projector: what turns a tower's output features into the language model's input tokens. Not a part of its own:
a tower (parts/vision.py) holds one. In the order they run, each where its model has it, with its source:

0. where ``qformer``, first a Querying Transformer of learned queries reading the tower's positions
   (parts/qformer.py: BLIP-2's; Granite 4 Vision's Window Q-Former, each window of patches read by queries of its own,
   after its norm, a LayerNorm over each patch), whose queries the linear then projects: the image's tokens;
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
7b. where ``downsample``, Step3p7's downsampler1 and downsampler2: Conv2d(width, 2 × width) and Conv2d(2 × width,
   4 × width), each of kernel 3, stride 2 and padding 1 with a bias, over the patch grid (52 × 52 patches to 26 × 26,
   then 13 × 13 tokens), each output a matmul of 3 × 3 inputs of its channels; GOT-OCR 2.0's conv_upsampler1 and
   conv_upsampler2 the same without biases, the second to ``downsample_out`` features (the model's width), then
   multimodal_projector, one Linear(d_model, d_model) with a bias;
8. an MLP: Linear(features, hidden) → activation → Linear(hidden, d_model), biases as stated (LLaVA's
   LlavaMultiModalProjector, Liu et al. 2023 §4.1); with ``gated`` its hidden features halved by a SwiGLU
   (silu(a) ⊙ b, Cohere2VisionMultiModalProjector, AyaVisionMultiModalProjector); or one Linear(features, d_model)
   (PaliGemma's; Gemma 3's bias-free mm_input_projection_weight; Idefics3's modality_projection); or, where not
   ``linear``, none: the tower writes the model's tokens itself (Fuyu's patch embedding at the model's width); where
   ``out_norm``, a LayerNorm over what it writes (GIT's visual_projection: Linear, then LayerNorm); where ``mid_norm``, a
   LayerNorm over the hidden features before the activation (Granite Docling's connector: projection, ln_mid, GELU,
   mlp_fc2, ln_out);
8b. where ``then``, the MLP runs first over every patch (to the model's width), then the shuffle groups its outputs and a
   second MLP, Linear(d_model · shuffle², then) → GELU → Linear(then, d_model), with biases, writes each token
   (MiniMaxM3VLMultiModalProjector: linear_1, linear_2, then merge_linear_1, merge_linear_2);
8c. where ``vocab``, in place of the MLP, Ovis 2's visual tokenizer: Linear(features, vocab − indicators) without a
   bias (head_linear), a LayerNorm over its logits (head_norm), a softmax, then the probabilities (the indicators'
   zero-padded) times a table of vocab rows of the model's width (visual_embeddings_table: one matmul);
8a. where ``tail``, one more Linear(out, the model's width) with a bias after it (HyperCLOVAX V2's projector after
   its Qwen2.5-VL merger writes out_hidden_size features);
   then, where ``post_norm``, a norm over the tokens it writes (MossTranscribeDiarizeMultiModalProjector's LayerNorm;
   MUSE Glimmer's perception_emb_norm, an RMSNorm without a weight, after its adapter and vision_projection);
9. where ``resampler``, a resampler of learned latents after the MLP, which reads every patch and writes the image's
   tokens (parts/resampler.py: Idefics2's perceiver); the MLP then runs over every patch;
10. where ``query``, in place of the stages above, Aria's learned queries reading the patches by one cross-attention and
   an MLP (parts/query_attention.py); where ``latent``, Kosmos-2's latent queries reading every position and
   themselves by one cross-attention (parts/latent_query.py); where ``conv_merger``, HunyuanOCR's convolutional patch
   merger with its newline column and begin and end rows (parts/conv_merger.py); where ``variable``, ERNIE 4.5-VL's
   variable-resolution resampler, its spatial and temporal MLPs, linear and RMSNorm (parts/variable_resampler.py).
   merger with its newline column and begin and end rows (parts/conv_merger.py); where ``window_pooling``, Molmo 2's
   adapter: attention pooling of each token's window of patches, then a SwiGLU (parts/window_pooling.py).

Each stage's work runs over the tokens it sees: ``terms`` says which, the grid's (after any pool) or the merged."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..model.schema import NonNegative, Positive
from ..model.spec import Norm
from ..model.terms import ACTIVATION_OPS, SOFTMAX_OPS, Activation, Emitter
from .conv_merger import ConvMerger
from .latent_query import LatentQuery
from .qformer import QFormer
from .query_attention import QueryAttention
from .resampler import Resampler
from .variable_resampler import VariableResampler
from .window_pooling import WindowPooling


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
    latent: LatentQuery | None = None  # Kosmos-2's latent queries and cross-attention, the whole projector
    conv_merger: ConvMerger | None = None  # HunyuanOCR's convolutional merger, newline column and end rows, the whole projector
    variable: VariableResampler | None = None  # ERNIE 4.5-VL's spatial and temporal MLPs, the whole projector
    window_pooling: WindowPooling | None = None  # Molmo 2's adapter: a token's window pooled, then a SwiGLU; the whole projector
    pool: NonNegative = 0  # Gemma 4's pooler: pool × pool patches a token, by a matmul over all of them (0: none)
    norm_affine: bool = True  # its norm's (or post_norm's) learned weight (Gemma 4's and MUSE Glimmer's have none)
    out_norm: bool = False  # a LayerNorm with a bias over the model-width tokens it writes (GIT's visual_projection)
    # a norm over what it writes, where none is over its input (MOSS-Transcribe-Diarize's)
    post_norm: Literal["none", "layernorm", "rmsnorm"] = "none"
    adapter: NonNegative = 0  # Llama 4's vision adapter's width: two linears without biases, each then a GELU (0: none)
    adapter_in: NonNegative = 0  # the features its first linear reads (Llama 4's intermediate_size; 0: what it is handed)
    adapter_out: NonNegative = 0  # its second linear's width (projector_output_dim; 0: adapter)
    adapter_to: NonNegative = 0  # the features the linear after it reads (vision_output_dim; 0: the adapter's output)
    downsample: bool = False  # Step3p7's two strided 3 × 3 convolutions, doubling the width each: 4 × 4 patches a token
    downsample_bias: bool = True  # their biases (GOT-OCR 2.0's have none)
    downsample_out: NonNegative = 0  # the second's output features (0: 4 × width; GOT-OCR 2.0's: the model's width)
    tail: bool = False  # a Linear(out, the model's width) with a bias after it (HyperCLOVAX V2's projector)
    vocab: NonNegative = 0  # Ovis 2's visual vocabulary: softmaxed logits over it read a table of its rows (0: none)
    indicators: NonNegative = 0  # its rows no patch's logits name (Ovis 2's visual indicator tokens), zeros in the matmul
    then: NonNegative = 0  # a second MLP's width, after the shuffle of the first's outputs (MiniMax M3 VL; 0: none)
    mid_norm: bool = False  # a LayerNorm with a bias over the MLP's hidden features before its activation (Granite Docling)
    # Gemma 3n's embedder, the whole projector: its table's rows (0: none; parts/gemma3n_audio.py, Gemma3nMultimodalEmbedder)
    embedder: NonNegative = 0

    @property
    def group(self) -> int:
        """Patches a side of the tile one token of it takes (1: a token a patch)."""
        if self.conv_merger:
            return self.conv_merger.merge
        if self.variable:
            return self.variable.merge
        if self.qformer and self.qformer.window:  # a window's patches: whole windows (their tokens: its queries)
            return self.qformer.window
        return max(self.merge, self.shuffle, self.pool, 4 if self.downsample else 1)

    def terms(self, d_model: int, prefix: str, patches: int = 0) -> list[tuple[str, object]]:
        """Its tensors and their work, each with the tokens it runs over: "grid" (a token of the patch grid, after
        any pool) or "projector" (a token it writes), named under ``prefix`` (its tower's: vision.projector.);
        ``patches``: an image's patches, which Gemma 4's pooler reads for each token."""
        model_width, d_model = d_model, self.out or d_model
        if self.query:  # Aria's: the whole projector
            return self.query.terms(self.width, d_model, prefix, patches)
        if self.latent:  # Kosmos-2's: the whole projector
            return self.latent.terms(self.width, d_model, prefix, patches)
        if self.conv_merger:  # HunyuanOCR's: the whole projector
            return self.conv_merger.terms(self.width, d_model, prefix, patches)
        if self.embedder:  # Gemma 3n's: its soft tokens through it, its hard path idle (no work)
            from .gemma3n_audio import embedder_terms

            return [
                ("projector" if w == "token" else "image", t) for w, t in embedder_terms(prefix, self.width, d_model, self.embedder)
            ]
        if self.variable:  # ERNIE 4.5-VL's: the whole projector
            return self.variable.terms(self.width, d_model, prefix)
        if self.window_pooling:  # Molmo 2's: the whole projector, writing its own width
            return self.window_pooling.terms(self.width, prefix)
        grid, out = Emitter("layers"), Emitter("layers")
        if self.then:  # MiniMax M3 VL's: an MLP a patch, then one over each shuffled group of its outputs
            return self.then_terms(d_model, prefix, grid, out)
        if self.vocab:  # Ovis 2's visual tokenizer and embedding table
            features, rows = self.width * max(self.shuffle, 1) ** 2, self.vocab - self.indicators
            out.linear(f"{prefix}head", features, rows, False, 1)
            out.norm(f"{prefix}head_norm", Norm(kind="layernorm"), rows, 1)
            out.op(f"{prefix}softmax", rows * (SOFTMAX_OPS - 1), 1)  # max, subtract, exp, sum, divide
            out.linear(f"{prefix}table", self.vocab, d_model, False, 1)
            return [("projector", t) for t in out.out]
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
        halved = Emitter("layers")  # its first convolution's outputs: a token of a grid halved each side
        if self.downsample:  # Conv2d(w, 2w, 3, stride 2, padding 1), then Conv2d(2w, 4w, …): 9 inputs each output
            w, w4 = self.width, self.downsample_out or 4 * self.width
            halved.term(f"{prefix}downsample_1.weight", "weight", (2 * w, w, 3, 3), macs=9 * w * 2 * w)
            out.term(f"{prefix}downsample_2.weight", "weight", (w4, 2 * w, 3, 3), macs=9 * 2 * w * w4)
            if self.downsample_bias:
                halved.term(f"{prefix}downsample_1.bias", "bias", (2 * w,), elementwise=2 * w)
                out.term(f"{prefix}downsample_2.bias", "bias", (w4,), elementwise=w4)
            features = w4
        mlp = grid if self.resampler else out  # before a resampler, over every patch
        if self.hidden:
            mlp.linear(f"{prefix}linear_1", features, self.hidden, self.bias, 1)
            if self.mid_norm:  # GraniteDoclingConnector's ln_mid, between the projection and the GELU
                mlp.norm(f"{prefix}mid_norm", Norm(kind="layernorm"), self.hidden, 1)
            half = self.hidden // 2 if self.gated else self.hidden
            ops = half * (ACTIVATION_OPS["silu"] + 1) if self.gated else self.hidden * ACTIVATION_OPS[self.activation]
            mlp.op(f"{prefix}act", ops, 1)
            mlp.linear(f"{prefix}linear_2", half, d_model, self.bias, 1)
        elif self.linear or self.adapter:
            mlp.linear(f"{prefix}linear_1" if self.adapter else f"{prefix}linear", features, d_model, self.bias, 1)
        if self.out_norm:
            mlp.norm(f"{prefix}out_norm", Norm(kind="layernorm"), d_model, 1)
        if self.tail:
            mlp.linear(f"{prefix}tail", d_model, model_width, True, 1)
        if self.post_norm != "none":  # MossTranscribeDiarizeMultiModalProjector's norm after linear_2
            # without a weight where not norm_affine (MUSE Glimmer's perception_emb_norm)
            post = Norm(kind=self.post_norm, affine=self.norm_affine, bias=None if self.norm_affine else False)
            mlp.norm(f"{prefix}norm", post, d_model, 1)
        resampled = self.resampler.terms(self.resampler.width or d_model, f"{prefix}resampler.", patches) if self.resampler else []
        queried = self.qformer.terms(f"{prefix}qformer.", patches) if self.qformer else []
        first = [("half", t) for t in halved.out]
        return queried + [("grid", t) for t in grid.out] + first + [("projector", t) for t in out.out] + resampled

    def then_terms(self, d_model: int, prefix: str, grid: Emitter, out: Emitter) -> list[tuple[str, object]]:
        """MiniMaxM3VLMultiModalProjector: linear_1 → GELU → linear_2 over every patch, then merge_linear_1 → GELU →
        merge_linear_2 over each shuffle² of their outputs side by side."""
        merged = d_model * max(self.shuffle, 1) ** 2
        for em, name, a, h in ((grid, "", self.width, self.hidden), (out, "merge_", merged, self.then)):
            em.linear(f"{prefix}{name}linear_1", a, h, self.bias, 1)
            em.op(f"{prefix}{name}act", h * ACTIVATION_OPS[self.activation], 1)
            em.linear(f"{prefix}{name}linear_2", h, d_model, self.bias, 1)
        return [("grid", t) for t in grid.out] + [("projector", t) for t in out.out]

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
        if self.conv_merger:  # its rows with their newline column, and the begin and end rows
            return self.conv_merger.tokens(grid)
        if self.qformer and self.qformer.window:  # every window's queries
            return self.qformer.tokens(grid)
        return self.fixed or self.grid_tokens(grid) // self.group**2

    @property
    def fixed(self) -> int:
        """The tokens an image becomes whatever its size (a resampler's latents, a Q-Former's queries); 0: by size."""
        if self.latent:
            return self.latent.latents
        if self.qformer and self.qformer.window:  # a window's queries each: by size
            return 0
        return self.resampler.latents if self.resampler else self.qformer.queries if self.qformer else 0

    def image_tokens(self, patches: int) -> int:
        """The tokens an image of ``patches`` patches becomes where its projector's queries depend on them (Aria's); else 0."""
        return self.query.queries(patches) if self.query else 0

    def module(self, d_model: int):
        """Its reference module (imports torch when called)."""
        model_width, d_model = d_model, self.out or d_model
        if self.query:  # Aria's: the whole projector
            return self.query.module(self.width, d_model)
        if self.latent:  # Kosmos-2's: the whole projector
            return self.latent.module(self.width, d_model)
        if self.conv_merger:  # HunyuanOCR's: the whole projector
            return self.conv_merger.module(self.width, d_model)
        if self.embedder:  # Gemma 3n's: the whole projector
            from .gemma3n_audio import embedder_module

            return embedder_module(self.width, d_model, self.embedder)
        if self.variable:  # ERNIE 4.5-VL's: the whole projector
            return self.variable.module(self.width, d_model)
        if self.window_pooling:  # Molmo 2's: the whole projector
            return self.window_pooling.module(self.width)
        import torch
        from torch import nn

        from ..blocks._torch import ACTIVATIONS, Linear, MatMul, make_norm

        proj = self

        class ProjectorModule(nn.Module):
            def __init__(self):
                super().__init__()
                features = proj.width * max(proj.shuffle, 1) ** 2
                if proj.vocab:  # Ovis 2's: head, head_norm, the table
                    self.head = Linear(features, proj.vocab - proj.indicators, bias=False)
                    self.head_norm = make_norm(Norm(kind="layernorm"), proj.vocab - proj.indicators)
                    self.table = Linear(proj.vocab, d_model, bias=False)
                if proj.then:  # an MLP a patch, then one over each shuffled group (MiniMax M3 VL's)
                    features = proj.width
                    merged = d_model * max(proj.shuffle, 1) ** 2
                    self.merge_linear_1 = Linear(merged, proj.then, bias=proj.bias)
                    self.merge_linear_2 = Linear(proj.then, d_model, bias=proj.bias)
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
                if proj.downsample:
                    w4 = proj.downsample_out or 4 * proj.width
                    for k, (a, b) in ((1, (proj.width, 2 * proj.width)), (2, (2 * proj.width, w4))):
                        conv = nn.Conv2d(a, b, 3, stride=2, padding=1, bias=proj.downsample_bias)
                        conv.weight_flops = True  # verify: its FLOPs are its weight's
                        setattr(self, f"downsample_{k}", conv)
                    features = w4
                if proj.hidden:
                    self.linear_1 = Linear(features, proj.hidden, bias=proj.bias)
                    self.linear_2 = Linear(proj.hidden // 2 if proj.gated else proj.hidden, d_model, bias=proj.bias)
                    if proj.mid_norm:
                        self.mid_norm = make_norm(Norm(kind="layernorm"), proj.hidden)
                elif proj.adapter:
                    self.linear_1 = Linear(features, d_model, bias=proj.bias)
                elif proj.linear and not proj.vocab:
                    self.linear = Linear(features, d_model, bias=proj.bias)
                if proj.out_norm:
                    self.out_norm = make_norm(Norm(kind="layernorm"), d_model)
                if proj.tail:
                    self.tail = Linear(d_model, model_width, bias=True)
                if proj.post_norm != "none":  # named as the norm its input has none of
                    post = Norm(kind=proj.post_norm, affine=proj.norm_affine, bias=None if proj.norm_affine else False)
                    self.norm = make_norm(post, d_model)
                if proj.resampler:
                    self.resampler = proj.resampler.module(proj.resampler.width or d_model)
                if proj.qformer:
                    self.qformer = proj.qformer.module()

            def forward(self, x):
                if proj.qformer and proj.norm != "none":  # its norm over each patch, before the Q-Former reads them
                    x = self.norm(x)
                x = self.project(self.qformer(x) if proj.qformer else x)
                x = self.out_norm(x) if proj.out_norm else x
                x = self.tail(x) if proj.tail else x
                x = self.norm(x) if proj.post_norm != "none" else x
                return self.resampler(x) if proj.resampler else x

            def project(self, x):
                b, n, w = x.shape
                if proj.vocab:
                    if proj.shuffle:
                        x = x.reshape(b, n // proj.shuffle**2, w * proj.shuffle**2)
                    probs = self.head_norm(self.head(x)).softmax(-1)
                    return self.table(nn.functional.pad(probs, (0, proj.indicators)))  # the indicators' zeros
                if proj.then:
                    act = ACTIVATIONS[proj.activation]
                    h = self.linear_2(act(self.linear_1(x)))
                    h = h.reshape(b, n // proj.shuffle**2, h.shape[-1] * proj.shuffle**2)
                    return self.merge_linear_2(act(self.merge_linear_1(h)))
                grid = int(round(n**0.5))
                if proj.pool_to:  # the patch grid, average-pooled by a kernel and stride of ⌊grid / pool_to⌋
                    k = grid // proj.pool_to
                    x = x.transpose(1, 2).reshape(b, w, grid, grid)
                    x = nn.functional.avg_pool2d(x, k, k).flatten(2).transpose(1, 2)
                if proj.norm != "none" and proj.prenorm and not proj.qformer:
                    x = self.norm(x)
                if proj.pool:  # one-hot weights of each token over every patch (their values change no count)
                    x = self.pool(x.new_zeros(b, x.shape[1] // proj.pool**2, x.shape[1]), x)
                if proj.shuffle:  # shuffle × shuffle neighbours side by side (their order changes no count)
                    x = x.reshape(b, x.shape[1] // proj.shuffle**2, w * proj.shuffle**2)
                if proj.norm != "none" and not proj.prenorm and not proj.lead and not proj.qformer:
                    x = self.norm(x)
                if proj.merge:
                    x = self.patch_merger(x.reshape(b, x.shape[1] // proj.merge**2, x.shape[2] * proj.merge**2))
                if proj.lead:
                    x = ACTIVATIONS["gelu"](self.norm(self.lead(x)) if proj.norm != "none" else self.lead(x))
                if proj.downsample:  # the patch grid through both convolutions, each output position a token
                    x = x.transpose(1, 2).reshape(b, w, grid, grid)
                    x = self.downsample_2(self.downsample_1(x)).flatten(2).transpose(1, 2)
                if proj.adapter:
                    gelu = ACTIVATIONS["gelu"]
                    x = gelu(self.adapter.fc2(gelu(self.adapter.fc1(x))))
                    if not proj.hidden:
                        return self.linear_1(x)
                if proj.hidden:
                    h = self.linear_1(x)
                    h = self.mid_norm(h) if proj.mid_norm else h
                    if proj.gated:
                        a, g = h.chunk(2, dim=-1)
                        h = nn.functional.silu(a) * g
                    else:
                        h = ACTIVATIONS[proj.activation](h)
                    return self.linear_2(h)
                return self.linear(x) if proj.linear else x

        del torch
        return ProjectorModule()

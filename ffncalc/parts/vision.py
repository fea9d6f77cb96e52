"""A vision tower and its projector (the spec's ``vision``): a Vision Transformer over an image's patches
(Dosovitskiy et al. 2021, §3.1), as CLIP's (Radford et al. 2021) and SigLIP's (Zhai et al. 2023) vision models build
it, whose output features a projector (parts/projector.py) turns into the language model's input tokens: LLaVA,
PaliGemma, Gemma 3.

- the patch embedding: a convolution of stride and kernel ``patch_size`` over ``channels`` channels, one matmul of
  channels·patch² → width per patch (with a bias in SigLIP, without in CLIP); CLIP's class token, a learned row
  before the patches; a learned position table, one row per position;
- CLIP's ``pre_norm`` (pre_layrnorm) over the positions; its layers (a ``Stack``, bidirectional: every patch meets
  every other), pre-norm, each with its own LayerNorms; ``post_norm`` (post_layernorm), built whether or not the
  projector reads after it;
- the projector over the tokens it writes.

FLOPs: ``images`` per sequence (default none: a count's per-token figures are the text's), each of ``image_size``²
pixels; the tower's work over its positions and the projector's over its tokens are charged per token of the
sequence (``Term.positions``). ``per_image`` is one image's."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

from ..model.schema import NonNegative, Positive, SpecError
from ..model.spec import Norm
from ..model.stacks import Stack
from ..model.terms import ACTIVATION_OPS, Emitter
from . import Part, register
from ._stem import PixelStem
from .conv_attention import ConvAttention
from .davit import DaVit
from .deep_encoder import DeepEncoder
from .emu3_vqvae import Emu3VqVae
from .fastvit import FastVit
from .generation import Generator
from .high_res import HighRes
from .mobilenet_v5 import MobileNetV5
from .projector import Projector
from .routed_vision import RoutedLayers
from .sam import SamEncoder
from .vqvae import VqVae
from .window_merger import WindowMerger


def image_term_flops(t, n: int) -> tuple[int, int]:
    """A tower term's forward FLOPs (2 per multiply-add, as FlopCounterMode counts) and elementwise FLOPs over ``n`` of
    its rows: a core product's queries each meet every key (heads × keys × head_dim multiply-adds a query)."""
    if t.role == "core":
        heads, keys, head_dim = t.shape
        return 2 * n * t.count * heads * keys * head_dim, n * t.elementwise
    return 2 * n * t.macs, n * t.elementwise


STEMS = ("fastvit", "davit", "mobilenet", "vqvae", "emu3_vqvae")  # its fields that hold a tower from the pixels up


@register
@dataclass(frozen=True)
class Vision(Part):
    key = "vision"
    beside = True
    order = 3
    summary = "a vision tower (ViT: CLIP, SigLIP) over an image's patches and the projector into the model's tokens (LLaVA, Gemma 3)"

    image_size: Positive  # pixels a side
    patch_size: Positive  # pixels a side of a patch (the convolution's kernel and stride)
    projector: Projector
    channels: Positive = 3
    # its layers (bidirectional whatever is stated), at the tower's width, with its own norm; none: no tower, each patch
    # embedded straight at the model's width (Fuyu)
    layers: Stack | None = None
    patch_bias: bool = True  # the patch convolution's bias (SigLIP: true; CLIP: false)
    class_token: bool = False  # CLIP's class embedding, a learned position before the patches
    registers: NonNegative = 0  # learned rows before the patches, one tensor (RADIO's cls_register_token)
    video_patch: NonNegative = 0  # features a video patch's projection reads: its weight, which no image runs (RADIO's)
    patch_norm: bool = False  # an RMSNorm over each patch's embedding before its position is added (Ovis 2's)
    class_position: bool = False  # the class token's own learned position, added to it (Inkling 2's cls_position_embedding)
    position_table: bool = True  # a learned table of one row per position
    pre_norm: bool = False  # CLIP's pre_layrnorm
    post_norm: bool = True  # post_layernorm
    read_class: bool = False  # whether the projector reads the class token's features too (LLaVA's "full")
    head: bool = False  # SigLIP's attention-pooling head (vision_use_head): one learned query over the positions
    row_breaks: bool = False  # a token of the text's own after each row of tokens (Fuyu's |NEWLINE|): no work, no weight
    newline: bool = False  # LLaVA-NeXT's image_newline: a learned row of the model's width after each row of tokens
    layer_scale: bool = False  # a learned scale of each sublayer's output, one a feature (InternViT's lambda_1, lambda_2)
    frames: Positive = 1  # frames a patch spans (Qwen2-VL's temporal_patch_size: an image repeated to fill them)
    position_rows: NonNegative = 0  # rows of a learned table interpolated to the positions (Qwen3-VL's; 0: one a position)
    deepstack: NonNegative = 0  # copies of the projector reading earlier layers (Qwen3-VL's deepstack mergers)
    # copies of the projector over the same layer's output, each writing the image's tokens, their sum the image's
    # (Granite 4 Vision's four spatial Window Q-Formers, one a corner of every 2 × 2 patches)
    projectors: Positive = 1
    # the deepstack mergers' own form where they are not the projector's copy (Granite Docling's: a LayerNorm over the
    # shuffled features, Linear → GELU → Linear with biases)
    deepstack_projector: Projector | None = None
    # a second connector path which an image takes only where asked (Granite Docling's fine route: a pixel shuffle of
    # half the factor, its projection, and its own deepstack mergers, ``deepstack`` of them): its parameters, no work
    fine: Projector | None = None
    fine_deepstack: Projector | None = None
    window: NonNegative = 0  # tokens a side of an attention window, in the projector's tokens (Qwen2.5-VL; 0: none)
    full_layers: NonNegative = 0  # with a window: the layers that attend the whole image; the rest attend windows
    # a second tower of the same form and weights of its own, which no image runs through (Video-LLaVA's video_tower:
    # a video's frames run there, an image through the first): its parameters, no work of an image's
    video_tower: bool = False
    # an image generator's parameters beside the tower (Janus's VQ-VAE, generation embeddings, aligner and head,
    # parts/generation.py), which no image it reads runs through: its parameters, no work of an image's
    generator: Generator | None = None
    # a merger of window × window patches into one after the tower's first layers (MiniCPM-V 4.6's vit_merger,
    # parts/window_merger.py): the layers after it run over the merged patches, and the projector reads them
    merger: WindowMerger | None = None
    # without layers: the patch embedding's width (0: the model's) and Gemma 4 Unified's three LayerNorms around it (over
    # each patch's pixels before it, over its output, and after the positions are added)
    embed_width: NonNegative = 0
    embed_norms: bool = False
    # its tokens take rows of the model's learned position table (false: GIT's, whose table numbers the text alone)
    table_positions: bool = True
    # a SAM ViT encoder in place of ``layers`` (parts/sam.py: windowed and global layers with decomposed relative
    # positions, a convolutional neck): GOT-OCR 2.0's, the projector reading its neck's channels
    sam: SamEncoder | None = None
    # a high-resolution SAM tower beside this one and the aligner joining both (parts/high_res.py: DeepSeek-VL's hybrid
    # encoder), in place of the projector's own stages
    high_res: HighRes | None = None
    # a second encoder over the SAM's features and the projector after it (parts/deep_encoder.py: Unlimited OCR's
    # strided convolutions, CLIP layers and linear; DeepSeek-OCR 2's Qwen2 layers and queries), in place of the
    # projector's own stages
    deep: DeepEncoder | None = None
    # layers of gated 2-D depthwise convolutions and of attention in place of ``layers`` (parts/conv_attention.py:
    # LFM3-VL's)
    mixed: ConvAttention | None = None
    # a FastViT from the pixels up in place of the patch embedding and ``layers`` (parts/fastvit.py: FastVLM's
    # FastViTHD through timm), patch_size its stride: the projector reads its final block's channels
    fastvit: FastVit | None = None
    # a DaViT from the pixels up in place of the patch embedding and ``layers`` (parts/davit.py: Florence-2's), patch_size
    # its stride, with Florence-2's position tables and mean token before the projector
    davit: DaVit | None = None
    # a MobileNetV5 from the pixels up in place of the patch embedding and ``layers`` (parts/mobilenet_v5.py: Gemma 3n's
    # through timm), patch_size its stride: the projector reads its fusion adapter's side² soft tokens whatever the size
    mobilenet: MobileNetV5 | None = None
    # a VQ-VAE's encoder path from the pixels up in place of the patch embedding and ``layers`` (parts/vqvae.py:
    # Chameleon's), patch_size its stride: each position's code a token of the model's own table (no projector's work)
    vqvae: VqVae | None = None
    # Emu3's VQ-VAE (parts/emu3_vqvae.py): an image repeated as a clip's frames through its 2-D encoder and temporal
    # layers, its decoder's parameters beside them
    emu3_vqvae: Emu3VqVae | None = None
    # Llama 3.2 Vision's tiles (MllamaVisionModel): an image runs as ``tiles`` tiles of image_size² pixels, each tile's
    # positions (its patches and class token) padded with zeros to a whole multiple of ``pad_to`` and every tile's run
    # through the layers together (their attention over all the tiles' positions); the padding dropped after
    tiles: Positive = 1
    pad_to: NonNegative = 0
    # its gated tile tables (0: none): rows of aspect-ratio ids (supported ratios and the padding id), pre- and
    # post-tile embeddings of tiles × width a row and a tile position table of tiles × positions × width a row beside
    # the position table, each with its tanh gate; and the tiles' attention mask, a (positions × 1) @ (1 × positions)
    # product once an image (_prepare_aspect_ratio_attention_mask)
    tile_tables: NonNegative = 0
    # the gated global transformer after post_norm (MllamaVisionEncoder, is_gated): its layers over every tile's
    # positions, each sublayer's output scaled by the tanh of a learned scalar (gate_attn, gate_ffn)
    global_layers: Stack | None = None
    # the projector's rows are the keys and values of the language model's cross-attention layers
    # (parts/cross_attention.py), not tokens of the sequence: each image is one token of its own there (<|image|>)
    cross_layers: bool = False
    # layers of dense MLPs and of routed experts growing in number, each of its own width, in place of ``layers``, and
    # the tower's final RMSNorm (parts/routed_vision.py: Dots3 Note's)
    routed: RoutedLayers | None = None
    images: NonNegative = 0  # images per sequence, for the FLOPs
    # its output is the memory a decoder's cross-attention reads (parts/encoder.py, image_patch), not tokens in the
    # sequence: an image encoder-decoder's (Pix2Struct), one image a sequence
    cross: bool = False
    # its tokens take the places of image tokens in an encoder's source (Florence-2's, before BART's encoder), not of the
    # decoder's sequence: --images does not place them there yet (refused)
    source: bool = False
    # ViTModel's pooler (ViTPooler): a dense d -> d with a bias and a tanh over the class token's output, once an image;
    # run by VisionEncoderDecoderModel's encoder, read by none of its decoder
    pooler: bool = False

    takes = ("images", "image_size")

    def given(self, **inputs) -> Vision:
        stated = {k: v for k, v in inputs.items() if k in self.takes and v is not None}
        return replace(self, **stated) if stated else self

    def request_tokens(self) -> int:
        return 0 if self.cross else self.images * (1 if self.cross_layers else self.tokens)

    def unplaced_tokens(self) -> int:
        return 0 if self.table_positions else self.request_tokens()

    def image_tokens(self) -> int:
        return 0 if self.cross_layers else self.request_tokens()

    def image_sizes(self, spec, limit: int):
        """Each size in whole patches up to ``limit`` pixels a side that the tower takes, with one image's tokens."""
        for side in range(self.patch_size, limit + 1, self.patch_size):
            one = replace(self, images=1, image_size=side)
            try:
                one.check(spec)
            except SpecError:
                continue
            yield side, one.request_tokens()

    def check(self, spec) -> None:
        if self.source and self.images:
            raise SpecError(("vision", "images"), "its images enter the encoder's source, which --images does not place yet")
        if self.cross and self.images != 1:  # its decoder cross-attends the positions of the one image it reads
            raise SpecError(("vision", "images"), f"{self.images} images: an image encoder-decoder reads one image a sequence")
        if self.sam and self.layers is not None:
            raise SpecError(("vision", "sam"), "a SAM encoder is the tower's layers; this one states layers too")
        if self.mixed and (self.layers is not None or self.sam):
            raise SpecError(("vision", "mixed"), "its layers are the tower's; this one states others too")
        if self.routed and (self.layers is not None or self.sam or self.mixed):
            raise SpecError(("vision", "routed"), "its layers are the tower's; this one states others too")
        stems = [k for k in STEMS if getattr(self, k) is not None]
        if len(stems) > 1:
            raise SpecError(("vision", stems[1]), f"one tower from the pixels: this one states {stems[0]} too")
        if stems:
            stem, key = self.stem, stems[0]
            assert stem is not None
            stem.check()
            if self.layers is not None or self.position_table or self.class_token or self.patch_size != stem.stride:
                raise SpecError(("vision", key), f"a whole tower: no layers, tables or class token, patch_size {stem.stride}")
            if stem.whole and self.image_size % self.patch_size:  # whole outputs: each stride-2 step halves an even side
                raise SpecError(("vision", "image_size"), f"{self.image_size} pixels: {stem.whole} are {self.patch_size} a side")
        if self.layers is None:
            stated = [k for k in ("pre_norm", "post_norm", "head", "layer_scale", "window", "deepstack") if getattr(self, k)]
            if stated:
                raise SpecError(("vision", stated[0]), "a tower's; this one states no layers")
        if self.patch_norm and self.embed_norms:
            raise SpecError(("vision", "patch_norm"), "one norm after the patch embedding: embed_norms states its own")
        if self.class_position and not self.class_token:
            raise SpecError(("vision", "class_position"), "the class token's position; this tower states no class_token")
        if self.full_layers > self.depth:
            raise SpecError(("vision", "full_layers"), f"more than the tower's {self.depth} layers")
        group = self.projector.group
        if self.merger and self.merger.after > self.depth:
            raise SpecError(("vision", "merger", "after"), f"more than the tower's {self.depth} layers")
        if self.images and self.grid % self.merged_side:  # the in-tower merger takes whole windows of patches
            raise SpecError(
                ("vision", "image_size"), f"{self.grid} patches a side are not whole {self.merged_side} × {self.merged_side} windows"
            )
        if self.images and self.out_grid % group:  # the convolution takes whole patches; the projector whole tiles of them
            raise SpecError(
                ("vision", "image_size"),
                f"{self.out_grid} patches a side are not whole {group} × {group} tiles of the projector's ({self.image_size} pixels)",
            )
        if self.images and self.projector.query and not self.projector.image_tokens(self.grid**2):
            named = ", ".join(f"{p:,}" for p, _ in self.projector.query.tokens)
            raise SpecError(("vision", "image_size"), f"{self.grid**2:,} patches: its projector names queries for {named} only")
        if self.images and self.projector.runs():
            raise SpecError(("vision", "projector"), self.projector.runs())
        if self.images and self.deep and self.deep.runs():
            raise SpecError(("vision", "deep"), self.deep.runs())
        if self.image_size < self.patch_size:
            raise SpecError(("vision", "image_size"), f"an image of {self.image_size} pixels holds no {self.patch_size}-pixel patch")
        if self.images and self.projector.pool_to > self.grid:  # transformers builds it, and cannot run an image
            raise SpecError(("vision", "projector", "pool_to"), f"pools to more tokens a side than the {self.grid} patches a side")

    @property
    def tokenizer(self) -> VqVae | Emu3VqVae | None:
        """Its VQ-VAE image tokenizer, Chameleon's or Emu3's, where it has one."""
        return self.vqvae or self.emu3_vqvae

    @property
    def stem(self) -> PixelStem | None:
        """Its tower from the pixels up, in place of the patch embedding and layers, where it has one (parts/_stem.py)."""
        return self.fastvit or self.davit or self.mobilenet or self.tokenizer

    @property
    def stack(self) -> Stack | None:
        if self.layers is None:
            return None
        return replace(self.layers, mask="bidirectional", positions="none", norm=self.layers.norm or Norm(kind="layernorm"))

    @property
    def global_stack(self) -> Stack | None:
        if self.global_layers is None:
            return None
        g = self.global_layers
        return replace(g, mask="bidirectional", positions="none", norm=g.norm or Norm(kind="layernorm"))

    @property
    def layer_rows(self) -> int:
        """Positions an image runs its layers over: each tile's rows, padded to whole ``pad_to``, every tile's."""
        rows = -(-self.rows // self.pad_to) * self.pad_to if self.pad_to else self.rows
        return self.tiles * rows

    @property
    def depth(self) -> int:
        """The tower's layers (0: none)."""
        return self.layers.n_layers if self.layers else 0

    def width(self, model) -> int:
        """The tower's width: its layers', or without them the model's."""
        if self.sam:
            return self.sam.width
        if self.mixed:
            return self.mixed.width
        if self.routed:
            return self.routed.width
        if self.stem:
            return self.stem.features
        return self.layers.d_model if self.layers else (self.embed_width or model.d_model)

    @property
    def grid(self) -> int:
        """Patches a side."""
        return self.image_size // self.patch_size

    @property
    def merged_side(self) -> int:
        """Patches a side merged into one by the in-tower merger an image runs through (1: none)."""
        return self.merger.window if self.merger and self.merger.runs else 1

    @property
    def out_grid(self) -> int:
        """Patches a side the tower writes (after any in-tower merger): the projector's grid."""
        return self.grid // self.merged_side

    @property
    def rows(self) -> int:
        """Positions the tower's layers run over: the patches and the class token."""
        return self.grid**2 + self.class_token + self.registers

    @property
    def half_tokens(self) -> int:
        """Outputs of a projector's first strided convolution (Step3p7's downsampler1): ⌈grid / 2⌉ a side."""
        return ((self.grid - 1) // 2 + 1) ** 2

    @property
    def tokens(self) -> int:
        """The language model's tokens one image becomes."""
        if self.projector.fixed:  # a resampler's latents, a Q-Former's queries
            return self.projector.fixed
        own = self.stem.own_tokens(self.image_size) if self.stem else None
        if own is not None:  # DaViT's mean and last stage, MobileNetV5's fusion adapter's whatever the size
            return own
        if self.deep:  # its rows with their newlines, and the view separator
            return self.deep.tokens(self.grid)
        if self.projector.query:  # Aria's: as many queries as its patches call for
            return self.projector.image_tokens(self.grid**2)
        breaks = self.grid // self.projector.group if self.row_breaks else 0
        own = self.projector.tokens(self.out_grid) + breaks + (self.read_class and self.class_token and not self.projector.pool_to)
        return self.tiles * own

    def input_terms(self, e, model, seq_len: int) -> None:
        out = self.image_terms(model)
        scale = {
            "patch": Fraction(self.images * self.tiles * self.grid**2, seq_len),
            "tower": Fraction(self.images * self.layer_rows, seq_len),
        }
        scale["image"] = Fraction(self.images, seq_len)
        scale["grid"] = Fraction(self.images * self.projector.grid_tokens(self.out_grid), seq_len)
        scale["half"] = Fraction(self.images * self.half_tokens, seq_len)
        scale["merged"] = Fraction(self.images * self.out_grid**2, seq_len)
        scale["projector"] = Fraction(self.images * self.tokens, seq_len)
        # an image's work, not a token's: no token of the sequence passes through the tower (no active parameters)
        e.out.extend(replace(t, positions=scale[where], per_sequence=True, active_count=0) for where, t in out)

    def image_terms(self, model) -> list[tuple[str, object]]:
        """Every term of the tower and the projector, each with what it runs over: a patch, a position of the
        tower, a token the projector writes (their per-token work; ``Term.positions`` 1)."""
        d, p, c = self.width(model), self.patch_size, self.channels
        if self.stem:  # from the pixels up, then the projector over the image's tokens
            return self.stem.terms(self.image_size) + self.projector.terms(model.d_model, "vision.projector.", self.tokens)
        stack = self.stack
        norm = stack.norm if stack else None
        emb = Emitter("layers")  # its weights, biases and norms are the tower's layers' kin; its tables embeddings
        if self.embed_norms:  # over each patch's pixels (channels × patch²), before its embedding
            emb.norm("vision.patch_norm", Norm(kind="layernorm"), c * p * p, 1)
        f = self.frames  # a matmul per patch: its pixels (frames × channels × patch²) in, the width out
        emb.term("vision.patch_embed.weight", "weight", (d, c, f, p, p) if f > 1 else (d, c, p, p), macs=d * c * f * p * p)
        if self.patch_bias:
            emb.term("vision.patch_embed.bias", "bias", (d,), elementwise=d)
        if self.embed_norms or self.patch_norm:  # a LayerNorm (Gemma 4 Unified's), an RMSNorm (Ovis 2's)
            emb.norm("vision.embed_norm", Norm(kind="rmsnorm" if self.patch_norm else "layernorm"), d, 1)
        out: list[tuple[str, object]] = [("patch", t) for t in emb.out]
        if self.tile_tables:
            out += self.tile_terms(d)
        emb = Emitter("embedding")
        if self.class_token:  # its row replaces a patch's output: no work
            emb.term("vision.class_embed", "position", (d,))
        if self.registers:  # their rows before the patches: no work
            emb.term("vision.registers", "position", (self.registers, d))
        if self.class_position:  # added to the class token's row once an image: no multiply-adds
            emb.term("vision.class_pos_embed", "position", (d,))
        if self.position_table:
            emb.term("vision.pos_embed.weight", "position", (self.position_rows or self.rows, d), elementwise=d)
        if self.embed_norms:  # after the positions are added
            emb.norm("vision.pos_norm", Norm(kind="layernorm"), d, 1)
        out += [("tower", t) for t in emb.out]
        emb = Emitter("layers")
        if self.pre_norm:
            emb.norm("vision.pre_norm", norm, d, 1)
        out += [("tower", t) for t in emb.out]
        layer = self.layer_terms_of(stack.terms(model, "vision.", self.layer_rows, 1)) if stack else []
        if self.sam:  # its layers and neck
            layer = self.sam.terms(self.grid)
        if self.mixed:
            layer = self.mixed.terms(self.grid**2)
        if self.routed:
            layer = self.routed.terms(self.grid**2)
        if self.merger:  # its own tensors and work, and the layers after it over the merged patches
            layer = self.merged_terms(layer) + self.merger.terms(d, self.grid)
        out += layer
        if self.layer_scale:  # two vectors a layer, each multiplying its sublayer's output
            scale = Emitter("layers")
            n = self.depth
            scale.term("vision.layer_scale", "bias", (d,), 2 * n, numel=d, elementwise=2 * n * d)
            out += [("tower", t) for t in scale.out]
        if self.post_norm:
            emb = Emitter("layers")
            emb.norm("vision.post_norm", norm, d, 1)
            out += [("tower", t) for t in emb.out]
        if self.global_layers is not None:
            out += self.global_terms(model, d)
        if self.head:
            out += self.pooling_terms(norm)
        if self.pooler:  # over the class token's row alone: once an image
            pool = Emitter("layers")
            pool.linear("vision.pooler.dense", d, d, True, 1)
            pool.op("vision.pooler.act", d * ACTIVATION_OPS["tanh"], copies=1)
            out += [("image", t) for t in pool.out]
        if self.video_tower:  # every tensor of the tower so far once more, under video_tower; no image runs it
            video = "vision.video_tower."
            out += [
                ("image", replace(t, name=video + t.name[7:], component=video + t.component[7:], macs=0, elementwise=0))
                for _, t in list(out)
                if t.numel  # its parameters; "vision." is 7 characters
            ]
        if self.generator:
            out += [("image", t) for t in self.generator.terms("vision.generation.")]
        if self.video_patch:  # a video's patches' projection: its weight, no image's work
            video = Emitter("layers")
            video.term("vision.video_patch_embed.weight", "weight", (d, self.video_patch))
            out += [("image", t) for t in video.out]
        read = self.tiles * (self.rows if self.read_class else self.out_grid**2)  # the positions the projector reads
        out += _times(self.projector.terms(model.d_model, "vision.projector.", read), self.projectors)
        if self.high_res:
            out += self.high_res.terms(d, self.grid)
        if self.deep:
            out += self.deep.terms(self.grid, model.d_model)
        if self.deepstack:  # the same projector on earlier layers' outputs, its norm over what the shuffle makes
            deep = self.deepstack_projector or replace(self.projector, prenorm=False)
            out += _times(deep.terms(model.d_model, "vision.deepstack.", read), self.deepstack)
        if self.fine:  # the fine route's projection and mergers: their parameters, no work of an image's
            idle = [(self.fine, "vision.fine.", 1), (self.fine_deepstack, "vision.fine_deepstack.", self.deepstack)]
            out += [
                ("image", replace(t, count=k * t.count, active_count=k * t.active_count, macs=0, elementwise=0))
                for proj, prefix, k in idle
                if proj is not None and k
                for _, t in proj.terms(model.d_model, prefix)
                if t.numel
            ]
        if self.newline:  # appended to the projector's rows: no work
            emb = Emitter("embedding")
            emb.term("vision.image_newline", "position", (model.d_model,))
            out += [("projector", t) for t in emb.out]
        return out

    def tile_terms(self, d: int) -> list[tuple[str, object]]:
        """Llama 3.2 Vision's gated tile tables (MllamaPrecomputedAspectRatioEmbedding, pre and post the layers: a row of
        tiles × width an aspect-ratio id; MllamaPrecomputedPositionEmbedding's tile_embedding: tiles × positions × width a
        row), their three tanh gates (the position table's among them: (1 − tanh) of it, tanh of the tile rows), each
        looked up and added (no multiply-adds); and the tiles' attention mask, a (positions × 1) @ (1 × positions)
        product once an image."""
        rows, tiles, table = self.tile_tables, self.tiles, Emitter("embedding")
        table.term("vision.pre_tile_embed.weight", "position", (rows, tiles * d))
        table.term("vision.tile_pos_embed.weight", "position", (rows, tiles * self.rows * d))
        table.term("vision.post_tile_embed.weight", "position", (rows, tiles * d))
        table.term("vision.tile_gates", "position", (3,))
        mask = Emitter("layers")
        n = self.layer_rows
        mask.term("vision.tile_mask", "core", (1, n, 1), numel=0, macs=n, select="full")
        return [("image", t) for t in table.out] + [("tower", t) for t in mask.out]

    def global_terms(self, model, d: int) -> list[tuple[str, object]]:
        """The gated global transformer's layers over every tile's positions, and its gates (two scalars a layer)."""
        stack = self.global_stack
        assert stack is not None
        out = [("tower", t) for t in stack.terms(model, "vision.global.", self.layer_rows, 1)]
        gates = Emitter("layers")
        n = stack.n_layers
        gates.term("vision.global.gates", "bias", (2,), n, numel=2, elementwise=2 * n * d)
        return out + [("tower", t) for t in gates.out]

    def layer_terms_of(self, terms) -> list[tuple[str, object]]:
        """The tower's layers' terms, each over the tower's positions; with windows, each attention product twice:
        in the layers attending the whole image, and once an image over its windows' query-key pairs."""
        if not self.window:
            return [("tower", t) for t in terms]
        windowed = self.depth - self.full_layers
        out: list[tuple[str, object]] = []
        for t in terms:
            if t.role != "core":
                out.append(("tower", t))
                continue
            heads, _, head_dim = t.shape
            if self.full_layers:
                out.append(("tower", replace(t, count=self.full_layers)))
            if windowed:
                out.append(("image", replace(t, count=windowed, shape=(heads, self.window_pairs(), head_dim), select="pairs")))
        return out

    def merged_terms(self, out: list[tuple[str, object]]) -> list[tuple[str, object]]:
        """The tower's layer terms split at its in-tower merger: the first ``after`` layers over every patch (holding
        every layer's parameters), the rest over the merged patches (their attention's keys too)."""
        assert self.merger is not None
        if not self.merger.runs:
            return out
        depth, first, w2 = self.depth, self.merger.after, self.merger.window**2
        split: list[tuple[str, object]] = []
        for where, t in out:
            if where != "tower":
                split.append((where, t))
                continue
            a = t.count * first // depth  # its instances in the first layers (a layer's norms are two)
            if t.role == "core":
                heads, keys, head_dim = t.shape
                split.append(("tower", replace(t, count=a)))
                split.append(("merged", replace(t, count=t.count - a, shape=(heads, keys // w2, head_dim))))
                continue
            share = {k: getattr(t, k) * first // depth for k in ("macs", "elementwise", "scores")}
            split.append(("tower", replace(t, count=a, stored=t.stored_count, **share)))
            rest = {k: getattr(t, k) - share[k] for k in ("macs", "elementwise", "scores")}
            rest["scores"] //= w2  # a quarter of the keys
            split.append(("merged", replace(t, count=t.count - a, stored=0, **rest)))
        return split

    def window_tiles(self) -> list[int]:
        """Patches of each attention window, row by row: the projector's tokens tiled by ``window`` a side (the last
        tile of a row or column what remains), each token ``group``² patches (Qwen2.5-VL's get_window_index)."""
        group = self.projector.group
        side = self.grid // group
        spans = [min(self.window, side - i) for i in range(0, side, self.window)]
        return [group * group * h * w for h in spans for w in spans]

    def window_pairs(self) -> int:
        """Query-key pairs of one image's windows: every patch meets every patch of its own window."""
        return sum(n * n for n in self.window_tiles())

    def pooling_terms(self, norm) -> list[tuple[str, object]]:
        assert self.layers is not None  # a head is a tower's (check)
        """SigLIP's SiglipMultiheadAttentionPoolingHead: a learned probe (one query) attends over every position
        (nn.MultiheadAttention: its in_proj's 3·width rows are the query's, the keys' and the values' projections,
        named here as three; keys and values over the positions, the query once), out_proj, a LayerNorm and the
        tower's MLP on the one pooled row, added to it."""
        d = self.layers.d_model
        heads = self.layers.attention.resolve(d).head_count()
        ffn = self.layers.ffn.resolve(d)
        probe, once, over = Emitter("embedding"), Emitter("layers"), Emitter("layers")
        probe.term("vision.head.probe", "position", (d,))
        once.linear("vision.head.attn.q", d, d, True, 1)  # the probe's query: nn.MultiheadAttention's in_proj, q rows
        for part in ("k", "v"):  # keys and values of every position (its k and v rows)
            over.linear(f"vision.head.attn.{part}", d, d, True, 1)
        for part in ("scores", "values"):  # one query over every position: rows × width multiply-adds per image
            once.term(f"vision.head.attn.{part}", "core", (heads, self.rows, d // heads), numel=0, macs=d, select="full")
        once.linear("vision.head.attn.o", d, d, True, 1)
        once.norm("vision.head.norm", norm, d, 1)
        ffn.emit(once, "vision.head.mlp.", d, 1, 1)
        return [("image", t) for t in probe.out] + [("tower", t) for t in over.out] + [("image", t) for t in once.out]

    def per_image(self, model) -> tuple[int, int, int]:
        """One image's LM tokens, its forward FLOPs through the tower and the projector (2 per multiply-add of every
        matmul and of the attention's square, as FlopCounterMode counts), and its elementwise FLOPs."""
        counts = {"patch": self.tiles * self.grid**2, "tower": self.layer_rows, "image": 1, "projector": self.tokens}
        counts["merged"] = self.out_grid**2
        counts["grid"] = self.projector.grid_tokens(self.out_grid)
        counts["half"] = self.half_tokens
        flops = elementwise = 0
        for where, t in self.image_terms(model):
            f, el = image_term_flops(t, counts[where])
            flops, elementwise = flops + f, elementwise + el
        return self.tokens, flops, elementwise

    def note(self, spec) -> str:
        tokens, flops, _ = self.per_image(spec)
        s = self.image_size
        if self.cross:
            rows = tokens if self.projector.downsample else self.rows  # PP-FormulaNet's: its projector's tokens
            return (
                f"vision tower: one {s}×{s}-pixel image is {rows:,} positions the decoder cross-attends and {flops:,} "
                "forward FLOPs through the encoder, once a sequence"
            )
        if self.source:  # Florence-2's: the encoder's source, not the decoder's sequence
            return (
                f"vision tower: one {s}×{s}-pixel image is {tokens:,} tokens of the encoder's source (--source-len counts "
                f"them with the text's) and {flops:,} forward FLOPs through the tower and the projector"
            )
        where = (
            f"{self.images} a sequence, in the FLOPs per token"
            if self.images
            else "none in the FLOPs per token (a spec states them: vision.images)"
        )
        if self.cross_layers:  # its rows are the cross-attention layers' keys and values, one token in the sequence
            return (
                f"vision tower: one image of {self.tiles} {s}×{s}-pixel tiles is {tokens:,} rows the cross-attention layers "
                f"read (one token of the sequence) and {flops:,} forward FLOPs through the tower and the projector; "
                f"images: {where}"
            )
        return (
            f"vision tower: one {s}×{s}-pixel image is {tokens:,} tokens of the language model and {flops:,} forward FLOPs "
            f"through the tower and the projector; images: {where}"
        )

    def model_module(self, model):
        return _module(self, model)


def _times(terms: list[tuple[str, object]], k: int) -> list[tuple[str, object]]:
    """``terms`` of one projector as ``k`` copies of it: their tensors and work k times."""
    if k == 1:
        return terms
    return [
        (w, replace(t, count=k * t.count, active_count=k * t.active_count, macs=k * t.macs, elementwise=k * t.elementwise))
        for w, t in terms
    ]


def _module(spec: Vision, model):
    """The tower and its projector: ``enter`` runs ``images`` blank images a sequence through them (their output,
    which the language model's tokens would carry, is not placed: the FLOPs are what is proven); the language
    model's input passes through unchanged."""
    import torch
    from torch import nn

    from ..blocks._torch import Linear, MatMul, make_norm
    from ..model.reference import LayerModule

    d = spec.width(model)
    stack = spec.stack
    norm = stack.norm if stack else None
    inner = replace(stack.resolve(model), mask="bidirectional") if stack else None

    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.probe = nn.Parameter(torch.empty(d))
            self.attn = nn.Module()
            for part in "qkvo":
                setattr(self.attn, part, Linear(d, d, bias=True))
            self.attn.scores, self.attn.values = MatMul(), MatMul()
            self.norm = make_norm(norm, d)
            assert spec.layers is not None
            self.mlp = spec.layers.ffn.resolve(d).torch_module(inner, False)
            self.heads = spec.layers.attention.resolve(d).head_count()

        def forward(self, x):
            b, n, h = x.shape[0], x.shape[1], self.heads
            q = self.attn.q(self.probe.expand(b, 1, d)).view(b, 1, h, d // h).transpose(1, 2)
            k = self.attn.k(x).view(b, n, h, d // h).transpose(1, 2)
            v = self.attn.v(x).view(b, n, h, d // h).transpose(1, 2)
            probs = self.attn.scores(q, k.transpose(-2, -1)).softmax(-1)
            out = self.attn.o(self.attn.values(probs, v).transpose(1, 2).reshape(b, 1, d))
            return out + self.mlp(self.norm(out))

    class VisionModule(nn.Module):
        def __init__(self):
            super().__init__()
            if spec.stem:  # its own modules from the pixels up, then the projector
                self.projector = spec.projector.module(model.d_model)
                spec.stem.attach(self, self.projector)
                return
            p, f = spec.patch_size, spec.frames
            if f > 1:  # frames × patch × patch pixels of each channel a patch
                self.patch_embed = nn.Conv3d(spec.channels, d, (f, p, p), stride=(f, p, p), bias=spec.patch_bias)
            else:
                self.patch_embed = nn.Conv2d(spec.channels, d, p, stride=p, bias=spec.patch_bias)
            self.patch_embed.weight_flops = True  # verify: its FLOPs are its weight's
            if spec.embed_norms:
                layernorm = Norm(kind="layernorm")
                self.patch_norm = make_norm(layernorm, spec.channels * p * p)
                self.embed_norm, self.pos_norm = make_norm(layernorm, d), make_norm(layernorm, d)
            if spec.patch_norm:
                self.embed_norm = make_norm(Norm(kind="rmsnorm"), d)
            if spec.registers:
                self.registers = nn.Parameter(torch.empty(spec.registers, d))
            if spec.video_patch:  # its weight, which an image does not run
                self.video_patch_embed = Linear(spec.video_patch, d, bias=False)
            if spec.class_token:
                self.class_embed = nn.Parameter(torch.empty(d))
            if spec.class_position:
                self.class_pos_embed = nn.Parameter(torch.empty(d))
            if spec.position_table:
                self.pos_embed = nn.Embedding(spec.position_rows or spec.rows, d)
            if spec.pre_norm:
                self.pre_norm = make_norm(norm, d)
            if spec.tile_tables:  # looked up and added: no multiply-adds
                rows, tiles = spec.tile_tables, spec.tiles
                self.pre_tile_embed = nn.Embedding(rows, tiles * d)
                self.tile_pos_embed = nn.Embedding(rows, tiles * spec.rows * d)
                self.post_tile_embed = nn.Embedding(rows, tiles * d)
                self.tile_gates = nn.Parameter(torch.empty(3))
                self.tile_mask = MatMul()
            if spec.global_layers is not None:
                g = spec.global_stack
                assert g is not None
                ginner = replace(g.resolve(model), mask="bidirectional")
                glob = nn.Module()  # named as the terms: vision.global.*
                glob.layers = nn.ModuleList(LayerModule(ginner, layer, False) for layer in ginner.layers)
                glob.gates = nn.Parameter(torch.empty(g.n_layers, 2))
                self.add_module("global", glob)
            self.layers = nn.ModuleList(LayerModule(inner, layer, False) for layer in inner.layers) if inner else nn.ModuleList()
            if spec.sam:
                self.layers, self.neck = spec.sam.modules()
            if spec.mixed:
                self.layers = spec.mixed.modules()
            if spec.routed:
                self.layers, self.final_norm = spec.routed.modules()
            if spec.layer_scale:  # elementwise scales: parameters, no multiply-adds to count
                self.layer_scale = nn.ParameterList(nn.Parameter(torch.empty(d)) for _ in range(2 * spec.depth))
            if spec.post_norm:
                self.post_norm = make_norm(norm, d)
            if spec.head:
                self.head = Head()
            if spec.pooler:
                self.pooler = nn.ModuleDict({"dense": Linear(d, d, bias=True)})
            if spec.video_tower:  # its tensors, which an image does not run
                self.video_tower = _module(replace(spec, video_tower=False, images=0), model)
                for name in ("projector", "deepstack", "image_newline", "generation", "merger"):
                    if hasattr(self.video_tower, name):
                        delattr(self.video_tower, name)
            self.projector = spec.projector.module(model.d_model)
            if spec.projectors > 1:  # every copy over the same output (its first's rows stand for the image's tokens)

                class Copies(nn.ModuleList):
                    def forward(self, x):
                        return [copy(x) for copy in self][0]

                self.projector = Copies(spec.projector.module(model.d_model) for _ in range(spec.projectors))
            if spec.high_res:  # the SAM tower, and the aligner in the projector
                self.high_res = spec.high_res.module()
                for name, module in spec.high_res.aligner(d).items():
                    setattr(self.projector, name, module)
            if spec.deep:  # its convolutions and encoder, and its linear and separator in the projector
                tower, projector = spec.deep.modules(model.d_model)
                for name, module in tower.items():
                    self.add_module(name, module)
                for name, module in projector.items():
                    setattr(self.projector, name, module)
            if spec.generator:  # its parameters, which an image does not run
                self.generation = spec.generator.module()
            if spec.merger:
                self.merger = spec.merger.module(d)
            if spec.deepstack:
                deep = spec.deepstack_projector or replace(spec.projector, prenorm=False)
                self.deepstack = nn.ModuleList(deep.module(model.d_model) for _ in range(spec.deepstack))
            if spec.fine:  # its parameters, which an image does not run
                self.fine = spec.fine.module(model.d_model)
                if spec.fine_deepstack and spec.deepstack:
                    fine_deep = spec.fine_deepstack
                    self.fine_deepstack = nn.ModuleList(fine_deep.module(model.d_model) for _ in range(spec.deepstack))
            if spec.newline:
                self.image_newline = nn.Parameter(torch.empty(model.d_model))

        def enter(self, x, ctx):
            if not spec.images:
                return x
            n, s = x.shape[0] * spec.images * spec.tiles, spec.image_size
            shape = (n, spec.channels, spec.frames, s, s) if spec.frames > 1 else (n, spec.channels, s, s)
            pixels = torch.zeros(shape, dtype=x.dtype, device=x.device)
            if spec.stem:
                spec.stem.apply(self, pixels)
                return x
            if spec.embed_norms:  # each patch's pixels normalised first (their layout does not change the work)
                g, c, p = spec.grid, spec.channels, spec.patch_size
                pixels = self.patch_norm(pixels.reshape(n, g * g, c * p * p)).reshape(shape)
            h = self.patch_embed(pixels).flatten(2).transpose(1, 2)
            if spec.embed_norms or spec.patch_norm:
                h = self.embed_norm(h)
            if spec.class_token:
                cls = self.class_embed + self.class_pos_embed if spec.class_position else self.class_embed
                h = torch.cat([cls.expand(n, 1, d), h], dim=1)
            if spec.registers:
                h = torch.cat([self.registers.expand(n, spec.registers, d), h], dim=1)
            if spec.position_table:  # an interpolated table: its rows mixed to the positions, no multiply-adds to count
                h = h + (self.pos_embed.weight.mean(0) if spec.position_rows else self.pos_embed.weight)
            if spec.embed_norms:
                h = self.pos_norm(h)
            if spec.pre_norm:
                h = self.pre_norm(h)
            if spec.sam:  # its layers and neck, then the projector (or the second encoder) over the neck's channels
                feats = spec.sam.run(self.layers, self.neck, h)
                spec.deep.run(self, feats) if spec.deep else self.projector(feats)
                return x
            if spec.mixed:  # its convolution and attention layers
                for layer in self.layers:
                    h = layer(h)
            if spec.tiles > 1 or spec.pad_to:  # each tile's rows padded, then every tile of an image together
                h = nn.functional.pad(h, (0, 0, 0, spec.layer_rows // spec.tiles - spec.rows))
                h = h.reshape(n // spec.tiles, spec.layer_rows, d)
            if spec.tile_tables:  # the tiles' attention mask: (positions × 1) @ (1 × positions)
                ones = torch.ones(n // spec.tiles, spec.layer_rows, 1, dtype=h.dtype, device=h.device)
                self.tile_mask(ones, ones.transpose(-1, -2))
            if spec.routed:  # its dense and routed layers and its final norm
                for layer in self.layers:
                    h = layer(h)
                h = self.final_norm(h)
            inner_ctx = {"embeddings": h}
            windowed = spec.depth - spec.full_layers if spec.window else 0
            for k, layer in enumerate(() if spec.mixed or spec.routed else self.layers):
                if k < windowed:  # each window on its own: every patch meets the patches of its window
                    pieces = torch.split(h, spec.window_tiles(), dim=1)
                    h = torch.cat([layer(piece, {"embeddings": piece}, k) for piece in pieces], dim=1)
                else:
                    h = layer(h, inner_ctx, k)
                if spec.merger and spec.merger.runs and k == spec.merger.after - 1:  # windows of patches into one
                    h = self.merger(h)
                    inner_ctx = {"embeddings": h}
            if spec.post_norm:
                h = self.post_norm(h)
            if spec.global_layers is not None:
                global_ctx = {"embeddings": h}
                for k, layer in enumerate(getattr(self, "global").layers):
                    h = layer(h, global_ctx, k)
            if spec.tiles > 1 or spec.pad_to:  # the padding dropped, every tile's rows side by side
                h = h.reshape(n, spec.layer_rows // spec.tiles, d)[:, : spec.rows].reshape(n // spec.tiles, -1, d)
            if spec.head:
                self.head(h)
            if spec.pooler:  # the class token's row, computed and not read
                torch.tanh(self.pooler["dense"](h[:, 0]))
            h = h[:, spec.registers :]  # the registers are not read
            h = h if spec.read_class or not spec.class_token else h[:, 1:]
            copies = 1 if spec.projector.qformer else spec.projector.width // d  # the layers it reads, concatenated
            states = self.projector(torch.cat([h] * copies, dim=-1))
            if spec.cross_layers:  # every image's rows, read as keys and values by the cross-attention layers
                ctx["cross_states"] = states.reshape(x.shape[0], -1, states.shape[-1])
            if spec.high_res:  # the image at the high-resolution tower's size, through it and the aligner
                side = spec.high_res.image_size
                pixels = torch.zeros((n, spec.high_res.channels, side, side), dtype=x.dtype, device=x.device)
                spec.high_res.align(self.projector, self.high_res(spec.grid, pixels), h)
            for deep in self.deepstack if spec.deepstack else ():
                deep(h)
            return x

    return VisionModule()

"""A document image and its layout in an encoder's source (UDOP, Tang et al. 2023 §3.1, "Unifying Vision, Text, and
Layout"; transformers' UdopForConditionalGeneration): the spec's ``document``, beside the ``encoder`` part whose
source it fills.

- ``patch_embed`` (UdopPatchEmbeddings): a convolution of ``patch`` pixels, kernel and stride, with a bias, over one
  image of ``side`` pixels a side and ``channels`` channels: P = (side // patch)² patches of d_model, once a sequence.
  combine_image_text_embeddings adds to each text token the patch under its box's centre and appends every other
  patch, padded with zero rows to all P (its ``max_len`` 0: the image's patch count): the encoder's source is its S
  tokens and P rows whatever the boxes (the encoder's ``appended``). The encoder's own ``embed_patches`` is this
  module (tied: ``_tied_weights_keys``); the decoder's (UdopStack builds one in each stack) is built and never run.
- ``cell_2d_embedding`` (UdopCellEmbeddings, the encoder's alone): an x and a y table of ``cell_rows``
  (max_2d_position_embeddings) rows of d_model; every source row's box (x0, y0, x1, y1; the patches' own boxes,
  get_visual_bbox, and the padding's zeros) looks up x0 and x1 in the x table and y0 and y1 in the y table, the
  four rows summed and added to the row: lookups, four adds a feature.
- the relative biases of ``relative_bias_args`` (RelativePositionBiasAggregated, each a table of its buckets, plus
  two prefix rows with ``prefix_bucket``, × heads) in each stack: the first tied to the encoder's first block's
  bucket table (the encoder part's), the others (``bias_rows``: the horizontal and vertical distances between
  box centres, RelativePositionBiasHorizontal and Vertical) of their own; the encoder sums them over every pair of
  source rows once a sequence (lookups, one add a score and head each) and hands the sum to its layers in place of
  T5's; the decoder's are built and never run (UdopStack.forward: position_bias None in the decoder, whose first
  block computes T5's buckets).

FLOPs: the convolution's multiply-adds (d · channels · patch² a patch, the bias's add) once a sequence, the patch
added to each text token, the tables' adds over the S + P source rows; the layers' work over them is the encoder's."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cache

from ..model.schema import Positive
from ..model.terms import Emitter
from . import Part, register


@register
@dataclass(frozen=True)
class Document(Part):
    key = "document"
    order = 6
    summary = "a document image's patches and its words' boxes in an encoder's source, with 2-D relative biases (UDOP)"
    count_note = (
        "every sequence is one document image (UdopProcessor gives one): its patches are appended to the encoder's "
        "source, and its convolution charged once a sequence"
    )

    heads: Positive
    patch: Positive = 16  # UdopConfig.patch_size
    side: Positive = 224  # UdopConfig.image_size: UdopPatchEmbeddings refuses any other
    channels: Positive = 3  # UdopConfig.num_channels
    cell_rows: Positive = 1024  # UdopConfig.max_2d_position_embeddings
    bias_rows: tuple[Positive, ...] = (32, 32)  # each relative-bias table after the first, in each stack
    decoder_patches: bool = True  # the decoder's own embed_patches, built and not run

    @property
    def patches(self) -> int:
        return (self.side // self.patch) ** 2

    def input_terms(self, e, model, seq_len: int) -> None:
        d, p, k = model.d_model, self.patches, self.channels * self.patch * self.patch
        text = sum(part.source_tokens() for part in model.parts) or seq_len  # the encoder's source tokens
        rows = text + p  # the encoder's source: its tokens and the image's P rows
        image, combine, source = Emitter("embedding"), Emitter("embedding"), Emitter("embedding")
        image.term(
            "document.patch_embed.weight", "weight", (d, self.channels, self.patch, self.patch), macs=d * k, component="patch_embed"
        )
        image.term("document.patch_embed.bias", "bias", (d,), elementwise=d, component="patch_embed")
        # each text token's patch added to it (combine_image_text_embeddings: inputs_embeds += repeated_vision_embeds)
        combine.op("document.combine", d, copies=1, component="patch_embed")
        for axis in ("x", "y"):  # two rows a box from each table, summed into the row
            source.term(
                f"document.encoder.cell_2d.{axis}.weight", "position", (self.cell_rows, d), elementwise=2 * d,
                component=f"encoder.cell_2d.{axis}",
            )  # fmt: skip
        for i, n in enumerate(self.bias_rows):  # one add a score and head each, over the S + P rows' pairs
            source.term(
                f"document.encoder.relative_bias_2d.t{i}.weight", "position", (n, self.heads), elementwise=self.heads * rows,
                component="encoder.relative_bias_2d",
            )  # fmt: skip
        idle = Emitter("embedding")  # the decoder's, built and not run
        if self.decoder_patches:
            idle.term(
                "document.decoder.embed_patches.weight", "weight", (d, self.channels, self.patch, self.patch),
                component="decoder.embed_patches",
            )  # fmt: skip
            idle.term("document.decoder.embed_patches.bias", "bias", (d,), component="decoder.embed_patches")
        for i, n in enumerate(self.bias_rows):
            name = f"document.decoder.relative_bias_2d.t{i}.weight"
            idle.term(name, "position", (n, self.heads), component="decoder.relative_bias_2d")
        scaled = [replace(t, positions=Fraction(p, seq_len)) for t in image.out]
        scaled += [replace(t, positions=Fraction(text, seq_len)) for t in combine.out]
        scaled += [replace(t, positions=Fraction(rows, seq_len)) for t in source.out]
        e.out.extend(replace(t, per_sequence=True, active_count=0) for t in scaled + idle.out)

    def model_module(self, model):
        return _module()(self, model)


@cache
def _module():
    import torch
    from torch import nn

    class DocumentModule(nn.Module):
        """The image's convolution over a blank image (its output the encoder's appended rows' shape, not passed on:
        the encoder runs zeros there), the cell tables and the relative-bias tables as parameters."""

        def __init__(self, spec: Document, model):
            super().__init__()
            d, p = model.d_model, spec.patch
            self.side, self.channels = spec.side, spec.channels
            self.patch_embed = nn.Conv2d(spec.channels, d, p, stride=p)
            self.patch_embed.weight_flops = True  # verify: its FLOPs are its weight's
            self.encoder = nn.Module()
            self.encoder.cell_2d = nn.ModuleDict({a: nn.Embedding(spec.cell_rows, d) for a in ("x", "y")})
            self.encoder.relative_bias_2d = nn.ModuleDict({f"t{i}": nn.Embedding(n, spec.heads) for i, n in enumerate(spec.bias_rows)})
            self.decoder = nn.Module()
            if spec.decoder_patches:
                self.decoder.embed_patches = nn.Conv2d(spec.channels, d, p, stride=p)
            self.decoder.relative_bias_2d = nn.ModuleDict({f"t{i}": nn.Embedding(n, spec.heads) for i, n in enumerate(spec.bias_rows)})

        def enter(self, x: torch.Tensor, ctx: dict) -> torch.Tensor:
            image = x.new_zeros((x.shape[0], self.channels, self.side, self.side))
            self.patch_embed(image)
            return x

    return DocumentModule

"""An encoder the decoder attends to (Vaswani et al. 2017 §3.1: the encoder–decoder; BART, mBART, Marian, Pegasus,
T5, Whisper). The model's own layers, final norm and head are the decoder's; beside them (the spec's ``encoder``):

- the encoder's token table (the decoder's, shared, as BART's ``shared``; or its own), its own position table
  where it has one (learned, or sines and cosines held as a parameter: Marian, Pegasus; a fixed buffer: M2M-100),
  an embedding norm;
- its layers (a ``Stack``, bidirectional: every source token meets every other) and a final norm where it has one;
- in every decoder layer a cross-attention sublayer after the self-attention, with its own norm: queries from the
  decoder's stream, keys and values projected from the encoder's output (once per source token), the output
  projected back and added to the residual stream.

FLOPs per token of the decoder's sequence (``--seq-len`` T), with the encoder's work over the source (S tokens,
``source_length``; default the sequence's own length, as a forward given only input_ids runs it) scaled by S / T
(``Term.positions``): the encoder's layers, and each cross-attention's key and value projections; each decoder query
meets all S keys (a rectangle in every view)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cache
from typing import Literal

from ..model.schema import NonNegative, Positive, SpecError
from ..model.stacks import Stack
from ..model.terms import ACTIVATION_OPS, SOFTMAX_OPS, Emitter
from . import Part, register


@register
@dataclass(frozen=True)
class Encoder(Part):
    key = "encoder"
    order = 5
    summary = "an encoder stack the decoder's layers attend to through cross-attention (BART, T5, Whisper)"
    # Megatron-LM places an encoder-decoder's two stacks on pipeline ranks of their own (pipeline_model_parallel_split_rank)
    # and splits no source over context-parallel ranks: neither is modelled here
    unsplit = "pipeline stages and context parallelism of an encoder-decoder (where its encoder runs) are not planned"

    layers: Stack  # its layers (their mask is bidirectional whatever is stated)
    position_rows: NonNegative = 0  # rows of its own learned position table (BART: max_position_embeddings + 2)
    embedding_norm: bool = False  # a norm on its embeddings (BART's layernorm_embedding)
    final_norm: bool = False  # a norm after its last layer (mBART, T5)
    table_rows: NonNegative = 0  # rows of a token table of its own (0: the decoder's, shared)
    cross_bias: bool = False  # biases on the cross-attention's projections
    cross_head_dim: Positive | None = None  # its heads' width (default d_model / heads; T5: d_kv)
    relative_buckets: NonNegative = 0  # rows of its layers' shared relative-position bias table (T5), × heads
    relative_per_layer: bool = False  # that table in every layer of its own (UMT5), not one every layer reads
    # a second such table, for the keys of the global tokens (LongT5's transient-global attention:
    # global_relative_attention_bias, beside relative_attention_bias in the first layer)
    relative_global: bool = False
    source_length: Positive | None = None  # source tokens per sequence for the FLOPs (default: the sequence's)
    # a speech encoder's input (Whisper): log-mel frames of this many features, two a position, through two
    # convolutions of kernel 3 (the second of stride 2) with GELUs, in place of a token table (0: tokens)
    mel_bins: NonNegative = 0
    # a speech encoder's input (Speech2Text's Conv1dSubsampler): frames of ``features`` features through one
    # convolution of stride 2 a kernel size here (padding k // 2), each followed by a GLU that halves its channels:
    # ``channels`` out of each but the last, 2·d_model out of the last; 2 ** len(kernels) frames a position
    kernels: tuple[Positive, ...] = ()
    # a speech encoder over the waveform (Moonshine's MoonshineEncoder): conv1 (1 → d, kernel 127, stride 64, no
    # bias) and a tanh, a GroupNorm of one group (weight and bias), conv2 (d → 2d, kernel 7, stride 3) and conv3 (2d →
    # d, kernel 3, stride 2), each with a bias and a GELU, no padding: S positions from the shortest waveform giving them,
    # 384·S + 511 samples (conv1 6·S + 7 outputs, conv2 2·S + 1, conv3 S)
    waveform: bool = False
    # a speech encoder over the waveform in frames of this many samples (Moonshine Streaming's
    # MoonshineStreamingEncoderEmbedder): each frame centred and divided by its RMS (MoonshineStreamingFrameCMVN, no
    # parameters), compressed by asinh(e^log_k · x) (MoonshineStreamingAsinhCompression: one parameter), a linear to d
    # (no bias) and a SiLU; then two causal Conv1d of kernel 5 and stride 2, left-padded by 4 (d → 2d and a SiLU, 2d →
    # d), each with a bias: S positions from the shortest waveform giving them, 4S − 3 frames (conv1 2S − 1 outputs,
    # conv2 S) (0: none)
    frames: NonNegative = 0
    features: NonNegative = 0
    channels: NonNegative = 0
    cross_k_bias: bool | None = None  # the cross-attention's key bias where it differs from cross_bias (Whisper: none)
    # the cross-attention's key and value heads where fewer than its query heads (grouped-query: T5Gemma's
    # T5GemmaCrossAttention, num_key_value_heads), each read by heads / kv_heads queries
    cross_kv_heads: Positive | None = None
    cross_post_norm: bool = False  # a norm on the cross-attention's output before its residual add (T5Gemma, Gemma 2's)
    # a table of conditioning rows, one of them looked up and put before the source's features (Pop2Piano's
    # mel_conditioner: a composer's embedding before the spectrogram frames): parameters, a lookup without FLOPs
    prefix_rows: NonNegative = 0
    # the source padded to a whole multiple of this many positions before the embeddings' positions, norm and layers
    # run over it (LEDEncoder._pad_to_window_size: max(attention_window)); its output unpadded, the cross-attention's
    # keys the source's own (0: no padding)
    pad_to: NonNegative = 0
    # learned global tokens carried beside the source through every layer (PEGASUS-X's embed_global, a table of this
    # many rows): further rows of the stack, dropped from its output
    global_rows: NonNegative = 0
    # only a source longer than this many positions is padded (BigBird-Pegasus's: shorter ones run full attention,
    # unpadded; BigBirdPegasusEncoder.forward: max_tokens_to_attend)
    pad_above: NonNegative = 0
    # a speech encoder's input through Parakeet's ParakeetEncoderSubsamplingConv2D (Canary, Cohere ASR): frames of
    # ``features`` mel bins as a one-channel image, a Conv2d of ``sub_channels`` filters (kernel ``sub_kernel``,
    # stride 2) and a ReLU, then ``sub_layers`` − 1 times a depthwise Conv2d (stride 2), a pointwise one and a ReLU,
    # each halving the frames and the bins; a linear from the channels × remaining bins to d_model: 2 ** sub_layers
    # frames a position (0: none)
    sub_layers: NonNegative = 0
    sub_channels: NonNegative = 0
    sub_kernel: Positive = 3
    # a speech encoder over the waveform through wav2vec 2.0's feature encoder (Baevski et al. 2020, §2;
    # Wav2Vec2FeatureEncoder): Conv1d layers of these output channels, kernels and strides (biases with feature_bias),
    # each with a GELU, a GroupNorm on the first (feature_norm "group") or a LayerNorm on each ("layer"); then
    # Wav2Vec2FeatureProjection (a LayerNorm and a linear to d_model); S positions from the shortest waveform giving them
    feature_dims: tuple[Positive, ...] = ()
    feature_kernels: tuple[Positive, ...] = ()
    feature_strides: tuple[Positive, ...] = ()
    feature_bias: bool = False
    feature_norm: Literal["group", "layer"] = "group"
    # wav2vec 2.0's convolutional positions (Wav2Vec2PositionalConvEmbedding): a grouped Conv1d over the sequence, kernel
    # pos_kernel, pos_groups groups, padded by pos_kernel // 2 either side (the extra output dropped), weight-normed
    # (its direction and a magnitude a tap: dim 2), a bias, a GELU, added to the input (0: none)
    pos_kernel: NonNegative = 0
    pos_groups: Positive = 1
    # a table of relative-position keys every layer reads (SpeechT5's pe_k: 2 × encoder_max_relative_position rows of
    # relative_width, each layer's head_dim; blocks/rel_key.py): looked up, no multiply-adds of its own
    relative_keys: NonNegative = 0
    relative_width: NonNegative = 0
    mask_embed: bool = False  # masked_spec_embed: d_model parameters SpecAugment's training masks use, no work here
    # a linear (with a bias) from the encoder's width to the decoder's over its output, which every cross-attention's
    # k and v then read at the decoder's width (Cohere ASR: CohereAsrDecoder.proj)
    bridge: bool = False
    bridge_bias: bool = True  # the bridge's bias (Moonshine Streaming's decoder.proj has none)
    # a token-type table added to its embeddings (BERT's token_type_embeddings, type_vocab_size rows), looked up
    type_rows: NonNegative = 0
    # a dense layer and tanh over each source's first position (BertModel's pooler, built by an EncoderDecoderModel's
    # encoder and run in its forward though the decoder reads none of it): once a sequence
    pooler: bool = False
    # each decoder layer's self-attention reading the encoder's output as keys and values beside its own, one softmax
    # over both (T5Gemma 2's T5Gemma2MergedAttention): its k_proj, k_norm and v_proj project the S source rows too (the
    # same weights: no parameters here), every query meets its own keys and the S source keys, and the layer has no
    # cross-attention sublayer of its own (no q, o, norms or residual add)
    cross_merged: bool = False
    # rows of d_model beside the shared token table, in its component, looked up in place of a token's row (T5Gemma 2's
    # eoi_embedding: one, for the end-of-image token)
    table_extra: NonNegative = 0
    # images a request gives a model whose images enter this encoder's source (T5Gemma 2's), where the vision part
    # would place them among the decoder's tokens: refused (check)
    images: NonNegative = 0
    # an image's positions as its source, encoded by the model's vision part (Pix2Struct's decoder cross-attends its
    # vision encoder's output): no table and no layers of its own here; an image of image_side pixels a side in patches
    # of image_patch pixels, and image_extra rows beside them (a class token); --image-size sets them (0: tokens)
    image_patch: NonNegative = 0
    image_side: NonNegative = 0
    image_extra: NonNegative = 0
    # rows appended to every source after its tokens (UDOP's image patches: combine_image_text_embeddings appends the
    # patches no word's box covers and pads them with zero rows to all the image's, parts/document.py): the layers, the
    # cross-attention's keys and values and the cache run over them too
    appended: NonNegative = 0

    @property  # type: ignore[misc]  # a request's (or a training sequence's) source tokens; an image source's size
    def takes(self) -> tuple[str, ...]:  # type: ignore[override]
        return ("source_len", "image_size") if self.image_patch else ("source_len",)

    def image_rows(self, side: int) -> int:
        """The positions an image of ``side`` pixels a side is: its patches and the rows beside them."""
        return (side // self.image_patch) ** 2 + self.image_extra

    def check(self, spec) -> None:
        if self.image_patch:  # the vision part's positions, whatever --source-len says
            rows = self.image_rows(self.image_side)
            if self.source_length != rows:
                raise SpecError(
                    ("encoder", "source_length"),
                    f"the decoder cross-attends the image's {rows:,} positions (--image-size sets them)",
                )
            return
        front = self.mel_bins or self.kernels or self.waveform or self.frames or self.sub_layers or self.feature_dims
        if self.cross_merged and self.images:  # T5Gemma2Encoder: the projector's tokens replace image tokens of the source
            raise SpecError(("encoder",), "its images enter the encoder's source, which --images does not place yet")
        if self.cross_merged and self.layers.d_model != spec.d_model:
            raise SpecError(
                ("encoder", "layers", "d_model"),
                f"a merged cross-attention projects the encoder's output with the decoder's k and v: {spec.d_model} wide",
            )
        if self.layers.d_model != spec.d_model and not (self.table_rows or front):
            raise SpecError(
                ("encoder", "layers", "d_model"),
                f"an encoder of a width other than the decoder's, {spec.d_model}, needs a token table of its own",
            )
        s, rows = self.source_length, self.position_rows
        if self.mel_bins and s is not None and s != rows:  # WhisperFeatureExtractor pads every input to 30 s (3,000 frames)
            raise SpecError(
                ("encoder", "source_length"), f"a speech encoder runs over its audio window's {rows:,} positions, whatever the audio"
            )
        last = rows - spec.position_offset  # a learned table ends there (BART: 1,026 rows, the first 2 offset)
        if rows and s is not None and self.padded(s) > last:  # a padded source's positions too (LED's)
            raise SpecError(("encoder", "source_length"), f"{s:,} source tokens: the encoder's learned positions end at {last:,}")

    def subsampler(self, d: int) -> list[tuple[int, int, int]]:
        """Each convolution of the subsampler: its kernel, input and output channels."""
        last = len(self.kernels) - 1
        ins = [self.features] + [self.channels // 2] * last
        outs = [self.channels] * last + [2 * d]
        return list(zip(self.kernels, ins, outs))

    def samples(self, positions: int) -> int:
        """The shortest waveform the feature encoder turns into ``positions`` (each conv: in = (out − 1)·stride +
        kernel)."""
        n = positions
        for k, st in reversed(list(zip(self.feature_kernels, self.feature_strides))):
            n = (n - 1) * st + k
        return n

    def given(self, **inputs) -> Encoder:
        if self.cross_merged and inputs.get("images"):
            return replace(self, images=inputs["images"])
        side = inputs.get("image_size")
        if self.image_patch and side is not None and side != self.image_side:
            return replace(self, image_side=side, source_length=self.image_rows(side))
        source = inputs.get("source_len")
        return self if source is None else replace(self, source_length=source)

    def sized(self, positions: int) -> Encoder:
        return self if self.source_length else replace(self, source_length=positions)

    def source_tokens(self) -> int:
        return self.source_length or 0

    def _heads(self, model) -> tuple[int, int]:
        """The cross-attention's heads and their width: its decoder layer's self-attention's heads (every decoder
        layer alike in the families read), of d_kv (T5) or d_model / heads."""
        h = model.layers[0].attention.head_count()
        return h, self.cross_head_dim or model.d_model // h

    def _kv(self, model) -> int:
        """The cross-attention's key and value width: kv_heads (default its heads) × head width."""
        h, hd = self._heads(model)
        return (self.cross_kv_heads or h) * hd

    def kept_elements(self, model) -> int:
        """Per decoder token a cross-attention keeps, as Korthikanti et al. 2022 §4.1 count attention: its norm's
        input (d) and output (q's input, d), Q and the heads' output (o's input, h·hd each), and a post-norm's input
        (d) where it has one; K and V are the source's (``stacks``)."""
        h, hd = self._heads(model)
        if self.cross_merged:  # its queries and output are the self-attention's, kept there
            return 0
        return (3 if self.cross_post_norm else 2) * model.d_model + 2 * h * hd

    def kept_bytes(self, model, kernel: str) -> int:
        """Its output's dropout mask (1 byte an element, Korthikanti et al. 2022 §4.1) and what the kernel keeps of the
        scores over the S source keys: the flash kernel's fp32 log-sum-exp a query and head (4·h), eager's softmax
        output, its dropout mask and the dropout's output (5·h·S, blocks/attention.py softmax_score_bytes)."""
        h, s = self._heads(model)[0], (self.source_length or 0) + self.appended
        if self.cross_merged:  # one softmax over both key sets: its log-sum-exp the self-attention's; eager's S more scores
            return {"flash": 0, "eager": 5 * h * s, "recomputed": 0}[kernel]
        return model.d_model + {"flash": 4 * h, "eager": 5 * h * s, "recomputed": 0}[kernel]

    def stacks(self, model) -> tuple[tuple[object, int, int, int], ...]:
        """The encoder's layers over the S source tokens (padded to whole windows or blocks, and its global tokens,
        where it has them); beside them each of those rows keeps the encoder's output (the cross-attention's k and v
        read it, d) and its final norm's input (d), and in every decoder layer the cross-attention's K and V
        (2·kv_heads·hd, for the scores' and AV's gradients), split over tp by heads: the padding's and the global
        tokens' rows among them (the unpadded output a view of the padded one's storage), and the K and V of the
        source's own rows, a stack of no layers beside the encoder's where the two differ."""
        inner = replace(self.stack.resolve(model), mask="bidirectional")
        whole = self.layers.d_model * (2 if self.final_norm else 1)  # at the encoder's width
        source = (self.source_length or 0) + self.appended
        rows, kv = self.padded(source) + self.global_rows, model.n_layers * 2 * self._kv(model)
        if self.cross_merged:  # and k_norm's input with its fp32 statistic a key head (2 16-bit elements)
            kv += model.n_layers * (self._kv(model) + 2 * (self.cross_kv_heads or self._heads(model)[0]))
        if rows == source:
            return ((inner, rows, kv, whole),)
        return ((inner, rows, 0, whole), (replace(inner, layers=()), source, kv, 0))

    def cached_elements(self, model) -> int:
        """A decoder layer's cross-attention cache: K and V of every head for each of the S source tokens, projected
        once at the prefill and read by every decode step (vLLM's and TensorRT-LLM's cross-attention KV cache); of
        its kv_heads where it groups its queries."""
        return 2 * self._kv(model) * ((self.source_length or 0) + self.appended)

    @property
    def stack(self) -> Stack:
        return replace(self.layers, mask="bidirectional")

    def source(self, positions: int) -> int:
        """The rows the encoder runs over: the source's tokens (its own length, or the sequence's) and those appended."""
        return (self.source_length or positions) + self.appended

    @staticmethod
    def tokens(model, positions: int) -> int:
        """The sequence's tokens whose layer positions these are (ProphetNet's decoder runs (1 + ngram) rows a token,
        parts/ngram.py): the fewest t with model.layer_positions(t) ≥ positions, by bisection."""
        low, high = 1, max(positions, 1)
        while low < high:
            mid = (low + high) // 2
            low, high = (mid + 1, high) if model.layer_positions(mid) < positions else (low, mid)
        return low

    def padded(self, source: int) -> int:
        """The positions the encoder runs over: the source padded to whole multiples of ``pad_to``."""
        return -(-source // self.pad_to) * self.pad_to if self.pad_to and source > self.pad_above else source

    def input_terms(self, e, model, seq_len: int) -> None:
        d, s = self.layers.d_model, self.padded(self.source(seq_len))  # the encoder's own width (T5Gemma 9B-2B's differs)
        scale = Fraction(s, seq_len)
        emb = Emitter("embedding")
        if self.mel_bins:  # each conv output a matmul of 3 inputs' features; the first over twice the positions
            m, gelu = self.mel_bins, ACTIVATION_OPS["gelu"]
            conv = Emitter("layers")
            conv.term("encoder.conv1.weight", "weight", (d, m, 3), macs=d * m * 3)
            conv.term("encoder.conv1.bias", "bias", (d,), elementwise=d * (1 + gelu))
            e.out.extend(replace(t, positions=2 * scale, per_sequence=True) for t in conv.out)
            conv = Emitter("layers")
            conv.term("encoder.conv2.weight", "weight", (d, d, 3), macs=d * d * 3)
            conv.term("encoder.conv2.bias", "bias", (d,), elementwise=d * (1 + gelu))
            e.out.extend(replace(t, positions=scale, per_sequence=True) for t in conv.out)
        if self.waveform:  # each conv output a matmul of its kernel's inputs (MoonshineEncoder.forward)
            gelu = ACTIVATION_OPS["gelu"]
            conv = Emitter("layers")
            conv.term("encoder.conv1.weight", "weight", (d, 1, 127), macs=d * 127, elementwise=d * ACTIVATION_OPS["tanh"])
            # GroupNorm(1, d): a mean and variance over the whole sequence's features, then scale and shift (as a LayerNorm)
            conv.term("encoder.groupnorm.weight", "norm", (d,), elementwise=4 * d)
            conv.term("encoder.groupnorm.bias", "norm", (d,), elementwise=d)
            first = [replace(t, positions=Fraction(6 * s + 7, seq_len), per_sequence=True) for t in conv.out]
            conv = Emitter("layers")
            conv.term("encoder.conv2.weight", "weight", (2 * d, d, 7), macs=2 * d * d * 7)
            conv.term("encoder.conv2.bias", "bias", (2 * d,), elementwise=2 * d * (1 + gelu))
            second = [replace(t, positions=Fraction(2 * s + 1, seq_len), per_sequence=True) for t in conv.out]
            conv = Emitter("layers")
            conv.term("encoder.conv3.weight", "weight", (d, 2 * d, 3), macs=d * 2 * d * 3)
            conv.term("encoder.conv3.bias", "bias", (d,), elementwise=d * (1 + gelu))
            e.out.extend(first + second + [replace(t, positions=scale, per_sequence=True) for t in conv.out])
        if self.frames:  # each frame's CMVN, compression and linear; each causal conv output a matmul of 5 inputs
            f, silu = self.frames, ACTIVATION_OPS["silu"]
            front = Emitter("layers")
            # a frame's mean, centring, square, mean and division (its RMS's square root and eps once a frame); then
            # the product with e^log_k and the asinh
            front.op("encoder.cmvn", 5 * f + 2, copies=1)
            front.term("encoder.compress.log_k", "weight", (1,), elementwise=2 * f, component="encoder.compress")
            front.term("encoder.frame_proj.weight", "weight", (d, f), macs=d * f, elementwise=d * silu)
            framed = [replace(t, positions=Fraction(4 * s - 3, seq_len), per_sequence=True) for t in front.out]
            conv = Emitter("layers")
            conv.term("encoder.conv1.weight", "weight", (2 * d, d, 5), macs=2 * d * d * 5)
            conv.term("encoder.conv1.bias", "bias", (2 * d,), elementwise=2 * d * (1 + silu))
            first = [replace(t, positions=Fraction(2 * s - 1, seq_len), per_sequence=True) for t in conv.out]
            conv = Emitter("layers")
            conv.term("encoder.conv2.weight", "weight", (d, 2 * d, 5), macs=d * 2 * d * 5)
            conv.term("encoder.conv2.bias", "bias", (d,), elementwise=d)
            e.out.extend(framed + first + [replace(t, positions=scale, per_sequence=True) for t in conv.out])
        for i, (k, c_in, c_out) in enumerate(self.subsampler(d)):  # a matmul of k·c_in inputs an output; then the GLU
            conv = Emitter("layers")
            conv.term(f"encoder.conv{i + 1}.weight", "weight", (c_out, c_in, k), macs=c_out * c_in * k)
            glu = c_out // 2 * (ACTIVATION_OPS["sigmoid"] + 1)  # sigmoid of one half, times the other
            conv.term(f"encoder.conv{i + 1}.bias", "bias", (c_out,), elementwise=c_out + glu)
            rate = 2 ** (len(self.kernels) - 1 - i)  # its outputs a source position
            e.out.extend(replace(t, positions=rate * scale, per_sequence=True) for t in conv.out)
        if self.sub_layers:  # each conv output a matmul of its kernel's inputs; its time rows per source position
            c, k, pad = self.sub_channels, self.sub_kernel, (self.sub_kernel - 1) // 2
            bins = [self.features]
            for _ in range(self.sub_layers):  # (f + 2p − k) // 2 + 1 bins out of each conv of stride 2
                bins.append((bins[-1] + 2 * pad - k) // 2 + 1)
            relu = ACTIVATION_OPS["relu"]
            for i in range(self.sub_layers):
                conv = Emitter("layers")
                f = bins[i + 1]
                if i == 0:
                    conv.term("encoder.sub.conv0.weight", "weight", (c, 1, k, k), macs=c * k * k * f)
                    conv.term("encoder.sub.conv0.bias", "bias", (c,), elementwise=c * f * (1 + relu))
                else:  # one filter a channel, then a pointwise conv across them
                    conv.term(f"encoder.sub.dw{i}.weight", "weight", (c, 1, k, k), macs=c * k * k * f)
                    conv.term(f"encoder.sub.dw{i}.bias", "bias", (c,), elementwise=c * f)
                    conv.term(f"encoder.sub.pw{i}.weight", "weight", (c, c, 1, 1), macs=c * c * f)
                    conv.term(f"encoder.sub.pw{i}.bias", "bias", (c,), elementwise=c * f * (1 + relu))
                rate = 2 ** (self.sub_layers - 1 - i)  # its time rows a source position
                e.out.extend(replace(t, positions=rate * scale, per_sequence=True) for t in conv.out)
            conv = Emitter("layers")  # ParakeetEncoderSubsamplingConv2D.linear: channels × num_mel_bins // 2 ** layers
            conv.linear("encoder.sub.linear", c * (self.features // 2**self.sub_layers), d, True, 1)
            e.out.extend(replace(t, positions=scale, per_sequence=True) for t in conv.out)
        if self.feature_dims:  # each conv output a matmul of its kernel's inputs (Wav2Vec2FeatureEncoder)
            gelu, length, channels = ACTIVATION_OPS["gelu"], self.samples(s), 1
            for i, (c_out, k, st) in enumerate(zip(self.feature_dims, self.feature_kernels, self.feature_strides)):
                length = (length - k) // st + 1
                conv = Emitter("layers")
                conv.term(f"encoder.feat.conv{i}.weight", "weight", (c_out, channels, k), macs=c_out * channels * k)
                if self.feature_bias:
                    conv.term(f"encoder.feat.conv{i}.bias", "bias", (c_out,), elementwise=c_out)
                if self.feature_norm == "layer" or i == 0:  # a LayerNorm each, or the first layer's GroupNorm
                    conv.norm(f"encoder.feat.norm{i}", model.norm, c_out, 1)
                conv.op(f"encoder.feat.act{i}", c_out * gelu, copies=1)
                e.out.extend(replace(t, positions=Fraction(length, seq_len), per_sequence=True) for t in conv.out)
                channels = c_out
            proj = Emitter("layers")
            proj.norm("encoder.feat.proj_norm", model.norm, channels, 1)
            proj.linear("encoder.feat.proj", channels, d, True, 1)
            e.out.extend(replace(t, positions=scale, per_sequence=True) for t in proj.out)
        if self.mask_embed:
            emb.term("encoder.mask_embed", "position", (d,))
        if self.relative_keys:
            emb.term("encoder.rel_keys.weight", "position", (self.relative_keys, self.relative_width))
        if self.pos_kernel:  # grouped, over the source and its padding: S + 2·(k // 2) − k + 1 outputs
            k, g = self.pos_kernel, self.pos_groups
            conv = Emitter("layers")
            conv.term("encoder.pos_conv.weight_g", "weight", (1, 1, k), component="encoder.pos_conv")
            conv.term("encoder.pos_conv.weight_v", "weight", (d, d // g, k), macs=d * (d // g) * k, component="encoder.pos_conv")
            conv.term("encoder.pos_conv.bias", "bias", (d,), elementwise=d * (1 + ACTIVATION_OPS["gelu"]) + d)
            outputs = s + 2 * (k // 2) - k + 1
            e.out.extend(replace(t, positions=Fraction(outputs, seq_len), per_sequence=True) for t in conv.out)
        if self.table_extra:  # beside the shared table, in its component: looked up, no multiply-adds
            emb.term("encoder.embed_extra", "token", (self.table_extra, d), component="embed")
        if self.table_rows:  # a lookup: the one-hot matmul Chinchilla's accounting charges (count.py)
            v = self.table_rows
            emb.term("encoder.embed.weight", "token", (v, d), macs=v * d)
        if self.prefix_rows:
            emb.term("encoder.prefix_embed.weight", "token", (self.prefix_rows, d))
        if self.type_rows:  # one add a feature (BertEmbeddings: token_type_embeddings)
            emb.term("encoder.token_type_embed.weight", "position", (self.type_rows, d), elementwise=d)
        if self.position_rows:
            emb.term("encoder.pos_embed.weight", "position", (self.position_rows, d), elementwise=d)
        elif self.layers.positions == "sinusoidal":  # a fixed table of sines and cosines: its add
            emb.op("encoder.pos_embed", d)
        if self.embedding_norm:
            emb.norm("encoder.embed_norm", model.norm, d, 1)
        if self.relative_buckets:  # one table every encoder layer reads (or each its own); lookup and adds: no multiply-adds
            heads = self.layers.attention.resolve(d).head_count()
            tables = (self.layers.n_layers if self.relative_per_layer else 1) * (2 if self.relative_global else 1)
            emb.term("encoder.relative_bias.weight", "position", (self.relative_buckets, heads), tables)
        if self.global_rows:  # looked up once a sequence: no multiply-adds
            emb.term("encoder.global_embed.weight", "token", (self.global_rows, d))
        rows = s + self.global_rows  # the stack's rows: the padded source and the global tokens
        layers = self.stack.terms(model, "encoder.", rows, Fraction(rows, seq_len))
        fin = Emitter("layers")
        if self.final_norm:
            fin.norm("encoder.final_norm", model.norm, d, 1)
        # over the source's own positions, unpadded (PegasusXEncoder: hidden_states[:, :seq_len] before layer_norm)
        tail = [replace(t, layers=None, positions=Fraction(self.source(seq_len), seq_len)) for t in fin.out]
        if self.bridge:  # once a source position, at the prefill
            out = Emitter("layers")
            out.linear("encoder.bridge", d, model.d_model, self.bridge_bias, 1)
            tail += [replace(t, layers=None, positions=Fraction(self.source(seq_len), seq_len)) for t in out.out]
        if self.pooler:  # BertPooler: dense d -> d with a bias and tanh over the first position, once a sequence
            pool = Emitter("layers")
            pool.linear("encoder.pooler.dense", d, d, True, 1)
            pool.op("encoder.pooler.act", d * ACTIVATION_OPS["tanh"], copies=1)
            tail += [replace(t, layers=None, positions=Fraction(1, seq_len), active_count=0) for t in pool.out]
        # the encoder runs once a sequence, at its prefill: no decode step does its work (Term.per_sequence)
        e.out.extend(replace(t, per_sequence=True) for t in [replace(t, positions=scale) for t in emb.out] + layers + tail)

    def layer_terms(self, e, model, positions: int) -> None:
        """Each decoder layer's cross-attention, with the heads of its self-attention (head_dim d / heads)."""
        d, n, s = model.d_model, e.n, self.source(self.tokens(model, positions))
        attn = model.layers[e.layers[0]].attention if e.layers else model.layers[0].attention
        h = attn.head_count()
        hd = self.cross_head_dim or d // h
        kv = Fraction(s, positions)  # the keys and values: once per source token
        if self.cross_merged:
            self._merged_terms(e, model, attn, s, kv)
            return
        e.norm("encoder.cross.norm", model.norm.layer, d, n)
        e.out[-1] = replace(e.out[-1], component="norms")  # one of the layer's norms, as a checkpoint names them
        e.linear("encoder.cross.q", d, h * hd, self.cross_bias, n, heads=h)
        kv_heads = self.cross_kv_heads or h
        for part in ("k", "v"):
            start = len(e.out)
            bias = self.cross_k_bias if part == "k" and self.cross_k_bias is not None else self.cross_bias
            # from the encoder's output, at its width (T5GemmaCrossAttention: cross_attention_hidden_size), or the bridge's
            width = model.d_model if self.bridge else self.layers.d_model
            e.linear(f"encoder.cross.{part}", width, kv_heads * hd, bias, n, heads=kv_heads)
            # projected once a sequence, at the prefill; a decode step reads them from the cache (cached_elements)
            e.out[start:] = [replace(t, positions=kv, per_sequence=True) for t in e.out[start:]]
        for part in ("scores", "values"):  # a decode step's query meets the S source keys, however long the context
            e.term(f"encoder.cross.{part}", "core", (h, s, hd), n, numel=0, macs=n * h * s * hd, select="full", grows=False)
        e.op("encoder.cross.softmax", SOFTMAX_OPS * n * h * s, scores=n * h * s)
        e.linear("encoder.cross.o", h * hd, d, self.cross_bias, n)
        if self.cross_post_norm:  # T5GemmaDecoderLayer's post_cross_attn_layernorm
            e.norm("encoder.cross.post_norm", model.norm.layer, d, n)
            e.out[-1] = replace(e.out[-1], component="norms")
        e.op("encoder.cross.residual", n * d)

    def _merged_terms(self, e, model, attn, s: int, kv: Fraction) -> None:
        """T5Gemma2MergedAttention's work on the source: k_proj and v_proj over the S encoder rows with the
        self-attention's weights (stored there: ``stored`` 0), k_norm over each source key head (an RMSNorm of head_dim,
        its weight the self-attention's), every query's scores and values over the S source keys (a decode step's
        too, from the cache), and the softmax's S more scores a query and head (one softmax over both key sets)."""
        d, n, h = model.d_model, e.n, attn.head_count()
        hd, heads = self.cross_head_dim or d // h, self.cross_kv_heads or h
        for part in ("k", "v"):
            start = len(e.out)
            e.term(
                f"encoder.cross.{part}.weight", "weight", (heads * hd, d), n, macs=n * d * heads * hd, heads=heads,
                stored=0, component=f"attn.{part}",
            )  # fmt: skip
            if part == "k":  # T5Gemma2RMSNorm over each key head: its weight the self-attention's k_norm
                e.term("encoder.cross.k_norm", "op", copies=n, elementwise=n * heads * model.norm.layer.ops(hd))
            e.out[start:] = [replace(t, positions=kv, per_sequence=True) for t in e.out[start:]]
        for part in ("scores", "values"):
            e.term(f"encoder.cross.{part}", "core", (h, s, hd), n, numel=0, macs=n * h * s * hd, select="full", grows=False)
        e.op("encoder.cross.softmax", SOFTMAX_OPS * n * h * s, scores=n * h * s)

    def model_module(self, model):
        return _modules()[0](self, model)

    def layer_module(self, model, layer):
        return _modules()[1](self, model, layer)


@cache
def _modules():
    import torch
    from torch import nn

    from ..blocks._torch import Linear, MatMul, make_norm, windowed_view
    from ..model.reference import LayerModule, sinusoids

    class EncoderModule(nn.Module):
        """The encoder: ``enter`` runs it over the source (the sequence's own tokens, or ``source_length`` tokens)
        and puts its output in the forward pass's ``memory``; the decoder's input passes through unchanged."""

        def __init__(self, spec: Encoder, model):
            super().__init__()
            if spec.feature_dims:
                raise NotImplementedError("an encoder's wav2vec 2.0 feature encoder has no reference module here")
            if spec.sub_layers:
                raise NotImplementedError("an encoder's 2-D convolutional subsampling (Parakeet's) has no reference module here")
            if spec.global_rows:
                raise NotImplementedError("an encoder's global tokens (PEGASUS-X's) have no reference module here")
            d = spec.layers.d_model
            inner = replace(spec.stack.resolve(model), mask="bidirectional")
            self.source_length, self.sinusoidal = spec.source_length, spec.layers.positions == "sinusoidal"
            self.appended = spec.appended  # rows after the source's tokens (zeros here: the document part's patches)
            self.image, self.width = bool(spec.image_patch), d  # an image's positions: the vision part's output (zeros here)
            self.mel_bins, self.pad_to, self.pad_above = spec.mel_bins, spec.pad_to, spec.pad_above
            if spec.mel_bins:
                self.conv1 = nn.Conv1d(spec.mel_bins, d, 3, padding=1)
                self.conv2 = nn.Conv1d(d, d, 3, stride=2, padding=1)
                self.conv1.weight_flops = self.conv2.weight_flops = True  # verify: their FLOPs are their weights'
            self.waveform = spec.waveform
            if spec.waveform:
                self.conv1 = nn.Conv1d(1, d, 127, stride=64, bias=False)
                self.groupnorm = nn.GroupNorm(1, d)
                self.conv2 = nn.Conv1d(d, 2 * d, 7, stride=3)
                self.conv3 = nn.Conv1d(2 * d, d, 3, stride=2)
                for conv in (self.conv1, self.conv2, self.conv3):
                    conv.weight_flops = True  # verify: their FLOPs are their weights'
            self.frames = spec.frames
            if spec.frames:
                self.compress = nn.ParameterDict({"log_k": nn.Parameter(torch.zeros(1))})
                self.frame_proj = Linear(spec.frames, d, bias=False)
                self.conv1 = nn.Conv1d(d, 2 * d, 5, stride=2)
                self.conv2 = nn.Conv1d(2 * d, d, 5, stride=2)
                self.conv1.weight_flops = self.conv2.weight_flops = True  # verify: their FLOPs are their weights'
            self.features, self.kernels = spec.features, spec.kernels
            if spec.kernels:
                self.convs = []  # conv1, conv2, …: named as the terms (a list's digits would read as layers)
                for j, (k, i, o) in enumerate(spec.subsampler(d)):
                    conv = nn.Conv1d(i, o, k, stride=2, padding=k // 2)
                    conv.weight_flops = True  # verify: their FLOPs are their weights'
                    setattr(self, f"conv{j + 1}", conv)
                    self.convs.append(conv)
            if spec.table_rows:
                self.embed = nn.Embedding(spec.table_rows, d)
            if spec.table_extra:  # rows beside the shared table, looked up in place of a token's (none here)
                self.embed_extra = nn.Parameter(torch.zeros(spec.table_extra, d))
            if spec.prefix_rows:  # looked up once a sequence, before the source: no multiply-adds
                self.prefix_embed = nn.Embedding(spec.prefix_rows, d)
            if spec.relative_buckets:  # read by every layer; its lookup and adds have no multiply-adds to count
                heads = spec.layers.attention.resolve(d).head_count()
                if spec.relative_per_layer or spec.relative_global:  # each layer's own (UMT5); the global keys' (LongT5)
                    count = (spec.layers.n_layers if spec.relative_per_layer else 1) * (2 if spec.relative_global else 1)
                    tables = [nn.Embedding(spec.relative_buckets, heads) for _ in range(count)]
                    self.relative_bias = nn.ModuleList(tables)
                else:
                    self.relative_bias = nn.Embedding(spec.relative_buckets, heads)
            if spec.type_rows:  # every source position of type 0
                self.token_type_embed = nn.Embedding(spec.type_rows, d)
            if spec.position_rows:
                self.pos_embed = nn.Embedding(spec.position_rows, d)
            if spec.embedding_norm:
                self.embed_norm = make_norm(model.norm, d)
            self.layers = nn.ModuleList(LayerModule(inner, layer, False) for layer in inner.layers)
            if spec.final_norm:
                self.final_norm = make_norm(model.norm, d)
            if spec.pooler:
                self.pooler = nn.ModuleDict({"dense": Linear(d, d, bias=True)})
            if spec.bridge:  # the encoder's output to the decoder's width, which the cross-attentions read
                self.bridge = Linear(d, model.d_model, bias=spec.bridge_bias)

        def view(self, causal: bool) -> None:
            """The reference model's view for its windowed layers: in the causal (useful) view each computes only its
            window's band (blocks/_torch.py two_sided), in the executed view the square."""
            windowed_view(self.layers, causal)

        def enter(self, x: torch.Tensor, ctx: dict) -> torch.Tensor:
            tokens = ctx["tokens"]
            if self.source_length is not None:
                tokens = torch.zeros((tokens.shape[0], self.source_length), dtype=tokens.dtype, device=tokens.device)
            source = tokens.shape[-1]
            if self.pad_to and source > self.pad_above:  # padded to whole windows (LEDEncoder._pad_to_window_size)
                tokens = nn.functional.pad(tokens, (0, -source % self.pad_to))
            if self.mel_bins:  # a window of silence, two frames a position
                frames = torch.zeros((tokens.shape[0], self.mel_bins, 2 * tokens.shape[-1]), dtype=x.dtype, device=x.device)
                gelu = nn.functional.gelu
                h = gelu(self.conv2(gelu(self.conv1(frames)))).transpose(1, 2)
            elif self.waveform:  # silence, the shortest waveform giving the source's positions
                samples = torch.zeros((tokens.shape[0], 1, 384 * tokens.shape[-1] + 511), dtype=x.dtype, device=x.device)
                h = self.groupnorm(torch.tanh(self.conv1(samples)))
                gelu = nn.functional.gelu
                h = gelu(self.conv3(gelu(self.conv2(h)))).transpose(1, 2)
            elif self.frames:  # silence, the shortest waveform giving the source's positions: 4S − 3 frames
                frames = torch.zeros((tokens.shape[0], 4 * tokens.shape[-1] - 3, self.frames), dtype=x.dtype, device=x.device)
                centred = frames - frames.mean(-1, keepdim=True)
                frames = centred / (centred.pow(2).mean(-1, keepdim=True) + 1e-6).sqrt()
                frames = torch.asinh(self.compress["log_k"].exp() * frames)
                silu = nn.functional.silu
                h = silu(self.frame_proj(frames)).transpose(1, 2)  # causal: 4 positions of padding on the left
                h = self.conv2(nn.functional.pad(silu(self.conv1(nn.functional.pad(h, (4, 0)))), (4, 0))).transpose(1, 2)
            elif self.kernels:  # silence, 2 ** len(kernels) frames a position, each conv halving them and its GLU its channels
                frames = torch.zeros(
                    (tokens.shape[0], self.features, 2 ** len(self.kernels) * tokens.shape[-1]), dtype=x.dtype, device=x.device
                )
                h = frames
                for conv in self.convs:
                    h = nn.functional.glu(conv(h), dim=1)
                h = h.transpose(1, 2)
            elif self.image:  # the vision part runs the image (its own module): here its output's shape
                h = torch.zeros((tokens.shape[0], tokens.shape[-1], self.width), dtype=x.dtype, device=x.device)
            else:
                h = self.embed(tokens) if hasattr(self, "embed") else ctx["table"](tokens)
            if self.appended:
                h = torch.cat([h, h.new_zeros((h.shape[0], self.appended, h.shape[-1]))], dim=1)
                source = h.shape[1]
            positions = torch.arange(source if self.appended else tokens.shape[-1], device=tokens.device)
            if hasattr(self, "token_type_embed"):
                h = h + self.token_type_embed(torch.zeros_like(positions))
            if hasattr(self, "pos_embed"):
                h = h + self.pos_embed(positions)
            elif self.sinusoidal:
                h = h + sinusoids(positions, h.shape[-1]).to(h.dtype)
            if hasattr(self, "embed_norm"):
                h = self.embed_norm(h)
            inner = {"embeddings": h}
            for k, layer in enumerate(self.layers):
                h = layer(h, inner, k)
            ctx["memory"] = (self.final_norm(h) if hasattr(self, "final_norm") else h)[:, :source]
            if hasattr(self, "bridge"):
                ctx["memory"] = self.bridge(ctx["memory"])
            if hasattr(self, "pooler"):  # the first position's, computed and not read
                torch.tanh(self.pooler["dense"](ctx["memory"][:, 0]))
            return x

    class CrossAttention(nn.Module):
        """Queries from the decoder's stream, keys and values from the encoder's output; the whole rectangle."""

        def __init__(self, spec: Encoder, model, heads: int):
            super().__init__()
            d = model.d_model
            self.heads, self.head_dim = heads, spec.cross_head_dim or d // heads
            width = heads * self.head_dim
            self.norm = make_norm(model.norm.layer, d)
            self.kv_heads = spec.cross_kv_heads or heads
            self.q = Linear(d, width, bias=spec.cross_bias)
            # keys and values from the encoder's output, at its width, or the bridge's
            source = model.d_model if spec.bridge else spec.layers.d_model
            self.v = Linear(source, self.kv_heads * self.head_dim, bias=spec.cross_bias)
            k_bias = spec.cross_bias if spec.cross_k_bias is None else spec.cross_k_bias
            self.k = Linear(source, self.kv_heads * self.head_dim, bias=k_bias)
            self.o = Linear(width, d, bias=spec.cross_bias)
            if spec.cross_post_norm:
                self.post_norm = make_norm(model.norm.layer, d)
            self.scores, self.values = MatMul(), MatMul()

        def forward(self, x: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
            b, t, s = x.shape[0], x.shape[1], memory.shape[1]
            q = self.q(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
            group = self.heads // self.kv_heads  # each key and value head read by this many query heads
            k = self.k(memory).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2).repeat_interleave(group, 1)
            v = self.v(memory).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2).repeat_interleave(group, 1)
            probs = self.scores(q * self.head_dim**-0.5, k.transpose(-2, -1)).softmax(dim=-1)
            return self.o(self.values(probs, v).transpose(1, 2).reshape(b, t, -1))

    class SharedProjection(nn.Module):
        """A projection by another module's weight (and bias), given at the call: its FLOPs are this module's."""

        weight_flops = True  # verify: its FLOPs are its weight's

        def forward(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
            return nn.functional.linear(x, weight, bias)

    class MergedCross(nn.Module):
        """T5Gemma2MergedAttention's source side: the self-attention's k, k_norm and v over the encoder's output
        (``k``, ``v``: its weights, these modules' FLOPs), and the queries' products with those keys and values
        (``scores``, ``values``); one softmax over the layer's own keys and the source's."""

        def __init__(self):
            super().__init__()
            self.k, self.v = SharedProjection(), SharedProjection()
            self.scores, self.values = MatMul(), MatMul()

        def attend(self, mixer, memory: torch.Tensor, q, k, v, x) -> torch.Tensor:
            """The mixer's attention step with the source's keys and values beside its own: its queries (normed,
            rotated, scaled by head_dim^-1/2) over its own keys (the causal square, masked; a window's too) and the S
            source keys (k_norm's, no rotation), one softmax over both, the two value products summed."""
            from ..blocks import _fused

            if _fused.active() or mixer.causal:
                raise NotImplementedError("a merged cross-attention's reference runs eager attention over the full square")
            b, s, t, hd = memory.shape[0], memory.shape[1], q.shape[2], mixer.head_dim
            ck = self.k(memory, mixer.k.weight, mixer.k.bias)
            if mixer.qk_norm == "full":
                ck = mixer.k_norm(ck)
            ck = ck.view(b, s, mixer.kv_heads, hd).transpose(1, 2)
            if mixer.qk_norm in ("head", "each_head"):
                ck = mixer.k_norm(ck)
            cv = self.v(memory, mixer.v.weight, mixer.v.bias).view(b, s, mixer.kv_heads, mixer.value_dim).transpose(1, 2)
            group = mixer.heads // mixer.kv_heads
            ck, cv = ck.repeat_interleave(group, dim=1), cv.repeat_interleave(group, dim=1)
            q = q * hd**-0.5
            own = mixer.scores(q, k.transpose(-2, -1))  # (B, H, t, t): the square, the keys after a query masked
            i = torch.arange(t, device=q.device)
            allowed = i[:, None] >= i[None, :]
            if mixer.window is not None:  # a sliding layer's window over its own keys
                allowed = allowed & (i[:, None] - i[None, :] < mixer.window)
            own = own.masked_fill(~allowed, float("-inf"))
            probs = torch.cat([own, self.scores(q, ck.transpose(-2, -1))], dim=-1).softmax(dim=-1)
            return mixer.values(probs[..., :t], v) + self.values(probs[..., t:], cv)

    class CrossLayer(nn.Module):
        """A decoder layer with its cross-attention after the self-attention: ``body`` runs the layer's own
        sublayers around it, each norm before its sublayer or after its residual sum as the model places them."""

        def __init__(self, spec: Encoder, model, layer):
            super().__init__()
            self.merged = spec.cross_merged
            self.cross = MergedCross() if spec.cross_merged else CrossAttention(spec, model, layer.attention.head_count())

        def body(self, layer, x: torch.Tensor, ctx: dict, k: int) -> torch.Tensor:
            mixer, ffn = layer.sublayers()
            memory, cross = ctx["memory"], self.cross
            if self.merged:  # the mixer's attention step given the source's keys beside its own, for this call
                mixer.attend = lambda q, keys, values, h: cross.attend(mixer, memory, q, keys, values, h)
                try:
                    return layer._layer(x)
                finally:
                    del mixer.attend
            if layer.placement == "residual":
                first, second = layer.norms
                x = first(x + mixer(x))
                x = cross.norm(x + cross(x, memory))
                return second(x + ffn(x))
            split = (len(layer.norms) + 1) // 2  # pre-norm; a sandwich's (Gemma 2's) second norm after its sublayer
            before, after = layer.norms[:split], layer.norms[split:]
            x = x + _then(before[1:], mixer(before[0](x)))
            x = x + _then(cross.post_norm if hasattr(cross, "post_norm") else None, cross(cross.norm(x), memory))
            return x + _then(after[1:], ffn(after[0](x)))

    def _then(norms, out: torch.Tensor) -> torch.Tensor:
        """A sublayer's output through the norms after it (none, one, or a list)."""
        for norm in norms if isinstance(norms, (nn.ModuleList, list)) else [norms] if norms is not None else []:
            out = norm(out)
        return out

    return EncoderModule, CrossLayer

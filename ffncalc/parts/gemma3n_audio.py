"""Gemma 3n's audio tower and its embedder (the spec's ``gemma3n_audio``), as transformers 5.23's Gemma3nAudioEncoder
(a Universal Speech Model encoder: Zhang et al. 2023, "Google USM", §3) and Gemma3nMultimodalEmbedder build and
Gemma3nModel.get_audio_features runs them.

- the subsampler (Gemma3nAudioSubSampleConvProjection): two Conv2d over the (frame, mel bin) plane without biases,
  kernel 3 × 3 and stride 2 × 2, time padded (0, 2) and frequency (1, 1) by hand: conv_0 one channel in, ``channels``
  [0] out; conv_1 [0] in, [1] out; each then a cumulative group norm over its (frequency, channel) features
  (Gemma3nAudioCumulativeGroupNorm: running statistics over time, a weight a channel) and a ReLU; input_proj_linear,
  Linear(channels[1] × the bins left, width) without a bias, a position every 4 frames (⌈⌈n / 2⌉ / 2⌉ of n);
- ``layers`` Conformer blocks (Gemma3nAudioConformerBlock), every linear without a bias and every norm an RMSNorm with a
  weight: ffw_layer_start (a norm, Linear(w, 4w) → SiLU → Linear(4w, w), a norm, halved into the residual); the
  attention (a norm; q, k and v projections; per_dim_scale, a weight a head feature; a query meets the keys of its
  ``chunk`` of positions and the context_left − 1 before it and context_right after it, in blocks of ``chunk``
  queries each reading chunk + context_left − 1 + context_right keys, the last block padded; relative positions:
  pos_proj, Linear(w, w), over the context_left + context_right sinusoids once a call, and each query's product with
  each of them; softcapped logits, a softmax, the values; post, Linear(w, w); a norm); lconv1d (a norm, linear_start
  Linear(w, 2w), a GLU, a depthwise causal Conv1d of ``kernel`` taps, conv_norm, SiLU, linear_end Linear(w, w));
  ffw_layer_end as the first; a norm;
- every ``reduction``-th position kept (conf_reduction_factor): the audio's soft tokens;
- the embedder (Gemma3nMultimodalEmbedder, ``embed_audio``): soft_embedding_norm (an RMSNorm with a weight),
  embedding_projection Linear(w, the text width) without a bias, embedding_post_projection_norm (an RMSNorm without
  one); its hard path (embedding, a table of ``vocab`` rows of the tower's width, and hard_embedding_norm) embeds the
  audio's own token ids (the padding token after the soft tokens), which get_audio_features never runs.

Audio (Gemma3nAudioFeatureExtractor): 16 kHz samples in clips of at most 30 s (max_length 480,000, truncated), padded to
a multiple of 128 samples; frames of 513 samples every 160, (samples − 513) // 160 + 1 of them (2,997 for 30 s: 750
positions, 188 soft tokens). Each clip is ``tokens`` tokens of the language model (the processor's audio_seq_length,
audio_soft_tokens_per_image: the soft tokens, padded after with the embedded padding token). FLOPs: ``seconds`` of
audio a sequence, in clips of 30 s run apart (the last shorter), charged per token of the sequence as
parts/audio.py charges a window's; 2 per multiply-add of every convolution, linear and attention product, as
FlopCounterMode counts."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from fractions import Fraction

from ..model.schema import NonNegative, Positive, SpecError
from ..model.spec import Norm
from ..model.terms import ACTIVATION_OPS, SOFTMAX_OPS, Emitter
from . import Part, register

RMSNORM, BARE = Norm(kind="rmsnorm"), Norm(kind="rmsnorm", affine=False)
SAMPLE_RATE, HOP, FRAME, PAD_TO, MAX_SAMPLES = 16_000, 160, 513, 128, 480_000  # Gemma3nAudioFeatureExtractor's


def halved(n: int) -> int:
    """Outputs of a kernel-3, stride-2 convolution padded 2 in all (the subsampler's): ⌊(n − 1) / 2⌋ + 1."""
    return (n - 1) // 2 + 1


def frames_of(samples: int) -> int:
    """Log-mel frames of a clip of ``samples`` samples, padded to a multiple of 128 (Gemma3nAudioFeatureExtractor)."""
    padded = -(-samples // PAD_TO) * PAD_TO
    return max(1, (padded - FRAME) // HOP + 1)


def embedder_terms(prefix: str, width: int, d_model: int, vocab: int) -> list[tuple[str, object]]:
    """Gemma3nMultimodalEmbedder's tensors and their work, each with what it runs over: "token" (a soft token) or
    "idle" (the hard path: a token id's row and its norm, never run for the tower's output)."""
    hard, soft = Emitter("layers"), Emitter("layers")
    hard.term(f"{prefix}embedding.weight", "position", (vocab, width))  # looked up: no multiply-adds
    hard.norm(f"{prefix}hard_norm", RMSNORM, width, 1)
    hard.out[-1] = replace(hard.out[-1], elementwise=0)  # never run for the tower's output
    soft.norm(f"{prefix}soft_norm", RMSNORM, width, 1)
    soft.linear(f"{prefix}linear", width, d_model, False, 1)
    soft.norm(f"{prefix}post_norm", BARE, d_model, 1)
    return [("idle", t) for t in hard.out] + [("token", t) for t in soft.out]


def embedder_module(width: int, d_model: int, vocab: int):
    """Its reference module, named as its terms; its forward runs the tower's output through the soft path."""
    from torch import nn

    from ..blocks._torch import Linear, make_norm

    class Embedder(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(vocab, width)
            self.hard_norm, self.soft_norm = make_norm(RMSNORM, width), make_norm(RMSNORM, width)
            self.linear = Linear(width, d_model, bias=False)
            self.post_norm = make_norm(BARE, d_model)

        def forward(self, x):  # the soft path
            return self.post_norm(self.linear(self.soft_norm(x)))

    return Embedder()


@register
@dataclass(frozen=True)
class Gemma3nAudio(Part):
    key = "gemma3n_audio"
    beside = True
    prefix = "audio"
    order = 4
    summary = (
        "Gemma 3n's audio tower (a USM Conformer: two strided convolutions with cumulative group norms, chunked local "
        "attention with relative positions, light convolutions, half-step feed-forwards) and its embedder"
    )

    width: Positive = 1536  # hidden_size
    layers: Positive = 12  # conf_num_hidden_layers
    heads: Positive = 8  # conf_num_attention_heads
    chunk: Positive = 12  # conf_attention_chunk_size
    context_left: Positive = 13  # conf_attention_context_left: the query's own position and 12 before it
    context_right: NonNegative = 0  # conf_attention_context_right
    kernel: Positive = 5  # conf_conv_kernel_size
    reduction: Positive = 4  # conf_reduction_factor
    mel_bins: Positive = 128  # input_feat_size
    channels: tuple[Positive, ...] = (128, 32)  # sscp_conv_channel_size: the two convolutions' outputs
    vocab: Positive = 128  # the embedder's table (vocab_size)
    tokens: Positive = 188  # a clip's tokens of the language model (audio_soft_tokens_per_image)
    seconds: NonNegative = 0  # audio a sequence, for the FLOPs

    takes = ("audio_seconds",)

    def check(self, spec) -> None:
        if len(self.channels) != 2:
            raise SpecError(("gemma3n_audio", "channels"), f"the two convolutions' channels, got {len(self.channels)}")
        if self.width % self.heads:
            raise SpecError(("gemma3n_audio", "heads"), f"{self.heads} heads do not divide a width of {self.width}")
        if self.width % 2:  # the sinusoids: sin and cos of width / 2 timescales
            raise SpecError(("gemma3n_audio", "width"), f"{self.width}: an odd width has no whole sinusoids")

    def given(self, **inputs) -> Gemma3nAudio:
        seconds = inputs.get("audio_seconds")
        return self if seconds is None else replace(self, seconds=seconds)

    def clips(self) -> list[int]:
        """The frames of each clip of the sequence's audio (30 s each, the last shorter)."""
        samples = int(self.seconds * SAMPLE_RATE)
        whole, rest = divmod(samples, MAX_SAMPLES)
        return [frames_of(MAX_SAMPLES)] * whole + ([frames_of(rest)] if rest else [])

    def request_tokens(self) -> int:
        return self.tokens * len(self.clips())

    @property
    def span(self) -> int:
        """Relative positions a query reads (max_span + 1): context_left − 1 before, context_right after, its own."""
        return self.context_left - 1 + self.context_right + 1

    @property
    def context(self) -> int:
        """Keys a block of ``chunk`` queries reads (context_size)."""
        return self.chunk + self.context_left - 1 + self.context_right

    def units(self, frames: int) -> dict[str, int]:
        """What each term runs over in a clip of ``frames`` frames: each convolution's output cells (time × frequency),
        a position, a relative position (pos_proj's rows), the clip itself, a soft token, nothing."""
        t1, t2 = halved(frames), halved(halved(frames))
        f1, f2 = halved(self.mel_bins), halved(halved(self.mel_bins))
        tokens = -(-t2 // self.reduction)
        return {"conv0": t1 * f1, "conv1": t2 * f2, "position": t2, "span": self.span, "clip": 1, "token": tokens, "idle": 0}

    def clip_terms(self, model, frames: int) -> list[tuple[str, object]]:
        """Every term of the tower and the embedder over a clip of ``frames`` frames, each with what it runs over
        (``units``: its per-unit work; the attention products', a clip's)."""
        d, n, h = self.width, self.layers, self.heads
        hd, c0, c1 = d // h, *self.channels
        f2 = halved(halved(self.mel_bins))
        relu, silu = ACTIVATION_OPS["relu"], ACTIVATION_OPS["silu"]
        conv0, conv1, pos, span, clip = (Emitter("layers") for _ in range(5))
        conv0.term("audio.subsample.conv0.weight", "weight", (c0, 1, 3, 3), macs=c0 * 9)
        conv0.norm("audio.subsample.norm0", RMSNORM, c0, 1)  # a weight a channel; its running statistics
        conv0.op("audio.subsample.act0", c0 * relu, 1)
        conv1.term("audio.subsample.conv1.weight", "weight", (c1, c0, 3, 3), macs=c1 * c0 * 9)
        conv1.norm("audio.subsample.norm1", RMSNORM, c1, 1)
        conv1.op("audio.subsample.act1", c1 * relu, 1)
        pos.linear("audio.subsample.proj", c1 * f2, d, False, 1)
        for name in ("ffw_start", "ffw_end"):  # Gemma3nAudioConformerFeedForward
            pos.norm(f"audio.{name}.norms", RMSNORM, d, 2 * n)
            pos.linear(f"audio.{name}.up", d, 4 * d, False, n)
            pos.op(f"audio.{name}.act", n * 4 * d * silu + 2 * n * d)  # SiLU; the half step and its residual add
            pos.linear(f"audio.{name}.down", 4 * d, d, False, n)
        pos.norm("audio.attn.norms", RMSNORM, d, 2 * n)  # pre_attn_norm, post_norm
        pos.term("audio.attn.per_dim_scale", "bias", (hd,), n, elementwise=n * d)
        for proj in ("q", "k", "v", "o"):  # o: post
            pos.linear(f"audio.attn.{proj}", d, d, False, n)
        span.linear("audio.attn.pos_proj", d, d, False, n)  # over the sinusoids of the relative positions, once a call
        blocks = -(-halved(halved(frames)) // self.chunk)
        queries = blocks * self.chunk  # the last block padded
        for name, keys in (("scores", self.context), ("positions", self.span), ("values", self.context)):
            clip.term(f"audio.attn.{name}", "core", (h, queries * keys, hd), n, numel=0, macs=0, select="pairs")
        clip.op("audio.attn.softmax", n * h * queries * self.context * (SOFTMAX_OPS + 3), n, scores=n * h * queries * self.context)
        pos.norm("audio.lconv.norms", RMSNORM, d, 2 * n)  # pre_layer_norm, conv_norm
        pos.linear("audio.lconv.start", d, 2 * d, False, n)
        pos.op("audio.lconv.glu", n * d * (ACTIVATION_OPS["sigmoid"] + 1 + silu) + n * d)  # GLU, SiLU, residual add
        pos.term("audio.lconv.conv.weight", "weight", (d, 1, self.kernel), n, macs=n * d * self.kernel)
        pos.linear("audio.lconv.end", d, d, False, n)
        pos.norm("audio.norm", RMSNORM, d, n)
        out = [("conv0", t) for t in conv0.out] + [("conv1", t) for t in conv1.out] + [("position", t) for t in pos.out]
        out += [("span", t) for t in span.out] + [("clip", t) for t in clip.out]
        return out + embedder_terms("audio.projector.", d, model.d_model, self.vocab)

    def input_terms(self, e, model, seq_len: int) -> None:
        # the audio's work, not a token's: no token of the sequence passes through the tower (no active parameters).
        # Each length of clip apart (the attention products' blocks are its own); the parameters once
        lengths = sorted(Counter(self.clips()).items(), reverse=True) or [(frames_of(MAX_SAMPLES), 0)]
        for i, (frames, clips) in enumerate(lengths):
            units = self.units(frames)
            for where, t in self.clip_terms(model, frames):
                scale = Fraction(clips * units[where], seq_len)
                e.out.append(replace(t, numel=t.numel if i == 0 else 0, positions=scale, per_sequence=True, active_count=0))

    def clip_flops(self, model, frames: int) -> int:
        """Forward FLOPs of one clip of ``frames`` frames through the tower and the embedder: 2 per multiply-add of
        every convolution, linear and attention product, as FlopCounterMode counts."""
        units = self.units(frames)
        flops = 0
        for where, t in self.clip_terms(model, frames):
            if t.role == "core":
                heads, keys, head_dim = t.shape
                flops += 2 * t.count * heads * keys * head_dim
            else:
                flops += 2 * units[where] * t.macs
        return flops

    def note(self, spec) -> str:
        full = frames_of(MAX_SAMPLES)
        where = (
            f"{self.seconds} s a sequence, in the FLOPs per token" if self.seconds else "none in the FLOPs per token (--audio-seconds)"
        )
        return (
            f"audio tower: a 30-s clip ({full:,} frames) is {self.tokens:,} tokens of the language model and "
            f"{self.clip_flops(spec, full):,} forward FLOPs through the tower and the embedder; audio: {where}"
        )

    def model_module(self, model):
        return _module(self, model)


def _module(spec: Gemma3nAudio, model):
    """The tower and its embedder: ``enter`` runs the sequence's clips of silence through them (their output is not
    placed: the FLOPs are what is proven); the language model's input passes through unchanged."""
    import math

    import torch
    from torch import nn

    from ..blocks._torch import Conv1d, Conv2d, Linear, MatMul, make_norm

    d, h = spec.width, spec.heads
    hd, c0, c1 = d // h, *spec.channels
    f2 = halved(halved(spec.mel_bins))
    silu = nn.functional.silu

    class GroupNorm(nn.Module):
        """Gemma3nAudioCumulativeGroupNorm's weight (its statistics: no multiply-adds)."""

        is_norm = True

        def __init__(self, channels: int):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(channels))

        def forward(self, x):  # (batch, channels, time, frequency)
            x = x - x.cumsum(2) / torch.arange(1, x.shape[2] + 1, device=x.device, dtype=x.dtype)[:, None]
            return x * self.weight[:, None, None]

    def feed_forward():
        f = nn.Module()
        f.norms = nn.ModuleList(make_norm(RMSNORM, d) for _ in range(2))
        f.up, f.down = Linear(d, 4 * d, bias=False), Linear(4 * d, d, bias=False)
        return f

    def run_ff(f, x):
        return x + 0.5 * f.norms[1](f.down(silu(f.up(f.norms[0](x)))))

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.norms = nn.ModuleList(make_norm(RMSNORM, d) for _ in range(2))
            self.per_dim_scale = nn.Parameter(torch.zeros(hd))
            for proj in ("q", "k", "v", "o", "pos_proj"):
                setattr(self, proj, Linear(d, d, bias=False))
            self.scores, self.positions, self.values = MatMul(), MatMul(), MatMul()

        def forward(self, x):
            b, t, _ = x.shape
            w, ctx, span, left = spec.chunk, spec.context, spec.span, spec.context_left - 1
            n = -(-t // w)  # the blocks, the last padded
            y = self.norms[0](x)
            q = (self.q(y) * nn.functional.softplus(self.per_dim_scale.repeat(h))).view(b, t, h, hd)
            k, v = self.k(y).view(b, t, h, hd), self.v(y).view(b, t, h, hd)
            q = nn.functional.pad(q, (0, 0, 0, 0, 0, n * w - t)).view(b, n, w, h, hd).permute(0, 3, 1, 2, 4)

            def context(z):  # each block's keys: left before it, its own, context_right after (zeros past the ends)
                z = nn.functional.pad(z, (0, 0, 0, 0, left, spec.context_right + w - 1))
                return z.unfold(1, ctx, w)[:, :n].permute(0, 2, 1, 4, 3)  # (b, h, n, ctx, hd)

            keys, values = context(k), context(v)
            rel = torch.arange(left, -spec.context_right - 1, -1, device=x.device, dtype=x.dtype)[:, None]
            scales = torch.exp(-math.log(1e4) / max(d // 2 - 1, 1) * torch.arange(d // 2, device=x.device, dtype=x.dtype))
            sin = self.pos_proj(torch.cat([torch.sin(rel * scales), torch.cos(rel * scales)], -1))  # (span, d)
            ac = self.scores(q, keys.transpose(-1, -2))  # (b, h, n, w, ctx)
            bd = self.positions(q.reshape(b, h, n * w, hd), sin.view(span, h, hd).permute(1, 2, 0)).view(b, h, n, w, span)
            bd = nn.functional.pad(bd, (0, ctx + 1 - span)).reshape(b, h, n, w * (ctx + 1))[..., : w * ctx]
            probs = (50 * torch.tanh((ac + bd.view(b, h, n, w, ctx)) / 50)).softmax(-1)
            out = self.values(probs, values).permute(0, 2, 3, 1, 4).reshape(b, n * w, d)[:, :t]
            return x + self.norms[1](self.o(out))

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.ffw_start, self.attn, self.ffw_end = feed_forward(), Attention(), feed_forward()
            self.lconv = nn.Module()
            self.lconv.norms = nn.ModuleList(make_norm(RMSNORM, d) for _ in range(2))
            self.lconv.start, self.lconv.end = Linear(d, 2 * d, bias=False), Linear(d, d, bias=False)
            self.lconv.conv = Conv1d(d, d, spec.kernel, groups=d, bias=False)
            self.norm = make_norm(RMSNORM, d)

        def forward(self, x):
            x = self.attn(run_ff(self.ffw_start, x))
            c = self.lconv
            y = nn.functional.glu(c.start(c.norms[0](x)), dim=-1).transpose(1, 2)
            y = c.conv(nn.functional.pad(y, (spec.kernel - 1, 0))).transpose(1, 2)
            x = x + c.end(silu(c.norms[1](y)))
            return self.norm(run_ff(self.ffw_end, x))

    class Gemma3nAudioModule(nn.Module):
        def __init__(self):
            super().__init__()
            self.subsample = nn.Module()
            self.subsample.conv0 = Conv2d(1, c0, 3, stride=2, bias=False)
            self.subsample.conv1 = Conv2d(c0, c1, 3, stride=2, bias=False)
            self.subsample.norm0, self.subsample.norm1 = GroupNorm(c0), GroupNorm(c1)
            self.subsample.proj = Linear(c1 * f2, d, bias=False)
            self.layers = nn.ModuleList(Layer() for _ in range(spec.layers))
            self.projector = embedder_module(d, model.d_model, spec.vocab)

        def enter(self, x, ctx):
            s = self.subsample
            for frames in spec.clips():  # each clip one call
                h = torch.zeros((x.shape[0], 1, frames, spec.mel_bins), dtype=x.dtype, device=x.device)
                h = torch.relu(s.norm0(s.conv0(nn.functional.pad(h, (1, 1, 0, 2)))))
                h = torch.relu(s.norm1(s.conv1(nn.functional.pad(h, (1, 1, 0, 2)))))
                h = s.proj(h.permute(0, 2, 3, 1).flatten(2))
                for layer in self.layers:
                    h = layer(h)
                self.projector(h[:, :: spec.reduction])
            return x

    return Gemma3nAudioModule()

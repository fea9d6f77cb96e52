"""MUSE Spark's audio tower (the spec's ``muse_spark_audio``, mounted as ``audio``), as transformers 5.23's
MuseSparkAudioModel builds and runs it: a causal convolutional pyramid over the raw 24 kHz waveform, no attention and
no spectrogram.

Each of its stages i (``patch_sizes`` pᵢ, ``hidden_sizes`` wᵢ, ``depths`` dᵢ; MuseSparkAudioLayer):

- MuseSparkAudioPatchEmbedding: every pᵢ consecutive positions of the stage's input (c = 1 sample at the first stage,
  wᵢ₋₁ after it) flattened and projected, Linear(c · pᵢ, wᵢ) with a bias, then an RMSNorm of wᵢ;
- dᵢ MuseSparkAudioConvBlocks: a depthwise causal Conv1d(wᵢ, wᵢ, ``kernel``, groups wᵢ) with a bias (its left padding
  kernel − 1 zeros, or the padding cache's previous inputs), an RMSNorm, an MLP fc1 (wᵢ → int(wᵢ · ``mlp_ratio``)) →
  GELU → fc2 back, with biases, added to the block's input.

Then an RMSNorm of the last width, proj (w₃ → ``width``, the language model's) with a bias and post_proj_norm, an
RMSNorm of ``width``; each token then through the language model's embedding norm (embed_tokens.embed_norm, no
weight: MuseSparkModel.get_audio_features). A token is ``hop`` = ∏ pᵢ samples (1,920: 80 ms, 12.5 a second); stage i
runs over a token's ∏ⱼ₍ⱼ₎₌ᵢ₊₁ pⱼ positions.

FLOPs: ``seconds`` of audio a sequence, padded to whole tokens (MuseSparkFeatureExtractor pads to a multiple of
samples_per_token), charged per token of the sequence as parts/audio.py charges a window's. 2 FLOPs per multiply-add
of every convolution and linear, as FlopCounterMode counts."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from math import prod

from ..model.schema import NonNegative, Positive, SpecError
from ..model.spec import Norm
from ..model.terms import ACTIVATION_OPS, Emitter
from . import Part, register

RMSNORM = Norm(kind="rmsnorm")
BARE = Norm(kind="rmsnorm", affine=False)


@register
@dataclass(frozen=True)
class MuseAudio(Part):
    key = "muse_spark_audio"
    beside = True
    prefix = "audio"
    order = 4
    summary = "MUSE Spark's causal convolutional pyramid over 24 kHz samples, a token per 1,920 (MuseSparkAudioModel)"

    width: Positive  # out_hidden_size: the language model's width
    patch_sizes: tuple[Positive, ...] = (16, 6, 5, 4)
    hidden_sizes: tuple[Positive, ...] = (256, 512, 1024, 2048)
    depths: tuple[NonNegative, ...] = (2, 2, 2, 2)
    kernel: Positive = 7  # conv_kernel_size
    mlp_ratio: float = 4.0
    activation: str = "gelu"
    sample_rate: Positive = 24000
    seconds: NonNegative = 0  # audio a sequence, for the FLOPs

    takes = ("audio_seconds",)

    def check(self, spec) -> None:
        if not len(self.patch_sizes) == len(self.hidden_sizes) == len(self.depths):
            stated = f"{len(self.patch_sizes)} patch sizes, {len(self.hidden_sizes)} widths and {len(self.depths)} depths"
            raise SpecError(("muse_spark_audio", "depths"), f"{stated}: one each a stage")
        if self.mlp_ratio <= 0 or any(int(w * self.mlp_ratio) < 1 for w in self.hidden_sizes):
            raise SpecError(("muse_spark_audio", "mlp_ratio"), f"{self.mlp_ratio} leaves an MLP of no features")

    def given(self, **inputs) -> MuseAudio:
        seconds = inputs.get("audio_seconds")
        return self if seconds is None else replace(self, seconds=seconds)

    @property
    def hop(self) -> int:
        """Samples a token: the product of the patch sizes (1,920)."""
        return prod(self.patch_sizes)

    def tokens_of(self, samples: int) -> int:
        """Tokens ``samples`` of audio become, padded to whole tokens."""
        return -(-samples // self.hop)

    def request_tokens(self) -> int:
        return self.tokens_of(int(self.seconds * self.sample_rate))

    def positions_of(self, tokens: int, stage: int) -> int:
        """Stage ``stage``'s positions for ``tokens`` tokens: a token's ∏ of the later stages' patch sizes each."""
        return tokens * prod(self.patch_sizes[stage + 1 :])

    def window_terms(self) -> list[tuple[int, object]]:
        """Every term, each with the stage whose positions it runs over (the last stage's are the tokens)."""
        out: list[tuple[int, object]] = []
        k, act = self.kernel, ACTIVATION_OPS[self.activation]
        for i, (p, w, depth) in enumerate(zip(self.patch_sizes, self.hidden_sizes, self.depths)):
            e, c = Emitter("layers"), 1 if i == 0 else self.hidden_sizes[i - 1]
            hidden = int(w * self.mlp_ratio)  # MuseSparkAudioMLP: int(hidden_size * mlp_ratio)
            e.linear(f"audio.patch{i}.proj", c * p, w, True, 1)
            e.norm(f"audio.patch{i}.norm", RMSNORM, w, 1)
            if depth:
                s = f"audio.stage{i}"
                e.term(f"{s}.conv.weight", "weight", (w, 1, k), depth, macs=depth * w * k)  # depthwise: k taps a channel
                e.term(f"{s}.conv.bias", "bias", (w,), depth, elementwise=depth * w)
                e.norm(f"{s}.norm", RMSNORM, w, depth)
                e.linear(f"{s}.fc1", w, hidden, True, depth)
                e.op(f"{s}.act", depth * hidden * act, depth)
                e.linear(f"{s}.fc2", hidden, w, True, depth)
                e.op(f"{s}.add", depth * w, depth)  # the block's output added to its input
            out += [(i, t) for t in e.out]
        e, last = Emitter("layers"), len(self.hidden_sizes) - 1
        e.norm("audio.norm", RMSNORM, self.hidden_sizes[-1], 1)
        e.linear("audio.proj", self.hidden_sizes[-1], self.width, True, 1)
        e.norm("audio.post_proj_norm", RMSNORM, self.width, 1)
        e.op("audio.embed_norm", BARE.ops(self.width), 1)  # the language model's weightless embedding norm
        return out + [(last, t) for t in e.out]

    def input_terms(self, e, model, seq_len: int) -> None:
        # the audio's work, not a token's: no token of the sequence passes through the tower (no active parameters)
        tokens = self.request_tokens()
        for stage, t in self.window_terms():
            units = self.positions_of(tokens, stage)
            e.out.append(replace(t, positions=Fraction(units, seq_len), per_sequence=True, active_count=0))

    def flops(self, tokens: int) -> int:
        """Forward FLOPs of ``tokens`` tokens of audio (tokens × hop samples) through the tower: 2 per multiply-add of
        every convolution and linear, as FlopCounterMode counts."""
        return sum(2 * self.positions_of(tokens, stage) * t.macs for stage, t in self.window_terms())

    def note(self, spec) -> str:
        hop_ms = Fraction(1000 * self.hop, self.sample_rate)
        where = f"{self.seconds} s a sequence, in the FLOPs per token" if self.seconds else "none in the FLOPs per token"
        return (
            f"audio tower: a token every {float(hop_ms):g} ms ({self.hop:,} samples at {self.sample_rate:,} Hz), "
            f"{self.flops(1):,} forward FLOPs a token; audio: {where} (--audio-seconds)"
        )

    def model_module(self, model):
        return _module(self)


def _module(spec: MuseAudio):
    """The tower: ``enter`` runs the sequence's audio (zeros, padded to whole tokens) through it (its output is not
    placed: the FLOPs are what is proven); the language model's input passes through unchanged."""
    import torch
    from torch import nn

    from ..blocks._torch import ACTIVATIONS, Linear, make_norm

    k = spec.kernel

    class Block(nn.Module):
        def __init__(self, w: int):
            super().__init__()
            self.conv = nn.Conv1d(w, w, k, groups=w)
            self.conv.weight_flops = True  # verify: its FLOPs are its weight's
            self.norm = make_norm(RMSNORM, w)
            hidden = int(w * spec.mlp_ratio)
            self.fc1, self.fc2 = Linear(w, hidden, bias=True), Linear(hidden, w, bias=True)

        def forward(self, x):  # (batch, positions, w)
            h = self.conv(nn.functional.pad(x.transpose(1, 2), (k - 1, 0))).transpose(1, 2)
            return x + self.fc2(ACTIVATIONS[spec.activation](self.fc1(self.norm(h))))

    class Patch(nn.Module):
        def __init__(self, c: int, p: int, w: int):
            super().__init__()
            self.p, self.proj, self.norm = p, Linear(c * p, w, bias=True), make_norm(RMSNORM, w)

        def forward(self, x):  # (batch, positions, c) -> (batch, positions / p, w)
            b, s, c = x.shape
            return self.norm(self.proj(x.reshape(b, s // self.p, self.p * c)))

    class MuseAudioModule(nn.Module):
        def __init__(self):
            super().__init__()
            for i, (p, w, depth) in enumerate(zip(spec.patch_sizes, spec.hidden_sizes, spec.depths)):
                setattr(self, f"patch{i}", Patch(1 if i == 0 else spec.hidden_sizes[i - 1], p, w))
                setattr(self, f"stage{i}", nn.ModuleList(Block(w) for _ in range(depth)))
            self.norm = make_norm(RMSNORM, spec.hidden_sizes[-1])
            self.proj = Linear(spec.hidden_sizes[-1], spec.width, bias=True)
            self.post_proj_norm = make_norm(RMSNORM, spec.width)

        def enter(self, x, ctx):
            samples = spec.request_tokens() * spec.hop
            if not samples:
                return x
            h = torch.zeros((x.shape[0], samples, 1), dtype=x.dtype, device=x.device)
            for i in range(len(spec.patch_sizes)):
                h = getattr(self, f"patch{i}")(h)
                for block in getattr(self, f"stage{i}"):
                    h = block(h)
            nn.functional.rms_norm(self.post_proj_norm(self.proj(self.norm(h))), (spec.width,))
            return x

    return MuseAudioModule()

"""An audio tower and its projector (the spec's ``audio``): Whisper's encoder (Radford et al. 2022, §2.2) over the
log-mel frames of fixed windows of audio, whose outputs a projector (parts/projector.py) turns into the language
model's input tokens: Qwen2-Audio, Voxtral, GLM-ASR, Audio Flamingo 3 and Music Flamingo.

- two convolutions of kernel 3 (each output a matmul of 3 frames' features in, the width out): the first over the
  window's frames (``mel_bins`` features each, 100 a second), the second of stride 2, to ``source_positions`` positions;
  GELU after each; a learned table of ``source_positions`` rows (none in GLM-ASR's, whose positions are rotary);
- its layers (a ``Stack``, bidirectional), pre-norm with LayerNorms;
- ``pool`` positions averaged into one (Qwen2-Audio's and Audio Flamingo 3's avg_pooler), then a final LayerNorm, then
  ``group`` positions concatenated (Voxtral: 4, its projector reading 4 × the width) and the projector over the tokens
  it writes.

A window is ``window_seconds`` of audio, padded to whole as Whisper's feature extractor pads (30 s: 3,000 frames, 1,500
positions). FLOPs: ``seconds`` of audio a sequence (default none), charged per token of the sequence as a vision tower's
images are (``Term.per_sequence``); ``per_window`` is one window's."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

from ..model.schema import NonNegative, Positive, SpecError
from ..model.spec import Norm
from ..model.stacks import Stack
from ..model.terms import ACTIVATION_OPS, Emitter
from . import Part, register
from .projector import Projector

FRAMES_A_SECOND = 100  # Whisper's feature extractor: a hop of 160 samples at 16 kHz


@register
@dataclass(frozen=True)
class Audio(Part):
    key = "audio"
    order = 4
    summary = (
        "an audio tower (Whisper's encoder) over log-mel frames and the projector into the model's tokens (Qwen2-Audio, "
        "Voxtral, GLM-ASR, Audio Flamingo)"
    )

    layers: Stack  # its layers (bidirectional whatever is stated), at the tower's width, with its own norm
    projector: Projector  # its width is what each token it reads holds (the tower's, × group)
    mel_bins: Positive = 128
    source_positions: Positive = 1500  # a window's positions after the strided convolution, and its table's rows
    window_seconds: Positive = 30
    position_table: bool = True  # Whisper's learned table of source_positions rows (GLM-ASR: none, rotary positions)
    pool: Positive = 1  # positions averaged into one before the projector (Qwen2-Audio: 2)
    group: Positive = 1  # positions concatenated into one token of the projector (Voxtral: 4)
    seconds: NonNegative = 0  # audio a sequence, for the FLOPs

    takes = ("audio_seconds",)

    def given(self, **inputs) -> Audio:
        seconds = inputs.get("audio_seconds")
        return self if seconds is None else replace(self, seconds=seconds)

    def request_tokens(self) -> int:
        return self.windows * self.tokens

    def check(self, spec) -> None:
        if self.source_positions % (self.pool * self.group):
            raise SpecError(
                ("audio", "source_positions"), f"{self.source_positions} positions are not whole groups of {self.pool * self.group}"
            )

    @property
    def stack(self) -> Stack:
        return replace(self.layers, mask="bidirectional", positions="none", norm=self.layers.norm or Norm(kind="layernorm"))

    @property
    def windows(self) -> int:
        """Windows the sequence's audio fills, the last padded to whole."""
        return -(-self.seconds // self.window_seconds)

    @property
    def tokens(self) -> int:
        """The language model's tokens one window becomes."""
        return self.source_positions // self.pool // self.group

    def input_terms(self, e, model, seq_len: int) -> None:
        n = self.windows
        scale = {
            "frame": Fraction(n * 2 * self.source_positions, seq_len),
            "tower": Fraction(n * self.source_positions, seq_len),
            "pooled": Fraction(n * self.source_positions // self.pool, seq_len),
            "projector": Fraction(n * self.tokens, seq_len),
        }
        scale["grid"] = scale["projector"]
        # a window's work, not a token's: no token of the sequence passes through the tower (no active parameters)
        e.out.extend(replace(t, positions=scale[where], per_sequence=True, active_count=0) for where, t in self.window_terms(model))

    def window_terms(self, model) -> list[tuple[str, object]]:
        """Every term of the tower and the projector, each with what it runs over: an input frame, a position, a token
        the projector writes (their per-token work)."""
        d, m = self.layers.d_model, self.mel_bins
        stack = self.stack
        gelu = ACTIVATION_OPS["gelu"]
        first, second, table = Emitter("layers"), Emitter("layers"), Emitter("embedding")
        first.term("audio.conv1.weight", "weight", (d, m, 3), macs=d * m * 3)  # 3 frames' features in, the width out
        first.term("audio.conv1.bias", "bias", (d,), elementwise=d * (1 + gelu))
        second.term("audio.conv2.weight", "weight", (d, d, 3), macs=d * d * 3)
        second.term("audio.conv2.bias", "bias", (d,), elementwise=d * (1 + gelu))
        if self.position_table:
            table.term("audio.pos_embed.weight", "position", (self.source_positions, d), elementwise=d)
        out: list[tuple[str, object]] = [("frame", t) for t in first.out] + [("tower", t) for t in second.out + table.out]
        out += [("tower", t) for t in stack.terms(model, "audio.", self.source_positions, 1)]
        final = Emitter("layers")
        final.norm("audio.final_norm", stack.norm, d, 1)
        out += [("pooled", t) for t in final.out]  # after the pool (Qwen2AudioEncoder's avg_pooler, then its layer_norm)
        return out + self.projector.terms(model.d_model, "audio.projector.")

    def per_window(self, model) -> tuple[int, int]:
        """One window's LM tokens and its forward FLOPs through the tower and the projector (2 per multiply-add of
        every matmul, convolution and attention product, as FlopCounterMode counts)."""
        counts = {"frame": 2 * self.source_positions, "tower": self.source_positions, "projector": self.tokens, "grid": self.tokens}
        counts["pooled"] = self.source_positions // self.pool
        flops = 0
        for where, t in self.window_terms(model):
            if t.role == "core":
                heads, keys, head_dim = t.shape
                flops += 2 * counts[where] * t.count * heads * keys * head_dim
            else:
                flops += 2 * counts[where] * t.macs
        return self.tokens, flops

    def note(self, spec) -> str:
        tokens, flops = self.per_window(spec)
        where = (
            f"{self.seconds} s a sequence, in the FLOPs per token" if self.seconds else "none in the FLOPs per token (--audio-seconds)"
        )
        return (
            f"audio tower: a {self.window_seconds}-s window is {tokens:,} tokens of the language model and {flops:,} forward "
            f"FLOPs through the tower and the projector; audio: {where}"
        )

    def model_module(self, model):
        return _module(self, model)


def _module(spec: Audio, model):
    """The tower and its projector: ``enter`` runs the sequence's windows of silence through them (their output is
    not placed: the FLOPs are what is proven); the language model's input passes through unchanged."""
    import torch
    from torch import nn

    from ..blocks._torch import make_norm
    from ..model.reference import LayerModule

    d = spec.layers.d_model
    inner = replace(spec.stack.resolve(model), mask="bidirectional")

    class AudioModule(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv1d(spec.mel_bins, d, 3, padding=1)
            self.conv2 = nn.Conv1d(d, d, 3, stride=2, padding=1)
            self.conv1.weight_flops = self.conv2.weight_flops = True  # verify: their FLOPs are their weights'
            if spec.position_table:
                self.pos_embed = nn.Embedding(spec.source_positions, d)
            self.layers = nn.ModuleList(LayerModule(inner, layer, False) for layer in inner.layers)
            self.final_norm = make_norm(spec.stack.norm, d)
            self.projector = spec.projector.module(model.d_model)

        def enter(self, x, ctx):
            if not spec.seconds:
                return x
            n = x.shape[0] * spec.windows
            frames = torch.zeros((n, spec.mel_bins, 2 * spec.source_positions), dtype=x.dtype, device=x.device)
            h = nn.functional.gelu(self.conv2(nn.functional.gelu(self.conv1(frames)))).transpose(1, 2)
            if spec.position_table:
                h = h + self.pos_embed.weight
            inner_ctx = {"embeddings": h}
            for k, layer in enumerate(self.layers):
                h = layer(h, inner_ctx, k)
            if spec.pool > 1:
                h = nn.functional.avg_pool1d(h.transpose(1, 2), spec.pool, spec.pool).transpose(1, 2)
            h = self.final_norm(h)  # after the pool, as Qwen2AudioEncoder and AudioFlamingo3Encoder run them
            self.projector(h.reshape(n, h.shape[1] // spec.group, d * spec.group))
            return x

    return AudioModule()

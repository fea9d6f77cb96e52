"""Phi-4-multimodal's audio encoder and its projector (the spec's ``phi4_audio``; Microsoft 2025, "Phi-4-Mini
Technical Report", §2.2), as transformers' Phi4MultimodalAudioEmbedding builds and runs it: an audio part
(parts/audio.py) with a front end and layers of its own.

- encoder_embedding: the log-mel frames (``mel_bins`` features, 100 a second) scaled by a global mean and inverse
  standard deviation (buffers: no parameters, no multiply-adds counted);
- embed (Phi4MultimodalAudioNemoConvSubsampling, NeMo's striding subsampling): conv.0, a Conv2d(1, channels, 3,
  stride 2, padding 1) over the (frame, mel) plane, then for each further halving of time_reduction a depthwise
  Conv2d(channels, channels, 3, stride 2, groups channels) and a pointwise Conv2d(channels, channels, 1), each with a
  bias, nemo_activation after each pair; out, Linear(channels × the mel bins left, width) with a bias: a position
  every time_reduction frames (8: 12.5 a second);
- its layers (blocks/phi4_conformer.py), every query meeting every key of a window (the streaming mask masks scores);
- relative_attention_bias_layer: a table of ``buckets`` rows of a bias a head (bias_max_distance, × 2 unless
  symmetric), looked up by clamped distance and added to every layer's scores: no multiply-adds;
- windows of at most ``source_positions`` positions (its forward's max_seq_len, 500: 40 s): longer audio padded to
  whole windows, each attended alone (unfold_tensor), the padding cut after the layers;
- the projector: up_proj_for_speech (width × downsample_rate → the model's width) → GELU → down_proj_for_speech, with
  biases, a token a position; up_proj_for_vision_speech and down_proj_for_vision_speech beside them, the same shapes,
  run in place of the first pair when an image comes with the audio (audio_projection_mode): one pair's work a
  window, both pairs' parameters.

FLOPs: ``seconds`` of audio a sequence, charged per token of the sequence as parts/audio.py charges them;
``per_window`` is one window's."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

from ..model.schema import Positive, SpecError
from ..model.terms import ACTIVATION_OPS, Emitter
from . import register
from .audio import FRAMES_A_SECOND, Audio, _halved


@register
@dataclass(frozen=True)
class Phi4Audio(Audio):
    key = "phi4_audio"
    beside = True
    prefix = "audio"
    summary = "Phi-4-multimodal's audio encoder: NeMo's striding convolutions, Conformer layers, a relative bias table"

    channels: Positive = 1024  # nemo_conv_channels
    time_reduction: Positive = 8  # frames a position (a power of two: one convolution of stride 2 a halving)
    buckets: Positive = 2000  # the relative bias table's rows (bias_max_distance, × 2 unless symmetric)
    heads: Positive = 16  # the table's columns: the layers' heads

    def check(self, spec) -> None:
        tr = self.time_reduction
        if tr < 2 or tr & (tr - 1):
            raise SpecError(("phi4_audio", "time_reduction"), f"{tr} is not a power of two of at least 2")

    @property
    def halvings(self) -> int:
        return self.time_reduction.bit_length() - 1

    @property
    def frames(self) -> int:
        """The audio's log-mel frames."""
        return int(-(-self.seconds * FRAMES_A_SECOND // 1))

    @property
    def heard(self) -> int:
        """Positions the audio's frames make: time_reduction's halvings, each ⌈n / 2⌉ (kernel 3, stride 2, padding 1)."""
        return _halved(self.frames, self.halvings)

    def layout(self) -> list[int]:
        """The positions of each window: the audio's (``heard``) in one window where they fit in source_positions,
        else in whole windows of it, the last padded (unfold_tensor) after the front end has run over the audio's."""
        positions = self.heard
        if positions <= self.source_positions:
            return [positions] if positions else []
        return [self.source_positions] * -(-positions // self.source_positions)

    @property
    def tokens(self) -> int:
        return self.source_positions

    def request_tokens(self) -> int:
        """The language model's tokens the audio becomes: a position each, the windows' padding cut."""
        return self.heard

    def units(self, positions: int) -> dict[str, int | Fraction]:
        """Every term of a window runs a position (its front end's convolutions stated a position), once a window, or
        not at all (the projector pair an image with the audio would run)."""
        units: dict[str, int | Fraction] = {"tower": positions, "window": 1, "projector": positions, "grid": positions, "idle": 0}
        for k in range(1, self.halvings + 1):  # a whole window's frames: each convolution's time steps
            units[f"stage{k}"] = positions * (self.time_reduction >> k)
        return {**units, "front": positions}

    def window_terms(self, model, positions: int | None = None) -> list[tuple[str, object]]:
        positions = positions or self.source_positions
        d, m, c = self.layers.d_model, self.mel_bins, self.channels
        act = ACTIVATION_OPS["relu"]
        front = Emitter("layers")
        out: list[tuple[str, object]] = []
        for k in range(1, self.halvings + 1):  # each convolution's outputs a time step of its own: the bins left
            stage, cells = Emitter("layers"), _halved(m, k)
            if k == 1:  # conv.0: one channel in
                stage.term("audio.embed.conv0.weight", "weight", (c, 1, 3, 3), macs=cells * c * 9)
                stage.term("audio.embed.conv0.bias", "bias", (c,), elementwise=cells * c * (1 + act))
            else:
                stage.term(f"audio.embed.depthwise{k}.weight", "weight", (c, 1, 3, 3), macs=cells * c * 9)
                stage.term(f"audio.embed.depthwise{k}.bias", "bias", (c,), elementwise=cells * c)
                stage.term(f"audio.embed.pointwise{k}.weight", "weight", (c, c, 1, 1), macs=cells * c * c)
                stage.term(f"audio.embed.pointwise{k}.bias", "bias", (c,), elementwise=cells * c * (1 + act))
            out += [(f"stage{k}", t) for t in stage.out]
        front.linear("audio.embed.out", c * _halved(m, self.halvings), d, True, 1)
        front.term("audio.relative_bias", "position", (self.buckets, self.heads))  # looked up: no multiply-adds
        out += [("front", t) for t in front.out]
        out += [("tower", t) for t in self.stack.terms(model, "audio.", positions, 1)]
        out += self.projector.terms(model.d_model, "audio.projector.")
        out += [("idle", t) for _, t in self.projector.terms(model.d_model, "audio.projector.vision_speech.")]
        return out

    def input_terms(self, e, model, seq_len: int) -> None:
        # parts/audio.py's, each term's work scaled by the positions it runs over a window's (the depthwise
        # convolution's S + kernel − 1)
        layout = self.layout()
        total = self.totals(layout)
        sizes = sorted(set(layout)) or [self.source_positions]
        for size in sizes:
            windows = sum(n == size for n in layout)
            for where, t in self.window_terms(model, size):
                if size != sizes[0] and not (t.role == "core" or t.positions != 1):
                    continue  # linear in the positions: charged once, over every window's
                if t.role == "core" or t.positions != 1:  # each window's own (its square, its padding)
                    scale = Fraction(windows * size * (where != "idle"), seq_len)
                elif where.startswith("stage"):  # the front end: over the audio's frames, before any padding
                    scale = Fraction(_halved(self.frames, int(where.removeprefix("stage"))), seq_len)
                elif where in ("front", "projector", "grid"):  # the audio's positions: the padding is cut before the projector
                    scale = Fraction(self.heard, seq_len)
                else:
                    scale = Fraction(total.get(where, 0), seq_len)
                numel = t.numel if size == sizes[0] else 0
                e.out.append(replace(t, numel=numel, positions=scale * t.positions, per_sequence=True, active_count=0))

    def per_window(self, model) -> tuple[int, int]:
        """One whole window's LM tokens and its forward FLOPs through the tower and the projector (2 per multiply-add
        of every matmul, convolution and attention product, as FlopCounterMode counts)."""
        counts = self.units(self.source_positions)
        flops = Fraction(0)
        for where, t in self.window_terms(model):
            if t.role == "core":
                heads, keys, head_dim = t.shape
                flops += 2 * counts[where] * t.count * heads * keys * head_dim
            else:
                flops += 2 * counts[where] * t.macs * t.positions
        return self.tokens, int(flops)

    def note(self, spec) -> str:
        tokens, flops = self.per_window(spec)
        seconds = self.source_positions * self.time_reduction / FRAMES_A_SECOND
        where = (
            f"{self.seconds} s a sequence, in the FLOPs per token" if self.seconds else "none in the FLOPs per token (--audio-seconds)"
        )
        return (
            f"audio tower: a {seconds:g}-s window is {tokens:,} tokens of the language model and {flops:,} forward FLOPs "
            f"through the tower and the projector; audio: {where}"
        )

    def model_module(self, model):
        return _module(self, model)


def _module(spec: Phi4Audio, model):
    """The encoder and its projectors: ``enter`` runs the sequence's windows of silence through them (their output is
    not placed: the FLOPs are what is proven); the language model's input passes through unchanged."""
    import torch
    from torch import nn

    from ..model.reference import LayerModule

    d, c, m = spec.layers.d_model, spec.channels, spec.mel_bins
    inner = replace(spec.stack.resolve(model), mask="bidirectional")

    class Phi4AudioModule(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Module()
            for k in range(1, spec.halvings + 1):
                if k == 1:
                    self.embed.conv0 = nn.Conv2d(1, c, 3, stride=2, padding=1)
                    self.embed.conv0.weight_flops = True
                    continue
                dw = nn.Conv2d(c, c, 3, stride=2, padding=1, groups=c)
                pw = nn.Conv2d(c, c, 1)
                dw.weight_flops = pw.weight_flops = True  # verify: their FLOPs are their weights'
                setattr(self.embed, f"depthwise{k}", dw)
                setattr(self.embed, f"pointwise{k}", pw)
            self.embed.out = nn.Linear(c * _halved(m, spec.halvings), d)
            self.relative_bias = nn.Parameter(torch.zeros(spec.buckets, spec.heads))
            self.layers = nn.ModuleList(LayerModule(inner, layer, False) for layer in inner.layers)
            self.projector = spec.projector.module(model.d_model)
            self.projector.vision_speech = spec.projector.module(model.d_model)

        def enter(self, x, ctx):
            if not spec.seconds:
                return x
            relu = nn.functional.relu
            h = torch.zeros((x.shape[0], 1, spec.frames, m), dtype=x.dtype, device=x.device)
            h = relu(self.embed.conv0(h))
            for k in range(2, spec.halvings + 1):
                h = relu(getattr(self.embed, f"pointwise{k}")(getattr(self.embed, f"depthwise{k}")(h)))
            h = self.embed.out(h.transpose(1, 2).flatten(2))  # (batch, heard, width)
            layout = spec.layout()
            h = nn.functional.pad(h, (0, 0, 0, sum(layout) - spec.heard)).reshape(-1, layout[0], d)  # unfold_tensor
            inner_ctx = {"embeddings": h}
            for k, layer in enumerate(self.layers):
                h = layer(h, inner_ctx, k)
            self.projector(h.reshape(x.shape[0], -1, d)[:, : spec.heard])  # the windows' padding cut first
            return x

    return Phi4AudioModule()

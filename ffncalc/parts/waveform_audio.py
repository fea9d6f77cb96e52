"""Raw waveform frames embedded as the language model's tokens, with no audio tower (the spec's ``waveform_audio``), as
transformers' Gemma4UnifiedModel builds and runs them (modeling_gemma4_unified.py): ``embed_audio``, a
Gemma4UnifiedMultimodalEmbedder, reads input_features of shape (audios, tokens, audio_embed_dim), each token a frame of
``samples`` raw samples (audio_samples_per_token, which Gemma4UnifiedAudioConfig ties to audio_embed_dim and
output_proj_dims: one ``samples``), and writes (audios, tokens, the language model's width):

- embedding_pre_projection_norm: Gemma4UnifiedRMSNorm(samples, with_scale=False), no weight;
- embedding_projection: nn.Linear(samples, width, bias=False): 2 × samples × width FLOPs a token.

Tokens a second: ``sampling_rate`` / ``samples`` = 16,000 / 640 = 25 for Gemma 4 12B (Gemma4UnifiedFeatureExtractor's
sampling_rate, 16,000, feature_extraction_gemma4_unified.py); a clip of S seconds is ⌈S × sampling_rate / samples⌉
tokens (Gemma4UnifiedProcessor._compute_audio_num_tokens: its samples padded to whole frames). FLOPs: ``seconds`` of
audio a sequence (default none), charged per sequence as the other audio parts charge their towers'."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

from ..model.schema import NonNegative, Positive
from ..model.spec import Norm
from ..model.terms import Emitter
from . import Part, register

SAMPLING_RATE = 16_000  # Gemma4UnifiedFeatureExtractor's sampling_rate (feature_extraction_gemma4_unified.py)
NORM = Norm(kind="rmsnorm", affine=False)  # Gemma4UnifiedRMSNorm(with_scale=False)


@register
@dataclass(frozen=True)
class WaveformAudio(Part):
    key = "waveform_audio"
    beside = True
    prefix = "audio"
    order = 4
    summary = "raw waveform frames embedded with no audio tower: a weightless RMSNorm and a linear a frame (Gemma 4 Unified)"

    samples: Positive = 640  # audio_samples_per_token (= audio_embed_dim = output_proj_dims)
    sampling_rate: Positive = SAMPLING_RATE
    seconds: NonNegative = 0  # audio a sequence, for the FLOPs

    takes = ("audio_seconds",)

    def given(self, **inputs) -> WaveformAudio:
        seconds = inputs.get("audio_seconds")
        return self if seconds is None else replace(self, seconds=seconds)

    @property
    def tokens(self) -> int:
        """The audio's frames, the last padded to whole: a token of the language model each."""
        return -(-self.seconds * self.sampling_rate // self.samples)

    def request_tokens(self) -> int:
        return self.tokens

    def frame_terms(self, width: int) -> list:
        """A frame's: the weightless norm over its samples, then the projection to the language model's width."""
        e = Emitter("layers")
        e.norm("audio.projector.norm", NORM, self.samples, 1)
        e.linear("audio.projector.linear", self.samples, width, False, 1)
        return e.out

    def input_terms(self, e, model, seq_len: int) -> None:
        scale = Fraction(self.tokens, seq_len)
        e.out.extend(replace(t, positions=scale, per_sequence=True, active_count=0) for t in self.frame_terms(model.d_model))

    def note(self, spec) -> str:
        where = f"{self.seconds} s a sequence" if self.seconds else "none a sequence (--audio-seconds)"
        rate = Fraction(self.sampling_rate, self.samples)
        return (
            f"audio: no tower, {rate} tokens of the language model a second, each a frame of {self.samples} samples "
            f"through a norm and a linear; audio: {where}"
        )

    def model_module(self, model):
        import torch
        from torch import nn

        from ..blocks._torch import Linear, make_norm

        spec, width = self, model.d_model

        class Projector(nn.Module):
            def __init__(self):
                super().__init__()
                self.norm = make_norm(NORM, spec.samples)
                self.linear = Linear(spec.samples, width, bias=False)

        class WaveformAudioModule(nn.Module):
            def __init__(self):
                super().__init__()
                self.projector = Projector()

            def enter(self, x, ctx):
                if spec.tokens:
                    frames = torch.zeros((x.shape[0], spec.tokens, spec.samples), dtype=x.dtype, device=x.device)
                    self.projector.linear(self.projector.norm(frames))
                return x

        return WaveformAudioModule()

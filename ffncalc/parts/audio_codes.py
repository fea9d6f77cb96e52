"""An audio tower of quantised log-mel frames (the spec's ``audio_codes``), as transformers' InklingAudioModel builds and
runs it: each frame's ``codebooks`` mel bins, each quantised to one of ``codebook_size`` levels, looked up in one table
of codebooks × codebook_size rows of the language model's width (each bin's rows offset by its codebook), summed, and
an RMSNorm: one token of the language model a frame, ``frames_a_second`` of them (its feature extractor's hop of
audio_token_duration_s, 0.05 s). A lookup and a sum: no multiply-adds of a matmul."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

from ..model.schema import NonNegative, Positive
from ..model.spec import Norm
from ..model.terms import Emitter
from . import Part, register


@register
@dataclass(frozen=True)
class AudioCodes(Part):
    key = "audio_codes"
    beside = True
    prefix = "audio"
    order = 4
    summary = "an audio tower of quantised log-mel frames: codebook tables summed a frame, an RMSNorm (Inkling)"

    width: Positive  # the language model's (text_hidden_size)
    codebooks: Positive = 80  # n_mel_bins
    codebook_size: Positive = 256  # mel_vocab_size
    frames_a_second: Positive = 20  # 1 / audio_token_duration_s
    seconds: NonNegative = 0  # audio a sequence, for the FLOPs

    takes = ("audio_seconds",)

    def given(self, **inputs) -> AudioCodes:
        seconds = inputs.get("audio_seconds")
        return self if seconds is None else replace(self, seconds=seconds)

    @property
    def frames(self) -> int:
        """The audio's frames: a token each."""
        return int(-(-self.seconds * self.frames_a_second // 1))

    def request_tokens(self) -> int:
        return self.frames

    def frame_terms(self) -> list:
        """A frame's: its rows looked up and summed ((codebooks − 1) × width additions), the norm."""
        e = Emitter("embedding")
        rows, w = self.codebooks * self.codebook_size, self.width
        e.term("audio.codes.weight", "position", (rows, w), elementwise=(self.codebooks - 1) * w)  # looked up, summed
        layers = Emitter("layers")
        layers.norm("audio.final_norm", Norm(kind="rmsnorm"), self.width, 1)
        return e.out + layers.out

    def input_terms(self, e, model, seq_len: int) -> None:
        scale = Fraction(self.frames, seq_len)
        e.out.extend(replace(t, positions=scale, per_sequence=True, active_count=0) for t in self.frame_terms())

    def note(self, spec) -> str:
        where = f"{self.seconds} s a sequence" if self.seconds else "none a sequence (--audio-seconds)"
        return (
            f"audio tower: {self.frames_a_second} tokens of the language model a second, each {self.codebooks} table rows "
            f"summed (no matmul FLOPs); audio: {where}"
        )

    def model_module(self, model):
        import torch
        from torch import nn

        from ..blocks._torch import make_norm

        spec = self

        class AudioCodesModule(nn.Module):
            def __init__(self):
                super().__init__()
                self.codes = nn.Embedding(spec.codebooks * spec.codebook_size, spec.width)
                self.final_norm = make_norm(Norm(kind="rmsnorm"), spec.width)

            def enter(self, x, ctx):
                if spec.frames:
                    ids = torch.zeros((x.shape[0] * spec.frames, spec.codebooks), dtype=torch.long, device=x.device)
                    self.final_norm(self.codes(ids).sum(dim=-2))
                return x

        return AudioCodesModule()

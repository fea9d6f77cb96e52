"""Nemotron 3.5 Transcribe's audio model (transformers 5.23's Nemotron3_5TranscribeAudioModel, Nemotron3_5Transcribe-
WordTimestampModel): the ``audio`` part's form where it states ``transcribe`` (parts/audio.py holds the part; this
module its terms and its reference modules).

- the speech recognition encoder (the part's ``layers``): ``frames`` log-mel frames of ``mel_bins`` stacked into a
  position (Nemotron3_5TranscribeFeatureStacking: Linear(frames × mel_bins, width) without a bias, 80 ms a position),
  input_layer_norm, pre-norm layers of LayerNorms whose attention normalises each head's queries and keys (q_norm,
  k_norm: LayerNorms over head_dim with biases; rotary positions on part of each head, no parameters), an MLP with
  biases, a final LayerNorm;
- beside it on the same frames, Nemotron 3 Diarization's model (``diarization``: its own stacking linear, input norm,
  layers and final norm; proj, Linear(width, ``head``) with a bias; the sub-pixel upsampler, a Conv1d of kernel 3 to
  ``frames`` × ``head`` channels, back to one row a frame; the classifier, dense and out_proj with biases and ReLUs,
  over every frame to ``speakers`` logits; silence_embeds, a row its speaker cache reads, no product); the speakers
  active at each position through speaker_norm and the sinusoid speaker embedding (a buffer: one matmul of ``speakers``
  × the width a position), added to the encoder's output after asr_norm;
- the projector (parts/projector.py: Linear(width, text width) with a bias), a token each position;
- the word-timestamp model (``timestamps``: a ConvTranspose1d upsampler, input norm, layers, final norm, and the
  class's word_timestamp_head, a Conv1d of kernel 1 to ``vocab`` logits): parameters only, run when word timestamps
  are asked for, in no window's work here.

A window is one chunk of the diarization config's chunk_length positions (40 s): the encoders each run once over it, with
no context from chunks before or after and an empty speaker cache, as transformers runs audio of one chunk."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..model.schema import Positive
from ..model.spec import Norm
from ..model.stacks import Stack
from ..model.terms import ACTIVATION_OPS, Emitter

LAYERNORM = Norm(kind="layernorm")


@dataclass(frozen=True)
class Transcribe:
    """What Nemotron 3.5 Transcribe's audio model holds beside its speech recognition encoder."""

    diarization: Stack  # Nemotron 3 Diarization's encoder layers
    timestamps: Stack  # the word-timestamp model's layers
    frames: Positive = 8  # log-mel frames a position (subsampling_factor)
    head: Positive = 192  # the diarization head's width (head_config.hidden_size)
    speakers: Positive = 8  # num_speakers
    upsample: Positive = 2  # the word-timestamp upsampler's factor (upsampling_factor)
    vocab: Positive = 23863  # the word-timestamp head's logits (word_timestamp_config.vocab_size)


def _stack(stack: Stack) -> Stack:
    return replace(stack, mask="bidirectional", positions="none", norm=stack.norm or LAYERNORM)


def transcribe_terms(audio, model, positions: int) -> list[tuple[str, object]]:
    """Every term of the two encoders, the speakers' embedding, the projector and the word-timestamp model over a
    window of ``positions`` positions, each with what it runs over ("tower": a position; "window": none, parameters)."""
    t = audio.transcribe
    d, m, f = audio.layers.d_model, audio.mel_bins, t.frames
    out: list[tuple[str, object]] = []
    front = Emitter("layers")
    front.linear("audio.input_linear", f * m, d, False, 1)
    front.norm("audio.input_norm", LAYERNORM, d, 1)
    out += [("tower", u) for u in front.out]
    out += [("tower", u) for u in audio.stack.terms(model, "audio.", positions, 1)]
    diar = _stack(t.diarization)
    w = diar.d_model
    e = Emitter("layers")
    e.linear("audio.diarization.input_linear", f * m, w, False, 1)
    e.norm("audio.diarization.input_norm", LAYERNORM, w, 1)
    out += [("tower", u) for u in e.out]
    out += [("tower", u) for u in diar.terms(model, "audio.diarization.", positions, 1)]
    e = Emitter("layers")
    e.norm("audio.diarization.final_norm", LAYERNORM, w, 1)
    e.linear("audio.diarization.proj", w, t.head, True, 1)
    # the sub-pixel upsampler: each position's frames × head outputs a matmul of 3 positions' head features
    e.term("audio.diarization.upsampler.weight", "weight", (f * t.head, t.head, 3), macs=f * t.head * t.head * 3)
    e.term("audio.diarization.upsampler.bias", "bias", (f * t.head,), elementwise=f * t.head)
    out += [("tower", u) for u in e.out]
    frame = Emitter("layers")  # the classifier over every frame: frames of them a position
    frame.linear("audio.diarization.classifier.dense", t.head, t.head, True, 1)
    frame.linear("audio.diarization.classifier.out_proj", t.head, t.speakers, True, 1)
    frame.op("audio.diarization.classifier.act", 2 * t.head * ACTIVATION_OPS["relu"], 1)
    out += [("tower", replace(u, macs=u.macs * f, elementwise=u.elementwise * f)) for u in frame.out]
    e = Emitter("layers")
    e.term("audio.diarization.silence", "position", (w,))  # silence_embeds: read by the speaker cache, no product
    e.norm("audio.final_norm", audio.stack.norm, d, 1)  # the encoder's layer_norm
    e.norm("audio.asr_norm", LAYERNORM, d, 1)
    e.norm("audio.speaker_norm", LAYERNORM, t.speakers, 1)
    # the activities times the sinusoid table (a buffer): a product of no parameters, speakers × width a position
    e.term("audio.speaker_embedding", "core", (1, t.speakers, d), numel=0, macs=t.speakers * d, select="full")
    out += [("tower", u) for u in e.out]
    out += audio.projector.terms(model.d_model, "audio.projector.", 0)
    return out + [("window", u) for u in timestamp_terms(audio, model)]


def timestamp_terms(audio, model) -> list:
    """The word-timestamp model's tensors, no work in a window: its upsampler (ConvTranspose1d(width, width, factor,
    stride factor) with a bias), input norm, layers, final norm, and the head (Conv1d(width, vocab, 1) with a bias)."""
    t = audio.transcribe
    d = t.timestamps.d_model
    e = Emitter("layers")
    e.term("audio.timestamps.upsampler.weight", "weight", (d, d, t.upsample))
    e.term("audio.timestamps.upsampler.bias", "bias", (d,))
    e.norm("audio.timestamps.input_norm", LAYERNORM, d, 1)
    layers = [u for u in _stack(t.timestamps).terms(model, "audio.timestamps.", 1, 1) if u.numel]
    tail = Emitter("layers")
    tail.norm("audio.timestamps.final_norm", LAYERNORM, d, 1)
    tail.term("audio.timestamps.head.weight", "weight", (t.vocab, d, 1))
    tail.term("audio.timestamps.head.bias", "bias", (t.vocab,))
    return [replace(u, macs=0, elementwise=0, active_count=0) for u in e.out + layers + tail.out]


def transcribe_module(spec, model):
    """The two encoders, the speakers' embedding and the projector, and the word-timestamp model's parameters:
    ``enter`` runs the sequence's windows of zero frames through them (their output is not placed: the FLOPs are what
    is proven); the language model's input passes through unchanged."""
    import torch
    from torch import nn

    from ..blocks._torch import Linear, MatMul, make_norm
    from ..model.reference import LayerModule

    t = spec.transcribe
    d, m, f = spec.layers.d_model, spec.mel_bins, t.frames
    asr = replace(spec.stack.resolve(model), mask="bidirectional")
    diar = replace(_stack(t.diarization).resolve(model), mask="bidirectional")
    stamps = replace(_stack(t.timestamps).resolve(model), mask="bidirectional")
    w, s = t.diarization.d_model, t.timestamps.d_model

    def layers(inner):
        return nn.ModuleList(LayerModule(inner, layer, False) for layer in inner.layers)

    def run(mods, h):
        ctx = {"embeddings": h}
        for k, layer in enumerate(mods):
            h = layer(h, ctx, k)
        return h

    class Diarization(nn.Module):
        def __init__(self):
            super().__init__()
            self.input_linear = Linear(f * m, w, bias=False)
            self.input_norm = make_norm(LAYERNORM, w)
            self.layers = layers(diar)
            self.final_norm = make_norm(LAYERNORM, w)
            self.proj = Linear(w, t.head, bias=True)
            self.upsampler = nn.Conv1d(t.head, f * t.head, 3, padding=1)
            self.upsampler.weight_flops = True  # verify: its FLOPs are its weight's
            self.classifier = nn.Module()
            self.classifier.dense = Linear(t.head, t.head, bias=True)
            self.classifier.out_proj = Linear(t.head, t.speakers, bias=True)
            self.silence = nn.Parameter(torch.empty(w))

        def forward(self, stacked):
            h = self.final_norm(run(self.layers, self.input_norm(self.input_linear(stacked))))
            h = self.upsampler(self.proj(h).transpose(1, 2)).transpose(1, 2)
            h = h.reshape(h.shape[0], -1, t.head)  # a row a frame
            return self.classifier.out_proj(self.classifier.dense(h.relu()).relu())

    class Timestamps(nn.Module):  # parameters only: no window runs it
        def __init__(self):
            super().__init__()
            self.upsampler = nn.ConvTranspose1d(s, s, t.upsample, stride=t.upsample)
            self.input_norm = make_norm(LAYERNORM, s)
            self.layers = layers(stamps)
            self.final_norm = make_norm(LAYERNORM, s)
            self.head = nn.Conv1d(s, t.vocab, 1)

    class TranscribeModule(nn.Module):
        def __init__(self):
            super().__init__()
            self.input_linear = Linear(f * m, d, bias=False)
            self.input_norm = make_norm(LAYERNORM, d)
            self.layers = layers(asr)
            self.final_norm = make_norm(spec.stack.norm, d)
            self.diarization = Diarization()
            self.asr_norm = make_norm(LAYERNORM, d)
            self.speaker_norm = make_norm(LAYERNORM, t.speakers)
            self.speaker_embedding = MatMul()
            self.projector = spec.projector.module(model.d_model)
            self.timestamps = Timestamps()

        def enter(self, x, ctx):
            if not spec.seconds:
                return x
            n = x.shape[0] * spec.windows
            stacked = torch.zeros((n, spec.source_positions, f * m), dtype=x.dtype, device=x.device)
            h = self.final_norm(run(self.layers, self.input_norm(self.input_linear(stacked))))
            logits = self.diarization(stacked)
            active = logits.sigmoid().unflatten(1, (spec.source_positions, f)).mean(2)
            table = torch.zeros((t.speakers, d), dtype=x.dtype, device=x.device)  # the sinusoid buffer
            h = self.asr_norm(h) + self.speaker_embedding(self.speaker_norm(active), table)
            self.projector(h)
            return x

    return TranscribeModule()

"""An audio tower and its projector (the spec's ``audio``): Whisper's encoder (Radford et al. 2022, §2.2) over the
log-mel frames of fixed windows of audio, whose outputs a projector (parts/projector.py) turns into the language
model's input tokens: Qwen2-Audio, Voxtral, GLM-ASR, Audio Flamingo 3 and Music Flamingo.

- two convolutions of kernel 3 (each output a matmul of 3 frames' features in, the width out): the first over the
  window's frames (``mel_bins`` features each, 100 a second), the second of stride 2, to ``source_positions`` positions;
  GELU after each; a learned table of ``source_positions`` rows (none in GLM-ASR's, whose positions are rotary);
- its layers (a ``Stack``, bidirectional), pre-norm with LayerNorms;
- ``pool`` positions averaged into one (Qwen2-Audio's and Audio Flamingo 3's avg_pooler), then a final LayerNorm, then
  ``group`` positions concatenated (Voxtral: 4, its projector reading 4 × the width) and the projector over the tokens
  it writes;
- Qwen3's (``front`` conv2d: Qwen3-ASR's Qwen3ASREncoder and Qwen3-Omni's Qwen3OmniMoeAudioEncoder, one encoder):
  each chunk of ``chunk_frames`` frames (2 × n_window) through three 2-D convolutions of ``channels`` channels
  (kernel 3, stride 2 in time and frequency, GELU after each) and conv_out, a linear of the channels × the remaining
  frequencies into the width, a position for each remaining time step (13 of 100 frames); a window is the span its
  attention meets (n_window_infer frames: ``source_positions`` positions), the audio padded to whole chunks and the
  last window as long as its chunks (get_audio_cu_seqlens / the aftercnn lengths' windows); no pool;
- Qwen2.5-Omni's: attention within ``chunk`` positions at a time (its n_window: each chunk of 2 × n_window frames
  convolved and attended alone, the chunks' keys never meeting), and ``markers`` learned rows of the language model's
  width (audio_bos_eos_token: parameters no window's work reads);
- Granite Speech's (``input_linear``): no convolutions, its feature extractor's two stacked frames a position
  (``mel_bins`` features: 2 × 80) through input_linear, Linear(mel_bins, width) with a bias; Conformer layers
  (blocks/conformer.py, ``shaw``) attending within blocks of ``chunk`` positions (context_size); no final norm;
  ``ctc``: after the middle layer, out (width → ctc, a bias), a softmax and out_mid (ctc → width, a bias) added back;
  its projector a Q-Former (parts/qformer.py) over each ``block`` of positions (window_size), its queries written
  as one row (GraniteSpeechEncoderProjector's query, a batch of one): the first layer's self-attention and the
  cross-attention's query projections run once a window, broadcast over its blocks.

A window is ``window_seconds`` of audio, padded to whole as Whisper's feature extractor pads (30 s: 3,000 frames, 1,500
positions). FLOPs: ``seconds`` of audio a sequence (default none), charged per token of the sequence as a vision tower's
images are (``Term.per_sequence``); ``per_window`` is one window's."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Literal

from ..model.schema import NonNegative, Positive, SpecError
from ..model.spec import Norm
from ..model.stacks import Stack
from ..model.terms import ACTIVATION_OPS, SOFTMAX_OPS, Emitter
from . import Part, register
from .projector import Projector
from .transcribe import Transcribe

FRAMES_A_SECOND = 100  # Whisper's feature extractor: a hop of 160 samples at 16 kHz


@register
@dataclass(frozen=True)
class Audio(Part):
    key = "audio"
    beside = True
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
    # the front end: Whisper's two Conv1d over a window's frames, or Qwen3's three Conv2d over each chunk of
    # chunk_frames frames apart and a linear to the width (Qwen3-ASR, Qwen3-Omni), whose window is the span its attention
    # meets
    front: Literal["whisper", "conv2d"] = "whisper"
    channels: NonNegative = 0  # conv2d: the convolutions' channels (downsample_hidden_size)
    chunk_frames: NonNegative = 0  # conv2d: frames a chunk (n_window × 2)
    chunk: NonNegative = 0  # positions attending one another (Qwen2.5-Omni's n_window; 0: the whole window)
    markers: NonNegative = 0  # learned rows of the model's width beside the tower (Qwen2.5-Omni's audio_bos_eos_token)
    input_linear: bool = False  # Granite Speech's Linear(mel_bins, width) a position, no convolutions
    final_norm: bool = True  # a norm after the layers (Granite Speech's: none)
    ctc: NonNegative = 0  # Granite Speech's output_dim: out and out_mid after the middle layer (0: none)
    block: NonNegative = 0  # positions each run of the projector's Q-Former reads (Granite Speech's window_size)
    # SAN-M's (parts/sanm.py: Fun-ASR-Nano's encoder): its FSMN's taps (0: not SAN-M), its timestamp layers after the
    # transcription layers, and the adaptor's transformer layers after the projector
    fsmn_kernel: NonNegative = 0
    timestamp_layers: NonNegative = 0
    adaptor: Stack | None = None
    added: bool = False  # its tokens added to the text's own positions, none of their own (Voxtral Realtime's)
    transcribe: Transcribe | None = None  # Nemotron 3.5 Transcribe's diarization and word-timestamp models (transcribe.py)
    # conv2d: every window of a request as long as its longest, the projector over the valid positions alone (Dots3
    # Note's feature extractor pads its chunks to the longest's frames; its adapter reads hidden_states[padding_mask])
    padded: bool = False

    takes = ("audio_seconds",)

    def given(self, **inputs) -> Audio:
        seconds = inputs.get("audio_seconds")
        return self if seconds is None else replace(self, seconds=seconds)

    def request_tokens(self) -> int:
        if self.added:  # each written into a position the text has: no tokens beside the prompt's
            return 0
        return sum(int(self.units(n)["projector"]) for n in self.valid_layout())

    def check(self, spec) -> None:
        qformer, d = self.projector.qformer, self.layers.d_model
        if self.seconds and self.block and qformer and qformer.context % d:  # transformers builds it, and runs no audio
            raise SpecError(
                ("audio", "projector", "qformer", "context"),
                f"the Q-Former reads {qformer.context} features a position where the encoder writes {d} (no audio runs)",
            )
        if self.block and (not self.projector.qformer or self.source_positions % self.block):
            raise SpecError(("audio", "block"), f"{self.source_positions} positions are not whole Q-Former blocks of {self.block}")
        if self.source_positions % (self.pool * self.group):
            raise SpecError(
                ("audio", "source_positions"), f"{self.source_positions} positions are not whole groups of {self.pool * self.group}"
            )
        if self.chunk and self.source_positions % self.chunk:
            raise SpecError(("audio", "source_positions"), f"{self.source_positions} positions are not whole chunks of {self.chunk}")
        if self.front == "conv2d" and (not self.channels or not self.chunk_frames):
            raise SpecError(("audio", "front"), "a conv2d front end states its channels and chunk_frames")
        if self.front == "conv2d" and self.source_positions % self.chunk_positions:
            raise SpecError(
                ("audio", "source_positions"), f"{self.source_positions} positions are not whole chunks of {self.chunk_positions}"
            )

    @property
    def stack(self) -> Stack:
        return replace(self.layers, mask="bidirectional", positions="none", norm=self.layers.norm or Norm(kind="layernorm"))

    @property
    def windows(self) -> int:
        """Windows the sequence's audio fills (the last padded to whole, or for conv2d as long as its chunks)."""
        return len(self.layout())

    @property
    def tokens(self) -> int:
        """The language model's tokens one window becomes."""
        if self.block:  # each block's queries
            return self.source_positions // self.block * self.projector.fixed
        return self.source_positions // self.pool // self.group

    @property
    def blocks(self) -> int:
        """The Q-Former's blocks of positions a window makes (Granite Speech's), else 0."""
        return self.source_positions // self.block if self.block else 0

    @property
    def chunk_positions(self) -> int:
        """conv2d: the positions a chunk's frames become, three convolutions of stride 2 (padding 1) later."""
        return _halved(self.chunk_frames, 3)

    def layout(self) -> list[int]:
        """The positions of each window the sequence's audio fills: whole windows, padded as Whisper's feature extractor
        pads them; for conv2d, the audio padded to whole chunks (Qwen3-ASR's feature extractor) and the last window
        only as long as its chunks (get_audio_cu_seqlens)."""
        if self.front == "whisper":
            return [self.source_positions] * -(-self.seconds // self.window_seconds)
        valid = self.valid_layout()
        return [max(valid)] * len(valid) if self.padded and valid else valid

    def valid_layout(self) -> list[int]:
        """The valid positions of each window: ``layout`` but where ``padded`` windows run more than they hold."""
        if self.front == "whisper":
            return [self.source_positions] * -(-self.seconds // self.window_seconds)
        chunks = -(-self.seconds * FRAMES_A_SECOND // self.chunk_frames)
        whole, rest = divmod(chunks, self.source_positions // self.chunk_positions)
        return [self.source_positions] * whole + ([rest * self.chunk_positions] if rest else [])

    def units(self, positions: int) -> dict[str, int | Fraction]:
        """What each of a window's terms runs over in a window of ``positions`` positions: an input frame (Whisper's
        conv1), a chunk (conv2d's convolutions), a position, a pooled position, a token the projector writes."""
        tokens = positions // self.block * self.projector.fixed if self.block else positions // self.pool // self.group
        chunks = Fraction(positions, self.chunk_positions) if self.front == "conv2d" else Fraction(0)
        pooled, blocks = positions // self.pool, positions // self.block if self.block else 0
        units = {"frame": 2 * positions, "chunk": chunks, "tower": positions, "pooled": pooled, "window": 1, "block": blocks}
        return {**units, "projector": tokens, "grid": tokens}

    def totals(self, layout: list[int]) -> dict[str, Fraction]:
        """What each of the windows' terms runs over, summed over the windows of ``layout`` (``units`` of each)."""
        total: dict[str, Fraction] = {}
        for n in layout:
            for where, count in self.units(n).items():
                total[where] = total.get(where, Fraction(0)) + count
        return total

    def input_terms(self, e, model, seq_len: int) -> None:
        # a window's work, not a token's: no token of the sequence passes through the tower (no active parameters).
        # Every term but the attention's products is linear in a window's positions: charged once, over all of them;
        # the products of each window over its own square (a shorter last window's apart, as a term of no parameters)
        layout = self.layout()
        total = self.totals(layout)
        if self.padded:  # the projector over the valid positions alone
            total["projector"] = total["grid"] = Fraction(sum(self.units(n)["projector"] for n in self.valid_layout()))
        whole = sum(n == self.source_positions for n in layout)
        for where, t in self.window_terms(model):
            if t.role == "core" and where == "tower":
                scale = Fraction(whole * self.source_positions, seq_len)
            else:
                scale = Fraction(total.get(where, 0), seq_len)
            e.out.append(replace(t, positions=scale, per_sequence=True, active_count=0))
        for n in sorted({n for n in layout if n != self.source_positions}):
            short = sum(m == n for m in layout)
            for where, t in self.window_terms(model, n):
                if t.role == "core" and where == "tower":
                    e.out.append(replace(t, positions=Fraction(short * n, seq_len), per_sequence=True, active_count=0))

    def window_terms(self, model, positions: int | None = None) -> list[tuple[str, object]]:
        """Every term of the tower and the projector over a window of ``positions`` positions (default: a whole one),
        each with what it runs over (``units``; their per-unit work)."""
        positions = positions or self.source_positions
        if self.fsmn_kernel:  # SAN-M's form (parts/sanm.py)
            from .sanm import sanm_terms

            return sanm_terms(self, model, positions)
        if self.transcribe is not None:  # Nemotron 3.5 Transcribe's (parts/transcribe.py)
            from .transcribe import transcribe_terms

            return transcribe_terms(self, model, positions)
        d, m = self.layers.d_model, self.mel_bins
        stack = self.stack
        gelu = ACTIVATION_OPS["gelu"]
        out: list[tuple[str, object]] = []
        if self.input_linear:  # GraniteSpeechCTCEncoder's input_linear, a position
            front = Emitter("layers")
            front.linear("audio.input_linear", m, d, True, 1)
            out += [("tower", t) for t in front.out]
        elif self.front == "conv2d":  # Qwen3ASREncoder / Qwen3OmniMoeAudioEncoder: conv2d1..3 (kernel 3 × 3, stride 2,
            # padding 1) over a chunk's (mel, frame) plane, each output a matmul of 3 × 3 inputs of its channels, GELU
            # after each; conv_out, Linear(channels × the mel bins left, width), no bias; the sinusoidal positions are a
            # buffer, added (no table)
            c, chunk = self.channels, Emitter("layers")
            bins, frames = m, self.chunk_frames
            for k, c_in in enumerate((1, c, c), start=1):
                bins, frames = _halved(bins, 1), _halved(frames, 1)
                chunk.term(f"audio.conv{k}.weight", "weight", (c, c_in, 3, 3), macs=c * c_in * 9 * bins * frames)
                chunk.term(f"audio.conv{k}.bias", "bias", (c,), elementwise=c * bins * frames * (1 + gelu))
            out += [("chunk", t) for t in chunk.out]
            linear = Emitter("layers")
            linear.linear("audio.conv_out", c * bins, d, False, 1)
            linear.op("audio.positions", d, 1)
            out += [("tower", t) for t in linear.out]
        else:
            first, second, table = Emitter("layers"), Emitter("layers"), Emitter("embedding")
            first.term("audio.conv1.weight", "weight", (d, m, 3), macs=d * m * 3)  # 3 frames' features in, the width out
            first.term("audio.conv1.bias", "bias", (d,), elementwise=d * (1 + gelu))
            second.term("audio.conv2.weight", "weight", (d, d, 3), macs=d * d * 3)
            second.term("audio.conv2.bias", "bias", (d,), elementwise=d * (1 + gelu))
            if self.position_table:
                table.term("audio.pos_embed.weight", "position", (self.source_positions, d), elementwise=d)
            out += [("frame", t) for t in first.out] + [("tower", t) for t in second.out + table.out]
        # each position's keys: its chunk's (Qwen2.5-Omni's cu_seqlens), or the whole window's
        out += [("tower", t) for t in stack.terms(model, "audio.", self.chunk or positions, 1)]
        final = Emitter("layers")
        if self.final_norm:
            final.norm("audio.final_norm", stack.norm, d, 1)
        if self.ctc:  # GraniteSpeechCTCEncoder: out, a softmax, out_mid added back, after layer num_layers // 2
            final.linear("audio.ctc.out", d, self.ctc, True, 1)
            final.op("audio.ctc.softmax", self.ctc * SOFTMAX_OPS)
            final.linear("audio.ctc.out_mid", self.ctc, d, True, 1)
        out += [("pooled", t) for t in final.out]  # after the pool (Qwen2AudioEncoder's avg_pooler, then its layer_norm)
        if self.markers:  # rows of the model's width, looked up beside the tower's tokens: no work
            table = Emitter("embedding")
            table.term("audio.markers", "position", (self.markers, model.d_model))
            out += [("projector", t) for t in table.out]
        projector = self.projector.terms(model.d_model, "audio.projector.", self.block)
        return out + (self.blocked(projector) if self.block else projector)

    def blocked(self, projector: list[tuple[str, object]]) -> list[tuple[str, object]]:
        """Granite Speech's Q-Former over each block of positions, its queries one row broadcast over the blocks: its
        first layer's self-attention (q, k, v, o over the queries, their scores) and its first cross-attention's
        query projection once a window (GraniteSpeechEncoderProjector.forward: query_embeds of a batch of one)."""
        qf = self.projector.qformer
        assert qf is not None  # check: a block is a Q-Former's
        once = {"attn.q": qf.depth, "attn.k": qf.depth, "attn.v": qf.depth, "attn.o": qf.depth, "cross.q": qf.cross}
        once.update({"attn.scores": qf.depth, "attn.values": qf.depth, "attn.softmax": qf.depth})
        out: list[tuple[str, object]] = []
        for where, t in projector:
            if where != "image":
                out.append((where, t))
                continue
            name = t.name.removeprefix("audio.projector.qformer.").removesuffix(".weight").removesuffix(".bias")
            if name.startswith("embed_norm"):  # over the one row of queries
                out.append(("window", t))
                continue
            copies = once.get(name, 0)
            if not copies:
                out.append(("block", t))
                continue
            k = 1 if t.role != "core" else t.count // copies  # the first layer's instances (a core term's: a query each)
            c = t.count
            whole = replace(t, macs=t.macs * (c - k) // c, elementwise=t.elementwise * (c - k) // c, scores=t.scores * (c - k) // c)
            if t.role == "core":
                whole = replace(whole, count=c - k)
            first = replace(t, numel=0, count=k, macs=t.macs * k // c, elementwise=t.elementwise * k // c, scores=t.scores * k // c)
            out += [("block", whole), ("window", first)]
        return out

    def per_window(self, model) -> tuple[int, int]:
        """One window's LM tokens and its forward FLOPs through the tower and the projector (2 per multiply-add of
        every matmul, convolution and attention product, as FlopCounterMode counts)."""
        return self.tokens, self.window_flops(model, self.source_positions)

    def window_flops(self, model, positions: int, valid: int | None = None) -> int:
        """The forward FLOPs of one window of ``positions`` positions through the tower and the projector (``valid``
        of them through the projector, where fewer: a padded window's)."""
        counts = self.units(positions)
        if valid is not None:
            counts["projector"] = counts["grid"] = self.units(valid)["projector"]
        flops = 0
        for where, t in self.window_terms(model, positions):
            if t.role == "core":
                heads, keys, head_dim = t.shape
                flops += 2 * counts[where] * t.count * heads * keys * head_dim
            else:
                flops += 2 * counts[where] * t.macs
        return int(flops)

    def heard(self, model) -> tuple[int, int]:
        """The sequence's ``seconds`` of audio: the language model's tokens and the forward FLOPs of its windows."""
        layout = self.layout()
        return self.request_tokens(), sum(self.window_flops(model, n, v) for n, v in zip(layout, self.valid_layout()))

    def note(self, spec) -> str:
        tokens, flops = self.per_window(spec)
        where = (
            f"{self.seconds} s a sequence, in the FLOPs per token" if self.seconds else "none in the FLOPs per token (--audio-seconds)"
        )
        return (
            f"audio tower: {'an' if str(self.window_seconds)[0] == '8' else 'a'} {self.window_seconds}-s window is {tokens:,} "
            f"{'embeddings added to as many positions of the text' if self.added else 'tokens of the language model'} and "
            f"{flops:,} forward FLOPs through the tower and the projector; audio: {where}"
        )

    def model_module(self, model):
        if self.fsmn_kernel:  # SAN-M's form (parts/sanm.py)
            from .sanm import sanm_module

            return sanm_module(self, model)
        if self.transcribe is not None:  # Nemotron 3.5 Transcribe's (parts/transcribe.py)
            from .transcribe import transcribe_module

            return transcribe_module(self, model)
        return _module(self, model)


def _halved(n: int, times: int) -> int:
    """``n`` after ``times`` convolutions of kernel 3, stride 2 and padding 1: ⌊(n − 1) / 2⌋ + 1 each."""
    for _ in range(times):
        n = (n - 1) // 2 + 1
    return n


def _module(spec: Audio, model):
    """The tower and its projector: ``enter`` runs the sequence's windows of silence through them (their output is
    not placed: the FLOPs are what is proven); the language model's input passes through unchanged."""
    import torch
    from torch import nn

    from ..blocks._torch import ACTIVATIONS, Conv1d, Conv2d, Linear, make_norm
    from ..model.reference import LayerModule

    d = spec.layers.d_model
    inner = replace(spec.stack.resolve(model), mask="bidirectional")

    class AudioModule(nn.Module):
        def __init__(self):
            super().__init__()
            if spec.input_linear:  # Granite Speech's
                self.input_linear = nn.Linear(spec.mel_bins, d)
            elif spec.front == "conv2d":  # Qwen3's conv2d1..3 and conv_out
                c = spec.channels
                self.conv1 = Conv2d(1, c, 3, stride=2, padding=1)
                self.conv2 = Conv2d(c, c, 3, stride=2, padding=1)
                self.conv3 = Conv2d(c, c, 3, stride=2, padding=1)
                self.conv_out = Linear(c * _halved(spec.mel_bins, 3), d, bias=False)
            else:
                self.conv1 = Conv1d(spec.mel_bins, d, 3, padding=1)
                self.conv2 = Conv1d(d, d, 3, stride=2, padding=1)
            if spec.position_table:
                self.pos_embed = nn.Embedding(spec.source_positions, d)
            self.layers = nn.ModuleList(LayerModule(inner, layer, False) for layer in inner.layers)
            if spec.markers:
                self.markers = nn.Parameter(torch.empty(spec.markers, model.d_model))
            if spec.final_norm:
                self.final_norm = make_norm(spec.stack.norm, d)
            if spec.ctc:  # Granite Speech's out and out_mid after the middle layer
                self.ctc = nn.Module()
                self.ctc.out, self.ctc.out_mid = nn.Linear(d, spec.ctc), nn.Linear(spec.ctc, d)
            self.projector = spec.projector.module(model.d_model)

        def front(self, x):
            """Every window's positions after the front end, as (windows, positions, width) tensors by length."""
            gelu, layout, batch = nn.functional.gelu, spec.layout(), x.shape[0]
            dtype, device = x.dtype, x.device
            if spec.input_linear:  # the stacked frames a position through input_linear
                n = batch * len(layout)
                return [self.input_linear(torch.zeros((n, spec.source_positions, spec.mel_bins), dtype=dtype, device=device))]
            if spec.front == "whisper":
                n = batch * len(layout)
                frames = torch.zeros((n, spec.mel_bins, 2 * spec.source_positions), dtype=dtype, device=device)
                h = gelu(self.conv2(gelu(self.conv1(frames)))).transpose(1, 2)
                return [h + self.pos_embed.weight if spec.position_table else h]
            chunks = batch * sum(n // spec.chunk_positions for n in layout)
            frames = torch.zeros((chunks, 1, spec.mel_bins, spec.chunk_frames), dtype=dtype, device=device)
            h = gelu(self.conv3(gelu(self.conv2(gelu(self.conv1(frames))))))
            h = self.conv_out(h.permute(0, 3, 1, 2).flatten(2)).reshape(-1, d)  # each chunk's positions, in order
            out, at = [], 0
            for n in sorted(set(layout)):  # the windows of each length together (their values change no count)
                k = batch * layout.count(n)
                out.append(h[at : at + k * n].reshape(k, n, d))
                at += k * n
            return out

        def enter(self, x, ctx):
            if not spec.seconds:
                return x
            for h in self.front(x):
                windows = h.shape[0]
                h = h.reshape(-1, spec.chunk, d) if spec.chunk else h  # each chunk of positions attends alone
                inner_ctx = {"embeddings": h}
                for k, layer in enumerate(self.layers):
                    h = layer(h, inner_ctx, k)
                    if spec.ctc and k + 1 == len(self.layers) // 2:  # GraniteSpeechCTCEncoder's, after layer n // 2
                        h = h + self.ctc.out_mid(self.ctc.out(h).softmax(-1))
                h = h.reshape(windows, -1, d)
                if spec.pool > 1:
                    h = nn.functional.avg_pool1d(h.transpose(1, 2), spec.pool, spec.pool).transpose(1, 2)
                h = self.final_norm(h) if spec.final_norm else h  # after the pool, as Qwen2AudioEncoder runs them
                if spec.block:  # the Q-Former over each block of positions, its queries one row
                    context = spec.projector.qformer.context  # Granite Speech Plus: layers' outputs side by side
                    h = h.repeat(1, 1, context // d) if context % d == 0 else h
                    for window in h:  # each window one call of the projector (its queries once a window)
                        queried = self.blocked_qformer(window.reshape(-1, spec.block, window.shape[-1]))
                        self.projector.project(queried.reshape(1, -1, spec.projector.width))
                    continue
                if spec.padded:  # the valid positions of each window alone
                    valid = spec.valid_layout() * (h.shape[0] // len(spec.layout()))
                    h = torch.cat([w[:n] for w, n in zip(h, valid)])[None]
                self.projector(h.reshape(h.shape[0], h.shape[1] // spec.group, d * spec.group))
            return x

        def blocked_qformer(self, positions):
            """The Q-Former's layers (parts/qformer.py's modules) as GraniteSpeechEncoderProjector runs them: its
            queries a batch of one until the first cross-attention's keys, the blocks' positions, meet them."""
            qf, qspec = self.projector.qformer, spec.projector.qformer
            blocks, heads = positions.shape[0], qspec.heads
            q = qf.embed_norm(qf.queries[None])
            for layer in qf.layers:
                q = layer.norms[0](q + layer.attn(q, q))
                if hasattr(layer, "cross"):  # its query projection over the queries as they are, then every block's
                    a = layer.cross
                    b, m, w = blocks, q.shape[1], qspec.width
                    qs = a.q(q).view(q.shape[0], m, heads, w // heads).transpose(1, 2).expand(b, -1, -1, -1)
                    ks = a.k(positions).view(b, -1, heads, w // heads).transpose(1, 2)
                    vs = a.v(positions).view(b, -1, heads, w // heads).transpose(1, 2)
                    out = a.values(a.scores(qs, ks.transpose(-2, -1)).softmax(-1), vs).transpose(1, 2).reshape(b, m, w)
                    q = layer.norms[2](q + a.o(out))
                act = ACTIVATIONS[qspec.activation]
                q = layer.norms[1](q + layer.ffn.down(act(layer.ffn.up(q))))
            return q

    return AudioModule()

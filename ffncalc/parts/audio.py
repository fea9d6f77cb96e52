"""An audio tower and its projector (the spec's ``audio``): Whisper's encoder (Radford et al. 2022, §2.2) over the
log-mel frames of fixed windows of audio, whose outputs a projector (parts/projector.py) turns into the language
model's input tokens: Qwen2-Audio, Voxtral, GLM-ASR.

- two convolutions of kernel 3 (each output a matmul of 3 frames' features in, the width out): the first over the
  window's frames (``mel_bins`` features each, 100 a second), the second of stride 2, to ``source_positions`` positions;
  GELU after each; a learned table of ``source_positions`` rows (none in GLM-ASR's, whose positions are rotary);
- its layers (a ``Stack``, bidirectional), pre-norm with LayerNorms, and a final LayerNorm;
- ``pool`` positions averaged into one (Qwen2-Audio's avg_pooler) or ``group`` concatenated (Voxtral: 4, its
  projector reading 4 × the width), then the projector over the tokens it writes;
- Qwen3-Omni's (``downsample``): each chunk of ``chunk_frames`` frames (2 × n_window) through three 2-D convolutions
  of ``downsample`` channels (kernel 3, stride 2 in time and frequency, GELU after each) and conv_out, a linear of
  the channels × the remaining frequencies into the width, a position for each remaining time step (13 of 100
  frames); attention within windows of ``window_chunks`` chunks' positions (n_window_infer / chunk frames), the last
  what remains; no pool;
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

from ..model.schema import NonNegative, Positive, SpecError
from ..model.spec import Norm
from ..model.stacks import Stack
from ..model.terms import ACTIVATION_OPS, SOFTMAX_OPS, Emitter
from . import Part, register
from .projector import Projector

FRAMES_A_SECOND = 100  # Whisper's feature extractor: a hop of 160 samples at 16 kHz


@register
@dataclass(frozen=True)
class Audio(Part):
    key = "audio"
    order = 4
    summary = "an audio tower (Whisper's encoder) over log-mel frames and the projector into the model's tokens (Qwen2-Audio, Voxtral)"

    layers: Stack  # its layers (bidirectional whatever is stated), at the tower's width, with its own norm
    projector: Projector  # its width is what each token it reads holds (the tower's, × group)
    mel_bins: Positive = 128
    source_positions: Positive = 1500  # a window's positions after the strided convolution, and its table's rows
    window_seconds: Positive = 30
    position_table: bool = True  # Whisper's learned table of source_positions rows (GLM-ASR: none, rotary positions)
    pool: Positive = 1  # positions averaged into one before the projector (Qwen2-Audio: 2)
    group: Positive = 1  # positions concatenated into one token of the projector (Voxtral: 4)
    chunk: NonNegative = 0  # positions attending one another (Qwen2.5-Omni's n_window; 0: the whole window)
    markers: NonNegative = 0  # learned rows of the model's width beside the tower (Qwen2.5-Omni's audio_bos_eos_token)
    downsample: NonNegative = 0  # channels of Qwen3-Omni's three strided 2-D convolutions (0: Whisper's 1-D ones)
    chunk_frames: NonNegative = 0  # with downsample: the frames of a chunk, each convolved alone (2 × n_window)
    window_chunks: NonNegative = 0  # with downsample: the chunks whose positions attend one another
    input_linear: bool = False  # Granite Speech's Linear(mel_bins, width) a position, no convolutions
    final_norm: bool = True  # a norm after the layers (Granite Speech's: none)
    ctc: NonNegative = 0  # Granite Speech's output_dim: out and out_mid after the middle layer (0: none)
    block: NonNegative = 0  # positions each run of the projector's Q-Former reads (Granite Speech's window_size)
    seconds: NonNegative = 0  # audio a sequence, for the FLOPs

    takes = ("audio_seconds",)

    def given(self, **inputs) -> Audio:
        seconds = inputs.get("audio_seconds")
        return self if seconds is None else replace(self, seconds=seconds)

    def request_tokens(self) -> int:
        return self.windows * self.tokens

    def check(self, spec) -> None:
        qformer, d = self.projector.qformer, self.layers.d_model
        if self.seconds and self.block and qformer and qformer.context % d:  # transformers builds it, and runs no audio
            raise SpecError(
                ("audio", "projector", "qformer", "context"),
                f"the Q-Former reads {qformer.context} features a position where the encoder writes {d} (no audio runs)",
            )
        if self.source_positions % (self.pool * self.group):
            raise SpecError(
                ("audio", "source_positions"), f"{self.source_positions} positions are not whole groups of {self.pool * self.group}"
            )
        if self.downsample and (2 * self.source_positions) % self.chunk_frames:
            raise SpecError(
                ("audio", "source_positions"), f"{2 * self.source_positions} frames are not whole chunks of {self.chunk_frames}"
            )
        if self.block and (not self.projector.qformer or self.source_positions % self.block):
            raise SpecError(("audio", "block"), f"{self.source_positions} positions are not whole Q-Former blocks of {self.block}")
        if self.chunk and self.source_positions % self.chunk:
            raise SpecError(("audio", "source_positions"), f"{self.source_positions} positions are not whole chunks of {self.chunk}")

    @property
    def stack(self) -> Stack:
        return replace(self.layers, mask="bidirectional", positions="none", norm=self.layers.norm or Norm(kind="layernorm"))

    @property
    def windows(self) -> int:
        """Windows the sequence's audio fills, the last padded to whole."""
        return -(-self.seconds // self.window_seconds)

    @property
    def chunks(self) -> int:
        """Qwen3-Omni's chunks a window's frames make (whole: check)."""
        return 2 * self.source_positions // self.chunk_frames if self.downsample else 0

    @property
    def blocks(self) -> int:
        """The Q-Former's blocks of positions a window makes (Granite Speech's), else 0."""
        return self.source_positions // self.block if self.block else 0

    @staticmethod
    def halved(n: int) -> int:
        """A length through a convolution of kernel 3, stride 2 and padding 1: (n - 1) // 2 + 1 (torch.nn.Conv2d)."""
        return (n - 1) // 2 + 1

    @property
    def tower_positions(self) -> int:
        """The tower's positions a window makes: the strided convolution's, or each chunk's last time steps."""
        if not self.downsample:
            return self.source_positions
        h = self.halved
        return self.chunks * h(h(h(self.chunk_frames)))

    def windows_of(self) -> list[int]:
        """Qwen3-Omni's attention windows, each of window_chunks chunks' positions, the last what remains
        (get_audio_cu_seqlens)."""
        h = self.halved
        size = h(h(h(self.chunk_frames))) * self.window_chunks
        whole, rest = divmod(self.tower_positions, size)
        return [size] * whole + ([rest] if rest else [])

    @property
    def tokens(self) -> int:
        """The language model's tokens one window becomes."""
        if self.block:  # each block's queries
            return self.tower_positions // self.block * self.projector.fixed
        return self.tower_positions // self.pool // self.group

    def input_terms(self, e, model, seq_len: int) -> None:
        n = self.windows
        scale = {
            "frame": Fraction(n * 2 * self.source_positions, seq_len),
            "tower": Fraction(n * self.tower_positions, seq_len),
            "projector": Fraction(n * self.tokens, seq_len),
            "chunk": Fraction(n * self.chunks, seq_len),
            "window": Fraction(n, seq_len),
            "block": Fraction(n * self.blocks, seq_len),
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
        out: list[tuple[str, object]]
        if self.downsample:
            out = self.downsample_terms(d)
        elif self.input_linear:  # GraniteSpeechCTCEncoder's input_linear, a position
            front = Emitter("layers")
            front.linear("audio.input_linear", m, d, True, 1)
            out = [("tower", t) for t in front.out]
        else:
            first, second, table = Emitter("layers"), Emitter("layers"), Emitter("embedding")
            first.term("audio.conv1.weight", "weight", (d, m, 3), macs=d * m * 3)  # 3 frames' features in, the width out
            first.term("audio.conv1.bias", "bias", (d,), elementwise=d * (1 + gelu))
            second.term("audio.conv2.weight", "weight", (d, d, 3), macs=d * d * 3)
            second.term("audio.conv2.bias", "bias", (d,), elementwise=d * (1 + gelu))
            if self.position_table:
                table.term("audio.pos_embed.weight", "position", (self.source_positions, d), elementwise=d)
            out = [("frame", t) for t in first.out] + [("tower", t) for t in second.out + table.out]
        # each position's keys: its chunk's (Qwen2.5-Omni's cu_seqlens), or the whole window's
        layer_terms = stack.terms(model, "audio.", self.chunk or self.tower_positions, 1)
        if self.downsample:  # each attention product over its window's query-key pairs, once a window
            pairs = sum(n * n for n in self.windows_of())
            out += [
                ("window", replace(t, shape=(t.shape[0], pairs, t.shape[2]), select="pairs")) if t.role == "core" else ("tower", t)
                for t in layer_terms
            ]
        else:
            out += [("tower", t) for t in layer_terms]
        final = Emitter("layers")
        if self.final_norm:
            final.norm("audio.final_norm", stack.norm, d, 1)
        if self.ctc:  # GraniteSpeechCTCEncoder: out, a softmax, out_mid added back, after layer num_layers // 2
            final.linear("audio.ctc.out", d, self.ctc, True, 1)
            final.op("audio.ctc.softmax", self.ctc * SOFTMAX_OPS)
            final.linear("audio.ctc.out_mid", self.ctc, d, True, 1)
        out += [("tower", t) for t in final.out]
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

    def downsample_terms(self, d: int) -> list[tuple[str, object]]:
        """Qwen3-Omni's Qwen3OmniMoeAudioEncoder front: conv2d1 (1 channel in), conv2d2 and conv2d3 (each of kernel 3 and
        stride 2 over a chunk's frequencies and frames, with a bias and GELU), each output a matmul of 3 × 3 inputs of
        its channels; conv_out, Linear(channels × the remaining frequencies, width) without a bias, a position each."""
        c, h, gelu = self.downsample, self.halved, ACTIVATION_OPS["gelu"]
        freq, time, inputs = self.mel_bins, self.chunk_frames, 1
        chunk = Emitter("layers")
        for k in (1, 2, 3):
            freq, time = h(freq), h(time)
            cells = freq * time  # its outputs a chunk, each channel
            chunk.term(f"audio.conv2d{k}.weight", "weight", (c, inputs, 3, 3), macs=cells * c * inputs * 9)
            chunk.term(f"audio.conv2d{k}.bias", "bias", (c,), elementwise=cells * c * (1 + gelu))
            inputs = c
        each = Emitter("layers")
        each.linear("audio.conv_out", c * freq, d, False, 1)
        return [("chunk", t) for t in chunk.out] + [("tower", t) for t in each.out]

    def per_window(self, model) -> tuple[int, int]:
        """One window's LM tokens and its forward FLOPs through the tower and the projector (2 per multiply-add of
        every matmul, convolution and attention product, as FlopCounterMode counts)."""
        counts = {"frame": 2 * self.source_positions, "tower": self.tower_positions, "projector": self.tokens, "grid": self.tokens}
        counts.update(chunk=self.chunks, window=1, block=self.blocks)
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

    from ..blocks._torch import ACTIVATIONS, make_norm
    from ..model.reference import LayerModule

    d = spec.layers.d_model
    inner = replace(spec.stack.resolve(model), mask="bidirectional")

    class AudioModule(nn.Module):
        def __init__(self):
            super().__init__()
            if spec.downsample:  # Qwen3-Omni's three 2-D convolutions and conv_out
                c, h = spec.downsample, spec.halved
                for k, inputs in ((1, 1), (2, c), (3, c)):
                    conv = nn.Conv2d(inputs, c, 3, stride=2, padding=1)
                    conv.weight_flops = True  # verify: its FLOPs are its weight's
                    setattr(self, f"conv2d{k}", conv)
                self.conv_out = nn.Linear(c * h(h(h(spec.mel_bins))), d, bias=False)
            elif spec.input_linear:  # Granite Speech's
                self.input_linear = nn.Linear(spec.mel_bins, d)
            else:
                self.conv1 = nn.Conv1d(spec.mel_bins, d, 3, padding=1)
                self.conv2 = nn.Conv1d(d, d, 3, stride=2, padding=1)
                self.conv1.weight_flops = self.conv2.weight_flops = True  # verify: their FLOPs are their weights'
            if spec.position_table:
                self.pos_embed = nn.Embedding(spec.source_positions, d)
            if spec.markers:
                self.markers = nn.Parameter(torch.empty(spec.markers, model.d_model))
            self.layers = nn.ModuleList(LayerModule(inner, layer, False) for layer in inner.layers)
            if spec.final_norm:
                self.final_norm = make_norm(spec.stack.norm, d)
            if spec.ctc:  # Granite Speech's out and out_mid after the middle layer
                self.ctc = nn.Module()
                self.ctc.out, self.ctc.out_mid = nn.Linear(d, spec.ctc), nn.Linear(spec.ctc, d)
            self.projector = spec.projector.module(model.d_model)

        def enter(self, x, ctx):
            if not spec.seconds:
                return x
            n = x.shape[0] * spec.windows
            if spec.downsample:  # each chunk's frames through the 2-D convolutions, its time steps its positions
                gelu = nn.functional.gelu
                chunks = torch.zeros((n * spec.chunks, 1, spec.mel_bins, spec.chunk_frames), dtype=x.dtype, device=x.device)
                c = gelu(self.conv2d3(gelu(self.conv2d2(gelu(self.conv2d1(chunks))))))
                h = self.conv_out(c.permute(0, 3, 1, 2).flatten(2)).reshape(n, spec.tower_positions, d)
                pieces = list(h.split(spec.windows_of(), dim=1))  # each window of positions attends alone
            elif spec.input_linear:  # the stacked frames a position through input_linear, each block attending alone
                h = self.input_linear(torch.zeros((n, spec.source_positions, spec.mel_bins), dtype=x.dtype, device=x.device))
                pieces = [h.reshape(-1, spec.chunk, d)]
            else:
                frames = torch.zeros((n, spec.mel_bins, 2 * spec.source_positions), dtype=x.dtype, device=x.device)
                h = nn.functional.gelu(self.conv2(nn.functional.gelu(self.conv1(frames)))).transpose(1, 2)
                if spec.position_table:
                    h = h + self.pos_embed.weight
                pieces = [h.reshape(-1, spec.chunk, d) if spec.chunk else h]  # each chunk of positions attends alone
            for i, piece in enumerate(pieces):
                inner_ctx = {"embeddings": piece}
                for k, layer in enumerate(self.layers):
                    piece = layer(piece, inner_ctx, k)
                    if spec.ctc and k + 1 == len(self.layers) // 2:  # GraniteSpeechCTCEncoder's, after layer n // 2
                        piece = piece + self.ctc.out_mid(self.ctc.out(piece).softmax(-1))
                pieces[i] = piece.reshape(n, -1, d)
            h = torch.cat(pieces, dim=1)
            h = self.final_norm(h) if spec.final_norm else h
            if spec.block:  # the Q-Former over each block of positions, its queries one row
                context = spec.projector.qformer.context  # Granite Speech Plus: layers' outputs side by side
                h = h.repeat(1, 1, context // d) if context % d == 0 else h
                for window in h:  # each window one call of the projector (its queries once a window)
                    queried = self.blocked_qformer(window.reshape(-1, spec.block, window.shape[-1]))
                    self.projector.project(queried.reshape(1, -1, spec.projector.width))
                return x
            if spec.pool > 1:
                h = nn.functional.avg_pool1d(h.transpose(1, 2), spec.pool, spec.pool).transpose(1, 2)
            self.projector(h.reshape(n, h.shape[1] // spec.group, d * spec.group))
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

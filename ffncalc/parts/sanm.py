"""The SAN-M audio encoder and its adaptor (Gao et al. 2020, "SAN-M: Memory Equipped Self-Attention for End-to-End
Speech Recognition"; SenseVoice's encoder, transformers 5.23's FunAsrNanoEncoder and FunAsrNanoMultiModalProjector):
the ``audio`` part's form where it states ``fsmn_kernel`` (parts/audio.py holds the part; this module its terms and its
reference modules).

- its input: the feature extractor's low-frame-rate positions, ``mel_bins`` features each (num_mel_bins ×
  num_stacked_frames: 7 frames of 80 stacked, one position every 6 frames, 60 ms), scaled by √width and a sinusoid
  table (a buffer) added: no convolutions, no table of parameters;
- its layers, pre-norm with LayerNorms: attention with q, k, v and o_proj biased, its output plus the FSMN memory of
  its values (FunAsrNanoFSMN: the values before their split into heads, through a depthwise Conv1d of ``fsmn_kernel``
  taps without a bias, zero-padded to as many positions, plus the values themselves); an MLP of fc1 and fc2 with biases;
  the first layer reads ``mel_bins`` features (its input_layernorm and q, k, v that wide) and adds no residual around
  its attention; the last transcription layer and the last of all (after ``timestamp_layers`` timestamp layers) each end in a
  LayerNorm of their own (final_layernorm);
- the projector's MLP (parts/projector.py: linear_1 → activation → linear_2, with biases), then ``adaptor``: plain
  pre-norm transformer layers of its own width (FunAsrNanoEncoderLayer without FSMN), bidirectional;
- a token of the language model each position (pooler_output: the positions of the audio)."""

from __future__ import annotations

from dataclasses import replace

from ..model.spec import Norm
from ..model.terms import Emitter

LAYERNORM = Norm(kind="layernorm")


def sanm_terms(audio, model, positions: int) -> list[tuple[str, object]]:
    """Every term of the encoder, the projector and the adaptor over a window of ``positions`` positions, each with
    what it runs over ("tower": a position; "projector": a token it writes, one a position)."""
    d, first, n_layers = audio.layers.d_model, audio.mel_bins, audio.layers.n_layers
    stack = audio.stack
    out: list[tuple[str, object]] = []
    scale = Emitter("layers")
    scale.op("audio.input_scale", 2 * first, 1)  # × √width, + the sinusoid table's row
    out += [("tower", t) for t in scale.out]
    later = replace(stack, n_layers=n_layers - 1)
    one = replace(stack, n_layers=1)
    out += [("tower", t) for t in (later.terms(model, "audio.", positions, 1) if n_layers > 1 else [])]
    for t in one.terms(model, "audio.", positions, 1):  # the first layer: q, k and v read the input's features
        if t.name in ("audio.attn.q.weight", "audio.attn.k.weight", "audio.attn.v.weight"):
            t = replace(t, shape=(d, first), numel=d * first, macs=d * first)
        elif t.name == "audio.norms":  # its input_layernorm over the input's features, post_attention_layernorm over d
            norm = Emitter("layers")
            norm.norm("audio.norms", stack.norm, first, 1)
            norm.norm("audio.norms", stack.norm, d, 1)
            out += [("tower", u) for u in norm.out]
            continue
        elif t.name == "audio.residual":  # the FFN's add alone
            t = replace(t, elementwise=t.elementwise // 2)
        out.append(("tower", t))
    fsmn = Emitter("layers", (0, n_layers))
    k = audio.fsmn_kernel
    fsmn.term("audio.attn.fsmn.weight", "weight", (d, 1, k), n_layers, macs=n_layers * d * k)
    fsmn.op("audio.attn.fsmn.add", n_layers * 2 * d)  # the values added to the memory, and to attention's output
    out += [("tower", replace(t, layers=None)) for t in fsmn.out]
    norms = Emitter("layers")
    norms.norm("audio.norms", stack.norm, d, len(_norm_layers(audio)))
    out += [("tower", t) for t in norms.out]
    out += audio.projector.terms(model.d_model, "audio.projector.", 0)
    if audio.adaptor is not None:
        adaptor = adaptor_stack(audio)
        out += [("projector", t) for t in adaptor.terms(model, "audio.projector.adaptor.", positions, 1)]
    return out


def adaptor_stack(audio):
    """The adaptor's layers as a stack: bidirectional, no positions, LayerNorms."""
    assert audio.adaptor is not None
    return replace(audio.adaptor, mask="bidirectional", positions="none", norm=audio.adaptor.norm or LAYERNORM)


def sanm_module(spec, model):
    """The encoder, the projector and the adaptor: ``enter`` runs the sequence's windows of zeros through them (their
    output is not placed: the FLOPs are what is proven); the language model's input passes through unchanged."""
    import torch
    from torch import nn

    from ..blocks._torch import ACTIVATIONS, Linear, MatMul, make_norm
    from ..model.reference import LayerModule

    d, first = spec.layers.d_model, spec.mel_bins
    attention, ffn = spec.layers.attention, spec.layers.ffn
    heads = attention.n_heads
    norm = spec.stack.norm

    class Attention(nn.Module):
        def __init__(self, width: int):
            super().__init__()
            self.q, self.k, self.v = (Linear(width, d, bias=True) for _ in range(3))
            self.scores, self.values = MatMul(), MatMul()
            self.o = Linear(d, d, bias=True)
            self.fsmn = nn.Conv1d(d, d, spec.fsmn_kernel, groups=d, bias=False)
            self.fsmn.weight_flops = True  # verify: its FLOPs are its weight's

        def forward(self, x):
            b, n, _ = x.shape
            q, k, v = (t.view(b, n, heads, d // heads).transpose(1, 2) for t in (self.q(x), self.k(x), self.v(x)))
            values = v.transpose(1, 2).reshape(b, n, d)
            p = (self.scores(q, k.transpose(-2, -1)) * (d // heads) ** -0.5).softmax(-1)
            out = self.o(self.values(p, v).transpose(1, 2).reshape(b, n, d))
            left = (spec.fsmn_kernel - 1) // 2
            padded = nn.functional.pad(values.transpose(1, 2), (left, spec.fsmn_kernel - 1 - left))
            return out + self.fsmn(padded).transpose(1, 2) + values

    class FFN(nn.Module):
        def __init__(self):
            super().__init__()
            self.up, self.down = Linear(d, ffn.d_ff, bias=True), Linear(ffn.d_ff, d, bias=True)
            self.act = ACTIVATIONS[ffn.activation]

        def forward(self, x):
            return self.down(self.act(self.up(x)))

    last = _norm_layers(spec)

    class Layer(nn.Module):
        def __init__(self, i: int):
            super().__init__()
            width = first if i == 0 else d
            self.norms = nn.ModuleList([make_norm(norm, width), make_norm(norm, d)] + ([make_norm(norm, d)] if i in last else []))
            self.attn, self.ffn = Attention(width), FFN()

        def forward(self, x):  # FunAsrNanoEncoderLayer.forward: no residual where the input is not d wide
            h = self.attn(self.norms[0](x))
            x = h if x.shape[-1] != d else x + h
            x = x + self.ffn(self.norms[1](x))
            return self.norms[2](x) if len(self.norms) == 3 else x

    adaptor = replace(adaptor_stack(spec).resolve(model), mask="bidirectional") if spec.adaptor is not None else None

    class SanmModule(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList(Layer(i) for i in range(spec.layers.n_layers))
            self.projector = spec.projector.module(model.d_model)
            if adaptor is not None:
                self.projector.adaptor = nn.Module()
                self.projector.adaptor.layers = nn.ModuleList(LayerModule(adaptor, layer, False) for layer in adaptor.layers)

        def enter(self, x, ctx):
            if not spec.seconds:
                return x
            n = x.shape[0] * spec.windows
            h = torch.zeros((n, spec.source_positions, first), dtype=x.dtype, device=x.device)
            for layer in self.layers:
                h = layer(h)
            h = self.projector(h)
            if adaptor is not None:
                inner = {"embeddings": h}
                for k, layer in enumerate(self.projector.adaptor.layers):
                    h = layer(h, inner, k)
            return x

    return SanmModule()


def _norm_layers(spec) -> set[int]:
    """The layers that end in a LayerNorm of their own (final_layernorm): FunAsrNanoEncoder's last transcription layer
    and its last timestamp layer (the last of all: 49 and 69 of Fun-ASR-Nano's 70, 20 of them timestamp layers)."""
    n = spec.layers.n_layers
    return {n - spec.timestamp_layers - 1, n - 1}

"""VibeVoice's audio tower (the spec's ``vibevoice_audio``; Peng et al. 2025, "VibeVoice Technical Report", §2), as
transformers 5.23's VibeVoiceAsrModel builds and runs it: the acoustic and the semantic tokenizer encoders
(VibeVoiceAcousticTokenizerEncoderModel, the second only narrower in its latents) over the same 24 kHz samples, each
through a projector of its own, their outputs added into one token of the language model per ``hop`` samples.

Each encoder (``ratios`` r₀ … r₅, ``depths`` d₀ … d₆, ``filters`` f, ``kernel`` k, ``expansion`` e):

- the stem: a causal Conv1d(channels, f, k) with a bias over the samples, then d₀ ConvNeXt-1d layers of width f;
- for each ratio rᵢ, a causal Conv1d(f·2ⁱ, f·2ⁱ⁺¹, 2·rᵢ, stride rᵢ) with a bias, then dᵢ₊₁ ConvNeXt-1d layers of width
  f·2ⁱ⁺¹, each position of the stage one of every rᵢ before;
- each ConvNeXt-1d layer (VibeVoiceAcousticTokenizerConvNext1dLayer) of width w: an RMSNorm, a depthwise causal
  Conv1d(w, w, k, groups w) with a bias, × gamma (w), added back; an RMSNorm, linear1 (w → e·w) → GELU → linear2 (e·w →
  w) with biases, × ffn_gamma (w), added back;
- the head: a causal Conv1d(f·2⁶, latent width, k) with a bias, a latent per ``hop`` = ∏ rᵢ samples (3,200: 7.5 a
  second).

Causal padding (k − s on the left, zeros or the previous chunk's samples through the padding cache) makes each
convolution's outputs its input's positions over its stride: audio split into chunks of ``chunk`` samples (60 s) runs
the same work as in one piece. The projector (VibeVoiceAsrMultiModalProjector), a token each latent: acoustic_linear_1
(acoustic width → text width) → RMSNorm → acoustic_linear_2 (text → text), with biases; the same for the semantic
latents; the two added.

VibeVoice's form (``speech``; VibeVoiceForConditionalGeneration): its forward runs the acoustic encoder in one piece
and its connector (multi_modal_projector) alone; the semantic encoder and connector, the acoustic decoder (a causal
Conv1d stem, ConvTranspose1d(w, w / 2, 2r, stride r) upsamplers for the ratios reversed between the stages reversed, a
head to the channels) and the diffusion head are held for generation, each generated latent ``diffusion_steps``
denoising steps of two rows (classifier-free guidance).

FLOPs: ``seconds`` of audio a sequence, padded to whole hops (the processor's padding; a token per hop), charged per
token of the sequence as parts/audio.py charges a window's. 2 FLOPs per multiply-add of every convolution and linear."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from math import prod

from ..model.schema import NonNegative, Positive, SpecError
from ..model.spec import Norm
from ..model.terms import ACTIVATION_OPS, Emitter
from . import Part, register

RMSNORM = Norm(kind="rmsnorm")
ENCODERS = ("acoustic", "semantic")


@register
@dataclass(frozen=True)
class VibeVoiceAudio(Part):
    key = "vibevoice_audio"
    beside = True
    prefix = "audio"
    order = 4
    summary = (
        "VibeVoice's acoustic and semantic tokenizer encoders (causal Conv1d downsamplers between stages of ConvNeXt-1d "
        "layers) over 24 kHz samples, each through its own projector, added a token (VibeVoice-ASR)"
    )

    width: Positive  # the language model's (text_config.hidden_size)
    acoustic: Positive = 64  # the acoustic encoder's latent width (its hidden_size)
    semantic: Positive = 128  # the semantic encoder's
    channels: Positive = 1
    filters: Positive = 32  # num_filters: the stem's width, doubled by every downsampler
    kernel: Positive = 7
    ratios: tuple[Positive, ...] = (2, 2, 4, 5, 5, 8)  # downsampling_ratios
    depths: tuple[Positive, ...] = (3, 3, 3, 3, 3, 3, 8)  # ConvNeXt-1d layers a stage: the stem's and one a downsampler
    expansion: Positive = 4  # ffn_expansion
    activation: str = "gelu"
    sample_rate: Positive = 24000
    chunk: Positive = 1440000  # acoustic_tokenizer_chunk_size: samples an encoder call (60 s)
    seconds: NonNegative = 0  # audio a sequence, for the FLOPs
    # VibeVoice's (VibeVoiceForConditionalGeneration): its forward runs the acoustic encoder and its projector alone,
    # the semantic encoder and connector held for generation; the acoustic decoder (``decoder``), the diffusion head
    # (``diffusion_layers`` adaptive-norm layers of ``diffusion_intermediate``) and the two latent factors beside them
    speech: bool = False
    decoder: bool = False
    diffusion_layers: NonNegative = 0
    diffusion_intermediate: NonNegative = 0
    frequency: Positive = 256  # the diffusion head's sinusoidal timestep features (frequency_embedding_size)
    diffusion_steps: Positive = 10  # VibeVoice's generation default (num_diffusion_steps)

    takes = ("audio_seconds",)

    def check(self, spec) -> None:
        if len(self.depths) != len(self.ratios) + 1:
            stated, need = len(self.depths), len(self.ratios) + 1
            raise SpecError(("vibevoice_audio", "depths"), f"{stated} stages where {need - 1} downsamplers need {need}")
        if self.chunk % self.hop:
            raise SpecError(("vibevoice_audio", "chunk"), f"{self.chunk} samples are not whole hops of {self.hop}")

    def given(self, **inputs) -> VibeVoiceAudio:
        seconds = inputs.get("audio_seconds")
        return self if seconds is None else replace(self, seconds=seconds)

    @property
    def hop(self) -> int:
        """Samples a latent (a token): the product of the ratios (3,200)."""
        return prod(self.ratios)

    def tokens_of(self, samples: int) -> int:
        """Tokens ``samples`` of audio become, padded to whole hops."""
        return -(-samples // self.hop)

    @property
    def samples(self) -> int:
        """The sequence's audio, in samples."""
        return int(self.seconds * self.sample_rate)

    def request_tokens(self) -> int:
        return self.tokens_of(self.samples)

    def widths(self) -> list[int]:
        """Each stage's width: the stem's, then each downsampler's."""
        return [self.filters * 2**i for i in range(len(self.depths))]

    def units(self, tokens: int) -> dict[str, int]:
        """What each term runs over for ``tokens`` tokens of audio (tokens × hop samples): each stage's positions
        (``stage0`` the samples, ``stageN`` one of every r₀ ⋯ rₙ₋₁), and a token (the heads and the projector)."""
        out, n = {}, tokens * self.hop
        for i in range(len(self.depths)):
            out[f"stage{i}"] = n
            n //= self.ratios[i] if i < len(self.ratios) else 1
        out["token"] = tokens
        out["idle"] = 0  # held, not run by the forward (VibeVoice's semantic path, decoder and diffusion head)
        return out

    def encoder_terms(self, name: str, latent: int) -> list[tuple[str, object]]:
        """One encoder's terms, each with the stage whose positions it runs over."""
        out: list[tuple[str, object]] = []
        k, e, act = self.kernel, self.expansion, ACTIVATION_OPS[self.activation]
        widths = self.widths()
        for i, (w, depth) in enumerate(zip(widths, self.depths)):
            stage = Emitter("layers")
            c_in, kernel = (self.channels, k) if i == 0 else (widths[i - 1], 2 * self.ratios[i - 1])
            conv = f"audio.{name}.stem" if i == 0 else f"audio.{name}.down{i - 1}"
            # the stem's Conv1d, or downsampler i − 1's (stride rᵢ₋₁): each output position a matmul of c_in × kernel in
            stage.term(f"{conv}.weight", "weight", (w, c_in, kernel), macs=w * c_in * kernel)
            stage.term(f"{conv}.bias", "bias", (w,), elementwise=w)
            p = f"audio.{name}.stage{i}"
            stage.norm(f"{p}.norms", RMSNORM, w, 2 * depth)  # norm and ffn_norm
            stage.term(f"{p}.mixer.weight", "weight", (w, 1, k), depth, macs=depth * w * k)  # depthwise: k taps a channel
            stage.term(f"{p}.mixer.bias", "bias", (w,), depth, elementwise=depth * w)
            stage.linear(f"{p}.ffn.linear1", w, e * w, True, depth)
            stage.op(f"{p}.ffn.act", depth * e * w * act, depth)
            stage.linear(f"{p}.ffn.linear2", e * w, w, True, depth)
            # gamma and ffn_gamma: each sublayer's output scaled, then added back
            stage.term(f"{p}.gammas", "weight", (2, w), depth, elementwise=depth * 2 * 2 * w)
            out += [(f"stage{i}", t) for t in stage.out]
        head = Emitter("layers")
        head.term(f"audio.{name}.head.weight", "weight", (latent, widths[-1], k), macs=latent * widths[-1] * k)
        head.term(f"audio.{name}.head.bias", "bias", (latent,), elementwise=latent)
        out += [(f"stage{len(widths) - 1}", t) for t in head.out]
        return out

    def projector_terms(self) -> list[tuple[str, object]]:
        """VibeVoiceAsrMultiModalProjector's, a token each: each encoder's linear_1 → RMSNorm → linear_2, added."""
        out: list[tuple[str, object]] = []
        d = self.width
        for name, latent in zip(ENCODERS, (self.acoustic, self.semantic)):
            e = Emitter("layers")
            e.linear(f"audio.projector.{name}_linear_1", latent, d, True, 1)
            e.norm(f"audio.projector.{name}_norm", RMSNORM, d, 1)
            e.linear(f"audio.projector.{name}_linear_2", d, d, True, 1)
            out += [("idle" if self.speech and name == "semantic" else "token", t) for t in e.out]
        if not self.speech:  # VibeVoice-ASR's two projections added
            e = Emitter("layers")
            e.op("audio.projector.add", d, 1)
            out += [("token", t) for t in e.out]
        return out

    def decoder_terms(self) -> list[tuple[str, object]]:
        """The acoustic decoder's (VibeVoiceAcousticTokenizerDecoderModel, held: generation decodes its latents): a
        causal Conv1d(latent, f·2⁶, k) stem and the depths reversed of ConvNeXt-1d layers, each upsampler a causal
        ConvTranspose1d(w, w / 2, 2r, stride r) for r in the ratios reversed, a head Conv1d(f, channels, k)."""
        e, k, x = Emitter("layers"), self.kernel, self.expansion
        widths, depths, ratios = self.widths()[::-1], self.depths[::-1], self.ratios[::-1]
        e.term("audio.decoder.stem.weight", "weight", (widths[0], self.acoustic, k))
        e.term("audio.decoder.stem.bias", "bias", (widths[0],))
        for i, (w, depth) in enumerate(zip(widths, depths)):
            if i:
                e.term(f"audio.decoder.up{i - 1}.weight", "weight", (widths[i - 1], w, 2 * ratios[i - 1]))
                e.term(f"audio.decoder.up{i - 1}.bias", "bias", (w,))
            p = f"audio.decoder.stage{i}"
            e.norm(f"{p}.norms", RMSNORM, w, 2 * depth)
            e.term(f"{p}.mixer.weight", "weight", (w, 1, k), depth)
            e.term(f"{p}.mixer.bias", "bias", (w,), depth)
            e.linear(f"{p}.ffn.linear1", w, x * w, True, depth)
            e.linear(f"{p}.ffn.linear2", x * w, w, True, depth)
            e.term(f"{p}.gammas", "weight", (2, w), depth)
        e.term("audio.decoder.head.weight", "weight", (self.channels, widths[-1], k))
        e.term("audio.decoder.head.bias", "bias", (self.channels,))
        return [("idle", t) for t in e.out]

    def diffusion_terms(self) -> list[tuple[str, object]]:
        """VibeVoiceDiffusionHead's, one row (a latent being denoised) one step: noisy_images_proj (latent → d),
        cond_proj (d → d), timestep_proj fc1 (frequency → d) → SiLU → fc2 (d → d); each layer a linear d → 3d over the
        SiLU of the condition (shift, scale, gate), an RMSNorm and a SwiGLU MLP (d → intermediate, no biases); the final
        layer's linear_1 d → 2d (shift, scale) and linear_2 d → latent. No biases anywhere."""
        e, d, m, n = Emitter("layers"), self.width, self.diffusion_intermediate, self.diffusion_layers
        e.linear("audio.diffusion.noisy_images_proj", self.acoustic, d, False, 1)
        e.linear("audio.diffusion.cond_proj", d, d, False, 1)
        e.linear("audio.diffusion.timestep_proj.fc1", self.frequency, d, False, 1)
        e.linear("audio.diffusion.timestep_proj.fc2", d, d, False, 1)
        e.linear("audio.diffusion.blocks.linear", d, 3 * d, False, n)
        e.norm("audio.diffusion.blocks.norm", RMSNORM, d, n)
        e.linear("audio.diffusion.blocks.ffn.gate_proj", d, m, False, n)
        e.linear("audio.diffusion.blocks.ffn.up_proj", d, m, False, n)
        e.linear("audio.diffusion.blocks.ffn.down_proj", m, d, False, n)
        e.linear("audio.diffusion.final_layer.linear_1", d, 2 * d, False, 1)
        e.linear("audio.diffusion.final_layer.linear_2", d, self.acoustic, False, 1)
        return [("idle", t) for t in e.out]

    def diffusion_step_flops(self) -> int:
        """One row's forward FLOPs through the diffusion head, one denoising step (2 per multiply-add). A generated
        latent runs diffusion_steps steps of two rows (classifier-free guidance: the positive and negative
        conditions in one batch, VibeVoiceGenerationMixin._sample_audio_latent)."""
        return sum(2 * t.macs for _, t in self.diffusion_terms())

    def window_terms(self) -> list[tuple[str, object]]:
        """Every term of the two encoders and the projector, each with what it runs over (``units``)."""
        semantic = self.encoder_terms("semantic", self.semantic)
        if self.speech:  # held for generation: the forward runs the acoustic encoder alone
            semantic = [("idle", t) for _, t in semantic]
        out = self.encoder_terms("acoustic", self.acoustic) + semantic + self.projector_terms()
        if self.decoder:
            out += self.decoder_terms()
        if self.diffusion_layers:
            out += self.diffusion_terms()
        if self.speech:  # latent_scaling_factor and latent_bias_factor
            e = Emitter("layers")
            e.term("audio.latent_factors", "weight", (2,))
            out += [("token", t) for t in e.out]
        return out

    def input_terms(self, e, model, seq_len: int) -> None:
        # the audio's work, not a token's: no token of the sequence passes through the tower (no active parameters)
        units = self.units(self.request_tokens())
        for where, t in self.window_terms():
            e.out.append(replace(t, positions=Fraction(units[where], seq_len), per_sequence=True, active_count=0))

    def flops(self, tokens: int) -> int:
        """Forward FLOPs of ``tokens`` tokens of audio (tokens × hop samples) through the two encoders and the
        projector: 2 per multiply-add of every convolution and linear, as FlopCounterMode counts."""
        units = self.units(tokens)
        return sum(2 * units[where] * t.macs for where, t in self.window_terms())

    def note(self, spec) -> str:
        hop_ms = Fraction(1000 * self.hop, self.sample_rate)
        where = "none in the FLOPs per token (--audio-seconds)"
        where = f"{self.seconds} s a sequence, in the FLOPs per token" if self.seconds else where
        a_minute = self.tokens_of(60 * self.sample_rate)
        through = "the acoustic encoder and its projector" if self.speech else "the two encoders and the projector"
        text = (
            f"audio tower: a token every {float(hop_ms):g} ms ({self.hop:,} samples at {self.sample_rate:,} Hz); 60 s is "
            f"{a_minute:,} tokens and {self.flops(a_minute):,} forward FLOPs through {through}; audio: {where}"
        )
        if self.diffusion_layers:  # generation's, not the forward's
            step = self.diffusion_step_flops()
            text += (
                f"; diffusion head (generation): {step:,} FLOPs a step a row, {2 * self.diffusion_steps * step:,} a generated "
                f"latent ({self.diffusion_steps} steps of two rows, classifier-free guidance)"
            )
        return text

    def model_module(self, model):
        return _module(self)


def _module(spec: VibeVoiceAudio):
    """The two encoders and the projector: ``enter`` runs the sequence's audio (zeros, padded to whole hops) through
    them in chunks of ``chunk`` samples, each convolution's left padding the previous chunk's inputs (their output is
    not placed: the FLOPs are what is proven); the language model's input passes through unchanged."""
    import torch
    from torch import nn

    from ..blocks._torch import ACTIVATIONS, Linear, make_norm

    k, e = spec.kernel, spec.expansion

    def conv(c_in: int, c_out: int, kernel: int, stride: int = 1, groups: int = 1):
        c = nn.Conv1d(c_in, c_out, kernel, stride, groups=groups)
        c.weight_flops = True  # verify: its FLOPs are its weight's
        return c

    class ConvNext(nn.Module):
        def __init__(self, w: int):
            super().__init__()
            self.norms = nn.ModuleList([make_norm(RMSNORM, w), make_norm(RMSNORM, w)])
            self.mixer = conv(w, w, k, groups=w)
            self.ffn = nn.Module()
            self.ffn.linear1, self.ffn.linear2 = Linear(w, e * w, bias=True), Linear(e * w, w, bias=True)
            self.gammas = nn.Parameter(torch.ones(2, w))

        def forward(self, x):  # (batch, w, positions), its left padding included: the output is positions − (k − 1) long
            h = self.mixer(self.norms[0](x.transpose(1, 2)).transpose(1, 2))
            x = x[:, :, k - 1 :] + h * self.gammas[0, :, None]
            h = self.ffn.linear2(ACTIVATIONS[spec.activation](self.ffn.linear1(self.norms[1](x.transpose(1, 2)))))
            return x + h.transpose(1, 2) * self.gammas[1, :, None]

    class Encoder(nn.Module):
        def __init__(self, latent: int):
            super().__init__()
            widths = spec.widths()
            self.stem = conv(spec.channels, widths[0], k)
            for i in range(len(spec.ratios)):
                setattr(self, f"down{i}", conv(widths[i], widths[i + 1], 2 * spec.ratios[i], spec.ratios[i]))
            for i, depth in enumerate(spec.depths):
                setattr(self, f"stage{i}", nn.ModuleList(ConvNext(widths[i]) for _ in range(depth)))
            self.head = conv(widths[-1], latent, k)

        def forward(self, x):  # causal: zeros on the left of every convolution (a chunk's cache holds as many inputs)
            pad = nn.functional.pad
            x = self.stem(pad(x, (k - 1, 0)))
            for i, depth in enumerate(spec.depths):
                if i:
                    r = spec.ratios[i - 1]
                    x = getattr(self, f"down{i - 1}")(pad(x, (2 * r - r, 0)))
                for layer in getattr(self, f"stage{i}"):
                    x = layer(pad(x, (k - 1, 0)))
            return self.head(pad(x, (k - 1, 0))).transpose(1, 2)

    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            widths, depths, ratios = spec.widths()[::-1], spec.depths[::-1], spec.ratios[::-1]
            self.stem = nn.Conv1d(spec.acoustic, widths[0], k)
            for i in range(1, len(widths)):
                r = ratios[i - 1]
                setattr(self, f"up{i - 1}", nn.ConvTranspose1d(widths[i - 1], widths[i], 2 * r, r))
            for i, depth in enumerate(depths):
                setattr(self, f"stage{i}", nn.ModuleList(ConvNext(widths[i]) for _ in range(depth)))
            self.head = nn.Conv1d(widths[-1], spec.channels, k)

    class Diffusion(nn.Module):
        def __init__(self):
            super().__init__()
            d, m = spec.width, spec.diffusion_intermediate
            self.noisy_images_proj, self.cond_proj = Linear(spec.acoustic, d, bias=False), Linear(d, d, bias=False)
            self.timestep_proj = nn.Module()
            self.timestep_proj.fc1, self.timestep_proj.fc2 = Linear(spec.frequency, d, bias=False), Linear(d, d, bias=False)
            self.blocks = nn.ModuleList(nn.Module() for _ in range(spec.diffusion_layers))
            for block in self.blocks:
                block.linear, block.norm = Linear(d, 3 * d, bias=False), make_norm(RMSNORM, d)
                block.ffn = nn.Module()
                block.ffn.gate_proj, block.ffn.up_proj = Linear(d, m, bias=False), Linear(d, m, bias=False)
                block.ffn.down_proj = Linear(m, d, bias=False)
            self.final_layer = nn.Module()
            self.final_layer.linear_1 = Linear(d, 2 * d, bias=False)
            self.final_layer.linear_2 = Linear(d, spec.acoustic, bias=False)

    class VibeVoiceAudioModule(nn.Module):
        def __init__(self):
            super().__init__()
            self.acoustic, self.semantic = Encoder(spec.acoustic), Encoder(spec.semantic)
            self.projector = nn.Module()
            d = spec.width
            for name, latent in zip(ENCODERS, (spec.acoustic, spec.semantic)):
                setattr(self.projector, f"{name}_linear_1", Linear(latent, d, bias=True))
                setattr(self.projector, f"{name}_norm", make_norm(RMSNORM, d))
                setattr(self.projector, f"{name}_linear_2", Linear(d, d, bias=True))
            if spec.decoder:  # held: their parameters, no work in the forward
                self.decoder = Decoder()
            if spec.diffusion_layers:
                self.diffusion = Diffusion()
            if spec.speech:
                self.latent_factors = nn.Parameter(torch.ones(2))

        def enter(self, x, ctx):
            samples = spec.request_tokens() * spec.hop
            if not samples:
                return x
            audio = torch.zeros((x.shape[0], spec.channels, samples), dtype=x.dtype, device=x.device)
            p = self.projector
            out = []
            chunks = [audio] if spec.speech else torch.split(audio, spec.chunk, dim=-1)  # VibeVoice's: one call
            for chunk in chunks:  # each chunk alone: the work is its positions'
                a = p.acoustic_linear_2(p.acoustic_norm(p.acoustic_linear_1(self.acoustic(chunk))))
                if spec.speech:  # VibeVoice's forward: the acoustic encoder and its projector alone, in one piece
                    out.append(a)
                    continue
                s = self.semantic(chunk)
                out.append(a + p.semantic_linear_2(p.semantic_norm(p.semantic_linear_1(s))))
            return x

    return VibeVoiceAudioModule()

"""Speech2Text (Wang et al. 2020, "fairseq S2T: Fast Speech-to-Text Modeling with fairseq"): a convolutional subsampler
over filterbank frames before a Transformer encoder, and a text decoder attending to it, as transformers'
Speech2TextForConditionalGeneration builds them."""

from __future__ import annotations

from ..config import Config, family
from .bart import LAYER_MODULES, STACKS, seq2seq

TOP_MODULES = (
    (r"embed_tokens$", "embed"),
    (r"embed_positions$", "pos_embed"),
    *((rf"conv\.conv_layers\.{i}$", f"conv{i + 1}") for i in range(8)),  # the part's conv1, conv2, …
    (r"((encoder|decoder)\.)?layer_norm$", "final_norm"),  # the encoder's, read within its stack: layer_norm
)


@family("speech_to_text", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES, model_stacks=STACKS)
def speech_to_text(c: Config) -> dict:
    """Speech2TextConfig / Speech2TextForConditionalGeneration: the encoder's Conv1dSubsampler, num_conv_layers
    convolutions of conv_kernel_sizes (5, 5), stride 2 and padding k // 2, input_feat_per_channel × input_channels
    (80) channels in, conv_channels (1,024) out of each but the last and 2 × d_model out of the last, each followed by a
    GLU over the channels; then the embeddings' scale (scale_embedding: a multiply), a sinusoidal table (a buffer) and
    encoder_layers pre-norm layers with a final layer_norm. The decoder: embed_tokens (vocab_size, 10,000) tied to
    lm_head, a sinusoidal buffer, decoder_layers pre-norm layers with the cross-attention, a final layer_norm. Every
    attention's projections and the FFN's fc1 and fc2 have biases; activation_function (relu). FLOPs: the encoder over
    the source's positions, 2 ** num_conv_layers frames each."""
    kernels = c.data.get("conv_kernel_sizes", [5, 5])
    if not isinstance(kernels, list) or not kernels or not all(type(k) is int and k > 0 for k in kernels):
        raise c.fail("conv_kernel_sizes", f"expected a list of positive kernel sizes, got {kernels!r}")
    if c.int("num_conv_layers", 2) != len(kernels):
        raise c.fail("num_conv_layers", f"{c.int('num_conv_layers', 2)} convolutions with {len(kernels)} conv_kernel_sizes")
    spec = seq2seq(c, pre_norm=True, embedding_norm=False, offset=2, table="buffer")
    spec["context_length"] = c.int("max_target_positions", 1024)
    spec["encoder"] = {
        **spec["encoder"],
        "cross_bias": True,
        "kernels": tuple(kernels),
        "features": c.int("input_feat_per_channel", 80) * c.int("input_channels", 1),
        "channels": c.int("conv_channels", 1024),
    }
    return spec

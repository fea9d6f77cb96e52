"""IBM Granite 3 dense models (IBM 2024)."""

from __future__ import annotations

from ..config import alias
from . import llama  # noqa: F401  (registers llama first)

# GraniteConfig / GraniteAttention, GraniteMLP: LlamaAttention's and LlamaMLP's modules and shapes
# (attention_bias on q/k/v/o, mlp_bias, both default false; head_dim stated or hidden_size / heads) and
# LlamaConfig's defaults for every key they read; embedding_multiplier, residual_multiplier,
# attention_multiplier and logits_scaling are scalars, not parameters.
alias("granite", of="llama")
# GraniteDoclingTextModel (Granite Docling's language model): GraniteModel's layers, norms and scalar multipliers; the
# deepstack features it adds to the image's tokens after its first layers are additions, no multiply-adds
alias("granite_docling_text", of="granite")
# Granite4VisionTextModel (Granite 4 Vision's language model): GraniteModel's layers, norms and scalar multipliers; the
# deepstack and spatial features it adds to the image's tokens before some of its layers are additions, no multiply-adds
alias("granite4_vision_text", of="granite")

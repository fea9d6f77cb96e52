"""Evolla (Zhou et al. 2025; transformers' EvollaModel): Llama 3's layers, its language model's keys at the top of its
config (no text_config); its protein encoder, resampler and the adapters after some layers' MLPs are the wrapper's
(towers/evolla.py, parts/protein.py)."""

from __future__ import annotations

from ..config import Config, family
from .llama import llama


@family("evolla")
def evolla(c: Config) -> dict:
    """EvollaConfig / EvollaDecoderLayer, EvollaAttention, EvollaMLP: LlamaDecoderLayer's form (attention_bias on q, k, v
    and o and mlp_bias, both default false; RMSNorms before each sublayer; an untied head)."""
    return llama(c)

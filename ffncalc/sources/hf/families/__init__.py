"""One module per Hugging Face model family; importing this package registers them all."""

from . import deepseek, gemma, gpt2, gpt_neox, llama, mistral, olmo, phi, qwen  # noqa: F401

"""π0's forward as transformers runs it (PI0ForConditionalGeneration.forward, models/pi0/modeling_pi0.py): one image
through PaliGemma's tower and projector into the prefix, the prefix through its language model (the KV cache), then the
state and action chunk through the action-time embedding, the action expert (every layer reading the prefix's cache
and its own keys) and action_out_proj, FlopCounterMode over it, built small on the CPU with real tensors."""

from __future__ import annotations

PI0_METHOD = (
    "torch.utils.flop_counter.FlopCounterMode over PI0ForConditionalGeneration.forward(state, noise, timestep, input_ids, "
    "pixel_values, pixel_attention_mask, attention_mask) of the whole class built small (the record's reduced) on the "
    "CPU, eager attention: one camera's image of image_size pixels whose tokens begin a prefix of prefix tokens, the "
    "state and chunk_size actions after it; 2 FLOPs per multiply-add of every matmul, summed per module (vision: the "
    "tower and projector; text: PaliGemma's language model over the prefix; expert: the dit over the state and actions, "
    "its attention over the prefix's keys too; projections: the action-time embedding and action_out_proj)"
)
# Small widths (the kv heads' and head_dim of the two stacks agree: the expert's attention reads the prefix's cache)
PI0_REDUCED = {
    "vlm_config": {
        "text_config": {
            "model_type": "gemma",
            "hidden_size": 64,
            "num_hidden_layers": 2,
            "intermediate_size": 96,
            "num_attention_heads": 4,
            "num_key_value_heads": 1,
            "head_dim": 16,
            "vocab_size": 512,
        },
        "vision_config": {
            "model_type": "siglip_vision_model",
            "hidden_size": 32,
            "num_hidden_layers": 1,
            "intermediate_size": 48,
            "num_attention_heads": 2,
            "patch_size": 14,
            "image_size": 28,
            "vision_use_head": False,
        },
        "projection_dim": 64,
        "hidden_size": 64,
    },
    "dit_config": {
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "intermediate_size": 80,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "head_dim": 16,
    },
    "chunk_size": 6,
    "max_action_dim": 8,
    "max_state_dim": 12,
}
PI0_PREFIXES = (9, 14)  # prefix tokens of the two runs: the image's 4 and text's


def reduced_pi0(data: dict) -> dict:
    """``data`` with PI0_REDUCED's keys set, a sub-config's merged into the one it states."""

    def merge(base: dict, over: dict) -> dict:
        out = dict(base)
        for key, value in over.items():
            out[key] = merge(out.get(key) or {}, value) if isinstance(value, dict) else value
        return out

    return merge(data, PI0_REDUCED)


def pi0_flops(data: dict, prefix: int) -> dict:
    """FLOPs of one forward over a prefix of ``prefix`` tokens (one image's first), by part."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from .hfwhole import instantiate_whole

    torch.manual_seed(0)
    net = instantiate_whole(data, "cpu").eval()
    config = net.config
    vision = config.vlm_config.vision_config
    tokens = (vision.image_size // vision.patch_size) ** 2
    ids = torch.full((1, prefix), 1, dtype=torch.long)
    ids[0, :tokens] = config.vlm_config.image_token_id
    inputs = {
        "state": torch.zeros(1, config.max_state_dim),
        "noise": torch.zeros(1, config.chunk_size, config.max_action_dim),
        "timestep": torch.full((1,), 0.5),
        "input_ids": ids,
        "pixel_values": torch.zeros(1, 1, 3, vision.image_size, vision.image_size),
        "pixel_attention_mask": torch.ones(1, 1, dtype=torch.bool),
        "attention_mask": torch.ones(1, prefix, dtype=torch.long),
    }
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        net(**inputs)
    counts = {k: sum(v.values()) for k, v in counter.get_flop_counts().items()}
    top = type(net).__name__
    vlm = f"{top}.model.vlm"
    parts = {
        "vision": counts.get(f"{vlm}.vision_tower", 0) + counts.get(f"{vlm}.multi_modal_projector", 0),
        "text": counts.get(f"{vlm}.language_model", 0),
        "expert": counts.get(f"{top}.model.dit", 0),
        "projections": counts.get(f"{top}.embed_action_time", 0) + counts.get(f"{top}.action_out_proj", 0),
    }
    return {"prefix": prefix, "image_tokens": tokens, "total": counts["Global"], "parts": parts}

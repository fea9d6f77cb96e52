"""One forward of a transformers class under torch's FlopCounterMode on the meta device: every counted op's FLOPs
with the module it ran in and the parameter it multiplies, and the stand-ins meta tensors need (a fixed routing, an
unpadded sequence's answers). ``hfcheck`` compares the runs with the counts. Imports torch and transformers when run.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from .records import compact

# How the FLOPs are measured, recorded with them. Each stand-in below changes no matmul's shape.
FLOP_METHOD = (
    "torch.utils.flop_counter.FlopCounterMode over one forward of the class (use_cache=False) on the meta device, "
    "input_ids of shape (batch, seq_len), counting what it has formulas for (matmuls, convolutions, attention "
    "kernels: 2 per multiply-add); each counted op's FLOPs with the module it ran in and the parameter whose "
    "weights it multiplies (a tensor derived from a parameter alone carries it), or none: a product of "
    "activations. Eager attention. Routed experts as transformers' batched_mm implementation where the class "
    "offers it (each token's top_k experts); where it does not, the class's own experts forward with the router's "
    "choice replaced by a fixed one, token t's j-th expert (t*top_k + j) mod n_experts, every token meeting exactly "
    "top_k experts. Data-dependent checks that meta tensors cannot answer are given the answer for one unpadded "
    "sequence at positions 0..seq_len-1: no packed sub-sequences (masking_utils.find_packed_sequence_indices -> "
    "None), and a dynamic or long RoPE keeps its initial frequencies (its forward unwrapped; seq_len is within the "
    "original context). Matrix ops FlopCounterMode has no formula for are listed as uncounted where they ran."
)


# Ops that multiply matrices but that FlopCounterMode has no formula for: recorded where they run, uncounted.
UNCOUNTED_OPS = frozenset(
    {"linalg_solve_triangular", "triangular_solve", "linalg_solve", "cholesky_solve", "_grouped_mm", "mv", "dot", "vdot"}
)


@dataclass(frozen=True)
class FlopRun:
    """One forward's FLOPs: (module path, parameter multiplied or "", op, FLOPs), summed per such key; and
    (module path, op) for every op of UNCOUNTED_OPS that ran."""

    batch: int
    seq_len: int
    modules: tuple[tuple[str, str, str, int], ...]
    uncounted: tuple[tuple[str, str], ...] = ()

    def record(self) -> dict:
        return {"batch": self.batch, "seq_len": self.seq_len, "modules": compact(self.modules), "uncounted": compact(self.uncounted)}


def flop_run(net, batch: int, seq_len: int) -> FlopRun:
    """One forward under FlopCounterMode; every counted op's FLOPs with the module it ran in and the parameter
    whose weights it multiplies (or none: a product of activations, such as QKᵀ)."""
    import contextlib
    import inspect
    from unittest import mock

    import torch
    import transformers.masking_utils
    from torch.utils.flop_counter import FlopCounterMode

    hooks, fixed = [], False
    for module in net.modules():
        forward = type(module).forward
        rope = str(getattr(module, "rope_type", ""))
        if hasattr(module, "original_max_seq_len") and ("dynamic" in rope or "longrope" in rope):
            if seq_len > module.original_max_seq_len:
                raise ValueError(f"seq_len {seq_len} is past the RoPE's original context")
            module.forward = inspect.unwrap(forward).__get__(module)  # the frequency update is a no-op here
        named = inspect.signature(forward).parameters
        if "top_k_index" in named and not hasattr(module, "has_gate"):
            hooks.append(module.register_forward_pre_hook(_fixed_routing, with_kwargs=True))
            fixed = True
        elif "selected_experts" in named and "routing_weights" in named:  # the choice as a one-hot mask (Switch)
            hooks.append(module.register_forward_pre_hook(_fixed_mask, with_kwargs=True))
            fixed = True
        elif "router_mask" in named and "router_probs" in named:  # the first choice as a one-hot mask (NLLB-MoE)
            hooks.append(module.register_forward_pre_hook(_fixed_top1, with_kwargs=True))
            fixed = True
    stand_in = contextlib.nullcontext()
    if getattr(net.config, "model_type", None) == "longformer":
        # LongformerEncoder asks whether any token is global (.item()) and LongformerModel marks the global ones in its
        # mask by a boolean index: an unpadded sequence's answers, a real all-local mask and no token global
        hooks.append(net.base_model.register_forward_pre_hook(_local_mask, with_kwargs=True))
        stand_in = mock.patch.object(sys.modules[type(net).__module__], "create_bidirectional_mask", _open_mask)
        fixed = True
    for module in net.modules():  # LayerDrop (Fan et al. 2019) skips layers at random in training: none skipped
        if isinstance(getattr(module, "layerdrop", None), float):
            module.layerdrop = 0.0
    # BigBird-Pegasus's encoder switches itself to full attention for good on a sequence too short for its blocks
    # (BigBirdPegasusEncoder.forward: set_attention_type("original_full")): the switch its forward would make here, made
    # before the run, from the configured type (so its modules are named, and an earlier shorter run does not stick)
    config = net.config
    for module in net.modules():
        if hasattr(type(module), "set_attention_type") and hasattr(module, "layers"):
            short = seq_len <= (5 + 2 * config.num_random_blocks) * config.block_size
            module.set_attention_type("original_full" if short else config.attention_type)
    # Longformer's and LED's encoders ask whether any token is global (is_index_global_attn.any().item()): an
    # unpadded sequence given no global_attention_mask has none, the answer for a meta boolean scalar there
    global_question = any(hasattr(type(m), "_pad_to_window_size") for m in net.modules())
    item = torch.Tensor.item

    def answered(t):
        return False if t.device.type == "meta" and t.dtype == torch.bool and t.numel() == 1 else item(t)

    tokens = torch.zeros((batch, seq_len), dtype=torch.long, device="meta")
    counter = FlopCounterMode(display=False)
    attribution = _attribution(net, counter, fixed)
    # no autograd graph (the same ops, faster), but where the experts' own loop runs: DBRX's asks for one
    # and where a module returns a view of a parameter made under no_grad (PerceiverEmbeddings' latents.expand), which
    # the counter's module tracker cannot hook a backward onto
    autograd = fixed or getattr(net.config, "model_type", None) == "perceiver"
    grad = contextlib.nullcontext() if autograd else torch.no_grad()
    try:
        with (
            mock.patch.object(transformers.masking_utils, "find_packed_sequence_indices", lambda ids: None),
            # FSMT's make_padding_mask asks padding_mask.any(): an unpadded sequence's answer, no mask
            mock.patch.object(sys.modules[type(net).__module__], "make_padding_mask", lambda *a: None, create=True),
            # an unpadded sequence: no warning to give on padding without an attention mask (RemBERT and Megatron-BERT
            # look for the pad token among the ids, which meta tensors cannot answer)
            mock.patch.object(transformers.PreTrainedModel, "warn_if_padding_and_no_attention_mask", lambda *a: None),
            # and an all-ones padding mask, which masks nothing: the bidirectional mask is skipped where no window
            # applies, as transformers skips it for such a mask (masking_utils._ignore_bidirectional_mask_sdpa)
            mock.patch.object(
                transformers.masking_utils,
                "_ignore_bidirectional_mask_sdpa",
                lambda mask, kv_length, local: local is None or kv_length < local,
            ),
            mock.patch.object(torch.Tensor, "item", answered) if global_question else contextlib.nullcontext(),
            grad,
            stand_in,
            counter,
            attribution,
        ):
            # an encoder-decoder: the decoder reads a sequence as long as the source (the tokens again)
            extra = {"decoder_input_ids": tokens} if getattr(net.config, "is_encoder_decoder", False) else {}
            channels = getattr(getattr(net.config, "decoder_config", None), "num_channels", None)
            if channels:  # Dia: the decoder reads frames of every channel's code, (batch, seq_len, num_channels)
                extra = {"decoder_input_ids": torch.zeros((batch, seq_len, channels), dtype=torch.long, device="meta")}
            if net.main_input_name == "input_features" and hasattr(net.config, "num_conv_layers"):
                # Speech2Text: filterbank frames, 2 ** num_conv_layers a source position (each conv of stride 2)
                c = net.config
                dtype = next(net.parameters()).dtype
                shape = (batch, seq_len * 2**c.num_conv_layers, c.input_feat_per_channel * c.input_channels)
                net(input_features=torch.zeros(shape, dtype=dtype, device="meta"), use_cache=False, **extra)
            elif net.config.model_type in ("speech-encoder-decoder", "speecht5"):
                # over wav2vec 2.0's features (a speech encoder-decoder's encoder, SpeechT5's speech prenet): the
                # shortest waveform giving seq_len positions
                e = net.encoder.config if net.config.model_type == "speech-encoder-decoder" else net.config
                # SpecAugment's masks (Wav2Vec2Model._mask_hidden_states) apply in training only: none, as in eval
                e.apply_spec_augment = False
                e.layerdrop = 0.0  # Wav2Vec2Encoder reads LayerDrop from its config: none skipped
                samples = seq_len
                for k, st in reversed(list(zip(e.conv_kernel, e.conv_stride))):
                    samples = (samples - 1) * st + k
                dtype = next(net.parameters()).dtype
                values = torch.zeros((batch, samples), dtype=dtype, device="meta")
                net(**{net.main_input_name: values}, use_cache=False, **extra)
            elif hasattr(getattr(net.config, "encoder_config", None), "subsampling_factor"):
                # Canary, Cohere ASR: log-mel frames, subsampling_factor of them a source position
                e = net.config.encoder_config
                dtype = next(net.parameters()).dtype
                frames = torch.zeros((batch, seq_len * e.subsampling_factor, e.num_mel_bins), dtype=dtype, device="meta")
                net(input_features=frames, use_cache=False, **extra)
            elif net.main_input_name == "input_values" and net.config.model_type == "moonshine":
                # Moonshine: the shortest waveform its convolutions (strides 64, 3, 2) turn into seq_len positions
                dtype = next(net.parameters()).dtype
                samples = torch.zeros((batch, 384 * seq_len + 511), dtype=dtype, device="meta")
                net(input_values=samples, use_cache=False, **extra)
            elif net.main_input_name == "input_values" and net.config.model_type == "moonshine_streaming":
                # Moonshine Streaming: the shortest waveform its frames and two stride-2 convolutions turn into seq_len
                # positions, 4·seq_len − 3 frames of sample_rate · frame_ms / 1000 samples
                e = net.config.encoder_config
                frame = int(round(e.sample_rate * e.frame_ms / 1000.0))
                dtype = next(net.parameters()).dtype
                samples = torch.zeros((batch, (4 * seq_len - 3) * frame), dtype=dtype, device="meta")
                net(input_values=samples, use_cache=False, **extra)
            elif net.main_input_name == "input_features":  # a speech encoder (Whisper): one window of log-mel frames
                c = net.config
                dtype = next(net.parameters()).dtype  # the config's torch_dtype, which the convolutions hold
                frames = torch.zeros((batch, c.num_mel_bins, 2 * c.max_source_positions), dtype=dtype, device="meta")
                net(input_features=frames, use_cache=False, **extra)
            elif net.config.model_type == "kyutai_speech_to_text":
                # a frame a position: its text token and each codebook's code, (batch, seq_len, 1 + num_codebooks)
                frames = torch.zeros((batch, seq_len, 1 + net.config.num_codebooks), dtype=torch.long, device="meta")
                net(input_ids=frames, use_cache=False)
            else:
                net(input_ids=tokens, use_cache=False, **extra)
    finally:
        for h in hooks:
            h.remove()
        attribution.close()
    assert sum(attribution.flops.values()) == counter.get_total_flops()  # every counted FLOP attributed
    return FlopRun(batch, seq_len, tuple((*k, n) for k, n in attribution.flops.items() if n), tuple(attribution.uncounted))


def _local_mask(module, args, kwargs):
    """Longformer: an all-ones attention mask as a real tensor (every token local, none global), so that what the
    model asks of it (any global token, the global tokens' positions) is answered; the ops that meet meta tensors
    take it onto the meta device (``_attribution``'s ``fixed``)."""
    import torch

    ids = kwargs["input_ids"] if kwargs.get("input_ids") is not None else args[0]
    kwargs["attention_mask"] = torch.ones(tuple(ids.shape), dtype=torch.long)
    return args, kwargs


def _open_mask(config, inputs_embeds, attention_mask, **kwargs):
    """The bidirectional mask of an unpadded sequence (nothing masked), as a real tensor beside a real 2-D mask."""
    import torch

    b, n = attention_mask.shape
    return torch.zeros((b, 1, n, n), dtype=inputs_embeds.dtype)


def _fixed_mask(module, args, kwargs):
    """The router's one-hot choice (tokens, 1, n_experts: SwitchTransformersExperts) replaced by a fixed one, token t
    to expert t mod n_experts, as ``_fixed_routing`` chooses with top_k 1."""
    import torch

    hidden, mask, weights = args
    tokens, experts = mask.shape[0], mask.shape[-1]
    fixed = torch.nn.functional.one_hot(torch.arange(tokens).remainder(experts), experts).view(tokens, 1, experts)
    return (hidden, fixed, weights), kwargs


def _fixed_top1(module, args, kwargs):
    """The router's top-1 mask (tokens, n_experts, 0 or 1: NllbMoeExperts' router_mask) replaced by a fixed one, token
    t's first choice expert t mod n_experts; the experts' own loop then runs what it makes of that mask."""
    import torch

    hidden, mask, probs = args
    tokens, experts = mask.shape
    fixed = torch.nn.functional.one_hot(torch.arange(tokens).remainder(experts), experts)
    return (hidden, fixed, probs), kwargs


def _fixed_routing(module, args, kwargs):
    """The router's choice replaced by a fixed one (a real tensor, so the experts' loop can index with it):
    token t's j-th expert is (t·top_k + j) mod n_experts; every token meets exactly top_k experts."""
    import torch

    hidden, index, weights = args
    tokens, top_k = index.shape
    # n_experts: the experts with weights (LongCat-Flash's LongcatFlashExperts: num_routed_experts, its identity
    # experts beyond them never chosen, so every token's top_k experts compute)
    experts = getattr(module, "num_routed_experts", None) or module.num_experts
    fixed = torch.arange(tokens * top_k).remainder(experts).view(tokens, top_k)
    return (hidden, fixed, weights), kwargs


def _attribution(net, counter, fixed: bool):
    """A dispatch mode above FlopCounterMode: each op's FLOPs (the counter's total before and after it) go to
    (the innermost module running, the parameter among the op's operands or "", the op). A tensor derived from
    a parameter alone (a view, a transpose, an index into an experts tensor, a cast) carries the parameter.
    ``fixed``: index tensors of a fixed routing are moved onto the meta device where an op takes them with
    meta tensors (index_add_ requires one device); shapes are unchanged."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten, tree_map

    names: dict[int, list[str]] = {}
    params: dict[int, torch.Tensor] = {}
    for path, p in net.named_parameters(remove_duplicate=False):
        names.setdefault(id(p), []).append(path)
        params[id(p)] = p
    paths = {id(m): path for path, m in net.named_modules(remove_duplicate=False)}
    # the modules held, so that no id is reused: a module the forward builds (BigBirdModel.set_attention_type swaps
    # each layer's attention) is looked up again by its path
    held = list(net.modules())
    stack: list[str] = []

    def enter(module, args):
        if id(module) not in paths:
            held.extend(net.modules())
            paths.update({id(m): path for path, m in net.named_modules(remove_duplicate=False)})
        stack.append(paths.get(id(module), "?"))

    def leave(module, args, out):
        stack.pop()

    def source(t):
        return id(t) if id(t) in names else getattr(t, "_ffncalc_source", None)

    def to_meta(a):
        return a.to("meta") if isinstance(a, torch.Tensor) and a.device.type != "meta" and a.dim() else a

    class Mode(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.flops = {}
            self.uncounted: dict[tuple[str, str], None] = {}
            self.handles = [
                torch.nn.modules.module.register_module_forward_pre_hook(enter),
                torch.nn.modules.module.register_module_forward_hook(leave),
            ]

        def close(self):
            for h in self.handles:
                h.remove()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            tensors = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
            if fixed and any(a.device.type == "meta" for a in tensors):
                args, kwargs = tree_map(to_meta, args), tree_map(to_meta, kwargs)
            before = counter.get_total_flops()
            out = func(*args, **kwargs)
            flops = counter.get_total_flops() - before
            op = str(func.overloadpacket).removeprefix("aten.")
            if op in UNCOUNTED_OPS:
                self.uncounted[(stack[-1] if stack else "", op)] = None
            floating = [a for a in tensors if a.is_floating_point()]
            sources = {source(a) for a in floating}
            if flops:
                here = stack[-1] if stack else ""
                param = ""
                if sources - {None}:  # the weight rather than the bias where an op takes both (a convolution)
                    src = max(sources - {None}, key=lambda i: (params[i].dim(), names[i][0]))
                    # a tied matrix has several names: the one of the innermost module running it (lm_head; the
                    # layer a weight-shared block runs in), else the first
                    own = next(
                        (
                            [n for n in names[src] if n.startswith(m + ".")]
                            for m in reversed(stack)
                            if m and any(n.startswith(m + ".") for n in names[src])
                        ),
                        [],
                    )
                    param = max(own, key=len) if own else names[src][0]
                key = (here, param, op)
                self.flops[key] = self.flops.get(key, 0) + flops
            # an embedding's rows are the tokens' activations, not the weight (DeepSeek-V4's first hyper-connection
            # multiplies them by its mixing matrix)
            elif floating and len(sources) == 1 and None not in sources and op != "embedding":
                for o in tree_flatten(out)[0]:
                    if isinstance(o, torch.Tensor):
                        o._ffncalc_source = next(iter(sources))
            return out

    return Mode()

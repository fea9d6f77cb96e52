"""Training frameworks as memory profiles: the dtypes each keeps its weights, gradients and optimizer states in, the
ZeRO stage from which each is sharded, what a sharded step holds gathered, and what its unfused loss holds per
logit. Every figure with its source; pure data and arithmetic, no torch.

A state is (bytes a parameter, the ZeRO stage from which it is sharded over the data-parallel replicas).
"""

from __future__ import annotations

from dataclasses import dataclass

# Adam's two moments in fp32 (Kingma & Ba 2015; Rajbhandari et al. 2020 §3.1: 4 + 4 bytes); 8-bit Adam keeps them in
# 1 byte each (Dettmers et al. 2022). bitsandbytes' paged optimizers (bnb.optim.PagedAdamW, PagedAdamW8bit) hold the
# same states in CUDA unified memory, which the driver pages to the host only when the device runs short (Dettmers
# et al. 2023, QLoRA §3): the same bytes on the device until then.
MOMENT_BYTES = {"adam": 8, "adam8bit": 2, "paged_adam": 8, "paged_adam8bit": 2}
HELD_WHOLE = -1  # a state held whole below ZeRO 3 and in ZeRO 3 only for the layer gathered (DeepSpeed's bf16 gradients)
NEVER = 4  # a state no ZeRO stage shards


@dataclass(frozen=True)
class Framework:
    name: str
    weights: tuple[int, int]  # the weights as the step reads them (ZeRO 3 shards them)
    grads: tuple[tuple[int, int], ...]  # the gradients as the step keeps them between backward and the update
    master: tuple[int, int]  # an fp32 master copy beside 16-bit weights (0 bytes where the weights are fp32)
    fp8_copy: int  # bytes a parameter of a persistent fp8 copy of the weights in fp8 training
    zero: int  # the ZeRO stage a run takes unless one is given
    gather: str  # what ZeRO 3 gathers at once: "layers" (whole layers, the next prefetched) or "modules"
    loss_bytes: int  # bytes per logit element an unfused loss holds at its peak
    tp_loss_bytes: int  # the same with the vocabulary split over tensor parallelism (a vocab-parallel loss)
    source: str
    # what --recompute selective keeps: Korthikanti et al.'s policy (everything but the attention scores), or
    # torchtitan's per-op policy (memory.per_op_bytes: the layer's input, every other matmul's output, attention's)
    per_op: bool = False
    # each pipeline stage but the last keeps its output for every micro-batch in flight until that one's backward
    # (DeepSpeed's PipelineEngine: pipe_buffers["outputs"]); Megatron-LM frees the output's data once sent
    # (megatron/core/pipeline_parallel/schedules.py, deallocate_output_tensor)
    keeps_stage_outputs: bool = False


FRAMEWORKS = {
    # Megatron-LM with --bf16: bf16 weights, fp32 main gradients (accumulate_allreduce_grads_in_fp32 is forced on
    # with bf16, megatron/training/arguments.py), fp32 master weights and moments in the optimizer: 18 bytes a
    # parameter; the distributed optimizer (ZeRO 1 here) leaves 6 + 12/d (Megatron-LM
    # docs/source/api-guide/dist_optimizer.md, its bytes-per-parameter table). Its vocab-parallel cross-entropy
    # (megatron/core/tensor_parallel/cross_entropy.py) casts the bf16 logits to fp32, exponentiates in place and
    # keeps that buffer, whose gradient it writes in place: 2 + 4 bytes a logit.
    "megatron": Framework(
        "megatron",
        (2, 3),
        ((4, 2),),
        (4, 1),
        1,
        0,
        "layers",
        6,
        6,
        "Megatron-LM: bf16 weights, fp32 main gradients, fp32 master and moments (dist_optimizer.md: 18 B/param, "
        "6 + 12/d distributed)",
    ),
    # DeepSpeed's bf16 ZeRO: bf16 weights and gradients, fp32 gradient partition, master and moments. Its own
    # estimator (deepspeed/runtime/zero/stage_1_and_2.py, estimate_zero2_model_states_mem_needs: 4·P + 16·P/N;
    # stage3.py, estimate_zero3_model_states_mem_needs: 18·P/N + 4·largest layer) keeps the bf16 gradients whole
    # below stage 3 and, in stage 3, only the largest module's 16-bit weights and gradients gathered. The models it
    # trains are Hugging Face's, whose loss is torch's unfused cross-entropy on fp32 logits (below, "hf").
    "deepspeed": Framework(
        "deepspeed",
        (2, 3),
        ((2, HELD_WHOLE), (4, 1)),
        (4, 1),
        1,
        0,
        "modules",
        12,
        12,
        "DeepSpeed ZeRO: bf16 weights and gradients, fp32 gradient partition, master and moments (its estimator: "
        "4P + 16P/N in stage 2, 18P/N + 4·largest layer in stage 3)",
    ),
    # Megatron-DeepSpeed with DeepSpeed's BF16_Optimizer (deepspeed/runtime/bf16_optimizer.py), as BLOOM trained
    # (bigscience-workshop/bigscience train/tr11-176B-ml: ZeRO stage 0 in DeepSpeed's config, "bf16 must use z0! it
    # implements its own zero stage 1 equivalent"): bf16 weights; the bf16 gradients autograd writes, which it clears
    # only as the next backward starts (backward: clear_lp_grads, then update_hp_grads(clear_lp_grads=False)); an
    # fp32 gradient buffer over all the weights, never sharded (fp32_groups_gradients_flat; the run's README: "It
    # doesn't shard the static fp32 buffer it reuses, which consumes 4 bytes * params"); the fp32 master and moments
    # sharded over the replicas (fp32_groups_flat_partition): 8 + 12/d bytes. Megatron's vocab-parallel loss.
    "megatron-deepspeed": Framework(
        "megatron-deepspeed",
        (2, 3),
        ((2, HELD_WHOLE), (4, NEVER)),
        (4, 1),
        1,
        1,
        "layers",
        6,
        6,
        "Megatron-DeepSpeed, BF16_Optimizer: bf16 weights and gradients, an fp32 gradient buffer whole, fp32 master "
        "and moments sharded (8 + 12/d B/param)",
        keeps_stage_outputs=True,
    ),
    # torchtitan's FSDP2 (torchtitan/parallelisms/parallelize_llama.py, apply_fsdp: MixedPrecisionPolicy with
    # param_dtype bf16, reduce_dtype fp32): sharded fp32 parameters (the master copy itself), fp32 gradients, fp32
    # moments: 16 bytes a parameter, all sharded; the bf16 weights exist only gathered. Float8 training casts them
    # a matmul at a time (torchao dynamic scaling): no persistent fp8 copy. Its loss, cross_entropy(pred.float()),
    # keeps the fp32 log-softmax; log_softmax's backward holds it, its gradient and the input's gradient: 12 bytes.
    # Under tensor parallelism its loss_parallel (torch/distributed/tensor/parallel/loss.py,
    # _log_softmax_backward_handler: grad_output − exp(result) · sum) holds beside the output and its gradient the
    # product's temporary and the result: 16 bytes.
    "fsdp2": Framework(
        "fsdp2",
        (4, 3),
        ((4, 2),),
        (0, 1),
        0,
        3,
        "layers",
        12,
        16,
        "torchtitan FSDP2: fp32 sharded parameters and gradients, bf16 only gathered (MixedPrecisionPolicy "
        "param_dtype bf16, reduce_dtype fp32)",
        per_op=True,
    ),
    # Hugging Face Trainer with bf16=True and no ZeRO: fp32 weights, fp32 gradients, fp32 moments (torch.autocast
    # casts each weight to bf16 for its matmul; the casts kept for backward are counted as 2 more bytes a
    # parameter); its causal LMs' loss is torch's unfused cross-entropy on fp32 logits (transformers
    # loss_utils.ForCausalLMLoss: logits.float()): 12 bytes a logit, as for torchtitan.
    "hf": Framework(
        "hf",
        (6, 3),
        ((4, 2),),
        (0, 1),
        1,
        0,
        "layers",
        12,
        12,
        "Hugging Face Trainer, bf16 autocast: fp32 weights (+ their bf16 casts), fp32 gradients and moments",
    ),
}
DEFAULT_FRAMEWORK = "megatron"  # the convention the activations follow (Korthikanti et al. 2022 is Megatron's)

# Liger-Kernel's fused linear cross-entropy (src/liger_kernel/ops/fused_linear_cross_entropy.py): it runs the
# head and the loss over chunks of tokens, chunk = next power of two of ⌈tokens / ⌈V / d⌉⌉, so a chunk's logits
# are about as many elements as the hidden states; each chunk's fp32 logits and their gradient (8 bytes), with the
# bf16 gradient of the hidden states (2 bytes of d a token) and of the head's weight (2 bytes a parameter).
CHUNK_LOGIT_BYTES = 8


def chunk_tokens(tokens: int, vocab: int, d: int) -> int:
    """Tokens of one chunk of Liger's fused linear cross-entropy."""
    factor = -(-vocab // d)
    want = -(-tokens // factor)
    return min(tokens, 1 << (want - 1).bit_length())


def loss_bytes(fw: Framework, loss: str, tokens: int, vocab: int, d: int, split: bool = False) -> int:
    """Bytes the head and the loss hold at their peak for ``tokens`` tokens over ``vocab`` logits (a device's
    share under tensor parallelism): the head's bf16 input, whole on every device (what its matmul's backward
    reads; sequence parallelism gathers it), and the framework's unfused cross-entropy, or a fused chunked one."""
    head_input = 2 * tokens * d
    if loss == "chunked":
        return head_input + CHUNK_LOGIT_BYTES * chunk_tokens(tokens, vocab, d) * vocab + 2 * tokens * d + 2 * vocab * d
    return head_input + (fw.tp_loss_bytes if split else fw.loss_bytes) * tokens * vocab

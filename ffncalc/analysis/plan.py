"""What the planning questions are asked: small frozen dataclasses, each default stated once, here.

``train`` (training.py) takes a ``TrainingRun``, a ``Step``, a ``Layout`` and a ``Device``; ``infer``
(inference.py) an ``InferenceRun``, ``Formats``, a ``Placement`` and a ``Device``; ``fit`` (fit.py) a ``FitRun``
with the same three. The command line takes its defaults from these classes. A layout and a placement may leave
degrees open (None): ``parallel.resolve`` and ``serving.place`` check them and fill them in. Nothing here computes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..model.stack import Model
    from .hardware import Hardware
    from .linkfile import Links

# vLLM's default gpu_memory_utilization is 0.9 (vLLM engine arguments): a tenth of the device is left to the
# CUDA context, the allocator and whatever else runs; the same tenth is the default reserve here.
DEFAULT_RESERVE = 0.1
# In training the caching allocator's share and a fixed CUDA allowance (memory.py) stand for what the device holds
# beside the tensors; nothing more is kept free unless asked (--reserve).
TRAIN_RESERVE = 0.0
# Tokens of one prefill chunk, which sizes the activation workspace: llama.cpp's default logical batch
# (-b 2048); vLLM's chunked prefill budget (max_num_batched_tokens) is of the same order.
DEFAULT_CHUNK = 2048


@dataclass(frozen=True)
class Device:
    """The device a plan runs on: its entry in the device table (None: none named), and what is stated in place
    of its datasheet or beside it."""

    hw: Hardware | None = None
    # a device's TFLOP/s in place of the datasheet's: in training the rate achieved (instead of peak × mfu); in
    # serving its peak (for a device that states none, or a measured rate)
    tflops: float | None = None
    # model FLOPs utilisation: the share of the datasheet peak a training run achieves end to end, its pipeline
    # bubble included (None: the precision's default, training.DEFAULT_MFU)
    mfu: float | None = None
    kernel_mfu: float | None = None  # the share of the peak while busy, in place of mfu: the pipeline bubble is added
    reserve: float = DEFAULT_RESERVE  # the share of each device's memory kept for the framework
    link_gbs: float | None = None  # interconnect GB/s per direction (None: the device's scale-up link)
    link_latency_us: float | None = None  # one collective's fixed time (None: NCCL's model for the device's link)
    network_gbs: float | None = None  # GB/s per device and direction between nodes (None: links.NETWORK_GBS)
    cpu_gbs: float = 89.6  # the host's memory bandwidth, for offloaded layers or experts: DDR5-5600, 2 channels
    wired_gib: float | None = None  # Apple silicon: the GPU's wired limit (None: macOS's default, engines.py)
    links: Links | None = None  # measured links (--links, linkfile.py) in place of the table's link figures


@dataclass(frozen=True)
class Layout:
    """How a training run splits over its devices (parallel.py): data, tensor, pipeline, context and expert
    parallel degrees, the ZeRO stage and sequence parallelism. ``gpus`` None: the product of the degrees; ``dp``
    None: what the other degrees leave of the devices (one replica without ``gpus``)."""

    gpus: int | None = None
    dp: int | None = None
    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1  # inside dp
    # 1 shards the optimizer states over the replicas, 2 the gradients too, 3 (FSDP) the weights too; None: the
    # framework's own (frameworks.FRAMEWORKS: FSDP2 is ZeRO 3, the others 0)
    zero: int | None = None
    virtual_stages: int = 1  # model chunks a pipeline device runs (interleaved 1F1B), 1: plain 1F1B
    # the pipeline schedule (schedules.SCHEDULES): "1f1b" (interleaved with virtual_stages > 1), "zb-h1" or "zb-h2" (Qi
    # et al. 2023's zero-bubble schedules: the backward split into input and weight gradients; 1F1B's memory, or more)
    schedule: str = "1f1b"
    sequence_parallel: bool = True  # the norms' and dropouts' activations split over tp too (Korthikanti et al.)
    ends_as_layers: bool = False  # the pipeline split gives the embedding and the head a layer's slot each


@dataclass(frozen=True)
class Step:
    """One training step: what a device computes and keeps for it."""

    seq_len: int | None = None  # tokens a sequence (None: the model's context)
    micro_batch: int = 1  # sequences a device runs at once
    global_batch: int | None = None  # sequences a step (None: no pipeline bubble reckoned)
    recompute: str = "none"  # activation recomputation: none, selective or full (count.RECOMPUTE)
    kernel: str = "flash"  # attention kernel: flash keeps no scores, eager keeps them
    optimizer: str = "adam"  # frameworks.MOMENT_BYTES
    precision: str = "bf16"  # bf16 mixed precision, or fp8 matmuls beside it
    framework: str = "megatron"  # frameworks.FRAMEWORKS: the dtypes and buffers of its states and its loss
    loss: str = "full"  # the cross-entropy: "full" logits at once, or "chunked" (a fused, chunked kernel)
    mtp: bool | None = None  # the multi-token prediction modules trained (None: whenever the model has them)


@dataclass(frozen=True)
class TrainingRun:
    """A training run: its tokens, the convention its FLOPs are counted by, and what times it."""

    tokens: int | str  # a count, or text such as 300B or 15T (training.parse_count)
    convention: str = "6n"
    dtype: str | None = None  # which datasheet peak (None: the precision's, fp8 for fp8 training, else bf16)
    tokens_per_s: float | None = None  # measured, all devices together: it gives the wall-clock directly
    budget: float | str | None = None  # compute for the Chinchilla optimum (None: this run's)
    goodput: float = 1.0  # the share of the wall-clock spent training
    min_gpus: bool = False  # search the fewest devices whose layout fits (layouts.fewest_devices)
    fastest: bool = False  # search the layout of the given devices with the shortest step (layouts.fastest_layouts)


@dataclass(frozen=True)
class Formats:
    """What a served model is stored in (formats.py): its weights' format, its routed experts' (None: the
    weights'), its KV cache's precision."""

    dtype: str = "bf16"
    experts_dtype: str | None = None
    kv_dtype: str = "bf16"
    keep: tuple[str, ...] = ()  # overrides, each COMPONENT=FORMAT or layers:A-B=FORMAT (formats.overrides)


@dataclass(frozen=True)
class Placement:
    """A served model on ``gpus`` devices in ``pp`` pipeline stages of ``tp`` devices a model copy (None: every
    device of a stage), ``ep`` of them sharing the routed experts: within a stage's tp, or a multiple of it across
    copies. ``serving.place`` checks it against the model and fills in tp."""

    gpus: int = 1
    tp: int | None = None
    ep: int = 1
    pp: int = 1
    gpu_layers: int | None = None  # layers on the devices, the rest on the host's CPU (None: all on the devices)
    cpu_experts: bool = False  # the routed experts on the host's CPU (llama.cpp --cpu-moe)
    # two micro-batches a step, one's expert-parallel all-to-alls beside the other's compute (DeepSeek-V3 §3.4's dual
    # micro-batch overlap, SGLang's --enable-two-batch-overlap); only with ep beyond tp, where all-to-alls run
    overlap: bool = False
    # the most nodes a token's routed experts sit on (DeepSeek-V3 §2.1.2's node-limited routing, M = 4): a prefill's
    # dispatch sends it once to each (exchange.forwarded); None: as many as the experts reach
    max_nodes: int | None = None

    @property
    def replicas(self) -> int:
        """Copies of the model: the devices left after tp × pp (experts spread over ep devices of a tp group)."""
        return self.gpus // (self.tp * self.pp)

    @property
    def ep_copies(self) -> int:
        """Copies whose devices share one set of experts: ep beyond tp spans ep / tp of them, their attention
        data-parallel (vLLM's data parallelism with expert parallelism, SGLang's DP attention)."""
        return self.ep // self.tp if self.ep > self.tp else 1


@dataclass(frozen=True)
class InferenceRun:
    """Sequences served: a prompt and the tokens generated after it, for a batch of sequences; how latent
    attention prefills and decodes; speculative decoding."""

    prompt: int
    generate: int
    batch: int = 1
    chunk: int = DEFAULT_CHUNK  # prefill tokens a forward, which sizes the activation workspace
    decode: str = "absorbed"  # latent attention decoded absorbed (as serving engines run it) or expanded
    prefill: str = "expanded"  # latent attention prefilled expanded (as in training) or absorbed
    draft: int = 0  # tokens drafted a step (speculative decoding, or MTP)
    accept: float | None = None  # the rate a drafted token is accepted at
    draft_model: tuple[str, Model] | None = None  # (label, model) drafting (None: the model's MTP modules)


@dataclass(frozen=True)
class FitRun:
    """Sequences held at once: ``batch`` of ``context`` tokens each, prefilled ``chunk`` tokens a forward."""

    context: int
    batch: int = 1
    chunk: int = DEFAULT_CHUNK
    ttft_slo: float | None = None  # seconds a request joining the batch may wait for its first token (goodput)
    itl_slo: float | None = None  # seconds between a sequence's tokens it may take (goodput)


@dataclass(frozen=True)
class Tuning:
    """Fine-tuning with adapters (adapters.py, finetune.py): LoRA of rank ``lora`` on the modules ``targets`` names
    (peft's module names, or all-linear), DoRA's magnitudes, the modules trained whole; the frozen base in
    ``base_dtype`` (quantized.py), with bitsandbytes' double quantization of a 4-bit base's absmax, and the rest of
    it in fp32 (``kbit_fp32``: peft's prepare_model_for_kbit_training) or bf16. ``alpha`` and ``rslora`` scale the
    update and change nothing countable."""

    lora: int
    targets: tuple[str, ...] = ("all-linear",)
    dora: bool = False
    modules_to_save: tuple[str, ...] = ()
    alpha: float | None = None
    rslora: bool = False
    base_dtype: str = "bf16"
    double_quant: bool = True
    kbit_fp32: bool = False
    # peft keeps the adapters in fp32 beside a 16-bit base (get_peft_model's autocast_adapter_dtype=True), and so
    # their gradients and the optimizer's moments; bf16: a recipe that trains them in bf16 (torchtune)
    adapter_dtype: str = "fp32"

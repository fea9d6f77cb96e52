"""Serving engines: what each holds on a device beside the weights and the KV cache, how it lays the cache out,
and the shares of a device's bandwidth and compute it achieves, with a fixed time each layer adds to a forward.

A roofline (rates.py) is the upper bound of a rate; an engine's profile turns it into the rate that engine is
expected to reach. Every figure below names its source; the measurements they are calibrated on, and those held
out, are in ``accuracy/serving.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from .formats import Format
from .hardware import GIB, Hardware


@dataclass(frozen=True)
class Rates:
    """Achieved shares of the datasheet: of the memory bandwidth a decode step reads at, for 16- and 8-bit weights
    and for block-quantized weights (whose kernels dequantize as they read); of the compute peak a prefill runs at,
    for each; and the fixed time each layer adds to a forward (kernel launches, the host's work)."""

    bandwidth: float = 1.0
    bandwidth_quantized: float = 1.0
    compute: float = 1.0
    compute_quantized: float = 1.0
    layer_s: float = 0.0
    alltoall: float = 1.0  # of the link's bandwidth an expert-parallel dispatch and combine achieve

    def for_format(self, quantized: bool) -> Efficiency:
        """The shares for 16-bit weights, or for quantized ones (block formats, and fp8 at its own peak)."""
        if quantized:
            return Efficiency(self.bandwidth_quantized, self.compute_quantized, self.layer_s, self.alltoall)
        return Efficiency(self.bandwidth, self.compute, self.layer_s, self.alltoall)


@dataclass(frozen=True)
class Efficiency:
    """The shares one plan runs at: bandwidth, compute, a layer's fixed time a forward, and the link's share an
    expert-parallel all-to-all achieves."""

    bandwidth: float = 1.0
    compute: float = 1.0
    layer_s: float = 0.0
    alltoall: float = 1.0


ROOFLINE = Efficiency()


@dataclass(frozen=True)
class Engine:
    key: str
    label: str
    utilization: float  # the share of the device's memory the engine takes; the rest is left (its reserve)
    fixed_bytes: int  # per device, outside the engine's own tensors: the CUDA context, library workspaces
    tp_bytes: int  # more per device when tp > 1: the collective library's buffers
    chunk: int  # tokens of one forward: the prefill chunk, and the forward its activation peak is profiled at
    kv_block: int  # tokens a KV block holds; a sequence's cache is whole blocks
    split: str  # how --gpus devices split the model by default: "tp" (tensor parallel) or "layer" (pipeline)
    cuda: Rates
    metal: Rates | None  # on Apple's unified memory (None: the engine does not run there)
    source: str
    by_tp: tuple[tuple[int, float], ...] = ()  # (from tp, utilization): a share that falls as tp grows
    of_free: bool = False  # the share is of what the weights and activations leave, not of the whole device

    def utilization_at(self, tp: int) -> float:
        """The share of each device the engine takes at tensor-parallel degree ``tp``."""
        return next((u for at, u in sorted(self.by_tp, reverse=True) if tp >= at), self.utilization)

    def rates(self, hw: Hardware | None) -> Rates:
        if self.key == "mlx" and hw is not None and not hw.unified:
            raise InputError(f"--engine mlx: runs on Apple silicon only, not on {hw.key}")
        if hw is not None and hw.unified:
            if self.metal is None:
                raise InputError(f"--engine {self.key}: does not run on {hw.key} (Apple silicon: llamacpp or mlx)")
            return self.metal
        return self.cuda


# vLLM: the profile of `vllm serve meta-llama/Meta-Llama-3-8B` on an H100 (vLLM PR #10511, memory profiling
# overhaul, 2024-12-13): gpu_memory_utilization 0.90 of 79.22 GiB, weights 14.96 GiB, non_torch_memory 1.79 GiB
# at tp 1 and 3.58 GiB at tp 2 (NCCL's buffers), PyTorch activation peak 1.26 GiB, KV cache 53.29 GiB.
# max_num_batched_tokens 8192 (vllm/engine/arg_utils.py: the OpenAI server's default), the forward the activation
# peak is profiled at; block_size 16 tokens (vllm/config CacheConfig default).
VLLM_NON_TORCH = round(1.79 * GIB)
# Decode reads at 0.8 of the bandwidth, prefill computes at 0.39 of the fp8 peak and 0.63 of the 16-bit peak:
# TensorRT-LLM's published tables (docs/source/performance.md, v0.5/v0.6.1), the calibration set of
# accuracy/serving.py; vLLM and SGLang run the same class of kernels (FlashAttention/FlashInfer, cuBLAS, CUDA
# graphs) and are given the same shares.
TRTLLM_RATES = Rates(0.8, 0.8, 0.63, 0.39, 20e-6)
# Expert parallelism across copies (DeepEP's dispatch and combine, as SGLang and vLLM run it): its all-to-alls move
# at 0.57 of the link's bandwidth, the pace of the most loaded device. SGLang's decode of DeepSeek-V3 on 72 H100s
# (lmsys.org, 2025-05-05, 22,282 tokens/s a node at 256 sequences a device, two-batch overlap) calibrates it: there
# the step is the all-to-alls' (the two halves' compute hides under them), so their pace is the step's. It stands
# for what the link's peak leaves out: the experts' uneven load, which EPLB narrows but does not close (the blog's
# GPU balancedness, mean over max), and the kernels' busy-waiting for the slowest rank.
ALLTOALL_SHARE = 0.57
SGLANG_RATES = Rates(0.8, 0.8, 0.63, 0.39, 20e-6, ALLTOALL_SHARE)
# vLLM's own benchmark_latency runs (Mixtral 8x7B on two A100s, vLLM PR #3240, the calibration set) leave about
# 4 ms a step beyond those shares: its scheduler's and sampler's host time each step, 120 µs a layer of a 32-layer
# model. Its expert-parallel all-to-alls (DeepEP too) at SGLang's share.
VLLM_RATES = Rates(0.8, 0.8, 0.63, 0.39, 120e-6, ALLTOALL_SHARE)

METAL = Rates(0.85, 0.7, 0.78, 0.6, 170e-6)  # llama.cpp on Apple's GPUs (below)

ENGINES: dict[str, Engine] = {
    "vllm": Engine(
        "vllm",
        "vLLM",
        0.9,
        VLLM_NON_TORCH,
        VLLM_NON_TORCH,
        8192,
        16,
        "tp",
        VLLM_RATES,
        None,
        "vLLM: gpu_memory_utilization 0.9, non-torch memory and activation peak as profiled (vLLM PR #10511), "
        "16-token KV blocks; shares as TensorRT-LLM's tables, 120 µs a layer from vLLM's benchmark_latency runs",
    ),
    # SGLang: mem_fraction_static 0.88 at tp 1, 0.87 at tp 2, 0.85 from tp 4, 0.81 from tp 8, 0.79 from tp 16;
    # chunked_prefill_size 8192 on GPUs of 25 GB and more; page_size 1 (python/sglang/srt/server_args.py,
    # __post_init__, 2025).
    "sglang": Engine(
        "sglang",
        "SGLang",
        0.88,
        VLLM_NON_TORCH,
        VLLM_NON_TORCH,
        8192,
        1,
        "tp",
        SGLANG_RATES,
        None,
        "SGLang: mem_fraction_static 0.88 at tp 1 to 0.79 at tp 16, chunked_prefill_size 8192, page size 1 "
        "(server_args.py); rates as TensorRT-LLM's tables",
        ((2, 0.87), (4, 0.85), (8, 0.81), (16, 0.79)),
    ),
    # TensorRT-LLM: KvCacheConfig free_gpu_memory_fraction 0.9 of what is free after the weights and the engine's
    # activations; tokens_per_block 32; max_num_tokens 8192 (tensorrt_llm/llmapi/llm_args.py).
    "trtllm": Engine(
        "trtllm",
        "TensorRT-LLM",
        0.9,
        VLLM_NON_TORCH,
        VLLM_NON_TORCH,
        8192,
        32,
        "tp",
        TRTLLM_RATES,
        None,
        "TensorRT-LLM: free_gpu_memory_fraction 0.9 of what is free, tokens_per_block 32, max_num_tokens 8192 "
        "(llm_args.py); rates from its performance tables (docs/source/performance.md)",
        of_free=True,
    ),
    # llama.cpp: allocates exactly its buffers (no fraction of the device); n_ubatch 512 (the compute buffer is
    # sized for it), the context padded to 256 cells (llama-context.cpp), -sm layer by default (whole layers on
    # each device). The CUDA context and cuBLAS workspace outside its buffers, about 0.5 GiB a device (CUDA C++
    # Programming Guide, lazy loading; cuBLAS's default workspace). Rates: calibrated on the llama.cpp measurements
    # of XiongjieDai/GPU-Benchmarks-on-LLM-Inference (Llama 3 8B, May 2024): CUDA decode at 0.85 of the bandwidth
    # with 16-bit weights and 0.8 with k-quants; prefill at 0.85 of the 16-bit peak, and for quantized weights at
    # 0.33 of the int8 peak (MMQ on int8 tensor cores, llama.cpp PR #7676); 60 µs a layer a forward; Metal at 0.85 and
    # 0.7 of the bandwidth, 0.78 and 0.6 of the (fp32) peak, 170 µs a layer a forward (the 8B and 70B runs on the M3
    # Max together fix the share and the fixed time).
    "llamacpp": Engine(
        "llamacpp",
        "llama.cpp",
        1.0,
        GIB // 2,
        0,
        512,
        256,
        "layer",
        Rates(0.85, 0.8, 0.85, 0.33, 60e-6),
        METAL,
        "llama.cpp: its buffers only (weights, KV cache of the padded context, compute buffer of a 512-token "
        "ubatch), layer split across devices; rates calibrated on published llama-bench runs",
    ),
    # MLX (mlx-lm): Metal only; no MLX measurement calibrates it, so llama.cpp's Metal shares stand for it (held out
    # against mlx_lm.generate of Llama 3 70B bf16 on an M2 Ultra, mlx-examples PR #1069: accuracy/serving.py).
    "mlx": Engine(
        "mlx",
        "MLX",
        1.0,
        0,
        0,
        2048,
        1,
        "layer",
        METAL,
        METAL,
        "MLX: unified memory up to the wired limit, prefill_step_size 2048 (mlx_lm generate.py); rates as llama.cpp's on Metal",
    ),
}
ENGINE_NAMES = tuple(ENGINES)


def default_engine(fmt: Format, hw: Hardware | None) -> str:
    """GGUF formats run in llama.cpp; other formats on Apple silicon in MLX; everything else in vLLM."""
    if fmt.gguf:
        return "llamacpp"
    if hw is not None and hw.unified:
        return "mlx"
    return "vllm"


def engine(name: str | None, fmt: Format, hw: Hardware | None) -> Engine:
    key = name or default_engine(fmt, hw)
    if key not in ENGINES:
        raise InputError(f"--engine {key}: unknown; known: {', '.join(ENGINES)}")
    return ENGINES[key]


def quantized(fmt: Format) -> bool:
    """Weights whose kernels dequantize blocks as they read them (GGUF, GPTQ/AWQ int4, MXFP4, NVFP4), or run at
    the fp8 peak (fp8): the shares for quantized weights."""
    return bool(fmt.gguf) or fmt.block > 1 or fmt.name == "fp8"


def prefill_peak(hw: Hardware, fmt: Format, eng: Engine) -> tuple[str, float | None]:
    """The datasheet peak a format's matmuls run at: fp8 weights at the fp8 peak; llama.cpp's quantized weights
    at the int8 peak where the device has one (its MMQ kernels multiply int8 on tensor cores, PR #7676); other
    formats at bf16, else fp16, else fp32 (Apple's GPUs, whose half-precision matmuls run at their fp32 rate)."""
    order: tuple[str, ...] = ("bf16", "fp16", "fp32")
    if fmt.name == "fp8":
        order = ("fp8", *order)
    elif eng.key == "llamacpp" and quantized(fmt) and not hw.unified:
        order = ("int8", *order)
    for d in order:
        if d in hw.tflops:
            return d, hw.tflops[d]
    return "bf16", None


# macOS wires at most recommendedMaxWorkingSetSize of a Mac's memory to the GPU: about two thirds up to 36 GB and
# three quarters above (Apple, Metal tech talk 10580; llama.cpp's ggml-metal log prints it); `sudo sysctl
# iogpu.wired_limit_mb=N` raises it, which --wired-limit-gib states.
def wired_limit(hw: Hardware, stated_gib: float | None) -> int:
    if stated_gib is not None:
        return round(stated_gib * GIB)
    share = (3, 4) if hw.memory_bytes > 36 * GIB else (2, 3)
    return hw.memory_bytes * share[0] // share[1]

"""The published serving measurements the plans are held against (serving.py), each with its source: the
calibration set fitted the engines' shares (engines.py); the held-out set fitted nothing. Here the runs of published
tables (llama-bench's, TensorRT-LLM's); those of engines' pull requests, issues and blogs are in serving_runs.py."""

from __future__ import annotations

from dataclasses import dataclass, field

# llama.cpp's llama-bench runs of Llama 3 (May 2024) and Llama 2 (Dec 2023) on many devices
XD = "XiongjieDai/GPU-Benchmarks-on-LLM-Inference, README (https://github.com/XiongjieDai/GPU-Benchmarks-on-LLM-Inference)"
# TensorRT-LLM's published performance tables: v0.6.1 throughput, v0.5 first-token latency at batch 1
TRT = "TensorRT-LLM docs/source/performance.md (https://github.com/NVIDIA/TensorRT-LLM/blob/release/0.6.1/docs/source/performance.md)"

M1_MAX = (
    "the M1 Max reads about 43% of its 400 GB/s here (4.34 tokens/s × 40 GB) where the M3 Max, at the same 400 GB/s, "
    "reads 77%: one share for Apple's GPUs cannot hold both"
)


@dataclass(frozen=True)
class Measurement:
    name: str
    what: str  # decode (tokens/s, one sequence), prefill (tokens/s), ttft (s), throughput (output tokens/s a GPU),
    #            latency (s, a batch's prompt and generation), kv_memory (bytes), kv_tokens (tokens the cache holds),
    #            kv_bytes (bytes of the cache), weights (bytes a device)
    model: str
    hardware: str
    engine: str
    value: float
    source: str
    calibration: bool
    options: dict = field(default_factory=dict)  # infer's or fit's keywords (dtype, gpus, prompt, generate, …)
    outside: str = ""  # why the plan misses this one by more than the band (shown on the page)


def cpp(name: str, what: str, model: str, hw: str, value: float, where: str, calibration: bool, **options) -> Measurement:
    """A llama-bench run of XiongjieDai/GPU-Benchmarks-on-LLM-Inference (tg512 or pp512)."""
    outside = options.pop("outside", "")  # why the plan misses it, if it does
    return Measurement(name, what, model, hw, "llamacpp", value, XD + where, calibration, options, outside)


def trt(name: str, what: str, model: str, hw: str, value: float, where: str, calibration: bool, **options) -> Measurement:
    """A row of TensorRT-LLM's performance tables."""
    return Measurement(name, what, model, hw, "trtllm", value, TRT + where, calibration, options)


GIB = 2**30
MIB = 2**20

MEASUREMENTS: tuple[Measurement, ...] = (
    cpp(
        "Llama 3 8B Q4_K_M, RTX 4090, tg512", "decode", "llama3-8b", "rtx4090", 130.58, ", LLaMA 3, NVIDIA GPUs", True, dtype="q4_k_m"
    ),
    cpp(
        "Llama 3 8B Q4_K_M, RTX 4090, pp512",
        "prefill",
        "llama3-8b",
        "rtx4090",
        7138.99,
        ", LLaMA 3, NVIDIA GPUs",
        True,
        dtype="q4_k_m",
    ),
    cpp("Llama 3 8B F16, RTX 4090, tg512", "decode", "llama3-8b", "rtx4090", 54.84, ", LLaMA 3, NVIDIA GPUs", True, dtype="fp16"),
    cpp("Llama 3 8B F16, RTX 4090, pp512", "prefill", "llama3-8b", "rtx4090", 9382.0, ", LLaMA 3, NVIDIA GPUs", True, dtype="fp16"),
    cpp(
        "Llama 3 8B Q4_K_M, M1 Max 32-core, tg512",
        "decode",
        "llama3-8b",
        "m1-max",
        35.73,
        ", LLaMA 3, Apple Silicon",
        True,
        dtype="q4_k_m",
    ),
    cpp(
        "Llama 3 8B Q4_K_M, M1 Max 32-core, pp512",
        "prefill",
        "llama3-8b",
        "m1-max",
        408.23,
        ", LLaMA 3, Apple Silicon",
        True,
        dtype="q4_k_m",
    ),
    cpp(
        "Llama 3 8B F16, M1 Max 32-core, tg512", "decode", "llama3-8b", "m1-max", 18.75, ", LLaMA 3, Apple Silicon", True, dtype="fp16"
    ),
    cpp(
        "Llama 3 8B F16, M1 Max 32-core, pp512",
        "prefill",
        "llama3-8b",
        "m1-max",
        517.34,
        ", LLaMA 3, Apple Silicon",
        True,
        dtype="fp16",
    ),
    cpp(
        "Llama 3 8B Q4_K_M, M3 Max 40-core, tg512",
        "decode",
        "llama3-8b",
        "m3-max",
        48.97,
        ", LLaMA 3, Apple Silicon",
        True,
        dtype="q4_k_m",
    ),
    cpp(
        "Llama 3 8B Q4_K_M, M3 Max 40-core, pp512",
        "prefill",
        "llama3-8b",
        "m3-max",
        693.32,
        ", LLaMA 3, Apple Silicon",
        True,
        dtype="q4_k_m",
    ),
    cpp(
        "Llama 3 8B F16, M3 Max 40-core, tg512", "decode", "llama3-8b", "m3-max", 22.04, ", LLaMA 3, Apple Silicon", True, dtype="fp16"
    ),
    cpp(
        "Llama 3 8B F16, M3 Max 40-core, pp512",
        "prefill",
        "llama3-8b",
        "m3-max",
        769.84,
        ", LLaMA 3, Apple Silicon",
        True,
        dtype="fp16",
    ),
    cpp(
        "Llama 3 70B Q4_K_M, 2 × RTX 4090, tg512",
        "decode",
        "llama3-70b",
        "rtx4090",
        19.22,
        ", LLaMA 3, NVIDIA GPUs",
        False,
        dtype="q4_k_m",
        gpus=2,
    ),
    cpp(
        "Llama 3 70B Q4_K_M, 2 × RTX 4090, pp512",
        "prefill",
        "llama3-70b",
        "rtx4090",
        839.43,
        ", LLaMA 3, NVIDIA GPUs",
        False,
        dtype="q4_k_m",
        gpus=2,
    ),
    cpp(
        "Llama 3 70B Q4_K_M, 4 × RTX 4090, tg512",
        "decode",
        "llama3-70b",
        "rtx4090",
        19.8,
        ", LLaMA 3, NVIDIA GPUs",
        False,
        dtype="q4_k_m",
        gpus=4,
    ),
    cpp(
        "Llama 3 8B Q4_K_M, 2 × RTX 4090, tg512",
        "decode",
        "llama3-8b",
        "rtx4090",
        124.65,
        ", LLaMA 3, NVIDIA GPUs",
        False,
        dtype="q4_k_m",
        gpus=2,
    ),
    cpp(
        "Llama 3 70B Q4_K_M, M1 Max 32-core 64 GB, tg512",
        "decode",
        "llama3-70b",
        "m1-max",
        4.34,
        ", LLaMA 3, Apple Silicon",
        False,
        dtype="q4_k_m",
        outside=M1_MAX,
    ),
    cpp(
        "Llama 3 70B Q4_K_M, M1 Max 32-core 64 GB, pp512",
        "prefill",
        "llama3-70b",
        "m1-max",
        34.96,
        ", LLaMA 3, Apple Silicon",
        False,
        dtype="q4_k_m",
    ),
    cpp(
        "Llama 3 70B Q4_K_M, M3 Max 40-core, tg512",
        "decode",
        "llama3-70b",
        "m3-max",
        7.65,
        ", LLaMA 3, Apple Silicon",
        False,
        dtype="q4_k_m",
    ),
    cpp(
        "Llama 3 70B Q4_K_M, M3 Max 40-core, pp512",
        "prefill",
        "llama3-70b",
        "m3-max",
        70.19,
        ", LLaMA 3, Apple Silicon",
        False,
        dtype="q4_k_m",
    ),
    trt(
        "LLaMA 7B FP8, H100, batch 48, 2048 in / 2048 out",
        "throughput",
        "llama2-7b",
        "h100-sxm",
        2740,
        ", Peak Throughput, H100 (FP8), v0.6.1",
        True,
        dtype="fp8",
        kv_dtype="fp8",
        prompt=2048,
        generate=2048,
        batch=48,
    ),
    trt(
        "LLaMA 7B FP8, H100, batch 1, 2048 in: first token",
        "ttft",
        "llama2-7b",
        "h100-sxm",
        0.036,
        ", Low Latency, H100 (FP8), v0.5",
        True,
        dtype="fp8",
        kv_dtype="fp8",
        prompt=2048,
    ),
    trt(
        "LLaMA 7B FP16, A100, batch 1, 2048 in: first token",
        "ttft",
        "llama2-7b",
        "a100-80gb",
        0.133,
        ", Low Latency, A100 (FP16), v0.5",
        True,
        dtype="fp16",
        kv_dtype="fp16",
        prompt=2048,
    ),
    trt(
        "LLaMA 7B FP8, H100, batch 112, 128 in / 2048 out",
        "throughput",
        "llama2-7b",
        "h100-sxm",
        6818,
        ", Peak Throughput, H100 (FP8), v0.6.1",
        False,
        dtype="fp8",
        kv_dtype="fp8",
        prompt=128,
        generate=2048,
        batch=112,
    ),
    trt(
        "LLaMA 7B FP16, A100, batch 60, 128 in / 2048 out",
        "throughput",
        "llama2-7b",
        "a100-80gb",
        1928,
        ", Peak Throughput, A100 (FP16)",
        False,
        dtype="fp16",
        kv_dtype="fp16",
        prompt=128,
        generate=2048,
        batch=60,
    ),
    trt(
        "LLaMA 70B FP8, 4 × H100 (tp 4), batch 1, 2048 in: first token",
        "ttft",
        "llama2-70b",
        "h100-sxm",
        0.109,
        ", Low Latency, H100 (FP8), v0.5",
        False,
        dtype="fp8",
        kv_dtype="fp8",
        prompt=2048,
        gpus=4,
    ),
    trt(
        "LLaMA 70B FP16, 4 × A100 (tp 4), batch 1, 2048 in: first token",
        "ttft",
        "llama2-70b",
        "a100-80gb",
        0.377,
        ", Low Latency, A100 (FP16), v0.5",
        False,
        dtype="fp16",
        kv_dtype="fp16",
        prompt=2048,
        gpus=4,
    ),
)

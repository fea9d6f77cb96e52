"""Serving plans against published measurements: each record states a run as it was measured (model, device,
format, engine, prompt, generated tokens, batch), the figure measured and where it was published. ``check``
plans the same run and gives the engine's expected figure, the roofline and their ratios to the measurement.

The calibration set is what the engines' shares (engines.py) were fitted to; the held-out set was not used to
fit anything. The docs page ``docs/guide/accuracy.md`` shows both (``page``), and the tests hold every expected
figure within 0.75–1.33× of its measurement and every roofline at or above it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# llama.cpp's llama-bench runs of Llama 3 (May 2024) and Llama 2 (Dec 2023) on many devices
XD = "XiongjieDai/GPU-Benchmarks-on-LLM-Inference, README (https://github.com/XiongjieDai/GPU-Benchmarks-on-LLM-Inference)"
# TensorRT-LLM's published performance tables: v0.6.1 throughput, v0.5 first-token latency at batch 1
TRT = "TensorRT-LLM docs/source/performance.md (https://github.com/NVIDIA/TensorRT-LLM/blob/release/0.6.1/docs/source/performance.md)"


@dataclass(frozen=True)
class Measurement:
    name: str
    what: str  # decode (tokens/s, one sequence), prefill (tokens/s), ttft (s), throughput (output tokens/s a GPU),
    #            kv_memory (bytes), kv_bytes (bytes of the cache), weights (bytes a device)
    model: str
    hardware: str
    engine: str
    value: float
    source: str
    calibration: bool
    options: dict = field(default_factory=dict)  # infer's or fit's keywords (dtype, gpus, prompt, generate, …)
    outside: str = ""  # why the plan misses this one by more than the band (shown on the page)


GIB = 2**30
MIB = 2**20

MEASUREMENTS: tuple[Measurement, ...] = (
    # --- llama.cpp (CUDA and Metal): llama-bench tg512 (decode from an empty cache) and pp512 ----------------
    Measurement(
        "Llama 3 8B Q4_K_M, RTX 4090, tg512",
        "decode",
        "llama3-8b",
        "rtx4090",
        "llamacpp",
        130.58,
        XD + ", LLaMA 3, NVIDIA GPUs",
        True,
        {"dtype": "q4_k_m"},
    ),
    Measurement(
        "Llama 3 8B Q4_K_M, RTX 4090, pp512",
        "prefill",
        "llama3-8b",
        "rtx4090",
        "llamacpp",
        7138.99,
        XD + ", LLaMA 3, NVIDIA GPUs",
        True,
        {"dtype": "q4_k_m"},
    ),
    Measurement(
        "Llama 3 8B F16, RTX 4090, tg512",
        "decode",
        "llama3-8b",
        "rtx4090",
        "llamacpp",
        54.84,
        XD + ", LLaMA 3, NVIDIA GPUs",
        True,
        {"dtype": "fp16"},
    ),
    Measurement(
        "Llama 3 8B F16, RTX 4090, pp512",
        "prefill",
        "llama3-8b",
        "rtx4090",
        "llamacpp",
        9382.00,
        XD + ", LLaMA 3, NVIDIA GPUs",
        True,
        {"dtype": "fp16"},
    ),
    Measurement(
        "Llama 3 8B Q4_K_M, M1 Max 32-core, tg512",
        "decode",
        "llama3-8b",
        "m1-max",
        "llamacpp",
        35.73,
        XD + ", LLaMA 3, Apple Silicon",
        True,
        {"dtype": "q4_k_m"},
    ),
    Measurement(
        "Llama 3 8B Q4_K_M, M1 Max 32-core, pp512",
        "prefill",
        "llama3-8b",
        "m1-max",
        "llamacpp",
        408.23,
        XD + ", LLaMA 3, Apple Silicon",
        True,
        {"dtype": "q4_k_m"},
    ),
    Measurement(
        "Llama 3 8B F16, M1 Max 32-core, tg512",
        "decode",
        "llama3-8b",
        "m1-max",
        "llamacpp",
        18.75,
        XD + ", LLaMA 3, Apple Silicon",
        True,
        {"dtype": "fp16"},
    ),
    Measurement(
        "Llama 3 8B F16, M1 Max 32-core, pp512",
        "prefill",
        "llama3-8b",
        "m1-max",
        "llamacpp",
        517.34,
        XD + ", LLaMA 3, Apple Silicon",
        True,
        {"dtype": "fp16"},
    ),
    Measurement(
        "Llama 3 8B Q4_K_M, M3 Max 40-core, tg512",
        "decode",
        "llama3-8b",
        "m3-max",
        "llamacpp",
        48.97,
        XD + ", LLaMA 3, Apple Silicon",
        True,
        {"dtype": "q4_k_m"},
    ),
    Measurement(
        "Llama 3 8B Q4_K_M, M3 Max 40-core, pp512",
        "prefill",
        "llama3-8b",
        "m3-max",
        "llamacpp",
        693.32,
        XD + ", LLaMA 3, Apple Silicon",
        True,
        {"dtype": "q4_k_m"},
    ),
    Measurement(
        "Llama 3 8B F16, M3 Max 40-core, tg512",
        "decode",
        "llama3-8b",
        "m3-max",
        "llamacpp",
        22.04,
        XD + ", LLaMA 3, Apple Silicon",
        True,
        {"dtype": "fp16"},
    ),
    Measurement(
        "Llama 3 8B F16, M3 Max 40-core, pp512",
        "prefill",
        "llama3-8b",
        "m3-max",
        "llamacpp",
        769.84,
        XD + ", LLaMA 3, Apple Silicon",
        True,
        {"dtype": "fp16"},
    ),
    # held out: larger models, several devices (layer split)
    Measurement(
        "Llama 3 70B Q4_K_M, 2 × RTX 4090, tg512",
        "decode",
        "llama3-70b",
        "rtx4090",
        "llamacpp",
        19.22,
        XD + ", LLaMA 3, NVIDIA GPUs",
        False,
        {"dtype": "q4_k_m", "gpus": 2},
    ),
    Measurement(
        "Llama 3 70B Q4_K_M, 2 × RTX 4090, pp512",
        "prefill",
        "llama3-70b",
        "rtx4090",
        "llamacpp",
        839.43,
        XD + ", LLaMA 3, NVIDIA GPUs",
        False,
        {"dtype": "q4_k_m", "gpus": 2},
    ),
    Measurement(
        "Llama 3 70B Q4_K_M, 4 × RTX 4090, tg512",
        "decode",
        "llama3-70b",
        "rtx4090",
        "llamacpp",
        19.80,
        XD + ", LLaMA 3, NVIDIA GPUs",
        False,
        {"dtype": "q4_k_m", "gpus": 4},
    ),
    Measurement(
        "Llama 3 8B Q4_K_M, 2 × RTX 4090, tg512",
        "decode",
        "llama3-8b",
        "rtx4090",
        "llamacpp",
        124.65,
        XD + ", LLaMA 3, NVIDIA GPUs",
        False,
        {"dtype": "q4_k_m", "gpus": 2},
    ),
    Measurement(
        "Llama 3 70B Q4_K_M, M1 Max 32-core 64 GB, tg512",
        "decode",
        "llama3-70b",
        "m1-max",
        "llamacpp",
        4.34,
        XD + ", LLaMA 3, Apple Silicon",
        False,
        {"dtype": "q4_k_m"},
        "the M1 Max reads about 43% of its 400 GB/s here (4.34 tokens/s × 40 GB) where the M3 Max, at the same "
        "400 GB/s, reads 77%: one share for Apple's GPUs cannot hold both",
    ),
    Measurement(
        "Llama 3 70B Q4_K_M, M1 Max 32-core 64 GB, pp512",
        "prefill",
        "llama3-70b",
        "m1-max",
        "llamacpp",
        34.96,
        XD + ", LLaMA 3, Apple Silicon",
        False,
        {"dtype": "q4_k_m"},
    ),
    Measurement(
        "Llama 3 70B Q4_K_M, M3 Max 40-core, tg512",
        "decode",
        "llama3-70b",
        "m3-max",
        "llamacpp",
        7.65,
        XD + ", LLaMA 3, Apple Silicon",
        False,
        {"dtype": "q4_k_m"},
    ),
    Measurement(
        "Llama 3 70B Q4_K_M, M3 Max 40-core, pp512",
        "prefill",
        "llama3-70b",
        "m3-max",
        "llamacpp",
        70.19,
        XD + ", LLaMA 3, Apple Silicon",
        False,
        {"dtype": "q4_k_m"},
    ),
    # --- TensorRT-LLM: static batches (gptSessionBenchmark), output tokens/s a GPU; first token at batch 1 -------
    Measurement(
        "LLaMA 7B FP8, H100, batch 48, 2048 in / 2048 out",
        "throughput",
        "llama2-7b",
        "h100-sxm",
        "trtllm",
        2740,
        TRT + ", Peak Throughput, H100 (FP8), v0.6.1",
        True,
        {"dtype": "fp8", "kv_dtype": "fp8", "prompt": 2048, "generate": 2048, "batch": 48},
    ),
    Measurement(
        "LLaMA 7B FP8, H100, batch 1, 2048 in: first token",
        "ttft",
        "llama2-7b",
        "h100-sxm",
        "trtllm",
        0.036,
        TRT + ", Low Latency, H100 (FP8), v0.5",
        True,
        {"dtype": "fp8", "kv_dtype": "fp8", "prompt": 2048},
    ),
    Measurement(
        "LLaMA 7B FP16, A100, batch 1, 2048 in: first token",
        "ttft",
        "llama2-7b",
        "a100-80gb",
        "trtllm",
        0.133,
        TRT + ", Low Latency, A100 (FP16), v0.5",
        True,
        {"dtype": "fp16", "kv_dtype": "fp16", "prompt": 2048},
    ),
    Measurement(
        "LLaMA 7B FP8, H100, batch 112, 128 in / 2048 out",
        "throughput",
        "llama2-7b",
        "h100-sxm",
        "trtllm",
        6818,
        TRT + ", Peak Throughput, H100 (FP8), v0.6.1",
        False,
        {"dtype": "fp8", "kv_dtype": "fp8", "prompt": 128, "generate": 2048, "batch": 112},
    ),
    Measurement(
        "LLaMA 7B FP16, A100, batch 60, 128 in / 2048 out",
        "throughput",
        "llama2-7b",
        "a100-80gb",
        "trtllm",
        1928,
        TRT + ", Peak Throughput, A100 (FP16)",
        False,
        {"dtype": "fp16", "kv_dtype": "fp16", "prompt": 128, "generate": 2048, "batch": 60},
    ),
    Measurement(
        "LLaMA 70B FP8, 4 × H100 (tp 4), batch 1, 2048 in: first token",
        "ttft",
        "llama2-70b",
        "h100-sxm",
        "trtllm",
        0.109,
        TRT + ", Low Latency, H100 (FP8), v0.5",
        False,
        {"dtype": "fp8", "kv_dtype": "fp8", "prompt": 2048, "gpus": 4},
    ),
    Measurement(
        "LLaMA 70B FP16, 4 × A100 (tp 4), batch 1, 2048 in: first token",
        "ttft",
        "llama2-70b",
        "a100-80gb",
        "trtllm",
        0.377,
        TRT + ", Low Latency, A100 (FP16), v0.5",
        False,
        {"dtype": "fp16", "kv_dtype": "fp16", "prompt": 2048, "gpus": 4},
    ),
    # --- vLLM's memory: the KV cache it allocates, and the weights it loads -----------------------------------
    Measurement(
        "Llama 3 8B bf16, H100, KV cache memory",
        "kv_memory",
        "llama3-8b",
        "h100-sxm",
        "vllm",
        53.29 * GIB,
        "vLLM PR #10511 (https://github.com/vllm-project/vllm/pull/10511), `vllm serve meta-llama/Meta-Llama-3-8B`: "
        "available_kv_cache_memory 53.29GiB",
        True,
        {"context": 8192},
    ),
    Measurement(
        "Llama 3.1 405B FP8 (attention, first and last layers bf16), 8 × H100, weights a GPU",
        "weights",
        "llama3.1-405b",
        "h100-sxm",
        "vllm",
        57.752 * GIB,
        "vLLM issue #6746 (https://github.com/vllm-project/vllm/issues/6746), Meta-Llama-3.1-405B-Instruct-FP8 at tp 8: "
        "Loading model weights took 57.7520 GB (vLLM's GB are GiB)",
        False,
        {"dtype": "fp8", "keep": ("attention=bf16", "layers:0=bf16", "layers:125=bf16"), "gpus": 8, "context": 8192},
    ),
    # --- llama.cpp's KV cache in its block types -----------------------------------------------------------
    Measurement(
        "Qwen3-8B architecture, KV cache q8_0, 2,560 cells",
        "kv_bytes",
        "qwen3-8b",
        "rtx4090",
        "llamacpp",
        191.25 * MIB,
        "llama.cpp PR #21551 (https://github.com/ggml-org/llama.cpp/pull/21551), Bonsai 8B (Qwen3-8B's shape): kvcache "
        "size f16 360.00 MiB (2,560 cells of 36 layers × 2 × 1,024 × 2 bytes), q8_0 191.25 MiB",
        False,
        {"kv_dtype": "q8_0", "context": 2560},
    ),
    Measurement(
        "Qwen3-8B architecture, KV cache q4_0, 2,560 cells",
        "kv_bytes",
        "qwen3-8b",
        "rtx4090",
        "llamacpp",
        101.25 * MIB,
        "llama.cpp PR #21551 (https://github.com/ggml-org/llama.cpp/pull/21551), Bonsai 8B: kvcache size q4_0 101.25 MiB",
        False,
        {"kv_dtype": "q4_0", "context": 2560},
    ),
)


@dataclass(frozen=True)
class Check:
    m: Measurement
    expected: float
    roofline: float | None  # None: the figure has no bound (bytes)

    @property
    def ratio(self) -> float:
        return self.expected / self.m.value


def plan(m: Measurement) -> Check:
    """The plan of the measured run: the engine's expected figure and the roofline in the measurement's unit."""
    import ffncalc

    o = dict(m.options)
    if m.what in ("kv_memory", "weights", "kv_bytes"):
        context = o.pop("context")
        r = ffncalc.fit(m.model, hardware=m.hardware, engine=m.engine, context=context, **o)
        f = {k: v.value for k, v in r.figures.items()}
        if m.what == "kv_memory":
            per_token = ffncalc.infer(m.model, prompt=1, generate=1, **{k: v for k, v in o.items() if k == "kv_dtype"})
            return Check(m, f["kv_capacity_tokens"] * per_token["kv_bytes_per_token"].value, None)
        if m.what == "weights":
            return Check(m, f["weight_bytes_per_device"], None)
        return Check(m, f["kv_bytes_per_device"], None)
    prompt, generate = o.pop("prompt", 512 if m.what == "prefill" else 1), o.pop("generate", 512 if m.what == "decode" else 1)
    r = ffncalc.infer(m.model, prompt=prompt, generate=generate, hardware=m.hardware, engine=m.engine, **o)
    f = {k: v.value for k, v in r.figures.items()}
    if m.what == "decode":
        return Check(m, f["expected_decode_tokens_per_s_per_sequence"], f["decode_tokens_per_s_per_sequence"])
    if m.what == "prefill":
        return Check(m, prompt / f["expected_prefill_s"], prompt / f["roofline_prefill_s"])
    if m.what == "ttft":
        return Check(m, f["expected_ttft_s"], f["ttft_s"])
    return Check(m, f["expected_output_tokens_per_s_per_gpu"], f["output_tokens_per_s_per_gpu"])


def checks() -> list[Check]:
    return [plan(m) for m in MEASUREMENTS]


UNITS = {"decode": "tokens/s", "prefill": "tokens/s", "throughput": "tokens/s a GPU", "ttft": "s"}


def page() -> str:
    """The serving section of docs/guide/accuracy.md, between its markers."""
    lines = [
        "<!-- serving: generated by ffncalc.analysis.accuracy.serving.page -->",
        "## Serving",
        "",
        "Each published measurement beside the plan of the same run: the engine's expected figure (`--engine`), its",
        "ratio to the measurement, and the roofline (an upper bound, which no measurement exceeds for rates; for",
        "times, a lower bound). The calibration set fixed the engines' shares (`ffncalc/analysis/engines.py`); the",
        "held-out set fixed nothing. Tests hold every expected figure within 0.75–1.33× of its measurement.",
        "",
    ]
    for title, calibration in (("Calibration set", True), ("Held out", False)):
        lines += [
            f"### {title}",
            "",
            "| run | engine | measured | expected | ratio | roofline | source |",
            "|---|---|---:|---:|---:|---:|---|",
        ]
        for c in checks():
            if c.m.calibration != calibration:
                continue
            unit = UNITS.get(c.m.what)
            show = (lambda v: f"{v:,.4g}") if unit else (lambda v: f"{v / GIB:,.3f} GiB" if v > GIB else f"{v / MIB:,.2f} MiB")
            roof = show(c.roofline) if c.roofline is not None else "—"
            lines.append(
                f"| {c.m.name} ({c.m.what}{', ' + unit if unit else ''}) | {c.m.engine} | {show(c.m.value)} | "
                f"{show(c.expected)} | {c.ratio:.2f}{' (outside: ' + c.m.outside + ')' if c.m.outside else ''} | {roof} | "
                f"{c.m.source} |"
            )
        lines.append("")
    lines.append("<!-- /serving -->")
    return "\n".join(lines) + "\n"

"""Serving measurements published in engines' pull requests, issues, docs and blogs (vLLM, SGLang, llama.cpp,
mlx-lm, DeepSeek), each with its source: the calibration set fitted the engines' shares (engines.py); the held-out set
fitted nothing. The tables' runs (llama-bench, TensorRT-LLM's) are in serving_records.py."""

from __future__ import annotations

from .serving_records import GIB, MIB, Measurement

# vLLM's benchmark_latency runs in its pull requests
V3240 = (
    "vLLM PR #3240 (https://github.com/vllm-project/vllm/pull/324"
    "0), benchmark_latency.py, Mixtral-8x7B-Instruct, 1000 in / 50 out, tp 2 on A100: "
)
V4002 = (
    "vLLM PR #4002 (https://github.com/vllm-project/vllm/pull/4002), benchm"
    "ark_latency.py with its defaults (32 in / 128 out), Mixtral 8x22B on A100-80G, with config: "
)
V2542 = (
    "vLLM PR #2542 (https://github.com/vllm-project/vllm/pull/254"
    "2), benchmark_latency.py, Mixtral-8x7B-Instruct, 1000 in / 50 out, tp 8 on H100: "
)
EARLY_MOE = (
    "vLLM's first fused MoE kernel (January 2024), before its H100 configurations: the same engine's A100"
    " runs and later H100 tuning (PRs #3692, #5238) fall within the band"
)


def vllm_latency(name: str, model: str, hw: str, value: float, source: str, calibration: bool, outside: str = "", **options):
    """A benchmark_latency run in a vLLM pull request: seconds for the batch's prompt and generation."""
    return Measurement(name, "latency", model, hw, "vllm", value, source, calibration, options, outside)


# SGLang's large-scale expert parallelism on H100s: prefill and decode each measured alone, on its own nodes
# (prefill-decode disaggregation), DP attention (tp 1 a copy), DeepEP's all-to-alls, DeepGEMM's fp8 experts,
# EPLB's 288 expert slots (256 and 32 redundant), two-batch overlap
LMSYS_EP = (
    "SGLang, Deploying DeepSeek with PD Disaggregation and Large-scale Expert Parallelism on 96 H100 GPUs "
    "(https://lmsys.org/blog/2025-05-05-large-scale-ep/, lm-sys/lm-sys.github.io blog/2025-05-05-large-scale-ep.md), "
)
DEEPSEEK_DAY = (
    "a day's average of DeepSeek's online service, whose load, and so its batch, falls at night (its nodes then go to "
    "training); the plan holds the 128 sequences a device of DeepSeek's profile of a loaded decode instance"
)

# SGLang v0.3.0 against vLLM v0.6.0, online: ShareGPT requests at a fixed rate, the median time between a request's
# streamed tokens. The batch decoding at once is the requests in flight: the rate × the median end-to-end latency
# (Little's law, the median standing for the mean). The benchmark states no lengths: the plan holds 256 prompt and 256
# generated tokens, a ShareGPT conversation's few hundred; at these batches the cache is under 3% of a step's bytes
# (Llama 3 8B: 6 × 512 × 131,072 bytes beside 16 GB of weights), so the lengths move the plan little
SGL_060 = (
    "SGLang benchmark/benchmark_vllm_060/README.md (https://github.com/sgl-project/sglang/blob/main/benchmark/"
    "benchmark_vllm_060/README.md), SGLang v0.3.0, `sglang.bench_serving --backend sglang --dataset-name sharegpt`, "
)

MEASUREMENTS: tuple[Measurement, ...] = (
    vllm_latency(
        "Mixtral 8x7B bf16, 2 × A100 (tp 2), batch 1, 1000 in / 50 out",
        "mixtral-8x7b",
        "a100-80gb",
        0.7621,
        V3240 + "BS 1, Avg latency 0.7621 s",
        True,
        prompt=1000,
        generate=50,
        batch=1,
        gpus=2,
    ),
    vllm_latency(
        "Mixtral 8x7B bf16, 2 × A100 (tp 2), batch 8, 1000 in / 50 out",
        "mixtral-8x7b",
        "a100-80gb",
        2.0341,
        V3240 + "BS 8, Avg latency 2.0341 s",
        True,
        prompt=1000,
        generate=50,
        batch=8,
        gpus=2,
    ),
    vllm_latency(
        "Mixtral 8x7B bf16, 2 × A100 (tp 2), batch 64, 1000 in / 50 out",
        "mixtral-8x7b",
        "a100-80gb",
        7.5374,
        V3240 + "BS 64, Avg latency 7.5374 s",
        True,
        prompt=1000,
        generate=50,
        batch=64,
        gpus=2,
    ),
    vllm_latency(
        "Mixtral 8x22B bf16, 8 × A100 (tp 8), batch 8, 32 in / 128 out",
        "mixtral-8x22b",
        "a100-80gb",
        3.7084,
        V4002 + "TP8 bs 8, Avg latency 3.7084 s",
        False,
        prompt=32,
        generate=128,
        batch=8,
        gpus=8,
    ),
    vllm_latency(
        "Mixtral 8x22B bf16, 4 × A100 (tp 4), batch 8, 32 in / 128 out",
        "mixtral-8x22b",
        "a100-80gb",
        5.4268,
        V4002 + "TP4 bs 8, Avg latency 5.4268 s",
        False,
        prompt=32,
        generate=128,
        batch=8,
        gpus=4,
    ),
    vllm_latency(
        "Mixtral 8x22B bf16, 8 × A100 (tp 8), batch 32, 32 in / 128 out",
        "mixtral-8x22b",
        "a100-80gb",
        4.3907,
        V4002 + "TP8 bs 32, Avg latency 4.3907 s",
        False,
        prompt=32,
        generate=128,
        batch=32,
        gpus=8,
    ),
    vllm_latency(
        "Mixtral 8x22B bf16, 4 × A100 (tp 4), batch 32, 32 in / 128 out",
        "mixtral-8x22b",
        "a100-80gb",
        6.8939,
        V4002 + "TP4 bs 32, Avg latency 6.8939 s",
        False,
        prompt=32,
        generate=128,
        batch=32,
        gpus=4,
    ),
    vllm_latency(
        "Mixtral 8x7B bf16, 8 × H100 (tp 8), batch 1, 1000 in / 50 out",
        "mixtral-8x7b",
        "h100-sxm",
        0.459,
        V2542 + "bs=1: 0.459s",
        False,
        outside=EARLY_MOE,
        prompt=1000,
        generate=50,
        batch=1,
        gpus=8,
    ),
    vllm_latency(
        "Mixtral 8x7B bf16, 8 × H100 (tp 8), batch 8, 1000 in / 50 out",
        "mixtral-8x7b",
        "h100-sxm",
        0.813,
        V2542 + "bs=8: 0.813s",
        False,
        outside=EARLY_MOE,
        prompt=1000,
        generate=50,
        batch=8,
        gpus=8,
    ),
    vllm_latency(
        "Mixtral 8x7B bf16, 8 × H100 (tp 8), batch 64, 1000 in / 50 out",
        "mixtral-8x7b",
        "h100-sxm",
        2.419,
        V2542 + "bs=64: 2.419s",
        False,
        outside=EARLY_MOE,
        prompt=1000,
        generate=50,
        batch=64,
        gpus=8,
    ),
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
        "Llama 2 7B fp16, A100 80GB, KV cache capacity",
        "kv_tokens",
        "llama2-7b",
        "a100-80gb",
        "vllm",
        7351 * 16,
        "vLLM PR #2031 (https://github.com/vllm-project/vllm/pull/2031), Fix peak memory profiling (December 2023): "
        "Llama2-7B with TP=1 and 1xA100-80GB, this PR: # GPU blocks: 7351 (16-token blocks, gpu_memory_utilization "
        "0.9); the profile's forward of max(max_model_len 4,096, 2,560) tokens",
        False,
        {"dtype": "fp16", "kv_dtype": "fp16", "context": 4096},
    ),
    Measurement(
        "Llama 3.1 8B bf16, A100 80GB, 4 requests/s (about 6 decoding): median inter-token latency",
        "decode",
        "llama3-8b",
        "a100-80gb",
        "sglang",
        1 / 0.01193,
        SGL_060 + "`--num-prompts 1200 --request-rate 4`, Llama 3.1 8B Instruct 1 x A100 80G: Median ITL 11.93 ms, "
        "Median E2E Latency 1,564.17 ms (4 × 1.56 s: 6 requests in flight), as tokens/s; Llama 3.1 8B has Llama 3 8B's "
        "weights and cache",
        False,
        {"prompt": 256, "generate": 256, "batch": 6},
    ),
    Measurement(
        "Llama 3.1 70B bf16, 4 × H100 (tp 4), 4 requests/s (about 12 decoding): median inter-token latency",
        "decode",
        "llama3-70b",
        "h100-sxm",
        "sglang",
        1 / 0.02167,
        SGL_060 + "`--num-prompts 1200 --request-rate 4`, Llama 3.1 70B Instruct 4 x H100 80G (--tp 4): Median ITL "
        "21.67 ms, Median E2E Latency 3,005.24 ms (4 × 3.0 s: 12 requests in flight), as tokens/s",
        False,
        {"prompt": 256, "generate": 256, "batch": 12, "gpus": 4},
    ),
    Measurement(
        "Llama 3 70B bf16, M2 Ultra 192 GB, 100 tokens generated",
        "decode",
        "llama3-70b",
        "m2-ultra",
        "mlx",
        4.7,
        "mlx-examples PR #1069 (https://github.com/ml-explore/mlx-examples/pull/1069), Wire models in MLX LM: on an "
        "M2 Ultra, Llama 3.1 70B in 16-bit precision, `python -m mlx_lm.generate --model "
        'meta-llama/Meta-Llama-3-70B-Instruct --prompt "Write a story about Einstein" --max-tokens 100`, wired: '
        "prompt (16 toks), generation (100 toks) 4.7 toks/sec; of the M2 Ultra's 64, 128 and 192 GB only 192 holds the "
        "weights' 141 GB",
        False,
        {"dtype": "bf16", "prompt": 16, "generate": 100},
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
    Measurement(
        "DeepSeek-V3 fp8, 9 × 8 H100 decode (EP 72 planned as 64), 256 sequences a GPU, 2,000 tokens cached",
        "decode_throughput",
        "deepseek-v3",
        "h100-sxm",
        "sglang",
        22282 / 8,
        LMSYS_EP + "Evaluation: decode on 9 nodes (EP72), 22,282 tokens/s a node for 2K inputs; decode table: batch "
        "256, KV cache length 2,000. 288 expert slots over 72 devices hold 4 a device, as 256 over 64 do",
        True,
        {"dtype": "fp8", "gpus": 64, "tp": 1, "ep": 64, "prompt": 2000, "batch": 256 * 64, "two_batch_overlap": True},
    ),
    Measurement(
        "DeepSeek-V3 fp8, 4 × 8 H100 prefill (EP 32), 16,384 tokens a GPU of 4,096-token prompts",
        "prefill_throughput",
        "deepseek-v3",
        "h100-sxm",
        "sglang",
        50302 / 8,
        LMSYS_EP + "Evaluation: prefill on 4 nodes (EP32), 50,302 tokens/s a node for 4K prompts; prefill table: "
        "16,384 tokens a device, input length 4,096; Expert Parallelism with DeepEP: normal dispatch for prefill, "
        "low-latency for decode; each token's experts on at most 4 nodes (DeepSeek-V3's routing, §2.1.2)",
        False,
        {
            "dtype": "fp8",
            "gpus": 32,
            "tp": 1,
            "ep": 32,
            "prompt": 4096,
            "batch": 4 * 32,
            "prefill_chunk": 16384,
            "two_batch_overlap": True,
            "max_nodes": 4,
        },
    ),
    Measurement(
        "DeepSeek-V3 fp8, 18 × 8 H800 decode (EP 144 planned as 128), 128 sequences a GPU, MTP accepted at 0.85",
        "decode_throughput",
        "deepseek-v3",
        "h800",
        "sglang",
        14800 / 8,
        "DeepSeek, Day 6 of Open Source Week, DeepSeek-V3/R1 Inference System Overview (https://github.com/deepseek-ai/"
        "open-infra-index, 2025-03-01), DeepSeek's own engine planned with SGLang's profile (the same DeepEP and DeepGEMM "
        "kernels): decode EP144 over 18 nodes (32 redundant experts: 2 routed and 1 redundant a GPU, as 256 over "
        "128), about 14.8k output tokens/s an H800 node, dual micro-batch overlap; 128 sequences a device and the "
        "4,989 tokens cached on average as SGLang's comparison table (lmsys.org, 2025-05-05) reads them; MTP's second "
        "token accepted 85–90% of the time (DeepSeek-V3 report, §5.4.3): 0.85",
        False,
        {
            "dtype": "fp8",
            "gpus": 128,
            "tp": 1,
            "ep": 128,
            "prompt": 4989,
            "batch": 128 * 128,
            "draft": 1,
            "accept": 0.85,
            "two_batch_overlap": True,
        },
        DEEPSEEK_DAY,
    ),
)

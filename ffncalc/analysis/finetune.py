"""Fine-tuning with adapters (LoRA, DoRA; QLoRA on a quantized base): the trainable parameters, the FLOPs and time of
a run, and the memory of a step per device, on the devices asked for or the fewest that fit. Pure arithmetic; no
torch.

What a step holds per device, as Hugging Face's Trainer with peft runs it: the frozen base in its stored format
(quantized.py); the adapters (and the modules saved whole) in ``Tuning.adapter_dtype``, their gradients in the same
dtype and the optimizer's moments (frameworks.MOMENT_BYTES; no master copy: fp32 adapters are their own); the
activations kept for backward (memory.activation_bytes: the frozen base still passes input gradients back, so each
linear's input is kept as in full training, which the adapters' A matrices need anyway) and each adapter's r-wide
product A·x (16-bit, what B's gradient reads); a quantized base's weight dequantized to bf16 for its matmul, the
largest one; and at the peak the larger of the logits and loss (an fp32 unfused cross-entropy, transformers'
ForCausalLMLoss, or a chunked one) or one layer rebuilt under gradient checkpointing. Over several devices the
adapters' states follow ZeRO (DDP replicates them; FSDP shards the base too, gathering a layer and the next).
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import InputError
from ..model.stack import Model
from .adapters import Adapters, adapters
from .count import tally
from .figures import Figure, Figures
from .frameworks import FRAMEWORKS, MOMENT_BYTES, loss_bytes
from .memory import ALLOCATOR_SHARE, CUDA_CONTEXT_BYTES, activation_bytes
from .plan import Device, Layout, Step, TrainingRun, Tuning
from .quantized import ELEMENT_BYTES, base_bytes, linear_bytes

ADAPTER_BYTES = {"fp32": 4, "bf16": 2}
QUANTIZED = ("int8", "nf4", "fp4", "gptq", "awq", "fp8")
MOST_GPUS = 64  # the fewest-devices search stops here


def lora_flops_per_token(spec: Model, step: Step, convention: str, found: Adapters) -> tuple[int, int]:
    """(FLOPs a token of a LoRA step, of which the adapters'): the frozen base's forward F and its backward for the
    input gradients only (a matmul's input gradient is as much work as its forward, Hu et al. 2021 §4.2: no weight
    gradients), the attention products' second operand too (both are activations), the forward rebuilt under
    recomputation; and 6 FLOPs per adapter parameter a token passes through (2 forward, 4 backward)."""
    t = tally(spec, convention=convention, seq_len=step.seq_len, recompute=step.recompute)
    forward = t.forward_flops // t.tokens
    core = int(sum(r.flops for r in t.rows if r.role == "core"))
    own = 6 * sum(a.active for a in found.adapted) + 6 * sum(n for _, n in found.saved)
    return 2 * forward + core + t.recompute_flops // t.tokens + own, own


def _rank_bytes(spec: Model, found: Adapters, tokens: int) -> int:
    """The adapters' A·x products kept for B's gradient: r 16-bit elements a token for each adapted module
    (a routed expert's for the tokens it runs)."""
    per_token = sum(2 * a.rank * a.instances * a.share[0] // a.share[1] for a in found.adapted if a.layers)
    return per_token * tokens


def _gathered(spec: Model, tune: Tuning) -> int:
    """Under FSDP the base is gathered a layer at a time and the next prefetched: twice its largest layer."""
    most = 0
    for run in spec.runs():
        layer = sum(
            lin.copies * linear_bytes(lin, tune.base_dtype, tune.double_quant, tune.kbit_fp32)
            for _, block in run.layer.blocks()
            for lin in block.linears(spec)
        )
        most = max(most, layer)
    return 2 * most


def _dequantized(spec: Model, tune: Tuning) -> int:
    """A quantized base's largest linear weight dequantized to bf16 for its matmul (bitsandbytes' MatMul4Bit
    dequantizes the whole weight, forward and backward)."""
    if tune.base_dtype not in QUANTIZED:
        return 0
    sizes = [
        lin.d_in * lin.d_out for run in spec.runs() for _, b in run.layer.blocks() for lin in b.linears(spec) if lin.kind == "linear"
    ]
    return 2 * max(sizes, default=0)


def finetune_memory(spec: Model, step: Step, layout: Layout, device: Device, tune: Tuning, found: Adapters) -> list[Figure]:
    """Per-device memory of a fine-tuning step (module docstring): ``layout.dp`` replicas, ZeRO ``layout.zero``."""
    dp, zero = layout.dp or 1, layout.zero or 0
    seq = step.seq_len or spec.context_length
    tokens = step.micro_batch * seq
    base = base_bytes(spec, tune.base_dtype, tune.double_quant, tune.kbit_fp32)
    trainable = found.trainable
    a_b = ADAPTER_BYTES[tune.adapter_dtype]

    def shard(n: int, stage: int) -> int:
        return -(-n // dp) if zero >= stage else n

    weights = shard(base.total, 3) + (_gathered(spec, tune) if zero >= 3 and dp > 1 else 0)
    adapter = shard(a_b * trainable, 3)
    grads = shard(a_b * trainable, 2)
    optimizer = shard(MOMENT_BYTES[step.optimizer] * trainable, 1)
    acts = activation_bytes(spec, replace(step, seq_len=seq), Layout())
    if step.recompute != "full":
        acts += _rank_bytes(spec, found, tokens)
    loss = loss_bytes(FRAMEWORKS["hf"], step.loss, tokens, spec.vocab_size, spec.head_width)
    if step.loss == "chunked" and "lm_head" not in dict(found.saved):  # a frozen head: no gradient of its weight
        loss -= 2 * spec.vocab_size * spec.head_width
    rebuilt = 0
    if step.recompute == "full":
        rebuilt = max(
            activation_bytes(spec.with_layers([r.layer]), replace(step, seq_len=seq, recompute="none"), Layout()) for r in spec.runs()
        )
        rebuilt += _rank_bytes(spec, found, tokens) // spec.n_layers  # a layer's share of the adapters' A·x
    dequant = _dequantized(spec, tune)
    tensors = weights + adapter + grads + optimizer + acts + dequant + max(loss, rebuilt)
    allocator = int(tensors * ALLOCATOR_SHARE)
    out = [
        Figure("devices", "devices (data parallel)", dp, "devices"),
        Figure(
            "base_bytes_per_device",
            f"frozen base ({tune.base_dtype})",
            weights,
            "bytes",
            f"{base.quantized:,} B of quantized linears, {base.rest:,} B of the rest in {base.rest_dtype}"
            + ("; sharded, a layer and the next gathered (FSDP)" if zero >= 3 and dp > 1 else ""),
        ),
        Figure("adapter_bytes_per_device", f"adapters and saved modules ({tune.adapter_dtype})", adapter, "bytes"),
        Figure("grad_bytes_per_device", "gradients (adapters only)", grads, "bytes", f"{a_b} B a trainable parameter"),
        Figure(
            "optimizer_bytes_per_device",
            f"{step.optimizer} states (adapters only)",
            optimizer,
            "bytes",
            f"{MOMENT_BYTES[step.optimizer]} B a trainable parameter; ZeRO {zero}",
        ),
        Figure(
            "activation_bytes_per_device",
            "activations",
            acts,
            "bytes",
            f"Korthikanti et al. 2022 §4.1 through the frozen base; micro-batch {step.micro_batch}, recompute {step.recompute}"
            + ("" if step.recompute == "full" else ", and each adapter's A·x"),
        ),
        Figure("dequant_bytes_per_device", "a weight dequantized to bf16", dequant, "bytes", "the largest quantized linear"),
        Figure("loss_bytes_per_device", f"logits and loss ({step.loss})", loss, "bytes"),
        Figure(
            "recompute_bytes_per_device", "a recomputed layer", rebuilt, "bytes", "gradient checkpointing rebuilds a layer at a time"
        ),
        Figure("bytes_per_device", "tensors at the peak", tensors, "bytes"),
        Figure("allocator_bytes_per_device", f"caching allocator ({ALLOCATOR_SHARE:.0%} of the tensors)", allocator, "bytes"),
        Figure(
            "reserved_bytes_per_device",
            "reserved by the allocator",
            tensors + allocator,
            "bytes",
            "what torch.cuda.max_memory_reserved reads",
        ),
        Figure("cuda_context_bytes", "CUDA context and NCCL buffers", CUDA_CONTEXT_BYTES, "bytes", "a fixed allowance, stated"),
        Figure("peak_bytes_per_device", "peak per device", tensors + allocator + CUDA_CONTEXT_BYTES, "bytes"),
    ]
    hw = device.hw
    if hw is not None and hw.memory_bytes:
        kept = int(hw.memory_bytes * device.reserve)
        out += [
            Figure("device_memory_bytes", f"{hw.key} memory", hw.memory_bytes, "bytes", hw.source),
            Figure(
                "free_bytes_per_device",
                "left over (negative: short by)",
                hw.memory_bytes - tensors - allocator - CUDA_CONTEXT_BYTES - kept,
                "bytes",
            ),
        ]
    return out


def _free(figures: list[Figure]) -> int:
    return next(f.value for f in figures if f.id == "free_bytes_per_device")  # type: ignore[return-value]


def fewest_devices(spec: Model, step: Step, device: Device, tune: Tuning, found: Adapters) -> Layout | None:
    """The fewest devices that hold the step: one, else FSDP (ZeRO 3) over more, up to MOST_GPUS."""
    for gpus in range(1, MOST_GPUS + 1):
        layout = Layout(gpus=gpus, dp=gpus, zero=0 if gpus == 1 else 3)
        if _free(finetune_memory(spec, step, layout, device, tune, found)) >= 0:
            return layout
    return None


def check_layout(layout: Layout) -> Layout:
    """Adapters are planned over data parallelism alone (DDP, ZeRO 1–3, FSDP)."""
    degrees = {"tp": layout.tp, "pp": layout.pp, "cp": layout.cp, "ep": layout.ep, "virtual-stages": layout.virtual_stages}
    for name, value in degrees.items():
        if value != 1:
            raise InputError(f"--{name} {value}: --lora plans data parallelism alone (--gpus, --zero)")
    dp = layout.dp or layout.gpus or 1
    if layout.gpus is not None and dp != layout.gpus:
        raise InputError(f"--dp {dp}: with --lora every device is a data-parallel replica (--gpus {layout.gpus})")
    zero = layout.zero or 0
    if zero not in (0, 1, 2, 3):
        raise InputError(f"--zero {zero}: one of 0, 1, 2, 3")
    return Layout(gpus=dp, dp=dp, zero=zero)


def plan_finetune(
    spec: Model, label: str, run: TrainingRun | None, step: Step, layout: Layout, device: Device, tune: Tuning
) -> Figures:
    """A fine-tuning run: its trainable parameters, FLOPs and time (``run``; None: the step alone), and its memory
    per device, on ``layout`` or (``run.min_gpus``, or no run and no device count) the fewest devices that fit."""
    from .training import PF_DAY, parse_count, peak_dtype, throughput

    spec.check_seq_len(step.seq_len, label)
    step = replace(step, seq_len=step.seq_len or spec.context_length)
    if tune.adapter_dtype not in ADAPTER_BYTES:
        raise InputError(f"--adapter-dtype {tune.adapter_dtype}: one of {', '.join(ADAPTER_BYTES)}")
    found = adapters(spec, tune)
    base = base_bytes(spec, tune.base_dtype, tune.double_quant, tune.kbit_fp32)
    lay = check_layout(layout)
    searched = layout.gpus is None if run is None else run.min_gpus
    if searched:
        if device.hw is None or not device.hw.memory_bytes:
            raise InputError("--min-gpus: name a device with --hardware, whose memory the step must fit")
        lay = fewest_devices(spec, step, device, tune, found) or lay
    params = tally(spec).params
    figures = [
        Figure("params", "parameters", params, "params"),
        Figure("trainable_params", "trainable parameters", found.trainable, "params", "peft's get_nb_trainable_parameters"),
        Figure("adapter_params", "LoRA parameters (A and B, DoRA magnitudes)", found.lora_params, "params", "r·(in + out) a module"),
        Figure("trainable_share", "trainable share", found.trainable / params, "of parameters"),
        Figure("base_bytes", f"frozen base in {tune.base_dtype}", base.total, "bytes", "quantized.py: bitsandbytes' storage"),
    ]
    notes = [
        f"LoRA rank {tune.lora} on {', '.join(tune.targets)}"
        + (", DoRA" if tune.dora else "")
        + (f", {', '.join(tune.modules_to_save)} trained whole" if tune.modules_to_save else "")
        + f": adapted {', '.join(dict.fromkeys(a.module for a in found.adapted))}; alpha"
        + (" and rsLoRA change" if tune.rslora else " changes")
        + " no count",
        f"frozen base in {tune.base_dtype}: {base.quantized_params:,} parameters of nn.Linear quantized, "
        f"{base.rest_params:,} (embeddings, head, norms, routers, fused experts) in {base.rest_dtype}"
        if base.quantized_params
        else f"frozen base in {tune.base_dtype}: all {base.rest_params:,} parameters",
        *found.notes,
    ]
    inputs: dict[str, object] = {
        "model": label,
        "lora": tune.lora,
        "lora_targets": ",".join(tune.targets),
        "dora": tune.dora,
        "lora_modules_to_save": ",".join(tune.modules_to_save),
        "lora_alpha": tune.alpha,
        "rslora": tune.rslora,
        "base_dtype": tune.base_dtype,
        "double_quant": tune.double_quant,
        "kbit_fp32": tune.kbit_fp32,
        "adapter_dtype": tune.adapter_dtype,
        "seq_len": step.seq_len,
        "micro_batch": step.micro_batch,
        "recompute": step.recompute,
        "optimizer": step.optimizer,
        "loss": step.loss,
        "attention_kernel": step.kernel,
        "gpus": lay.gpus,
        "zero": lay.zero,
        "hardware": device.hw.key if device.hw else None,
    }
    if run is not None:
        convention = run.convention
        per_token, own = lora_flops_per_token(spec, step, convention, found)
        tokens = parse_count(run.tokens, "--tokens") if isinstance(run.tokens, str) else run.tokens
        total = per_token * tokens
        figures += [
            Figure(
                "train_flops_per_token",
                f"fine-tuning FLOPs/token ({convention})",
                per_token,
                "FLOP",
                "forward, input gradients, recompute, 6 × adapters",
            ),
            Figure("adapter_flops_per_token", "of which the adapters'", own, "FLOP", "6 FLOPs an adapter parameter a token uses"),
            Figure("tokens", "tokens", tokens, "tokens"),
            Figure("train_flops", "fine-tuning FLOPs", total, "FLOP"),
            Figure("pf_days", "petaFLOP/s-days", total / PF_DAY, "PF-days", "Brown et al. 2020, Table D.1"),
        ]
        inputs.update(tokens=tokens, convention=convention, mfu=device.mfu, tflops=device.tflops)
        rate = throughput(device, peak_dtype(run, step))
        if run.tokens_per_s is not None or rate:
            seconds = tokens / run.tokens_per_s if run.tokens_per_s else total / (rate.flops_per_s * (lay.gpus or 1))  # type: ignore[union-attr]
            seconds /= run.goodput  # the share of the wall-clock spent training
            if rate and not run.tokens_per_s:
                figures.append(Figure("device_tflops", "device throughput", rate.flops_per_s / 1e12, "TFLOP/s", rate.how))
            figures += [
                Figure("gpu_hours", "GPU-hours", seconds * (lay.gpus or 1) / 3600, "hours"),
                Figure("wall_clock_hours", f"wall-clock on {lay.gpus} devices", seconds / 3600, "hours"),
            ]
    memory = finetune_memory(spec, step, lay, device, tune, found)
    figures += memory
    hw = device.hw
    if hw is not None and hw.memory_bytes:
        free = _free(memory)
        verdict = "fits" if free >= 0 else "does NOT fit"
        room = f"{free / 2**30:,.1f} GiB left over" if free >= 0 else f"short by {-free / 2**30:,.1f} GiB"
        where = f"{lay.gpus} × {hw.key}" + (
            " (FSDP: the base and the adapters' states sharded)" if (lay.zero or 0) >= 3 and (lay.gpus or 1) > 1 else ""
        )
        notes.insert(0, f"{verdict} on {where}: {room} per device, after the caching allocator's share and a fixed CUDA allowance")
        if searched:
            notes.insert(
                1,
                f"the fewest devices that fit: {lay.gpus}"
                if free >= 0
                else f"no count of devices up to {MOST_GPUS} fits at micro-batch {step.micro_batch} with recompute {step.recompute}",
            )
    title = f"fine-tuning {label}: LoRA r={tune.lora}" + (
        f" on a {tune.base_dtype} base" if tune.base_dtype not in ELEMENT_BYTES else ""
    )
    return Figures(title, inputs, figures, notes)

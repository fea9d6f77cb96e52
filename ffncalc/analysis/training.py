"""Training plans from the counts: compute and time of a run, memory per device of a step. Pure arithmetic; no
torch.

Every figure is a keyed ``Figure`` (id, label, value, unit), in order; the renderers show them. Memory sums
over every layer of the stack, each block answering for what it keeps. What a plan is asked is in ``plan.py``:
a ``TrainingRun``, a ``Step``, a ``Layout`` and a ``Device``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from decimal import Decimal

from ..errors import InputError
from ..model.stack import Model
from .count import tally
from .figures import Figure, Figures
from .hardware import NODE
from .memory import ZERO_STAGES, train_memory, trains_mtp
from .plan import Device, Layout, Step, TrainingRun
from .schedules import SCHEDULES, comm_per_token, step_bubble

SECONDS_PER_DAY = 86_400
PF_DAY = 10**15 * SECONDS_PER_DAY  # one petaFLOP/s sustained for a day (Brown et al. 2020, Table D.1)

# Hoffmann et al. 2022 (Chinchilla), §3.3, Eq. (2) fit: L(N, D) = E + A/N^α + B/D^β.
CHINCHILLA = {"E": 1.69, "A": 406.4, "B": 410.7, "alpha": 0.34, "beta": 0.28}
CHINCHILLA_TOKENS_PER_PARAM = 20  # Hoffmann et al. 2022, Table 3: about 20 tokens per parameter

PEAK_DTYPE = {"fp32": "fp32", "bf16": "bf16", "fp16": "fp16", "fp8": "fp8", "int8": "bf16", "int4": "bf16"}


def parse_count(text: str, name: str) -> int:
    """'300B', '300e9', '1.5T', '2048' -> an exact integer."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMbBtT]?)\s*", text)
    if not m:
        raise InputError(f"{name} {text}: give a count such as 300B, 300e9 or 2048")
    shift = {"": 0, "k": 3, "m": 6, "b": 9, "t": 12}[m.group(2).lower()]
    # Decimal reads any exponent exactly; its size is judged before any arithmetic, which an exponent of millions
    # of digits would overflow (or take as long to compute): past the bound is refused, and below 1 is no count
    number = Decimal(m.group(1))
    magnitude = number.adjusted() + shift  # a nonzero value is 10^magnitude to 10^(magnitude + 1)
    if number.is_zero() or magnitude < 0:
        raise InputError(f"{name} {text}: must be a positive whole number")
    if magnitude > 30:
        raise InputError(f"{name} {text}: beyond the limit of 1e30")
    num, den = number.as_integer_ratio()  # exact: the exponent here is bounded by the text's length
    num *= 10**shift
    if num % den:
        raise InputError(f"{name} {text}: must be a positive whole number")
    if num // den > MAX_COUNT:
        raise InputError(f"{name} {text}: beyond the limit of 1e30")
    return num // den


MAX_COUNT = 10**30  # tokens or FLOPs: far beyond any run (GPT-4-scale budgets are ~1e25), and within a float


# The share of the datasheet peak a run achieves end to end when none is given, by the peak it is timed at.
# bf16: Llama 3 405B's pre-training reached 38–43% BF16 MFU on 8K–16K H100s (Dubey et al. 2024, Table 4): 0.4.
# fp8: DeepSeek-V3's pre-training, fp8 mixed precision, took 2.664M H800 GPU-hours for 14.8T tokens (arXiv:2412.19437,
# Table 1 and §3.3): 6 × 37.6B active parameters × 14.8T tokens / (2.664M h × 3,600 s × 1,978.9 TFLOP/s fp8 peak)
# = 0.176 of the fp8 peak, 0.88 of the bf16 default's 396 TFLOP/s: fp8 matmuls with bf16 everything else (and an
# MoE's all-to-all) gain less than the doubled peak suggests. A calibration record (docs/guide/accuracy.md).
DEFAULT_MFU = {"bf16": 0.4, "fp16": 0.4, "fp32": 0.4, "fp8": 0.176}


@dataclass(frozen=True)
class Throughput:
    """Achieved FLOP/s of one device: given, or a datasheet peak times an MFU; ``busy``: achieved while busy (a
    kernel efficiency), so the pipeline bubble stretches the time."""

    flops_per_s: float
    how: str
    busy: bool = False


def throughput(device: Device, dtype: str) -> Throughput | None:
    hw, tflops = device.hw, device.tflops
    if tflops is not None:
        return Throughput(tflops * 1e12, f"{tflops} TFLOP/s per device, as given, end to end")
    if hw is None:
        return None
    peak = hw.tflops.get(PEAK_DTYPE[dtype])
    if peak is None:
        raise InputError(f"--hardware {hw.key}: its datasheet gives no {dtype} figure")
    if device.kernel_mfu is not None:
        return Throughput(
            peak * device.kernel_mfu * 1e12,
            f"{hw.name} {dtype} peak {peak} TFLOP/s × kernel MFU {device.kernel_mfu} while busy ({hw.source})",
            True,
        )
    mfu = device.mfu if device.mfu is not None else DEFAULT_MFU[PEAK_DTYPE[dtype]]
    given = "" if device.mfu is not None else f", the {dtype} default (training.DEFAULT_MFU)"
    return Throughput(peak * mfu * 1e12, f"{hw.name} {dtype} peak {peak} TFLOP/s × MFU {mfu} end to end{given} ({hw.source})")


def compute_optimal(budget: float) -> tuple[float, float]:
    """Hoffmann et al. 2022 Eq. (4) with the §3.3 fit: N_opt = G·(C/6)^a, D_opt = (C/6)^b / G,
    a = β/(α+β), b = α/(α+β), G = (αA / βB)^(1/(α+β))."""
    c = CHINCHILLA
    s = c["alpha"] + c["beta"]
    g = (c["alpha"] * c["A"] / (c["beta"] * c["B"])) ** (1 / s)
    return g * (budget / 6) ** (c["beta"] / s), (budget / 6) ** (c["alpha"] / s) / g


def peak_dtype(run: TrainingRun, step: Step) -> str:
    """The datasheet peak a run is timed at: the one asked for, else its precision's (fp8 for fp8 training)."""
    return run.dtype or ("fp8" if step.precision == "fp8" else "bf16")


def train(
    spec: Model,
    run: TrainingRun,
    step: Step = Step(),
    device: Device = Device(),
    gpus: int = 1,
    bubble: float = 0.0,
    schedule: str = "1f1b",
    comm: float = 0.0,
) -> list[Figure]:
    """Compute and time of a training run of ``run.tokens`` tokens (a count: ``plan_training`` reads text) on
    ``gpus`` devices; ``step.mtp`` (default: whenever the model has them) counts the multi-token prediction
    modules' FLOPs, as a run that trains them executes.

    Time: a measured ``tokens_per_s`` (all devices together) gives the wall-clock directly; otherwise each
    device runs at ``tflops``, or the datasheet peak × ``mfu``; at a kernel efficiency (the rate while busy) the
    collectives no compute hides (``comm``, seconds a token: ``comm_per_token``) are added and the pipeline
    ``bubble`` (the idle fraction of a step of its ``schedule``, Narayanan et al. 2021 §2.2.1; Qi et al. 2023)
    stretches the time by 1 / (1 − bubble). With a global batch, a step's seconds. ``goodput``, the
    fraction of the wall-clock spent training (Llama 3 reports more than 90% over 54 days of restarts after
    failures, Dubey et al. 2024 §3.3.4), stretches either by 1 / goodput."""
    tokens, convention, goodput = run.tokens, run.convention, run.goodput
    tokens_per_s, budget = run.tokens_per_s, run.budget
    seq_len, recompute, hw, dtype = step.seq_len, step.recompute, device.hw, peak_dtype(run, step)
    if not 0 < goodput <= 1:
        raise InputError(f"--goodput {goodput}: a fraction of the wall-clock, above 0 and at most 1")
    mtp = trains_mtp(spec, step)
    t = tally(spec, convention=convention, seq_len=seq_len, recompute=recompute, mtp=mtp)
    per_token = t.train_flops // t.tokens  # forward, backward (2 × forward) and recomputation, per token
    total = per_token * tokens
    views = {
        v: tally(spec, convention=c, seq_len=seq_len, recompute=recompute, mtp=mtp)
        for v, c in (("useful", "causal"), ("executed", "exact"))
    }
    out = [
        Figure("params", "parameters", t.params, "params"),
        Figure("train_flops_per_token", f"train FLOPs/token ({convention})", per_token, "FLOP", t.convention.source),
        *(
            Figure(
                f"train_flops_per_token_{v}",
                f"train FLOPs/token, {label}",
                views[v].train_flops // views[v].tokens,
                "FLOP",
                views[v].convention.source,
            )
            for v, label in (("useful", "useful"), ("executed", "executed"))
        ),
        *once_figures(t),
        Figure("tokens", "tokens", tokens, "tokens"),
        Figure("train_flops", "training FLOPs", total, "FLOP"),
        Figure("train_flops_per_device", f"training FLOPs per device ({convention})", -(-total // gpus), "FLOP"),
        Figure("pf_days", "petaFLOP/s-days", total / PF_DAY, "PF-days", "Brown et al. 2020, Table D.1"),
    ]
    seconds = None
    if tokens_per_s is not None:
        seconds = tokens / tokens_per_s
        out.append(Figure("tokens_per_s", "measured throughput", tokens_per_s, "tokens/s"))
    else:
        rate = throughput(device, dtype)
        if rate:
            seconds = total / (rate.flops_per_s * gpus)
            out.append(Figure("device_tflops", "device throughput", rate.flops_per_s / 1e12, "TFLOP/s", rate.how))
            if rate.busy and comm:  # exposed collectives lengthen each micro-batch
                comm *= tokens
                out.append(
                    Figure(
                        "comm_share",
                        "collectives no compute hides (tp, cp, ep)",
                        comm / (seconds + comm),
                        "of busy time",
                        "tp: an all-reduce's volume after each sublayer, forward and backward (Shoeybi et al. 2019 §3; "
                        "Korthikanti et al. 2022 §4.2.2); cp: the K/V ring's sends beyond its blocks' attention; ep: "
                        "each mixture's dispatch and combine all-to-alls (training.comm_per_token)",
                    )
                )
                seconds += comm
            if rate.busy:  # a kernel efficiency: the pipeline's idle share stretches the time
                seconds /= 1 - bubble
    if bubble:
        out.append(
            Figure("pipeline_bubble", "pipeline bubble (pp−1)/(v·m+pp−1)", bubble, "of step", "Narayanan et al. 2021 §2.2.1–2.2.2")
            if schedule == "1f1b"
            else Figure(
                "pipeline_bubble",
                f"pipeline bubble, {schedule.upper()}: (p−1)(F+B−{'2' if schedule == 'zb-h2' else ''}W) idle",
                bubble,
                "of step",
                "Qi et al. 2023, Zero Bubble Pipeline Parallelism, Table 2",
            )
        )
    if seconds is not None and step.global_batch and step.seq_len:
        # one step: the global batch's tokens at the run's pace (before the goodput, which loses whole steps)
        per_step = seconds * step.global_batch * step.seq_len / tokens
        out.append(Figure("step_seconds", f"a step of {step.global_batch:,} sequences", per_step, "s"))
    if seconds is not None:
        seconds /= goodput
        out += [
            *(
                [
                    Figure(
                        "goodput",
                        "goodput (time spent training)",
                        goodput,
                        "of wall-clock",
                        "the user's; Llama 3 reports above 0.9 (Dubey et al. 2024 §3.3.4)",
                    )
                ]
                if goodput < 1
                else []
            ),
            Figure("gpu_hours", "GPU-hours", seconds * gpus / 3600, "hours"),
            Figure("wall_clock_days", f"wall-clock on {gpus:,} devices", seconds / SECONDS_PER_DAY, "days"),
        ]
    n = t.params
    chinchilla = "Hoffmann et al. 2022, Eq. 4"
    out.append(
        Figure(
            "chinchilla_tokens",
            "Chinchilla tokens (20/param)",
            CHINCHILLA_TOKENS_PER_PARAM * n,
            "tokens",
            "Hoffmann et al. 2022, Table 3",
        )
    )
    c = budget if budget is not None else float(total)
    n_opt, d_opt = compute_optimal(c)
    out += [
        Figure("optimum_budget", "compute budget for the optimum", c, "FLOP"),
        Figure("optimal_params", "compute-optimal parameters", n_opt, "params", chinchilla),
        Figure("optimal_tokens", "compute-optimal tokens", d_opt, "tokens", chinchilla),
    ]
    if tokens_per_s is not None and hw is not None:
        palm = tally(spec, convention="palm", seq_len=seq_len)
        model_flops = palm.train_flops // palm.tokens  # PaLM Appendix B: 6N + 12·L·H·Q·T per token
        peak = hw.tflops.get(PEAK_DTYPE[dtype])
        if peak is None:
            raise InputError(f"--hardware {hw.key}: its datasheet gives no {dtype} figure")
        peak *= 1e12
        out.append(
            Figure(
                "mfu",
                "MFU (PaLM: 6N + 12LHQT)",
                tokens_per_s * model_flops / (gpus * peak),
                "of peak",
                "Chowdhery et al. 2022, Appendix B",
            )
        )
        useful = views["useful"].train_flops // views["useful"].tokens
        out.append(Figure("mfu_useful", "MFU (useful FLOPs)", tokens_per_s * useful / (gpus * peak), "of peak"))
    return out


def once_figures(t) -> list[Figure]:
    """Of the train FLOPs a token, the work once a sequence (an encoder over its S source tokens, scaled S / T to the
    T tokens of the decoder's sequence; the cross-attention's k and v over the source) and the rest (the decoder's
    layers over its tokens, its cross-attention's queries meeting the S keys, the head): each forward, backward
    (2 × forward) and recomputation as ``Tally.train_flops`` counts them."""
    once = [r for r in t.rows if r.per_sequence]
    if not once:
        return []
    forward = sum(r.flops for r in once) * t.tokens
    rebuilt = {"full": [r for r in once if r.part in ("layers", "mtp")], "selective": [r for r in once if r.role == "core"]}
    again = sum(r.flops for r in rebuilt.get(t.recompute, [])) * t.tokens
    source = int(3 * forward + again) // t.tokens
    return [
        Figure("train_flops_per_token_source", "of which once a sequence (the encoder)", source, "FLOP", "its rows' forward × 3"),
        Figure("train_flops_per_token_target", "of which the decoder's tokens", t.train_flops // t.tokens - source, "FLOP"),
    ]


def resolve_layout(spec: Model, step: Step, layout: Layout, seq: int) -> Layout:
    """The layout checked, its ZeRO stage the framework's where none is given, its interleaving against its stages."""
    from . import parallel
    from .frameworks import FRAMEWORKS

    zero = FRAMEWORKS[step.framework].zero if layout.zero is None else layout.zero
    if zero not in ZERO_STAGES:
        raise InputError(f"--zero {zero}: one of 0, 1, 2, 3")
    lay = parallel.resolve(spec, replace(layout, zero=zero), seq)
    if lay.schedule not in SCHEDULES:
        raise InputError(f"--schedule {lay.schedule}: one of {', '.join(SCHEDULES)}")
    if lay.schedule != "1f1b" and lay.virtual_stages > 1:
        raise InputError(f"--schedule {lay.schedule} runs one chunk a device: leave out --virtual-stages")
    parallel.check_stages(spec.n_layers, lay)
    return lay


def plan_training(
    spec: Model, label: str, run: TrainingRun, step: Step = Step(), layout: Layout = Layout(), device: Device = Device()
) -> Figures:
    """``train`` and ``train_memory`` together, the arguments and the layout checked, as one keyed result; with
    ``run.min_gpus`` the layout is the one of the fewest devices that fits, with ``run.fastest`` the one of
    ``layout.gpus`` devices with the shortest step that fits, its runners-up in the notes (layouts.py)."""
    from .conventions import CONVENTIONS
    from .layouts import fastest_layouts, fewest_devices, fitting_layout, layout_key

    spec.check_seq_len(step.seq_len, label)
    seq = step.seq_len or spec.context_length
    n_tokens = parse_count(run.tokens, "--tokens") if isinstance(run.tokens, str) else run.tokens
    hw, reserve = device.hw, device.reserve
    if not 0 <= reserve < 1:
        raise InputError(f"--reserve {reserve}: a fraction of the device's memory, from 0 up to 1")
    step = replace(step, seq_len=seq, mtp=trains_mtp(spec, step))
    searched = None
    if run.min_gpus:
        if hw is None or not hw.memory_bytes:
            raise InputError("--min-gpus: name a device with --hardware, whose memory the layouts must fit")
        if layout.gpus is not None or layout.dp is not None:
            raise InputError("--min-gpus searches the device count: leave out --gpus and --dp")
        searched = fewest_devices(spec, step, layout, device)
        if searched is None:
            raise InputError(f"--min-gpus: no layout fits {hw.key} (tp up to {NODE}, any pp, ZeRO 0–3, any recompute)")
        layout, step = searched
    fastest: list[tuple[Layout, Step, float]] = []
    if run.fastest:
        if hw is None or not hw.memory_bytes:
            raise InputError("--fastest: name a device with --hardware, whose memory the layouts must fit")
        if layout.gpus is None or run.min_gpus:
            raise InputError("--fastest searches the layout of a device count: give --gpus (and not --min-gpus)")
        chosen = [
            name
            for name, value, default in (
                ("--dp", layout.dp, None),
                ("--tp", layout.tp, 1),
                ("--pp", layout.pp, 1),
                ("--cp", layout.cp, 1),
                ("--ep", layout.ep, 1),
                ("--zero", layout.zero, None),
                ("--virtual-stages", layout.virtual_stages, 1),
                ("--schedule", layout.schedule, "1f1b"),
                ("--recompute", step.recompute, "none"),
            )
            if value != default
        ]
        if chosen:
            raise InputError(f"--fastest chooses {', '.join(chosen)}: leave {'it' if len(chosen) == 1 else 'them'} out")
        fastest = fastest_layouts(spec, step, layout, device, run.convention, peak_dtype(run, step))
        if not fastest:
            raise InputError(
                f"--fastest: no layout of {layout.gpus:,} devices fits {hw.key} (tp up to {NODE}, any pp and cp, ZeRO 0–3, "
                f"any recompute) at micro-batch {step.micro_batch}: try more devices or --min-gpus"
            )
        layout, step = fastest[0][0], fastest[0][1]
    lay = resolve_layout(spec, step, layout, seq)
    dtype = peak_dtype(run, step)
    bubble, m = step_bubble(spec, step, lay)
    budget = run.budget
    if isinstance(budget, str):
        budget = float(parse_count(budget, "--budget")) if budget else None
    run = replace(run, tokens=n_tokens, dtype=dtype, budget=budget)
    rate = throughput(device, dtype)
    comm = comm_per_token(spec, step, lay, device, rate.flops_per_s) if rate and rate.busy else 0.0
    figures = train(spec, run, step, device, lay.gpus, bubble, lay.schedule, comm)
    memory = train_memory(spec, step, lay, device, m)
    figures += memory
    convention, goodput, mtp = run.convention, run.goodput, step.mtp
    conv = CONVENTIONS[convention]
    inputs = {
        "model": label,
        "tokens": n_tokens,
        "seq_len": seq,
        "convention": convention,
        "recompute": step.recompute,
        "hardware": hw.key if hw else None,
        "tflops": device.tflops,
        "mfu": device.mfu,
        "kernel_mfu": device.kernel_mfu,
        "gpus": lay.gpus,
        "dtype": dtype,
        "tokens_per_s": run.tokens_per_s,
        "micro_batch": step.micro_batch,
        "global_batch": step.global_batch,
        "optimizer": step.optimizer,
        "precision": step.precision,
        "framework": step.framework,
        "loss": step.loss,
        "zero": lay.zero,
        "dp": lay.dp,
        "tp": lay.tp,
        "pp": lay.pp,
        "virtual_stages": lay.virtual_stages,
        "cp": lay.cp,
        "ep": lay.ep,
        "attention_kernel": step.kernel,
        "reserve": reserve,
        "mtp": mtp,
        "goodput": goodput,
        "sequence_parallel": lay.sequence_parallel,
        "ends_as_layers": lay.ends_as_layers,
        "min_gpus": run.min_gpus,
        "schedule": lay.schedule,
        "fastest": run.fastest,
    }
    view = {
        "full": "executed dense (the full square)",
        "causal": "useful (causal, within windows and chunks)",
        "half": "half the square",
        "none": "not counted",
    }[conv.attention]
    notes = [
        f"layout: dp {lay.dp} × tp {lay.tp} × pp {lay.pp} × cp {lay.cp} = {lay.gpus} devices"
        + (f", ep {lay.ep} inside dp" if lay.ep > 1 else "")
        + (f", {lay.virtual_stages} interleaved chunks a pipeline device" if lay.virtual_stages > 1 else "")
        + (f", schedule {lay.schedule}" if lay.schedule != "1f1b" else "")
        + f"; ZeRO {lay.zero}; framework {step.framework}",
        f"convention: {conv.name} — {conv.summary} [{conv.source}]",
        f"attention FLOPs in the convention's figures: {view}; 'useful' counts exact matmuls with causal "
        "attention, 'executed' the full square",
        "memory on the most loaded device: its stage's dense parameters / tp, routed experts / (tp × ep), in the "
        f"framework's dtypes ({step.framework}); gathered weights and gradients under ZeRO 3; activations after "
        "Korthikanti et al. 2022 summed over that stage's layers, times the micro-batches in flight; at the peak "
        "the larger of the logits and loss (last stage) or one recomputed layer; the caching allocator's share and "
        "a fixed CUDA allowance",
        "time: --tokens-per-s gives it directly; --tflops or the peak × --mfu (default per precision) are end to "
        "end, the pipeline bubble and communication inside them; --kernel-mfu is the efficiency while busy, the "
        "tensor-, context- and expert-parallel collectives no compute hides added (data-parallel, ZeRO and "
        "pipeline traffic taken as overlapped) and the whole stretched by the bubble when --global-batch gives the "
        "micro-batches"
        + (
            f"; all of it ÷ the goodput {goodput:g}"
            if goodput < 1
            else "; no time lost to failures and restarts (--goodput sets the fraction spent training)"
        ),
    ]
    if fastest:
        rate = throughput(device, dtype)
        best = fastest[0][2]

        def timed(seconds: float) -> str:
            per_step = f"{seconds * step.global_batch * seq:,.2f} s a step, " if step.global_batch else ""
            return per_step + f"{seconds * n_tokens / SECONDS_PER_DAY:,.2f} days"

        how = (
            "each at the kernel efficiency while busy with the tensor-, context- and expert-parallel collectives no "
            "compute hides, stretched by its pipeline bubble; data-parallel, ZeRO and pipeline traffic taken as "
            "overlapped"
            if rate and rate.busy
            else "each at an end-to-end rate with the bubble and communication inside it, so only recomputation tells "
            "them apart (give --kernel-mfu and --global-batch to weigh the bubble and the collectives)"
        )
        runners = "; ".join(
            f"{layout_key(other)} --recompute {st.recompute}: {timed(sec)} (×{sec / best:.3f})" for other, st, sec in fastest[1:]
        )
        notes.insert(
            0,
            f"the fastest layout of {lay.gpus:,} devices that fits: {layout_key(lay)} --recompute {step.recompute}, "
            f"{timed(best)}; {how}; among layouts as fast the least model parallelism, ZeRO stage and interleaving "
            "first (layouts.fastest_layouts)" + (f". Runners-up: {runners}" if runners else ""),
        )
    if searched is not None:
        notes.insert(
            0,
            f"the fewest devices that fit: {lay.gpus:,} as --tp {lay.tp} --pp {lay.pp} --dp {lay.dp}"
            + (f" --ep {lay.ep}" if lay.ep > 1 else "")
            + f" --zero {lay.zero} --recompute {step.recompute} (tp up to {NODE}, within a node; pp a power of two; "
            "ZeRO 0–3; recompute none, selective or full)",
        )
    if hw is not None and hw.memory_bytes:
        free = next(f.value for f in memory if f.id == "free_bytes_per_device")
        notes.insert(
            0,
            ("fits" if free >= 0 else "does NOT fit")
            + f" on {hw.key}: "
            + (f"{free / 2**30:,.1f} GiB left over" if free >= 0 else f"short by {-free / 2**30:,.1f} GiB")
            + " per device, after the caching allocator's share and a fixed allowance for the CUDA context and "
            "communication buffers" + (f", and {reserve:.0%} of the memory kept free" if reserve else ""),
        )
        if free < 0:
            found = fitting_layout(spec, step, lay, device)
            notes.insert(
                1,
                f"on {lay.gpus:,} devices it fits as --tp {found.tp} --pp {found.pp} (dp "
                f"{found.dp}) --zero {found.zero}, the least model parallelism that fits (tp within a "
                f"node of {NODE})"
                if found
                else f"no layout of {lay.gpus:,} devices fits (tp up to {NODE}, within a node; any pp; ZeRO "
                f"{lay.zero} to 3) at micro-batch {step.micro_batch} with recompute {step.recompute}: try more "
                "devices, --recompute full, a shorter sequence per device (--cp) or --min-gpus",
            )
    if spec.mtp_layers:
        notes.append(
            f"multi-token prediction modules ({spec.mtp_layers}): FLOPs "
            + ("counted, as a run that trains them executes" if mtp else "left out (--no-mtp)")
        )
    return Figures(f"training {label} on {n_tokens:,} tokens", inputs, figures, notes)

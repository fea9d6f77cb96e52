"""The questions, one function per command, each taking the command's options as keyword arguments (the flag's
name: ``--seq-len`` is ``seq_len``, ``--hardware`` is ``hardware``) with the same defaults, and returning a result
(``results.py``). The command line calls these and renders what they return: there is one path to each number.
Heavy modules (torch, transformers) are imported only by the questions that need them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Optional

from ..analysis.conventions import DEFAULT
from ..analysis.plan import (
    TRAIN_RESERVE,
    Device,
    FitRun,
    Formats,
    InferenceRun,
    Layout,
    Placement,
    Step,
    TrainingRun,
    Tuning,
)
from ..errors import InputError, MissingDependency, OptionError
from . import options as o
from .models import Model, Source, reference, resolve
from .results import (
    Bench,
    CheckpointCount,
    Collectives,
    Comparison,
    Count,
    KeptVerification,
    MemoryVerification,
    ParallelBench,
    Plan,
    SavedRun,
    Sweep,
    Verification,
)

Progress = Callable[[str, int, int], None]  # (what, done, total): called as timing runs


def count(
    model: Model | Source,
    *,
    seq_len: int | None = None,
    batch: int = 1,
    convention: str = DEFAULT,
    recompute: str = "none",
    per_layer: bool = False,
    as_family: str | None = None,
    text_only: bool = False,
    images: int | None = None,
    image_size: int | None = None,
    image_tokens: int | None = None,
    audio_seconds: int | None = None,
    ttft_slo: float | None = None,
    itl_slo: float | None = None,
    lora: int | None = None,
    lora_targets: str | tuple[str, ...] | None = None,
    lora_alpha: float | None = None,
    dora: bool | None = None,
    lora_modules_to_save: str | tuple[str, ...] | None = None,
    rslora: bool | None = None,
) -> Count | CheckpointCount:
    """Parameters and FLOPs of every component of a model (a ``Model``, or what ``load`` reads): a ``Count``. A
    checkpoint (.safetensors, a folder of shards, .gguf, ORG/NAME[@REVISION]) is counted by its stored tensors
    against its config.json: a ``CheckpointCount``. ``text_only``: a multimodal model's language model alone, as its
    text-only class builds it (a config.json's wrapper read by its text_config; a spec without its towers).
    ``images``: images a sequence, their tower's work in the FLOPs per token; ``image_size``: their pixels a side
    (default: the tower's), or ``image_tokens``: the size that makes that many tokens of the language model;
    ``audio_seconds``: audio a sequence, its tower's work in the FLOPs per token. With ``lora=R`` the count lists the
    adapters peft builds (``lora_targets``, ``dora``, ``lora_modules_to_save``; ``lora_alpha`` and ``rslora`` change no
    count) and the parameters they train."""
    tune = tuning(
        lora,
        dict(lora_targets=lora_targets, lora_alpha=lora_alpha, dora=dora, lora_modules_to_save=lora_modules_to_save, rslora=rslora),
    )
    o.whole("seq_len", seq_len)
    o.whole("batch", batch)
    o.choice("convention", convention, o.ConventionName)
    o.choice("recompute", recompute, o.RecomputeName)
    o.flag_value("per_layer", per_layer)
    if not isinstance(model, Model):
        from ..sources.checkpoint import is_checkpoint

        ref = reference(model)
        if is_checkpoint(ref):
            from ..analysis.checkpoint import measure

            if tune is not None:
                raise OptionError("--lora: adapters are counted on a model's config, not on a checkpoint's tensors", field="lora")

            given = {
                "--seq-len": seq_len is not None,
                "--batch": batch != 1,
                "--convention": convention != DEFAULT,
                "--recompute": recompute != "none",
                "--per-layer": per_layer,
                "--text-only": bool(text_only),
                "--images": images is not None,
                "--image-size": image_size is not None,
                "--image-tokens": image_tokens is not None,
                "--audio-seconds": audio_seconds is not None,
            }
            return CheckpointCount(measure(ref, as_family, tuple(k for k, v in given.items() if v)))
    from ..analysis.count import tally

    o.flag_value("text_only", text_only)
    m = with_inputs(
        resolve(model, as_family, text_only),
        images=images,
        image_size=image_size,
        image_tokens=image_tokens,
        audio_seconds=audio_seconds,
    )
    m.stack.check_seq_len(seq_len, m.label)
    t = tally(
        m.stack,
        model=m.title,
        convention=convention,
        seq_len=seq_len,
        batch=batch,
        recompute=recompute,  # type: ignore[arg-type]  # checked against o.RecomputeName above
        partial=True,
    )
    if tune is None:
        return Count(t, per_layer)
    from ..analysis.adapters import adapters

    return Count(t, per_layer, adapters(m.stack, tune))


MAX_INPUTS = 65_536  # images a sequence, pixels a side, seconds of audio: beyond any model's


def with_inputs(m: Model, **inputs: int | None) -> Model:
    """``m`` with what each request brings beside its tokens (``images``, ``image_size`` or ``image_tokens``) given to
    the parts that take it (Part.takes); an input no part of the model takes is refused by its option's name."""
    from dataclasses import replace

    from ..model.schema import SpecError

    stated = {k: v for k, v in inputs.items() if v is not None}
    if not stated:
        return m
    if "image_tokens" in stated:
        tokens = stated.pop("image_tokens")
        if "image_size" in stated:
            raise OptionError(
                "--image-tokens states the image's size in tokens: give it or --image-size, not both", field="image_tokens"
            )
        stated["image_size"] = image_size_for(m, tokens)
    for name, value in stated.items():
        o.whole(name, value, 1 if name == "image_size" else 0, MAX_INPUTS)
        if not any(name in p.takes for p in m.stack.parts):
            tower = "audio tower" if name.startswith("audio") else "encoder" if name == "source_len" else "vision tower"
            raise OptionError(f"{o.flag(name)} {value}: {m.label} has no part that takes it ({_no(m, tower)})", field=name)
    old = m.stack.parts
    parts = tuple(p.given(**stated) for p in old)
    for p in (new for new, before in zip(parts, old) if new is not before):  # those given an input; the rest were checked
        try:
            p.check(m.stack)
        except SpecError as exc:
            name = "image_size" if "image_size" in stated else next(iter(stated))
            raise OptionError(f"{o.flag(name)} {stated[name]}: {exc.message}", field=name) from None
    notes = {o_.note(m.stack): n_.note(m.stack) for o_, n_ in zip(old, parts) if o_ is not n_}
    stack = replace(m.stack, parts=parts, notes=tuple(notes.get(n, n) for n in m.stack.notes))
    return Model(m.label, stack)


def _no(m: Model, tower: str) -> str:
    """Why ``m`` has no ``tower``: --text-only left it out, or it never had one."""
    from ..sources.presets import TEXT_ONLY_NOTE

    return "--text-only leaves its towers out" if any(n.startswith(TEXT_ONLY_NOTE) for n in m.stack.notes) else f"no {tower}"


def image_size_for(m: Model, tokens: int) -> int:
    """The image, in pixels a side, that the model's tower (the first part that takes ``image_size``) makes ``tokens``
    tokens of the language model from: its own size where that makes them, else the smallest that does; refused,
    naming the nearest counts it makes, where none does."""
    o.whole("image_tokens", tokens, 1, MAX_INPUTS * MAX_INPUTS)
    tower = next((p for p in m.stack.parts if "image_size" in p.takes), None)
    if tower is None:
        raise OptionError(
            f"--image-tokens {tokens}: {m.label} has no part that takes it ({_no(m, 'vision tower')})", field="image_tokens"
        )
    own: Any = tower.given(images=1)  # a part that takes image_size states one
    if own.request_tokens() == tokens:  # its own size makes them (a tower built for one size: Gemma 3's 896)
        return int(own.image_size)
    made: dict[int, int] = {}
    for side, n in tower.image_sizes(m.stack, MAX_INPUTS):
        if n == tokens:
            return int(side)
        made.setdefault(n, side)
    below, above = max((n for n in made if n < tokens), default=None), min((n for n in made if n > tokens), default=None)
    near = " or ".join(f"{n:,} ({made[n]:,} pixels)" for n in (below, above) if n is not None)
    nearest = f"; nearest: {near}" if near else ""
    raise OptionError(f"--image-tokens {tokens:,}: no image size makes that many tokens in {m.label}{nearest}", field="image_tokens")


def verify(
    model: Model | Source | None = None,
    *,
    all: bool = False,
    hf: Source | None = None,
    seq_len: int | None = None,
    convention: str = "exact",
    every_layer: bool = False,
    memory: bool = False,
) -> Verification | MemoryVerification | KeptVerification:
    """The analytic counts against torch modules built on the meta device (``hf``: a config.json, also against the
    transformers class it names); ``all``: every preset, each on its own. ``memory`` (with ``hf``): what a training
    forward keeps for backward against the tensors the transformers class saves (``MemoryVerification``); with a
    model, each block's kept activations against what its reference module saves as fused kernels run it
    (``KeptVerification``). Needs torch
    (and transformers with ``hf``). A mismatch is no error: the result's ``ok`` is false."""
    if sum((bool(all), model is not None, hf is not None)) != 1:
        raise InputError("verify takes one of: a model, --all, --hf CONFIG")
    o.whole("seq_len", seq_len)
    o.choice("convention", convention, o.VerifyConvention)
    o.flag_value("memory", memory)
    if memory and hf is not None:
        return _verify_memory(hf, seq_len)
    if memory:
        if all or model is None:
            raise InputError("verify --memory takes one model (or --hf CONFIG)")
        return _verify_kept(model, seq_len)
    if hf is not None:
        return _verify_hf(hf, seq_len, convention, every_layer)
    if model is not None and not isinstance(model, Model):
        reference(model)  # a name that names nothing is said so before the question of torch
    try:
        from ..analysis.verify import verify as run_verify  # torch loads here, never on the counting path
    except ImportError as exc:
        raise MissingDependency(f"verify needs torch ({exc}); install it: pip install torch==2.13.0") from None

    def one(ref: Model | Source) -> Any:
        m = resolve(ref)
        m.stack.check_seq_len(seq_len, m.label)
        return run_verify(m.stack, model=m.label, seq_len=seq_len, convention=convention, every_layer=every_layer)

    if not all:
        assert model is not None
        return Verification([one(model)])
    from ..sources import presets

    reports, refused = [], []
    for ref in presets.names():  # one that cannot be verified is reported, the rest still run
        try:
            reports.append(one(ref))
        except InputError as exc:
            refused.append((ref, str(exc)))
    return Verification(reports, refused, every=True)


def _verify_hf(ref: Source, seq_len: int | None, convention: str, every_layer: bool) -> Verification:
    from ..sources import hf
    from ..sources.hf.towers import tower_of

    path = reference(ref)
    c = hf.read_config(path)
    whole = tower_of(c) is not None  # a wrapper read whole: its whole class, towers and all
    # else transformers' causal-LM class: the language model alone
    label, spec = hf.load(path, text=not whole)
    spec.check_seq_len(seq_len, label)
    try:
        import transformers  # noqa: F401

        from ..analysis import hfcheck, hfwhole
        from ..analysis.verify import verify as run_verify
    except ImportError as exc:
        raise MissingDependency(
            f"verify --hf needs torch and transformers ({exc}); install them: "
            "pip install torch==2.13.0 'transformers>=5,<6' (or pip install 'ffncalc[hf]')"
        ) from None
    report = run_verify(spec, model=label, seq_len=seq_len, convention=convention, every_layer=every_layer)
    theirs = hfwhole.check_whole(c, spec, model=label) if whole else hfcheck.check(c, model=label, spec=spec)
    return Verification([report], hf=theirs)


# verify --memory runs the class on real tensors on the CPU: its fp32 weights (and bf16 copy) at most this many bytes
MEMORY_CHECK_BYTES = 2 * 2**30
MEMORY_CHECK_SEQ_LEN = 16  # its default length: small real tensors


def _verify_memory(ref: Source, seq_len: int | None) -> MemoryVerification:
    from ..analysis import hfsaved
    from ..analysis.count import tally
    from ..sources import hf

    path = reference(ref)
    label, spec = hf.load(path, text=True)
    c = hf.read_config(path)
    style = hfsaved.style_of(c)
    why = hfsaved.unsupported(spec, style)
    if why is not None or style is None:
        raise InputError(f"{path}: verify --memory --hf: {why}", file=path)
    length = seq_len or MEMORY_CHECK_SEQ_LEN
    spec.check_seq_len(length, label)
    weights = 4 * tally(spec).params
    if weights > MEMORY_CHECK_BYTES:
        raise InputError(
            f"{path}: verify --memory --hf runs the class on real tensors on the CPU, and its fp32 weights take "
            f"{weights / 2**30:.1f} GiB (at most {MEMORY_CHECK_BYTES // 2**30} GiB): give a config cut down (fewer "
            "layers, narrower), as tests/hf_saved/configs/ are",
            file=path,
        )
    try:
        from ..analysis import hfsavedcheck
    except ImportError as exc:
        raise MissingDependency(
            f"verify --memory --hf needs torch and transformers ({exc}); install them: "
            "pip install torch==2.13.0 'transformers>=5,<6' (or pip install 'ffncalc[hf]')"
        ) from None
    runs = []
    for batch in (1, 2):
        for dtype in ("bf16", "fp32"):
            planned = hfsaved.saved_bytes(spec, style, length, batch, hfsavedcheck.ACT_BYTES[dtype])
            measured = hfsavedcheck.measure(c, seq_len=length, batch=batch, dtype=dtype)
            runs.append(SavedRun(length, batch, dtype, planned, measured))
    return MemoryVerification(label, str(c.model_type), runs)


def _verify_kept(model: Model | Source, seq_len: int | None) -> KeptVerification:
    from ..analysis.keptcheck import LIMIT_BYTES, layer_bytes

    m = resolve(model)
    length = seq_len or MEMORY_CHECK_SEQ_LEN
    m.stack.check_seq_len(length, m.label)
    largest = layer_bytes(m.stack)
    if largest > LIMIT_BYTES:
        raise InputError(
            f"{m.label}: verify --memory runs each layer on real tensors on the CPU, and its largest takes "
            f"{largest / 2**30:.1f} GiB in bf16 (at most {LIMIT_BYTES // 2**30} GiB): give a narrower spec"
        )
    try:
        from ..analysis.keptcheck import check
    except ImportError as exc:
        raise MissingDependency(f"verify --memory needs torch ({exc}); install it: pip install torch==2.13.0") from None
    return KeptVerification(m.label, length, check(m.stack, length))


def compare(
    model: Model | Source | None = None,
    *,
    to: str | None = None,
    activation: str | None = None,
    match: str = "params",
    multiple_of: int = 1,
    d_model: int | None = None,
    d_ff: int | None = None,
    kind: str = "dense",
    block_activation: str | None = None,
    bias: bool = False,
    sweep: str | Iterable[float] | None = None,
    bench: bool = False,
    tokens: int = 1024,
    repeats: int = 5,
    device: str = "auto",
    dtype: str = "fp32",
    progress: Optional[Progress] = None,
) -> Comparison | Sweep:
    """A dense vs a gated FFN at equal parameters (or FLOPs): a model's FFN, or a bare block (``d_model`` and
    ``d_ff``); ``sweep``: ratios d_ff/d_model (``"1:8:1"``, ``"2,2.67,4"`` or a list), a ``Sweep``; ``bench``:
    also time both blocks on this machine (needs torch)."""
    from ..analysis import compare as cmp
    from ..analysis.sizing import ffn_block

    if to is not None:
        o.choice("to", to, o.KindName)
    o.choice("match", match, o.MatchName)
    o.choice("kind", kind, o.KindName)
    for name, value in (("multiple_of", multiple_of), ("d_model", d_model), ("d_ff", d_ff), ("tokens", tokens)):
        o.whole(name, value)
    o.whole("repeats", repeats, 1, 10_000)
    o.text("activation", activation)
    o.text("block_activation", block_activation)
    o.flag_value("bias", bias)
    o.flag_value("bench", bench)
    kw: dict[str, Any] = dict(to=to, activation=activation, match=match, multiple_of=multiple_of)
    bare = d_model is not None or d_ff is not None
    if model is not None and bare:
        raise InputError("compare takes a model or --d-model/--d-ff, not both")
    if model is None and d_model is None:
        raise InputError("compare needs a model, or --d-model and --d-ff for a bare block")
    if model is not None:
        m = resolve(model)
        width, block = m.d_model, cmp.model_block(m.stack)
    else:
        assert d_model is not None
        if d_ff is None and sweep is None:
            raise InputError("a bare block needs --d-ff as well as --d-model")
        act = cmp.activation_for(block_activation, kind, "relu" if kind == "dense" else "silu")  # type: ignore[arg-type]
        width, block = d_model, ffn_block(kind, d_ff or d_model, bias=bias, activation=act)  # type: ignore[arg-type]
    if sweep is not None:
        if not isinstance(sweep, (str, list, tuple, range)) or not all(
            isinstance(r, (int, float)) and not isinstance(r, bool) for r in (() if isinstance(sweep, str) else sweep)
        ):
            raise InputError(f"--sweep {o.shown(sweep)}: ratios, as text (2,2.67,4) or a list of numbers", field="sweep")
        text = sweep if isinstance(sweep, str) else ",".join(repr(float(r)) for r in sweep)
        return Sweep(cmp.sweep(width, block, cmp.parse_ratios(text), **kw))
    c = cmp.compare_model(m.stack, model=m.label, **kw) if model is not None else cmp.compare_block(width, block, **kw)
    if not bench:
        return Comparison(c)
    o.choice("device", device, o.BenchDevice)
    o.choice("dtype", dtype, o.BenchDtype)
    return Comparison(c, _bench_pair(c, tokens, repeats, device, dtype, progress))


def _timing() -> Any:
    try:
        from ..analysis import bench as timing
    except ImportError as exc:
        raise MissingDependency(f"bench needs torch ({exc}); install it: pip install torch==2.13.0") from None
    return timing


def _bench_pair(c: Any, tokens: int, repeats: int, device: str, dtype: str, progress: Optional[Progress]) -> Any:
    """Both blocks of a comparison timed in one run, as ``bench`` does."""
    try:
        from ..analysis import bench as timing
    except ImportError as exc:
        raise MissingDependency(f"--bench needs torch ({exc}); install it: pip install torch==2.13.0") from None
    from ..analysis.sizing import ffn_block
    from ..model import from_data

    ffns = [ffn_block(s.kind, s.d_ff, bias=s.bias, activation=s.activation) for s in (c.source, c.target)]
    spec = from_data(
        {
            "vocab_size": 1,
            "d_model": c.d_model,
            "n_layers": 1,
            "context_length": tokens,
            "attention": {"n_heads": 1},
            "ffn": {"kind": "dense", "d_ff": 1},
        },
        check=False,
    )
    plans = [timing.plan(spec, "ffn", tokens, ffn=f) for f in ffns]
    how = timing.Timing(timing.pick_device(device), dtype, tokens, seq_len=tokens, backward=False, repeats=repeats, warmup=1)
    return timing.run(plans, how, progress)


BENCH_TOKENS = 2048  # tokens a timed run (a tensor-parallel run on a CPU: distributed.CPU_TP_TOKENS)


def bench(
    model: Model | Source | None = None,
    *,
    block: str = "ffn",
    compare_ffn: bool = False,
    backward: bool = False,
    device: str = "auto",
    dtype: str = "fp32",
    tokens: int | None = None,
    seq_len: int | None = None,
    layer: int = 0,
    repeats: int = 10,
    warmup: int = 2,
    progress: Optional[Progress] = None,
    collective: str | None = None,
    gpus: int | None = None,
    sizes: str | None = None,
    tp: int | None = None,
    ep: int | None = None,
    links: str | None = None,
) -> Bench | Collectives | ParallelBench:
    """Time real blocks built from the spec on this machine, with achieved FLOP/s (needs torch); ``progress``
    is called as the runs go. ``collective`` (no model): collectives timed over ``gpus`` ranks at ``sizes``
    (``Collectives``, a links file's record); ``tp``: the block split over ``tp`` ranks, ``ep``: a mixture's experts
    over ``ep`` ranks (``ParallelBench``), its collectives set beside the plans' figure over the table's link or
    ``links``'. On a CPU ``tokens`` of a
    tensor-parallel run defaults to 128."""
    from . import distributed

    o.choice("block", block, o.BenchBlock)
    o.choice("device", device, o.BenchDevice)
    o.choice("dtype", dtype, o.BenchDtype)
    o.whole("tokens", tokens)
    o.whole("seq_len", seq_len)
    o.whole("layer", layer, 0)
    o.whole("repeats", repeats, 1, 10_000)
    o.whole("warmup", warmup, 0, 1000)
    o.whole("gpus", gpus, 1, 4096)
    o.whole("tp", tp, 1, 4096)
    o.whole("ep", ep, 1, 4096)
    o.text("links", links)
    if collective is not None:
        if model is not None or tp is not None or ep is not None or compare_ffn or backward:
            raise InputError(
                "--collective times collectives alone: no MODEL, --tp, --compare-ffn or --backward beside it", field="collective"
            )
        return distributed.collectives(collective, gpus, device, sizes, repeats, warmup)
    if model is None:
        raise InputError("model: give a preset name or a spec file (or --collective to time collectives)", field="model")
    for name, value in (("gpus", gpus), ("sizes", sizes)):
        if value is not None:
            raise InputError(f"{o.flag(name)} goes with --collective (a model's block over ranks: --tp)", field=name)
    if links is not None and tp is None and ep is None:
        raise InputError("--links goes with --tp or --ep: the plans' collectives beside the measured ones", field="links")
    if tp is not None and ep is not None:
        raise InputError(f"--tp {tp} and --ep {ep}: one split at a time (tensor or expert parallel)", field="ep")
    m = resolve(model)
    split = ("tensor", tp) if tp is not None else ("expert", ep) if ep is not None else None
    if split is not None:
        if compare_ffn or backward:
            flag = "--tp" if tp is not None else "--ep"
            raise InputError(f"{flag} {split[1]}: a forward of the block (no --compare-ffn or --backward)", field=flag[2:])
        timing = {"device": device, "dtype": dtype, "layer": layer, "repeats": repeats, "warmup": warmup, "links": links}
        return distributed.parallel(m, block, split, {**timing, "tokens": tokens, "seq_len": seq_len})
    tokens = tokens or BENCH_TOKENS
    seq = seq_len or min(tokens, m.context_length)
    m.stack.check_seq_len(seq, m.label)
    timing = _timing()
    if compare_ffn:
        plans = [timing.plan(m.stack, "ffn", seq, layer, ffn=f) for _, f in timing.compare_variants(m.stack, layer)]
    else:
        plans = [timing.plan(m.stack, block, seq, layer)]
    how = timing.Timing(timing.pick_device(device), dtype, tokens, seq_len=seq, backward=backward, repeats=repeats, warmup=warmup)
    return Bench(m.label, timing.run(plans, how, progress))


def train(
    model: Model | Source,
    *,
    tokens: int | str,
    seq_len: int | None = Step.seq_len,
    convention: str = TrainingRun.convention,
    recompute: str = Step.recompute,
    hardware: str | None = None,
    hardware_file: str | None = None,
    tflops: float | None = Device.tflops,
    gpus: int | None = Layout.gpus,
    mfu: float | None = Device.mfu,
    kernel_mfu: float | None = Device.kernel_mfu,
    dtype: str | None = TrainingRun.dtype,
    tokens_per_s: float | None = TrainingRun.tokens_per_s,
    budget: float | str | None = TrainingRun.budget,
    micro_batch: int = Step.micro_batch,
    global_batch: int | None = Step.global_batch,
    optimizer: str = Step.optimizer,
    precision: str = Step.precision,
    framework: str = Step.framework,
    loss: str = Step.loss,
    zero: int | None = Layout.zero,
    dp: int | None = Layout.dp,
    tp: int = Layout.tp,
    sequence_parallel: bool = Layout.sequence_parallel,
    ends_as_layers: bool = Layout.ends_as_layers,
    pp: int = Layout.pp,
    virtual_stages: int = Layout.virtual_stages,
    cp: int = Layout.cp,
    ep: int = Layout.ep,
    reserve: float = TRAIN_RESERVE,
    goodput: float = TrainingRun.goodput,
    attention_kernel: str = Step.kernel,
    mtp: bool | None = Step.mtp,
    min_gpus: bool = TrainingRun.min_gpus,
    fastest: bool = TrainingRun.fastest,
    schedule: str = Layout.schedule,
    ttft_slo: float | None = None,
    itl_slo: float | None = None,
    lora: int | None = None,
    lora_targets: str | tuple[str, ...] | None = None,
    lora_alpha: float | None = None,
    dora: bool | None = None,
    lora_modules_to_save: str | tuple[str, ...] | None = None,
    rslora: bool | None = None,
    base_dtype: str | None = None,
    double_quant: bool | None = None,
    kbit_fp32: bool | None = None,
    adapter_dtype: str | None = None,
    source_len: int | None = None,
    text_only: bool = False,
    images: int | None = None,
    image_size: int | None = None,
    image_tokens: int | None = None,
) -> Plan:
    """A training run: FLOPs, GPU-hours and days, the compute-optimal size, memory per device. ``tokens``: a count
    (``10**12``) or text (``"1T"``, ``"300B"``, ``"300e9"``); ``budget`` likewise. With ``lora=R`` a fine-tuning run
    with adapters: trainable parameters, its FLOPs and memory over data parallelism (LORA_DOC). ``source_len``: an
    encoder-decoder's source tokens a sequence (default: as long as the sequence; ``tokens`` count the decoder's).
    ``images`` (``image_size`` pixels a side, or the size that makes ``image_tokens``): each sequence's, their tower's
    work in the FLOPs and what the layers that read them keep for backward (cross-attention layers: K and V of every
    image row). ``text_only``: a multimodal model's language model alone."""
    from ..analysis import hardware as table
    from ..analysis.training import plan_training

    if isinstance(tokens, bool) or not isinstance(tokens, (int, str)):
        raise InputError(f"--tokens {tokens!r}: a count (10**12) or text (1T, 300B)", field="tokens")
    if isinstance(tokens, int):
        o.whole("tokens", tokens, 1, 10**30)
    if budget is not None and not isinstance(budget, str):
        o.number("budget", budget, 0, 1e30)
    o.flag_value("sequence_parallel", sequence_parallel)
    o.flag_value("ends_as_layers", ends_as_layers)
    o.flag_value("mtp", mtp)
    o.flag_value("min_gpus", min_gpus)
    o.flag_value("fastest", fastest)
    o.choice("schedule", schedule, o.ScheduleName)
    o.choice("framework", framework, o.FrameworkName)
    o.choice("loss", loss, o.LossName)
    o.choice("convention", convention, o.ConventionName)
    o.choice("recompute", recompute, o.RecomputeName)
    o.choice("optimizer", optimizer, o.OptimizerName)
    o.choice("precision", precision, o.PrecisionName)
    o.choice("attention_kernel", attention_kernel, o.KernelName)
    if dtype is not None:
        o.choice("dtype", dtype, o.HardwareDtype)
    for name, value in (("seq_len", seq_len), ("gpus", gpus), ("micro_batch", micro_batch), ("global_batch", global_batch)):
        o.whole(name, value)
    for name, value in (("dp", dp), ("tp", tp), ("pp", pp), ("virtual_stages", virtual_stages), ("cp", cp), ("ep", ep)):
        o.whole(name, value)
    o.whole("zero", zero, 0, 3)
    o.number("tflops", tflops, 0, 1e9)
    o.number("mfu", mfu, 0, 1)
    o.number("kernel_mfu", kernel_mfu, 0, 1)
    o.number("tokens_per_s", tokens_per_s, 0, 1e15)
    o.number("reserve", reserve, 0, 0.99, above=False)
    o.number("goodput", goodput, 0, 1)
    o.whole("source_len", source_len)
    o.flag_value("text_only", text_only)
    m = with_inputs(
        planned(resolve(model, text_only=text_only), "train"), images=images, image_size=image_size, image_tokens=image_tokens
    )
    m, source = sourced(m, source_len, seq_len or m.stack.context_length)
    hw = table.by_key(hardware, hardware_file) if hardware else None
    tune = tuning(lora, _lora_options(locals()))
    if tune is not None:
        from ..analysis.finetune import plan_finetune

        if precision != Step.precision:
            raise OptionError(f"--precision {precision}: --lora plans a bf16 step over its frozen base", field="precision")
        if framework != Step.framework:
            raise OptionError(f"--framework {framework}: --lora plans Hugging Face's Trainer with peft", field="framework")
        if fastest or schedule != Layout.schedule:
            field = "fastest" if fastest else "schedule"
            raise OptionError(f"{o.flag(field)}: --lora plans a step over data parallelism, without a pipeline", field=field)
        finetuned = plan_finetune(
            m.stack,
            m.label,
            TrainingRun(tokens, convention=convention, dtype=dtype, tokens_per_s=tokens_per_s, goodput=goodput, min_gpus=min_gpus),
            Step(
                seq_len=seq_len, micro_batch=micro_batch, recompute=recompute, kernel=attention_kernel, optimizer=optimizer, loss=loss
            ),
            Layout(gpus=gpus, dp=dp, tp=tp, pp=pp, virtual_stages=virtual_stages, cp=cp, ep=ep, zero=zero),
            Device(hw, tflops=tflops, mfu=mfu, kernel_mfu=kernel_mfu, reserve=reserve),
            tune,
        )
        return Plan(alone(finetuned, m, text_only), "train")
    answer = plan_training(
        m.stack,
        m.label,
        TrainingRun(
            tokens,
            convention=convention,
            dtype=dtype,
            tokens_per_s=tokens_per_s,
            budget=budget,
            goodput=goodput,
            min_gpus=min_gpus,
            fastest=fastest,
        ),
        Step(
            seq_len=seq_len,
            micro_batch=micro_batch,
            global_batch=global_batch,
            recompute=recompute,
            kernel=attention_kernel,
            optimizer=optimizer,
            precision=precision,
            framework=framework,
            loss=loss,
            mtp=mtp,
        ),
        Layout(
            gpus=gpus,
            dp=dp,
            tp=tp,
            pp=pp,
            virtual_stages=virtual_stages,
            schedule=schedule,
            cp=cp,
            ep=ep,
            zero=zero,
            sequence_parallel=sequence_parallel,
            ends_as_layers=ends_as_layers,
        ),
        Device(hw, tflops=tflops, mfu=mfu, kernel_mfu=kernel_mfu, reserve=reserve),
    )
    source_note(answer, source, source_len)
    return Plan(alone(answer, m, text_only), "train")


def _names(name: str, value: Any) -> tuple[str, ...]:
    """A comma list (or a sequence of strings) of module names."""
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",")]
    if not isinstance(value, (list, tuple)) or not value or not all(isinstance(v, str) and v for v in value):
        raise OptionError(f"{o.flag(name)} {o.shown(value)}: a comma list of module names", field=name)
    return tuple(value)


def tuning(lora: int | None, options: dict[str, Any]) -> Tuning | None:
    """The adapters asked for (the command line's --lora options, by keyword), checked; None without ``lora``, and
    then no other of them may be given (None: left to its default)."""
    given = {k: v for k, v in options.items() if v is not None}
    if lora is None:
        if given:
            name = next(iter(given))
            raise OptionError(f"{o.flag(name)}: a fine-tuning option; it needs --lora R (the adapters' rank)", field=name)
        return None
    o.whole("lora", lora, 1, 65_536)
    for name in ("dora", "rslora", "double_quant", "kbit_fp32"):
        o.flag_value(name, given.get(name))
    if "base_dtype" in given:
        o.choice("base_dtype", given["base_dtype"], o.BaseDtype)
    if "adapter_dtype" in given:
        o.choice("adapter_dtype", given["adapter_dtype"], o.AdapterDtype)
    o.number("lora_alpha", given.get("lora_alpha"), 0, 1e9)
    targets = _names("lora_targets", given["lora_targets"]) if "lora_targets" in given else Tuning.targets
    saved = _names("lora_modules_to_save", given["lora_modules_to_save"]) if "lora_modules_to_save" in given else ()
    return Tuning(
        lora,
        targets,
        bool(given.get("dora", False)),
        saved,
        given.get("lora_alpha"),
        bool(given.get("rslora", False)),
        given.get("base_dtype", Tuning.base_dtype),
        bool(given.get("double_quant", Tuning.double_quant)),
        bool(given.get("kbit_fp32", False)),
        given.get("adapter_dtype", Tuning.adapter_dtype),
    )


LORA_DOC = """``lora=R``: fine-tuning with LoRA adapters of rank R (analysis/finetune.py) on ``lora_targets`` (peft's module
    names, a comma list, or all-linear), ``dora``, ``lora_modules_to_save`` (lm_head, embed_tokens), ``lora_alpha`` and
    ``rslora`` (nothing countable), the frozen base in ``base_dtype`` (bf16, fp16, fp32, fp8, int8, nf4, fp4, gptq,
    awq) with ``double_quant`` (a 4-bit base's absmax quantized) and ``kbit_fp32`` (the rest cast to fp32), the
    adapters in ``adapter_dtype`` (fp32, bf16)."""


# fit --lora's sequence length where none is given: a fine-tuning sequence (torchtune's memory table packs 2,048)
FINETUNE_CONTEXT = 2048

LORA_OPTIONS = (
    "lora_targets",
    "lora_alpha",
    "dora",
    "lora_modules_to_save",
    "rslora",
    "base_dtype",
    "double_quant",
    "kbit_fp32",
    "adapter_dtype",
)


def _lora_options(given: dict[str, Any]) -> dict[str, Any]:
    return {k: given[k] for k in LORA_OPTIONS}


def sourced(m: Model, source_len: int | None, positions: int) -> tuple[Model, int]:
    """``m`` with its parts sized for a plan whose sequences are ``positions`` tokens: an encoder-decoder's source
    ``source_len`` tokens (--source-len; where not given, as long as the sequence, as a forward given only input_ids runs
    it; a speech encoder's its audio window's, whatever is asked), and the source's tokens (0: none)."""
    from dataclasses import replace

    m = with_inputs(m, source_len=source_len)
    stack = replace(m.stack, parts=tuple(p.sized(positions) for p in m.stack.parts))
    return Model(m.label, stack), sum(p.source_tokens() for p in stack.parts)


def source_note(plan: Any, source: int, given: int | None) -> None:
    """The source a plan of an encoder-decoder ran over, in its inputs and notes."""
    if source:
        plan.inputs["source_len"] = source
        plan.notes.append(
            f"source: {source:,} tokens the encoder runs over once a sequence"
            + (" (--source-len)" if given else " (without --source-len: as long as the sequence, or the encoder's fixed window)")
        )


def alone(answer: Any, m: Model, text_only: bool) -> Any:
    """A plan of a model's language model alone (--text-only) says so, in its inputs and its notes."""
    if text_only:
        from ..sources.presets import TEXT_ONLY_NOTE

        answer.inputs["text_only"] = True
        answer.notes.append(next(n for n in m.stack.notes if n.startswith(TEXT_ONLY_NOTE)))
    return answer


def planned(m: Model, command: str) -> Model:
    """A model the plans can plan: not one with a part they cannot plan yet (``Part.unplanned``)."""
    reason = next((p.unplanned for p in m.stack.parts if p.unplanned), None)
    if reason:
        raise InputError(f"{m.label}: {reason}; `ffncalc count` and `ffncalc verify --hf` answer for it")
    return m


def generator(m: Model, command: str) -> Model:
    """A model that generates tokens: an encoder (every query meets every key) reads a sequence whole and decodes
    nothing, so serving plans, which decode, do not apply to it."""
    planned(m, command)
    if m.stack.bidirectional:
        raise InputError(
            f"{m.label}: an encoder (bidirectional attention) generates no tokens, so {command} (which plans decoding) does "
            "not apply; its work per sequence is `ffncalc count MODEL --seq-len N`, its training `ffncalc train`"
        )
    return m


def _serving(given: dict[str, Any], hardware: Any) -> tuple[Formats, Placement, Device, Any]:
    """What infer and fit share, read from their keywords (``given``: the caller's locals) and checked: the formats,
    the placement, the device's figures and the engine (its reserve the default of --reserve, its split of the
    layers the default placement of --gpus)."""
    from ..analysis.engines import engine as pick
    from ..analysis.formats import deployed

    engine = given["engine"]
    formats = {k: given[k] for k in ("dtype", "experts_dtype", "kv_dtype", "keep")}
    placement = {k: given[k] for k in ("gpus", "tp", "ep", "pp", "gpu_layers", "cpu_experts", "max_nodes")}
    placement["overlap"] = given["two_batch_overlap"]
    device = {k: given[k] for k in ("reserve", "link_gbs", "link_latency_us", "network_gbs", "links", "tflops", "cpu_gbs")}
    device["wired_gib"] = given["wired_limit_gib"]

    o.text("dtype", formats["dtype"])
    o.text("experts_dtype", formats["experts_dtype"])
    o.choice("kv_dtype", formats["kv_dtype"], o.KvDtype)
    keep = formats["keep"]
    if isinstance(keep, str):
        keep = (keep,)
    if not isinstance(keep, (list, tuple)) or not all(isinstance(k, str) for k in keep):
        raise OptionError(f"--keep {o.shown(keep)}: COMPONENT=FORMAT strings", field="keep")
    if engine is not None:
        o.choice("engine", engine, o.EngineName)
    for name in ("gpus", "tp", "ep", "pp"):
        o.whole(name, placement[name])
    o.whole("gpu_layers", placement["gpu_layers"])
    o.flag_value("cpu_experts", placement["cpu_experts"])
    o.flag_value("two_batch_overlap", placement["overlap"])
    o.whole("max_nodes", placement["max_nodes"])
    if device["reserve"] is not None:
        o.number("reserve", device["reserve"], 0, 0.99, above=False)
    for name in ("link_gbs", "network_gbs", "tflops", "cpu_gbs", "wired_gib"):
        o.number(name if name != "wired_gib" else "wired_limit_gib", device[name], 0, 1e7)
    o.number("link_latency_us", device["link_latency_us"], 0, 1e6, above=False)
    device = {**device, "links": _links(device)}
    f = Formats(formats["dtype"], formats["experts_dtype"], formats["kv_dtype"], tuple(keep))
    eng = pick(engine, deployed(f)[0], hardware)
    if eng.split == "layer" and placement["tp"] is None and placement["pp"] == 1 and placement["gpu_layers"] is None:
        placement = {**placement, "tp": 1, "pp": placement["gpus"]}  # whole layers on each device (-sm layer)
    if device["reserve"] is None:
        tp = placement["tp"] or placement["gpus"] // placement["pp"]
        device = {**device, "reserve": round(1 - eng.utilization_at(tp), 6)}
    return f, Placement(**placement), Device(hardware, **device), eng


def _links(device: dict[str, Any]) -> Any:
    """``--links FILE`` read (no torch), or None; refused beside --link-gbs or --link-latency-us, which state the
    same figures."""
    path = device["links"]
    o.text("links", path)
    if path is None:
        return None
    for name in ("link_gbs", "link_latency_us"):
        if device[name] is not None:
            raise OptionError(f"--links {path} and {o.flag(name)}: both state the link's figures; give one", field="links")
    from ..analysis.linkfile import read

    return read(path)


def _kept(model: Model | Source, formats: Formats) -> Formats:
    """A quantized checkpoint's config.json names the modules it leaves unquantized: without --keep, those."""
    if formats.keep or isinstance(model, Model) or formats.dtype in ("bf16", "fp16", "fp32"):
        return formats
    from dataclasses import replace

    from ..sources.hf.quantization import kept

    return replace(formats, keep=kept(reference(model)))


def infer(
    model: Model | Source,
    *,
    prompt: int,
    generate: int,
    batch: int = InferenceRun.batch,
    dtype: str = Formats.dtype,
    experts_dtype: str | None = Formats.experts_dtype,
    kv_dtype: str = Formats.kv_dtype,
    keep: tuple[str, ...] = Formats.keep,
    hardware: str | None = None,
    hardware_file: str | None = None,
    engine: str | None = None,
    gpus: int = Placement.gpus,
    tp: int | None = Placement.tp,
    pp: int = Placement.pp,
    ep: int = Placement.ep,
    gpu_layers: int | None = Placement.gpu_layers,
    cpu_experts: bool = Placement.cpu_experts,
    two_batch_overlap: bool = Placement.overlap,
    max_nodes: int | None = Placement.max_nodes,
    prefill_gpus: int | None = None,
    prefill_tp: int | None = None,
    prefill_ep: int = 1,
    reserve: float | None = None,
    prefill_chunk: int | None = None,
    link_gbs: float | None = Device.link_gbs,
    link_latency_us: float | None = Device.link_latency_us,
    network_gbs: float | None = Device.network_gbs,
    links: str | None = None,
    tflops: float | None = Device.tflops,
    cpu_gbs: float = Device.cpu_gbs,
    wired_limit_gib: float | None = Device.wired_gib,
    draft: int = InferenceRun.draft,
    accept: float | None = InferenceRun.accept,
    draft_model: Model | Source | None = None,
    decode: str = InferenceRun.decode,
    prefill: str = InferenceRun.prefill,
    text_only: bool = False,
    images: int | None = None,
    image_size: int | None = None,
    image_tokens: int | None = None,
    audio_seconds: int | None = None,
    source_len: int | None = None,
) -> Plan:
    """Inference: FLOPs, weight and KV bytes, whether it fits, and the prefill and decode rates, the roofline and
    what ``engine`` (default: llamacpp for GGUF formats, mlx on Apple silicon, else vllm) is expected to reach.
    ``images``: images each request brings (``image_size`` pixels a side, or the size that makes ``image_tokens``),
    their tokens beside the prompt's in the prefill and the KV cache, their tower's work in the prefill and the time to
    first token; ``audio_seconds`` the same for the audio each request brings; ``source_len``: an encoder-decoder's
    source tokens a request (default: ``prompt``), ``prompt`` then the decoder's, the encoder prefilled once and its
    cross-attention K/V cached. ``text_only``: a multimodal model's language model alone."""
    from ..analysis import hardware as table
    from ..analysis.inference import plan_inference

    for name, value in (("prompt", prompt), ("generate", generate), ("batch", batch), ("prefill_chunk", prefill_chunk)):
        o.whole(name, value)
    o.whole("draft", draft, 0, 1024)
    if accept is not None:
        o.number("accept", accept, 0, 1, above=False)
    o.choice("decode", decode, o.DecodeForm)
    o.choice("prefill", prefill, o.DecodeForm)
    o.text("hardware", hardware)
    hw = table.by_key(hardware, hardware_file) if hardware else None
    formats, placement, dev, eng = _serving(locals(), hw)
    o.flag_value("text_only", text_only)
    m = with_inputs(
        generator(resolve(model, text_only=text_only), "infer"),
        images=images,
        image_size=image_size,
        image_tokens=image_tokens,
        audio_seconds=audio_seconds,
    )
    m, source = sourced(m, source_len, prompt)
    extra = sum(p.request_tokens() for p in m.stack.parts)  # the images' and the audio's tokens, prefilled and cached
    formats = _kept(model, formats)
    drafting = None
    if draft_model is not None:
        try:
            d = resolve(draft_model)
        except InputError as exc:
            raise type(exc)(f"--draft-model {draft_model}: {exc}", file=exc.file, line=exc.line, field=exc.field) from None
        drafting = (d.label, d.stack)
    run = InferenceRun(
        prompt + extra,
        generate,
        batch=batch,
        chunk=prefill_chunk or eng.chunk,
        decode=decode,
        prefill=prefill,
        draft=draft,
        accept=accept,
        draft_model=drafting,
    )
    for name, value in (("prefill_gpus", prefill_gpus), ("prefill_tp", prefill_tp), ("prefill_ep", prefill_ep)):
        o.whole(name, value)
    if prefill_gpus is None and (prefill_tp is not None or prefill_ep != 1):
        raise OptionError("--prefill-tp and --prefill-ep lay out the prefill instance that --prefill-gpus names", field="prefill_gpus")
    from ..analysis.disaggregation import prefill_placement

    split = prefill_placement(placement, prefill_gpus, prefill_tp, prefill_ep) if prefill_gpus else None
    planned = plan_inference(m.stack, m.label, run, formats, placement, dev, eng, split)
    if extra:
        given = " ".join(f"--{k} {v}" for k, v in (("images", images), ("audio-seconds", audio_seconds)) if v)
        planned.notes.append(f"{given}: {extra:,} prompt tokens beside the {prompt:,} of text, prefilled and cached")
    source_note(planned, source, source_len)
    return Plan(alone(planned, m, text_only), "infer")


def fit(
    model: Model | Source,
    *,
    hardware: str,
    hardware_file: str | None = None,
    engine: str | None = None,
    context: int | None = None,
    batch: int = FitRun.batch,
    dtype: str = Formats.dtype,
    experts_dtype: str | None = Formats.experts_dtype,
    kv_dtype: str = Formats.kv_dtype,
    keep: tuple[str, ...] = Formats.keep,
    gpus: int = Placement.gpus,
    tp: int | None = Placement.tp,
    pp: int = Placement.pp,
    ep: int = Placement.ep,
    gpu_layers: int | None = Placement.gpu_layers,
    cpu_experts: bool = Placement.cpu_experts,
    two_batch_overlap: bool = Placement.overlap,
    max_nodes: int | None = Placement.max_nodes,
    reserve: float | None = None,
    prefill_chunk: int | None = None,
    link_gbs: float | None = Device.link_gbs,
    link_latency_us: float | None = Device.link_latency_us,
    network_gbs: float | None = Device.network_gbs,
    links: str | None = None,
    tflops: float | None = Device.tflops,
    cpu_gbs: float = Device.cpu_gbs,
    wired_limit_gib: float | None = Device.wired_gib,
    ttft_slo: float | None = None,
    itl_slo: float | None = None,
    lora: int | None = None,
    lora_targets: str | tuple[str, ...] | None = None,
    lora_alpha: float | None = None,
    dora: bool | None = None,
    lora_modules_to_save: str | tuple[str, ...] | None = None,
    rslora: bool | None = None,
    base_dtype: str | None = None,
    double_quant: bool | None = None,
    kbit_fp32: bool | None = None,
    adapter_dtype: str | None = None,
    text_only: bool = False,
    images: int | None = None,
    image_size: int | None = None,
    image_tokens: int | None = None,
    audio_seconds: int | None = None,
    source_len: int | None = None,
) -> Plan:
    """Will it fit: memory per device as ``engine`` holds it, the largest context and batch, and the decode rate
    there, the roofline and the engine's expected. ``images`` (``image_size`` pixels a side, or the size that makes
    ``image_tokens``) and ``audio_seconds``: what each sequence brings beside its ``context`` tokens of text, their
    tokens held in the KV cache and their tower's work in the prefill (with no ``context``, they take their place in
    the model's own). With ``lora=R``, will fine-tuning fit: a step of ``batch`` sequences of ``context`` tokens
    (default 2,048) with gradient checkpointing, on ``gpus`` devices (FSDP) or, with one, on the fewest devices that
    hold it (LORA_DOC). ``source_len``: an encoder-decoder's source tokens a sequence (default: as long as
    ``context``), its cross-attention K/V cache held beside the KV cache. ``text_only``: a multimodal model's language
    model alone."""
    from ..analysis import hardware as table
    from ..analysis.fit import plan_fit

    o.text("hardware", hardware)
    for name, value in (("context", context), ("batch", batch), ("prefill_chunk", prefill_chunk)):
        o.whole(name, value)
    hw = table.by_key(hardware, hardware_file)
    tune = tuning(lora, _lora_options(locals()))
    if tune is not None:
        from ..analysis.finetune import plan_finetune

        serving = {"dtype": dtype != Formats.dtype, "kv_dtype": kv_dtype != Formats.kv_dtype, "engine": engine is not None}
        clash = next((k for k, v in serving.items() if v), None)
        if clash:
            raise OptionError(f"{o.flag(clash)}: a serving option; with --lora the base's format is --base-dtype", field=clash)
        if reserve is not None:
            o.number("reserve", reserve, 0, 0.99, above=False)
        inputs = (("images", images), ("image_size", image_size), ("image_tokens", image_tokens), ("audio_seconds", audio_seconds))
        media = next((k for k, v in inputs if v is not None), None)
        if media:
            raise OptionError(f"{o.flag(media)}: fine-tuning plans count text sequences; with --lora leave it out", field=media)
        o.flag_value("text_only", text_only)
        m = planned(resolve(model, text_only=text_only), "fit")
        step = Step(seq_len=context or FINETUNE_CONTEXT, micro_batch=batch, recompute="full")
        o.whole("gpus", gpus)
        layout = Layout(gpus=gpus, dp=gpus, zero=3) if gpus > 1 else Layout()  # more than one: FSDP; else the fewest
        answer = plan_finetune(m.stack, m.label, None, step, layout, Device(hw, tflops=tflops, reserve=reserve or 0.0), tune)
        return Plan(alone(answer, m, text_only), "fit")
    formats, placement, dev, eng = _serving(locals(), hw)
    o.flag_value("text_only", text_only)
    m = with_inputs(
        generator(resolve(model, text_only=text_only), "fit"),
        images=images,
        image_size=image_size,
        image_tokens=image_tokens,
        audio_seconds=audio_seconds,
    )
    m, source = sourced(m, source_len, context or m.context_length)
    extra = sum(p.request_tokens() for p in m.stack.parts)  # the images' and the audio's tokens, held in the cache
    formats = _kept(model, formats)
    o.number("ttft_slo", ttft_slo, 0, 1e6)
    o.number("itl_slo", itl_slo, 0, 1e6)
    held = context + extra if context else m.context_length
    run = FitRun(held, batch=batch, chunk=prefill_chunk or eng.chunk, ttft_slo=ttft_slo, itl_slo=itl_slo)
    answer = plan_fit(m.stack, m.label, run, formats, placement, dev, eng)
    source_note(answer, source, source_len)
    if extra:
        given = " ".join(f"--{k} {v}" for k, v in (("images", images), ("audio-seconds", audio_seconds)) if v)
        text = f"beside {context:,} of text" if context else f"within the {held:,} of the context"
        answer.notes.append(f"{given}: {extra:,} tokens a sequence {text}, held in the KV cache")
    return Plan(alone(answer, m, text_only), "fit")

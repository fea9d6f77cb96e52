"""The commands: parse the arguments, call the library, hand the result to the output. Heavy modules (torch)
are never imported here; checks that belong to the library (sequence lengths, parallel layouts) live there."""

from __future__ import annotations

import sys
from contextlib import nullcontext
from typing import Optional

from .. import api
from ..analysis.conventions import CONVENTIONS, DEFAULT
from ..analysis.plan import TRAIN_RESERVE, Device, FitRun, Formats, InferenceRun, Layout, Placement, Step, TrainingRun
from ..api.options import (
    AdapterDtype,
    BaseDtype,
    BenchBlock,
    BenchDevice,
    BenchDtype,
    ConventionName,
    DecodeForm,
    EngineName,
    FigureWidth,
    FrameworkName,
    HardwareDtype,
    KernelName,
    KindName,
    KvDtype,
    LossName,
    MatchName,
    OptimizerName,
    PrecisionName,
    RecomputeName,
    ScheduleName,
    VerifyConvention,
)
from ..errors import InputError
from ..model.schema import LIMIT
from ..output import render
from ..output.schemas import stamp
from ..sources import presets
from .options import GROUPS, Output, arg, command, emit, finite, opt

HELP = "Exact parameter and FLOP counts for transformer language models, component by component."


# what a request brings beside its tokens, for models with a vision tower (parts/vision.py)
IMAGES = opt(
    None, "--images", min=0, max=65_536, help="Images a sequence (a vision tower's work in the FLOPs; infer and fit: each request's)."
)
IMAGE_TOKENS = opt(
    None,
    "--image-tokens",
    min=1,
    max=2**32,
    help="Tokens of the language model each image makes: the smallest image size that makes them (in place of --image-size).",
)
TEXT_ONLY = opt(False, "--text-only", help="A multimodal model's language model alone, as its text-only class builds it (no towers).")
IMAGE_SIZE = opt(None, "--image-size", min=1, max=65_536, help="Pixels a side of each image (default: the tower's).")
AUDIO_SECONDS = opt(
    None, "--audio-seconds", min=0, max=65_536, help="Seconds of audio a sequence (an audio tower's work; infer and fit: a request's)."
)
SOURCE_LEN = opt(
    None,
    "--source-len",
    min=1,
    max=65_536,
    help="An encoder-decoder's source tokens a sequence, which its encoder runs over once (default: as long as the "
    "sequence; infer: the prompt, taken as the decoder's). Refused for Whisper, whose encoder runs over its 30-s "
    "window's 1,500 positions whatever the audio.",
)
# What count, train and fit take for fine-tuning with adapters (api.commands.tuning): each None unless given.
LORA = opt(None, "--lora", min=1, max=65_536, help="Fine-tune with LoRA adapters of this rank (peft's).")
LORA_TARGETS = opt(
    None, "--lora-targets", help="Modules adapted: peft's names, comma-separated (q_proj,v_proj), or all-linear (the default)."
)
LORA_ALPHA = opt(None, "--lora-alpha", check=finite(0, 1e9), help="LoRA's alpha: scales the update, changes no count.")
DORA = opt(False, "--dora", help="DoRA: a magnitude vector per adapted weight (its output features).")
LORA_SAVE = opt(None, "--lora-modules-to-save", help="Modules trained whole beside the adapters: lm_head, embed_tokens.")
RSLORA = opt(False, "--rslora", help="rsLoRA's scaling alpha/sqrt(r): changes no count.")
BASE_DTYPE = opt(
    None, "--base-dtype", choices=BaseDtype, help="The frozen base's format: bf16 (default), nf4/fp4 (QLoRA), int8, fp8, gptq, awq."
)
DOUBLE_QUANT = opt(
    None, "--double-quant/--no-double-quant", help="A 4-bit base's absmax quantized to 8 bits (bitsandbytes; default on)."
)
KBIT_FP32 = opt(False, "--kbit-fp32", help="The base's unquantized parameters in fp32 (peft's prepare_model_for_kbit_training).")
ADAPTER_DTYPE = opt(None, "--adapter-dtype", choices=AdapterDtype, help="The adapters' dtype: fp32 (peft's default) or bf16.")


def _lora(lora, targets, alpha, dora, save, rslora, base_dtype, double_quant, kbit_fp32, adapter_dtype) -> dict:
    """The fine-tuning options as the library takes them: a flag left off is not given."""
    return dict(
        lora=lora,
        lora_targets=targets,
        lora_alpha=alpha,
        dora=dora or None,
        lora_modules_to_save=save,
        rslora=rslora or None,
        base_dtype=base_dtype,
        double_quant=double_quant,
        kbit_fp32=kbit_fp32 or None,
        adapter_dtype=adapter_dtype,
    )


@command(
    output="exact",
    examples=("count gpt3", "count mixtral-8x7b --per-layer --seq-len 4096", "count config.json --convention 6n -f json"),
)
def count(
    model: str = arg(
        ...,
        help="A preset name (ffncalc presets), a spec file (.yaml), a config.json, or "
        "a checkpoint: .safetensors, a folder of shards, .gguf, ORG/NAME or ORG/NAME@REVISION.",
    ),
    seq_len: Optional[int] = opt(None, "--seq-len", min=1, max=LIMIT, help="Sequence length (default: the model's context)."),
    batch: int = opt(1, "--batch", min=1, max=LIMIT, help="Sequences per forward pass."),
    convention: str = opt(DEFAULT, "--convention", "-c", choices=ConventionName, help="How to count (ffncalc conventions)."),
    recompute: str = opt("none", "--recompute", choices=RecomputeName, help="Activation recomputation in a training step."),
    per_layer: bool = opt(False, "--per-layer", help="One block of rows per run of identical layers."),
    as_family: Optional[str] = opt(None, "--as", help="Read a config.json as this model_type (ffncalc families)."),
    text_only: bool = TEXT_ONLY,
    images: Optional[int] = IMAGES,
    image_size: Optional[int] = IMAGE_SIZE,
    image_tokens: Optional[int] = IMAGE_TOKENS,
    audio_seconds: Optional[int] = AUDIO_SECONDS,
    lora: Optional[int] = LORA,
    lora_targets: Optional[str] = LORA_TARGETS,
    lora_alpha: Optional[float] = LORA_ALPHA,
    dora: bool = DORA,
    lora_modules_to_save: Optional[str] = LORA_SAVE,
    rslora: bool = RSLORA,
    output: Output = None,
) -> None:
    """Count parameters and FLOPs of every component of a model: a preset, a spec file, or a Hugging Face
    config.json (or the folder holding one); or count a checkpoint's stored parameters from its headers alone
    (.safetensors, a sharded folder, .gguf, or ORG/NAME or ORG/NAME@REVISION on the Hugging Face Hub) against
    its config.json. With --lora R, the adapters peft builds and the parameters they train."""
    _show(
        output,
        api.count(
            model,
            seq_len=seq_len,
            batch=batch,
            convention=convention,
            recompute=recompute,
            per_layer=per_layer,
            as_family=as_family,
            text_only=text_only,
            images=images,
            image_size=image_size,
            image_tokens=image_tokens,
            audio_seconds=audio_seconds,
            lora=lora,
            lora_targets=lora_targets,
            lora_alpha=lora_alpha,
            dora=dora or None,
            lora_modules_to_save=lora_modules_to_save,
            rslora=rslora or None,
        ),
    )


@command(output="plain", examples=("verify gpt2", "verify llama3-8b --convention causal", "verify --hf config.json"))
def verify(
    model: Optional[str] = arg(None, help="A preset name or a spec file (.yaml)."),
    all_presets: bool = opt(False, "--all", help="Verify every preset."),
    hf_config: Optional[str] = opt(
        None, "--hf", help="A Hugging Face config.json (or its folder): also count the transformers model it names."
    ),
    seq_len: Optional[int] = opt(None, "--seq-len", min=1, max=LIMIT, help="Sequence length (default: the model's context)."),
    convention: str = opt("exact", "--convention", "-c", choices=VerifyConvention, help="Full square or causal triangle."),
    every_layer: bool = opt(False, "--every-layer", help="Build and run every layer, not one of each distinct kind."),
    memory: bool = opt(
        False,
        "--memory",
        help="What training keeps for backward, proven on real tensors on the CPU: each block against its reference "
        "module as fused kernels run it; with --hf, the whole transformers class against what it saves.",
    ),
    output: Output = None,
) -> None:
    """Prove the analytic counts against torch modules built on the meta device (and, with --hf, against
    the transformers class itself): exit 0 when every component agrees, 1 when any differs."""
    result = api.verify(
        model, all=all_presets, hf=hf_config, seq_len=seq_len, convention=convention, every_layer=every_layer, memory=memory
    )
    _show(output, result)
    if not result.ok:
        raise SystemExit(1)


@command("import", examples=("import config.json --out model.yaml",))
def import_(
    config: str = arg(..., help="A Hugging Face config.json, or the folder holding one."),
    out: Optional[str] = opt(None, "--out", help="Write the spec to this file (atomically) instead of stdout."),
    as_family: Optional[str] = opt(None, "--as", help="Read it as this model_type (ffncalc families)."),
) -> None:
    """Print the ffncalc spec (YAML) of a Hugging Face config.json; ffncalc count takes either."""
    from ..sources import hf

    c = hf.read_config(config, as_family)
    text = hf.to_yaml(c)
    if out:
        from ..files import write_atomic

        write_atomic(out, text)
        sys.stdout.write(f"wrote {out}\n")
    else:
        emit(text)


@command(
    output="exact",
    examples=(
        "compare llama2-7b",
        "compare --d-model 4096 --d-ff 16384 --to gated --multiple-of 256",
        "compare --d-model 768 --d-ff 3072 --sweep 1:8:1",
    ),
)
def compare(
    model: Optional[str] = arg(None, help="A preset name or a spec file; or use --d-model and --d-ff."),
    to: Optional[str] = opt(None, "--to", choices=KindName, help="The other kind (default: the one the model lacks)."),
    activation: Optional[str] = opt(
        None,
        "--activation",
        help="The other side's activation: swiglu, geglu, reglu, glu, bilinear, relu, gelu, silu, … (default: the same function).",
    ),
    match: str = opt("params", "--match", choices=MatchName, help="What to hold equal."),
    multiple_of: int = opt(1, "--multiple-of", min=1, max=LIMIT, help="Round the solved width up to a multiple (Llama)."),
    d_model: Optional[int] = opt(None, "--d-model", min=1, max=LIMIT, help="Bare block: the model width."),
    d_ff: Optional[int] = opt(None, "--d-ff", min=1, max=LIMIT, help="Bare block: its hidden width."),
    kind: str = opt("dense", "--kind", choices=KindName, help="Bare block: its kind."),
    block_activation: Optional[str] = opt(
        None, "--block-activation", help="Bare block: its activation (default: relu, or silu if gated)."
    ),
    bias: bool = opt(False, "--bias/--no-bias", help="Bare block: biases on its linear layers."),
    sweep: Optional[str] = opt(None, "--sweep", help="d_ff/d_model ratios: 2,2.67,4 or 1:8:0.5; one row each."),
    bench_: bool = opt(False, "--bench", help="Also time both blocks on this machine (as ffncalc bench)."),
    tokens: int = opt(1024, "--tokens", min=1, max=LIMIT, help="With --bench: tokens per timed run."),
    repeats: int = opt(5, "--repeats", min=1, max=10_000, help="With --bench: timed runs per block."),
    device: str = opt("auto", "--device", choices=BenchDevice, help="With --bench: auto, cpu, cuda or mps."),
    dtype: str = opt("fp32", "--dtype", choices=BenchDtype, help="With --bench: fp32, bf16 or fp16."),
    output: Output = None,
) -> None:
    """Dense vs gated FFN at equal parameters (or FLOPs): the solved width and both blocks side by side."""
    with _progress() if bench_ else nullcontext() as progress:
        result = api.compare(
            model,
            to=to,
            activation=activation,
            match=match,
            multiple_of=multiple_of,
            d_model=d_model,
            d_ff=d_ff,
            kind=kind,
            block_activation=block_activation,
            bias=bias,
            sweep=sweep,
            bench=bench_,
            tokens=tokens,
            repeats=repeats,
            device=device,
            dtype=dtype,
            progress=progress,
        )
    _show(output, result)


@command(
    output="plain",
    examples=(
        "bench gpt2 --block ffn --tokens 256 --repeats 3 --device cpu",
        "bench --collective all_reduce --gpus 2 --device cpu --sizes 8:64K --repeats 3",
        "bench gpt2 --block layer --tp 2 --device cpu --tokens 64 --repeats 2",
    ),
)
def bench(
    model: Optional[str] = arg(None, help="A preset name or a spec file (.yaml); none with --collective."),
    block: str = opt("ffn", "--block", choices=BenchBlock, help="What to time."),
    compare_ffn: bool = opt(False, "--compare-ffn", help="Time the dense and gated FFN at equal parameters."),
    backward: bool = opt(False, "--backward", help="Time forward + backward."),
    device: str = opt("auto", "--device", choices=BenchDevice, help="auto: cuda, then mps, then cpu."),
    dtype: str = opt("fp32", "--dtype", choices=BenchDtype),
    tokens: Optional[int] = opt(
        None, "--tokens", min=1, max=LIMIT, help="Tokens per run (batch × sequence; default 2048, with --tp on a CPU 128)."
    ),
    seq_len: Optional[int] = opt(None, "--seq-len", min=1, max=LIMIT, help="Sequence length (default: min(tokens, context))."),
    layer: int = opt(0, "--layer", min=0, max=LIMIT, help="Which layer's blocks, for stacks whose layers differ."),
    repeats: int = opt(10, "--repeats", min=1, max=10_000),
    warmup: int = opt(2, "--warmup", min=0, max=1000),
    collective: Optional[str] = opt(
        None,
        "--collective",
        help="Time collectives across ranks: all_reduce, all_gather, reduce_scatter, all_to_all, send_recv (comma-separated).",
    ),
    gpus: Optional[int] = opt(
        None, "--gpus", min=1, max=4096, help="With --collective: ranks (default: every GPU, 2 on a CPU; torchrun's WORLD_SIZE)."
    ),
    sizes: Optional[str] = opt(
        None, "--sizes", help="With --collective: bytes, a list (4096,1M) or powers of two (8:1G; default 8:1G, on a CPU 8:64M)."
    ),
    tp: Optional[int] = opt(None, "--tp", min=1, max=4096, help="Split the block over this many ranks (tensor parallel)."),
    ep: Optional[int] = opt(None, "--ep", min=1, max=4096, help="Split a mixture's experts over this many ranks (expert parallel)."),
    links: Optional[str] = opt(None, "--links", help="With --tp or --ep: a links file for the planned collectives."),
    output: Output = None,
    out: Optional[str] = opt(None, "--out", help="Also save the JSON results to this file (atomically); --collective: a links file."),
) -> None:
    """Time real blocks built from the spec on this machine's hardware, with achieved FLOP/s; or collectives and a
    tensor-parallel block across ranks."""
    with _progress() as progress:
        result = api.bench(
            model,
            block=block,
            compare_ffn=compare_ffn,
            backward=backward,
            device=device,
            dtype=dtype,
            tokens=tokens,
            seq_len=seq_len,
            layer=layer,
            repeats=repeats,
            warmup=warmup,
            progress=progress,
            collective=collective,
            gpus=gpus,
            sizes=sizes,
            tp=tp,
            ep=ep,
            links=links,
        )
    if getattr(result, "body", True) is None:
        return  # another rank of a torchrun job: rank 0 shows the result
    if out:
        from ..files import write_atomic

        write_atomic(out, result.to_json())
    _show(output, result)
    if getattr(result, "body", None) and result.body.get("matches") is False:
        raise SystemExit(1)  # a split block whose output is not the whole one's, as verify exits on a disagreement


class _progress:
    """A transient progress bar on stderr while timing runs, if stderr is a terminal."""

    def __enter__(self):
        self.bar = None
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import Progress

            self.bar = Progress(console=Console(stderr=True), transient=True)
            self.bar.start()
            self.task = self.bar.add_task("timing", total=None)
        return self.update

    def update(self, what: str, done: int, total: int) -> None:
        if self.bar:
            self.bar.update(self.task, description=what, completed=done, total=total)

    def __exit__(self, *exc):
        if self.bar:
            self.bar.stop()


@command(
    "table", output="exact", examples=("table gpt3 llama3-8b mixtral-8x7b", "table all --columns model,params,active_params -f csv")
)
def table_(
    models: list[str] = arg(..., help="Preset names or spec files; 'all' for every preset."),
    columns: Optional[str] = opt(None, "--columns", help="Comma-separated columns, in order (default: all)."),
    seq_len: Optional[int] = opt(None, "--seq-len", min=1, max=LIMIT, help="Sequence length (default: each model's context)."),
    convention: str = opt(DEFAULT, "--convention", "-c", choices=ConventionName, help="How to count (ffncalc conventions)."),
    output: Output = None,
) -> None:
    """One table comparing models: a row each with totals, attention and FFN shares, FLOPs and shapes."""
    _show(output, api.table(models, columns=columns, seq_len=seq_len, convention=convention))


@command(examples=("serve", "serve --port 8080 --open"))
def serve(
    host: str = opt("127.0.0.1", "--host", help="Address to listen on (another than loopback is reachable from other machines)."),
    port: int = opt(8000, "--port", min=1, max=65535, help="Port to listen on."),
    open_browser: bool = opt(False, "--open", help="Open the page in the default browser."),
    workers: int = opt(2, "--workers", min=1, max=64, help="Processes answering requests, each one at a time."),
) -> None:
    """Serve a web page with every answer (count, compare, fit, infer, train) and its JSON API under /api/, on
    127.0.0.1 unless told otherwise (needs the extra: pip install 'ffncalc[web]')."""
    from ..web import serve as run

    run(host, port, open_browser=open_browser, workers=workers)


@command(examples=("docs --out site", "docs --check site"))
def docs(
    out: Optional[str] = opt(None, "--out", help="Write the docs set into this folder."),
    check: Optional[str] = opt(None, "--check", help="Exit 1 if this folder's docs are out of date; writes nothing."),
    readme: Optional[str] = opt(None, "--readme", help="Also refresh (--out) or check (--check) the examples of this README."),
    pages: Optional[str] = opt(
        None,
        "--pages",
        help="Also refresh (--out) or check (--check) the examples of "
        "this markdown page, or of every page under this "
        "folder that docs did not write.",
    ),
    force: bool = opt(False, "--force", help="Replace files in the folder that docs did not write."),
) -> None:
    """Generate the docs set: an index table of every preset, a page per preset (with its verify result),
    dense vs gated, the conventions, and figures. Writes only its own files (each carries a generated-file
    marker), all of them or none. With --readme and --pages, every example of those pages (a fenced text block
    that starts with `$ ffncalc`) is run, and its output refreshed or checked."""
    from pathlib import Path

    from ..files import write_all
    from ..output import docs as generated
    from ..sources.yaml import read_text
    from . import main as run

    if (out is None) == (check is None):
        raise InputError("docs takes --out DIR or --check DIR")
    folder = Path(out if out is not None else check)
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{'--out' if out is not None else '--check'} {folder}: not a folder")
    found = generated.pages(Path(pages)) if pages else []  # before the build: a wrong path fails at once
    try:
        files = generated.build()
    except ImportError as exc:
        raise InputError(f"docs needs torch and matplotlib ({exc}): pip install '.[torch,plot]'") from None
    # the pages whose examples run: the README, then the hand-written pages, each once and none of the set's own
    texts = [Path(readme)] if readme else []
    seen = {p.resolve() for p in texts} | {(folder / path).resolve() for path in files}
    for page in found:
        if page.resolve() not in seen:
            texts.append(page)
            seen.add(page.resolve())
    memo: dict[str, str] = {}  # an example on several pages runs once
    now = {page: read_text(page) for page in texts}
    fresh = {page: generated.refresh_examples(text, run, memo) for page, text in now.items()}
    changed = [page for page in texts if fresh[page] != now[page]]
    named = ([readme] if readme else []) + (
        [pages if Path(pages).is_file() else f"{len(texts) - bool(readme)} pages under {pages}"] if pages else []
    )
    if out is not None:
        theirs = generated.foreign(folder, files)
        if theirs and not force:
            raise InputError(
                f"--out {out}: {len(theirs)} file(s) there were not written by ffncalc docs "
                f"({', '.join(theirs[:3])}{', …' if len(theirs) > 3 else ''}); "
                "choose another folder, or replace them with --force"
            )
        batch = {folder / path: data for path, data in files.items()}
        batch |= {page: fresh[page] for page in changed}
        write_all(batch)
        sys.stdout.write(f"wrote {len(files)} files under {out}" + (f" and refreshed {' and '.join(named)}" if named else "") + "\n")
        return
    stale = generated.check(folder, files) + [str(page) for page in changed]
    total = len(files) + len(texts)
    if stale:
        sys.stdout.write(
            f"{len(stale)} of {total} files out of date: {', '.join(stale)}\n"
            f"regenerate with: ffncalc docs --out {check}"
            + (f" --readme {readme}" if readme else "")
            + (f" --pages {pages}" if pages else "")
            + "\n"
        )
        raise SystemExit(1)
    sys.stdout.write(f"all {total} files are up to date ({check}" + "".join(f", {n}" for n in named) + ")\n")


GROUPS["plot"] = "Figures for docs and papers, as SVG, PDF or PNG (needs matplotlib)."


WIDTH_HELP = "docs: the docs' size; column or page: a two-column paper's column (3.3 in) or text width (6.9 in)."


@command(
    "plot",
    "share",
    examples=(
        "plot share gpt3 llama3-8b mixtral-8x7b --out share.svg",
        "plot share llama3-8b deepseek-v3 --width column --out share.pdf",
    ),
)
def plot_share(
    models: list[str] = arg(..., help="Preset names or spec files; 'all' for every preset."),
    out: str = opt(..., "--out", help="The figure: FILE.svg, FILE.pdf or FILE.png."),
    width: str = opt("docs", "--width", choices=FigureWidth, help=WIDTH_HELP),
) -> None:
    """Stacked bars of each model's parameters by component."""
    api.plot("share", models, width=width, out=out)


@command(
    "plot",
    "sweep",
    examples=("plot sweep --d-model 4096 --ratios 1:8:1 --out sweep.svg", "plot sweep --d-model 4096 --width page --out sweep.pdf"),
)
def plot_sweep(
    d_model: int = opt(4096, "--d-model", min=1, max=LIMIT, help="The model width."),
    ratios: str = opt("1:8:1", "--ratios", help="d_ff/d_model ratios: 2,2.67,4 or start:stop:step."),
    bias: bool = opt(False, "--bias/--no-bias"),
    bench_results: Optional[str] = opt(
        None, "--bench-results", help="JSON from ffncalc bench --compare-ffn --out: adds measured time."
    ),
    out: str = opt(..., "--out", help="The figure: FILE.svg, FILE.pdf or FILE.png."),
    width: str = opt("docs", "--width", choices=FigureWidth, help=WIDTH_HELP),
) -> None:
    """Dense vs gated FFN across widths: parameters and FLOPs per token, and measured time if given."""
    api.plot("sweep", d_model=d_model, ratios=ratios, bias=bias, bench_results=bench_results, width=width, out=out)


GROUPS["presets"] = "List the shipped presets, or show one as YAML."


@command(
    output="exact",
    examples=(
        "train llama3-8b --tokens 15T --hardware h100-sxm --gpus 1024",
        "train deepseek-v3 --tokens 14.8T --hardware h100-sxm --gpus 2048 --dp 128 --pp 16 --ep 8",
        "train llama3-70b --tokens 15T --hardware h100-sxm --gpus 64 --global-batch 512 --kernel-mfu 0.5 --fastest",
        "train llama3-8b --tokens 100M --lora 16 --base-dtype nf4 --seq-len 2048 --recompute full --hardware rtx4090",
    ),
)
def train(
    model: str = arg(..., help="A preset name or a spec file (.yaml)."),
    tokens: str = opt(..., "--tokens", help="Training tokens: 300B, 300e9, …"),
    seq_len: Optional[int] = opt(Step.seq_len, "--seq-len", min=1, max=LIMIT, help="Sequence length (default: the model's context)."),
    convention: str = opt(
        TrainingRun.convention, "--convention", "-c", choices=ConventionName, help="How to count FLOPs (ffncalc conventions)."
    ),
    recompute: str = opt(Step.recompute, "--recompute", choices=RecomputeName, help="Activation recomputation."),
    hardware_key: Optional[str] = opt(None, "--hardware", help="A device of the hardware table (h100-sxm, …)."),
    hardware_file: Optional[str] = opt(None, "--hardware-file", help="Your own devices, as a YAML list."),
    tflops: Optional[float] = opt(
        Device.tflops, "--tflops", check=finite(0, 1e9), help="Achieved TFLOP/s per device, instead of peak × MFU."
    ),
    gpus: Optional[int] = opt(Layout.gpus, "--gpus", min=1, max=LIMIT, help="Devices (alone: data parallelism)."),
    mfu: Optional[float] = opt(
        Device.mfu,
        "--mfu",
        check=finite(0, 1),
        help="Model FLOPs utilisation end to end, the pipeline bubble in it (default: 0.4 bf16, 0.176 fp8).",
    ),
    kernel_mfu: Optional[float] = opt(
        Device.kernel_mfu,
        "--kernel-mfu",
        check=finite(0, 1),
        help="Share of the peak while busy, instead of --mfu: the pipeline bubble is added.",
    ),
    dtype: Optional[str] = opt(
        TrainingRun.dtype, "--dtype", choices=HardwareDtype, help="Which datasheet peak (default: the precision's)."
    ),
    tokens_per_s: Optional[float] = opt(
        TrainingRun.tokens_per_s, "--tokens-per-s", check=finite(0, 1e15), help="Measured tokens/s of all devices."
    ),
    budget: Optional[str] = opt(TrainingRun.budget, "--budget", help="Compute budget for the Chinchilla optimum (default: this run)."),
    micro_batch: int = opt(Step.micro_batch, "--micro-batch", min=1, max=LIMIT, help="Sequences per device per micro-batch."),
    global_batch: Optional[int] = opt(
        Step.global_batch, "--global-batch", min=1, max=LIMIT, help="Sequences per step (gives the pipeline bubble)."
    ),
    optimizer: str = opt(Step.optimizer, "--optimizer", choices=OptimizerName, help="Mixed-precision Adam or 8-bit Adam."),
    precision: str = opt(Step.precision, "--precision", choices=PrecisionName, help="bf16 mixed precision, or fp8 training."),
    framework: str = opt(
        Step.framework, "--framework", choices=FrameworkName, help="Whose dtypes, buffers and loss the memory follows."
    ),
    loss: str = opt(Step.loss, "--loss", choices=LossName, help="Cross-entropy over all logits at once, or chunked (fused)."),
    zero: Optional[int] = opt(
        Layout.zero, "--zero", min=0, max=3, help="ZeRO stage: 1 optimizer, 2 + gradients, 3 + weights (default: the framework's)."
    ),
    dp: Optional[int] = opt(Layout.dp, "--dp", min=1, max=LIMIT, help="Data-parallel degree (default: what the others leave)."),
    tp: int = opt(Layout.tp, "--tp", min=1, max=LIMIT, help="Tensor-parallel degree."),
    sequence_parallel: bool = opt(
        Layout.sequence_parallel,
        "--sequence-parallel/--no-sequence-parallel",
        help="Split the norms' and dropouts' activations over --tp too (Korthikanti et al. 2022).",
    ),
    pp: int = opt(Layout.pp, "--pp", min=1, max=LIMIT, help="Pipeline-parallel degree."),
    ends_as_layers: bool = opt(
        Layout.ends_as_layers,
        "--ends-as-layers/--no-ends-as-layers",
        help="The pipeline split gives the embedding and the head a layer's slot each (Megatron-LM's "
        "--account-for-embedding/loss-in-pipeline-split).",
    ),
    virtual_stages: int = opt(
        Layout.virtual_stages, "--virtual-stages", min=1, max=LIMIT, help="Chunks a pipeline device runs (interleaved 1F1B)."
    ),
    cp: int = opt(Layout.cp, "--cp", min=1, max=LIMIT, help="Context-parallel degree."),
    ep: int = opt(Layout.ep, "--ep", min=1, max=LIMIT, help="Expert-parallel degree (inside dp)."),
    reserve: float = opt(TRAIN_RESERVE, "--reserve", min=0, max=0.99, help="Memory fraction kept free beside the allowances."),
    min_gpus: bool = opt(
        TrainingRun.min_gpus, "--min-gpus", help="Find the fewest devices and the layout that fit (with --hardware)."
    ),
    fastest: bool = opt(
        TrainingRun.fastest,
        "--fastest",
        help="Find the layout of --gpus devices with the shortest step that fits (with --hardware; --kernel-mfu and "
        "--global-batch weigh the bubble).",
    ),
    schedule: str = opt(
        Layout.schedule,
        "--schedule",
        choices=ScheduleName,
        help="Pipeline schedule: 1f1b (interleaved with --virtual-stages), zb-h1 (zero-bubble, 1F1B's memory) or "
        "zb-h2 (zero-bubble, up to 2p − 1 micro-batches in flight).",
    ),
    goodput: float = opt(
        TrainingRun.goodput,
        "--goodput",
        check=finite(0, 1),
        help="Fraction of the wall-clock spent training (restarts, failures and checkpoints take the rest).",
    ),
    kernel: str = opt(
        Step.kernel,
        "--attention-kernel",
        choices=KernelName,
        help="flash: no attention scores kept; eager: scores kept (Korthikanti et al.).",
    ),
    mtp: Optional[bool] = opt(Step.mtp, "--mtp/--no-mtp", help="Count multi-token prediction FLOPs (default: if the model has them)."),
    lora: Optional[int] = LORA,
    lora_targets: Optional[str] = LORA_TARGETS,
    lora_alpha: Optional[float] = LORA_ALPHA,
    dora: bool = DORA,
    lora_modules_to_save: Optional[str] = LORA_SAVE,
    rslora: bool = RSLORA,
    base_dtype: Optional[str] = BASE_DTYPE,
    double_quant: Optional[bool] = DOUBLE_QUANT,
    kbit_fp32: bool = KBIT_FP32,
    adapter_dtype: Optional[str] = ADAPTER_DTYPE,
    source_len: Optional[int] = SOURCE_LEN,
    text_only: bool = TEXT_ONLY,
    images: Optional[int] = IMAGES,
    image_size: Optional[int] = IMAGE_SIZE,
    image_tokens: Optional[int] = IMAGE_TOKENS,
    output: Output = None,
) -> None:
    """Plan a training run: FLOPs, GPU-hours and days, the compute-optimal size, memory per device."""
    result = api.train(
        model,
        tokens=tokens,
        seq_len=seq_len,
        convention=convention,
        recompute=recompute,
        hardware=hardware_key,
        hardware_file=hardware_file,
        tflops=tflops,
        gpus=gpus,
        mfu=mfu,
        kernel_mfu=kernel_mfu,
        dtype=dtype,
        tokens_per_s=tokens_per_s,
        budget=budget,
        micro_batch=micro_batch,
        global_batch=global_batch,
        optimizer=optimizer,
        precision=precision,
        framework=framework,
        loss=loss,
        zero=zero,
        dp=dp,
        tp=tp,
        sequence_parallel=sequence_parallel,
        ends_as_layers=ends_as_layers,
        pp=pp,
        virtual_stages=virtual_stages,
        cp=cp,
        ep=ep,
        reserve=reserve,
        goodput=goodput,
        attention_kernel=kernel,
        mtp=mtp,
        min_gpus=min_gpus,
        source_len=source_len,
        text_only=text_only,
        images=images,
        image_size=image_size,
        image_tokens=image_tokens,
        fastest=fastest,
        schedule=schedule,
        **_lora(
            lora, lora_targets, lora_alpha, dora, lora_modules_to_save, rslora, base_dtype, double_quant, kbit_fp32, adapter_dtype
        ),
    )
    _show(output, result)


def _keep(text: str | None) -> tuple[str, ...]:
    """--keep's comma-separated overrides."""
    return tuple(t.strip() for t in text.split(",") if t.strip()) if text else ()


def _show(output: Output, result: api.Result) -> None:
    """A result in the format asked for: its documents, its record (JSON) or its CSV."""
    output.show(doc=lambda: result.documents(output.human), json=result.record, csv=result.to_csv)


FORMAT_HELP = "bf16, fp16, fp8, int8, int4 (GPTQ/AWQ g128), mxfp4, nvfp4, q8_0, q6_k, q5_k_m, q5_k, q4_k_m, q4_k, q3_k, q2_k"


# What infer and fit share: the weights' formats, the devices' layout and links, the reserve.
DTYPE = opt(Formats.dtype, "--dtype", help=f"Weight format: {FORMAT_HELP}.")
EXPERTS_DTYPE = opt(Formats.experts_dtype, "--experts-dtype", help="Routed experts' format (default: --dtype).")
KV_DTYPE = opt(Formats.kv_dtype, "--kv-dtype", choices=KvDtype, help="KV-cache precision (q8_0, q4_0: llama.cpp's block types).")
KEEP = opt(
    None,
    "--keep",
    help="Formats of parts, comma-separated: attention=bf16, ffn=…, experts=…, layers:0-3=bf16 (a mixed checkpoint).",
)
ENGINE = opt(
    None,
    "--engine",
    choices=EngineName,
    help="Serving engine the expected rates and memory are for (default: llamacpp for GGUF formats, mlx on Apple silicon, else vllm).",
)
GPU_LAYERS = opt(
    Placement.gpu_layers, "--gpu-layers", min=0, max=LIMIT, help="Layers on the devices, the rest on the host's CPU (llama.cpp -ngl)."
)
CPU_EXPERTS = opt(False, "--cpu-experts", help="Routed experts on the host's CPU (llama.cpp --cpu-moe).")
OVERLAP = opt(
    False,
    "--two-batch-overlap",
    help="Two micro-batches a step, one's expert-parallel all-to-alls beside the other's compute (SGLang "
    "--enable-two-batch-overlap, DeepSeek's dual micro-batch overlap); needs --ep beyond --tp.",
)
MAX_NODES = opt(
    Placement.max_nodes,
    "--max-nodes",
    min=1,
    max=LIMIT,
    help="The most nodes a token's routed experts sit on (DeepSeek-V3's node-limited routing: 4); a prefill's "
    "dispatch sends a token once to each node it reaches (DeepEP's normal kernels).",
)
CPU_GBS = opt(
    Device.cpu_gbs, "--cpu-gbs", check=finite(0, 1e7), help="The host's memory bandwidth, GB/s (default: DDR5-5600, 2 channels)."
)
WIRED = opt(
    Device.wired_gib,
    "--wired-limit-gib",
    check=finite(0, 1e7),
    help="Apple silicon: GiB the GPU may wire (default: macOS's, 2/3 or 3/4 of memory).",
)
HARDWARE_FILE = opt(None, "--hardware-file", help="Your own devices, as a YAML list.")
GPUS = opt(Placement.gpus, "--gpus", min=1, max=LIMIT, help="Devices.")
TP = opt(Placement.tp, "--tp", min=1, max=LIMIT, help="Tensor-parallel degree (default: --gpus ÷ --pp).")
PP = opt(Placement.pp, "--pp", min=1, max=LIMIT, help="Pipeline stages, each of --tp devices.")
EP = opt(
    Placement.ep,
    "--ep",
    min=1,
    max=LIMIT,
    help="Devices the routed experts spread over: within --tp, or a multiple of it across copies (their attention data-parallel).",
)
RESERVE = opt(None, "--reserve", min=0, max=0.99, help="Memory fraction kept free (default: the engine's; vLLM 0.1).")
CHUNK = opt(
    None, "--prefill-chunk", min=1, max=LIMIT, help="Prefill tokens per forward (default: the engine's; vLLM 8192, llama.cpp 512)."
)
LINK_GBS = opt(
    Device.link_gbs, "--link-gbs", check=finite(0, 1e7), help="Interconnect GB/s per direction (default: the device's scale-up link)."
)
LINK_LATENCY = opt(
    Device.link_latency_us,
    "--link-latency-us",
    check=finite(0, 1e6, above=False),
    help="Fixed time of one all-reduce or hand-off, in µs (default: NCCL's model for the device's link).",
)
NETWORK_GBS = opt(
    Device.network_gbs,
    "--network-gbs",
    check=finite(0, 1e7),
    help="GB/s per device and direction between nodes (default: 50, a 400 Gb/s NIC a GPU).",
)
LINKS = opt(
    None,
    "--links",
    help="A links file measured by `ffncalc bench --collective … --out FILE`: its fits in place of the table's link figures.",
)
TFLOPS = opt(
    Device.tflops,
    "--tflops",
    check=finite(0, 1e7),
    help="A device's peak TFLOP/s, in place of the datasheet's (for devices that state none, or a measured rate).",
)


@command(
    output="exact",
    examples=(
        "infer llama3-70b --prompt 4000 --generate 500 --hardware h100-sxm --gpus 4",
        "infer deepseek-v3 --prompt 2000 --generate 200 --dtype fp8 --hardware h200 --gpus 8",
    ),
)
def infer(
    model: str = arg(..., help="A preset name or a spec file (.yaml)."),
    prompt: int = opt(..., "--prompt", min=1, max=LIMIT, help="Prompt tokens."),
    generate: int = opt(..., "--generate", min=1, max=LIMIT, help="Tokens to generate."),
    batch: int = opt(InferenceRun.batch, "--batch", min=1, max=LIMIT, help="Sequences decoded together."),
    dtype: str = DTYPE,
    experts_dtype: Optional[str] = EXPERTS_DTYPE,
    kv_dtype: str = KV_DTYPE,
    keep: Optional[str] = KEEP,
    hardware_key: Optional[str] = opt(None, "--hardware", help="A device of the hardware table (h100-sxm, …)."),
    hardware_file: Optional[str] = HARDWARE_FILE,
    engine: Optional[str] = ENGINE,
    gpus: int = GPUS,
    tp: Optional[int] = TP,
    pp: int = PP,
    ep: int = EP,
    gpu_layers: Optional[int] = GPU_LAYERS,
    cpu_experts: bool = CPU_EXPERTS,
    two_batch_overlap: bool = OVERLAP,
    max_nodes: int | None = MAX_NODES,
    reserve: Optional[float] = RESERVE,
    chunk: Optional[int] = CHUNK,
    link_gbs: Optional[float] = LINK_GBS,
    link_latency_us: Optional[float] = LINK_LATENCY,
    network_gbs: Optional[float] = NETWORK_GBS,
    links: Optional[str] = LINKS,
    tflops: Optional[float] = TFLOPS,
    cpu_gbs: float = CPU_GBS,
    wired_limit_gib: Optional[float] = WIRED,
    draft: int = opt(InferenceRun.draft, "--draft", min=0, max=1024, help="Speculative decoding / MTP: tokens drafted per step."),
    accept: Optional[float] = opt(InferenceRun.accept, "--accept", min=0, max=1, help="Acceptance rate of a drafted token."),
    draft_model: Optional[str] = opt(
        None, "--draft-model", help="The draft model (a preset, spec file or config.json; default: the model's MTP modules)."
    ),
    decode: str = opt(
        InferenceRun.decode,
        "--decode",
        choices=DecodeForm,
        help="Latent attention decoded absorbed (as serving engines run it) or expanded.",
    ),
    prefill: str = opt(
        InferenceRun.prefill, "--prefill", choices=DecodeForm, help="Latent attention prefilled expanded (as in training) or absorbed."
    ),
    text_only: bool = TEXT_ONLY,
    images: Optional[int] = IMAGES,
    image_size: Optional[int] = IMAGE_SIZE,
    image_tokens: Optional[int] = IMAGE_TOKENS,
    audio_seconds: Optional[int] = AUDIO_SECONDS,
    source_len: Optional[int] = SOURCE_LEN,
    prefill_gpus: Optional[int] = opt(
        None,
        "--prefill-gpus",
        min=1,
        max=LIMIT,
        help="Prefill on devices of their own (prefill-decode disaggregation); --gpus and its layout decode.",
    ),
    prefill_tp: Optional[int] = opt(None, "--prefill-tp", min=1, max=LIMIT, help="The prefill instance's tensor-parallel degree."),
    prefill_ep: int = opt(1, "--prefill-ep", min=1, max=LIMIT, help="The prefill instance's devices sharing the routed experts."),
    output: Output = None,
) -> None:
    """Plan inference: FLOPs, weight and KV bytes, whether it fits, and the roofline prefill and decode rates."""
    serving = dict(
        dtype=dtype,
        experts_dtype=experts_dtype,
        kv_dtype=kv_dtype,
        keep=_keep(keep),
        hardware_file=hardware_file,
        engine=engine,
        gpus=gpus,
        tp=tp,
        pp=pp,
        ep=ep,
        gpu_layers=gpu_layers,
        cpu_experts=cpu_experts,
        two_batch_overlap=two_batch_overlap,
        max_nodes=max_nodes,
        reserve=reserve,
        prefill_chunk=chunk,
        link_gbs=link_gbs,
        link_latency_us=link_latency_us,
        network_gbs=network_gbs,
        links=links,
        tflops=tflops,
        cpu_gbs=cpu_gbs,
        wired_limit_gib=wired_limit_gib,
    )
    result = api.infer(
        model,
        prompt=prompt,
        generate=generate,
        batch=batch,
        hardware=hardware_key,
        draft=draft,
        accept=accept,
        draft_model=draft_model,
        decode=decode,
        prefill=prefill,
        text_only=text_only,
        images=images,
        image_size=image_size,
        image_tokens=image_tokens,
        audio_seconds=audio_seconds,
        source_len=source_len,
        prefill_gpus=prefill_gpus,
        prefill_tp=prefill_tp,
        prefill_ep=prefill_ep,
        **serving,
    )
    _show(output, result)


@command(
    output="exact",
    examples=(
        "fit llama3-70b --hardware h100-sxm --gpus 2",
        "fit qwen3-32b --hardware rtx4090 --dtype q4_k_m",
        "fit llama3-8b --hardware rtx4090 --lora 16 --base-dtype nf4",
    ),
)
def fit(
    model: str = arg(..., help="A preset name or a spec file (.yaml)."),
    hardware_key: str = opt(..., "--hardware", help="A device of the hardware table (h100-sxm, …)."),
    hardware_file: Optional[str] = HARDWARE_FILE,
    context: Optional[int] = opt(None, "--context", min=1, max=LIMIT, help="Tokens per sequence (default: the model's context)."),
    batch: int = opt(FitRun.batch, "--batch", min=1, max=LIMIT, help="Sequences held at once."),
    dtype: str = DTYPE,
    experts_dtype: Optional[str] = EXPERTS_DTYPE,
    kv_dtype: str = KV_DTYPE,
    keep: Optional[str] = KEEP,
    engine: Optional[str] = ENGINE,
    gpus: int = GPUS,
    tp: Optional[int] = TP,
    pp: int = PP,
    ep: int = EP,
    gpu_layers: Optional[int] = GPU_LAYERS,
    cpu_experts: bool = CPU_EXPERTS,
    two_batch_overlap: bool = OVERLAP,
    max_nodes: int | None = MAX_NODES,
    reserve: Optional[float] = RESERVE,
    chunk: Optional[int] = CHUNK,
    link_gbs: Optional[float] = LINK_GBS,
    link_latency_us: Optional[float] = LINK_LATENCY,
    network_gbs: Optional[float] = NETWORK_GBS,
    links: Optional[str] = LINKS,
    tflops: Optional[float] = TFLOPS,
    cpu_gbs: float = CPU_GBS,
    wired_limit_gib: Optional[float] = WIRED,
    ttft_slo: Optional[float] = opt(
        None, "--ttft-slo", check=finite(0, 1e6), help="Goodput: seconds a request joining the batch may wait for its first token."
    ),
    itl_slo: Optional[float] = opt(None, "--itl-slo", check=finite(0, 1e6), help="Goodput: seconds between a sequence's tokens."),
    lora: Optional[int] = LORA,
    lora_targets: Optional[str] = LORA_TARGETS,
    lora_alpha: Optional[float] = LORA_ALPHA,
    dora: bool = DORA,
    lora_modules_to_save: Optional[str] = LORA_SAVE,
    rslora: bool = RSLORA,
    base_dtype: Optional[str] = BASE_DTYPE,
    double_quant: Optional[bool] = DOUBLE_QUANT,
    kbit_fp32: bool = KBIT_FP32,
    adapter_dtype: Optional[str] = ADAPTER_DTYPE,
    text_only: bool = TEXT_ONLY,
    images: Optional[int] = IMAGES,
    image_size: Optional[int] = IMAGE_SIZE,
    image_tokens: Optional[int] = IMAGE_TOKENS,
    audio_seconds: Optional[int] = AUDIO_SECONDS,
    source_len: Optional[int] = SOURCE_LEN,
    output: Output = None,
) -> None:
    """Will it fit: memory per device as the engine holds it, the largest context and batch, and the decode rate there."""
    result = api.fit(
        model,
        hardware=hardware_key,
        hardware_file=hardware_file,
        engine=engine,
        context=context,
        ttft_slo=ttft_slo,
        itl_slo=itl_slo,
        batch=batch,
        dtype=dtype,
        experts_dtype=experts_dtype,
        kv_dtype=kv_dtype,
        keep=_keep(keep),
        gpus=gpus,
        tp=tp,
        pp=pp,
        ep=ep,
        gpu_layers=gpu_layers,
        cpu_experts=cpu_experts,
        two_batch_overlap=two_batch_overlap,
        max_nodes=max_nodes,
        reserve=reserve,
        prefill_chunk=chunk,
        link_gbs=link_gbs,
        link_latency_us=link_latency_us,
        network_gbs=network_gbs,
        links=links,
        tflops=tflops,
        cpu_gbs=cpu_gbs,
        wired_limit_gib=wired_limit_gib,
        text_only=text_only,
        images=images,
        image_size=image_size,
        image_tokens=image_tokens,
        audio_seconds=audio_seconds,
        source_len=source_len,
        **_lora(
            lora, lora_targets, lora_alpha, dora, lora_modules_to_save, rslora, base_dtype, double_quant, kbit_fp32, adapter_dtype
        ),
    )
    _show(output, result)


@command("presets", output="plain", group=True, examples=("presets", "presets -f json"))
def presets_list(output: Output = None) -> None:
    """List the shipped presets with their shapes and parameter counts."""
    _show(output, api.presets())


@command("presets", "show", examples=("presets show llama3-8b",))
def presets_show(name: str = arg(..., help="Preset name or alias.")) -> None:
    """Print a preset's YAML, which `ffncalc count FILE.yaml` accepts as it is."""
    emit(presets.text(name))


@command(output="plain", examples=("families", "families -f csv"))
def families(output: Output = None) -> None:
    """List every decoder-only text model_type, encoder, encoder-decoder and multimodal model of transformers with its
    status: the family that reads it and the public config it is proven on, or what it needs."""
    from ..output.sheet import to_csv
    from ..sources.hf.coverage import TRANSFORMERS_VERSION, model_types, multimodal_types
    from ..sources.hf.keys import described

    records = [{**r, "config_keys": described(r["model_type"])} for r in model_types()]
    records += [{**r, "config_keys": []} for r in multimodal_types()]
    supported = sum(r["status"] == "supported" for r in records)
    title = (
        f"{supported} of {len(records)} model_types supported (decoder-only text, encoders, encoder-decoders and multimodal "
        f"models counted whole, transformers {TRANSFORMERS_VERSION})"
    )
    short = [{**r, "file": r["file"].rsplit("/", 1)[-1]} for r in records]  # families/NAME.py: the name in a table
    output.show(
        doc=lambda: render.list_doc(title, short, ["model_type", "kind", "status", "file", "detail", "defaults"], 6),
        json=lambda: stamp("families", {"families": records}),
        csv=lambda: to_csv([{**r, "config_keys": "; ".join(r["config_keys"])} for r in records]),
    )


@command(output="plain", examples=("conventions",))
def conventions(output: Output = None) -> None:
    """List the counting conventions, each with its source."""
    from ..output.sheet import to_csv

    records = [{"name": c.name, "default": c.name == DEFAULT, "summary": c.summary, "source": c.source} for c in CONVENTIONS.values()]
    output.show(
        doc=lambda: render.list_doc("conventions", records, ["name", "default", "summary", "source"], 4),
        json=lambda: stamp("conventions", {"conventions": records}),
        csv=lambda: to_csv(records),
    )


@command(output="plain", examples=("explain mfu", "explain kv_bytes -f json", "explain"))
def explain(
    term: Optional[str] = arg(None, help="A figure's JSON key or words of its label, a convention or a view (default: every one)."),
    output: Output = None,
) -> None:
    """Say what a figure of count, train, infer or fit means, with its unit and source; or list them all."""
    from ..analysis.glossary import explain as look_up
    from ..output.sheet import to_csv

    found = [vars(e) for e in look_up(term)]
    output.show(
        doc=lambda: render.list_doc(
            f"{len(found)} figure(s), convention(s) and view(s)", found, ["term", "kind", "label", "unit", "source"], 5
        ),
        json=lambda: stamp("explain", {"explain": found}),
        csv=lambda: to_csv(found),
    )

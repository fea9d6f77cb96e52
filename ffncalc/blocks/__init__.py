"""The blocks a layer is made of, one module per kind, and the registry that maps ``kind:`` to a block.

A block is a frozen dataclass: its fields are its spec (what a user may write under ``kind: …``), and
its methods answer everything that varies with the kind (``Block`` lists them). The rest of ffncalc asks
blocks through these methods and never tests their type. A new kind is one new module that subclasses
``Block`` and is decorated with ``@register``; nothing else changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from collections.abc import Callable

    from torch import nn

    from ..model.stack import Model
    from ..model.terms import Emitter

_REGISTRY: dict[tuple[str, str], type[Block]] = {}  # (slot, kind) -> block: "none" names one kind per slot
_VERSION = [0]


# The transformers module name of each linear layer a block's terms name, as Llama's, Qwen2-MoE's and DeepSeek-V3's
# modeling code names it (LlamaAttention, LlamaMLP; Qwen2MoeSparseMoeBlock: gate, experts, shared_expert,
# shared_expert_gate; DeepseekV3Attention: q_a_proj, q_b_proj, kv_a_proj_with_mqa, kv_b_proj): what peft's
# target_modules match. Any other linear is named by its component's last part.
MODULE_NAMES = {
    "attn.q": "q_proj",
    "attn.k": "k_proj",
    "attn.v": "v_proj",
    "attn.o": "o_proj",
    "attn.q_a": "q_a_proj",
    "attn.q_b": "q_b_proj",
    "attn.kv_a": "kv_a_proj_with_mqa",
    "attn.kv_b": "kv_b_proj",
    "ffn.gate": "gate_proj",
    "ffn.up": "up_proj",
    "ffn.down": "down_proj",
    "ffn.router": "gate",
    "ffn.experts.gate": "gate_proj",
    "ffn.experts.up": "up_proj",
    "ffn.experts.down": "down_proj",
    "ffn.shared.gate": "gate_proj",
    "ffn.shared.up": "up_proj",
    "ffn.shared.down": "down_proj",
    "ffn.shared_gate": "shared_expert_gate",
}


@dataclass(frozen=True)
class Linear:
    """One linear layer of a block, as an adapter sees it: its component (``attn.q``), its transformers module name
    (``q_proj``), its input and output features, its instances in one layer, and what transformers 5 makes of it:
    ``"linear"`` (an nn.Linear module), ``"experts"`` (one of a mixture's routed experts, held in transformers 5 as
    a fused 3-D parameter, experts × out × in, of the mixture's experts module), ``"router"`` (the router, a module
    of its own whose weight is a plain parameter)."""

    component: str
    module: str
    d_in: int
    d_out: int
    copies: int = 1
    kind: str = "linear"


class Block:
    """The protocol every block kind answers. Defaults suit a block that caches and keeps nothing."""

    kind: ClassVar[str]  # the spec's ``kind:`` value
    slot: ClassVar[str]  # where it sits in a layer: "attention" (mixes tokens) or "ffn" (per token)
    summary: ClassVar[str] = ""  # one line on what the kind is, with its source
    prefix: ClassVar[str | None] = None  # its terms' and torch module's name in a layer; default: attn or ffn
    verify_note: ClassVar[str | None] = None  # what verify must say about its torch reference, if anything
    count_note: ClassVar[str | None] = None  # what a count must say about its figures, if anything (a model's notes)
    inputs: ClassVar[int] = 1  # separate inputs it reads (queries', keys', values'), which a model may make apart

    def resolve(self, d_model: int) -> Block:
        """This block with every derived width made an integer."""
        return self

    def check(self, d_model: int) -> None:
        """Raise SpecError (a path relative to the block) if the block cannot sit in a model this wide."""

    def describe(self) -> str:
        """A short name of this block as configured: 'SwiGLU', 'MoE 8/256 × SwiGLU', '32 heads, 8 KV × 128'."""
        return self.kind

    def facts(self) -> dict[str, object]:
        """Shape facts for tables that compare models (keys: heads, ffn, d_ff)."""
        return {}

    def terms(self, e: Emitter, model: Model, seq_len: int) -> None:
        """Emit its parameters and forward work per token, for the ``e.n`` layers ``e`` stands for."""
        raise NotImplementedError

    def cache_elements(self, model: Model) -> int:
        """Elements one layer of it caches per token while decoding (keys and values, or a latent)."""
        return 0

    def cached_tokens(self, tokens: int) -> int:
        """Positions it holds in its cache after ``tokens`` tokens (all of them, or its window)."""
        return tokens

    def decode_cost(self, model: Model) -> tuple[int, tuple[tuple[int, int | None, int | None, str], ...]] | None:
        """Where decoding runs another computation than its forward terms state (MLA absorbed): the matmul
        FLOPs of one decode step of one layer of it as a fixed part and parts per key met, each with the
        most keys it meets (None: every cached key), its chunk and its selection (model/terms.py's window, chunk
        and select of a core term); None: its terms at one token."""
        return None

    def state_elements(self, model: Model) -> int:
        """Elements one layer of it keeps per sequence while decoding, whatever the length (recurrent state)."""
        return 0

    def kept_elements(self, model: Model) -> int:
        """16-bit elements per token a training forward keeps for backward, its input included."""
        return 0

    def score_bytes(self, model: Model, seq_len: int, flash: bool = False) -> int:
        """Bytes per sequence kept for backward by attention's softmax, apart from kept_elements because
        selective recomputation drops them: eager attention's scores (they grow with the square of the
        length), or with ``flash`` only the softmax statistics a flash kernel keeps."""
        return 0

    def torch_module(self, model: Model, causal: bool) -> nn.Module:
        """The reference torch module; its parameter and MatMul paths mirror the term names."""
        raise NotImplementedError(f"block kind {self.kind!r} has no torch reference module")

    def tensor_parallel(self, module: nn.Module, rank: int, tp: int) -> nn.Module:
        """Its reference module (``torch_module``) cut to ``rank``'s share of ``tp`` devices, Megatron-style (Shoeybi
        et al. 2019 §3): the input projections split by their outputs (whole heads, or the hidden features), the
        output projection by its inputs with its bias on rank 0 alone, so that the ranks' outputs sum (one
        all-reduce) to the whole module's. NotImplementedError (its message the reason) where the kind has none."""
        raise NotImplementedError(
            f"block kind {self.kind!r} has no tensor-parallel form here (mha attention and dense and gated FFNs have)"
        )

    def expert_parallel(self, module: nn.Module, rank: int, ep: int, exchange: Callable) -> nn.Module:
        """Its reference module as one of ``ep`` devices sharing a mixture's routed experts, its token-slots
        dispatched to their experts' devices and combined back by all-to-alls (``exchange(tensor, send_counts,
        receive_counts)``). NotImplementedError (its message the reason) where the kind has none."""
        raise NotImplementedError(f"block kind {self.kind!r} has no routed experts to split (a moe FFN has)")

    def body(self) -> Block | None:
        """The dense or gated FFN that a dense-vs-gated comparison resizes (a mixture's routed expert)."""
        return None

    def with_body(self, body: Block) -> Block:
        """This block with ``body`` in place of the one ``body()`` returns."""
        raise NotImplementedError

    def head_count(self) -> int | None:
        """Its heads (an attention's query heads, a multi-head mixer's heads), which tensor parallelism splits
        whole over its devices; None: no heads to split."""
        return None

    def kv_head_count(self) -> int | None:
        """The key/value heads its cache holds apart, which tensor parallelism splits whole over its devices (a
        device keeps one whole head when there are more devices than heads); None: its heads are its KV heads, or
        its cache (if any) is whole on every device (a latent that every head reads, MLA)."""
        return None

    def routed_experts(self) -> int:
        """Experts a router picks among (0: none), which expert parallelism splits."""
        return 0

    def active_experts(self) -> int:
        """Routed experts each token runs (its router's top k; 0: none)."""
        return 0

    def shared_experts(self) -> int:
        """Experts every token runs beside the routed ones, each its own module (0: none)."""
        return 0

    def chunk_tokens(self) -> int | None:
        """The longest chunk of its chunkwise form, in tokens; None: it has none."""
        return None

    def linears(self, model: Model) -> tuple[Linear, ...]:
        """Its linear layers in one layer, each with its transformers module name (MODULE_NAMES): every weight
        term of two dimensions (out × in) its terms write; a routed expert's are its mixture's fused experts, the
        router's its own module."""
        from ..model.terms import Emitter

        e = Emitter("layers", (0, 1))
        e.slot = self.slot
        self.terms(e, model, 8)
        out = []
        for t in e.out:
            if t.role != "weight" or len(t.shape) != 2 or not t.numel:
                continue
            name = t.name.removesuffix(".weight")
            kind = "experts" if t.expert else "router" if name == "ffn.router" else "linear"
            module = MODULE_NAMES.get(name, name.rsplit(".", 1)[-1])
            out.append(Linear(name, module, t.shape[1], t.shape[0], t.stored_count, kind))
        return tuple(out)


def module_name(block: Block) -> str:
    """The name a block's terms start with and its torch module takes inside a layer."""
    return block.prefix or ("attn" if block.slot == "attention" else "ffn")


def register(cls: type[Block]) -> type[Block]:
    """Class decorator: make ``cls`` the block for ``kind: cls.kind`` in its slot."""
    _REGISTRY[(cls.slot, cls.kind)] = cls
    _VERSION[0] += 1
    return cls


def unregister(slot: str, kind: str) -> None:
    _REGISTRY.pop((slot, kind), None)
    _VERSION[0] += 1


def registry_version() -> int:
    return _VERSION[0]


def kinds(slot: str) -> dict[str, type[Block]]:
    """The registered blocks of a slot ("attention" or "ffn"), by kind: every block module imported first."""
    _register_builtin()
    return {kind: cls for (s, kind), cls in _REGISTRY.items() if s == slot}


def slot_classes(slot) -> list[type[Block]]:
    """The registered blocks that may fill a spec field of this Slot."""
    return [c for c in kinds(slot.slot).values() if not slot.only or c.kind in slot.only]


def block_class(slot, kind: str | None) -> type[Block]:
    """The block of ``kind`` (the slot's default if None) for a spec field of this Slot. Only its module is
    imported (``_index.py`` says which), so reading a spec costs the blocks it uses, not all of them."""
    kind = kind or slot.default
    cls = _REGISTRY.get((slot.slot, kind))
    if cls is None and (slot.slot, kind) in KINDS:
        import importlib

        importlib.import_module(f"{__name__}.{KINDS[slot.slot, kind]}")
        cls = _REGISTRY.get((slot.slot, kind))
    if cls is None:
        cls = kinds(slot.slot).get(kind)
    if cls is None or (slot.only and cls.kind not in slot.only):
        raise KeyError(f"no {slot.slot} block of kind {kind!r}")
    return cls


_ALL = [False]


def _register_builtin() -> None:
    """Import every block module here (once): each registers its kinds."""
    if _ALL[0]:
        return
    import importlib
    import pkgutil

    for module in pkgutil.iter_modules(__path__):
        if not module.name.startswith("_"):
            importlib.import_module(f"{__name__}.{module.name}")
    _ALL[0] = True


def index() -> dict[tuple[str, str], str]:
    """(slot, kind) -> the module that defines it, for every built-in block: what ``_index.py`` records."""
    _register_builtin()
    return {
        key: cls.__module__.rsplit(".", 1)[1] for key, cls in sorted(_REGISTRY.items()) if cls.__module__.startswith(f"{__name__}.")
    }


from ._index import KINDS  # noqa: E402  (the recorded index: tests/blocks/test_blocks.py keeps it equal to index())

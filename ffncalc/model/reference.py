"""The reference torch model built from the resolved stack: embeddings, one module per layer holding
the blocks' own reference modules (``Block.torch_module``), norms and the head.

Module paths mirror the analytic term names (``layers.3.attn.q`` ↔ ``attn.q.weight``), so verify can
match them one to one. The modules build on the meta device without allocating weights, and run with
real tensors on any device. torch is imported here, by verify and bench only.
"""

from __future__ import annotations

import torch
from torch import nn

from ..blocks import module_name
from ..blocks._torch import Linear, make_norm
from ..parts import module_name as part_name
from .norms import bare, gated_norm_module
from .shared import tie
from .stack import Layer, Model

# Torch modules cost memory even on the meta device (their objects, not their weights): about 11.5 KB for a gated
# expert's (its three Linears and their parameters: the resident set of building 20,000 against 2,000 on torch
# 2.13), 12 KB with a margin. The largest released mixtures have a few hundred experts a layer; verify's bound leaves
# room for 100 times that, and bench counts the objects' bytes with the weights'.
MAX_EXPERTS, EXPERT_BYTES = 65_536, 12 * 1024


def expert_modules(block) -> int:
    """The expert modules a block builds: its routed and shared experts, and those of any block it holds."""
    own = block.routed_experts() + block.shared_experts()
    inner = block.body()
    return own + (expert_modules(inner) if inner is not None and inner is not block else 0)


class LayerModule(nn.Module):
    """One layer. Pre-norm residual sublayers by default: each sublayer's first norm before it, any
    others after it (Gemma 2 has two each). Post: the norms after the sublayers only (OLMo 2).
    Residual: the norms after the residual add, on the sum (GPT-1). Parallel: attention and FFN read the same
    input, with one shared norm (GPT-J, phi-2) or one each
    (GPT-NeoX); one norm per layer always means parallel. The parts' modules in the layer (``Part.layer_module``)
    may run the layer another way (``body``), wrap it (``around``) or make its residual adds (``add``)."""

    def __init__(self, model: Model, layer: Layer, causal: bool):
        super().__init__()
        kinds = {
            "norm": lambda: make_norm(model.norm.layer, model.d_model),
            "gated": lambda: gated_norm_module(model),
            "none": nn.Identity,
            "bare": lambda: make_norm(bare(model.norm), model.d_model),
        }
        self.norms = nn.ModuleList(kinds[use]() for use in layer.norm_uses(model.norm))
        self.names = (module_name(layer.attention), module_name(layer.ffn))
        self.inputs = layer.attention.inputs  # separate inputs its mixer reads (Inkling 2's full layers)
        for name, block in zip(self.names, (layer.attention, layer.ffn)):
            setattr(self, name, block.torch_module(model, causal))
        self.parallel, self.placement = model.parallel, model.norm.placement
        self.hooks: dict[str, list[str]] = {"body": [], "around": [], "add": []}
        for part in model.parts:  # in their order: a later part's ``around`` wraps an earlier one's
            module = part.layer_module(model, layer)
            if module is not None:
                setattr(self, part_name(part), module)
                for hook in self.hooks:
                    if hasattr(module, hook):
                        self.hooks[hook].append(part_name(part))
        if layer.shared is not None:  # a weight-shared block: the model ties every later use to the first
            if self.hooks["body"] or self.hooks["around"]:
                raise NotImplementedError("a shared block's output feeds a layer of one residual stream")
            use = layer.shared
            self.shared, self.use = use.block.torch_module(model, causal, uses=use.uses), use.use

    def sublayers(self) -> tuple[nn.Module, nn.Module]:
        """The mixer and the FFN."""
        return getattr(self, self.names[0]), getattr(self, self.names[1])

    def forward(self, x: torch.Tensor, ctx: dict | None = None, k: int = 0) -> torch.Tensor:
        """The layer on ``x`` (the residual stream, or what a part makes of it: streams); ``ctx``: the forward pass's
        (its ``embeddings``, which a shared block reads beside ``x``, by default ``x`` itself; what parts put
        there); ``k``: the layer's place in the model."""
        ctx = {"embeddings": x} if ctx is None else ctx
        if self.hooks["body"]:
            body = getattr(self, self.hooks["body"][0])

            def run(h):
                return body.body(self, h, ctx, k)
        else:

            def run(h):
                return self._layer(h, self.shared(h, ctx["embeddings"], self.use) if hasattr(self, "shared") else None)

        for name in self.hooks["around"]:
            run = _around(getattr(self, name), run, ctx, k)
        return run(x)

    def _layer(self, x: torch.Tensor, added: torch.Tensor | None = None) -> torch.Tensor:
        """``added``: a shared block's output, added to the input of the first sublayer (and its norm), not to the
        residual."""
        mixer, ffn = self.sublayers()
        n = len(self.norms)
        if self.parallel or (n == 1 and self.placement == "pre"):  # both read the same input: one shared norm,
            inp = x if added is None else x + added
            a = self.norms[0](inp) if n else inp  # one each, or none
            b = self.norms[1](inp) if n == 2 else a
            return x + mixer(a) + ffn(b)
        if added is not None:
            raise NotImplementedError("a shared block's output feeds a layer of one pre-norm or parallel sublayers")
        split = (n + 1) // 2  # norms[:split] wrap attention, the rest the FFN
        if self.placement == "residual":
            for slot, (sublayer, norms) in enumerate(((mixer, self.norms[:split]), (ffn, self.norms[split:]))):
                x = self._add(x, sublayer(x), slot, None)  # a part's add where it makes one (X-MOD's adapters)
                for norm in norms:
                    x = norm(x)
            return x
        post = self.placement == "post"
        for slot, (sublayer, norms) in enumerate(((mixer, self.norms[:split]), (ffn, self.norms[split:]))):
            if post or not len(norms):
                normed, out = None, wrapped(sublayer, norms, x, post)
            else:  # pre: the first norm before the sublayer, any others after it
                normed = norms[0](x)
                out = wrapped(sublayer, norms[1:], normed, True)
            x = self._add(x, out, slot, normed)
        return x

    def _add(self, x: torch.Tensor, out: torch.Tensor, slot: int, normed: torch.Tensor | None) -> torch.Tensor:
        """The residual add after sublayer ``slot``, or a part's (scaled adds, LAuReL beside attention)."""
        if self.hooks["add"]:
            return getattr(self, self.hooks["add"][0]).add(x, out, slot, normed)
        return x + out


def _around(module: nn.Module, run, ctx: dict, k: int):
    return lambda h: module.around(run, h, ctx, k)


def wrapped(sublayer: nn.Module, norms: nn.ModuleList, x: torch.Tensor, post: bool) -> torch.Tensor:
    """Pre: the first norm before the sublayer, any others after it. Post: every norm after it."""
    if len(norms) and not post:
        x = norms[0](x)
        norms = norms[1:]
    x = sublayer(x)
    for norm in norms:
        x = norm(x)
    return x


def sinusoids(positions: torch.Tensor, width: int, base: float = 10000.0) -> torch.Tensor:
    """Fixed position encodings (Vaswani et al. 2017 §3.5): the sines of ⌈width/2⌉ frequencies, then their
    cosines, cut to ``width``. No parameters; the model adds them to the embeddings."""
    half = (width + 1) // 2
    freq = base ** (-torch.arange(half, device=positions.device, dtype=torch.float32) / max(half, 1))
    angles = positions.to(torch.float32)[:, None] * freq[None, :]
    return torch.cat([angles.sin(), angles.cos()], dim=-1)[:, :width]


class Transformer(nn.Module):
    """Embeddings, the layers, the final norm and the head, and the parts' modules (``Part.model_module``), each
    under its part's name. ``distinct``: one module per distinct layer (``layers.k`` is the k-th distinct layer in
    order of first appearance, ``index`` maps each layer to its module), for counting a stack of repeated layers by
    building and running each kind once."""

    def __init__(self, spec: Model, causal: bool = False, distinct: bool = False):
        super().__init__()
        d = spec.d_model
        # the table; a part's where it makes its own (parts/embedding.py: its own width or vocabulary)
        made = [m for m in (p.embed_module(spec) for p in spec.parts) if m is not None]
        self.embed = made[0] if made else nn.Embedding(spec.vocab_size, d)
        w = spec.input_width  # the embedding side's width: d, or a factorised embedding's (parts/embedding.py)
        if spec.positions == "learned":
            self.pos_embed = nn.Embedding(spec.context_length + spec.position_offset, w)
        self.positions, self.position_offset = spec.positions, spec.position_offset
        if spec.embedding_norm:
            self.embed_norm = make_norm(spec.embedding_norm_kind, w)
        self.hooks: dict[str, list[str]] = {"lookup": [], "enter": [], "expand": [], "run": [], "collapse": [], "top": []}
        for part in spec.parts:
            module = part.model_module(spec)
            if module is not None:
                setattr(self, part_name(part), module)
                if hasattr(module, "view"):  # the view its own stacks compute: a window's band where causal
                    module.view(causal)
                for hook in self.hooks:
                    if hasattr(module, hook):
                        self.hooks[hook].append(part_name(part))
        self.prompt_length = spec.prompt_length
        kinds: list[Layer] = []
        index = []
        for layer in spec.layers:
            if not distinct or layer not in kinds:  # equal layers build equal modules
                kinds.append(layer)
            index.append(len(kinds) - 1 if not distinct else kinds.index(layer))
        self.index = tuple(index)
        self.layers = nn.ModuleList(LayerModule(spec, layer, causal) for layer in kinds)
        firsts = {}  # model/shared.py: each shared block's later uses tied to its first
        for layer, module in zip(kinds, self.layers):
            if layer.shared is not None and layer.shared.name in firsts:
                tie(firsts[layer.shared.name], module.shared)
            elif layer.shared is not None:
                firsts[layer.shared.name] = module.shared
        for k, (layer, module) in enumerate(zip(kinds, self.layers)):  # model/reuse.py: tied to the layer it runs
            if layer.reuse:
                tie(self.layers[index[index.index(k) - layer.reuse]], module)
        if spec.norm.final:
            self.final_norm = make_norm(spec.norm, spec.final_width)
        self.lm_head = Linear(spec.head_width, spec.vocab_size, bias=spec.lm_head_bias)
        if spec.tie_embeddings:
            self.lm_head.weight = self.embed.weight  # one Parameter, counted once

    def _modules_for(self, hook: str):
        return [getattr(self, name) for name in self.hooks[hook]]

    def forward(self, tokens: torch.Tensor, only: list[int] | None = None) -> torch.Tensor:
        """Logits for ``tokens`` (B, s); ``only`` runs just those modules of ``layers``, in that order
        (for counting identical layers once), instead of every layer's module in turn (with a part that runs them
        itself, HRM's cycles, one after another: its states only route the same work)."""
        x = self.embed(tokens)
        ctx: dict = {"tokens": tokens, "table": self.embed}  # the table: for a part that looks up other tokens
        for module in self._modules_for("lookup"):  # rows added to the token's own (token types)
            x = module.lookup(x, ctx)
        positions = self.position_offset + torch.arange(tokens.shape[-1], device=tokens.device)
        if hasattr(self, "pos_embed"):
            x = x + self.pos_embed(positions)
        elif self.positions == "sinusoidal":
            x = x + sinusoids(positions, x.shape[-1]).to(x.dtype)
        if hasattr(self, "embed_norm"):
            x = self.embed_norm(x)
        for module in self._modules_for("enter"):  # the sequence as the layers read it
            x = module.enter(x, ctx)
        ctx["embeddings"] = x
        for module in self._modules_for("expand"):  # into residual streams
            x = module.expand(x, ctx)
        order = self.index if only is None else only

        def run(ks, x):
            for k in ks:
                x = self.layers[order[k]](x, ctx, k)
            return x

        runners = self._modules_for("run")
        x = runners[0].run(x, run) if runners and only is None else run(range(len(order)), x)
        for module in self._modules_for("collapse"):
            x = module.collapse(x, ctx)
        if hasattr(self, "final_norm"):
            x = self.final_norm(x)
        # the prompt's and the padding's positions dropped before the head (a prediction head's too); a part may say
        # how many rows the head reads (ctx["rows"]: Perceiver IO's decoder queries)
        x = x[:, self.prompt_length : self.prompt_length + ctx.get("rows", tokens.shape[-1])]
        for module in self._modules_for("top"):
            x = module.top(x)
        return self.lm_head(self.embed.out(x) if hasattr(self.embed, "out") else x)

    def set_balanced_routing(self, balanced: bool) -> None:
        for module in self.modules():
            if hasattr(module, "balanced"):  # a block's module whose routing needs values
                module.balanced = balanced


def build(
    spec: Model,
    *,
    device: str | torch.device = "meta",
    dtype: torch.dtype = torch.float32,
    causal: bool = False,
    distinct: bool = False,
) -> Transformer:
    """The spec as a torch module; on ``meta`` (the default) no weight is allocated. ``distinct``: each
    distinct layer built once (see ``Transformer``)."""
    with torch.device(device):
        model = Transformer(spec, causal=causal, distinct=distinct)
    return model.to(dtype=dtype)

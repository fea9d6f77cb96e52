"""ALBERT (Lan et al. 2019): BERT's post-norm layers with their parameters shared across the stack (§3.1,
cross-layer parameter sharing) and a factorised embedding (E < d) projected to the hidden size."""

from __future__ import annotations

from ..config import Config, family
from .bert import TOP_MODULES, encoder

MODULES = (
    (r"attention\.query$", "attn.q"),
    (r"attention\.key$", "attn.k"),
    (r"attention\.value$", "attn.v"),
    (r"attention\.dense$", "attn.o"),
    (r"ffn$", "ffn.up"),
    (r"ffn_output$", "ffn.down"),
    (r"(attention\.LayerNorm|full_layer_layer_norm)$", "norms"),
)
TOP = (
    (r"embedding_hidden_mapping_in$", "embed_project"),
    (r"predictions\.dense$", "prediction_head.dense"),
    (r"predictions\.LayerNorm$", "prediction_head.norm"),
    (r"predictions(\.decoder)?$", "lm_head"),
) + TOP_MODULES


def _groups(c: Config) -> tuple[list[int], int]:
    """The albert_layer_groups each of the num_hidden_layers runs, in order (AlbertTransformer.forward: layer i runs
    group int(i / (num_hidden_layers / num_hidden_groups))), and inner_group_num, the layers of every group."""
    layers, groups, inner = c.int("num_hidden_layers"), c.int("num_hidden_groups", 1), c.int("inner_group_num", 1)
    order = [int(i / (layers / groups)) for i in range(layers)]
    if len(set(order)) != groups:
        raise c.fail("num_hidden_groups", f"{groups} layer groups for {layers} layers: a group no layer runs")
    return order, inner


def _stacks(c: Config) -> dict[str, int]:
    """Our index of each group's first layer, by the group's index in albert_layer_groups (the name before its
    albert_layers): where the group first runs."""
    order, inner = _groups(c)
    return {str(g): order.index(g) * inner for g in dict.fromkeys(order)}


@family("albert", layer_modules=MODULES, top_modules=TOP, stacks=_stacks)
def albert(c: Config) -> dict:
    """AlbertConfig / AlbertForMaskedLM: AlbertEmbeddings' word, position (512) and token-type (2) tables and their
    LayerNorm embedding_size wide (default 128), projected to hidden_size (default 4096) by the encoder's
    embedding_hidden_mapping_in (with a bias); num_hidden_groups (default 1) groups of inner_group_num (default 1)
    AlbertLayers, the i-th of num_hidden_layers (12) running group int(i / (layers / groups)) with its parameters,
    stored once; AlbertLayer: query, key, value, dense with biases over num_attention_heads (64), the residual sum
    then attention.LayerNorm, ffn (d -> intermediate_size, 16384) and hidden_act (gelu_new), ffn_output back, the sum
    then full_layer_layer_norm; AlbertMLMHead: dense d -> E, hidden_act, LayerNorm, decoder tied to the word table
    with its bias. Vocabulary 30000."""
    spec = encoder(c)
    order, inner = _groups(c)
    named: set[int] = set()
    groups = []
    for g in order:
        groups.append({"repeat": inner, "reuses": f"group{g}"} if g in named else {"repeat": inner, "name": f"group{g}"})
        named.add(g)
    width = c.int("embedding_size", 128)
    return {
        **spec,
        "n_layers": len(order) * inner,
        "layers": groups,
        "factorized_embedding": {"width": width, "bias": True},
        "prediction_head": {**spec["prediction_head"], "width": width},
    }

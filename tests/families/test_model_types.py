"""The model_type status list (ffncalc/sources/hf/coverage.py) against transformers and the proven configs.

The list is plain data so that the docs page and `ffncalc families` need no transformers; these tests keep it
current: the recorded causal-LM mapping is the installed transformers' own, every model_type in it is
accounted for exactly once, and the configs named are the ones in hf_configs/.
"""

import json
import re
from pathlib import Path

import pytest

from ffncalc.sources import hf
from ffncalc.sources.hf import coverage

HERE = Path(__file__).resolve().parents[1]


@pytest.mark.torch  # transformers is installed with torch, in the torch set's environment
def test_recorded_mapping_is_the_installed_transformers():
    import transformers
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, MODEL_FOR_MASKED_LM_MAPPING_NAMES

    assert transformers.__version__ == coverage.TRANSFORMERS_VERSION
    assert coverage.CAUSAL_LM_TYPES == tuple(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)
    assert coverage.MASKED_LM_TYPES == tuple(MODEL_FOR_MASKED_LM_MAPPING_NAMES)
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES,
    )

    assert coverage.SEQ2SEQ_TYPES == tuple(MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES)
    assert coverage.SPEECH_SEQ2SEQ_TYPES == tuple(MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES)
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES,
        MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES,
    )

    assert coverage.IMAGE_TEXT_TYPES == tuple(sorted(MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES))
    assert coverage.MULTIMODAL_LM_TYPES == tuple(sorted(MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES))


def test_every_model_type_accounted_for_once():
    families = hf.registered()
    # an encoder's family reads it as its masked LM, an encoder-decoder's as its whole class (below): their causal-LM
    # classes stay types not counted here
    supported = {
        t
        for t in coverage.CAUSAL_LM_TYPES
        if (t in families or hf.TEXT_TYPES.get(t) in families)
        and t not in coverage.ENCODER_TYPES + coverage.ENCODER_DECODER_TYPES + coverage.SELF_TEXT
    }
    not_yet, others = set(coverage.NOT_YET), set(coverage.NOT_TEXT_DECODERS)
    assert not (not_yet & supported), f"supported now, drop from NOT_YET: {sorted(not_yet & supported)}"
    assert not (others & supported) and not (others & not_yet)
    missing = set(coverage.CAUSAL_LM_TYPES) - supported - not_yet - others
    assert not missing, f"add to NOT_YET or NOT_TEXT_DECODERS: {sorted(missing)}"
    assert (not_yet | others) <= set(coverage.CAUSAL_LM_TYPES)
    assert all(reason.strip() for reason in {**coverage.NOT_YET, **coverage.NOT_TEXT_DECODERS}.values())


def test_every_encoder_type_accounted_for_once():
    """Each encoder of the masked-LM mapping is read by a family or says what it needs; the masked-LM types left out
    are counted otherwise (Reformer as its causal LM) or are encoder-decoders."""
    families = hf.registered()
    supported = {t for t in coverage.ENCODER_TYPES if t in families or t in coverage.WHOLE_ENCODER_TYPES}
    not_yet = set(coverage.ENCODERS_NOT_YET)
    assert not (not_yet & supported), f"supported now, drop from ENCODERS_NOT_YET: {sorted(not_yet & supported)}"
    assert supported | not_yet == set(coverage.ENCODER_TYPES)
    assert set(coverage.MASKED_LM_TYPES) - set(coverage.ENCODER_TYPES) == {"bart", "mbart", "mvp", "reformer"}
    assert all(reason.strip() for reason in coverage.ENCODERS_NOT_YET.values())


def test_every_encoder_decoder_type_accounted_for_once():
    """Each encoder-decoder of the seq2seq and speech-seq2seq mappings is read by a family (or whole, as its wrapper:
    Qwen2-Audio, Voxtral, GLM-ASR, Audio Flamingo 3) or says what it needs."""
    from ffncalc.sources.hf.towers import wrappers

    families = hf.registered()
    # a family reads it, or a wrapper reads it whole (an audio tower beside a decoder-only language model)
    supported = {t for t in coverage.ENCODER_DECODER_TYPES if t in families or t in wrappers()}
    not_yet = set(coverage.SEQ2SEQ_NOT_YET)
    assert not (not_yet & supported), f"supported now, drop from SEQ2SEQ_NOT_YET: {sorted(not_yet & supported)}"
    assert supported | not_yet == set(coverage.ENCODER_DECODER_TYPES)
    assert all(reason.strip() for reason in coverage.SEQ2SEQ_NOT_YET.values())


def test_proven_on_is_the_configs_in_hf_configs():
    sources = json.loads((HERE / "hf_configs.sources.json").read_text())
    expected: dict[str, set[str]] = {}
    for path in sorted((HERE / "hf_configs").glob("*.json")):
        c = hf.read_config(path)
        repo = re.match(r"https://huggingface.co/([^/]+/[^/]+)/", sources[path.stem]["url"]).group(1)
        for model_type in {c.model_type, c.wrapper} - {None}:
            expected.setdefault(model_type, set()).add(repo)
    assert {t: set(r) for t, r in coverage.PROVEN_ON.items()} == expected
    assert all(list(r) == sorted(r) for r in coverage.PROVEN_ON.values())


def test_every_listed_supported_type_names_its_proof():
    records = coverage.model_types()
    # a family reading a wrapper's own top-level keys (GIT's) is listed among the multimodal types
    assert {r["model_type"] for r in records} >= set(hf.registered()) - set(coverage.SELF_TEXT)
    assert {r["model_type"] for r in coverage.multimodal_types() if r["status"] == "supported"} >= set(coverage.SELF_TEXT)
    for r in records:
        assert r["status"] in ("supported", "not yet") and r["detail"]
        if r["status"] == "supported":  # a Hugging Face repo id, or no public config and exact at its defaults (or repaired)
            exact = r["defaults"] == "exact" or r["defaults"].startswith("exact at the smallest repair (")
            assert "/" in r["detail"] or (r["detail"] == "no public config found" and exact)
    assert not any(r["model_type"] in coverage.NOT_TEXT_DECODERS for r in records if r["kind"] == "decoder")
    assert [r["model_type"] for r in records if r["kind"] == "encoder"] == list(coverage.ENCODER_TYPES)
    assert [r["model_type"] for r in records if r["kind"] == "encoder-decoder"] == list(coverage.ENCODER_DECODER_TYPES)
    from ffncalc.sources.hf.towers import wrappers

    families, whole = hf.registered(), wrappers()
    for r in records:  # the module whose function reads each supported type (an alias: the one it is read as; a
        # wrapper read whole: its reader's)
        assert (r["status"] == "supported") == bool(r["file"])
        if r["file"]:
            t = r["model_type"]
            if t in whole and (r["kind"] == "encoder-decoder" or t in coverage.WHOLE_ENCODER_TYPES):
                read = whole[t]
            else:
                read = (families.get(t) or families[hf.TEXT_TYPES[t]]).read
            assert r["file"] == read.__module__.replace(".", "/") + ".py"
            assert (HERE.parent / r["file"]).is_file()


def test_counting_a_preset_imports_no_status_data():
    """The status data loads only for `families` and the docs, never on the analytic path."""
    import subprocess
    import sys

    code = (
        "import sys; from ffncalc.sources import presets; from ffncalc.analysis.count import tally; "
        "tally(presets.load('llama3-8b')[1]); print('ffncalc.sources.hf.coverage' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"

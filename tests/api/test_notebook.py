"""docs/guide/ffncalc.ipynb runs top to bottom in a fresh kernel, its outputs stripped in the file, and
imports no torch. Marked torch so that it runs with the test extras (nbclient, ipykernel) and not in the
analytic environment, which has neither."""

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.torch

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "docs" / "guide" / "ffncalc.ipynb"


def test_the_notebook_is_stored_without_outputs():
    nb = json.loads(NOTEBOOK.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code and all(c["outputs"] == [] and c["execution_count"] is None for c in code)


def test_the_notebook_runs(tmp_path):
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOK, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell('import sys\nassert "torch" not in sys.modules, "the notebook imported torch"'))
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
    outputs = [c.outputs for c in nb.cells if c.cell_type == "code"]
    assert not [o for out in outputs for o in out if o.output_type == "error"]
    shown = [o for out in outputs for o in out if o.output_type == "execute_result"]
    assert any("<table" in o.data.get("text/html", "") for o in shown)  # a result shows as its table
    assert "'ffncalc.count/1'" in shown[-1].data["text/plain"]

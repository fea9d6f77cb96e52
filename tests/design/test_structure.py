"""The analyses stay small enough to read: no module under ffncalc/analysis/ is over 500 lines, and no public
function there (its name not starting with _) takes more than 8 parameters; a question takes a few small
dataclasses (analysis/plan.py), not a long list of arguments."""

import ast
from pathlib import Path

import pytest

ANALYSIS = Path(__file__).resolve().parents[2] / "ffncalc" / "analysis"
MODULES = sorted(ANALYSIS.rglob("*.py"))
MAX_LINES, MAX_PARAMETERS = 500, 8


def parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """What a caller may pass: positional, keyword-only, *args and **kwargs each count; a method's self or cls not."""
    a = node.args
    named = [*a.posonlyargs, *a.args, *a.kwonlyargs]
    bound = 1 if a.posonlyargs + a.args and (a.posonlyargs + a.args)[0].arg in ("self", "cls") else 0
    return len(named) + (a.vararg is not None) + (a.kwarg is not None) - bound


def test_every_analysis_module_is_checked():
    names = {p.name for p in MODULES}
    assert {"count.py", "plan.py", "training.py", "inference.py", "fit.py", "serving.py", "hfcheck.py"} <= names


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ANALYSIS)))
def test_module_size_and_parameters(path):
    text = path.read_text()
    assert len(text.splitlines()) <= MAX_LINES, f"{path.name}: {len(text.splitlines())} lines"
    long = [
        f"{node.name} (line {node.lineno}): {parameters(node)}"
        for node in ast.walk(ast.parse(text))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and not node.name.startswith("_")
        and parameters(node) > MAX_PARAMETERS
    ]
    assert long == []


def test_the_check_counts_parameters_as_callers_pass_them():
    tree = ast.parse("def f(a, /, b, *c, d, **e): ...\nclass K:\n    def m(self, a, b): ...")
    f, m = (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef))
    assert (parameters(f), parameters(m)) == (5, 2)


def test_every_package_is_installed():
    """Every folder of ffncalc/ with an __init__.py is a package pyproject.toml installs (an installed copy without
    one fails on its first import, as a fresh clone's CI would)."""
    import tomllib

    root = ANALYSIS.parents[1]
    config = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    found = {".".join(p.parent.relative_to(root).parts) for p in (root / "ffncalc").rglob("__init__.py")}
    assert found <= set(config), sorted(found - set(config))

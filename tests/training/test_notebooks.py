"""The notebooks in examples/notebooks/: stored executed, with their outputs (so their pictures
show when browsing); each runs top to bottom in a fresh kernel; each ends with exercises, whose
solutions pass their checks."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "examples" / "notebooks"
EXPECTED = (
    "00_from_scratch.ipynb",
    "01_tape_and_autograd.ipynb",
    "02_gradient_kernels.ipynb",
    "03_train_a_cnn.ipynb",
    "04_higher_order_gradients.ipynb",
    "05_tiny_transformer.ipynb",
    "06_vanishing_gradients.ipynb",
)
PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


execute = _load("notebooks_execute", NOTEBOOKS / "execute.py")

# Runs first, in the kernel: the notebook must see this interpreter and this checkout's minitrain.
KERNEL_CHECK = """\
import os, sys
import minitrain
assert os.path.realpath(sys.prefix) == os.path.realpath({prefix!r}), (
    f"the notebook kernel runs {{sys.executable}}, not the tests' interpreter {executable!r}"
)
package_root = os.path.dirname(os.path.dirname(os.path.realpath(minitrain.__file__)))
assert package_root == os.path.realpath({root!r}), (
    f"the notebook kernel imports minitrain from {{minitrain.__file__}}, not from {root!r}"
)
"""


def _read(path: Path):
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    return notebook


def _topic(path: Path) -> str:
    """'00_from_scratch.ipynb' -> 'from_scratch': its exercises' and solutions' module."""
    return path.stem.partition("_")[2]


def test_the_expected_notebooks_are_there():
    missing = sorted(set(EXPECTED) - {path.name for path in PATHS})
    assert not missing, f"missing from {NOTEBOOKS}: {missing}"


@pytest.mark.parametrize("path", PATHS, ids=lambda path: path.name)
def test_stored_executed_with_outputs(path):
    """Every code cell ran, in order, top to bottom (`make notebooks`), none with an error."""
    notebook = _read(path)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    counts = [cell.execution_count for cell in code]
    assert counts == list(range(1, len(code) + 1)), (
        f"{path.name}: execution counts {counts}: store it executed top to bottom in a fresh "
        f"kernel (make notebooks)"
    )
    errors = [
        i for i, cell in enumerate(code) if any(o.output_type == "error" for o in cell.outputs)
    ]
    assert not errors, f"{path.name}: code cells {errors} stored with errors"
    assert notebook.metadata.get("kernelspec", {}).get("name") == "python3", path.name


@pytest.mark.parametrize("path", PATHS, ids=lambda path: path.name)
def test_runs_top_to_bottom(path, tmp_path, monkeypatch):
    """Execute every cell in a fresh kernel, working directory a temporary one; a cell that
    raises fails the test with its traceback (nbclient's CellExecutionError)."""
    notebook = _read(path)
    check = KERNEL_CHECK.format(prefix=sys.prefix, executable=sys.executable, root=str(ROOT))
    notebook.cells.insert(0, nbformat.v4.new_code_cell(check))
    for name, value in execute.kernel_environment(tmp_path / "jupyter").items():
        monkeypatch.setenv(name, value)
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    before = sorted(NOTEBOOKS.iterdir())
    failure = None
    try:
        execute.execute(notebook, workdir)
    except CellExecutionError as error:
        failure = f"{path.name}: {error}"
    if failure:  # the failing cell and its traceback, without nbclient's own frames
        pytest.fail(failure, pytrace=False)

    assert sorted(NOTEBOOKS.iterdir()) == before, "the notebook wrote files into the repository"
    warned = [
        (index, output.text)
        for index, cell in enumerate(notebook.cells[1:])
        if cell.cell_type == "code"
        for output in cell.outputs
        if output.output_type == "stream" and output.name == "stderr" and "Warning:" in output.text
    ]
    assert not warned, f"{path.name}: cells (counting from 0) printed warnings: {warned}"


@pytest.mark.parametrize("path", PATHS, ids=lambda path: path.name)
def test_ends_with_exercises_whose_solutions_pass(path, monkeypatch, capsys):
    """The notebook's last code cells check exercises; every check of its topic has a solution
    of the same name, which passes it strictly."""
    monkeypatch.syspath_prepend(str(NOTEBOOKS))
    exercises = importlib.import_module("exercises")
    topic = _topic(path)
    importlib.import_module(f"exercises.{topic}")
    solutions = importlib.import_module(f"solutions.{topic}")
    checks = exercises.CHECKS.get(topic, {})
    assert checks, f"{path.name}: no exercises (exercises/{topic}.py registers none)"
    source = "\n".join(c.source for c in _read(path).cells if c.cell_type == "code")
    for name, check in checks.items():
        assert f"check_{name}(" in source, f"{path.name}: exercise {name} is never checked"
        assert hasattr(solutions, name), f"solutions/{topic}.py has no {name}"
        check(getattr(solutions, name), strict=True)  # raises where the solution is wrong
    printed = capsys.readouterr().out
    assert printed.count(": passed") == len(checks), printed

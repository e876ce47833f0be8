"""The notebooks in examples/notebooks/ run top to bottom, and are committed without outputs."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "examples" / "notebooks"
EXPECTED = ("01_tape_and_autograd.ipynb", "02_gradient_kernels.ipynb", "03_train_a_cnn.ipynb")
PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))
CELL_TIMEOUT_S = 300

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


def _python3_kernel(directory: Path) -> Path:
    """A 'python3' kernel spec that starts ipykernel with the interpreter running the tests. On
    JUPYTER_PATH it comes before any user-wide or system-wide 'python3' spec."""
    spec = directory / "kernels" / "python3"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    kernel = {"argv": argv, "display_name": "Python 3", "language": "python"}
    (spec / "kernel.json").write_text(json.dumps(kernel))
    return directory


def test_the_expected_notebooks_are_there():
    missing = sorted(set(EXPECTED) - {path.name for path in PATHS})
    assert not missing, f"missing from {NOTEBOOKS}: {missing}"


@pytest.mark.parametrize("path", PATHS, ids=lambda path: path.name)
def test_committed_without_outputs(path):
    notebook = _read(path)
    dirty = [
        index
        for index, cell in enumerate(notebook.cells)
        if cell.cell_type == "code" and (cell.outputs or cell.execution_count is not None)
    ]
    assert not dirty, (
        f"{path.name}: code cells {dirty} (counting from 0) have outputs or execution counts; "
        f"clear them before committing (jupyter nbconvert --clear-output --inplace {path.name})"
    )
    assert notebook.metadata.get("kernelspec", {}).get("name") == "python3", path.name


@pytest.mark.parametrize("path", PATHS, ids=lambda path: path.name)
def test_runs_top_to_bottom(path, tmp_path, monkeypatch):
    """Execute every cell in a fresh kernel, working directory a temporary one; a cell that
    raises fails the test with its traceback (nbclient's CellExecutionError)."""
    notebook = _read(path)
    check = KERNEL_CHECK.format(prefix=sys.prefix, executable=sys.executable, root=str(ROOT))
    notebook.cells.insert(0, nbformat.v4.new_code_cell(check))
    jupyter_path = [str(_python3_kernel(tmp_path / "jupyter")), os.environ.get("JUPYTER_PATH")]
    monkeypatch.setenv("JUPYTER_PATH", os.pathsep.join(filter(None, jupyter_path)))
    python_path = [str(ROOT), os.environ.get("PYTHONPATH")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, python_path)))
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    before = sorted(NOTEBOOKS.iterdir())

    client = NotebookClient(
        notebook,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(workdir)}},
        extra_arguments=["--InteractiveShell.colors=nocolor"],  # plain tracebacks in the report
    )
    failure = None
    try:
        client.execute()
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

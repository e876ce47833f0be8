"""Execute the notebooks top to bottom and store them with their outputs: `make notebooks`, or
`python examples/notebooks/execute.py [NAME.ipynb ...]`.

Each runs in a fresh kernel of this interpreter (so it imports this checkout's minitrain), in
the notebooks' folder (where `exercises` and `solutions` are), and is written back only when
every cell ran; a failing cell's traceback is printed and the file left as it was. The test
suite runs them the same way (tests/training/test_notebooks.py), without writing.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parent
ROOT = NOTEBOOKS.parents[1]
CELL_TIMEOUT_S = 300


def kernel_environment(directory: Path) -> dict:
    """Environment variables under which a 'python3' kernel is this interpreter (a kernel spec
    written in `directory`, first on JUPYTER_PATH) and imports this checkout's minitrain and the
    notebooks' exercises (PYTHONPATH)."""
    spec = directory / "kernels" / "python3"
    spec.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    kernel = {"argv": argv, "display_name": "Python 3", "language": "python"}
    (spec / "kernel.json").write_text(json.dumps(kernel))
    paths = {
        "JUPYTER_PATH": [str(directory), os.environ.get("JUPYTER_PATH")],
        "PYTHONPATH": [str(ROOT), str(NOTEBOOKS), os.environ.get("PYTHONPATH")],
    }
    return {name: os.pathsep.join(filter(None, value)) for name, value in paths.items()}


def execute(notebook, workdir: Path):
    """Run every cell of `notebook` (an nbformat node) in place; nbclient's CellExecutionError
    where one raises. Call within kernel_environment's variables."""
    from nbclient import NotebookClient

    client = NotebookClient(
        notebook,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(workdir)}},
        extra_arguments=["--InteractiveShell.colors=nocolor"],  # plain tracebacks
    )
    client.execute()
    return notebook


def main(names: list[str]) -> int:
    import nbformat
    from nbclient.exceptions import CellExecutionError

    paths = [NOTEBOOKS / name for name in names] if names else sorted(NOTEBOOKS.glob("*.ipynb"))
    failed = 0
    with tempfile.TemporaryDirectory() as directory:
        os.environ.update(kernel_environment(Path(directory)))
        for path in paths:
            notebook = nbformat.read(path, as_version=4)
            start = time.perf_counter()
            try:
                execute(notebook, NOTEBOOKS)
            except CellExecutionError as error:
                print(f"{path.name}: FAILED\n{error}", file=sys.stderr)
                failed += 1
                continue
            temporary = path.with_suffix(".ipynb.tmp")
            nbformat.write(notebook, temporary)
            os.replace(temporary, path)  # atomic: never a half-written notebook
            print(f"{path.name}: executed in {time.perf_counter() - start:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The Python on the pages a newcomer reads first runs as written: each page's ```python blocks,
top to bottom in one namespace (as a reader pastes them into one session), in a fresh folder.
The GPU page needs a GPU and the graph page the training page's model; the rest stand alone."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [
    "README.md",
    "docs/index.md",
    "docs/getting-started.md",
    "docs/guide/autograd.md",
    "docs/guide/training.md",
]
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.M | re.S)


@pytest.mark.parametrize("page", PAGES)
def test_the_pages_python_runs_top_to_bottom(page, tmp_path, monkeypatch):
    blocks = PYTHON_BLOCK.findall((ROOT / page).read_text(encoding="utf-8"))
    assert blocks, f"{page}: no ```python block found (has the fence changed?)"
    monkeypatch.chdir(tmp_path)  # what the examples write (runs/...) stays out of the checkout
    namespace: dict = {"__name__": "__page__"}
    for number, block in enumerate(blocks, start=1):
        exec(compile(block, f"{page}, python block {number}", "exec"), namespace)  # noqa: S102

"""Every public module says what it offers (`__all__`) and has a page in the API reference, and
every public name has a docstring: `make docs` refuses to build otherwise, and this says so in
`make test` already, where a new function without a docstring is added."""

from __future__ import annotations

import importlib.util
from pathlib import Path

COVERAGE = Path(__file__).resolve().parents[2] / "docs" / "api_coverage.py"


def _api_coverage():
    spec = importlib.util.spec_from_file_location("api_coverage", COVERAGE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_api_reference_is_complete():
    assert _api_coverage().problems() == []


def test_a_name_without_a_docstring_is_found(monkeypatch):
    """The check can fail: a public function whose docstring is gone is named."""
    from minitrain.nn import functional

    def relu(input):  # noqa: A002
        return input

    monkeypatch.setattr(functional, "relu", relu)
    assert "minitrain.nn.functional.relu: a public name without a docstring" in (
        _api_coverage().problems()
    )

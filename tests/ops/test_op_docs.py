"""Every registered op's backward states its gradient formula on the first line of its docstring
(the graph visualiser shows that line as the node's tooltip)."""

from __future__ import annotations

import pytest

from minitrain import ops

MAX_FIRST_LINE = 100


@pytest.mark.parametrize("op", list(ops.registry().values()), ids=list(ops.registry()))
def test_backward_docstring_starts_with_a_formula(op):
    backward_name = f"{op.__module__}.{op.__name__}.backward"
    doc = op.backward.__doc__
    assert doc, f"{backward_name} has no docstring"
    first = doc.splitlines()[0].strip()
    assert first, (
        f"{backward_name}: the docstring's first line is empty (start the formula right there)"
    )
    assert len(first) <= MAX_FIRST_LINE, (
        f"{backward_name}: first line is {len(first)} characters, over {MAX_FIRST_LINE}: {first!r}"
    )
    assert "=" in first, f"{backward_name}: first line is no formula (no '='): {first!r}"

"""Text for one item of a drawing: a name made printable, a size in bytes, an array's shape and
dtype, value statistics, an op's attributes and saved arrays, its kernel's formula, and the
title and detail lines of an op's or a leaf's box (or line of text)."""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

import numpy as np

from .. import backend
from ..tensor import Tensor

if TYPE_CHECKING:
    from .collect import Drawing

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def printable(text: str) -> str:
    """`text` with control characters written as escapes (a tab as \\t): a name shows as it is
    spelled, on one line, and Graphviz's parsers accept it."""
    return _CONTROL.sub(lambda match: repr(match.group())[1:-1], text)


def format_bytes(size: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if size < 1024:
            return f"{size} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def describe_array(value) -> str:
    return f"{tuple(value.shape)} {value.dtype}"


def stats(array) -> tuple[str, bool]:
    """("min .. mean .. max .. norm ..", whether every element is finite), computed where the
    array lives (by CuPy on a GPU), in float64, and copied to the host once, as six numbers."""
    if array.size == 0:
        return "empty", True
    xp = backend.array_module(array)
    values = array.astype(np.float64, copy=False)
    finite = xp.isfinite(values)
    kept = xp.where(finite, values, 0.0)
    numbers = [
        finite.sum(),
        xp.isnan(values).sum(),
        xp.where(finite, values, np.inf).min(),
        xp.where(finite, values, -np.inf).max(),
        kept.sum(),
        xp.square(kept).sum(),
    ]
    summary = xp.stack([number.astype(np.float64) for number in numbers])
    count, nans, low, high, total, squares = backend.to_device(summary, backend.CPU).tolist()
    problems = ""
    if count < values.size:
        problems = f"{int(nans)} nan, {values.size - int(count) - int(nans)} inf; "
        if count == 0:
            return problems.rstrip("; "), False
    text = f"min {low:.3g}  mean {total / count:.3g}  max {high:.3g}  norm {math.sqrt(squares):.3g}"
    return problems + text, not problems


def _format_value(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, Tensor):
        value = value.array
    if backend.is_array(value):
        return describe_array(value)
    if isinstance(value, float):
        return f"{value:g}"
    text = str(value) if isinstance(value, (np.dtype, backend.Device)) else repr(value)
    return text if len(text) <= 48 else text[:45] + "..."


def _attr_lines(node, width: int = 48) -> list[str]:
    """The op's attributes as `name=value`, packed into lines of about `width` characters."""
    lines: list[str] = []
    for name in node.op.attrs:
        text = _format_value(node.ctx.__dict__.get(name))
        if text is None:
            continue
        item = f"{name}={text}"
        if lines and len(lines[-1]) + 2 + len(item) <= width:
            lines[-1] += "  " + item
        else:
            lines.append(item)
    return lines


def saved_lines(node) -> list[str]:
    if node.ctx.released:
        return [f"saved {', '.join(node.op.saved)}: freed by backward"]
    lines = []
    for name, value in node.saved_arrays().items():
        if value is None:
            continue
        if backend.is_array(value):
            lines.append(f"saved {name} {describe_array(value)} {format_bytes(value.nbytes)}")
        else:
            lines.append(f"saved {name} {_format_value(value)}")
    return lines


def _value_lines(drawing: Drawing, tensor, key) -> tuple[list[str], bool]:
    """Value and gradient statistics of one tensor (None when it is gone), and whether its
    gradient is finite."""
    lines, finite = [], True
    if tensor is not None:
        lines.append("value " + stats(tensor.array)[0])
    if drawing.grads is not None and key in drawing.grads:
        text, finite = stats(drawing.grads[key])
        lines.append("grad " + text)
    return lines, finite


def kernel_formula(op) -> str:
    """The first line of an op's backward docstring: the formula its kernel computes."""
    for doc in (op.backward.__doc__, op.__doc__):
        if doc and doc.strip():
            return doc.strip().splitlines()[0]
    return op.grad_kernel


def node_title(drawing: Drawing, node) -> str:
    shape, dtype = drawing.output_info.get(node, (None, None))
    out = f" -> {tuple(shape)} {dtype}" if shape is not None else ""
    return f"{node.op.name} #{node.seq}{out}"


def node_details(drawing, node, show_saved, show_attrs, show_values) -> tuple[list, bool]:
    lines = []
    if show_attrs:
        lines.extend(_attr_lines(node))
    if show_saved:
        lines.extend(saved_lines(node))
    finite = True
    if show_values:
        values, finite = _value_lines(drawing, node.output(), node)
        lines.extend(values)
    return lines, finite


def leaf_details(drawing, leaf, show_values) -> tuple[list, bool]:
    lines = [describe_array(leaf.array)]
    finite = True
    if show_values:
        values, finite = _value_lines(drawing, leaf, id(leaf))
        lines.extend(values)
    return lines, finite

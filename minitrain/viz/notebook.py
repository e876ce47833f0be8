"""A Tensor and a Tape as HTML for a notebook (their `_repr_html_`)."""

from __future__ import annotations

import html

from ..autograd import Tape
from ..tensor import Tensor
from .describe import describe_array, format_bytes, saved_lines, stats


def tensor_html(tensor: Tensor) -> str:
    """A Tensor for a notebook: shape, dtype, device, grad_fn and statistics over its values."""
    facts = [f"shape {tuple(tensor.shape)}", str(tensor.dtype), str(tensor.device)]
    if tensor.node is not None:
        facts.append(f"grad_fn {tensor.node.name}")
    elif tensor.requires_grad:
        facts.append("requires_grad")
    rows = [f"<b>Tensor</b> &middot; {html.escape(' · '.join(facts))}"]
    if tensor.array.size and tensor.dtype.kind in "biuf":
        rows.append(f"values: {html.escape(stats(tensor.array)[0])}")
    if tensor.grad is not None:
        rows.append(f"grad: {html.escape(stats(tensor.grad.array)[0])}")
    return "<br>".join(rows) + f"<pre>{html.escape(repr(tensor))}</pre>"


def tape_html(tape: Tape, limit: int = 50) -> str:
    """A Tape for a notebook: one row per recorded node (first `limit`), and the saved bytes."""
    head = (
        f"<b>Tape</b>: {len(tape.nodes)} nodes, {format_bytes(tape.saved_bytes())} saved for "
        f"backward"
    )
    rows = [
        "<tr><th>#</th><th>kernel</th><th>op</th><th>output</th><th>saved</th></tr>",
    ]
    for node, output in zip(tape.nodes[:limit], tape.outputs[:limit], strict=True):
        saved = "; ".join(line.removeprefix("saved ") for line in saved_lines(node))
        cells = [str(node.seq), node.name, node.op.name, describe_array(output.array), saved]
        rows.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    more = len(tape.nodes) - limit
    tail = f"<p>... {more} more nodes</p>" if more > 0 else ""
    return f"<p>{head}</p><table>{''.join(rows)}</table>{tail}"

"""Draw the backward graph autograd recorded: a graphviz diagram, a text tree, notebook HTML.

    loss = loss_fn(model(x), y)
    viz.draw_graph(loss, model=model)            # a graphviz.Digraph; shows inline in Jupyter
    viz.text_graph(loss, model=model)            # the same graph as an indented tree
    loss.backward(retain_graph=True)
    viz.draw_graph(loss, model=model, show_values=True)   # value and gradient statistics
    viz.draw_graph(loss, color_by="grad_norm", max_nodes=30, keep="input")  # vanishing gradients

One box per recorded op, named after its backward kernel (ConvGrad, BatchNormalizationGrad...),
with the arrays it saved for backward and its attributes; one box per leaf that requires grad,
named after its parameter; edges run from inputs toward the output, in recording order.

A gradient taken with create_graph=True has a graph too, and draws the same way: the ops its
backward recorded are shaded orange and boxed by the node whose backward recorded them
("create_graph: backward of MulGrad #12"), beside the forward ops they read:

    (g,) = minitrain.grad(y, x, create_graph=True)
    viz.draw_graph(g)                            # what create_graph recorded
"""

from __future__ import annotations

import contextlib
import functools
import html
import importlib
import math
import os
import re
import sys
import types
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from . import backend
from .autograd import BackwardScope, Node, Tape, distinct_bytes, graph_nodes, replay_backward
from .errors import ArgumentError, DTypeError, GraphError, MinitrainError
from .io import write_atomically
from .tensor import Tensor

if TYPE_CHECKING:
    import graphviz

__all__ = [
    "GraphvizPackageMissingError", "kernel_formula", "draw_graph", "text_graph", "tensor_html",
    "tape_html",
]  # fmt: skip


INSTALL_GRAPHVIZ = (
    "Rendering a graph needs Graphviz's `dot` program, which was not found on PATH. Install "
    "Graphviz (Debian/Ubuntu: sudo apt-get install graphviz; macOS: brew install graphviz; "
    "conda: conda install -c conda-forge graphviz; others: https://graphviz.org/download/). "
    "The graph itself is complete: its DOT source is in `.source`."
)

_OP_FILL, _PARAM_FILL, _LEAF_FILL, _OUTPUT_FILL = "#F2F2F2", "#D6E9F8", "#E6E6E6", "#D4EDD4"
_BACKWARD_FILL = "#FBE3CC"  # an op a create_graph backward recorded
_BAD = "#C62828"  # a gradient with nan or inf
# color_by="grad_norm": ColorBrewer's YlGnBu up to its mid blue (black text stays readable), pale
# for the smallest gradient norm drawn and dark for the largest, on a log scale
_NORM_SCALE = ("#FFFFD9", "#EDF8B1", "#C7E9B4", "#7FCDBB", "#41B6C4", "#1D91C0")
_ZERO_FILL = "#FFFFFF"  # a gradient of zeros, off the log scale
KEEP = ("output", "input", "both")
COLOR_BY = (None, "grad_norm")
_DIM = "#666666"
_DARK_DIM = "#333333"
_TEXT_MAX_INDENT = 60  # text_graph: deeper subtrees continue at the left margin
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


INSTALL_GRAPHVIZ_PACKAGE = (
    "Drawing a graph needs the Python package graphviz, which is not installed: pip install "
    "graphviz (minitrain's requirements include it). viz.text_graph needs no graphviz."
)


class GraphvizPackageMissingError(MinitrainError, ImportError):
    """The Python package graphviz is needed to draw a graph (draw_graph, Tape.draw) and is not
    installed. Importing minitrain, training and text_graph work without it."""

    def __init__(self, message: str = INSTALL_GRAPHVIZ_PACKAGE):
        super().__init__(message, name="graphviz")


def __getattr__(name: str):
    """`Graph` and `GraphvizNotFoundError`, which subclass graphviz's classes, are made on their
    first use (the first drawing), so that importing minitrain does not import graphviz."""
    if name in ("Graph", "GraphvizNotFoundError"):
        return getattr(_graphviz_types(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def _graphviz_types() -> types.SimpleNamespace:
    """The graphviz package and minitrain's classes on it, imported and made once; a
    GraphvizPackageMissingError where the package is not installed."""
    try:
        graphviz = importlib.import_module("graphviz")
    except ImportError as error:
        raise GraphvizPackageMissingError() from error

    class GraphvizNotFoundError(MinitrainError, graphviz.ExecutableNotFound):
        """Graphviz's `dot` program is needed to render a graph and is not installed."""

        __qualname__ = "GraphvizNotFoundError"

        def __init__(self, message: str = INSTALL_GRAPHVIZ):
            RuntimeError.__init__(self, message)

    @contextlib.contextmanager
    def explain_missing_dot():
        try:
            yield
        except graphviz.ExecutableNotFound as error:
            if isinstance(error, GraphvizNotFoundError):
                raise
            raise GraphvizNotFoundError() from error

    class Graph(graphviz.Digraph):
        """A graphviz.Digraph of a backward graph. Rendering without Graphviz's `dot` program
        raises GraphvizNotFoundError saying how to install it; in a notebook the DOT source
        shows instead."""

        __qualname__ = "Graph"

        def render(self, *args, **kwargs):
            with explain_missing_dot():
                return super().render(*args, **kwargs)

        def pipe(self, *args, **kwargs):
            with explain_missing_dot():
                return super().pipe(*args, **kwargs)

        def write(self, path: str | os.PathLike, format: str | None = None) -> str:  # noqa: A002
            """Render to `path` atomically (format from the extension unless given: svg, png,
            pdf). An existing file is replaced only once the new one is complete. Returns the
            path."""
            path = os.fspath(path)
            format = format or os.path.splitext(path)[1].lstrip(".").lower()  # noqa: A001
            if not format:
                raise ArgumentError(
                    f"Graph.write: give a format or a path with an extension, got {path!r}"
                )
            data = self.pipe(format=format)
            write_atomically(path, lambda file: file.write(data), caller="Graph.write")
            return path

        def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
            try:
                return super()._repr_mimebundle_(include, exclude, **kwargs)
            except GraphvizNotFoundError as error:
                return {"text/plain": f"{error}\n\n{self.source}"}

    for made in (GraphvizNotFoundError, Graph):
        made.__module__ = __name__
    return types.SimpleNamespace(
        graphviz=graphviz, Graph=Graph, GraphvizNotFoundError=GraphvizNotFoundError
    )


# What a drawing shows


@dataclass
class _Drawing:
    """The part of the graph a drawing shows, and what is known about it; both renderers read it."""

    nodes: list  # the drawn ops (Node), in recording order
    leaves: list  # the drawn leaf tensors, in order of first use
    outputs: list  # the tensors marked as outputs
    omitted: list  # the ops left out by max_nodes, in recording order
    keep: str  # which end max_nodes kept: "output", "input" or "both"
    max_nodes: int | None
    names: dict  # id(leaf) -> parameter name
    paths: dict  # id(module) -> module path in the model
    module_types: dict  # module path -> class name
    output_info: dict = field(default_factory=dict)  # Node -> (shape, dtype) of its output
    grads: dict | None = None  # Node or id(leaf) -> gradient of the outputs' sum
    notes: list = field(default_factory=list)  # caption lines

    def __post_init__(self):
        self.drawn = {id(node) for node in self.nodes}
        self.cut = {id(node) for node in self.omitted}

    def omitted_text(self, verb: str, count: bool) -> str:
        """What the box (or line) standing for the ops max_nodes left out says: "12 earlier ops
        not drawn (max_nodes=30)"; later ops where the input end is kept, ops in between where
        both ends are."""
        number = len(self.omitted)
        ops = "op" if number == 1 and count else "ops"
        which = {"output": f"earlier {ops}", "input": f"later {ops}", "both": f"{ops} in between"}
        option = "" if self.keep == "output" else f", keep={self.keep!r}"
        text = f"{which[self.keep]} not {verb} (max_nodes={self.max_nodes}{option})"
        return f"{number} {text}" if count else text

    def name_of(self, leaf) -> str:
        return _printable(self.names.get(id(leaf), "leaf" if leaf.requires_grad else "tensor"))

    def path_of(self, node) -> str:
        """The box a node is drawn in: its module's path, or for an op a create_graph backward
        recorded, that backward's (named after the node whose backward it is); "" for none."""
        scope = node.scope
        if type(scope) is BackwardScope:
            path = _backward_box(scope)
            self.module_types.setdefault(path, "")
            return path
        return self.paths.get(id(scope), "") if scope is not None else ""

    def box_label(self, path: str) -> str:
        kind = self.module_types[path]
        return f"{path}: {kind}" if kind else path

    def not_drawn(self, node) -> str:
        """Why an input's op has no box: left out by max_nodes, or recorded outside the Tape."""
        return "omitted" if id(node) in self.cut else "outside"


def _backward_box(scope) -> str:
    """The box of the ops recorded by one node's backward under create_graph (or by the
    engine's sums of gradients between nodes): a name without dots, so no module nests it."""
    if scope.seq is None:
        return "create_graph: gradient sums and casts"
    return f"create_graph: backward of {scope.name} #{scope.seq}"


def _roots(root, caller: str) -> tuple[list, list]:
    """(outputs, nodes): the tensors to mark and every op they were computed by, in order."""
    if isinstance(root, Tape):
        nodes = list(root.nodes)
        consumed = {id(p) for node in nodes for p in node.parents if type(p) is Node}
        outputs = [
            t for node, t in zip(nodes, root.outputs, strict=True) if id(node) not in consumed
        ]
        return outputs, nodes
    outputs = [root] if isinstance(root, Tensor) else root
    if not isinstance(outputs, (list, tuple)) or not all(isinstance(t, Tensor) for t in outputs):
        raise DTypeError(
            f"{caller}: root must be a Tensor, a list of Tensors or a Tape, got "
            f"{type(root).__name__}"
        )
    for i, t in enumerate(outputs):
        if not t.requires_grad:
            raise GraphError(
                f"{caller}: root[{i}] (shape {t.shape}) does not require grad, so no graph was "
                f"recorded for it (computed under no_grad, or from tensors that need no gradient)"
            )
    return list(outputs), graph_nodes(outputs)


def _names(params, model, caller: str) -> dict:
    from .nn.module import Module

    names = {}
    for source in (model, params):  # params' names win
        if source is None:
            continue
        if isinstance(source, Module):
            items = source.named_parameters()
        elif isinstance(source, dict):
            items = source.items()
        else:
            items = source
        for item in items:
            if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], Tensor)):
                raise DTypeError(
                    f"{caller}: params must be a Module, a dict of name -> Tensor or (name, "
                    f"Tensor) pairs, got an entry {type(item).__name__}"
                )
            names[id(item[1])] = str(item[0])
    return names


def _collect(root, params, model, max_nodes, keep, show_values, caller: str) -> _Drawing:
    from .nn.module import Module

    if max_nodes is not None and (
        isinstance(max_nodes, bool) or not isinstance(max_nodes, int) or max_nodes < 1
    ):
        raise ArgumentError(
            f"{caller}: max_nodes must be a positive int or None, got {max_nodes!r}"
        )
    if not isinstance(keep, str) or keep not in KEEP:
        raise ArgumentError(
            f"{caller}: keep must be 'output' (the ops nearest the output), 'input' (the "
            f"first ops) or 'both' (half of max_nodes at each end), got {keep!r}"
        )
    if model is None and isinstance(params, Module):
        model = params
    if model is not None and not isinstance(model, Module):
        raise DTypeError(f"{caller}: model must be a Module, got {type(model).__name__}")
    outputs, nodes = _roots(root, caller)
    recorded, omitted = nodes, []
    if max_nodes is not None and len(nodes) > max_nodes:
        first = {"output": 0, "input": max_nodes, "both": (max_nodes + 1) // 2}[keep]
        last = len(nodes) - (max_nodes - first)  # nodes[first:last] are left out
        omitted = nodes[first:last]
        nodes = nodes[:first] + nodes[last:]
    leaves, seen = [], set()
    for tensor in [*(n_p for n in nodes for n_p in n.parents), *outputs]:
        if isinstance(tensor, Tensor) and tensor.node is None and id(tensor) not in seen:
            seen.add(id(tensor))
            leaves.append(tensor)
    paths, module_types = {}, {}
    if model is not None:
        for path, module in model.named_modules():
            if path:
                paths[id(module)] = path
                module_types[path] = type(module).__name__
    drawing = _Drawing(
        nodes,
        leaves,
        outputs,
        omitted,
        keep,
        max_nodes,
        _names(params, model, caller),
        paths,
        module_types,
    )
    for node in recorded:  # all of them: a drawn op's consumer may be left out
        for index, parent in enumerate(node.parents):
            if type(parent) is Node:
                drawing.output_info[parent] = (node.ctx.shapes[index], node.ctx.dtypes[index])
    for t in outputs:
        if t.node is not None:
            drawing.output_info[t.node] = (t.shape, t.dtype)
    saved = distinct_bytes(a for node in nodes for a in node.saved_arrays().values())
    ops = "op" if len(nodes) == 1 else "ops"
    drawing.notes.append(f"{len(nodes)} {ops}, {_format_bytes(saved)} saved for backward")
    if show_values:
        _replay_gradients(drawing)
    return drawing


def _replay_gradients(drawing: _Drawing) -> None:
    """Every tensor's gradient of sum(outputs), by a read-only replay of the recorded backward
    (autograd.replay_backward: nothing is freed, no hook fires, no `.grad` changes)."""
    if any(node.ctx.released for node in drawing.nodes):
        drawing.notes.append(
            "gradients not shown: backward() freed the saved values; call "
            "backward(retain_graph=True) to look at them after backward"
        )
        return
    try:
        grads = replay_backward(drawing.outputs)
    except GraphError as error:
        drawing.notes.append(f"gradients not shown: {error}")
        return
    drawing.grads = grads
    one = len(drawing.outputs) == 1
    if all(t.data.size == 1 for t in drawing.outputs):
        of = "the output" if one else "the sum of the outputs"
    else:
        of = "the sum of the output's elements" if one else "the sum of all outputs' elements"
    drawing.notes.append(f"grad: d({of})/d(tensor)")


# Text for one item


def _printable(text: str) -> str:
    """`text` with control characters written as escapes (a tab as \\t): a name shows as it is
    spelled, on one line, and Graphviz's parsers accept it."""
    return _CONTROL.sub(lambda match: repr(match.group())[1:-1], text)


def _dot_text(text: str) -> str:
    """`text` for a plain (non-HTML) DOT string attribute, shown literally: Graphviz reads
    backslash escapes and HTML entities (&amp;) in them."""
    return _graphviz_types().graphviz.escape(_printable(text).replace("&", "&amp;"))


def _format_bytes(size: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if size < 1024:
            return f"{size} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def _describe_array(value) -> str:
    return f"{tuple(value.shape)} {value.dtype}"


def _stats(array) -> tuple[str, bool]:
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


def _norm(array) -> float:
    """The 2-norm of an array's elements, in float64 and scaled by the largest magnitude (no
    overflow in the squares): nan where one is nan, inf where one is inf, 0 for an empty one.
    Computed where the array lives; two numbers are copied to the host."""
    if array.size == 0:
        return 0.0
    xp = backend.array_module(array)
    magnitudes = xp.abs(array.astype(np.float64, copy=False))
    peak = magnitudes.max()
    divisor = xp.where((peak > 0) & xp.isfinite(peak), peak, 1.0)
    scaled = xp.sqrt(xp.square(magnitudes / divisor).sum())
    peak, scaled = backend.to_device(xp.stack([peak, scaled]), backend.CPU).tolist()
    if not 0.0 < peak < math.inf:  # 0, inf or nan: the norm too
        return peak
    return peak * scaled


def _scale_colour(position: float) -> str:
    """The colour at `position` (0 to 1) of _NORM_SCALE, linear between its stops."""
    where = min(max(position, 0.0), 1.0) * (len(_NORM_SCALE) - 1)
    stop = min(int(where), len(_NORM_SCALE) - 2)
    low, high = (
        [int(colour[i : i + 2], 16) for i in (1, 3, 5)] for colour in _NORM_SCALE[stop : stop + 2]
    )
    part = where - stop
    return "#" + "".join(f"{round(a + (b - a) * part):02X}" for a, b in zip(low, high, strict=True))


@dataclass
class _NormColours:
    """color_by="grad_norm": the norm of every drawn tensor's gradient, and its fill: on a log
    scale from the smallest nonzero norm (`low`, palest) to the largest (`high`, darkest)."""

    norms: dict  # Node or id(leaf) -> the norm of its gradient
    low: float
    high: float

    def fill(self, key) -> str | None:
        """The fill of a tensor's box: None where its gradient is unknown or not finite."""
        norm = self.norms.get(key)
        if norm is None or not math.isfinite(norm):
            return None
        if norm == 0:
            return _ZERO_FILL
        span = math.log10(self.high) - math.log10(self.low)
        return _scale_colour((math.log10(norm) - math.log10(self.low)) / span if span else 1.0)


def _norm_colours(drawing: _Drawing) -> _NormColours | None:
    """The gradient norms of the drawn ops and leaves, their scale, and a caption line saying
    how to read it; None where no gradient is known (the caption says why)."""
    if drawing.grads is None:
        return None
    keys = [*drawing.nodes, *(id(leaf) for leaf in drawing.leaves)]
    norms = {key: _norm(drawing.grads[key]) for key in keys if key in drawing.grads}
    scaled = [norm for norm in norms.values() if 0 < norm < math.inf]
    if not scaled:
        drawing.notes.append("fill: no nonzero finite gradient to colour")
        return None
    colours = _NormColours(norms, min(scaled), max(scaled))
    note = (
        f"fill: the norm of each gradient, log scale, from {colours.low:.2g} (pale yellow) to "
        f"{colours.high:.2g} (blue)"
    )
    if any(norm == 0 for norm in norms.values()):
        note += "; white: a gradient of zeros"
    if any(not math.isfinite(norm) for norm in norms.values()):
        note += "; red border: nan or inf"
    drawing.notes.append(note)
    return colours


def _legend_label(colours: _NormColours, steps: int = 5) -> str:
    """A colour bar: `steps` cells of the scale, each labelled with the norm it stands for."""
    low, high = math.log10(colours.low), math.log10(colours.high)
    steps = steps if high > low else 1
    cells = []
    for step in range(steps):
        position = step / (steps - 1) if steps > 1 else 1.0
        norm = 10 ** (low + (high - low) * position)
        cells.append(
            f'<TD BGCOLOR="{_scale_colour(position)}"><FONT POINT-SIZE="9">{norm:.1e}</FONT></TD>'
        )
    title = f'<TR><TD COLSPAN="{steps}"><FONT POINT-SIZE="9">gradient norm</FONT></TD></TR>'
    table = '<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="3">'
    return f"<{table}{title}<TR>{''.join(cells)}</TR></TABLE>>"


def _format_value(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, Tensor):
        value = value.data
    if backend.is_array(value):
        return _describe_array(value)
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


def _saved_lines(node) -> list[str]:
    if node.ctx.released:
        return [f"saved {', '.join(node.op.saved)}: freed by backward"]
    lines = []
    for name, value in node.saved_arrays().items():
        if value is None:
            continue
        if backend.is_array(value):
            lines.append(f"saved {name} {_describe_array(value)} {_format_bytes(value.nbytes)}")
        else:
            lines.append(f"saved {name} {_format_value(value)}")
    return lines


def _value_lines(drawing: _Drawing, tensor, key) -> tuple[list[str], bool]:
    """Value and gradient statistics of one tensor (None when it is gone), and whether its
    gradient is finite."""
    lines, finite = [], True
    if tensor is not None:
        lines.append("value " + _stats(tensor.data)[0])
    if drawing.grads is not None and key in drawing.grads:
        text, finite = _stats(drawing.grads[key])
        lines.append("grad " + text)
    return lines, finite


def kernel_formula(op) -> str:
    """The first line of an op's backward docstring: the formula its kernel computes."""
    for doc in (op.backward.__doc__, op.__doc__):
        if doc and doc.strip():
            return doc.strip().splitlines()[0]
    return op.grad_kernel


def _node_title(drawing: _Drawing, node) -> str:
    shape, dtype = drawing.output_info.get(node, (None, None))
    out = f" -> {tuple(shape)} {dtype}" if shape is not None else ""
    return f"{node.op.name} #{node.seq}{out}"


def _node_details(drawing, node, show_saved, show_attrs, show_values) -> tuple[list, bool]:
    lines = []
    if show_attrs:
        lines.extend(_attr_lines(node))
    if show_saved:
        lines.extend(_saved_lines(node))
    finite = True
    if show_values:
        values, finite = _value_lines(drawing, node.output(), node)
        lines.extend(values)
    return lines, finite


def _leaf_details(drawing, leaf, show_values) -> tuple[list, bool]:
    lines = [_describe_array(leaf.data)]
    finite = True
    if show_values:
        values, finite = _value_lines(drawing, leaf, id(leaf))
        lines.extend(values)
    return lines, finite


# Graphviz


def _html_text(text: str) -> str:
    return html.escape(_printable(text))


def _html_label(title: str, subtitle: str, lines: list[str], dim: str = _DIM) -> str:
    rows = [f"<TR><TD><B>{_html_text(title)}</B></TD></TR>"]
    if subtitle:
        rows.append(
            f'<TR><TD><FONT POINT-SIZE="9" COLOR="{dim}">{_html_text(subtitle)}</FONT></TD></TR>'
        )
    rows.extend(
        f'<TR><TD ALIGN="LEFT"><FONT POINT-SIZE="9">{_html_text(line)}</FONT></TD></TR>'
        for line in lines
    )
    table = '<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1">'
    return f"<{table}{''.join(rows)}</TABLE>>"


def draw_graph(
    root,
    params=None,
    show_saved: bool = True,
    show_attrs: bool = True,
    show_values: bool = False,
    max_nodes: int | None = None,
    model=None,
    keep: str = "output",
    color_by: str | None = None,
) -> graphviz.Digraph:
    """Draw the backward graph that computed `root` (a Tensor, a list of them, or a Tape).

    - params: names for the leaves: a Module, a dict name -> Tensor (`dict(m.named_parameters())`)
      or (name, Tensor) pairs. A Module given here or as `model` also groups each submodule's
      ops in a box labelled with its path (`features.0: Conv2d`).
    - show_saved: each op's saved arrays (shape, dtype, bytes); show_attrs: its attributes.
    - show_values: value statistics (min, mean, max, norm) of the leaves, the outputs and every
      intermediate tensor still alive (a Tape keeps them), and the gradient statistics of every
      tensor, computed by a read-only walk over the saved values (no .grad changes, no hooks
      run): draw before backward, or after backward(retain_graph=True). A gradient with nan or
      inf is drawn in red.
    - max_nodes: draw only max_nodes ops; one box counts the ones left out. keep says which:
      "output" (default) the last ones, nearest the output; "input" the first ones, nearest
      the inputs (where gradients vanish in a deep network); "both" half at each end.
    - color_by="grad_norm": fill each op and leaf by the norm of its gradient (for an op, the
      gradient of its output), on a log scale from pale yellow (the smallest drawn) to blue
      (the largest); a colour bar gives the scale, and each box the norm. The gradients come
      from the same read-only walk as show_values'. A gradient of zeros is white; one with nan
      or inf keeps the plain fill and is drawn in red. None (default): fills by kind of box.

    Hover over an op (SVG) to read its kernel's formula. Returns a graphviz.Digraph (a `Graph`):
    `.source` is its DOT text, `.render(...)` / `.write("graph.svg")` need Graphviz's `dot`.
    """
    if not (color_by is None or isinstance(color_by, str)) or color_by not in COLOR_BY:
        raise ArgumentError(f"draw_graph: color_by must be None or 'grad_norm', got {color_by!r}")
    drawing = _collect(
        root, params, model, max_nodes, keep, show_values or color_by is not None, "draw_graph"
    )
    colours = _norm_colours(drawing) if color_by == "grad_norm" else None
    graph = _graphviz_types().Graph(
        name="backward", graph_attr={"rankdir": "TB", "fontname": "Helvetica"}
    )
    graph.attr("node", shape="box", style="rounded,filled", fontname="Helvetica", fontsize="10")
    graph.attr("edge", fontname="Helvetica", fontsize="8", color="#555555")
    if drawing.notes:
        graph.attr(label="\n".join(map(_dot_text, drawing.notes)), labelloc="b", fontsize="9")

    members: dict[str, list] = {"": []}  # module path -> (id, attributes) of the nodes in it
    for leaf in drawing.leaves:
        name = drawing.names.get(id(leaf))
        lines, finite = _leaf_details(drawing, leaf, show_values)
        attrs = {"fillcolor": _PARAM_FILL if name else _LEAF_FILL}
        tooltip = f"{drawing.name_of(leaf)}: {_describe_array(leaf.data)}"
        tooltip += _colour_box(attrs, lines, colours, id(leaf), show_values)
        attrs.update(
            label=_html_label(drawing.name_of(leaf), "", lines), tooltip=_dot_text(tooltip)
        )
        if not finite:
            attrs.update(color=_BAD, penwidth="2")
        path = name.rpartition(".")[0] if name else ""
        members.setdefault(path if path in drawing.module_types else "", []).append(
            (f"t{id(leaf)}", attrs)
        )
    for node in drawing.nodes:
        lines, finite = _node_details(drawing, node, show_saved, show_attrs, show_values)
        attrs = {"fillcolor": _BACKWARD_FILL if type(node.scope) is BackwardScope else _OP_FILL}
        tooltip = f"{node.name}: {kernel_formula(node.op)}"
        tooltip += _colour_box(attrs, lines, colours, node, show_values)
        dim = _DIM if colours is None else _DARK_DIM  # readable on the darker fills
        attrs.update(
            label=_html_label(node.name, _node_title(drawing, node), lines, dim),
            tooltip=_dot_text(tooltip),
        )
        if not finite:
            attrs.update(color=_BAD, penwidth="2")
        members.setdefault(drawing.path_of(node), []).append((f"n{node.seq}", attrs))
    _emit_clusters(graph, members, drawing)
    if colours is not None:
        graph.node("legend", _legend_label(colours), shape="plain", style="")

    missing: set = set()  # placeholders for the inputs whose ops are not drawn
    for i, tensor in enumerate(drawing.outputs):
        lines = [_describe_array(tensor.data)]
        if show_values:
            lines.append("value " + _stats(tensor.data)[0])
        title = "output" if len(drawing.outputs) == 1 else f"output {i}"
        graph.node(f"out{i}", _html_label(title, "", lines), fillcolor=_OUTPUT_FILL, penwidth="2")
        if tensor.node is None:
            graph.edge(f"t{id(tensor)}", f"out{i}")
        elif id(tensor.node) in drawing.drawn:
            graph.edge(f"n{tensor.node.seq}", f"out{i}")
        else:
            missing.add(drawing.not_drawn(tensor.node))
            graph.edge(drawing.not_drawn(tensor.node), f"out{i}", style="dashed")

    for node in drawing.nodes:
        several = len(node.parents) > 1
        for index, parent in enumerate(node.parents):
            if parent is None:
                continue
            label = {"label": node.op.input_name(index)} if several else {}
            if type(parent) is not Node:
                graph.edge(f"t{id(parent)}", f"n{node.seq}", **label)
            elif id(parent) in drawing.drawn:
                graph.edge(f"n{parent.seq}", f"n{node.seq}", **label)
            else:
                missing.add(drawing.not_drawn(parent))
                graph.edge(drawing.not_drawn(parent), f"n{node.seq}", style="dashed", **label)
    feeding: set = set()  # drawn ops whose output an op max_nodes left out reads
    for node in drawing.omitted:
        for parent in node.parents:
            if type(parent) is Node and id(parent) in drawing.drawn and id(parent) not in feeding:
                feeding.add(id(parent))
                graph.edge(f"n{parent.seq}", "omitted", style="dashed")
                missing.add("omitted")
    placeholders = {
        "omitted": drawing.omitted_text("drawn", count=True),
        "outside": "earlier ops, recorded outside the Tape: not drawn",
    }
    for name in sorted(missing):
        graph.node(name, placeholders[name], style="dashed", fillcolor="white")
    return graph


def _colour_box(attrs: dict, lines: list, colours, key, show_values: bool) -> str:
    """color_by="grad_norm": a box's fill from its gradient's norm (a red border where it is
    not finite), and the norm added to its label lines (unless show_values' statistics hold
    it). Returns what to add to its tooltip."""
    if colours is None or key not in colours.norms:
        return ""
    norm = colours.norms[key]
    fill = colours.fill(key)
    if fill is not None:
        attrs["fillcolor"] = fill
    if not math.isfinite(norm):
        attrs.update(color=_BAD, penwidth="2")
    if not show_values:
        lines.append(f"grad norm {norm:.3g}")
    return f" (grad norm {norm:.3g})"


def _emit_clusters(graph, members: dict, drawing: _Drawing) -> None:
    """Nodes into nested boxes, one per module path (features > features.0), and one per node
    whose backward create_graph recorded."""
    module_types = drawing.module_types
    boxed = set()
    for path in members:
        while path and path in module_types:
            boxed.add(path)
            path = _enclosing(path, module_types)
    children: dict[str, list] = {}
    for path in sorted(boxed):
        children.setdefault(_enclosing(path, module_types), []).append(path)
    ids = {path: f"cluster_{number}" for number, path in enumerate(sorted(boxed))}
    _emit_box(graph, "", members, children, drawing, ids)


def _enclosing(path: str, module_types: dict) -> str:
    """The path of the nearest module around the one at `path` ("" for the model itself)."""
    path = path.rpartition(".")[0]
    while path and path not in module_types:
        path = path.rpartition(".")[0]
    return path


def _emit_box(
    target, path: str, members: dict, children: dict, drawing: _Drawing, ids: dict
) -> None:
    """The nodes of the module at `path`, then a box for each child module; `ids` numbers the
    boxes (a module's name may hold any character, a DOT identifier may not)."""
    for node_id, attrs in members.get(path, []):
        target.node(node_id, **attrs)
    for child in children.get(path, []):  # recursion as deep as the module nesting, no deeper
        with target.subgraph(name=ids[child]) as box:
            label = _dot_text(drawing.box_label(child))
            box.attr(
                label=label,
                tooltip=label,
                style="rounded,dashed",
                color="#999999",
                fontsize="9",
                labeljust="l",
                labelloc="t",
            )
            _emit_box(box, child, members, children, drawing, ids)


# Text


def text_graph(
    root,
    params=None,
    show_saved: bool = True,
    show_attrs: bool = True,
    show_values: bool = False,
    max_nodes: int | None = None,
    model=None,
    file=None,
    keep: str = "output",
) -> None:
    """Print the graph of `root` as an indented tree, from each output back to the leaves.

    The options are draw_graph's, except color_by; `file` is where to write (default: standard
    output). Where max_nodes left out the ops nearest the output (keep="input" or "both"), one
    line stands for them and the ops they read hang under it. Each op
    shows its kernel, op name, sequence number and output shape, then its details after `·`;
    each child line starts with the input it feeds. An op reached a second time is not
    expanded again ("see above"). Past 20 levels of indentation, an op's inputs continue at the
    left margin under "<kernel> #<seq>, continued:", so deep graphs print in linear size.
    """
    drawing = _collect(root, params, model, max_nodes, keep, show_values, "text_graph")
    lines: list[str] = []
    shown: set = set()
    passed: set = set()  # id() of the left-out ops already walked through
    for i, tensor in enumerate(drawing.outputs):
        title = "output" if len(drawing.outputs) == 1 else f"output {i}"
        line = f"{title} {_describe_array(tensor.data)}"
        if show_values:
            line += "  value " + _stats(tensor.data)[0]
        lines.append(line)
        start = tensor.node if tensor.node is not None else tensor
        stack = [(start, "", "", True)]
        while stack:  # iterative: graphs of any depth
            item, input_name, prefix, last = stack.pop()
            branch = prefix + ("└─ " if last else "├─ ")
            inner = prefix + ("   " if last else "│  ")
            label = f"{input_name}: " if input_name else ""
            if type(item) is not Node:
                details, _ = _leaf_details(drawing, item, show_values)
                lines.append(f"{branch}{label}{drawing.name_of(item)} {'  '.join(details)}")
                continue
            if id(item) not in drawing.drawn:
                if drawing.not_drawn(item) == "outside":
                    why = "earlier ops, recorded outside the Tape: not shown"
                elif id(item) in passed:
                    why = drawing.omitted_text("shown", count=False) + " (see above)"
                else:
                    why = drawing.omitted_text("shown", count=False)
                    reads = _drawn_inputs_of_omitted(drawing, item, passed)
                    for position, child in reversed(list(enumerate(reads))):
                        stack.append((child, "", inner, position == len(reads) - 1))
                lines.append(f"{branch}{label}... {why}")
                continue
            path = drawing.path_of(item)
            in_module = f"  [{_printable(drawing.box_label(path))}]" if path else ""
            if id(item) in shown:
                lines.append(f"{branch}{label}{item.name} #{item.seq} (see above)")
                continue
            shown.add(id(item))
            lines.append(f"{branch}{label}{item.name}  {_node_title(drawing, item)}{in_module}")
            details, _ = _node_details(drawing, item, show_saved, show_attrs, show_values)
            lines.extend(f"{inner}· {detail}" for detail in details)
            children = [
                (parent, item.op.input_name(i) if len(item.parents) > 1 else "")
                for i, parent in enumerate(item.parents)
                if parent is not None
            ]
            children.sort(key=lambda child: type(child[0]) is Node)  # leaves first: short lines
            if children and len(inner) > _TEXT_MAX_INDENT:  # lines stay short in deep graphs
                lines.append(f"{item.name} #{item.seq}, continued:")
                inner = ""
            for position, (child, name) in reversed(list(enumerate(children))):
                stack.append((child, name, inner, position == len(children) - 1))
    lines.extend(f"({note})" for note in drawing.notes)
    print("\n".join(lines), file=sys.stdout if file is None else file)


def _drawn_inputs_of_omitted(drawing: _Drawing, start, passed: set) -> list:
    """The drawn ops whose outputs the left-out ops from `start` down read (keep="input" or
    "both"), latest first; marks the left-out ops walked in `passed`, so each is walked once."""
    found, stack = {}, [start]
    passed.add(id(start))
    while stack:
        node = stack.pop()
        for parent in node.parents:
            if type(parent) is not Node:
                continue
            if id(parent) in drawing.drawn:
                found[id(parent)] = parent
            elif id(parent) in drawing.cut and id(parent) not in passed:
                passed.add(id(parent))
                stack.append(parent)
    return sorted(found.values(), key=lambda node: node.seq, reverse=True)


# Notebooks


def tensor_html(tensor: Tensor) -> str:
    """A Tensor for a notebook: shape, dtype, device, grad_fn and statistics over its values."""
    facts = [f"shape {tuple(tensor.shape)}", str(tensor.dtype), str(tensor.device)]
    if tensor.node is not None:
        facts.append(f"grad_fn {tensor.node.name}")
    elif tensor.requires_grad:
        facts.append("requires_grad")
    rows = [f"<b>Tensor</b> &middot; {html.escape(' · '.join(facts))}"]
    if tensor.data.size and tensor.dtype.kind in "biuf":
        rows.append(f"values: {html.escape(_stats(tensor.data)[0])}")
    if tensor.grad is not None:
        rows.append(f"grad: {html.escape(_stats(tensor.grad.data)[0])}")
    return "<br>".join(rows) + f"<pre>{html.escape(repr(tensor))}</pre>"


def tape_html(tape: Tape, limit: int = 50) -> str:
    """A Tape for a notebook: one row per recorded node (first `limit`), and the saved bytes."""
    head = (
        f"<b>Tape</b>: {len(tape.nodes)} nodes, {_format_bytes(tape.saved_bytes())} saved for "
        f"backward"
    )
    rows = [
        "<tr><th>#</th><th>kernel</th><th>op</th><th>output</th><th>saved</th></tr>",
    ]
    for node, output in zip(tape.nodes[:limit], tape.outputs[:limit], strict=True):
        saved = "; ".join(line.removeprefix("saved ") for line in _saved_lines(node))
        cells = [str(node.seq), node.name, node.op.name, _describe_array(output.data), saved]
        rows.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    more = len(tape.nodes) - limit
    tail = f"<p>... {more} more nodes</p>" if more > 0 else ""
    return f"<p>{head}</p><table>{''.join(rows)}</table>{tail}"


# The engine's Tape and Tensor show themselves through this module, which they know nothing of.
Tape.draw_graph = draw_graph
Tape.html_view = tape_html
Tensor.html_view = tensor_html

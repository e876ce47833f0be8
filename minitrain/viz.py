"""Draw the backward graph autograd recorded: a graphviz diagram, a text tree, notebook HTML.

    loss = loss_fn(model(x), y)
    viz.draw_graph(loss, model=model)            # a graphviz.Digraph; shows inline in Jupyter
    viz.text_graph(loss, model=model)            # the same graph as an indented tree
    loss.backward(retain_graph=True)
    viz.draw_graph(loss, model=model, show_values=True)   # value and gradient statistics

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
import html
import math
import os
import re
import sys
from dataclasses import dataclass, field

import graphviz
import numpy as np

from . import backend
from .autograd import BackwardScope, Node, Tape, distinct_bytes, graph_nodes, replay_backward
from .errors import ArgumentError, DTypeError, GraphError, MinitrainError
from .io import write_atomically
from .tensor import Tensor

INSTALL_GRAPHVIZ = (
    "Rendering a graph needs Graphviz's `dot` program, which was not found on PATH. Install "
    "Graphviz (Debian/Ubuntu: sudo apt-get install graphviz; macOS: brew install graphviz; "
    "conda: conda install -c conda-forge graphviz; others: https://graphviz.org/download/). "
    "The graph itself is complete: its DOT source is in `.source`."
)

_OP_FILL, _PARAM_FILL, _LEAF_FILL, _OUTPUT_FILL = "#F2F2F2", "#D6E9F8", "#E6E6E6", "#D4EDD4"
_BACKWARD_FILL = "#FBE3CC"  # an op a create_graph backward recorded
_BAD = "#C62828"  # a gradient with nan or inf
_DIM = "#666666"
_TEXT_MAX_INDENT = 60  # text_graph: deeper subtrees continue at the left margin
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class GraphvizNotFoundError(MinitrainError, graphviz.ExecutableNotFound):
    """Graphviz's `dot` program is needed to render a graph and is not installed."""

    def __init__(self, message: str = INSTALL_GRAPHVIZ):
        RuntimeError.__init__(self, message)


@contextlib.contextmanager
def _explain_missing_dot():
    try:
        yield
    except graphviz.ExecutableNotFound as error:
        if isinstance(error, GraphvizNotFoundError):
            raise
        raise GraphvizNotFoundError() from error


class Graph(graphviz.Digraph):
    """A graphviz.Digraph of a backward graph. Rendering without Graphviz's `dot` program raises
    GraphvizNotFoundError saying how to install it; in a notebook the DOT source shows instead."""

    def render(self, *args, **kwargs):
        with _explain_missing_dot():
            return super().render(*args, **kwargs)

    def pipe(self, *args, **kwargs):
        with _explain_missing_dot():
            return super().pipe(*args, **kwargs)

    def write(self, path: str | os.PathLike, format: str | None = None) -> str:  # noqa: A002
        """Render to `path` atomically (format from the extension unless given: svg, png, pdf).
        An existing file is replaced only once the new one is complete. Returns the path."""
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


# What a drawing shows


@dataclass
class _Drawing:
    """The part of the graph a drawing shows, and what is known about it; both renderers read it."""

    nodes: list  # the drawn ops (Node), in recording order
    leaves: list  # the drawn leaf tensors, in order of first use
    outputs: list  # the tensors marked as outputs
    omitted: int  # ops left out by max_nodes
    cut: set  # id() of the ops left out by max_nodes
    names: dict  # id(leaf) -> parameter name
    paths: dict  # id(module) -> module path in the model
    module_types: dict  # module path -> class name
    output_info: dict = field(default_factory=dict)  # Node -> (shape, dtype) of its output
    grads: dict | None = None  # Node or id(leaf) -> gradient of the outputs' sum
    notes: list = field(default_factory=list)  # caption lines

    def __post_init__(self):
        self.drawn = {id(node) for node in self.nodes}

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


def _collect(root, params, model, max_nodes, show_values, caller: str) -> _Drawing:
    from .nn.module import Module

    if max_nodes is not None and (
        isinstance(max_nodes, bool) or not isinstance(max_nodes, int) or max_nodes < 1
    ):
        raise ArgumentError(
            f"{caller}: max_nodes must be a positive int or None, got {max_nodes!r}"
        )
    if model is None and isinstance(params, Module):
        model = params
    if model is not None and not isinstance(model, Module):
        raise DTypeError(f"{caller}: model must be a Module, got {type(model).__name__}")
    outputs, nodes = _roots(root, caller)
    omitted, cut = 0, set()
    if max_nodes is not None and len(nodes) > max_nodes:
        omitted = len(nodes) - max_nodes
        cut = {id(node) for node in nodes[:omitted]}
        nodes = nodes[omitted:]  # keep the ops nearest the output
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
        nodes, leaves, outputs, omitted, cut, _names(params, model, caller), paths, module_types
    )
    for node in nodes:
        for index, parent in enumerate(node.parents):
            if type(parent) is Node:
                drawing.output_info[parent] = (node.ctx.shapes[index], node.ctx.dtypes[index])
    for t in outputs:
        if t.node is not None:
            drawing.output_info[t.node] = (t.shape, t.dtype)
    saved = distinct_bytes(a for node in nodes for a in node.saved_arrays().values())
    drawing.notes.append(f"{len(nodes)} ops, {_format_bytes(saved)} saved for backward")
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
    return graphviz.escape(_printable(text).replace("&", "&amp;"))


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


def _html_label(title: str, subtitle: str, lines: list[str]) -> str:
    rows = [f"<TR><TD><B>{_html_text(title)}</B></TD></TR>"]
    if subtitle:
        rows.append(
            f'<TR><TD><FONT POINT-SIZE="9" COLOR="{_DIM}">{_html_text(subtitle)}</FONT></TD></TR>'
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
) -> Graph:
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
    - max_nodes: draw only the last max_nodes ops; one box counts the ones left out.

    Hover over an op (SVG) to read its kernel's formula. Returns a graphviz.Digraph (a `Graph`):
    `.source` is its DOT text, `.render(...)` / `.write("graph.svg")` need Graphviz's `dot`.
    """
    drawing = _collect(root, params, model, max_nodes, show_values, "draw_graph")
    graph = Graph(name="backward", graph_attr={"rankdir": "TB", "fontname": "Helvetica"})
    graph.attr("node", shape="box", style="rounded,filled", fontname="Helvetica", fontsize="10")
    graph.attr("edge", fontname="Helvetica", fontsize="8", color="#555555")
    if drawing.notes:
        graph.attr(label="\n".join(map(_dot_text, drawing.notes)), labelloc="b", fontsize="9")

    members: dict[str, list] = {"": []}  # module path -> (id, attributes) of the nodes in it
    for leaf in drawing.leaves:
        name = drawing.names.get(id(leaf))
        lines, finite = _leaf_details(drawing, leaf, show_values)
        attrs = {
            "label": _html_label(drawing.name_of(leaf), "", lines),
            "fillcolor": _PARAM_FILL if name else _LEAF_FILL,
            "tooltip": _dot_text(f"{drawing.name_of(leaf)}: {_describe_array(leaf.data)}"),
        }
        if not finite:
            attrs.update(color=_BAD, penwidth="2")
        path = name.rpartition(".")[0] if name else ""
        members.setdefault(path if path in drawing.module_types else "", []).append(
            (f"t{id(leaf)}", attrs)
        )
    for node in drawing.nodes:
        lines, finite = _node_details(drawing, node, show_saved, show_attrs, show_values)
        attrs = {
            "label": _html_label(node.name, _node_title(drawing, node), lines),
            "fillcolor": _BACKWARD_FILL if type(node.scope) is BackwardScope else _OP_FILL,
            "tooltip": _dot_text(f"{node.name}: {kernel_formula(node.op)}"),
        }
        if not finite:
            attrs.update(color=_BAD, penwidth="2")
        members.setdefault(drawing.path_of(node), []).append((f"n{node.seq}", attrs))
    _emit_clusters(graph, members, drawing)

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
    placeholders = {
        "omitted": f"{drawing.omitted} earlier ops not drawn (max_nodes={max_nodes})",
        "outside": "earlier ops, recorded outside the Tape: not drawn",
    }
    for name in sorted(missing):
        graph.node(name, placeholders[name], style="dashed", fillcolor="white")
    return graph


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
) -> None:
    """Print the graph of `root` as an indented tree, from each output back to the leaves.

    The options are draw_graph's; `file` is where to write (default: standard output). Each op
    shows its kernel, op name, sequence number and output shape, then its details after `·`;
    each child line starts with the input it feeds. An op reached a second time is not
    expanded again ("see above"). Past 20 levels of indentation, an op's inputs continue at the
    left margin under "<kernel> #<seq>, continued:", so deep graphs print in linear size.
    """
    drawing = _collect(root, params, model, max_nodes, show_values, "text_graph")
    lines: list[str] = []
    shown: set = set()
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
                if drawing.not_drawn(item) == "omitted":
                    why = f"earlier ops not shown (max_nodes={max_nodes})"
                else:
                    why = "earlier ops, recorded outside the Tape: not shown"
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

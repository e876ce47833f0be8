"""draw_graph: a drawing as a graphviz Digraph, with one box per op and leaf (its label an HTML
table), nested boxes for the modules, and the edges between them."""

from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING

from ..autograd import BackwardScope, Node
from ..errors import ArgumentError
from .collect import Drawing, collect
from .colours import legend_label, norm_colours
from .describe import (
    describe_array,
    kernel_formula,
    leaf_details,
    node_details,
    node_title,
    printable,
    stats,
)
from .lazy_graphviz import graphviz_types

if TYPE_CHECKING:
    import graphviz

_OP_FILL, _PARAM_FILL, _LEAF_FILL, _OUTPUT_FILL = "#F2F2F2", "#D6E9F8", "#E6E6E6", "#D4EDD4"
_BACKWARD_FILL = "#FBE3CC"  # an op a create_graph backward recorded
_BAD = "#C62828"  # a gradient with nan or inf
COLOR_BY = (None, "grad_norm")
_DIM = "#666666"
_DARK_DIM = "#333333"


def _dot_text(text: str) -> str:
    """`text` for a plain (non-HTML) DOT string attribute, shown literally: Graphviz reads
    backslash escapes and HTML entities (&amp;) in them."""
    return graphviz_types().graphviz.escape(printable(text).replace("&", "&amp;"))


def _html_text(text: str) -> str:
    return html.escape(printable(text))


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
    drawing = collect(
        root, params, model, max_nodes, keep, show_values or color_by is not None, "draw_graph"
    )
    colours = norm_colours(drawing) if color_by == "grad_norm" else None
    graph = graphviz_types().Graph(
        name="backward", graph_attr={"rankdir": "TB", "fontname": "Helvetica"}
    )
    graph.attr("node", shape="box", style="rounded,filled", fontname="Helvetica", fontsize="10")
    graph.attr("edge", fontname="Helvetica", fontsize="8", color="#555555")
    if drawing.notes:
        graph.attr(label="\n".join(map(_dot_text, drawing.notes)), labelloc="b", fontsize="9")

    members: dict[str, list] = {"": []}  # module path -> (id, attributes) of the nodes in it
    for leaf in drawing.leaves:
        name = drawing.names.get(id(leaf))
        lines, finite = leaf_details(drawing, leaf, show_values)
        attrs = {"fillcolor": _PARAM_FILL if name else _LEAF_FILL}
        tooltip = f"{drawing.name_of(leaf)}: {describe_array(leaf.array)}"
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
        lines, finite = node_details(drawing, node, show_saved, show_attrs, show_values)
        attrs = {"fillcolor": _BACKWARD_FILL if type(node.scope) is BackwardScope else _OP_FILL}
        tooltip = f"{node.name}: {kernel_formula(node.op)}"
        tooltip += _colour_box(attrs, lines, colours, node, show_values)
        dim = _DIM if colours is None else _DARK_DIM  # readable on the darker fills
        attrs.update(
            label=_html_label(node.name, node_title(drawing, node), lines, dim),
            tooltip=_dot_text(tooltip),
        )
        if not finite:
            attrs.update(color=_BAD, penwidth="2")
        members.setdefault(drawing.path_of(node), []).append((f"n{node.seq}", attrs))
    _emit_clusters(graph, members, drawing)
    if colours is not None:
        graph.node("legend", legend_label(colours), shape="plain", style="")

    missing: set = set()  # placeholders for the inputs whose ops are not drawn
    for i, tensor in enumerate(drawing.outputs):
        lines = [describe_array(tensor.array)]
        if show_values:
            lines.append("value " + stats(tensor.array)[0])
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


def _emit_clusters(graph, members: dict, drawing: Drawing) -> None:
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
    target, path: str, members: dict, children: dict, drawing: Drawing, ids: dict
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

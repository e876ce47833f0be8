"""text_graph: a drawing printed as an indented tree, from each output back to the leaves."""

from __future__ import annotations

import sys

from ..autograd import Node
from .collect import Drawing, collect
from .describe import describe_array, leaf_details, node_details, node_title, printable, stats

_TEXT_MAX_INDENT = 60  # text_graph: deeper subtrees continue at the left margin


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
    drawing = collect(root, params, model, max_nodes, keep, show_values, "text_graph")
    lines: list[str] = []
    shown: set = set()
    passed: set = set()  # id() of the left-out ops already walked through
    for i, tensor in enumerate(drawing.outputs):
        title = "output" if len(drawing.outputs) == 1 else f"output {i}"
        line = f"{title} {describe_array(tensor.array)}"
        if show_values:
            line += "  value " + stats(tensor.array)[0]
        lines.append(line)
        start = tensor.node if tensor.node is not None else tensor
        stack = [(start, "", "", True)]
        while stack:  # iterative: graphs of any depth
            item, input_name, prefix, last = stack.pop()
            branch = prefix + ("└─ " if last else "├─ ")
            inner = prefix + ("   " if last else "│  ")
            label = f"{input_name}: " if input_name else ""
            if type(item) is not Node:
                details, _ = leaf_details(drawing, item, show_values)
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
            in_module = f"  [{printable(drawing.box_label(path))}]" if path else ""
            if id(item) in shown:
                lines.append(f"{branch}{label}{item.name} #{item.seq} (see above)")
                continue
            shown.add(id(item))
            lines.append(f"{branch}{label}{item.name}  {node_title(drawing, item)}{in_module}")
            details, _ = node_details(drawing, item, show_saved, show_attrs, show_values)
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


def _drawn_inputs_of_omitted(drawing: Drawing, start, passed: set) -> list:
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

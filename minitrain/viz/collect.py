"""What a drawing shows: the recorded ops and leaves of a graph (those max_nodes keeps), the
names of the parameters and modules, each op's output shape and, for show_values, every
tensor's gradient, replayed read-only; draw_graph and text_graph both render it."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..autograd import BackwardScope, Node, Tape, distinct_bytes, graph_nodes, replay_backward
from ..errors import ArgumentError, DTypeError, GraphError
from ..tensor import Tensor
from .describe import format_bytes, printable

KEEP = ("output", "input", "both")


@dataclass
class Drawing:
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
        return printable(self.names.get(id(leaf), "leaf" if leaf.requires_grad else "tensor"))

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
    from ..nn.modules.module import Module

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


def collect(root, params, model, max_nodes, keep, show_values, caller: str) -> Drawing:
    """What draw_graph or text_graph (`caller`, named in the errors) draws of `root`."""
    from ..nn.modules.module import Module

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
    drawing = Drawing(
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
    drawing.notes.append(f"{len(nodes)} {ops}, {format_bytes(saved)} saved for backward")
    if show_values:
        _replay_gradients(drawing)
    return drawing


def _replay_gradients(drawing: Drawing) -> None:
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
    if all(t.array.size == 1 for t in drawing.outputs):
        of = "the output" if one else "the sum of the outputs"
    else:
        of = "the sum of the output's elements" if one else "the sum of all outputs' elements"
    drawing.notes.append(f"grad: d({of})/d(tensor)")

"""The Tape: recording made explicit and inspectable (its nodes, their outputs, the memory they
hold, gradients without touching .grad, a drawing)."""

from __future__ import annotations

from ..errors import GraphError
from .api import grad
from .boundary import is_tensor
from .grad_mode import recording
from .node import Node, OpenTapes

__all__ = ["Tape", "distinct_bytes"]


def distinct_bytes(arrays):
    """Bytes of the distinct memory behind a set of arrays (views count their base once)."""
    seen = {}
    for array in arrays:
        base = array
        while getattr(base, "base", None) is not None:
            base = base.base
        seen[id(base)] = getattr(base, "nbytes", 0)
    return sum(seen.values())


class Tape:
    """The explicit, inspectable form of recording.

        with minitrain.Tape() as tape:
            loss = model(x).sum()
        tape.nodes            # every Node recorded inside the block, in order
        tape.outputs          # the tensor each of those nodes produced
        tape.saved_bytes()    # memory held for backward right now
        tape.gradient(loss, [w, b])   # gradients, without touching .grad
        tape.draw()           # the recorded graph (minitrain.viz.draw_graph)

    The tape keeps its nodes, their saved arrays and their outputs alive as long as it lives.
    """

    def __init__(self):
        self.nodes: list[Node] = []
        self.outputs: list = []

    def __enter__(self):
        with OpenTapes.lock:
            OpenTapes.count += 1
        recording.tapes.append(self)
        return self

    def __exit__(self, *exc_info):
        recording.tapes.remove(self)
        with OpenTapes.lock:
            OpenTapes.count -= 1

    def __len__(self):
        return len(self.nodes)

    def __iter__(self):
        return iter(self.nodes)

    def gradient(
        self,
        target,
        sources,
        output_gradients=None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
    ):
        """Gradients of target with respect to sources: one Tensor, or a tuple for a list."""
        grads = grad(target, sources, output_gradients, retain_graph, create_graph)
        return grads[0] if is_tensor(sources) else grads

    def saved_bytes(self) -> int:
        """Bytes of the distinct arrays the recorded nodes hold for backward (released: 0)."""
        return distinct_bytes(
            array for node in self.nodes for array in node.saved_arrays().values()
        )

    # Drawing hooks in from above: minitrain.viz sets these when it is imported (the engine knows
    # nothing of drawing). draw_graph(tape, **options) -> graphviz.Digraph; html_view(tape) -> str.
    draw_graph = None
    html_view = None

    def draw(self, **options):
        """The recorded graph as a graphviz.Digraph: every node, each tensor that no recorded
        op consumed marked as an output. Options as `minitrain.viz.draw_graph`'s."""
        if Tape.draw_graph is None:
            raise GraphError("Tape.draw: drawing needs minitrain.viz (import minitrain)")
        return Tape.draw_graph(self, **options)

    def __repr__(self):
        return f"<Tape: {len(self.nodes)} nodes, {self.saved_bytes()} bytes saved>"

    def _repr_html_(self):
        return None if Tape.html_view is None else Tape.html_view(self)

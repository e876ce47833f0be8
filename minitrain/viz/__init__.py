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

from ..autograd import Tape
from ..tensor import Tensor
from . import lazy_graphviz
from .collect import KEEP as KEEP
from .describe import kernel_formula
from .draw import COLOR_BY as COLOR_BY
from .draw import draw_graph
from .lazy_graphviz import INSTALL_GRAPHVIZ as INSTALL_GRAPHVIZ
from .lazy_graphviz import INSTALL_GRAPHVIZ_PACKAGE as INSTALL_GRAPHVIZ_PACKAGE
from .lazy_graphviz import GraphvizPackageMissingError
from .notebook import tape_html, tensor_html
from .text import text_graph

__all__ = [
    "GraphvizPackageMissingError", "kernel_formula", "draw_graph", "text_graph", "tensor_html",
    "tape_html",
]  # fmt: skip
# viz.KEEP, viz.COLOR_BY (the options' values), viz.INSTALL_GRAPHVIZ and INSTALL_GRAPHVIZ_PACKAGE
# are read too but stay out of __all__: the `X as X` imports above re-export them


def __getattr__(name: str):
    """`Graph` and `GraphvizNotFoundError`, which subclass graphviz's classes, are made on their
    first use (the first drawing), so that importing minitrain does not import graphviz."""
    if name in ("Graph", "GraphvizNotFoundError"):
        return getattr(lazy_graphviz.graphviz_types(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# The engine's Tape and Tensor show themselves through this package, which they know nothing of.
Tape.draw_graph = draw_graph
Tape.html_view = tape_html
Tensor.html_view = tensor_html

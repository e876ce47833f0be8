"""The graphviz package, imported on the first drawing (not by `import minitrain`), and
minitrain's classes on it: `Graph` (a graphviz.Digraph that says how to install Graphviz's `dot`
when it is missing) and `GraphvizNotFoundError`; `GraphvizPackageMissingError` where the package
is not installed."""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import types

from ..errors import ArgumentError, MinitrainError
from ..io import write_atomically

INSTALL_GRAPHVIZ = (
    "Rendering a graph needs Graphviz's `dot` program, which was not found on PATH. Install "
    "Graphviz (Debian/Ubuntu: sudo apt-get install graphviz; macOS: brew install graphviz; "
    "conda: conda install -c conda-forge graphviz; others: https://graphviz.org/download/). "
    "The graph itself is complete: its DOT source is in `.source`."
)


INSTALL_GRAPHVIZ_PACKAGE = (
    "Drawing a graph needs the Python package graphviz, which is not installed: pip install "
    "graphviz (minitrain's requirements include it). viz.text_graph needs no graphviz."
)


class GraphvizPackageMissingError(MinitrainError, ImportError):
    """The Python package graphviz is needed to draw a graph (draw_graph, Tape.draw) and is not
    installed. Importing minitrain, training and text_graph work without it."""

    def __init__(self, message: str = INSTALL_GRAPHVIZ_PACKAGE):
        super().__init__(message, name="graphviz")


@functools.cache
def graphviz_types() -> types.SimpleNamespace:
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
        made.__module__ = __package__  # minitrain.viz, where `viz.Graph` reaches them
    return types.SimpleNamespace(
        graphviz=graphviz, Graph=Graph, GraphvizNotFoundError=GraphvizNotFoundError
    )

"""`minitrain.compile`: capture a module's or function's calls once, replay them on arrays.

`recorder` writes down what one eager call does (the lower layers report to it through
`recording.capture`), `program` replays it (forward and backward, one node of the caller's
graph), `compiled` is the public `compile` with its guards and its fallback to eager."""

from .compiled import CompiledFunction, CompileWarning, OptimizedModule, compile  # noqa: A004

__all__ = ["CompileWarning", "CompiledFunction", "OptimizedModule", "compile"]

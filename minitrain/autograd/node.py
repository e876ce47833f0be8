"""Node, one recorded op: what the backward walk visits, how it runs an op's backward and fits
the gradients it sends to each input; BackwardScope, the scope of what a create_graph backward
records."""

from __future__ import annotations

import copy
import threading
import weakref

from .. import backend
from ..errors import GraphError
from ..runtime.background_compile import KernelNotReady, falls_back
from .deferred import materialized
from .grad_mode import recording
from .versions import clock

__all__ = [
    "BackwardScope",
    "Node",
    "OpenTapes",
    "array_backward",
    "check_saved_unwritten",
    "fit_grad",
    "unbroadcast",
]


def array_backward(op, ctx, grad):
    """`op`'s backward on arrays: its numba kernel where the forward ran one and numba is still
    on, else the generic one; the generic one, numba paused, where a numba kernel it called is
    compiling in the background (runtime/background_compile.py: a kernel raises before it
    writes, a backward writes only arrays it made, and the generic backward reads what either
    forward saved)."""
    try:
        if ctx.ran_numba and op.numba_backward is not None and backend.numba_enabled():
            return op.numba_backward(ctx, grad)
        return op.backward(ctx, grad)
    except KernelNotReady:
        pass  # run again below, outside this handler: its errors are its own
    with backend.numba_paused():
        return op.backward(ctx, grad)


falls_back(array_backward)


def check_saved_unwritten(op, ctx, seq: int) -> None:
    """Refuse a value `op`'s forward saved in `ctx` whose memory an in-place op wrote after clock
    number `seq`, when it ran (an in-place op's own saved output: after its write): a Node's
    check, and a compiled program's for each op it replays (minitrain.capture)."""
    saved = ctx.__dict__
    for name in op.saved:
        value = saved.get(name)
        if value is None or not hasattr(value, "base"):
            continue
        since = ctx.out_written if name == "out" and ctx.out_written is not None else seq
        written = clock.written_since(value, since)
        if written is not None:
            raise GraphError(
                f"{op.grad_kernel}: '{name}', a value {op.name} saved for its backward, was "
                f"modified by an in-place operation: saved at version {written[0]}, now at "
                f"version {written[1]}. Change it only after this backward (an optimizer's "
                f"step() before backward() is the usual cause: call backward first), or write "
                f"into a clone of it instead"
            )


class OpenTapes:
    """How many Tapes are open, in all threads (tape.py counts them): recording a Node looks
    for this thread's tapes only while one is."""

    count = 0
    lock = threading.Lock()


class Node:
    """One recorded op: the unit the backward walk visits.

    `parents[i]` is where input i's gradient goes: the Node that produced it, the leaf Tensor
    itself, or None when input i needs no gradient. `output` is a weak reference to the tensor
    the op produced (the graph does not keep outputs alive; a Tape does). `scope` is the
    innermost scope open when the op was recorded (`recording.scope`: the Module whose forward
    ran it, None outside any), so a drawing can group a layer's ops. `superseded`: an in-place
    op has since made this node's output another node's output (a view taken from it before is
    stale: versions.check_view_current).
    """

    __slots__ = (
        "op",
        "ctx",
        "parents",
        "seq",
        "output",
        "scope",
        "hooks",
        "retains_grad",
        "superseded",
        "__weakref__",
    )

    def __init__(self, op, ctx, parents, output):
        self.op = op
        self.ctx = ctx
        self.parents = parents
        self.seq = next(clock.numbers)
        self.output = weakref.ref(output)
        self.scope = recording.scope
        self.hooks = None  # hooks registered on the (non-leaf) tensor this node produced
        self.retains_grad = False  # set by output.retain_grad()
        self.superseded = False  # set by an in-place op on the output (versions.supersede)
        if OpenTapes.count:  # any thread: only then look at this thread's tapes
            for tape in recording.tapes:
                tape.nodes.append(self)
                tape.outputs.append(output)

    @property
    def name(self) -> str:
        """The display name of this node's backward kernel (MulGrad, ConvGrad, ...)."""
        return self.op.grad_kernel

    def saved_arrays(self) -> dict:
        """The arrays this node still holds for its backward, by name (empty once released)."""
        return self.ctx.saved_values()

    def run_backward(self, grad, create_graph: bool = False, needs=None, lazy=False) -> tuple:
        """The op's backward for `grad`, the gradient of this node's output: one array (or None)
        per input, as the op returns them (`fit_input_grad` brings each to its input). Runs the
        numba kernel where the forward ran one and numba is still on; frees nothing. `needs`
        narrows `ctx.needs_grad` for this call (grad() asks only for what leads to its inputs).

        With `create_graph`, `grad` is a Tensor and the op's backward runs in tensor ops,
        recorded (`Op.run_tensor_backward`): the gradients come back as Tensors with graphs.
        With `lazy`, an op's DeferredSum gradients come back as they are (the walk sums them;
        deferred.py); otherwise as arrays."""
        ctx, op = self.ctx, self.op
        if ctx.released:
            raise self.freed_error()
        if clock.latest_write > self.seq:  # an in-place write since this op ran
            self.check_saved_unwritten()
        if create_graph:
            outer, recording.scope = recording.scope, BackwardScope(self)
            try:
                grads = op.run_tensor_backward(self, grad, needs)
            finally:
                recording.scope = outer
        else:
            if needs is not None:  # on a copy of the ctx: another thread may walk this node too
                ctx = copy.copy(ctx)
                ctx.needs_grad = needs
            grads = array_backward(op, ctx, grad)
        if type(grads) is not tuple:
            grads = (grads,)
        if not lazy and not create_graph:
            grads = tuple(materialized(g) for g in grads)
        if len(grads) != len(self.parents):
            raise self.count_error(grads)
        return grads

    def count_error(self, grads) -> GraphError:
        """The error of a backward that returned `grads`, not one gradient per input."""
        return GraphError(
            f"{self.name}: backward returned {len(grads)} gradients for {len(self.parents)} inputs"
        )

    def check_saved_unwritten(self) -> None:
        """Refuse a saved value whose memory an in-place op wrote after this op was recorded
        (an in-place op's own saved output: after its write)."""
        check_saved_unwritten(self.op, self.ctx, self.seq)

    def freed_error(self) -> GraphError:
        """The error of a backward through this node after its saved values were freed."""
        return GraphError(
            f"{self.name}: trying to backward through the graph a second time; its saved "
            f"values were freed after the first backward. Pass retain_graph=True to the "
            f"first backward (or grad) call if you need to walk the graph again."
        )

    def fit_input_grad(self, index: int, grad):
        """Input `index`'s gradient brought to that input's shape (summed over the dims a
        broadcasting op stretched) and dtype: the engine's share of every backward rule. An
        array, or a Tensor under create_graph (the same methods then record the sum and cast)."""
        ctx = self.ctx
        return fit_grad(self.op, index, materialized(grad), ctx.shapes[index], ctx.dtypes[index])

    def __repr__(self):
        return f"<{self.name} #{self.seq}>"


def fit_grad(op, index: int, grad, shape: tuple, dtype):
    """`op`'s gradient for input `index` brought to that input's `shape` (summed over the dims
    a broadcasting op stretched; any other mismatch is the op's error) and `dtype`: a Node's
    fit_input_grad, and a compiled program's for each op it replays (minitrain.capture)."""
    if grad.shape != shape:
        if not op.broadcast:
            raise GraphError(
                f"{op.grad_kernel}: backward returned a gradient of shape {grad.shape} for input "
                f"'{op.input_name(index)}' of shape {shape}"
            )
        grad = unbroadcast(grad, shape)
    if grad.dtype != dtype:
        grad = grad.astype(dtype)
    return grad


class BackwardScope:
    """The scope (`Node.scope`) of the ops a create_graph backward records, so that a drawing
    can tell them from the forward's: the name and sequence number of the node whose backward
    recorded them (not the node: the gradient's graph must not keep it and its saved values
    alive), None for the engine's own sums, unbroadcasts and casts of gradients."""

    __slots__ = ("name", "seq")

    def __init__(self, node=None):
        self.name = None if node is None else node.name
        self.seq = None if node is None else node.seq


def unbroadcast(grad, shape: tuple):
    """Sum a gradient over the dims broadcasting added or stretched, back down to `shape`."""
    if grad.shape == shape:
        return grad
    extra = grad.ndim - len(shape)
    axes = tuple(range(extra)) + tuple(
        extra + i for i, n in enumerate(shape) if n == 1 and grad.shape[extra + i] != 1
    )
    reduced = grad.sum(axis=axes, keepdims=True) if axes else grad
    return reduced.reshape(shape)

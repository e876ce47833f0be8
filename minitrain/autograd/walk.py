"""The backward walk: gradients propagated from roots to leaves by popping Nodes from a max-heap
keyed by sequence number (recording order is a topological order, so every consumer of a
node's output has sent its gradient when the node is popped; no recursion, so chains of any
length work), and the graph read without running it (graph_nodes, replay_backward)."""

from __future__ import annotations

import heapq
import operator
import sys

import numpy as np

from ..errors import ShapeError
from ..runtime import background_compile
from .anomaly import check_backward
from .deferred import DeferredSum
from .grad_mode import enable_grad, recording
from .hooks import fire_ready, queued_callbacks, ready_watch, run_hooks, watching_ready
from .node import BackwardScope, Node, array_backward
from .versions import clock

__all__ = ["check_accumulates", "graph_nodes", "propagate", "replay_backward"]

_NONE_FIRED = frozenset()


def _sole_owner(grad, leaf) -> bool:
    """Whether the engine may hand `grad` to the leaf as its .grad without a copy, as PyTorch's
    AccumulateGrad steals a gradient nobody else holds: a writeable numpy array that owns its
    memory (no view of saved values or of another gradient), in the leaf's dtype, referenced
    only by the flush loop's variable (an array sent to two leaves, kept by a hook or given by
    the user has more references, and is copied)."""
    return (
        type(grad) is np.ndarray
        and grad.base is None
        and grad.flags.writeable
        and grad.dtype == leaf.dtype
        # the caller's variable, this parameter, getrefcount's argument; a Python that counts
        # differently only makes this False, and the gradient is copied
        and sys.getrefcount(grad) <= 3
    )


def propagate(
    roots,
    seeds,
    retain_graph: bool = False,
    capture=None,
    create_graph: bool = False,
    then=None,
    ready_hooks: bool = False,
):
    """Propagate gradients from `roots` (tensors) seeded with `seeds`: the backward walk.

    Without `capture`, leaf gradients accumulate into `.grad` (and retained non-leaf ones too),
    once the whole walk and every leaf's hooks have run: an error leaves every `.grad` as it was.
    With `capture` (a sequence of tensors), nothing's `.grad` is touched: the gradients reaching
    those tensors are returned, in order, None where none arrived; as PyTorch's, the walk runs
    only the nodes with a captured tensor below them, so the rest keep their saved values and
    their hooks do not fire.

    The seeds, and so every gradient of the walk, are arrays; with `create_graph` they are
    Tensors, each node's backward runs in tensor ops with recording on (whatever the caller's
    grad mode), and the gradients it hands out carry the graph of how they were computed.

    `then(found)`, where given, runs after the walk with what it returned, before the callbacks
    hooks queued (`queue_callback`), which run last. `ready_hooks`: with `capture`, fire the
    gradient-ready hooks of the captured leaves too (backward(inputs=...), whose `then` adds
    their gradients to `.grad`); without it they fire for every leaf, and grad() fires none.
    """
    if background_compile.holding_blas:  # BLAS back to its threads once kernels are compiled
        background_compile.release_blas_when_done()
    with queued_callbacks(capture) as callbacks:  # queue_callback's, run after the walk
        if not create_graph:
            found = _walk(roots, seeds, retain_graph, capture, False, ready_hooks)
        else:
            outer, recording.scope = recording.scope, BackwardScope()
            try:
                with enable_grad():
                    found = _walk(roots, seeds, retain_graph, capture, True, ready_hooks)
            finally:
                recording.scope = outer
        if then is not None:
            then(found)
        for callback in callbacks:  # a callback may queue another: the loop sees it
            callback()
    return found


def _walk(roots, seeds, retain_graph, capture, create_graph, ready_hooks=False):
    anomaly = recording.anomaly
    pending: dict = {}  # Node -> gradient of its output, summed over its consumers so far
    leaf_grads: dict = {}  # id(leaf) -> [leaf, summed gradient]
    heap: list = []
    retained: list = []  # (non-leaf tensor, its gradient), for .grad once the walk is done
    captured: dict = {}  # position in capture -> gradient
    capture_nodes: dict = {}  # Node -> positions in capture of the tensors it produced
    capture_leaves: dict = {}  # id(leaf) -> positions in capture
    for position, tensor in enumerate(capture or ()):
        if tensor.node is None:
            capture_leaves.setdefault(id(tensor), []).append(position)
        else:
            capture_nodes.setdefault(tensor.node, []).append(position)
    runs = None  # the nodes whose backward runs: all of them, unless capturing
    if capture is not None:
        runs = _nodes_above(roots, capture_nodes, capture_leaves)

    def send(target, grad):
        if type(target) is Node:
            if target in pending:
                pending[target] = pending[target] + grad
            else:
                pending[target] = grad
                heapq.heappush(heap, (-target.seq, target))
        elif id(target) in leaf_grads:
            entry = leaf_grads[id(target)]
            entry[1] = entry[1] + grad
        else:
            leaf_grads[id(target)] = [target, grad]

    for root, grad in zip(roots, seeds, strict=True):
        send(root.node if root.node is not None else root, grad)
    fired = _NONE_FIRED  # leaves whose hooks ran when their gradient became final
    watch = None
    if watching_ready() and (capture is None or ready_hooks):
        watch = ready_watch(roots)
        if capture is not None:
            watch = [entry for entry in watch if entry[1] in capture_leaves]
    if watch:
        fired = set()
        fire_ready(watch, -heap[0][0] if heap else -1, leaf_grads, fired, create_graph)

    plain = runs is None and not create_graph and not anomaly  # the inlined backward serves
    while heap:
        node = heapq.heappop(heap)[1]
        grad = pending.pop(node)
        if isinstance(grad, DeferredSum):
            grad = grad.value()
        if runs is not None and node not in runs:
            if node in capture_nodes:  # a captured tensor with nothing captured below it
                if node.hooks:
                    grad = run_hooks(node.hooks, grad, node)
                for position in capture_nodes[node]:
                    captured[position] = grad
            continue
        ctx = node.ctx
        if ctx.released:  # before its hooks run
            raise node.freed_error()
        if node.hooks:
            grad = run_hooks(node.hooks, grad, node)
        if capture is None:
            if node.retains_grad and (tensor := node.output()) is not None:
                retained.append((tensor, grad))
        elif node in capture_nodes:
            for position in capture_nodes[node]:
                captured[position] = grad
        op = node.op
        if not plain:
            grads = node.run_backward(
                grad, create_graph, None if runs is None else runs[node], lazy=not anomaly
            )
        else:  # node.run_backward(grad, lazy=True), inlined: the common case of the hot loop
            if clock.latest_write > node.seq:  # an in-place write since this op ran
                node.check_saved_unwritten()
            grads = array_backward(op, ctx, grad)
            if type(grads) is not tuple:
                grads = (grads,)
            if len(grads) != len(node.parents):
                raise node.count_error(grads)
        if anomaly:
            if create_graph:
                check_backward(node, grad.array, [None if g is None else g.array for g in grads])
            else:
                check_backward(node, grad, grads)
        if not retain_graph and op.saved:
            ctx.release()
        shapes, dtypes = ctx.shapes, ctx.dtypes
        for index, parent in enumerate(node.parents):
            if parent is None or (g := grads[index]) is None:
                continue
            # `is not`, cheaper than `!=`: an equal dtype object of another identity only costs
            # fit_input_grad's look, which leaves it be
            if g.shape != shapes[index] or g.dtype is not dtypes[index]:
                g = node.fit_input_grad(index, g)
            if type(parent) is Node:  # send(parent, g), inlined: this loop is the hot path
                if parent in pending:
                    pending[parent] = pending[parent] + g
                else:
                    pending[parent] = g
                    heapq.heappush(heap, (-parent.seq, parent))
            else:
                send(parent, g)
        if watch and watch[-1][0] > (next_seq := -heap[0][0] if heap else -1):
            fire_ready(watch, next_seq, leaf_grads, fired, create_graph)

    if watch:  # capturing, the last node to pop may have been one that does not run
        fire_ready(watch, -1, leaf_grads, fired, create_graph)
    # every hook and check runs before the first .grad changes: an error leaves them all as is
    for key, entry in leaf_grads.items():
        leaf = entry[0]
        if key not in fired:
            if isinstance(entry[1], DeferredSum):
                entry[1] = entry[1].value()
            if leaf._hooks and (capture is None or key in capture_leaves):
                entry[1] = run_hooks(leaf._hooks, entry[1], leaf)
        if capture is None and leaf._grad is not None:
            check_accumulates(leaf)
    grads = g = grad = entry = None  # drop the walk's references: the flush below counts them
    if capture is not None:
        for key, positions in capture_leaves.items():
            if key in leaf_grads:
                for position in positions:
                    captured[position] = leaf_grads[key][1]
        return [captured.get(i) for i in range(len(capture))]
    for tensor, _ in retained:
        if tensor._grad is not None:
            check_accumulates(tensor)
    for tensor, grad in retained:
        tensor._accumulate_grad(grad)
    retained = tensor = grad = None
    for key in list(leaf_grads):
        leaf, grad = leaf_grads.pop(key)
        owned = not create_graph and _sole_owner(grad, leaf)  # not inside the call: a ref
        leaf._accumulate_grad(grad, owned)
    return None


def check_accumulates(tensor) -> None:
    """A `.grad` assigned by hand must have its tensor's shape for backward to add to it."""
    if tensor._grad.shape != tensor.shape:
        raise ShapeError(
            f"backward: cannot accumulate into the .grad of a tensor of shape {tensor.shape}: "
            f"its .grad (assigned by hand) has shape {tensor._grad.shape}"
        )


def _nodes_above(roots, capture_nodes, capture_leaves) -> dict:
    """The nodes between `roots` and the captured tensors, those whose backward grad() runs
    (PyTorch's exec_info), each with the inputs whose gradients it must compute where that is
    fewer than its forward recorded (None: all of them): those with a captured node or leaf at
    or below them. A backward computes only those, as PyTorch's does (needs_grad narrowed): a
    gradient penalty's weights get no gradient nobody asked for."""
    runs: dict = {}

    def leads(parent) -> bool:
        if type(parent) is Node:
            return parent in runs or parent in capture_nodes
        return parent is not None and id(parent) in capture_leaves

    for node in graph_nodes(roots):  # inputs before the nodes that consume them
        parents = node.parents
        if len(parents) == 1:  # nothing to narrow: the common case, kept cheap
            if leads(parents[0]):
                runs[node] = None
            continue
        needed = tuple(map(leads, parents))
        if any(needed):
            runs[node] = None if needed == node.ctx.needs_grad else needed
    return runs


_by_seq = operator.attrgetter("seq")


def graph_nodes(tensors) -> list:
    """Every Node the tensors were computed by, in recording order (inputs before the nodes
    that consume them)."""
    stack = [t.node for t in tensors if t.node is not None]
    reachable = set(stack)
    while stack:  # iterative: graphs of any depth
        for parent in stack.pop().parents:
            if type(parent) is Node and parent not in reachable:
                reachable.add(parent)
                stack.append(parent)
    return sorted(reachable, key=_by_seq)


def replay_backward(outputs) -> dict:
    """Every gradient a backward from `outputs` (each seeded with ones) computes, by Node (the
    gradient of its output) and by id(leaf): a read-only look at the recorded graph, as a
    drawing shows it. Each op's backward runs on its saved values, consumers first, as in
    `backward`, but nothing is freed, no hook fires and no `.grad` changes. A node whose saved
    values were freed raises its GraphError."""
    grads: dict = {}

    def add(key, grad):
        grads[key] = grads[key] + grad if key in grads else grad

    for t in outputs:
        add(id(t) if t.node is None else t.node, t.xp.ones_like(t.array))
    for node in reversed(graph_nodes(outputs)):
        if node not in grads:
            continue
        for index, (parent, grad) in enumerate(
            zip(node.parents, node.run_backward(grads[node]), strict=True)
        ):
            if parent is not None and grad is not None:
                add(
                    parent if type(parent) is Node else id(parent), node.fit_input_grad(index, grad)
                )
    return grads

"""The graph and its walk: Node, the Tape, and the backward engine (the grad modes it follows
are in grad_mode.py).

Recording an op creates a Node holding the op, its ctx (attributes and saved arrays), references to
the nodes (or leaf tensors) that produced its inputs, and a sequence number from a global counter.
Recording order is a topological order, so backward pops nodes from a max-heap keyed by sequence
number: every consumer of a node's output has a larger number and has already sent its gradient
when the node is popped. No recursion, so chains of any length work.
"""

from __future__ import annotations

import copy
import heapq
import operator
import sys
import threading
import weakref

import numpy as np

from .. import backend
from ..errors import DTypeError, GraphError, ShapeError
from ..inplace import superseded
from . import versions
from .anomaly import check_backward
from .deferred import DeferredSum, materialized
from .grad_mode import enable_grad, recording

_tape_count_lock = threading.Lock()
# Leaves with gradient-ready hooks: id(leaf) -> (weak reference to the leaf, its hooks). A walk
# looks for them only while this is not empty (DistributedDataParallel registers them).
_ready_hooks: dict = {}
_NONE_FIRED = frozenset()
# .stack: the callbacks queued (queue_callback) for each backward running in this thread
_queued = threading.local()


class Node:
    """One recorded op: the unit the backward walk visits.

    `parents[i]` is where input i's gradient goes: the Node that produced it, the leaf Tensor
    itself, or None when input i needs no gradient. `output` is a weak reference to the tensor
    the op produced (the graph does not keep outputs alive; a Tape does). `scope` is the
    innermost scope open when the op was recorded (`recording.scope`: the Module whose forward
    ran it, None outside any), so a drawing can group a layer's ops.
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
        "__weakref__",
    )

    def __init__(self, op, ctx, parents, output):
        self.op = op
        self.ctx = ctx
        self.parents = parents
        self.seq = next(versions.clock)
        self.output = weakref.ref(output)
        self.scope = recording.scope
        self.hooks = None  # hooks registered on the (non-leaf) tensor this node produced
        self.retains_grad = False  # set by output.retain_grad()
        if Tape.open_count:  # any thread: only then look at this thread's tapes
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
        if versions.latest_write > self.seq:  # an in-place write since this op ran
            self._check_saved_unwritten()
        if create_graph:
            outer, recording.scope = recording.scope, BackwardScope(self)
            try:
                grads = op.run_tensor_backward(self, grad, needs)
            finally:
                recording.scope = outer
        elif needs is not None:  # on a copy of the ctx: another thread may walk this node too
            narrowed = copy.copy(ctx)
            narrowed.needs_grad = needs
            if ctx.ran_numba and op.numba_backward is not None and backend.numba_enabled():
                grads = op.numba_backward(narrowed, grad)
            else:
                grads = op.backward(narrowed, grad)
        elif ctx.ran_numba and op.numba_backward is not None and backend.numba_enabled():
            grads = op.numba_backward(ctx, grad)
        else:
            grads = op.backward(ctx, grad)
        if type(grads) is not tuple:
            grads = (grads,)
        if not lazy and not create_graph:
            grads = tuple(materialized(g) for g in grads)
        if len(grads) != len(self.parents):
            raise GraphError(
                f"{self.name}: backward returned {len(grads)} gradients for "
                f"{len(self.parents)} inputs"
            )
        return grads

    def _check_saved_unwritten(self) -> None:
        """Refuse a saved value whose memory an in-place op wrote after this op was recorded
        (an in-place op's own saved output: after its write)."""
        ctx = self.ctx
        saved = ctx.__dict__
        for name in self.op.saved:
            value = saved.get(name)
            if value is None or not hasattr(value, "base"):
                continue
            since = ctx.out_written if name == "out" and ctx.out_written is not None else self.seq
            written = versions.written_since(value, since)
            if written is not None:
                raise GraphError(
                    f"{self.name}: '{name}', a value {self.op.name} saved for its backward, was "
                    f"modified by an in-place operation: saved at version {written[0]}, now at "
                    f"version {written[1]}. Clone it before changing it, or change it after "
                    f"backward"
                )

    def check_view_current(self) -> None:
        """Refuse to use the output of this view node where an in-place op has made its base
        another node's output since the view was taken: the view's values changed with the
        base, but its gradient would go to the base's old node."""
        origin = self.parents[0]
        while type(origin) is Node and origin.ctx.is_view:
            origin = origin.parents[0]
        if type(origin) is Node and origin in superseded:
            raise GraphError(
                f"{self.op.name}: this view was taken from the output of {origin.op.name} "
                f"before that tensor changed in place; take the view after the change, or "
                f"change a clone"
            )

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
        shape, dtype = self.ctx.shapes[index], self.ctx.dtypes[index]
        grad = materialized(grad)
        if grad.shape != shape:
            if not self.op.broadcast:
                raise GraphError(
                    f"{self.name}: backward returned a gradient of shape {grad.shape} for input "
                    f"'{self.op.input_name(index)}' of shape {shape}"
                )
            grad = unbroadcast(grad, shape)
        if grad.dtype != dtype:
            grad = grad.astype(dtype)
        return grad

    def __repr__(self):
        return f"<{self.name} #{self.seq}>"


class BackwardScope:
    """The scope (`Node.scope`) of the ops a create_graph backward records, so that a drawing
    can tell them from the forward's: the name and sequence number of the node whose backward
    recorded them (not the node: the gradient's graph must not keep it and its saved values
    alive), None for the engine's own sums, unbroadcasts and casts of gradients."""

    __slots__ = ("name", "seq")

    def __init__(self, node=None):
        self.name = None if node is None else node.name
        self.seq = None if node is None else node.seq


class RemovableHandle:
    """What register_hook returns: `handle.remove()` takes the hook off again."""

    def __init__(self, hooks: list, hook):
        self._hooks = hooks
        self._hook = hook

    def remove(self) -> None:
        """Take the hook off."""
        for index, hook in enumerate(self._hooks):
            if hook is self._hook:  # identity: hooks need not compare sensibly with ==
                del self._hooks[index]
                return


def _run_hooks(hooks, grad, owner):
    """Pass `grad` through the hooks in registration order; a returned Tensor or array, of the
    gradient's shape and dtype, replaces it. `owner` (a leaf, or the Node of a non-leaf) is
    named in errors. `grad` is an array, or under create_graph a Tensor with its graph: the
    hook then sees that Tensor, and a Tensor it returns keeps its graph."""
    from ..tensor import Tensor

    graph = isinstance(grad, Tensor)
    for hook in tuple(hooks):  # a copy: a hook may remove itself (or another) while running
        result = hook(grad if graph else Tensor(grad))
        if result is None:
            continue
        new = result.data if isinstance(result, Tensor) else result
        if isinstance(new, np.generic):  # numpy arithmetic on a 0-d array gives a scalar
            new = backend.array_module(new).asarray(new)
        if not backend.is_array(new) or new.shape != grad.shape or new.dtype != grad.dtype:
            _refuse_hook_result(hook, result, new, grad, owner)
        if graph:
            grad = result if isinstance(result, Tensor) else Tensor.wrap(new)
        else:
            grad = new
    return grad


def _refuse_hook_result(hook, result, new, grad, owner):
    name = getattr(hook, "__name__", hook)
    whose = f"the output of {owner.op.name}" if type(owner) is Node else "a leaf tensor"
    if not backend.is_array(new):
        raise DTypeError(
            f"register_hook: hook {name!r} returned a {type(result).__name__} for {whose}; "
            f"return a Tensor or None"
        )
    if new.shape != grad.shape:
        raise ShapeError(
            f"register_hook: hook {name!r} returned a gradient of shape {new.shape} for "
            f"{whose} of shape {grad.shape}"
        )
    raise DTypeError(
        f"register_hook: hook {name!r} returned a gradient of dtype {new.dtype} for {whose} "
        f"of dtype {grad.dtype}"
    )


class _ReadyHookHandle(RemovableHandle):
    """A gradient-ready hook's handle: removing the last hook of a leaf forgets the leaf, so
    that walks stop looking for ready hooks once none is left."""

    def __init__(self, key: int, hooks: list, hook):
        super().__init__(hooks, hook)
        self._key = key

    def remove(self) -> None:
        super().remove()
        entry = _ready_hooks.get(self._key)
        if entry is not None and entry[1] is self._hooks and not self._hooks:
            del _ready_hooks[self._key]


def register_gradient_ready_hook(tensor, hook) -> RemovableHandle:
    """Call `hook(tensor, grad)` during each backward as soon as the gradient the leaf `tensor`
    gets from that backward is final: every node that sends to it has run (or will not run),
    and so have its own hooks (register_hook). `grad` is a Tensor, the sum the walk will add to
    `tensor.grad` once it is done; `.grad` itself has not changed yet, and does not if a later
    node raises. Modelled on PyTorch's register_post_accumulate_grad_hook, which fires once
    `.grad` has changed: minitrain changes every `.grad` at the end of the walk (an error
    leaves them all as they were), so what runs after that goes to `queue_callback`. The hooks
    do not fire in grad() or backward(inputs=...). Returns a handle whose remove() takes the
    hook off."""
    if getattr(tensor, "node", True) is not None or not tensor.requires_grad:
        raise GraphError(
            "register_gradient_ready_hook: the tensor must be a leaf that requires grad"
        )
    if not callable(hook):
        raise DTypeError(
            f"register_gradient_ready_hook: hook must be callable, got {type(hook).__name__}"
        )
    key = id(tensor)
    entry = _ready_hooks.get(key)
    if entry is None:
        entry = (weakref.ref(tensor, lambda _, key=key: _ready_hooks.pop(key, None)), [])
        _ready_hooks[key] = entry
    entry[1].append(hook)
    return _ReadyHookHandle(key, entry[1], hook)


def queue_callback(callback) -> None:
    """Run `callback()` once the backward running in this thread is done: after its last node
    and after every `.grad` has changed, as PyTorch's `queue_callback` (callbacks run in the
    order queued; one may queue another). Call it from a hook; a backward that raises runs
    none."""
    stack = getattr(_queued, "stack", None)
    if not stack:
        raise GraphError(
            "queue_callback: no backward is running in this thread; call it from a hook"
        )
    if not callable(callback):
        raise DTypeError(
            f"queue_callback: callback must be callable, got {type(callback).__name__}"
        )
    stack[-1].append(callback)


def _ready_watch(roots) -> list:
    """The leaves below `roots` that have gradient-ready hooks, each as [seq, id, leaf], seq the
    smallest sequence number among the nodes that send to it (infinite for a root no node sends
    to): its gradient is final once no node left to run has a number as large. Sorted so that
    the leaf to become final first is last."""
    first = {
        id(r): [float("inf"), id(r), r] for r in roots if r.node is None and id(r) in _ready_hooks
    }
    stack = [r.node for r in roots if r.node is not None]
    seen = set(stack)
    while stack:  # iterative: graphs of any depth
        node = stack.pop()
        for parent in node.parents:
            if type(parent) is Node:
                if parent not in seen:
                    seen.add(parent)
                    stack.append(parent)
            elif parent is not None and id(parent) in _ready_hooks:
                entry = first.get(id(parent))
                if entry is None:
                    first[id(parent)] = [node.seq, id(parent), parent]
                elif node.seq < entry[0]:
                    entry[0] = node.seq
    return sorted(first.values(), key=operator.itemgetter(0))


def _fire_ready(watch: list, next_seq, leaf_grads: dict, fired: set, graph: bool) -> None:
    """Fire the ready hooks of the watched leaves whose gradient is final now that the next node
    to run has sequence number `next_seq` (-1: none is left): their own hooks first."""
    from ..tensor import Tensor

    while watch and watch[-1][0] > next_seq:
        _, key, leaf = watch.pop()
        entry = leaf_grads.get(key)
        if entry is None:  # no gradient reached it
            continue
        if isinstance(entry[1], DeferredSum):
            entry[1] = entry[1].value()
        if leaf._hooks:
            entry[1] = _run_hooks(leaf._hooks, entry[1], leaf)
        fired.add(key)
        hooks = _ready_hooks.get(key)
        if hooks:
            grad = entry[1] if graph else Tensor.wrap(entry[1])
            for hook in tuple(hooks[1]):
                hook(leaf, grad)


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
    roots, seeds, retain_graph: bool = False, capture=None, create_graph: bool = False, then=None
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
    hooks queued (`queue_callback`), which run last.
    """
    stack = getattr(_queued, "stack", None)
    if stack is None:
        stack = _queued.stack = []
    callbacks: list = []  # queue_callback's, run once the walk is done
    stack.append(callbacks)
    try:
        if not create_graph:
            found = _walk(roots, seeds, retain_graph, capture, False)
        else:
            outer, recording.scope = recording.scope, BackwardScope()
            try:
                with enable_grad():
                    found = _walk(roots, seeds, retain_graph, capture, True)
            finally:
                recording.scope = outer
        if then is not None:
            then(found)
        for callback in callbacks:  # a callback may queue another: the loop sees it
            callback()
    finally:
        stack.pop()
    return found


def _walk(roots, seeds, retain_graph, capture, create_graph):
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
    watch = _ready_watch(roots) if _ready_hooks and capture is None else None
    if watch:
        fired = set()
        _fire_ready(watch, -heap[0][0] if heap else -1, leaf_grads, fired, create_graph)

    while heap:
        node = heapq.heappop(heap)[1]
        grad = pending.pop(node)
        if isinstance(grad, DeferredSum):
            grad = grad.value()
        if runs is not None and node not in runs:
            if node in capture_nodes:  # a captured tensor with nothing captured below it
                if node.hooks:
                    grad = _run_hooks(node.hooks, grad, node)
                for position in capture_nodes[node]:
                    captured[position] = grad
            continue
        if node.ctx.released:  # before its hooks run
            raise node.freed_error()
        if node.hooks:
            grad = _run_hooks(node.hooks, grad, node)
        if capture is None:
            if node.retains_grad and (tensor := node.output()) is not None:
                retained.append((tensor, grad))
        elif node in capture_nodes:
            for position in capture_nodes[node]:
                captured[position] = grad
        grads = node.run_backward(
            grad, create_graph, None if runs is None else runs[node], lazy=not anomaly
        )
        if anomaly:
            if create_graph:
                check_backward(node, grad.data, [None if g is None else g.data for g in grads])
            else:
                check_backward(node, grad, grads)
        ctx = node.ctx
        if not retain_graph and node.op.saved:
            ctx.release()
        shapes, dtypes = ctx.shapes, ctx.dtypes
        for index, parent in enumerate(node.parents):
            if parent is None or (g := grads[index]) is None:
                continue
            if g.shape != shapes[index] or g.dtype != dtypes[index]:
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
            _fire_ready(watch, next_seq, leaf_grads, fired, create_graph)

    # every hook and check runs before the first .grad changes: an error leaves them all as is
    for key, entry in leaf_grads.items():
        leaf = entry[0]
        if key not in fired:
            if isinstance(entry[1], DeferredSum):
                entry[1] = entry[1].value()
            if leaf._hooks and (capture is None or key in capture_leaves):
                entry[1] = _run_hooks(leaf._hooks, entry[1], leaf)
        if capture is None and leaf._grad is not None:
            _check_accumulates(leaf)
    grads = g = grad = entry = None  # drop the walk's references: the flush below counts them
    if capture is not None:
        for key, positions in capture_leaves.items():
            if key in leaf_grads:
                for position in positions:
                    captured[position] = leaf_grads[key][1]
        return [captured.get(i) for i in range(len(capture))]
    for tensor, _ in retained:
        if tensor._grad is not None:
            _check_accumulates(tensor)
    for tensor, grad in retained:
        tensor._accumulate_grad(grad)
    retained = tensor = grad = None
    for key in list(leaf_grads):
        leaf, grad = leaf_grads.pop(key)
        owned = not create_graph and _sole_owner(grad, leaf)  # not inside the call: a ref
        leaf._accumulate_grad(grad, owned)
    return None


def _check_accumulates(tensor) -> None:
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
        add(id(t) if t.node is None else t.node, t.xp.ones_like(t.data))
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


def root_grads(outputs, grad_outputs, op_name, create_graph: bool = False):
    """Check roots and build their seed gradients (ones for a one-element output): arrays, or
    under create_graph Tensors (a given gradient that requires grad stays in its graph, so the
    gradients computed from it are differentiable with respect to it too)."""
    from ..tensor import Tensor

    seeds = []
    for i, (out, grad) in enumerate(zip(outputs, grad_outputs, strict=True)):
        node = getattr(out, "node", None)
        if node is not None and node.seq < versions.latest_rebind and node.ctx.is_view:
            node.check_view_current()
        if not isinstance(out, Tensor):
            raise GraphError(f"{op_name}: outputs[{i}] is a {type(out).__name__}, not a Tensor")
        if not out.requires_grad:
            raise GraphError(
                f"{op_name}: outputs[{i}] does not require grad and has no graph "
                f"(was it computed under no_grad, or from tensors with requires_grad=False?)"
            )
        xp = out.xp
        if grad is None:
            if out.data.size != 1:
                raise GraphError(
                    f"{op_name}: a gradient can be created implicitly only for outputs with one "
                    f"element; outputs[{i}] has shape {out.shape}: pass its gradient explicitly"
                )
            seeds.append(xp.ones_like(out.data))
            continue
        array = grad.data if isinstance(grad, Tensor) else xp.asarray(grad)
        if array.dtype.kind not in "biuf":  # PyTorch casts other real dtypes, refuses complex
            raise DTypeError(
                f"{op_name}: gradient for outputs[{i}] has dtype {array.dtype}, which cannot "
                f"be cast to the output's {out.dtype}"
            )
        if array.shape != out.shape:
            raise ShapeError(
                f"{op_name}: gradient for outputs[{i}] has shape {array.shape}, "
                f"but the output has shape {out.shape}"
            )
        if create_graph and isinstance(grad, Tensor) and grad.requires_grad:
            seeds.append(grad if grad.dtype == out.dtype else grad.astype(out.dtype))
            continue
        seeds.append(array.astype(out.dtype, copy=False))
    if create_graph:
        return [s if isinstance(s, Tensor) else Tensor.wrap(s) for s in seeds]
    return seeds


def _as_list(tensors):
    from ..tensor import Tensor

    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def _grad_outputs_for(outputs, grad_outputs, caller, one_output: bool = False):
    """The per-output list of given gradients (None: ones for a one-element output);
    `one_output`: the caller gave one tensor, whose one gradient may be an array or a list."""
    from ..tensor import Tensor

    if grad_outputs is None:
        return [None] * len(outputs)
    if isinstance(grad_outputs, Tensor) or one_output:
        grad_outputs = [grad_outputs]
    grad_outputs = list(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise ShapeError(f"{caller}: got {len(grad_outputs)} gradients for {len(outputs)} outputs")
    return grad_outputs


def _check_wrt(inputs, caller, argument):
    from ..tensor import Tensor

    if not inputs:
        raise GraphError(
            f"{caller}: `{argument}` is empty; pass the tensors to differentiate with respect to"
        )
    for i, t in enumerate(inputs):
        if not isinstance(t, Tensor) or not t.requires_grad:
            raise GraphError(f"{caller}: {argument}[{i}] is not a tensor that requires grad")


def backward(
    tensors,
    grad_tensors=None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs=None,
) -> None:
    """Accumulate the gradients of `tensors` into the leaves' `.grad`, as
    `torch.autograd.backward`: `grad_tensors` are the gradients of `tensors` (None: ones, for
    one-element tensors); the saved values are freed unless `retain_graph` (which defaults to
    `create_graph`); with `create_graph` the backward is itself recorded and each `.grad`
    carries the graph of how it was computed, for a derivative of the derivative; `inputs`, when
    given, are the only tensors (leaves or not) whose `.grad` receives anything."""
    from ..tensor import Tensor

    one_output = isinstance(tensors, Tensor)
    tensors = _as_list(tensors)
    grad_tensors = _grad_outputs_for(tensors, grad_tensors, "backward", one_output)
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is not None:
        inputs = _as_list(inputs)
        _check_wrt(inputs, "backward", "inputs")
    seeds = root_grads(tensors, grad_tensors, "backward", create_graph)
    if inputs is None:
        propagate(tensors, seeds, retain_graph, create_graph=create_graph)
        return

    def accumulate(found):
        for tensor, g in zip(inputs, found, strict=True):
            if g is not None and tensor._grad is not None:
                _check_accumulates(tensor)
        for tensor, g in zip(inputs, found, strict=True):
            if g is not None:
                tensor._accumulate_grad(g)

    propagate(tensors, seeds, retain_graph, inputs, create_graph, then=accumulate)


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
):
    """Gradients of `outputs` with respect to `inputs`, returned as a tuple of Tensors, as
    `torch.autograd.grad`.

    Leaves' `.grad` is left alone. `inputs` may be leaves or intermediate tensors. An input the
    outputs do not depend on raises GraphError unless `allow_unused=True` (then its entry is
    None) or `materialize_grads=True` (then zeros). As PyTorch's, only the ops between the
    outputs and the inputs run their backward: the graph below the inputs keeps its saved values,
    and hooks there do not fire. With `create_graph`, the backward is recorded and the gradients
    carry graphs (differentiate them again for second and higher derivatives); `retain_graph`
    defaults to `create_graph`.
    """
    from ..tensor import Tensor

    if is_grads_batched:
        raise GraphError(
            "grad: is_grads_batched=True (vmap over grad_outputs) is not supported; call grad "
            "once per row of grad_outputs"
        )
    if allow_unused is None:
        allow_unused = materialize_grads
    if materialize_grads and not allow_unused:
        raise GraphError("grad: materialize_grads=True needs allow_unused=True (or None)")
    one_output = isinstance(outputs, Tensor)
    outputs = _as_list(outputs)
    inputs = _as_list(inputs)
    grad_outputs = _grad_outputs_for(outputs, grad_outputs, "grad", one_output)
    _check_wrt(inputs, "grad", "inputs")
    if retain_graph is None:
        retain_graph = create_graph
    seeds = root_grads(outputs, grad_outputs, "grad", create_graph)
    found = propagate(outputs, seeds, retain_graph, capture=inputs, create_graph=create_graph)
    result = []
    for i, g in enumerate(found):
        if g is None:
            if not allow_unused:
                raise GraphError(
                    f"grad: inputs[{i}] (shape {inputs[i].shape}) was not used to compute the "
                    f"outputs; pass allow_unused=True to get None for it"
                )
            if materialize_grads:  # as PyTorch's: zeros that require grad under create_graph
                zeros = inputs[i].xp.zeros_like(inputs[i].data)
                g = Tensor(zeros, requires_grad=create_graph)
        result.append(g if g is None or isinstance(g, Tensor) else Tensor(g))
    return tuple(result)


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

    open_count = 0  # tapes open in all threads; recording skips the tape lookup while it is 0

    def __init__(self):
        self.nodes: list[Node] = []
        self.outputs: list = []

    def __enter__(self):
        with _tape_count_lock:
            Tape.open_count += 1
        recording.tapes.append(self)
        return self

    def __exit__(self, *exc_info):
        recording.tapes.remove(self)
        with _tape_count_lock:
            Tape.open_count -= 1

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
        from ..tensor import Tensor

        grads = grad(target, sources, output_gradients, retain_graph, create_graph)
        return grads[0] if isinstance(sources, Tensor) else grads

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

"""Hooks on gradients: register_hook's handles and how the walk runs them, the gradient-ready
hooks that fire once a leaf's gradient is final (DistributedDataParallel's), and
queue_callback's callbacks, run once a backward is done."""

from __future__ import annotations

import contextlib
import operator
import threading
import weakref

import numpy as np

from .. import backend
from ..errors import DTypeError, GraphError, ShapeError
from .boundary import is_tensor, new_tensor, wrap
from .deferred import DeferredSum
from .node import Node

__all__ = [
    "RemovableHandle",
    "RunningBackward",
    "fire_ready",
    "queue_callback",
    "queued_callbacks",
    "ready_watch",
    "register_gradient_ready_hook",
    "run_hooks",
    "running_backward",
    "watching_ready",
]

# Leaves with gradient-ready hooks: id(leaf) -> (weak reference to the leaf, its hooks). A walk
# looks for them only while this is not empty (DistributedDataParallel registers them). State of
# the leaves, not of a graph: a walk reads only the entries of the leaves below its roots, and
# an entry goes with its leaf. Changed with dict operations only, each atomic under the GIL.
_ready_hooks: dict = {}
# .stack: the callbacks queued (queue_callback) for each backward running in this thread
_queued = threading.local()


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


def run_hooks(hooks, grad, owner):
    """Pass `grad` through the hooks in registration order; a returned Tensor or array, of the
    gradient's shape and dtype, replaces it. `owner` (a leaf, or the Node of a non-leaf) is
    named in errors. `grad` is an array, or under create_graph a Tensor with its graph: the
    hook then sees that Tensor, and a Tensor it returns keeps its graph."""
    graph = is_tensor(grad)
    for hook in tuple(hooks):  # a copy: a hook may remove itself (or another) while running
        result = hook(grad if graph else new_tensor(grad))
        if result is None:
            continue
        new = result.array if is_tensor(result) else result
        if isinstance(new, np.generic):  # numpy arithmetic on a 0-d array gives a scalar
            new = backend.array_module(new).asarray(new)
        if not backend.is_array(new) or new.shape != grad.shape or new.dtype != grad.dtype:
            _refuse_hook_result(hook, result, new, grad, owner)
        if graph:
            grad = result if is_tensor(result) else wrap(new)
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
    do not fire in grad(); in backward(inputs=...) they fire for the leaves among the inputs
    (those whose `.grad` changes). Returns a handle whose remove() takes the hook off."""
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
    if entry is None:  # setdefault: two threads registering on one leaf share one entry
        forget = weakref.ref(tensor, lambda _, key=key: _ready_hooks.pop(key, None))
        entry = _ready_hooks.setdefault(key, (forget, []))
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
    stack[-1].callbacks.append(callback)


class RunningBackward:
    """A backward running in this thread, as running_backward() gives it: compare it by
    identity (a hook tells by it whether it fires in the same backward as an earlier call, or
    in a new one after a backward that raised); `inputs` are the tensors it is restricted to
    (backward(inputs=...), grad()'s inputs), None for every leaf; `callbacks`, queue_callback's."""

    __slots__ = ("callbacks", "inputs")

    def __init__(self, inputs):
        self.callbacks: list = []
        self.inputs = inputs


def running_backward() -> RunningBackward | None:
    """The innermost backward running in this thread (None outside a backward)."""
    stack = getattr(_queued, "stack", None)
    return stack[-1] if stack else None


@contextlib.contextmanager
def queued_callbacks(inputs=None):
    """The list queue_callback adds to while the backward run inside this block, restricted to
    `inputs` (None: every leaf), is this thread's innermost (backwards nest: a hook may run
    one)."""
    stack = getattr(_queued, "stack", None)
    if stack is None:
        stack = _queued.stack = []
    backward = RunningBackward(inputs)
    stack.append(backward)
    try:
        yield backward.callbacks
    finally:
        stack.pop()


def watching_ready() -> bool:
    """Whether some leaf has a gradient-ready hook: only then does a walk look for them."""
    return bool(_ready_hooks)


def ready_watch(roots) -> list:
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


def fire_ready(watch: list, next_seq, leaf_grads: dict, fired: set, graph: bool) -> None:
    """Fire the ready hooks of the watched leaves whose gradient is final now that the next node
    to run has sequence number `next_seq` (-1: none is left): their own hooks first."""
    while watch and watch[-1][0] > next_seq:
        _, key, leaf = watch.pop()
        entry = leaf_grads.get(key)
        if entry is None:  # no gradient reached it
            continue
        if isinstance(entry[1], DeferredSum):
            entry[1] = entry[1].value()
        if leaf._hooks:
            entry[1] = run_hooks(leaf._hooks, entry[1], leaf)
        fired.add(key)
        hooks = _ready_hooks.get(key)
        if hooks:
            grad = entry[1] if graph else wrap(entry[1])
            for hook in tuple(hooks[1]):
                hook(leaf, grad)

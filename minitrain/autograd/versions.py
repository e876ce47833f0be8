"""Versions and view rules: how many in-place writes each array's memory has seen, counted on
one clock with the recorded ops, so that a backward can tell whether a value it saved was written
since; and the rules that refuse a view whose values an in-place op changed under the graph.

A version belongs to memory, not to a Tensor: every tensor viewing the same memory (reshape,
transpose, basic indexing, broadcast_to, detach, `.data`) shares it, as PyTorch's views share
their version counter. Recording an op costs nothing here: a Node's sequence number comes from
`clock.numbers`, and so does each write's, so "written since this op was recorded" is "a write
numbered after the Node". Only in-place writes pay (minitrain/inplace.py, optimizers, nn.init).

What is process-wide lives in one object, `clock`: the numbers, the latest write's and rebind's
number, and the writes each memory has seen (every thread's tensors may view one array, so the
table is shared, and its changes are made under a lock). What belongs to one graph or tensor
lives on it: `Node.superseded` (an in-place op made the node's output another node's output)
and, on a view taken outside the graph, its `_plain_view` slot (the tensor it views and that
tensor's node then). The rules (minitrain refuses where PyTorch rewrites a view's graph):

- a view in the graph taken before its base changed in place is refused when used
  (`check_view_current`, asked by `Op.apply` and `backward` only for nodes older than the
  latest rebind);
- a view taken outside the graph is refused when used after an in-place op put its tensor in
  the graph (`check_plain_view_input`), and cannot change in place with grad mode on where its
  tensor requires grad (`plain_view_source`, read by minitrain/inplace.py).
"""

from __future__ import annotations

import functools
import itertools
import threading
import weakref
from collections import deque

from ..errors import GraphError
from .grad_mode import recording

__all__ = [
    "Clock",
    "PlainView",
    "check_plain_view_input",
    "check_view_current",
    "clock",
    "note_plain_view",
    "owner",
    "plain_view_source",
    "supersede",
]

_RECENT = 64  # writes remembered per memory, for the versions an error message reports


def owner(array):
    """The array that owns `array`'s memory (numpy and CuPy views point to it as their base):
    two arrays with one owner view the same memory."""
    base = array.base
    return array if base is None or not hasattr(base, "shape") else base


class _Writes:
    """The writes one piece of memory has seen: how many, and the numbers of the latest."""

    __slots__ = ("count", "recent", "owner")

    def __init__(self, memory, forget):
        self.count = 0
        self.recent: deque = deque(maxlen=_RECENT)
        self.owner = weakref.ref(memory, forget)  # forget(the reference) once memory dies


class Clock:
    """The one clock of the process: Node.seq and every in-place write's number come from
    `numbers`, so that "written after this node was recorded" is one comparison, and the writes
    it has numbered, per memory.

    Read without a lock (`numbers`, `latest_write`, `latest_rebind`: the hot path reads
    attributes only); changed under `_lock`. Drawing a number needs none: `next()` of an
    itertools.count is one C call that does not release the GIL, so two threads never draw the
    same number. A write draws its number and stores it as `latest_write` under the lock, so
    `latest_write` never goes back (a thread stopped between the two would otherwise overwrite
    a later write's number with its own, and a backward would skip its check)."""

    __slots__ = ("numbers", "latest_write", "latest_rebind", "_memory", "_lock")

    def __init__(self):
        self.numbers = itertools.count()
        self.latest_write = -1  # the number of the latest in-place write anywhere (-1: none)
        self.latest_rebind = -1  # ... of the latest that made its tensor a new node's output
        self._memory: dict[int, _Writes] = {}  # id(the array owning the memory) -> its writes
        # reentrant: a finalizer run by a collection inside note_write may write in place too
        self._lock = threading.RLock()

    def _entry(self, array) -> _Writes | None:
        memory = owner(array)
        entry = self._memory.get(id(memory))
        return entry if entry is not None and entry.owner() is memory else None

    def _forget(self, key: int, reference) -> None:
        # Called when a written memory dies, which may happen inside note_write on this very
        # thread (a collection there): so it takes no lock, and needs none, a dict's get and pop
        # each being atomic under the GIL, and the id not reused until the memory is freed,
        # which comes after this call.
        entry = self._memory.get(key)
        if entry is not None and entry.owner is reference:
            self._memory.pop(key, None)

    def note_write(self, array) -> int:
        """Count an in-place write into `array`'s memory; returns the write's number."""
        capture = recording.capture
        if capture is not None:  # minitrain.compile is capturing: is this write one it saw?
            capture.note_write(array)
        memory = owner(array)
        with self._lock:
            entry = self._entry(memory)
            if entry is None:
                key = id(memory)
                entry = self._memory[key] = _Writes(memory, functools.partial(self._forget, key))
            number = next(self.numbers)
            entry.count += 1
            entry.recent.append(number)
            self.latest_write = number
        return number

    def version(self, array) -> int:
        """How many in-place writes `array`'s memory has seen."""
        entry = self._entry(array)
        return 0 if entry is None else entry.count

    def written_since(self, array, tick: int) -> tuple[int, int] | None:
        """(the version at `tick`, the version now) where `array`'s memory was written after
        clock number `tick`; None where it was not."""
        entry = self._entry(array)
        if entry is None or not entry.recent or entry.recent[-1] <= tick:
            return None
        recent = tuple(entry.recent)  # one C call: another thread may append meanwhile
        after = sum(1 for number in recent if number > tick)
        return entry.count - after, entry.count

    def note_rebind(self, number: int) -> None:
        """The write numbered `number` made its tensor a new node's output (see `supersede`)."""
        with self._lock:
            if number > self.latest_rebind:
                self.latest_rebind = number


clock = Clock()  # the process's one clock: every thread's nodes and writes are numbered on it


def supersede(previous, number: int) -> None:
    """An in-place op (its write numbered `number`) made a tensor its node's output: the node
    the tensor had (`previous`, or None for a tensor outside the graph) is superseded, and a
    view taken from its output before now is stale."""
    if previous is not None:
        previous.superseded = True  # before latest_rebind moves: whoever reads that sees this
    clock.note_rebind(number)


def check_view_current(view) -> None:
    """Refuse to use the output of `view`, the Node of a view op, where an in-place op has made
    its base another node's output since the view was taken: the view's values changed with the
    base, but its gradient would go to the base's old node."""
    node_type = type(view)  # a parent is a Node, a leaf Tensor, or None
    origin = view.parents[0]
    while type(origin) is node_type and origin.ctx.is_view:
        origin = origin.parents[0]
    if type(origin) is node_type and origin.superseded:
        raise GraphError(
            f"{view.op.name}: this view was taken from the output of {origin.op.name} before "
            f"that tensor changed in place; take the view after the change, or change a clone"
        )


class PlainView:
    """What a view taken outside the graph (nothing recorded) remembers in its `_plain_view`
    slot: the tensor whose memory it views and that tensor's node then. A copy or a pickle of
    the view views nothing, and so carries none (`__reduce__`: None)."""

    __slots__ = ("source", "node")

    def __init__(self, source):
        self.source = source
        self.node = source.node

    def __reduce__(self):
        return type(None), ()


def note_plain_view(view, source) -> None:
    """Remember that `view`, made without recording, views `source`'s memory."""
    view._plain_view = PlainView(source)


def plain_view_source(tensor):
    """The tensor whose memory `tensor` views, where `tensor` is a view taken outside the
    graph; None otherwise. (The slot is set only on such views: no other tensor pays for it.)"""
    taken = getattr(tensor, "_plain_view", None)
    return None if taken is None else taken.source


def check_plain_view_input(tensor) -> None:
    """Refuse a view taken outside the graph whose source has since become an in-place op's
    output in the graph: the view's values changed with it, its (absent) graph did not."""
    taken = getattr(tensor, "_plain_view", None)
    if taken is not None and taken.source.node is not taken.node:
        raise GraphError(
            "a view taken when its tensor was outside the graph is used after an in-place op "
            "put that tensor in the graph: its gradient would be lost; take the view again"
        )

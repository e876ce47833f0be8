"""Versions of memory: how many in-place writes each array's memory has seen, counted on one clock
with the recorded ops, so that a backward can tell whether a value it saved was written since.

A version belongs to memory, not to a Tensor: every tensor viewing the same memory (reshape,
transpose, basic indexing, broadcast_to, detach, `.data`) shares it, as PyTorch's views share
their version counter. Recording an op costs nothing here: a Node's sequence number comes from
`clock`, and so does each write's, so "written since this op was recorded" is "a write numbered
after the Node". Only in-place writes pay (minitrain/inplace.py, optimizers, nn.init).
"""

from __future__ import annotations

import itertools
import weakref
from collections import deque

clock = itertools.count()  # Node.seq and every in-place write take their numbers from it
latest_write = -1  # the number of the latest in-place write anywhere (-1: none yet)
latest_rebind = -1  # ... of the latest that made its tensor a new node's output (recorded)

_RECENT = 64  # writes remembered per memory, for the versions an error message reports


class _Writes:
    """The writes one piece of memory has seen: how many, and the numbers of the latest."""

    __slots__ = ("count", "recent", "owner")

    def __init__(self, memory):
        self.count = 0
        self.recent: deque = deque(maxlen=_RECENT)
        key = id(memory)
        self.owner = weakref.ref(memory, lambda _, key=key: _writes.pop(key, None))


_writes: dict[int, _Writes] = {}  # id(the array owning the memory) -> its writes


def owner(array):
    """The array that owns `array`'s memory (numpy and CuPy views point to it as their base):
    two arrays with one owner view the same memory."""
    base = array.base
    return array if base is None or not hasattr(base, "shape") else base


def _entry(array) -> _Writes | None:
    memory = owner(array)
    entry = _writes.get(id(memory))
    return entry if entry is not None and entry.owner() is memory else None


def note_write(array) -> int:
    """Count an in-place write into `array`'s memory; returns the write's number on the clock."""
    global latest_write
    memory = owner(array)
    entry = _entry(array)
    if entry is None:
        entry = _writes[id(memory)] = _Writes(memory)
    latest_write = next(clock)
    entry.count += 1
    entry.recent.append(latest_write)
    return latest_write


def version(array) -> int:
    """How many in-place writes `array`'s memory has seen."""
    entry = _entry(array)
    return 0 if entry is None else entry.count


def written_since(array, tick: int) -> tuple[int, int] | None:
    """(the version at `tick`, the version now) where `array`'s memory was written after clock
    number `tick`; None where it was not."""
    entry = _entry(array)
    if entry is None or not entry.recent or entry.recent[-1] <= tick:
        return None
    after = sum(1 for number in entry.recent if number > tick)
    return entry.count - after, entry.count

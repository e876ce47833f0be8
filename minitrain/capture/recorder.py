"""What a capture writes down while the function runs once, eagerly: every op it applies
(`Op.apply` calls `op`), every in-place write (`write_in_place` calls `write`), and every thing
that would make a replay compute something else than a new eager run (`breaks`).

Each value the program reads or makes is a slot, numbered: the call's tensor arguments first,
then the tensors it reads from outside (parameters, buffers, tensors made outside the function:
`refs`, read live at each replay), then one slot per op's output and per in-place write. An op's
operand is a slot, or a constant (a number, a list, an array made outside every op).

A capture is only as good as the assumption that the function's tensors flow through ops. What
can be seen is: a value read out of a tensor into Python (`item`, `bool`, `tolist`, printing), a
write to a tensor's memory outside the in-place ops (an optimizer's step, `bump_version`), a random
draw outside an op (`randn` in the function), a backward walk or a custom `autograd.Function`
inside. Each breaks the capture, and its reason is kept. What cannot be seen is numpy arithmetic
on a tensor's `.array` whose result reaches an op as a constant; `compiled.py` captures twice on
different data and compares the constants to catch it (as tinygrad's TinyJit captures twice)."""

from __future__ import annotations

import numpy as np

from .. import backend
from ..autograd.versions import owner
from ..tensor import Tensor

__all__ = ["ArrayStep", "OpStep", "Recorder", "WriteStep", "replaced"]


class OpStep:
    """One op applied: `op` on `operands` (slot numbers, or -1 where `constants` holds the value)
    with `attrs` (array attributes that are slots' arrays listed in `attr_slots`), its output in
    slot `out`. `needs_grad`, `records`, `shapes` and `dtypes` are the ctx's, fixed by the guards
    (which inputs require grad, grad mode, shapes and dtypes)."""

    __slots__ = (
        "op",
        "operands",
        "constants",
        "attrs",
        "attr_slots",
        "out",
        "needs_grad",
        "records",
        "shapes",
        "dtypes",
        "dtypes_in",
        "numpy_number",
        "name",
    )

    def __init__(self, op, operands, constants, attrs, attr_slots, out, ctx):
        self.op, self.operands, self.constants = op, operands, constants
        self.attrs, self.attr_slots, self.out = attrs, attr_slots, out
        self.needs_grad, self.records = ctx.needs_grad, ctx.records
        self.shapes = getattr(ctx, "shapes", None)
        self.dtypes = getattr(ctx, "dtypes", None)
        self.name = op.name

    def key(self) -> tuple:
        """What two captures must agree on for this step (constants compared apart)."""
        return (self.op, self.operands, tuple(sorted(self.attrs)), self.attr_slots, self.out)


class WriteStep:
    """An in-place write (`x.relu_()`, `x[i] = v`, `x.copy_(y)`): slot `result`'s values written
    into slot `target`'s memory; from then on the tensor is slot `out` (the same memory, its
    gradient flowing to `result`). `producer`: the step that made `result`, whose saved values
    the write adjusts as the eager write does (inplace.py: a saved copy of the old values, the
    saved output moved to the target)."""

    __slots__ = ("target", "result", "out", "producer", "name")

    def __init__(self, target, result, out, producer, name):
        self.target, self.result, self.out, self.producer = target, result, out, producer
        self.name = name

    def key(self) -> tuple:
        return ("write", self.target, self.result, self.out, self.producer)


class ArrayStep:
    """An array computed outside the ops from slots' arrays (an index copied from an index
    tensor, a mask, a check that raises): `fn` on `operands` (slots, or -1 where `constants`
    holds the value), its result in slot `out` (-1: a check, whose result is nothing). No
    gradient flows through it. Reported through `ops.core.operands.array_step`."""

    __slots__ = ("fn", "operands", "constants", "out", "name")

    def __init__(self, fn, operands, constants, out):
        self.fn, self.operands, self.constants, self.out = fn, operands, constants, out
        self.name = getattr(fn, "__name__", "an array step")

    def key(self) -> tuple:
        return ("array", getattr(self.fn, "__code__", self.fn), self.operands, self.out)


class Recorder:
    """The capture of one call: `arguments` are the call's tensors (slots 0 to n-1, in order);
    steps, refs and breaks fill in as the function runs (the lower layers call `op`, `write`,
    `note_write` and `breaks` through `recording.capture`)."""

    def __init__(self, arguments):
        self.arguments = list(arguments)
        self.refs: list[Tensor] = []  # tensors read from outside the call, by slot after args
        self.steps: list = []
        self.reasons: list[str] = []
        self.slot_count = 0
        self._slots: dict[int, int] = {}  # id(tensor) -> its current slot
        self._arrays: dict[int, int] = {}  # id(array) -> slot whose array it is
        self._keep: list = []  # what the ids above belong to, alive until the capture ends
        self._slot_arrays: dict[int, object] = {}  # slot -> its array in this capture
        self._producer: dict[int, int] = {}  # slot -> index of the step that made it
        self._pending_write = None  # the array write_in_place is about to note
        self._saved: list[tuple] = []  # per step, the memory its ctx saved (for `write`)
        self.ref_slots: list[int] = []
        self.argument_slots = [self._new_slot(t) for t in self.arguments]
        self.in_op = 0  # inside an op's forward: its random draws are its own
        self.modules: dict[int, object] = {}  # id -> each module whose forward ran

    # -- slots -----------------------------------------------------------------------------

    def _new_slot(self, tensor: Tensor) -> int:
        slot = self.slot_count
        self.slot_count += 1
        self._slots[id(tensor)] = slot
        self._arrays[id(tensor.array)] = slot
        self._slot_arrays[slot] = tensor.array
        self._keep.append(tensor)
        return slot

    def array_of(self, slot: int):
        """The array slot `slot` held in this capture."""
        return self._slot_arrays[slot]

    def _slot_of(self, tensor: Tensor) -> int:
        """The slot of an op's tensor operand: its own, or a new ref for a tensor from outside
        (a parameter, a buffer, a constant the function made without an op)."""
        slot = self._slots.get(id(tensor))
        if slot is not None:
            return slot
        slot = self._arrays.get(id(tensor.array))
        if slot is not None:  # another Tensor of a slot's array (a detach(), a Parameter's view)
            self._slots[id(tensor)] = slot
            self._keep.append(tensor)
            return slot
        slot = self._new_slot(tensor)
        self.refs.append(tensor)
        self.ref_slots.append(slot)
        return slot

    def _array_slot(self, value) -> int:
        """The slot whose array `value` is (an index read from an argument's `.array`), or -1."""
        if backend.is_array(value):
            return self._arrays.get(id(value), -1)
        return -1

    # -- what the lower layers report --------------------------------------------------------

    def op(self, op, inputs, given, attrs, ctx, tensor: Tensor) -> None:
        """`op` was applied to `inputs` (`given`: each as the array or number forward saw,
        before promotion) with `attrs`, and made `tensor` (Op._apply_any)."""
        operands, constants = [], []
        for value, array in zip(inputs, given, strict=True):
            slot = self._slot_of(value) if isinstance(value, Tensor) else self._array_slot(array)
            operands.append(slot)
            constants.append(None if slot >= 0 else array)
        attrs = dict(attrs)
        attr_slots = []
        for name, value in attrs.items():
            for path, array in _arrays_in(value, ()):
                slot = self._array_slot(array)
                if slot >= 0:
                    attr_slots.append((name, path, slot))
                    attrs[name] = replaced(attrs[name], path, None)  # read at each replay
        attr_slots = tuple(attr_slots)
        out = self._new_slot(tensor)
        self._producer[out] = len(self.steps)
        self.steps.append(
            OpStep(op, tuple(operands), tuple(constants), attrs, attr_slots, out, ctx)
        )
        step = self.steps[-1]
        step.dtypes_in = tuple(getattr(a, "dtype", None) for a in given)
        step.numpy_number = any(isinstance(a, np.generic) for a in given)
        saved = ctx.saved_values().values() if ctx.records else ()
        self._saved.append(tuple(owner(v) for v in saved if hasattr(v, "base")))

    def write(self, target: Tensor, result: Tensor, caller: str) -> None:
        """write_in_place is about to write `result` into `target` (`caller`, the method)."""
        target_slot, result_slot = self._slot_of(target), self._slot_of(result)
        if result.requires_grad and target_slot in self._outside():
            self.breaks(
                f"{caller} writes a value that requires grad into a tensor from outside the "
                f"function (an argument or a parameter)"
            )
        array = target.array
        producer = self._producer.get(result_slot)
        memory = owner(array)
        for index, saved in enumerate(self._saved):
            # eager refuses this at the backward (the version check); a replay would not
            if index != producer and any(m is memory for m in saved):
                name = self.steps[index].name
                self.breaks(f"{caller} writes into a value {name} saved for its backward")
        self._pending_write = array
        out = self.slot_count
        self.slot_count += 1
        self._producer[out] = len(self.steps)
        self.steps.append(WriteStep(target_slot, result_slot, out, producer, caller))
        self._saved.append(())
        self._slots[id(target)] = out
        self._arrays[id(array)] = out
        self._slot_arrays[out] = array

    def _outside(self) -> set[int]:
        return set(self.argument_slots) | set(self.ref_slots)

    def note_write(self, array) -> None:
        """The version clock counts a write into `array`: write_in_place's own, or one made
        outside every op, which a replay would not repeat."""
        if self._pending_write is array:
            self._pending_write = None
            return
        self.breaks(
            "a tensor's memory was written outside the in-place ops (an optimizer's step, "
            "running statistics, or `.array` written and bump_version)"
        )

    def array_step(self, fn, args, result) -> None:
        """`result` = fn(*args) was computed outside the ops (ops.core.operands.array_step):
        recorded where it reads a slot's array, so that each replay computes it again; where it
        reads none it is a constant, and nothing is recorded."""
        operands = [self._array_slot(a) for a in args]
        if all(slot < 0 for slot in operands):
            return
        constants = tuple(None if slot >= 0 else a for slot, a in zip(operands, args, strict=True))
        out = -1
        if result is not None:
            out = self.slot_count
            self.slot_count += 1
            self._arrays[id(result)] = out
            self._slot_arrays[out] = result
            self._keep.append(result)
        self.steps.append(ArrayStep(fn, tuple(operands), constants, out))
        self._saved.append(())

    def module_ran(self, module) -> None:
        """An nn.Module's forward ran: the program holds only while the module's attributes and
        state are as they are after this call (program.ModuleState); its forward hooks are
        Python code a replay would not run."""
        if module._forward_hooks or module._forward_pre_hooks:
            self.breaks(f"{type(module).__name__} has forward hooks (a replay runs no hook)")
        self.modules.setdefault(id(module), module)

    def producer_of(self, tensor) -> tuple[str, int] | None:
        """Where a tensor the function returned comes from: ("slot", n) for one the program
        made or took, ("array", n) for a tensor made outside the ops around a slot's array (a
        comparison's result, a detach(): no gradient), None for one it never saw."""
        slot = self._slots.get(id(tensor))
        if slot is not None:
            return "slot", slot
        slot = self._arrays.get(id(tensor.array))
        return None if slot is None else ("array", slot)

    def breaks(self, reason: str) -> None:
        """Something happened that a replay would not repeat: the capture cannot be used."""
        if reason not in self.reasons:
            self.reasons.append(reason)


def _arrays_in(value, path: tuple):
    """(path, array) for each array in `value`, itself or nested in tuples and lists (an
    index tuple), `path` the positions that lead to it."""
    if backend.is_array(value):
        yield path, value
    elif isinstance(value, (tuple, list)):
        for position, item in enumerate(value):
            yield from _arrays_in(item, path + (position,))


def replaced(value, path: tuple, new):
    """`value` with what `path` leads to (see _arrays_in) replaced by `new`, tuples and lists
    rebuilt on the way."""
    if not path:
        return new
    items = list(value)
    items[path[0]] = replaced(items[path[0]], path[1:], new)
    return type(value)(items)

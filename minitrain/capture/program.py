"""A captured program, and one replay of it: the forward as the ops' own array kernels in the
recorded order, and the backward as their own backward rules in reverse, on arrays, with no
Tensor, Node or heap per op.

The replay computes what an eager call computes, op for op: each op's forward runs through
`Op.forward_arrays` (the array half of `Op.apply`: promotion, the numba choice, the output's
dtype), each backward through `array_backward` (the engine's), each gradient fitted to its input
as `Node.fit_input_grad` fits it, and each saved value checked against in-place writes with the
engine's own `check_saved_unwritten`. So its values equal eager's bit for bit on one machine,
except where gradients from several uses of a value are summed in another order.

With a gradient to compute, the whole replay is one node of the caller's graph (`CompiledRegion`,
whose backward is the program's backward): `loss.backward()` after a compiled model's forward
walks through it like through any op. Its backward has no form in tensor ops, so create_graph
through it raises, naming it."""

from __future__ import annotations

import types

import numpy as np

from ..autograd import Node
from ..autograd.deferred import materialized
from ..autograd.function import FunctionOutput
from ..autograd.node import array_backward, check_saved_unwritten, fit_grad
from ..autograd.versions import clock
from ..errors import GraphError
from ..nn.modules.module import Module
from ..ops.core.ctx import Ctx
from ..ops.core.op import Op
from ..tensor import Tensor
from .recorder import ArrayStep, OpStep, Recorder, replaced

__all__ = ["CompiledRegion", "Program", "Replay", "record_region"]


class Program:
    """The steps one capture recorded, what the call's outputs are, and what it reads from
    outside: `refs` (read live at each replay, but the constants the function makes at each
    call), the modules and the function's globals it holds for (`holds`). `outputs`: per
    returned value, ("slot", n) for a value the program makes or an argument, ("array", n) for
    a tensor made outside the ops around one (no gradient), ("ref", n) for a tensor from
    outside, ("constant", value) for anything else; `shape` (set by compiled.py) how they nest."""

    def __init__(self, recorder: Recorder, outputs: list, fn=None):
        self.steps = recorder.steps
        self.slot_count = recorder.slot_count
        self.argument_count = len(recorder.argument_slots)
        self.refs = list(recorder.refs)
        self.ref_slots = list(recorder.ref_slots)
        self.ref_state = [(t, t.array, t.requires_grad) for t in self.refs]
        # the modules that ran, their descendants (a child's weight read without its call) and
        # a compiled bound method's own module
        ran = list(recorder.modules.values())
        owner_module = getattr(fn, "__self__", None)
        if isinstance(owner_module, Module):
            ran.append(owner_module)
        held = {}
        for module in ran:
            for descendant in module.modules():
                held.setdefault(id(descendant), descendant)
        self.modules = [ModuleState(module) for module in held.values()]
        self.function = None if fn is None else FunctionState(fn)
        # an argument that is also a tensor the function reads otherwise (a global, a module's
        # parameter): which way each op read it cannot be told, so the program is that call's
        reachable = {id(array) for state in self.modules for _, array in state.arrays}
        if self.function is not None:
            reachable.update(
                id(v.array) for _, _, v in self.function.values if isinstance(v, Tensor)
            )
        self.pinned = tuple(
            (index, t) for index, t in enumerate(recorder.arguments) if id(t.array) in reachable
        )
        self.fresh_refs: frozenset = frozenset()  # refs the function makes anew at each call
        # the values, as the capture read them, of the refs that are no module's state and no
        # global's (made inside the function, or closed over): compared with the twin's, before
        # the caller can change one it was returned
        self.ref_values = {
            index: t.array.copy()
            for index, t in enumerate(self.refs)
            if id(t.array) not in reachable
        }
        self.outputs = outputs
        # the slots a replay's gradient flows into: arguments and refs that require grad
        self.sources = [slot for slot, t in enumerate(recorder.arguments) if t.requires_grad] + [
            slot for slot, t in zip(self.ref_slots, self.refs, strict=True) if t.requires_grad
        ]
        self.differentiable = _differentiable_slots(self)
        self.frees = _last_uses(self)

    def holds(self, arguments=None) -> bool:
        """Whether what the program read from outside is as it was: every ref's array (the
        same array object: its shape, dtype and strides too) and requires_grad, every module
        that ran and the function's own globals (ModuleState, FunctionState), and `arguments`
        (the call's tensors, where given) the same tensors wherever the capture's were ones the
        function also reads otherwise."""
        if arguments is not None:
            for index, tensor in self.pinned:
                if arguments[index] is not tensor:
                    return False
        for tensor, array, requires_grad in self.ref_state:
            if tensor.array is not array or tensor._requires_grad is not requires_grad:
                return False
        for state in self.modules:
            if not state.holds():
                return False
        return self.function is None or self.function.holds()

    def same_as(self, other: Program) -> str | None:
        """None where `other`, a capture of a call with the same guards, recorded the same
        program; else what differs (Python control flow that read values, or a constant
        computed from the inputs outside the ops)."""
        if len(self.steps) != len(other.steps):
            return (
                f"two calls with the same input shapes ran {len(other.steps)} and "
                f"{len(self.steps)} ops (Python control flow that depends on values)"
            )
        for mine, theirs in zip(self.steps, other.steps, strict=True):
            if mine.key() != theirs.key():
                return f"two calls with the same input shapes ran different ops at {mine.name}"
            if type(mine) is ArrayStep:
                if not _same_value(list(mine.constants), list(theirs.constants)):
                    return f"an argument of {mine.name} changed between two calls"
                continue
            if type(mine) is not OpStep:
                continue
            for a, b in zip(mine.constants, theirs.constants, strict=True):
                if not _same_value(a, b):
                    return (
                        f"an argument of {mine.name} was computed outside the ops from values "
                        f"that change between calls (numpy on a tensor's .array?)"
                    )
            for name, value in mine.attrs.items():
                if not _same_value(value, theirs.attrs[name]):
                    return (
                        f"the attribute '{name}' of {mine.name} changed between two calls with "
                        f"the same input shapes (computed from values outside the ops?)"
                    )
        if len(self.refs) != len(other.refs):
            return "two calls with the same input shapes read different tensors from outside"
        fresh = set()
        for index, (mine, theirs) in enumerate(zip(self.refs, other.refs, strict=True)):
            # a tensor the function made without an op (minitrain.tensor(...)) is a new one at
            # each call: a constant only if its values are the same
            if mine is not theirs:
                if mine.requires_grad:
                    return (
                        "a tensor that requires grad is made inside the function at each call "
                        "(a new leaf a replay cannot make)"
                    )
                fresh.add(index)
                if not _same_value(self.ref_values.get(index), other.ref_values.get(index)):
                    return (
                        "a tensor made inside the function without an op holds values that "
                        "change between calls (minitrain.tensor of a tensor's values?)"
                    )
        self.fresh_refs = frozenset(fresh)
        if self.outputs != other.outputs:
            return "two calls with the same input shapes returned different values"
        return None


class ModuleState:
    """What a program holds for about one module that ran (or a descendant of one): its
    attributes (numbers, strings, flags such as `training` and tuples of them by value; any
    other, a tensor, a function, a list, by identity), its parameter, buffer and child tables
    (entry by entry, by identity), the array of each parameter and buffer (an op's attribute
    may hold one: batch norm's running statistics), and that it has no forward hooks (a replay
    runs none). A replay is right only while all of them are as they were when it was
    captured."""

    __slots__ = ("module", "attrs", "tables", "arrays")

    def __init__(self, module):
        self.module = module
        self.attrs = tuple(
            (name, value) for name, value in module.__dict__.items() if name not in _MODULE_TABLES
        )
        tables = (module._parameters, module._buffers, module._modules)
        self.tables = tuple((table, tuple(table.items())) for table in tables)
        held = (*module._parameters.values(), *module._buffers.values())
        self.arrays = tuple((t, t.array) for t in held if t is not None)

    def holds(self) -> bool:
        module = self.module
        if module._forward_hooks or module._forward_pre_hooks:
            return False
        fields = module.__dict__
        for name, value in self.attrs:
            if not _unchanged(fields.get(name, _MISSING), value):
                return False
        for table, items in self.tables:
            if len(table) != len(items):
                return False
            for name, value in items:
                if table.get(name, _MISSING) is not value:
                    return False
        for tensor, array in self.arrays:
            if tensor.array is not array:
                return False
        return True


class FunctionState:
    """What a program holds for about the compiled function itself, where it is a function:
    the globals its code names and the variables it closes over, where they are numbers,
    strings, flags, tensors or modules (tensors and modules by identity: a global rebound to
    another tensor is read through the new one only after a new capture). Names read by the
    functions it calls are not seen: those are the function's own to keep."""

    __slots__ = ("values",)

    def __init__(self, fn):
        code = getattr(fn, "__code__", None)
        values = []
        if code is not None:
            namespace = getattr(fn, "__globals__", {})
            for name in sorted(_names(code)):
                if name in namespace:
                    values.append((namespace, name, namespace[name]))
            for cell in getattr(fn, "__closure__", None) or ():
                try:
                    value = cell.cell_contents
                except ValueError:  # an empty cell
                    continue
                values.append((cell, None, value))
        self.values = tuple(values)

    def holds(self) -> bool:
        for where, name, value in self.values:
            current = where.get(name, _MISSING) if name is not None else _cell(where)
            if not _unchanged(current, value):
                return False
        return True


def _unchanged(current, value) -> bool:
    """Whether an attribute or global a program guards still holds what it held: the same
    object, or, for a number, string, flag or tuple of them, an equal one (a tensor or any
    other object only itself)."""
    return current is value or (
        _plain(value) and not isinstance(value, Tensor) and _same_value(current, value)
    )


def _cell(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return _MISSING


def _names(code) -> set[str]:
    """The global names `code` reads, with those of the code nested in it (a comprehension's,
    a lambda's: their own code objects since Python 3.11)."""
    names = set(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names |= _names(constant)
    return names


_MISSING = object()
# a module's own tables, which ModuleState holds entry by entry (or, the hooks, as empty)
_MODULE_TABLES = frozenset(
    {"_parameters", "_buffers", "_modules", "_non_persistent", "_forward_hooks"}
    | {"_forward_pre_hooks"}
)


def _plain(value) -> bool:
    """A module attribute a program guards: a number, string, flag, None, a tuple of them, or
    a tensor (by identity)."""
    if isinstance(value, (bool, int, float, str, type(None), Tensor)):
        return True
    return type(value) is tuple and all(_plain(v) for v in value)


class Replay:
    """One run of a program on a call's arguments: its values, and the ctx each recorded op
    keeps for the backward (None once its backward ran), with the clock number it ran at."""

    __slots__ = ("program", "values", "ctxs", "ticks", "spent")

    def __init__(self, program: Program, arguments):
        self.program = program
        values = [None] * program.slot_count
        for slot, tensor in enumerate(arguments):
            values[slot] = tensor.array
        fresh, snapshots = program.fresh_refs, program.ref_values
        for index, (slot, tensor) in enumerate(zip(program.ref_slots, program.refs, strict=True)):
            # a constant the function makes at each call: as the capture made it (the tensor
            # itself went to the caller, who may have changed it since)
            values[slot] = snapshots[index] if index in fresh else tensor.array
        self.values = values
        self.ctxs = [None] * len(program.steps)
        self.ticks = [0] * len(program.steps)
        self.spent = False

    def forward(self) -> None:
        """Every step, in order: ops through Op.forward_arrays, writes as write_in_place makes
        them (the producer's saved values adjusted as inplace.py adjusts them)."""
        values, ctxs, ticks = self.values, self.ctxs, self.ticks
        frees = self.program.frees
        for index, step in enumerate(self.program.steps):
            if type(step) is not OpStep:
                if type(step) is ArrayStep:
                    result = step.fn(
                        *[
                            values[slot] if slot >= 0 else constant
                            for slot, constant in zip(step.operands, step.constants, strict=True)
                        ]
                    )
                    if step.out >= 0:
                        values[step.out] = result
                else:
                    self._write(step)
                for slot in frees[index]:
                    values[slot] = None
                continue
            arrays = [
                values[slot] if slot >= 0 else constant
                for slot, constant in zip(step.operands, step.constants, strict=True)
            ]
            attrs = step.attrs
            if step.attr_slots:
                attrs = dict(attrs)
                for name, path, slot in step.attr_slots:
                    attrs[name] = replaced(attrs[name], path, values[slot])
            ctx, out = step.op.forward_arrays(
                arrays, step.dtypes_in, step.numpy_number, attrs, step.needs_grad, step.records
            )
            if step.records:
                ctx.shapes, ctx.dtypes = step.shapes, step.dtypes
                ctxs[index] = ctx
                ticks[index] = next(clock.numbers)
            values[step.out] = out
            for slot in frees[index]:  # read for the last time: its array goes, as eagerly
                values[slot] = None

    def _write(self, step) -> None:
        values = self.values
        target, result = values[step.target], values[step.result]
        ctx = None if step.producer is None else self.ctxs[step.producer]
        if ctx is not None:  # inplace._keep_old_values: the op's saved input is the target
            producer = self.program.steps[step.producer]
            saved = ctx.__dict__
            for name, index in producer.op.saved_inputs:
                if saved.get(name) is target and producer.operands[index] == step.target:
                    saved[name] = target.copy()
                    break
        target[...] = result
        written = clock.note_write(target)
        if ctx is not None and ctx.op.saves_output and ctx.__dict__.get("out") is result:
            ctx.out, ctx.out_written = target, written  # inplace._become_output
        values[step.out] = target

    def backward(self, output_grads: dict) -> list:
        """The gradients of the program's sources (`Program.sources`), from `output_grads`
        ({slot: gradient array}): each recorded op's backward in reverse order, its saved
        values checked and then freed, as the engine's walk does."""
        program, values = self.program, self.values
        if self.spent:
            raise GraphError(
                "CompiledBackward: a compiled call's backward runs once, for all its returned "
                "values together (it frees each op's saved values as it goes, whatever "
                "retain_graph says): sum what you differentiate into one backward, or call the "
                "module uncompiled to walk its graph twice"
            )
        grads = [None] * program.slot_count
        for slot, grad in output_grads.items():
            _add(grads, slot, grad)
        latest = clock.latest_write
        for index in range(len(program.steps) - 1, -1, -1):
            step = program.steps[index]
            if type(step) is ArrayStep:
                continue
            if type(step) is not OpStep:
                grad = grads[step.out]
                if grad is not None:
                    grads[step.out] = None
                    _add(grads, step.result, grad)
                continue
            ctx = self.ctxs[index]
            grad = grads[step.out]
            if grad is None:
                continue
            if ctx is None:
                raise GraphError(
                    "CompiledBackward: a compiled call's backward runs once, for all its returned "
                    "values together (it frees each op's saved values as it goes, whatever "
                    "retain_graph says): sum what you differentiate into one backward, or call "
                    "the module uncompiled to walk its graph twice"
                )
            grads[step.out] = None
            if latest > self.ticks[index]:  # an in-place write since this op ran
                check_saved_unwritten(step.op, ctx, self.ticks[index])
            input_grads = array_backward(step.op, ctx, grad)
            if type(input_grads) is not tuple:
                input_grads = (input_grads,)
            if len(input_grads) != len(step.operands):
                raise GraphError(
                    f"{step.op.grad_kernel}: backward returned {len(input_grads)} gradients "
                    f"for {len(step.operands)} inputs"
                )
            ctx.release()
            self.ctxs[index] = None
            for position, g in enumerate(input_grads):
                slot = step.operands[position]
                if g is None or slot < 0 or not step.needs_grad[position]:
                    continue
                shape, dtype = step.shapes[position], step.dtypes[position]
                _add(grads, slot, fit_grad(step.op, position, materialized(g), shape, dtype))
        del values[:]  # the replay is spent: its arrays go as eager's saved values go
        self.spent = True
        return [grads[slot] for slot in program.sources]


def _add(grads: list, slot: int, grad) -> None:
    current = grads[slot]
    grads[slot] = grad if current is None else current + grad


class CompiledRegion(Op, register=False):
    """The op of a replay's one Node in the caller's graph: its inputs are the program's
    sources (the tensors gradients flow to), its output the returned value the gradient flows
    back from, or, where there are several, all of them packed into one flat array that each
    returned value is a `RegionOutput` slice of (as a custom Function's outputs are). Never
    applied through `Op.apply`: compiled.py records the Node itself."""

    name = "compiled"
    grad_kernel = "CompiledBackward"
    inputs = ("sources",)
    variadic = True
    saved = ("replay",)  # released by the walk after the backward
    no_double_backward = (
        "a compiled program's backward runs its ops' first-order kernels on arrays; call the "
        "module uncompiled, or under anomaly mode, for higher derivatives"
    )

    @staticmethod
    def backward(ctx, grad):
        """The program's backward, from the gradient of the returned value (or of those packed
        that received one)."""
        if ctx.layout is None:
            output_grads = {ctx.slot: grad}
        else:
            output_grads = {
                slot: grad[start:stop].reshape(shape)
                for index, (slot, start, stop, shape) in enumerate(ctx.layout)
                if index in ctx.received
            }
            ctx.received.clear()
        return tuple(ctx.replay.backward(output_grads))


class RegionOutput(FunctionOutput, register=False):
    """One of several returned values of a replay, as of a custom Function's: a slice of the
    packed output of its Node, in its own dtype; its backward places the gradient at the slice
    and tells the region (`core`) which values received one."""

    name = "compiled_output"
    grad_kernel = "CompiledBackward"


def record_region(replay: Replay, sources: list[Tensor]) -> dict:
    """Run `replay`'s forward and record it as one Node whose parents are `sources`' places:
    returns {slot: Tensor} for the program's differentiable returned values."""
    replay.forward()
    program, values = replay.program, replay.values
    ctx = Ctx(CompiledRegion, np, (True,) * len(sources), True, None)
    ctx.replay = replay
    ctx.shapes = tuple(t.array.shape for t in sources)
    ctx.dtypes = tuple(t.array.dtype for t in sources)
    parents = tuple(t if t.node is None else t.node for t in sources)
    slots = program.differentiable
    if len(slots) == 1:
        ctx.layout, ctx.slot = None, slots[0]
        tensor = Tensor.wrap(values[slots[0]])
        tensor.node = Node(CompiledRegion, ctx, parents, tensor)
        tensor._requires_grad = True
        return {slots[0]: tensor}
    arrays = [values[slot] for slot in slots]
    dtype = np.result_type(*arrays)
    whole = Tensor.wrap(np.concatenate([a.reshape(-1).astype(dtype, copy=False) for a in arrays]))
    whole.node = Node(CompiledRegion, ctx, parents, whole)
    whole._requires_grad = True
    ctx.layout, ctx.received, made, start = [], set(), {}, 0
    for index, (slot, array) in enumerate(zip(slots, arrays, strict=True)):
        stop = start + array.size
        ctx.layout.append((slot, start, stop, array.shape))
        made[slot] = RegionOutput.apply(
            whole,
            start=start,
            stop=stop,
            shape=array.shape,
            dtype=array.dtype,
            index=index,
            core=ctx,
        )
        start = stop
    return made


def _last_uses(program: Program) -> list[tuple[int, ...]]:
    """Per step, the slots it reads for the last time, which a replay lets go of after it (as
    an eager run drops an intermediate nothing refers to any more; the ctxs keep what the
    backward reads): every slot read by a step, but the returned ones and the arguments."""
    last: dict[int, int] = {}
    for index, step in enumerate(program.steps):
        if type(step) is OpStep:
            reads = [*step.operands, *(slot for _, _, slot in step.attr_slots)]
        elif type(step) is ArrayStep:
            reads = list(step.operands)
        else:
            reads = [step.target, step.result]
        for slot in reads:
            if slot >= 0:
                last[slot] = index
    kept = {slot for kind, slot in program.outputs if kind in ("slot", "array")}
    kept.update(range(program.argument_count))
    frees: list[list[int]] = [[] for _ in program.steps]
    for slot, index in last.items():
        if slot not in kept:
            frees[index].append(slot)
    return [tuple(slots) for slots in frees]


def _differentiable_slots(program: Program) -> list[int]:
    """The returned slots a gradient can flow back from: made by a recorded op (or a write)
    of a floating dtype; the others come back as plain tensors."""
    made = {}
    for step in program.steps:
        if type(step) is OpStep:
            made[step.out] = step.records
        elif type(step) is ArrayStep:
            made[step.out] = False
        else:
            made[step.out] = made.get(step.result, False)
    slots = []
    for kind, slot in program.outputs:
        if kind == "slot" and made.get(slot) and slot not in slots:
            slots.append(slot)
    return slots


def _same_value(a, b) -> bool:
    """Whether two constants two captures recorded are the same (arrays by value)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same_value(a[k], b[k]) for k in a)
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 (an object without a usable ==: not the same)
        return False

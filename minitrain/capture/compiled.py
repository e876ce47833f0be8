"""`minitrain.compile`, with torch.compile's name and arguments: a module or function whose calls
are captured once and then replayed (capture/program.py).

A call is looked up by its guards: the shapes, dtypes, strides, devices and requires_grad of its
tensor arguments, its other arguments by value, grad mode and the default dtype. Unseen guards
are captured: the call runs eagerly (its own result is returned) while the recorder writes down
its ops. A second call with the same guards is captured again and the two programs compared:
the same ops with the same constants make the program used from the third call on; any
difference (Python control flow that read values, a constant computed outside the ops from the
data) means the function cannot be replayed, and it runs eagerly for those guards from then on,
with one warning that says why (`fullgraph=True` raises instead). So does anything the recorder
saw that a replay would not repeat (recorder.py). A program also holds only while what it read
from outside is as it was: each parameter's and buffer's array, shape, dtype and requires_grad,
each module's training flag; otherwise the call is captured again. Anomaly mode, an open Tape
and a call inside another capture run eagerly, unrecorded."""

from __future__ import annotations

import functools
import math
import warnings

from ..autograd.grad_mode import recording
from ..autograd.versions import owner
from ..errors import DTypeError, GraphError
from ..nn import Module
from ..runtime.defaults import get_default_dtype
from ..tensor import Tensor
from .program import Program, Replay, record_region
from .recorder import Recorder

__all__ = ["CompileWarning", "CompiledFunction", "OptimizedModule", "compile"]

# Sets of guards (input shapes, dtypes, modes) one function captures before it runs eagerly
# for any further ones (as torch.compile's recompile limit, its cache_size_limit)
CACHE_LIMIT = 8
# Programs one set of guards keeps (one per state of what they read: training and eval mode,
# say), the least recently replayed let go first (with what it held: a replaced weight's array)
PROGRAMS_PER_GUARDS = 4


class CompileWarning(UserWarning):
    """A compiled function runs eagerly for some guards, and why."""


class _Entry:
    """What is known of one set of guards: the programs captured for it (one per state of the
    modules and tensors they read: a model in training and in eval mode, say), the first
    captures awaiting their twins, or why it runs eagerly."""

    __slots__ = ("programs", "pending", "reasons")

    def __init__(self):
        self.programs: list[Program] = []
        self.pending: list[Program] = []
        self.reasons: list[str] | None = None


class CompiledFunction:
    """A function (or a module's call) whose calls replay captured programs: see the module
    docstring. `fn` is called exactly as given for captures and eager runs."""

    def __init__(self, fn, name: str, fullgraph: bool = False):
        self.fn, self.name, self.fullgraph = fn, name, fullgraph
        self.entries: dict = {}
        self.captures = 0  # how many captures ran (each an eager call)
        self.replays = 0

    def __call__(self, *args, **kwargs):
        if recording.anomaly or recording.capture is not None or recording.tapes:
            return self.fn(*args, **kwargs)  # eager, recorded op by op as the caller expects
        tensors: list[Tensor] = []
        try:
            key = (_guard((args, kwargs), tensors, {}), recording.enabled, get_default_dtype())
            hash(key)
        except _UnguardableError as reason:
            return self._eager(str(reason), args, kwargs)
        entry = self.entries.get(key)
        if entry is None:
            if len(self.entries) >= CACHE_LIMIT:
                return self._eager(
                    f"{CACHE_LIMIT} sets of guards captured already (input shapes, dtypes or "
                    f"modes keep changing)",
                    args,
                    kwargs,
                )
            entry = self.entries[key] = _Entry()
        if entry.reasons is not None:
            return self.fn(*args, **kwargs)
        for index, program in enumerate(entry.programs):
            if program.holds(tensors):
                if index:  # the most recently replayed first
                    entry.programs.insert(0, entry.programs.pop(index))
                self.replays += 1
                return _replay(program, tensors)
        return self._capture(entry, tensors, args, kwargs)

    def _capture(self, entry: _Entry, tensors, args, kwargs):
        recorder = Recorder(tensors)
        recording.capture = recorder
        try:
            result = self.fn(*args, **kwargs)
        finally:
            recording.capture = None
        self.captures += 1
        outputs: list = []
        shape = None
        try:
            shape = _outputs(result, recorder, outputs)
        except _UnguardableError as reason:
            recorder.breaks(str(reason))
        _check_outside(recorder, outputs)
        if recorder.reasons:
            self._give_up(entry, recorder.reasons)
            return result
        program = Program(recorder, outputs, None if isinstance(self.fn, Module) else self.fn)
        program.shape = shape
        # its twin: a first capture made with the modules and tensors it read as they are now
        twin = next((p for p in entry.pending if p.holds(tensors)), None)
        if twin is None:
            entry.pending = [*entry.pending[-(PROGRAMS_PER_GUARDS - 1) :], program]
            return result
        entry.pending.remove(twin)
        difference = program.same_as(twin)
        if difference is not None:
            self._give_up(entry, [difference])
            return result
        entry.programs = [program, *entry.programs[: PROGRAMS_PER_GUARDS - 1]]
        return result

    def _give_up(self, entry: _Entry, reasons: list[str]) -> None:
        entry.programs, entry.pending, entry.reasons = [], [], list(reasons)
        message = f"minitrain.compile: {self.name} runs eagerly: " + "; ".join(reasons)
        if self.fullgraph:
            raise GraphError(message + " (fullgraph=True)")
        warnings.warn(message, CompileWarning, stacklevel=4)

    def _eager(self, reason: str, args, kwargs):
        if self.fullgraph:
            raise GraphError(f"minitrain.compile: {self.name}: {reason} (fullgraph=True)")
        warnings.warn(
            f"minitrain.compile: {self.name} runs eagerly: {reason}", CompileWarning, stacklevel=3
        )
        return self.fn(*args, **kwargs)


def _check_outside(recorder: Recorder, outputs: list) -> None:
    """Break the capture where the function reads, or returns, what a replay cannot stand in
    for: a tensor from outside that is itself in a graph (its graph would be kept and walked
    again at every replay: pass it as an argument), and returned values that share memory with
    each other or with an argument or a ref (a replay returns new arrays)."""
    for tensor in recorder.refs:
        if tensor.node is not None:
            recorder.breaks(
                "a tensor read from outside the function is itself the result of recorded ops "
                "(pass it as an argument)"
            )
    memories = {}
    for tensor in [*recorder.arguments, *recorder.refs]:
        memories.setdefault(id(owner(tensor.array)), "an argument or a tensor from outside")
    for kind, slot in outputs:
        if kind not in ("slot", "array") or slot < len(recorder.argument_slots):
            continue
        memory = id(owner(recorder.array_of(slot)))
        if memory in memories:
            recorder.breaks(f"a returned value shares its memory with {memories[memory]}")
        memories[memory] = "another returned value"


def _replay(program: Program, tensors: list[Tensor]):
    """Run `program` on this call's tensors and build its result."""
    replay = Replay(program, tensors)
    records = recording.enabled and program.sources and program.differentiable
    if records:
        sources = [
            tensors[slot] if slot < program.argument_count else _ref(program, slot)
            for slot in program.sources
        ]
        made = record_region(replay, sources)
    else:
        replay.forward()
        made = {}
    values = replay.values
    leaves = []
    for kind, value in program.outputs:
        if kind == "constant":
            leaves.append(value)
        elif kind == "ref":  # one the function makes anew at each call: a new one, as eagerly
            fresh = value in program.fresh_refs
            leaves.append(
                Tensor.wrap(program.ref_values[value].copy()) if fresh else program.refs[value]
            )
        elif kind == "array":  # made outside the ops from a slot's array: no gradient
            leaves.append(Tensor.wrap(values[value]))
        elif value < program.argument_count:
            leaves.append(tensors[value])
        else:
            leaves.append(made[value] if value in made else Tensor.wrap(values[value]))
    return _rebuild(program.shape, iter(leaves))


def _ref(program: Program, slot: int) -> Tensor:
    return program.refs[program.ref_slots.index(slot)]


class _UnguardableError(Exception):
    """An argument or result the guards cannot describe."""


_CONSTANTS = (bool, int, float, str, bytes, type(None), type(Ellipsis), slice, complex)


def _guard(value, tensors: list, seen: dict):
    """The guard of an argument structure: tensors by shape, dtype, strides, device,
    requires_grad and which earlier argument holds the same array, if one (each appended to
    `tensors`; `seen`: their positions by the id of their array), numbers and strings by value
    (a float by its sign too: -0.0 is not 0.0), tuples, lists and dicts by their items."""
    if isinstance(value, Tensor):
        same = seen.setdefault(id(value.array), len(tensors))  # as the recorder tells them
        tensors.append(value)
        array = value.array
        return (
            "tensor",
            array.shape,
            array.dtype,
            array.strides,
            type(array),
            value.requires_grad,
            same,
        )
    if isinstance(value, float):
        return (float, value if value == value else "nan", math.copysign(1.0, value))
    if isinstance(value, _CONSTANTS):
        return (type(value), value)
    if isinstance(value, (tuple, list)):
        return (type(value), tuple(_guard(v, tensors, seen) for v in value))
    if isinstance(value, dict):
        return (dict, tuple((k, _guard(v, tensors, seen)) for k, v in value.items()))
    if hasattr(value, "dtype") and hasattr(value, "shape"):
        raise _UnguardableError(
            f"an argument is a {type(value).__name__}, not a Tensor (make it one with "
            f"minitrain.tensor)"
        )
    raise _UnguardableError(f"an argument of type {type(value).__name__} cannot be guarded")


def _outputs(result, recorder: Recorder, leaves: list):
    """The shape of a result structure, its leaves appended to `leaves` as Program.outputs
    says."""
    if isinstance(result, Tensor):
        made = recorder.producer_of(result)
        if made is None:
            raise _UnguardableError(
                "the function returned a tensor made outside the ops (a new tensor from Python "
                "values, or one read from outside)"
            )
        kind, slot = made
        if kind == "slot" and slot in recorder.ref_slots:
            leaves.append(("ref", recorder.ref_slots.index(slot)))
        else:
            leaves.append((kind, slot))
        return "leaf"
    if isinstance(result, _CONSTANTS):
        leaves.append(("constant", result))
        return "leaf"
    if isinstance(result, (tuple, list)) and type(result) in (tuple, list):
        return (type(result), tuple(_outputs(v, recorder, leaves) for v in result))
    if isinstance(result, tuple) and hasattr(result, "_fields"):  # a namedtuple
        return (type(result), tuple(_outputs(v, recorder, leaves) for v in result))
    if type(result) is dict:
        return (dict, tuple((k, _outputs(v, recorder, leaves)) for k, v in result.items()))
    raise _UnguardableError(f"the function returned a {type(result).__name__}")


def _rebuild(shape, leaves):
    if shape == "leaf":
        return next(leaves)
    kind, items = shape
    if kind is dict:
        return {k: _rebuild(v, leaves) for k, v in items}
    values = [_rebuild(v, leaves) for v in items]
    if kind in (tuple, list):
        return kind(values)
    return kind(*values)  # a namedtuple


class OptimizedModule(Module):
    """A compiled module, as torch.compile returns it: the original is `_orig_mod` (so its
    parameters and state_dict keys carry that prefix, as PyTorch's do), its attributes read
    through, and its calls replay captured programs (CompiledFunction)."""

    def __init__(self, module: Module, fullgraph: bool = False):
        super().__init__()
        self._orig_mod = module
        object.__setattr__(
            self, "_compiled", CompiledFunction(module, type(module).__name__, fullgraph)
        )

    def forward(self, *args, **kwargs):
        return self._compiled(*args, **kwargs)

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.__dict__["_modules"]["_orig_mod"], name)

    def __repr__(self) -> str:
        return f"OptimizedModule({self._orig_mod!r})"


def compile(  # noqa: A001 (PyTorch's name)
    model=None,
    *,
    fullgraph: bool = False,
    dynamic=None,
    backend="inductor",
    mode=None,
    options=None,
    disable: bool = False,
):
    """Capture `model`'s calls once per set of guards and replay them, as torch.compile does:
    an nn.Module comes back as an OptimizedModule (its original as `_orig_mod`), a function as a
    function. As a decorator too: `@compile` and `@compile(fullgraph=True)`.

    The first two calls with new input shapes run eagerly while their ops are recorded; later
    ones replay the recorded program on arrays, one node in the autograd graph, with results
    equal to eager's (capture/program.py). A function that does something a replay cannot
    repeat (reads a tensor's value into Python, draws random numbers outside an op, writes
    tensors outside the ops, calls backward or a custom autograd.Function) runs eagerly, with a
    CompileWarning saying why, or a GraphError with `fullgraph=True`. `dynamic`, `backend`,
    `mode` and `options` are accepted and change nothing: shapes are always guarded (a new
    shape is a new capture), and the program is the same whatever the mode. `disable=True`
    returns `model` itself."""
    if model is None:
        return functools.partial(compile, fullgraph=fullgraph, disable=disable)
    if not callable(model):
        raise DTypeError(f"compile: expected a module or function, got {type(model).__name__}")
    if disable:
        return model
    if isinstance(model, Module):
        return OptimizedModule(model, fullgraph)
    compiled = CompiledFunction(model, getattr(model, "__name__", type(model).__name__), fullgraph)

    @functools.wraps(model)
    def run(*args, **kwargs):
        return compiled(*args, **kwargs)

    run.compiled = compiled
    return run

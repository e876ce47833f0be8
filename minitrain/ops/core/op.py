"""Op (one class per op, forward and backward side by side), the registry of ops, and
`Op.apply`, the one place where an op is checked, run and recorded and its output dtype decided."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ... import backend
from ...autograd import Node
from ...autograd.anomaly import check_forward
from ...autograd.grad_mode import recording
from ...autograd.versions import (
    check_plain_view_input,
    check_view_current,
    clock,
    note_plain_view,
    owner,
)
from ...errors import DTypeError, GraphError, ShapeError
from ...runtime.background_compile import KernelNotReady, falls_back
from ...tensor import Tensor
from .ctx import CTX_FIELDS, Ctx
from .header import validate_header
from .operands import array_of as array_of  # re-exported: the ops import these from here
from .operands import as_tensor as as_tensor
from .operands import check_broadcast, operand
from .operands import shape_of as shape_of
from .promotion import (
    FLOAT64,
    any_float64,
    check_one_dtype,
    mixed_dtypes,
    promote_pair,
)

__all__ = ["Ctx", "Op", "device_module", "input_place", "registry", "value_of"]

_new_object = object.__new__

_OPS: dict[str, type[Op]] = {}


class _OpType(type):
    def __repr__(cls):
        name = cls.__dict__.get("name")
        return f"<op {name}: {cls.grad_kernel}>" if name else super().__repr__()


class Op(metaclass=_OpType):
    """Base class of every op. A subclass declares, in its header:

    - `name`: the registry key and the name of its functional form (`ops.mul`);
    - `inputs`: names of the tensor inputs (`variadic = True`: one name, a sequence of tensors);
    - `attrs`: names of the non-tensor arguments, readable as `ctx.<name>`;
    - `saved`: names of what forward saves with `ctx.save(...)` for backward;
    - `grad_kernel`: display name of its backward kernel (default: class name + 'Grad');
    - `broadcast`: inputs broadcast against each other, and the engine sums their gradients back;
    - `promoted`: a pair of input names (a binary elementwise op's operands), cast before
      forward to one dtype, PyTorch's `result_type` of the two, so that forward and backward
      compute in it; `ctx.dtypes` keeps the inputs' own, and each gradient comes back in it;
    - `same_dtype`: the inputs must share one dtype (None inputs and numbers aside), as
      PyTorch's matmul and linear require: they do not promote;
    - `exact_dtype`: the output dtype is what forward chose (cast). Otherwise a float64 output
      that numpy made from inputs none of which is float64 (ints divided, an int's exp, ...)
      becomes float32, PyTorch's default float dtype;
    - `views`: the output may be a view of the first input's memory (reshape, transpose, basic
      indexing, broadcast_to), so it cannot change in place while in the graph;
    - `saved_as`: saved values that hold an input under another name, {saved name: input name}
      (the normalization kernels call the weight `scale`); a saved value named like an input
      holds that input already.

    Backward refuses to run on a saved value whose memory an in-place op wrote after the op
    was recorded (minitrain/autograd/versions.py); a saved value named like an input
    (`saved = ("x",)`) or `out` may be that input's array or the output, which in-place ops
    take care of.

    and then `forward(ctx, *arrays) -> array` and `backward(ctx, grad) -> grads`, both on arrays,
    one gradient per input (None where `ctx.needs_grad[i]` is False).

    Numba is chosen one way: `backend.numba_takes(*arrays)` (numba on, CPU numpy arrays of
    float32 or float64, of one dtype, none empty), asked once per call of the arrays the numba
    kernels would take, by one of two askers. An op whose numba kernels are its own has
    optional `numba_forward` / `numba_backward`, with the same signatures, and `apply` asks
    through `numba_applies(ctx, *arrays)`: by default `backend.numba_takes(*arrays)`; an op whose
    kernels need more (a row to run along, integer targets) overrides it with that condition
    and-ed to `backend.numba_takes`, never a test of its own. The choice is made once, in
    `apply`, and neither variant checks again: a backward runs the numba kernel when its forward
    did and numba is still on (the generic backward reads what a numba forward saved; a numba
    backward never reads a generic forward's). An op whose kernels are public array functions
    users call directly (conv_grad, im2col, the pooling kernels, lstm_cell_grad, gru_cell_grad,
    attention_grad) has no numba variants: each such kernel asks `backend.numba_takes` itself,
    in one call, and the op's forward asks it of the arrays its own kernel takes.

    A numba kernel is a second copy of an op's arithmetic, kept only for ops on the measured
    hot list: `numba_bench` names the `make bench` row (benchmarks/README.md's table) that
    keeps it. An op with `numba_forward` is refused at class definition without one (an op
    that names a `fused_backward` row has that row unless it names another); an op whose
    public kernels choose numba per call names their row too.

    The same `backward` serves create_graph, which runs it recorded (`run_tensor_backward`):
    `grad` is then a Tensor, and so is every saved input and `out` in `ctx`, each in the graph
    (an input's own node, the output this op made), and `ctx.xp` is the graph math
    (ops/core/graph_math.py), numpy's names over recorded ops; so a rule written with `ctx.xp`
    (or the `backend.array_module` of its arguments) and operators is differentiable again.
    The other saved values (masks, indices) stay arrays, constants to the second derivative, so
    a saved value computed from the inputs (a mean, an inverse standard deviation) must be put
    back in the graph (`value_of`) or recomputed from them. An op whose backward is a fused
    kernel no recorded op reproduces (in-place buffers, numba) gives `tensor_backward(ctx,
    grad)`, the formula in tensor ops, kept only where a benchmark shows the fused kernel pays:
    `fused_backward` names that `make bench` row (checked when the class is defined). An op
    with no second derivative says why in `no_double_backward`, and create_graph reaching it
    raises a GraphError naming it.
    """

    name: ClassVar[str] = ""
    inputs: ClassVar[tuple[str, ...]] = ()
    attrs: ClassVar[tuple[str, ...]] = ()
    saved: ClassVar[tuple[str, ...]] = ()
    grad_kernel: ClassVar[str] = ""
    broadcast: ClassVar[bool] = False
    promoted: ClassVar[tuple[str, ...]] = ()
    variadic: ClassVar[bool] = False
    exact_dtype: ClassVar[bool] = False
    same_dtype: ClassVar[bool] = False
    views: ClassVar[bool] = False
    saved_as: ClassVar[dict[str, str]] = {}
    numba_forward: ClassVar = None
    numba_backward: ClassVar = None
    numba_bench: ClassVar[str] = ""  # the `make bench` row that keeps the numba kernels
    tensor_backward: ClassVar = None  # only where `backward` is a fused kernel (see above)
    fused_backward: ClassVar[str] = ""  # then: the `make bench` row that keeps the fused one
    no_double_backward: ClassVar[str] = ""

    def __init_subclass__(cls, register: bool = True, **kwargs):
        super().__init_subclass__(**kwargs)
        if "grad_kernel" not in cls.__dict__:
            cls.grad_kernel = cls.__name__ + "Grad"
        cls._saved_names = frozenset(cls.saved)
        cls._attr_names = frozenset(cls.attrs)
        cls._input_count, cls._attr_count = len(cls.inputs), len(cls.attrs)
        cls._no_grads = (False,) * len(cls.inputs)
        cls._promoted_indices = tuple(
            index for index, name in enumerate(cls.inputs) if name in cls.promoted
        )  # () or the positions of the pair
        # (saved name, input position) of the saved values that may be an input's own array
        holds = {name: cls.saved_as.get(name, name) for name in cls.saved}  # name -> input
        cls.saved_inputs = (
            ()
            if cls.variadic
            else tuple(
                (name, cls.inputs.index(holds[name]))
                for name in cls.saved
                if holds[name] in cls.inputs
            )
        )
        cls.saves_output = "out" in cls.saved
        if not cls.numba_bench and cls.numba_forward is not None:
            cls.numba_bench = cls.fused_backward  # the row that keeps its fused kernel, if any
        if register:
            validate_header(cls, Op, CTX_FIELDS)
            if cls.name in _OPS:
                raise GraphError(f"op '{cls.name}' is registered twice ({_OPS[cls.name]}, {cls})")
            _OPS[cls.name] = cls

    @staticmethod
    def forward(ctx, *arrays):
        """The op on arrays (numpy or cupy, `ctx.xp`), one per name in `inputs` (a variadic op's
        sequence spread out): returns the output array. Attributes are `ctx.<name>`; what
        backward needs is kept with `ctx.save(...)`."""
        raise NotImplementedError

    @staticmethod
    def numba_applies(ctx, *arrays) -> bool:
        """Whether `numba_forward` runs for these inputs instead of `forward`, asked once per
        call, only for an op that has one, on the CPU. By default `backend.numba_takes`: numba
        on, float32 or float64 arrays of one dtype, none empty; an override and-s its own
        condition to it."""
        return backend.numba_takes(*arrays)

    @staticmethod
    def backward(ctx, grad):
        """The gradients of the inputs, on arrays, from `grad`, the output's: one per input (a
        tuple, or the array alone for one input), None where `ctx.needs_grad[i]` is False. The
        engine sums a `broadcast` op's gradients back to each input's shape and casts them to
        its dtype."""
        raise NotImplementedError

    @classmethod
    def run_tensor_backward(cls, node, grad, needs=None) -> tuple:
        """The backward of `node`, a recorded application of this op, for `grad` (a Tensor), in
        tensor ops and recorded: what create_graph runs. Gradients come back as Tensors.
        `needs`, where given, replaces the forward's `needs_grad` (grad() narrows it).

        The rule is the op's `backward` itself, handed Tensors and, as `ctx.xp`, the graph
        math of their device (ops/core/graph_math.py), so every array function it calls records
        the op of the same meaning; an op whose backward is a fused kernel no recorded op
        reproduces has a `tensor_backward` instead, and one with neither, `no_double_backward`."""
        if cls.no_double_backward:
            raise GraphError(
                f"{cls.grad_kernel}: the backward of {cls.name} has no form in tensor ops "
                f"({cls.no_double_backward}), so create_graph=True cannot differentiate through "
                f"it; take this op out of what a higher derivative flows through"
            )
        ctx = _tensor_ctx(node, grad)
        if needs is not None:
            ctx.needs_grad = needs
        grads = (cls.tensor_backward or cls.backward)(ctx, grad)
        if type(grads) is not tuple:
            grads = (grads,)
        for index, g in enumerate(grads):
            if g is not None and not isinstance(g, Tensor):
                raise GraphError(
                    f"{cls.grad_kernel}: the backward of {cls.name} under create_graph returned "
                    f"a {type(g).__name__} for input '{cls.input_name(index)}'; it must return "
                    f"Tensors (or None): it computed with something other than ctx.xp"
                )
        return tuple(_joined(ctx, node, g) for g in grads)

    @classmethod
    def input_name(cls, index: int) -> str:
        """The name of input `index` in messages: `inputs[index]`, or `name[index]` for a
        variadic op."""
        return cls.inputs[0] + f"[{index}]" if cls.variadic else cls.inputs[index]

    @classmethod
    def apply(cls, *inputs, **attrs):
        """Run the op on tensors (or numbers and arrays), recording it when a gradient is needed.

        The one place every op passes through, and where its output dtype is decided: check,
        promote the `promoted` pair, run forward, and (when an input requires grad and recording
        is on) validate the saved list and record a Node.

        Most calls take the short path: inputs Tensors of numpy arrays of one dtype (Python
        floats and ints beside them), not variadic, no in-place rebind ever made (no view can
        be stale), no GPU, no anomaly mode: nothing to promote, refuse or move, so it checks the
        attributes, runs forward and records. Any other call takes `_apply_any`, the full
        path; both make one tensor, ctx and Node (tests/engine/test_apply_paths.py).
        """
        if (
            cls.variadic
            or clock.latest_rebind >= 0
            or backend.cupy is not None
            or recording.anomaly
            or recording.capture is not None
            or (
                (attrs or cls.attrs)  # _apply_any raises the attributes' error
                and (len(attrs) != cls._attr_count or attrs.keys() != cls._attr_names)
            )
        ):
            return cls._apply_any(inputs, attrs)
        # One pass over the inputs collects what forward needs (arrays) and what recording
        # needs (where each gradient goes, input shapes): cheaper than a second pass to record.
        arrays, parents, needs_grad, shapes = [], [], [], []
        any_grad = numbers = False
        dtype = None
        for value in inputs:
            if isinstance(value, Tensor):
                array = value.array
                if array.dtype is not dtype:
                    if dtype is not None or type(array) is not np.ndarray:
                        return cls._apply_any(inputs, attrs)
                    dtype = array.dtype
                elif type(array) is not np.ndarray:
                    return cls._apply_any(inputs, attrs)
                arrays.append(array)
                shapes.append(array.shape)
                if value._requires_grad:  # its gradient goes to the node that made it, or itself
                    any_grad = True
                    parents.append(value if value.node is None else value.node)
                    needs_grad.append(True)
                else:
                    parents.append(None)
                    needs_grad.append(False)
            elif type(value) is float or type(value) is int:  # numpy's weak numbers: no cast
                numbers = True
                arrays.append(value)
                shapes.append(())
                parents.append(None)
                needs_grad.append(False)
            else:
                return cls._apply_any(inputs, attrs)
        if dtype is None or len(arrays) != cls._input_count:
            return cls._apply_any(inputs, attrs)  # numbers alone; or the count's error
        records = any_grad and recording.enabled
        # Ctx.__init__'s fields set here, and _run_forward's work done here: each call saved is
        # ~3% of a small op's cost (measured, the 100-op chain)
        ctx = _new_object(Ctx)
        ctx.op = cls
        ctx.xp = np
        ctx.needs_grad = tuple(needs_grad) if records else cls._no_grads
        ctx.records = records
        if attrs:
            ctx.__dict__.update(attrs)
        forward = cls.forward
        if cls.numba_forward is not None and cls.numba_applies(ctx, *arrays):
            forward = cls.numba_forward
            ctx.ran_numba = True
        try:
            out = forward(ctx, *arrays)
        except ValueError:
            if cls.broadcast:
                check_broadcast(cls, arrays)
            raise
        except KernelNotReady:
            out = None  # run again below, outside this handler: its errors are its own
        if out is None:
            out = cls._generic_forward(ctx, arrays)
        if type(out) is not np.ndarray and not isinstance(out, np.ndarray):
            out = np.asarray(out)  # a scalar (numpy's reductions)
        if out.dtype is not dtype and not cls.exact_dtype and out.dtype == FLOAT64 != dtype:
            out = out.astype(np.float32)  # ints or bools became float64: PyTorch's float32
        tensor = _new_object(Tensor)
        tensor.array = out
        tensor._grad = tensor._hooks = tensor.node = None
        tensor._requires_grad = records
        if cls.views and out.base is not None and isinstance(inputs[0], Tensor):
            _note_view(ctx, tensor, inputs[0], arrays[0], records)
        if not records:
            return tensor
        if cls.saved and not cls._saved_names <= ctx.__dict__.keys():
            raise GraphError(f"{cls.name}: forward did not save {cls.saved} for its backward")
        ctx.shapes = tuple(shapes)
        ctx.dtypes = (
            tuple([array.dtype if hasattr(array, "dtype") else None for array in arrays])
            if numbers
            else (dtype,) * len(arrays)
        )
        tensor.node = Node(cls, ctx, tuple(parents), tensor)
        return tensor

    @classmethod
    def _run_forward(cls, ctx, arrays):
        """The forward on the arrays, its numba kernel where it applies (on numpy arrays);
        numpy's broadcasting error becomes ours, naming the op and the shapes."""
        forward = cls.forward
        if cls.numba_forward is not None and ctx.xp is np and cls.numba_applies(ctx, *arrays):
            forward = cls.numba_forward
            ctx.ran_numba = True
        try:
            return forward(ctx, *arrays)
        except ValueError:
            if cls.broadcast:
                check_broadcast(cls, arrays)
            raise
        except KernelNotReady:
            pass  # run again below, outside this handler: its errors are its own
        return cls._generic_forward(ctx, arrays)

    @classmethod
    def _generic_forward(cls, ctx, arrays):
        """The forward again, on its generic kernels: a numba kernel it called is compiling in
        the background (runtime/background_compile.py). A kernel raises KernelNotReady before it
        writes anything, and forwards write only arrays they made: running again is safe. With
        numba paused, `_run_forward` picks the generic forward and no kernel can raise again."""
        ctx.__dict__.pop("ran_numba", None)  # so the backward is the generic one too
        with backend.numba_paused():
            return cls._run_forward(ctx, arrays)

    @classmethod
    def _apply_any(cls, inputs, attrs):
        """`apply`'s full path, which serves every call: numpy numbers, arrays and lists for
        inputs, dtypes to promote, views to check, GPU arrays, anomaly mode, variadic ops."""
        if len(attrs) != len(cls.attrs) or (attrs and attrs.keys() != cls._attr_names):
            raise GraphError(
                f"{cls.name}: expected attributes {sorted(cls.attrs)}, got {sorted(attrs)}"
            )
        if cls.variadic:
            if len(inputs) != 1 or isinstance(inputs[0], Tensor):
                raise DTypeError(f"{cls.name}: '{cls.inputs[0]}' must be a sequence of tensors")
            inputs = tuple(inputs[0])
            if not inputs:
                raise ShapeError(f"{cls.name}: '{cls.inputs[0]}' is empty")
        elif len(inputs) != len(cls.inputs):
            raise DTypeError(f"{cls.name}: takes inputs {cls.inputs}, got {len(inputs)} values")

        # One pass over the inputs collects what forward needs (arrays) and what recording
        # needs (where each gradient goes, input shapes and dtypes): this is the hot path.
        arrays, parents, needs_grad, shapes, dtypes = [], [], [], [], []
        any_grad = numpy_number = False
        rebound = clock.latest_rebind  # an in-place op moved a tensor to a new node then
        for value in inputs:
            if isinstance(value, Tensor):
                array = value.array
                if value._requires_grad:
                    any_grad = True
                    node = value.node
                    if node is None:
                        parents.append(value)
                    else:
                        parents.append(node)
                        if node.seq < rebound and node.ctx.is_view and recording.enabled:
                            check_view_current(node)
                    needs_grad.append(True)
                else:
                    parents.append(None)
                    needs_grad.append(False)
                    if rebound >= 0 and recording.enabled:
                        check_plain_view_input(value)
            else:
                array = operand(value, cls, len(arrays))
                if isinstance(array, np.generic):
                    numpy_number = True
                parents.append(None)
                needs_grad.append(False)
            arrays.append(array)
            if hasattr(array, "dtype"):
                shapes.append(array.shape)
                dtypes.append(array.dtype)
            else:
                shapes.append(())
                dtypes.append(None)
        capture = recording.capture
        given = list(arrays) if capture is not None else None  # before promotion casts them
        records = any_grad and recording.enabled
        needs_grad = tuple(needs_grad) if records else (False,) * len(arrays)
        if capture is None:
            ctx, out = cls.forward_arrays(arrays, dtypes, numpy_number, attrs, needs_grad, records)
        else:
            capture.in_op += 1  # a random draw now is the op's own, replayed with it
            try:
                ctx, out = cls.forward_arrays(
                    arrays, dtypes, numpy_number, attrs, needs_grad, records
                )
            finally:
                capture.in_op -= 1
        if recording.anomaly:
            ctx.trace = check_forward(cls.name, arrays, out)
        tensor = Tensor.wrap(out)
        if cls.views and out.base is not None and isinstance(inputs[0], Tensor):
            _note_view(ctx, tensor, inputs[0], arrays[0], records)
        if records:
            if cls.saved and not cls._saved_names <= ctx.__dict__.keys():
                raise GraphError(f"{cls.name}: forward did not save {cls.saved} for its backward")
            ctx.shapes = tuple(shapes)
            ctx.dtypes = tuple(dtypes)
            tensor.node = Node(cls, ctx, tuple(parents), tensor)
            tensor._requires_grad = True
        if capture is not None:  # minitrain.compile is capturing (capture/recorder.py)
            capture.op(cls, inputs, given, attrs, ctx, tensor)
        return tensor

    @classmethod
    def forward_arrays(cls, arrays, dtypes, numpy_number, attrs, needs_grad, records):
        """The array half of `_apply_any`: `arrays` (a list, the inputs as arrays, numbers
        beside them; `dtypes` theirs, None for numbers; `numpy_number` where one is a numpy
        scalar) checked for one dtype where the op wants it, the promoted pair cast, the
        forward run, a scalar made an array and numpy's float64 from ints made float32.
        Returns (ctx, out). A compiled program's replay (minitrain.capture) runs each op
        through here, the same computation as the eager call."""
        if cls.same_dtype and mixed_dtypes(dtypes):
            check_one_dtype(cls.name, **{cls.input_name(i): a for i, a in enumerate(arrays)})
        promoted = cls._promoted_indices
        if promoted:
            # numpy's own promotion is PyTorch's for arrays of one dtype and Python numbers; a
            # numpy scalar (a number to PyTorch) or arrays of two dtypes need PyTorch's rule
            first, second = dtypes[promoted[0]], dtypes[promoted[1]]
            if numpy_number or (first is not second and first is not None and second is not None):
                promote_pair(arrays, promoted)
        xp = np if backend.cupy is None else backend.array_module(*arrays)
        if xp is not np:
            backend.check_same_device(cls.name, arrays)
        ctx = Ctx(cls, xp, needs_grad, records, attrs)
        out = cls._run_forward(ctx, arrays)
        if type(out) is not np.ndarray and not backend.is_array(out):
            out = xp.asarray(out)  # a scalar (numpy's reductions); not to_device's GPU array
        if out.dtype == FLOAT64 and not cls.exact_dtype and not any_float64(dtypes):
            # numpy made float64 from ints or numbers; PyTorch's default float dtype is float32
            out = out.astype(np.float32)
        return ctx, out


def _joined(ctx, node, grad):
    """A gradient a create_graph backward computed as a constant, joined with a derivative of
    zero to the inputs that require grad and whose values the op saved for it. relu's is the
    incoming gradient (a constant) where a mask of its input's values lets it through: as a
    function of the input it is piecewise constant, and PyTorch's stays in the graph
    (ThresholdBackwardBackward reads the input), so the next derivative gives zeros, not an
    error. A gradient the op's saved values do not shape (x * 3.0's) stays a constant, as
    PyTorch's does."""
    if grad is None or grad.requires_grad:
        return grad
    saved = node.ctx.__dict__
    read = {index for name, index in node.op.saved_inputs if saved.get(name) is not None}
    if node.op.saves_output and saved.get("out") is not None:
        read = range(len(node.parents))
    for index in sorted(read):
        if node.parents[index] is not None:
            grad = ZeroDerivative.apply(grad, input_place(ctx, index))
    return grad


def _tensor_ctx(node, grad) -> Ctx:
    """A copy of `node`'s ctx for its backward under create_graph: each saved input and `out`
    as a Tensor in the graph, so that what the backward computes from them is differentiable
    again; `xp`, the graph math of `grad`'s device; `node`, for `input_place` and `value_of`."""
    ctx = object.__new__(Ctx)
    ctx.__dict__.update(node.ctx.__dict__)
    ctx.node = node
    ctx.xp = backend.array_module(grad)  # a Tensor's module: graph math (ops/core/graph_math.py)
    saved = ctx.__dict__
    for name, index in node.op.saved_inputs:
        value = _zero_dim(saved.get(name))
        if backend.is_array(value):  # not None, nor a number given for the input
            saved[name] = _input_tensor(node, index, value)
    if node.op.saves_output and saved.get("out") is not None:
        saved["out"] = _in_graph(_zero_dim(saved["out"]), node)
    return ctx


def _zero_dim(value):
    """A numpy scalar (numpy's arithmetic and reductions on 0-d arrays give these) as the 0-d
    array it stands for: in a Tensor, a scalar would promote as a Python number does (a
    float64 one with an int to float32)."""
    return np.asarray(value) if isinstance(value, np.generic) else value


def _in_graph(array, node) -> Tensor:
    """A Tensor of `array` that `node` produced: gradients sent to it go to that node."""
    tensor = Tensor.wrap(array)
    tensor.node = node
    tensor._requires_grad = True
    return tensor


def _input_tensor(node, index, array) -> Tensor:
    """Input `index` of `node`, whose forward saw it as `array`, as a Tensor in the graph: the
    leaf itself, an alias of the node that made it, or (where forward saw a cast of it, or a
    leaf's data was rebound since) the saved array on a pass-through to its source; a constant
    where the input needs no gradient."""
    parent = node.parents[index]
    if parent is None:
        return Tensor.wrap(array)
    if type(parent) is Node:
        dtype = node.ctx.dtypes[index]
        if array.dtype == dtype:
            return _in_graph(array, parent)
        return SavedInput.apply(_in_graph(array.astype(dtype), parent), array=array)
    if parent.array is array:
        return parent
    return SavedInput.apply(parent, array=array)


def device_module(ctx):
    """numpy or cupy: the array module of the device an op ran on, in its backward whether
    first-order (`ctx.xp` itself) or under create_graph (where `ctx.xp` is the graph math over
    it): for the constants a backward builds from saved indices and masks."""
    return getattr(ctx.xp, "xp", ctx.xp)


def input_place(ctx, index: int) -> Tensor | None:
    """Input `index` of a tensor_backward's node as a place in the graph, without its values
    (an op that saved no copy of the input has none to give): the leaf itself, or a
    zero-memory Tensor on the node that made the input; None where it needs no gradient. For an
    op that takes a value's derivative from saved values alone (`value_of`, RowInvStd)."""
    parent = ctx.node.parents[index]
    if parent is None or type(parent) is not Node:
        return parent
    xp = ctx.xp
    return _in_graph(xp.broadcast_to(xp.zeros((), ctx.dtypes[index]), ctx.shapes[index]), parent)


def value_of(ctx, index: int, value, rule) -> Tensor:
    """`value`, an array forward computed from input `index` (softmax's probabilities, x minus
    its mean) and saved, as a Tensor in the graph that moves with that input: its derivative is
    `rule(grad, value)`, in arithmetic arrays and Tensors share, so that it serves the first
    and every higher derivative. The input itself need not have been saved: a tensor_backward
    gets its second derivative without the first-order path keeping more memory. A constant
    where the input needs no gradient."""
    place = input_place(ctx, index)
    if place is None:
        return Tensor.wrap(value)
    return ValueOf.apply(place, value=value, rule=rule)


# the two places a forward runs, each running it again on its generic kernels where a numba
# kernel it called is compiling (runtime/background_compile.py)
falls_back(Op.__dict__["apply"].__func__)
falls_back(Op.__dict__["_run_forward"].__func__)


class ValueOf(Op, register=False):
    """`value_of`'s op: its output is the saved value, its input the place of the input the
    value was computed from; backward is `rule(grad, out)`, on arrays or, for the next
    derivative, on Tensors."""

    name = "value_of"
    inputs = ("source",)
    attrs = ("value", "rule")
    saved = ("out",)
    exact_dtype = True

    @staticmethod
    def forward(ctx, source):
        ctx.save(out=ctx.value)
        return ctx.value

    @staticmethod
    def backward(ctx, grad):
        """dsource = rule(grad, out)."""
        return ctx.rule(grad, ctx.out)


class SavedInput(Op, register=False):
    """An input as its op's forward saw it (a promoted cast of it, or its values before a
    leaf's data was rebound), joined to the input's own graph: `_input_tensor`'s link. The
    gradient passes through to the source, cast to its dtype."""

    name = "saved_input"
    inputs = ("source",)
    attrs = ("array",)
    exact_dtype = True

    @staticmethod
    def forward(ctx, source):
        return ctx.array

    @staticmethod
    def backward(ctx, grad):
        """dsource = grad (the engine casts it to the source's dtype)."""
        return grad


class ZeroDerivative(Op, register=False):
    """`value`, joined to `anchor` with a derivative of zero: `_joined`'s link. Its output is a
    copy (only create_graph makes one), so that the gradient it gives can change in place."""

    name = "zero_derivative"
    inputs = ("value", "anchor")
    exact_dtype = True

    @staticmethod
    def forward(ctx, value, anchor):
        return value.copy()

    @staticmethod
    def backward(ctx, grad):
        """dvalue = grad, danchor = 0."""
        if not ctx.needs_grad[1]:
            return grad, None
        zeros = device_module(ctx).zeros(ctx.shapes[1], ctx.dtypes[1])
        return grad, Tensor.wrap(zeros) if isinstance(grad, Tensor) else zeros


def _note_view(ctx, view, source, array, records) -> None:
    """Where a `views` op's output does view its input's memory (not every reshape or index
    does), mark it: the in-place rules refuse writes through views of tensors in the graph, and
    a view taken outside the graph is remembered with its source (autograd/versions.py)."""
    if owner(view.array) is owner(array):
        ctx.is_view = True
        if not records:
            note_plain_view(view, source)


def registry() -> dict[str, type[Op]]:
    """Every registered op by name; each op class shows its backward kernel's display name."""
    return dict(sorted(_OPS.items()))

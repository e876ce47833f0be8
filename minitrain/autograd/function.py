"""`Function`: a custom op written as PyTorch's `torch.autograd.Function`, a forward and a
backward on Tensors, recorded as one Node.

    class Cube(minitrain.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale):
            ctx.save_for_backward(x)
            ctx.scale = scale
            return x * x * x * scale

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 3 * x * x * ctx.scale, None  # None: scale is a number

    y = Cube.apply(x, 2.0)

How a call becomes a Node. `apply` runs forward with recording off, as PyTorch does: forward
sees its arguments as they are (PyTorch's do not detach them either), but nothing it computes
is recorded. Where an argument
requires grad and grad mode is on, it then records one Node, whose op is a class made once per
Function class (`FunctionBackward`, shown as `<CubeBackward>`), whose parents are the
arguments' places in the graph (None for numbers and tensors that need no gradient), and whose
ctx is the `FunctionCtx` forward filled. A Function with one differentiable output makes that
output the Node's. With several, the Node's output is their values packed in one flat array,
and each output is a slice of it (`FunctionOutput`, also shown as `<CubeBackward>`), so the
gradients of all the outputs that take part in a backward arrive at the Node as one.

The Node's backward calls the Function's `backward` with a Tensor per output (zeros where one
had no gradient, or None under `ctx.set_materialize_grads(False)`) and checks what it returns:
one gradient per argument, None or a Tensor of the argument's shape (or one that sums down to
it, as PyTorch's sum_to). A first-order backward runs it under `no_grad` on plain Tensors; under
create_graph it runs recorded, with `ctx.saved_tensors` giving the inputs and outputs it saved
in the graph, so a backward written with Tensor ops is differentiable again, unless marked
`@once_differentiable`.

Sits in the ops layer (tests/architecture/test_layers.py) beside `autograd.functional`: it is
built from Tensors and Op, above the engine it records into."""

from __future__ import annotations

import copy
import functools

import numpy as np

from .. import backend
from ..autograd import Node
from ..autograd.deferred import SliceSum
from ..autograd.grad_mode import no_grad, recording
from ..autograd.versions import check_plain_view_input, check_view_current, clock
from ..errors import DTypeError, GraphError, ShapeError
from ..ops.core.op import Op
from ..ops.shapes.indexing import placed_at
from ..runtime.background_compile import runs_user_code
from ..tensor import Tensor

__all__ = ["Function", "FunctionCtx", "once_differentiable"]


class FunctionCtx:
    """The `ctx` a Function's forward fills and its backward reads: PyTorch's
    `save_for_backward` / `saved_tensors`, `needs_input_grad`, `mark_non_differentiable`,
    `set_materialize_grads`, and any attribute the forward sets (`ctx.constant = ...`).

    The engine reads the rest (`needs_grad`, `shapes`, `dtypes`, `released`, ...) as it reads an
    op's `Ctx`."""

    released = False
    ran_numba = False
    out_written = None
    trace = None
    is_view = False
    xp = np
    seq = -1  # the Node's sequence number, once recorded

    def __init__(self, function, needs_input_grad):
        self.function = function
        self.needs_input_grad = needs_input_grad
        self.needs_grad = needs_input_grad
        self.to_save = ()  # the tensors save_for_backward kept (their arrays), None kept as None
        self.saved_places = ()  # where each came from: ("input", i), ("output", i) or None
        self.non_differentiable = ()
        self.materialize_grads = True
        self.received = set()  # outputs whose gradient reached the Node, this backward
        self.in_graph = None  # the saved tensors as a backward under create_graph sees them

    def __repr__(self):
        return f"<ctx of {self.function.__name__}>"

    def save_for_backward(self, *tensors) -> None:
        """Keep tensors (or None) for the backward, which reads them as `ctx.saved_tensors`:
        inputs and outputs of forward are checked there against in-place writes since."""
        for index, tensor in enumerate(tensors):
            if tensor is not None and not isinstance(tensor, Tensor):
                raise DTypeError(
                    f"{self.function.__name__}: save_for_backward takes Tensors or None, got a "
                    f"{type(tensor).__name__} at position {index} (keep other values as "
                    f"attributes of ctx: ctx.value = ...)"
                )
        self.to_save = tensors

    @property
    def saved_tensors(self) -> tuple:
        """The tensors forward saved, for the backward: an in-place write to one since raises a
        GraphError; under create_graph the saved inputs and outputs are in the graph."""
        if self.released:
            raise GraphError(
                f"{self.function.__name__}Backward: trying to backward through the graph a "
                f"second time; its saved tensors were freed after the first backward. Pass "
                f"retain_graph=True to the first backward (or grad) call if you need to walk "
                f"the graph again."
            )
        self._check_unwritten()
        if self.in_graph is not None:
            return self.in_graph
        return tuple(None if t is None else Tensor.wrap(t.array) for t in self.to_save)

    def _check_unwritten(self) -> None:
        if self.seq < 0 or clock.latest_write <= self.seq:
            return
        for index, tensor in enumerate(self.to_save):
            if tensor is None:
                continue
            written = clock.written_since(tensor.array, self.seq)
            if written is not None:
                raise GraphError(
                    f"{self.function.__name__}Backward: saved tensor {index} "
                    f"(ctx.save_for_backward's argument {index}, of shape "
                    f"{tuple(tensor.array.shape)}) was modified by an in-place operation: saved "
                    f"at version {written[0]}, now at version {written[1]}. Clone it before "
                    f"changing it, or change it after backward"
                )

    def mark_non_differentiable(self, *outputs) -> None:
        """These outputs of forward get no gradient: they do not require grad, and the backward
        receives zeros (or None) for them."""
        self.non_differentiable = self.non_differentiable + outputs

    def set_materialize_grads(self, value: bool) -> None:
        """With False, an output no gradient reached gives the backward None, not zeros."""
        self.materialize_grads = bool(value)

    def mark_dirty(self, *tensors) -> None:
        """PyTorch's in-place Functions, not supported: minitrain refuses in-place changes to
        tensors in the graph it cannot follow. Return a new tensor from forward instead."""
        raise GraphError(
            f"{self.function.__name__}: ctx.mark_dirty (an in-place custom Function) is not "
            f"supported in minitrain; return a new tensor from forward (x.clone() changed in "
            f"place, say) instead of the input changed in place"
        )

    def save_for_forward(self, *tensors) -> None:
        """Forward-mode AD (jvp) is not supported: raises a GraphError."""
        raise GraphError(
            f"{self.function.__name__}: forward-mode AD (save_for_forward, jvp) is not supported "
            f"in minitrain"
        )

    def saved_values(self) -> dict:
        """The arrays still held for the backward, by name (what drawings show)."""
        return {f"saved_tensors[{i}]": t.array for i, t in enumerate(self.to_save) if t is not None}

    def release(self) -> None:
        """Drop the saved tensors (after a backward, unless retain_graph)."""
        self.to_save = ()
        self.in_graph = None
        self.released = True


class FunctionBackward(Op, register=False):
    """The op of a Function's Node (one subclass per Function class, named after it): its
    backward calls the Function's, on Tensors. Never applied through `Op.apply`."""

    saved = ("to_save",)  # so that the walk releases the ctx after the backward
    broadcast = True  # a gradient that sums down to its input's shape is summed, as PyTorch's
    function = None  # the Function class

    @classmethod
    def input_name(cls, index: int) -> str:
        """Argument `index` of forward, in messages."""
        return f"input {index}"

    @classmethod
    def backward(cls, ctx, grad):
        """The Function's backward under no_grad, on Tensors, its gradients as arrays."""
        grads = _output_grads(ctx, grad)
        with no_grad():
            result = _call_backward(cls.function, ctx, grads)
        return tuple(None if g is None else g.array for g in result)

    @classmethod
    def run_tensor_backward(cls, node, grad, needs=None) -> tuple:
        """The Function's backward recorded (create_graph): what it computes with Tensor ops
        from the gradients and the saved inputs and outputs is differentiable again."""
        ctx = node.ctx
        if ctx.released:
            raise node.freed_error()
        grads = _output_grads(ctx, grad)
        ctx = copy.copy(ctx)
        places = zip(ctx.to_save, ctx.saved_places, strict=True)
        ctx.in_graph = tuple(_saved_in_graph(node, t, p) for t, p in places)
        return _call_backward(cls.function, ctx, grads)


def _saved_in_graph(node, tensor, place):
    """A saved tensor as a create_graph backward sees it: an input, the input itself in the
    graph; an output, on the Node that made it; anything else, a constant."""
    if tensor is None:
        return None
    if place is not None:
        kind, index = place
        if kind == "input":
            parent = node.parents[index]
            if parent is not None and type(parent) is not Node:
                return parent if parent.array is tensor.array else Tensor.wrap(tensor.array)
            if parent is not None:
                return _on_node(tensor.array, parent)
        else:
            made_by = node.ctx.output_nodes[index]
            if made_by is not None:
                return _on_node(tensor.array, made_by)
    return Tensor.wrap(tensor.array)


def _on_node(array, node) -> Tensor:
    tensor = Tensor.wrap(array)
    tensor.node = node
    tensor._requires_grad = True
    return tensor


class FunctionOutput(Op, register=False):
    """One output of a Function with several differentiable outputs: a slice of the packed
    output of its Node, reshaped and cast to the output's own; its backward places the gradient
    at the slice (a SliceSum, so the outputs' gradients add up in one array)."""

    name = "function_output"
    inputs = ("packed",)
    attrs = ("start", "stop", "shape", "dtype", "index", "core")
    exact_dtype = True

    @staticmethod
    def forward(ctx, packed):
        return packed[ctx.start : ctx.stop].reshape(ctx.shape).astype(ctx.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        """dpacked = zeros with grad, flattened, at [start:stop]."""
        ctx.core.received.add(ctx.index)
        packed_dtype = ctx.dtypes[0]
        value = grad.reshape(-1).astype(packed_dtype, copy=False)
        return SliceSum(ctx.shapes[0], (slice(ctx.start, ctx.stop),), value)

    @classmethod
    def run_tensor_backward(cls, node, grad, needs=None) -> tuple:
        ctx = node.ctx
        ctx.core.received.add(ctx.index)
        index = (slice(ctx.start, ctx.stop),)
        return (placed_at(ctx.xp, grad.reshape(-1), ctx.shapes[0], index),)


class DelayedError(Op, register=False):
    """What a `@once_differentiable` backward's gradients pass through under create_graph:
    the gradient itself forward, and a GraphError naming the Function when a higher derivative
    reaches it. `anchor` ties it to the input whose gradient it is."""

    name = "once_differentiable"
    inputs = ("grad", "anchor")
    attrs = ("function",)
    exact_dtype = True

    @staticmethod
    def forward(ctx, grad, anchor):
        return grad.copy()

    @staticmethod
    def backward(ctx, grad):
        """Raises: the backward was marked @once_differentiable."""
        raise GraphError(
            f"{ctx.function}Backward: trying to differentiate twice a Function whose backward is "
            f"marked @once_differentiable; remove the decorator and write its backward with "
            f"Tensor ops to take a higher derivative through it"
        )


def _output_grads(ctx, grad) -> list:
    """The gradient of each output of forward, from the Node's (one output's, or the packed
    ones'), as the Function's backward takes them: Tensors, zeros or None where none came."""
    materialize = ctx.materialize_grads
    grads = []
    for index, (start, stop, shape, dtype, tensor_output) in enumerate(ctx.layout):
        if start is None:  # not differentiable
            value = None
            if materialize and tensor_output:
                value = Tensor.wrap(ctx.xp.zeros(shape, dtype))
        elif ctx.packed:
            if index in ctx.received:
                value = grad[start:stop].reshape(shape)
                if isinstance(value, Tensor):
                    value = value.astype(dtype) if value.dtype != dtype else value
                else:
                    value = Tensor.wrap(value.astype(dtype, copy=False))
            elif materialize:
                value = Tensor.wrap(ctx.xp.zeros(shape, dtype))
            else:
                value = None
        else:
            value = grad if isinstance(grad, Tensor) else Tensor.wrap(grad)
        grads.append(value)
    ctx.received.clear()  # for the next backward through this node (retain_graph)
    return grads


def _call_backward(function, ctx, grads) -> tuple:
    """The Function's backward, its result checked: one gradient per argument of forward,
    None or a Tensor whose shape sums down to the argument's."""
    name = function.__name__
    result = function.backward(ctx, *grads)
    if not isinstance(result, tuple):
        result = (result,)
    count = len(ctx.shapes)
    if len(result) > count and all(g is None for g in result[count:]):
        result = result[:count]  # PyTorch allows extra Nones
    if len(result) != count:
        raise GraphError(
            f"{name}.backward returned {len(result)} gradient(s), but forward took {count} "
            f"argument(s): return one per argument of forward (None for a non-tensor one, "
            f"or one that needs no gradient)"
        )
    checked = []
    for index, g in enumerate(result):
        if g is None or not ctx.needs_grad[index]:
            checked.append(None)
            continue
        if not isinstance(g, Tensor):
            raise DTypeError(
                f"{name}.backward returned a {type(g).__name__} as the gradient of input "
                f"{index}; it must be a Tensor or None"
            )
        shape = ctx.shapes[index]
        if tuple(g.shape) != shape:
            try:
                fits = np.broadcast_shapes(shape, tuple(g.shape)) == tuple(g.shape)
            except ValueError:
                fits = False
            if not fits:
                raise ShapeError(
                    f"{name}.backward returned a gradient of shape {tuple(g.shape)} for input "
                    f"{index}, of shape {shape}"
                )
        checked.append(g)
    return tuple(checked)


def once_differentiable(backward):
    """Mark a Function's backward as not differentiable itself (PyTorch's decorator): it runs
    under no_grad, and under create_graph the gradients it returns raise a GraphError naming the
    Function when a higher derivative reaches them."""

    @functools.wraps(backward)
    def wrapper(ctx, *grads):
        with no_grad():
            result = backward(ctx, *[None if g is None else g.detach() for g in grads])
        if not recording.enabled or ctx.in_graph is None:  # a first-order backward
            return result
        single = not isinstance(result, tuple)
        result = (result,) if single else result
        anchors = [a for a in ctx.in_graph if a is not None and a.requires_grad]
        wrapped = []
        for index, g in enumerate(result):
            if isinstance(g, Tensor) and index < len(ctx.inputs_in_graph):
                anchor = ctx.inputs_in_graph[index]
                if anchor is None and anchors:
                    anchor = anchors[0]
                if anchor is not None:
                    g = DelayedError.apply(g, anchor, function=ctx.function.__name__)
            wrapped.append(g)
        return wrapped[0] if single else tuple(wrapped)

    return wrapper


class _FunctionMeta(type):
    def __init__(cls, name, bases, namespace):
        super().__init__(name, bases, namespace)
        cls._backward_op = type(
            f"{name}Backward",
            (FunctionBackward,),
            {"name": name, "grad_kernel": f"{name}Backward", "function": cls},
            register=False,
        )
        cls._output_op = type(
            f"{name}Output",
            (FunctionOutput,),
            {"name": f"{name}_output", "grad_kernel": f"{name}Backward"},
            register=False,
        )


class Function(metaclass=_FunctionMeta):
    """A custom op with its own backward, as PyTorch's `torch.autograd.Function`.

    Subclass it with two static methods, `forward(ctx, *args, **kwargs)` (Tensors in, a Tensor
    or a tuple out) and `backward(ctx, *grad_outputs)` (one gradient per output in, one per
    argument of forward out: None for a number, or an input that needs no gradient), and call
    `MyFn.apply(*args)`:

    ```python
    import minitrain as mt

    class Square(mt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 2 * x * grad

    x = mt.tensor([1.0, 2.0], requires_grad=True)
    Square.apply(x).sum().backward()  # x.grad: [2., 4.]
    ```

    forward runs without recording (its arguments as given, as PyTorch's); the outputs require
    grad when an argument does (and grad mode is on), and their `grad_fn` is `<SquareBackward>`.
    The ctx has `save_for_backward` / `saved_tensors` (an in-place change to a saved tensor
    since raises at the backward), `needs_input_grad`, `mark_non_differentiable`,
    `set_materialize_grads` and any attribute forward sets. PyTorch 2's form, a forward without
    ctx and `setup_context(ctx, inputs, output)`, works too. A backward written with Tensor ops
    is differentiable again under create_graph; `@once_differentiable` marks one that is not.
    Not supported: `ctx.mark_dirty` (in-place Functions), forward-mode AD (`jvp`) and `vmap`.
    """

    @staticmethod
    def forward(ctx, *args, **kwargs):
        """The op on Tensors, run without recording, returning a Tensor or a tuple."""
        raise NotImplementedError("a Function subclass must define forward")

    @staticmethod
    def backward(ctx, *grad_outputs):
        """One gradient per argument of forward (None where there is none), from one per
        output."""
        raise NotImplementedError("a Function subclass must define backward")

    @staticmethod
    def setup_context(ctx, inputs, output):
        """PyTorch 2's form: fill ctx from forward's `inputs` (a tuple) and `output`, where
        forward takes no ctx. Not overridden: forward takes ctx itself."""
        raise NotImplementedError

    @staticmethod
    def jvp(ctx, *grad_inputs):
        """Forward-mode AD: not supported in minitrain."""
        raise GraphError("Function.jvp: forward-mode AD is not supported in minitrain")

    @staticmethod
    def vmap(info, in_dims, *args):
        """torch.vmap support: not supported in minitrain."""
        raise GraphError("Function.vmap: vmap is not supported in minitrain")

    def __init__(self, *args, **kwargs):
        raise GraphError(
            f"{type(self).__name__}: a Function is not instantiated; call "
            f"{type(self).__name__}.apply(...)"
        )

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run forward on `args` and, where one requires grad and grad mode is on, record the
        call as one Node whose backward is this class's `backward`."""
        if recording.capture is not None:
            recording.capture.breaks(
                f"the custom autograd.Function {cls.__name__} (its backward is Python code a "
                f"replay does not run)"
            )
        records = recording.enabled
        needs = []
        parents = []
        shapes = []
        dtypes = []
        rebound = clock.latest_rebind
        arguments = []
        for value in args:
            if isinstance(value, Tensor):
                if value._requires_grad and records:
                    node = value.node
                    parents.append(value if node is None else node)
                    if node is not None and node.seq < rebound and node.ctx.is_view:
                        check_view_current(node)
                    needs.append(True)
                else:
                    if rebound >= 0 and records:
                        check_plain_view_input(value)
                    parents.append(None)
                    needs.append(False)
                shapes.append(tuple(value.array.shape))
                dtypes.append(value.array.dtype)
                arguments.append(value)  # as PyTorch: the tensor itself, recording off
            else:
                parents.append(None)
                needs.append(False)
                shapes.append(())
                dtypes.append(None)
                arguments.append(value)
        ctx = FunctionCtx(cls, tuple(needs))
        new_style = cls.setup_context is not Function.setup_context
        with no_grad():
            if new_style:
                output = cls.forward(*arguments, **kwargs)
                cls.setup_context(ctx, tuple(arguments), output)
            else:
                output = cls.forward(ctx, *arguments, **kwargs)
        single = not isinstance(output, tuple)
        outputs = (output,) if single else output
        if not any(needs):
            return output
        ctx.shapes, ctx.dtypes = tuple(shapes), tuple(dtypes)
        return _record(cls, ctx, tuple(parents), arguments, outputs, single)


def _record(cls, ctx, parents, arguments, outputs, single):
    """The Node of one call of `cls`, its outputs made Tensors in the graph."""
    non_diff = {id(t) for t in ctx.non_differentiable}
    if single and not isinstance(outputs[0], Tensor):
        raise DTypeError(
            f"{cls.__name__}.forward returned a {type(outputs[0]).__name__}; it must return a "
            f"Tensor or a tuple"
        )
    differentiable = [
        i
        for i, out in enumerate(outputs)
        if isinstance(out, Tensor) and id(out) not in non_diff and out.array.dtype.kind == "f"
    ]
    # where each saved tensor came from, by identity with forward's arguments and outputs
    places = []
    for tensor in ctx.to_save:
        place = None
        if tensor is not None:
            for i, arg in enumerate(arguments):
                if arg is tensor and ctx.needs_input_grad[i]:
                    place = ("input", i)
            for i, out in enumerate(outputs):
                if out is tensor and i in differentiable:
                    place = ("output", i)
        places.append(place)
    ctx.saved_places = tuple(places)
    ctx.output_nodes = [None] * len(outputs)
    # a fresh Tensor per output (an output may be an argument, or come from outside the graph)
    results = [Tensor.wrap(out.array) if isinstance(out, Tensor) else out for out in outputs]
    layout = []
    packed = len(differentiable) > 1
    offset = 0
    for i, out in enumerate(outputs):
        tensor_output = isinstance(out, Tensor)
        shape = tuple(out.array.shape) if tensor_output else ()
        dtype = out.array.dtype if tensor_output else None
        if i in differentiable:
            size = out.array.size
            layout.append((offset, offset + size, shape, dtype, True))
            offset += size
        else:
            layout.append((None, None, shape, dtype, tensor_output))
    ctx.layout = layout
    tensor_arrays = [out.array for out in outputs if isinstance(out, Tensor)]
    if tensor_arrays:
        ctx.xp = backend.array_module(*tensor_arrays)  # zeros for a backward on its device
    ctx.packed = packed
    op = cls._backward_op
    if not differentiable:
        return results[0] if single else tuple(results)
    if not packed:
        index = differentiable[0]
        tensor = results[index]
        node = Node(op, ctx, parents, tensor)
        tensor.node = node
        tensor._requires_grad = True
        ctx.output_nodes[index] = node
    else:
        arrays = [outputs[i].array for i in differentiable]
        dtype = np.result_type(*[a.dtype for a in arrays])
        flat = backend.array_module(*arrays).concatenate(
            [a.reshape(-1).astype(dtype, copy=False) for a in arrays]
        )
        whole = Tensor.wrap(flat)
        node = Node(op, ctx, parents, whole)
        whole.node = node
        whole._requires_grad = True
        for i in differentiable:
            start, stop, shape, dtype, _ = layout[i]
            out = cls._output_op.apply(
                whole, start=start, stop=stop, shape=shape, dtype=dtype, index=i, core=ctx
            )
            results[i] = out
            ctx.output_nodes[i] = out.node
    ctx.seq = node.seq
    ctx.inputs_in_graph = tuple(
        p if p is None or type(p) is not Node else _on_node(arguments[i].array, p)
        for i, p in enumerate(parents)
    )
    return results[0] if single else tuple(results)


# A Function's forward and backward are user code: a numba kernel they call directly compiles at
# its call, since running them again on generic kernels could repeat what else they do
# (runtime/background_compile.py)
runs_user_code(Function.__dict__["apply"].__func__)
runs_user_code(_call_backward)

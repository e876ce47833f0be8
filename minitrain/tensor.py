"""Tensor: an array plus its gradient, `requires_grad` and the Node that made it.

Every operator and method calls a registered op: no arithmetic lives here. The functions that
create tensors are in creation.py, the readers of their arguments in arguments.py."""

from __future__ import annotations

import numpy as np

from . import backend
from .arguments import (
    as_array,
    device_and_dtype,
)
from .autograd import RemovableHandle
from .autograd import backward as autograd_backward
from .autograd.boundary import TensorClass
from .autograd.grad_mode import recording
from .errors import ArgumentError, DeviceError, DTypeError, GraphError, ShapeError
from .inplace import InPlaceMethods, in_place_twin
from .runtime.defaults import get_default_dtype
from .tensor_repr import tensor_repr


def _note_value_read(what: str) -> None:
    """A tensor's values are being read into Python: a capture running now (minitrain.compile)
    cannot replay what the function does with them (a branch, a number in an op's argument)."""
    capture = recording.capture
    if capture is not None:
        capture.breaks(f"{what} read a tensor's values into Python, which a replay would not do")


_new_object = object.__new__


def _rebuilt_tensor(cls, array, requires_grad: bool, grad):
    """A tensor of class `cls` from what `Tensor.__reduce_ex__` pickled."""
    tensor = _new_object(cls)
    tensor.array = array
    tensor._grad = grad
    tensor._requires_grad = requires_grad
    tensor.node = None
    tensor._hooks = None
    return tensor


class Size(tuple):
    """PyTorch's torch.Size: a shape, a tuple of ints, which `Tensor.size()` returns and which
    `Tensor(size)` reads as sizes (where a plain tuple is values, as in PyTorch)."""

    __slots__ = ()

    def numel(self) -> int:
        """The number of elements a tensor of this shape has: the product of the sizes."""
        count = 1
        for size in self:
            count *= size
        return count

    def __repr__(self) -> str:
        return f"minitrain.Size({list(self)})"


def _check_grad_dtype(array, caller: str) -> None:
    if array.dtype.kind != "f":
        raise DTypeError(
            f"{caller}: only floating-point tensors can require grad, got dtype {array.dtype}"
        )


class Tensor(InPlaceMethods):
    """An n-dimensional array that can record the ops applied to it and carry a gradient.

    `Tensor(array)` wraps an array without copying; `minitrain.tensor(data)` copies. The array
    is `.array` (numpy's, or CuPy's on a GPU); `.data` is PyTorch's, a Tensor sharing it.
    """

    __slots__ = (
        "array",
        "_grad",
        "_requires_grad",
        "node",
        "_hooks",
        # set only on a view taken outside the graph, and read with getattr(..., None), so that
        # no other tensor pays for it: what it views (autograd/versions.py, PlainView)
        "_plain_view",
        "__weakref__",
    )
    __array_ufunc__ = None  # `ndarray + Tensor` calls Tensor.__radd__ instead of looping in numpy

    def __init__(self, data=(), *sizes: int, requires_grad: bool = False, dtype=None, device=None):
        # PyTorch's torch.Tensor: sizes give an uninitialised tensor of that shape, Python data
        # (a list, a tuple) a copy in the default dtype; an array or Tensor is wrapped as it is
        shape = None
        if isinstance(data, Size) and not sizes:
            shape = tuple(data)
        elif type(data) is int and all(type(size) is int for size in sizes):
            shape = (data, *sizes)
        elif sizes:
            raise DTypeError(
                f"Tensor: expected sizes (ints) or one sequence of values, got "
                f"{', '.join(type(a).__name__ for a in (data, *sizes))}"
            )
        if shape is not None:
            data = np.empty(shape, dtype=np.dtype(get_default_dtype() if dtype is None else dtype))
        elif isinstance(data, (list, tuple)) and dtype is None:
            dtype = get_default_dtype()  # torch.Tensor's Python data: the default dtype
        self.array = as_array(data.array if isinstance(data, Tensor) else data, dtype, device)
        self._grad: Tensor | None = None
        self._requires_grad = False
        self.node = None
        self._hooks = None
        if requires_grad:
            self.requires_grad = True

    @staticmethod
    def wrap(data) -> Tensor:
        """A leaf Tensor around an array, without the constructor's checks and copies: the fast
        constructor ops use for their outputs (Op.apply attaches the Node when it records)."""
        tensor = _new_object(Tensor)
        tensor.array = data
        tensor._grad = None
        tensor._requires_grad = False
        tensor.node = None
        tensor._hooks = None
        return tensor

    def __reduce_ex__(self, protocol):
        # A pickle or deep copy holds the array, requires_grad and the gradient, not the graph
        # (its Node, hooks, views): a tensor computed by an op comes back a leaf, as in PyTorch
        state = getattr(self, "__dict__", None) or None  # a subclass's own attributes
        return _rebuilt_tensor, (type(self), self.array, self._requires_grad, self._grad), state

    # `array` (a slot) is the numpy or CuPy array holding the values: what ops read and write.

    @property
    def data(self) -> Tensor:
        """PyTorch's `.data`: a Tensor sharing this one's memory, outside the graph and not
        requiring grad (`p.data.add_(...)`, `w.data.normal_(0, 0.02)`, `x.data.numpy()`).

        As `detach()`; one difference from PyTorch: the two share a version, since a version
        belongs to memory here (autograd/versions.py), so an in-place write through `.data` to
        a value a graph saved is refused at backward instead of silently changing the
        gradient. The raw array is `.array`. Assigning `x.data = other` (a Tensor) makes `x`
        hold `other`'s memory, any shape or dtype, as in PyTorch."""
        return Tensor.wrap(self.array)

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise DTypeError(
                f"data: must be set to a Tensor, got {type(value).__name__} (wrap an array as "
                f"Tensor(array), or assign the array to .array)"
            )
        if self._requires_grad:
            _check_grad_dtype(value.array, "data")
        self.array = value.array

    # The autograd state: requires_grad, the gradient, hooks.

    @property
    def requires_grad(self) -> bool:
        """Whether ops on this tensor are recorded so that a gradient can flow to it.

        Only a floating-point tensor can require grad (DTypeError otherwise); a tensor computed by a
        recorded op requires grad and cannot be set back to False (GraphError: use `detach()`)."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if self.node is not None and not value:
            raise GraphError(
                "requires_grad: cannot turn it off on a tensor computed by an op; "
                "use .detach() for a copy outside the graph"
            )
        if value:
            _check_grad_dtype(self.array, "requires_grad")
        if recording.capture is not None:  # minitrain.compile: a replay would not set it
            recording.capture.breaks("requires_grad was set during the call")
        self._requires_grad = bool(value)

    @property
    def grad(self) -> Tensor | None:
        """The accumulated gradient, a Tensor, or None. Any Tensor may be assigned (an optimizer
        casts its dtype and checks its shape); backward accumulates only into one of this
        tensor's shape."""
        if recording.capture is not None:  # minitrain.compile: a replay would read the old one
            recording.capture.breaks(".grad was read during the call")
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None and not isinstance(value, Tensor):
            raise DTypeError(
                f"grad: must be a Tensor or None, got {type(value).__name__} "
                f"(wrap an array as Tensor(array))"
            )
        self._grad = value

    @property
    def is_leaf(self) -> bool:
        """Whether the tensor is a leaf, not computed by a recorded op (no `grad_fn`): a tensor
        made by the user, or any result computed without recording."""
        return self.node is None

    @property
    def grad_fn(self):
        """The Node that produced this tensor (None for leaves), as in PyTorch."""
        return self.node

    def detach(self) -> Tensor:
        """The same data (and so the same version), outside any graph."""
        return Tensor.wrap(self.array)

    def backward(
        self,
        gradient=None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        inputs=None,
        *,
        grad=None,
    ) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's `.grad`. `gradient` (PyTorch's name;
        `grad` too) defaults to 1 for a one-element tensor; saved arrays are freed afterwards
        unless `retain_graph=True`. With `create_graph=True` the backward pass is recorded too:
        each `.grad` then carries the graph of how it was computed (a gradient penalty, a
        Hessian-vector product), and `retain_graph` defaults to True. `inputs`: accumulate into
        these tensors' `.grad` only (`minitrain.autograd.backward`)."""
        if grad is not None:
            if gradient is not None:
                raise ArgumentError("backward: give `gradient` or `grad`, not both")
            gradient = grad
        autograd_backward(self, gradient, retain_graph, create_graph, inputs)

    def register_hook(self, hook) -> RemovableHandle:
        """Call `hook(grad)` when this tensor's gradient is computed; a returned tensor replaces
        the gradient. Returns a handle whose `remove()` takes the hook off."""
        if recording.capture is not None:
            recording.capture.breaks("register_hook was called (a replay registers no hook)")
        if not self.requires_grad:
            raise GraphError("register_hook: the tensor does not require grad")
        if not callable(hook):
            raise DTypeError(f"register_hook: hook must be callable, got {type(hook).__name__}")
        if self.node is None:
            if self._hooks is None:
                self._hooks = []
            hooks = self._hooks
        else:
            if self.node.hooks is None:
                self.node.hooks = []
            hooks = self.node.hooks
        hooks.append(hook)
        return RemovableHandle(hooks, hook)

    def retain_grad(self) -> None:
        """Keep this non-leaf tensor's gradient in `.grad` during backward (leaves always do)."""
        if recording.capture is not None:
            recording.capture.breaks("retain_grad was called (a replay keeps no gradient)")
        if not self.requires_grad:
            raise GraphError("retain_grad: the tensor does not require grad")
        if self.node is not None:
            self.node.retains_grad = True

    @property
    def retains_grad(self) -> bool:
        """Whether `retain_grad()` was called on this non-leaf tensor, so that backward
        keeps its gradient in `.grad`; False for leaves."""
        return self.node is not None and self.node.retains_grad

    def _accumulate_grad(self, grad, owned: bool = False) -> None:
        if isinstance(grad, Tensor):
            # create_graph: a gradient with its graph. A copy, recorded, as PyTorch's
            # AccumulateGrad clones: the gradient may be the caller's own grad tensor. Sums are
            # new tensors, so an earlier .grad's graph stays as it was.
            self._grad = grad.clone() if self._grad is None else self._grad + grad
        elif self._grad is None:
            # An array nothing else holds (`owned`, the engine checked) becomes .grad as is;
            # any other is copied: it may be shared with other tensors or be a read-only
            # broadcast view, and this .grad must own its memory.
            if not owned:
                grad = self.xp.array(grad, dtype=self.dtype, copy=True)
            self._grad = Tensor.wrap(grad)
        elif self._grad._requires_grad:  # a .grad from create_graph: leave its graph alone
            self._grad = Tensor.wrap(self._grad.array + grad)
        else:
            self._grad.array = self._grad.array + grad

    # The array's facts: shape, dtype, device, its values in Python.

    @property
    def shape(self) -> tuple:
        """The size of each dim, as a tuple of ints (PyTorch's `torch.Size`)."""
        return self.array.shape

    @property
    def ndim(self) -> int:
        """The number of dims."""
        return self.array.ndim

    @property
    def dtype(self):
        """The element type, a numpy dtype (`np.float32`, `np.int64`, `np.bool_`, ...)."""
        return self.array.dtype

    @property
    def device(self) -> backend.Device:
        """Where the data lives, a `Device`: `cpu` or `cuda:N`; it compares equal to its
        string (`x.device == "cpu"`)."""
        return backend.device_of(self.array)

    @property
    def is_cuda(self) -> bool:
        """Whether the tensor lives on a GPU."""
        return backend.device_of(self.array).type == "cuda"

    @property
    def xp(self):
        """The array module of the data: `numpy` on the CPU, `cupy` on a GPU."""
        return backend.array_module(self.array)

    def size(self, dim: int | None = None):
        """The shape as a `Size` (a tuple of ints, PyTorch's torch.Size), or with `dim` the
        size of that one dim (negative counts from the end)."""
        return Size(self.array.shape) if dim is None else self.array.shape[dim]

    def numel(self) -> int:
        """The number of elements, the product of the shape (`nelement` is the same
        method)."""
        return int(self.array.size)

    nelement = numel

    def dim(self) -> int:
        """The number of dims, as `ndim`."""
        return self.array.ndim

    def __len__(self) -> int:
        if self.array.ndim == 0:
            raise DTypeError("len() of a 0-d tensor")  # a TypeError, as PyTorch's and Python's
        return self.array.shape[0]

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The data as a numpy array (no copy). CUDA tensors: call .cpu() first, or pass
        `force=True` for a copy in host memory (a tensor in the graph needs no detach here)."""
        _note_value_read("Tensor.numpy()")
        if force and not isinstance(self.array, np.ndarray):
            return backend.to_device(self.array, backend.device("cpu"))
        if not isinstance(self.array, np.ndarray):
            raise DeviceError(
                f"numpy: can't convert a tensor on {self.device} to numpy; use Tensor.cpu() to "
                f"copy it to host memory first"
            )
        return self.array

    def item(self):
        """The value of a one-element tensor as a Python number (ShapeError for any other
        size). On a GPU, reading it first raises any failed device-side check kept until then."""
        if self.array.size != 1:
            raise ShapeError(f"item: the tensor has {self.array.size} elements, not 1")
        _note_value_read("Tensor.item()")
        if type(self.array) is not np.ndarray:
            backend.raise_deferred_checks()  # a read from a GPU: its kept checks are read too
        return self.array.reshape(()).item()

    def tolist(self):
        """The elements as nested Python lists (a Python number for a 0-d tensor). On a
        GPU, reading them first raises any failed device-side check kept until then."""
        _note_value_read("Tensor.tolist()")
        if type(self.array) is not np.ndarray:
            backend.raise_deferred_checks()
        return self.array.tolist()

    def __array__(self, dtype=None, copy=None):
        _note_value_read("numpy's conversion of a Tensor (np.asarray)")
        array = self.numpy()
        return array if dtype is None else array.astype(dtype, copy=False)

    def __bool__(self) -> bool:
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        """A one-element integer (or bool) tensor as a Python int, where Python wants an index:
        `items[t]`, `range(t)`, a slice bound. Others raise PyTorch's TypeError."""
        if self.array.size != 1 or self.dtype.kind not in "iub":
            raise DTypeError(
                "only integer tensors of a single element can be converted to an index"
            )
        return int(self.item())

    def __format__(self, format_spec: str) -> str:
        """`f"{loss:.4f}"`: a 0-d tensor formats its number; with an empty spec, any tensor
        formats as str; any other spec raises Python's TypeError, as PyTorch's does (for a
        subclass such as Parameter too)."""
        if self.array.ndim == 0 and type(self) is Tensor:
            return format(self.item(), format_spec)
        return object.__format__(self, format_spec)

    __hash__ = object.__hash__

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __repr__(self) -> str:
        _note_value_read("printing a Tensor")
        return tensor_repr(self)

    # Drawing hooks in from above: minitrain.viz sets it when imported (a function Tensor -> HTML);
    # without it, Jupyter shows the plain repr.
    html_view = None

    def _repr_html_(self) -> str | None:
        return None if Tensor.html_view is None else Tensor.html_view(self)

    # Moves and casts: recorded to a floating dtype, outside the graph to any other.

    def to(self, target=None, *, device=None, dtype=None) -> Tensor:
        """Move to a device ('cpu', 'cuda:0', a Device) and/or cast to a dtype, recorded:
        `to('cuda')`, `to(np.float64)`, or PyTorch's keyword form `to(device=..., dtype=...)`.
        With nothing to change, the tensor itself, as in PyTorch."""
        device, dtype = device_and_dtype("Tensor.to", target, device, dtype)
        out = self
        if device is not None and device != self.device:
            out = ops.to_device(out, device)
        return out if dtype is None or dtype == out.dtype else ops.cast(out, dtype)

    def clone(self) -> Tensor:
        """A copy of the data that stays in the graph (its gradient flows back to self)."""
        return ops.cast(self, self.dtype)

    def cpu(self) -> Tensor:
        """The tensor on the CPU: itself if it is there already, else a copy recorded in the
        graph (`to("cpu")`)."""
        return self.to("cpu")

    def cuda(self, device=None) -> Tensor:
        """On a GPU: `device` an index (0 by default), 'cuda:1' or a Device."""
        if device is None or isinstance(device, (int, np.integer)):
            device = f"cuda:{0 if device is None else int(device)}"
        return self.to(device)

    # The arithmetic operators call their op class directly: the functional forms (ops.add,
    # ...) add nothing for them but a Python call, and these are the framework's hottest lines.

    def __add__(self, other):
        return Add.apply(self, other)

    def __radd__(self, other):
        return Add.apply(other, self)

    def __sub__(self, other):
        return Sub.apply(self, other)

    def __rsub__(self, other):
        return Sub.apply(other, self)

    def __mul__(self, other):
        return Mul.apply(self, other)

    def __rmul__(self, other):
        return Mul.apply(other, self)

    def __truediv__(self, other):
        return Div.apply(self, other)

    def __rtruediv__(self, other):
        return Div.apply(other, self)

    def __pow__(self, exponent):
        return ops.pow(self, exponent)

    def __rpow__(self, base):
        return ops.pow(base, self)

    def __matmul__(self, other):
        return ops.matmul(self, other)

    def __rmatmul__(self, other):
        return ops.matmul(other, self)

    def __neg__(self):
        return Neg.apply(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return ops.abs(self)

    def __eq__(self, other):  # type: ignore[override]
        return ops.eq(self, other)

    def __ne__(self, other):  # type: ignore[override]
        return ops.ne(self, other)

    def __lt__(self, other):
        return ops.lt(self, other)

    def __le__(self, other):
        return ops.le(self, other)

    def __gt__(self, other):
        return ops.gt(self, other)

    def __ge__(self, other):
        return ops.ge(self, other)

    # %, // and the bitwise operators (ops/pointwise/binary_math.py, predicates.py)

    def __mod__(self, other):
        return ops.remainder(self, other)

    def __rmod__(self, other):
        return ops.remainder(other, self)

    def __floordiv__(self, other):
        return ops.floor_divide(self, other)

    def __rfloordiv__(self, other):
        return ops.floor_divide(other, self)

    def __and__(self, other):
        return ops.bitwise_and(self, other)

    def __rand__(self, other):
        return ops.bitwise_and(other, self)

    def __or__(self, other):
        return ops.bitwise_or(self, other)

    def __ror__(self, other):
        return ops.bitwise_or(other, self)

    def __xor__(self, other):
        return ops.bitwise_xor(self, other)

    def __rxor__(self, other):
        return ops.bitwise_xor(other, self)

    def __invert__(self):
        return ops.bitwise_not(self)

    def __lshift__(self, other):
        return ops.bitwise_left_shift(self, other)

    def __rlshift__(self, other):
        return ops.bitwise_left_shift(other, self)

    def __rshift__(self, other):
        return ops.bitwise_right_shift(self, other)

    def __rrshift__(self, other):
        return ops.bitwise_right_shift(other, self)

    def __getitem__(self, index):
        return ops.getitem(self, index)

    def __setitem__(self, index, value):
        """x[index] = value, in place (getitem's index rules; see minitrain/inplace.py)."""
        ops.assign(self, index, value)


TensorClass.cls = Tensor  # what the engine's edges check for and wrap arrays in (boundary.py)

from . import ops  # noqa: E402  (ops need Tensor defined first)
from .ops.core.variants import declared  # noqa: E402
from .ops.pointwise.arithmetic import Add, Div, Mul, Neg, Sub  # noqa: E402
from .tensor_methods import TensorMethods  # noqa: E402  (the method table; it reads ops)


def _bind_method_table() -> None:
    """The methods of tensor_methods.TensorMethods, bound here: PyTorch's methods no op
    declares, each calling its op (a shape spread out, dim or axis, PyTorch's spellings)."""
    for name, member in vars(TensorMethods).items():
        if not name.startswith("__"):
            setattr(Tensor, name, member)


def _bind_declared_methods() -> None:
    """The methods and in-place twins the ops declare (ops/core/variants.py), bound here: the
    method is the op's function itself, the tensor as self."""
    for variant in declared():
        for name in (*variant.methods, *variant.inplace):
            if hasattr(Tensor, name):
                raise GraphError(f"Tensor.{name} is both defined on Tensor and declared")
        for name in variant.methods:
            setattr(Tensor, name, variant.function)
        for name in variant.inplace:
            setattr(Tensor, name, in_place_twin(variant.function, name))


_bind_method_table()
_bind_declared_methods()

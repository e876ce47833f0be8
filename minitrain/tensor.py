"""Tensor: an array plus its gradient, `requires_grad` and the Node that made it; and the
functions that create tensors. Every operator and method calls a registered op: no arithmetic
lives here."""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from . import backend
from .autograd import RemovableHandle, _root_grads, backward
from .errors import ArgumentError, DeviceError, DTypeError, GraphError, ShapeError

float16, float32, float64 = np.float16, np.float32, np.float64
int32, int64 = np.int32, np.int64

_new_object = object.__new__

MinMax = namedtuple("MinMax", ["values", "indices"])


def as_array(data, dtype=None, device=None):
    """Turn data into an array. Python floats (and lists of them) become float32, Python ints
    int64; numpy arrays and scalars keep their dtype unless `dtype` is given."""
    if isinstance(data, Tensor):
        array = data.data
    elif backend.is_array(data) or isinstance(data, np.generic):
        array = data
    else:
        array = nested_array(data, "tensor")
        if dtype is None and array.dtype == np.float64:
            array = array.astype(np.float32)
        elif array.dtype.kind not in "biuf":
            raise DTypeError(
                f"tensor: cannot make a tensor from {type(data).__name__} "
                f"(numpy made dtype {array.dtype} of it)"
            )
    xp = backend.array_module(array)
    array = xp.asarray(array, dtype=dtype)
    if device is not None:
        array = backend.to_device(array, backend.device(device))
    return array


def nested_array(data, where: str):
    """np.asarray(data), where ragged nested sequences are a ShapeError saying where they are
    ragged, as PyTorch does (numpy's error names neither the dim nor the lengths)."""
    try:
        return np.asarray(data)
    except ValueError:
        ragged = _ragged(data)
        if ragged is None:
            raise
        raise ShapeError(f"{where}: nested sequences must be rectangular: {ragged}") from None


def _ragged(data) -> str | None:
    """Where nested sequences first stop being rectangular, in words (None if they are)."""
    items, dim = [data], 0
    while items:
        sequences = [_is_sequence(item) for item in items]
        if not any(sequences):
            return None
        if not all(sequences):
            return f"at dim {dim}, some elements are sequences and some are not"
        lengths = [len(item) for item in items]
        other = next((n for n in lengths if n != lengths[0]), None)
        if other is not None:
            return f"expected a sequence of length {lengths[0]} at dim {dim}, got {other}"
        items, dim = [element for item in items for element in item], dim + 1
    return None


def _is_sequence(item) -> bool:
    """A list or tuple, or an array or Tensor of at least one dim (numpy takes either)."""
    return isinstance(item, (list, tuple)) or getattr(item, "ndim", 0) > 0


def _check_grad_dtype(array, where: str) -> None:
    if array.dtype.kind != "f":
        raise DTypeError(
            f"{where}: only floating-point tensors can require grad, got dtype {array.dtype}"
        )


def _dims(dim, axis, where: str):
    """One reduction argument from PyTorch's `dim` or numpy's `axis` spelling."""
    if dim is not None and axis is not None:
        raise DTypeError(f"{where}: give dim or axis, not both")
    dim = axis if dim is None else dim
    if isinstance(dim, bool) or (isinstance(dim, tuple) and any(type(d) is bool for d in dim)):
        raise DTypeError(f"{where}: dim must be an int or a tuple of ints, got {dim!r}")
    return dim


def _correction(dim, unbiased, correction, where: str):
    """(dim, correction) from PyTorch's var / std arguments: x.var(False) means unbiased=False."""
    if isinstance(dim, bool):
        if unbiased is not None:
            raise ArgumentError(f"{where}: unbiased given twice ({dim!r} in dim's place)")
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise ArgumentError(f"{where}: give unbiased or correction, not both")
    if unbiased is not None:
        if not isinstance(unbiased, (bool, np.bool_)):
            raise DTypeError(f"{where}: unbiased must be a bool, got {unbiased!r}")
        return dim, int(unbiased)
    return dim, 1 if correction is None else correction


def _keep(keepdim, keepdims) -> bool:
    return bool(keepdims if keepdims is not None else keepdim)


class Tensor:
    """An n-dimensional array that can record the ops applied to it and carry a gradient.

    `Tensor(array)` wraps an array without copying; `minitrain.tensor(data)` copies.
    """

    __slots__ = ("data", "_grad", "_requires_grad", "node", "_hooks", "__weakref__")
    __array_ufunc__ = None  # `ndarray + Tensor` calls Tensor.__radd__ instead of looping in numpy

    def __init__(self, data, requires_grad: bool = False, dtype=None, device=None):
        self.data = as_array(data, dtype, device)
        self._grad: Tensor | None = None
        self._requires_grad = False
        self.node = None
        self._hooks = None
        if requires_grad:
            self.requires_grad = True

    @staticmethod
    def _from_op(data, node) -> Tensor:
        """The fast constructor ops use: data is already an array, node is None or its Node."""
        tensor = _new_object(Tensor)
        tensor.data = data
        tensor._grad = None
        tensor._requires_grad = node is not None
        tensor.node = node
        tensor._hooks = None
        return tensor

    # --- autograd state -------------------------------------------------------------------

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if self.node is not None and not value:
            raise GraphError(
                "requires_grad: cannot turn it off on a tensor computed by an op; "
                "use .detach() for a copy outside the graph"
            )
        if value:
            _check_grad_dtype(self.data, "requires_grad")
        self._requires_grad = bool(value)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        self.requires_grad = requires_grad
        return self

    @property
    def grad(self) -> Tensor | None:
        """The accumulated gradient, a Tensor, or None. Any Tensor may be assigned (an optimizer
        casts its dtype and checks its shape); backward accumulates only into one of this
        tensor's shape."""
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
        return self.node is None

    @property
    def grad_fn(self):
        """The Node that produced this tensor (None for leaves), as in PyTorch."""
        return self.node

    def detach(self) -> Tensor:
        """The same data, outside any graph."""
        return Tensor._from_op(self.data, None)

    def backward(self, gradient=None, retain_graph: bool = False, *, grad=None) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's `.grad`. `gradient` (PyTorch's name;
        `grad` too) defaults to 1 for a one-element tensor; saved arrays are freed afterwards
        unless `retain_graph=True`."""
        if grad is not None:
            if gradient is not None:
                raise ArgumentError("backward: give `gradient` or `grad`, not both")
            gradient = grad
        seeds = _root_grads([self], [gradient], "backward")
        backward([self], seeds, retain_graph=retain_graph)

    def register_hook(self, hook) -> RemovableHandle:
        """Call `hook(grad)` when this tensor's gradient is computed; a returned tensor replaces
        the gradient. Returns a handle whose `remove()` takes the hook off."""
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
        if not self.requires_grad:
            raise GraphError("retain_grad: the tensor does not require grad")
        if self.node is not None:
            self.node.retains_grad = True

    @property
    def retains_grad(self) -> bool:
        return self.node is not None and self.node.retains_grad

    def _accumulate_grad(self, grad, owned: bool = False) -> None:
        if self._grad is None:
            # An array nothing else holds (`owned`, the engine checked) becomes .grad as is;
            # any other is copied: it may be shared with other tensors or be a read-only
            # broadcast view, and this .grad must own its memory.
            if not owned:
                grad = self.xp.array(grad, dtype=self.dtype, copy=True)
            self._grad = Tensor._from_op(grad, None)
        else:
            self._grad.data = self._grad.data + grad

    # --- array facts ----------------------------------------------------------------------

    @property
    def shape(self) -> tuple:
        return self.data.shape

    @property
    def ndim(self) -> int:
        return self.data.ndim

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def device(self) -> backend.Device:
        return backend.device_of(self.data)

    @property
    def xp(self):
        return backend.array_module(self.data)

    def size(self, dim: int | None = None):
        return self.data.shape if dim is None else self.data.shape[dim]

    def numel(self) -> int:
        return int(self.data.size)

    nelement = numel

    def dim(self) -> int:
        return self.data.ndim

    def __len__(self) -> int:
        if self.data.ndim == 0:
            raise ShapeError("len() of a 0-d tensor")
        return self.data.shape[0]

    def numpy(self) -> np.ndarray:
        """The data as a numpy array (no copy). CUDA tensors: call .cpu() first."""
        if not isinstance(self.data, np.ndarray):
            raise DeviceError(f"numpy: the tensor is on {self.device}; call .cpu() first")
        return self.data

    def item(self):
        if self.data.size != 1:
            raise ShapeError(f"item: the tensor has {self.data.size} elements, not 1")
        return self.data.reshape(()).item()

    def tolist(self):
        return self.data.tolist()

    def __array__(self, dtype=None, copy=None):
        array = self.numpy()
        return array if dtype is None else array.astype(dtype, copy=False)

    def __bool__(self) -> bool:
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    __hash__ = object.__hash__

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __repr__(self) -> str:
        data = self.data if isinstance(self.data, np.ndarray) else self.cpu().data
        body = np.array2string(
            data, separator=", ", prefix="tensor(", precision=4, suppress_small=True
        )
        extras = []
        if self.dtype not in (np.float32, np.int64, np.bool_) or data.size == 0:
            extras.append(f"dtype={self.dtype}")
        if self.device != backend.CPU:
            extras.append(f"device='{self.device}'")
        if self.node is not None:
            extras.append(f"grad_fn=<{self.node.name}>")
        elif self.requires_grad:
            extras.append("requires_grad=True")
        return "tensor(" + ", ".join([body, *extras]) + ")"

    def _repr_html_(self) -> str:
        from .viz import tensor_html

        return tensor_html(self)

    # --- device and dtype -----------------------------------------------------------------

    def to(self, target=None, *, device=None, dtype=None) -> Tensor:
        """Move to a device ('cpu', 'cuda:0', a Device) and/or cast to a dtype, recorded:
        `to('cuda')`, `to(np.float64)`, or PyTorch's keyword form `to(device=..., dtype=...)`."""
        device, dtype = device_and_dtype("Tensor.to", target, device, dtype)
        out = self
        if device is not None:
            out = ops.to_device(out, device)
        return out if dtype is None else ops.cast(out, dtype)

    def clone(self) -> Tensor:
        """A copy of the data that stays in the graph (its gradient flows back to self)."""
        return ops.cast(self, self.dtype)

    def cpu(self) -> Tensor:
        return self.to("cpu")

    def cuda(self, index: int = 0) -> Tensor:
        return self.to(f"cuda:{index}")

    def float(self) -> Tensor:
        return ops.cast(self, np.dtype(np.float32))

    def double(self) -> Tensor:
        return ops.cast(self, np.dtype(np.float64))

    def half(self) -> Tensor:
        return ops.cast(self, np.dtype(np.float16))

    def astype(self, dtype) -> Tensor:
        return ops.cast(self, dtype)

    def long(self) -> Tensor:
        """As int64, outside the graph (an integer has no gradient, as in PyTorch)."""
        return ops.cast(self, np.int64)

    def int(self) -> Tensor:
        """As int32, outside the graph."""
        return ops.cast(self, np.int32)

    def bool(self) -> Tensor:
        """As bool (nonzero is True), outside the graph."""
        return ops.cast(self, np.bool_)

    def type_as(self, other: Tensor) -> Tensor:
        """Cast to other's dtype: recorded to a floating dtype, outside the graph otherwise."""
        return ops.cast(self, other.dtype)

    # --- operators ------------------------------------------------------------------------
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
        return ops.equal(self, other)

    def __ne__(self, other):  # type: ignore[override]
        return ops.not_equal(self, other)

    def __lt__(self, other):
        return ops.less(self, other)

    def __le__(self, other):
        return ops.less_equal(self, other)

    def __gt__(self, other):
        return ops.greater(self, other)

    def __ge__(self, other):
        return ops.greater_equal(self, other)

    def __getitem__(self, index):
        return ops.getitem(self, index)

    def __setitem__(self, index, value):
        raise GraphError(
            "Tensor does not support item assignment: minitrain has no in-place ops, so saved "
            "values can never change under the graph. Build the value with where/concat/pad."
        )

    # --- elementwise ----------------------------------------------------------------------

    def exp(self):
        return ops.exp(self)

    def log(self):
        return ops.log(self)

    def sqrt(self):
        return ops.sqrt(self)

    def abs(self):
        return ops.abs(self)

    def pow(self, exponent):
        return ops.pow(self, exponent)

    def maximum(self, other):
        return ops.maximum(self, other)

    def minimum(self, other):
        return ops.minimum(self, other)

    def clip(self, min=None, max=None):  # noqa: A002 (PyTorch's and numpy's names)
        return ops.clip(self, min, max)

    clamp = clip

    def clamp_min(self, min):  # noqa: A002
        return ops.clip(self, min, None)

    def clamp_max(self, max):  # noqa: A002
        return ops.clip(self, None, max)

    def square(self):
        """self ** 2 (a bool tensor gives int64, as in PyTorch)."""
        return ops.pow(self, 2)

    def rsqrt(self):
        """1 / sqrt(self), as self ** -0.5."""
        return ops.pow(self, -0.5)

    def reciprocal(self):
        """1 / self (an integer tensor gives float32, as in PyTorch)."""
        return ops.div(1, self)

    def sin(self):
        return ops.sin(self)

    def cos(self):
        return ops.cos(self)

    def sign(self):
        """-1, 0 or 1; the gradient is zero."""
        return ops.sign(self)

    def floor(self):
        """Rounded down; the gradient is zero."""
        return ops.floor(self)

    def ceil(self):
        """Rounded up; the gradient is zero."""
        return ops.ceil(self)

    def trunc(self):
        """Rounded toward zero; the gradient is zero."""
        return ops.trunc(self)

    def round(self, *, decimals: int = 0):
        """Rounded to `decimals` places, halves to even; the gradient is zero."""
        return ops.round(self, decimals)

    def masked_fill(self, mask, value):
        """`value` where the boolean mask is True, self elsewhere, in self's dtype."""
        return ops.masked_fill(self, mask, value)

    def where(self, condition, other):
        """self where condition is True, other elsewhere: where(condition, self, other)."""
        return ops.where(condition, self, other)

    def tril(self, diagonal: int = 0):
        """The lower triangle of the last two dims (j <= i + diagonal), zeros above."""
        return ops.tril(self, diagonal)

    def triu(self, diagonal: int = 0):
        """The upper triangle of the last two dims (j >= i + diagonal), zeros below."""
        return ops.triu(self, diagonal)

    def relu(self):
        return ops.relu(self)

    def sigmoid(self):
        return ops.sigmoid(self)

    def tanh(self):
        return ops.tanh(self)

    def softmax(self, dim=None, *, axis=None):
        """Softmax over one dim, the last by default (torch's `dim`, numpy's `axis`)."""
        return ops.softmax(self, _dims(dim, axis, "softmax"))

    def log_softmax(self, dim=None, *, axis=None):
        """Log-softmax over one dim, the last by default (torch's `dim`, numpy's `axis`)."""
        return ops.log_softmax(self, _dims(dim, axis, "log_softmax"))

    def matmul(self, other):
        return ops.matmul(self, other)

    # --- reductions -----------------------------------------------------------------------

    def sum(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        return ops.sum(self, _dims(dim, axis, "sum"), _keep(keepdim, keepdims))

    def mean(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        return ops.mean(self, _dims(dim, axis, "mean"), _keep(keepdim, keepdims))

    def prod(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        return ops.prod(self, _dims(dim, axis, "prod"), _keep(keepdim, keepdims))

    def cumsum(self, dim=None, *, axis=None):
        """The running sum along one dim; the shape stays."""
        return ops.cumsum(self, _dims(dim, axis, "cumsum"))

    def norm(self, p="fro", dim=None, keepdim=False, *, axis=None, keepdims=None):
        """The p-norm over dim (all elements by default): 'fro' (the default) and 2 are the
        Euclidean norm, p > 0 (sum |x|^p)^(1/p), inf / -inf the max / min of |x|."""
        if isinstance(p, str):
            if p != "fro":
                raise ArgumentError(f"norm: p={p!r} is not supported; use 'fro', a number or inf")
            p = 2
        return ops.norm(self, p, _dims(dim, axis, "norm"), _keep(keepdim, keepdims))

    def amax(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        return ops.max(self, _dims(dim, axis, "amax"), _keep(keepdim, keepdims))

    def amin(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        return ops.min(self, _dims(dim, axis, "amin"), _keep(keepdim, keepdims))

    def max(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """Like PyTorch: the maximum of all elements, its gradient split evenly among tied
        maxima, or with one `dim` a (values, indices) pair, the gradient going to the index
        returned; a NaN is the maximum and takes the gradient. `amax` takes several dims (and
        gives a slice holding NaN a NaN gradient)."""
        return self._extreme(ops.max, ops.argmax, dim, axis, _keep(keepdim, keepdims), "max")

    def min(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """Like PyTorch: see `max`."""
        return self._extreme(ops.min, ops.argmin, dim, axis, _keep(keepdim, keepdims), "min")

    def _extreme(self, reduce, arg, dim, axis, keepdim, where):
        dim = _dims(dim, axis, where)
        if dim is None:
            return reduce(self, None, False, nan_takes_grad=True)
        # PyTorch's argmax / argmin refuse bool, but its max / min along a dim take it
        keys = ops.cast(self, np.uint8) if self.dtype == np.bool_ else self
        if not isinstance(dim, (int, np.integer)):
            raise DTypeError(
                f"{where}: takes one int dim (and returns values and indices); "
                f"use a{where}(dim=...) to reduce over several dims"
            )
        if self.ndim == 0:
            return MinMax(reduce(self, dim, keepdim, nan_takes_grad=True), arg(keys, dim, keepdim))
        # the values gathered at the indices: the gradient goes to the index returned, as in
        # PyTorch, where the all-dims form splits it among ties
        indices = arg(keys, dim, True)
        values = ops.gather(self, dim, indices)
        if keepdim:
            return MinMax(values, indices)
        return MinMax(values.squeeze(dim), indices.squeeze(dim))

    def all(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        return ops.all(self, _dims(dim, axis, "all"), _keep(keepdim, keepdims))

    def any(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        return ops.any(self, _dims(dim, axis, "any"), _keep(keepdim, keepdims))

    def argmax(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        return ops.argmax(self, _dims(dim, axis, "argmax"), _keep(keepdim, keepdims))

    def argmin(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        return ops.argmin(self, _dims(dim, axis, "argmin"), _keep(keepdim, keepdims))

    def var(
        self, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None, keepdims=None
    ):
        """The variance over dim (all elements by default), as PyTorch's: `correction`
        (default 1, Bessel's) or the older `unbiased` (True is correction 1, False 0), which
        may also come alone in dim's place, as in x.var(False)."""
        dim, correction = _correction(dim, unbiased, correction, "var")
        return ops.var(self, _dims(dim, axis, "var"), _keep(keepdim, keepdims), correction)

    def std(
        self, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None, keepdims=None
    ):
        """The standard deviation: see `var`."""
        dim, correction = _correction(dim, unbiased, correction, "std")
        return ops.std(self, _dims(dim, axis, "std"), _keep(keepdim, keepdims), correction)

    def logsumexp(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        return ops.logsumexp(self, _dims(dim, axis, "logsumexp"), _keep(keepdim, keepdims))

    # --- shape ----------------------------------------------------------------------------

    def reshape(self, *shape):
        return ops.reshape(self, _shape_args(shape))

    def view(self, *shape):
        """reshape, under PyTorch's other name. PyTorch's view never copies, so it refuses a
        tensor whose memory the new shape does not fit (a transposed one, say, where reshape is
        needed); minitrain has no in-place ops, so a view and a copy cannot be told apart, and
        view takes every shape reshape takes. Use reshape in code that must run on both.
        view(dtype), reinterpreting the bytes, is not supported."""
        shape = _shape_args(shape)
        if not all(isinstance(n, (int, np.integer)) for n in shape):
            raise DTypeError(f"view: takes ints (view(dtype) is not supported), got {shape}")
        return ops.reshape(self, shape)

    def view_as(self, other: Tensor):
        """Reshaped to other's shape (see view)."""
        return ops.reshape(self, other.shape)

    def reshape_as(self, other: Tensor):
        return ops.reshape(self, other.shape)

    def flatten(self, start_dim: int = 0, end_dim: int = -1):
        return ops.flatten(self, start_dim, end_dim)

    def transpose(self, dim0: int, dim1: int):
        return ops.transpose(self, dim0, dim1)

    def permute(self, *dims):
        return ops.permute(self, _shape_args(dims))

    @property
    def T(self):  # noqa: N802
        """All dims reversed, as numpy's `.T`."""
        return ops.permute(self, tuple(reversed(range(self.ndim))))

    def t(self):
        """A 2-D tensor transposed; a 0-D or 1-D one as it is (PyTorch's t)."""
        if self.ndim > 2:
            raise ShapeError(
                f"t: takes a tensor of at most 2 dims, got shape {self.shape}; use transpose"
            )
        return self.T

    def broadcast_to(self, *shape):
        return ops.broadcast_to(self, _shape_args(shape))

    def expand(self, *shape):
        """PyTorch's expand: broadcast_to where -1 keeps an existing dim's size."""
        shape = _shape_args(shape)
        lead = len(shape) - self.ndim
        if any(n == -1 for n in shape[: max(lead, 0)]):
            raise ShapeError(f"expand: -1 in a new leading dim of {shape} (tensor {self.shape})")
        return ops.broadcast_to(
            self, tuple(self.shape[i - lead] if n == -1 else n for i, n in enumerate(shape))
        )

    def expand_as(self, other: Tensor):
        """Broadcast to other's shape."""
        return ops.broadcast_to(self, other.shape)

    def repeat(self, *sizes):
        """Tiled sizes[d] times along each dim d, with a size for every dim (more sizes add
        leading dims): PyTorch's repeat, numpy's tile. The gradient sums over the copies."""
        sizes = _shape_args(sizes)
        if len(sizes) < self.ndim:
            raise ShapeError(
                f"repeat: needs a size for each of the {self.ndim} dims of shape {self.shape}, "
                f"got {sizes}"
            )
        return ops.tile(self, sizes, "repeat")

    def tile(self, *dims, **keywords):
        """Like repeat, but fewer sizes than dims repeat the last dims (PyTorch's tile);
        tile(dims=...) too."""
        return ops.tile(self, _dims_args("tile", dims, keywords))

    def flip(self, *dims, **keywords):
        """The elements in reverse order along the given dims: flip(0), flip(0, 1), flip([0]),
        flip(dims=...)."""
        dims = _dims_args("flip", dims, keywords)
        if not dims:
            raise ArgumentError("flip: needs the dims to reverse, got none")
        return ops.flip(self, dims)

    def split(self, split_size, dim: int = 0):
        """Pieces of split_size along dim (the last smaller), or of the sizes listed."""
        return ops.split(self, split_size, dim)

    def chunk(self, chunks: int, dim: int = 0):
        """`chunks` pieces along dim of ceil(size / chunks) elements each, the last smaller."""
        return ops.chunk(self, chunks, dim)

    def unbind(self, dim: int = 0):
        """The slices along dim, that dim removed."""
        return ops.unbind(self, dim)

    def gather(self, dim: int, index):
        """Elements picked along dim by an integer index of self's rank (PyTorch's gather)."""
        return ops.gather(self, dim, index)

    def unsqueeze(self, dim: int):
        """A new dim of size 1 at `dim` (from -ndim-1 to ndim)."""
        (dim,) = normalize_axis(dim, self.ndim + 1, "unsqueeze")
        return ops.reshape(self, self.shape[:dim] + (1,) + self.shape[dim:])

    def squeeze(self, dim=None):
        """Dims of size 1 removed: all of them, or those among `dim` (an int or a tuple)."""
        if dim is None:
            dims = range(self.ndim)
        else:
            dims = normalize_axis(dim, self.ndim, "squeeze")
        return ops.reshape(
            self, tuple(n for i, n in enumerate(self.shape) if not (i in dims and n == 1))
        )


def device_and_dtype(where: str, target, device, dtype) -> tuple:
    """`to`'s arguments, positional target (a device or a dtype) or keywords, as (Device or
    None, np.dtype or None)."""
    if target is not None:
        is_device = isinstance(target, (str, backend.Device)) and not _is_dtype_name(target)
        if (device if is_device else dtype) is not None:
            raise ArgumentError(
                f"{where}: {'device' if is_device else 'dtype'} given twice, as {target!r} and as "
                f"a keyword"
            )
        if is_device:
            device = target
        else:
            dtype = target
    return (
        None if device is None else backend.device(device),
        None if dtype is None else as_dtype(dtype, where),
    )


def as_dtype(dtype, where: str) -> np.dtype:
    """`dtype` (np.float32, 'float64', np.dtype(...)) as a numpy dtype, or a DTypeError naming
    `where` (numpy's own TypeError says nothing of who asked)."""
    try:
        return np.dtype(dtype)
    except TypeError:
        raise DTypeError(
            f"{where}: dtype must be a numpy dtype (np.float32, 'float64', ...), got {dtype!r}"
        ) from None


def _is_dtype_name(target) -> bool:
    if not isinstance(target, str):
        return False
    try:
        np.dtype(target)
    except TypeError:
        return False
    return True


def _dims_args(where: str, args, keywords) -> tuple:
    """The dims given positionally or as PyTorch's `dims=` keyword (not both)."""
    if set(keywords) - {"dims"}:
        raise ArgumentError(f"{where}: unexpected keywords {sorted(set(keywords) - {'dims'})}")
    if "dims" in keywords:
        if args:
            raise ArgumentError(f"{where}: dims given both positionally and as a keyword")
        args = (keywords["dims"],)
    return _shape_args(args)


def _shape_args(args) -> tuple:
    """Accept f(2, 3) and f((2, 3)) alike."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


# --- creation ---------------------------------------------------------------------------------


def tensor(data, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    """A new tensor holding a copy of data (Python floats become float32)."""
    array = as_array(data, dtype, device)
    if array is data or (isinstance(data, Tensor) and array is data.data):
        array = array.copy()
    return Tensor(array, requires_grad=requires_grad)


def _filled(fill, shape, dtype, requires_grad, device) -> Tensor:
    shape = _shape_args(shape)
    array = np.full(shape, fill, dtype=np.dtype(dtype))
    if device is not None:
        array = backend.to_device(array, backend.device(device))
    return Tensor(array, requires_grad=requires_grad)


def zeros(*shape, dtype=float32, requires_grad: bool = False, device=None) -> Tensor:
    return _filled(0, shape, dtype, requires_grad, device)


def ones(*shape, dtype=float32, requires_grad: bool = False, device=None) -> Tensor:
    return _filled(1, shape, dtype, requires_grad, device)


def full(shape, fill_value, dtype=float32, requires_grad: bool = False, device=None) -> Tensor:
    return _filled(fill_value, (shape,), dtype, requires_grad, device)


def randn(*shape, dtype=float32, requires_grad: bool = False, device=None) -> Tensor:
    """Standard normal samples from the generator seeded by `manual_seed`."""
    array = backend.generator().standard_normal(_shape_args(shape)).astype(dtype)
    return Tensor(array, requires_grad=requires_grad, device=device)


def rand(*shape, dtype=float32, requires_grad: bool = False, device=None) -> Tensor:
    """Uniform samples in [0, 1) from the generator seeded by `manual_seed`."""
    array = backend.generator().random(_shape_args(shape)).astype(dtype)
    return Tensor(array, requires_grad=requires_grad, device=device)


def arange(start, end=None, step=1, dtype=None, requires_grad: bool = False, device=None):
    """Like PyTorch: int arguments give int64, any float gives float32."""
    if end is None:
        start, end = 0, start
    if dtype is None:
        is_float = any(isinstance(v, (float, np.floating)) for v in (start, end, step))
        dtype = np.float32 if is_float else np.int64
    return Tensor(
        np.arange(start, end, step, dtype=dtype), requires_grad=requires_grad, device=device
    )


def eye(n: int, m: int | None = None, *, dtype=float32, requires_grad=False, device=None):
    """The n x m identity matrix (m defaults to n)."""
    for name, size in (("n", n), ("m", n if m is None else m)):
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
            raise DTypeError(f"eye: {name} must be an int, got {size!r}")
        if size < 0:
            raise ArgumentError(f"eye: {name} must be non-negative, got {size}")
    array = np.eye(n, m, dtype=as_dtype(dtype, "eye"))
    return Tensor(array, requires_grad=requires_grad, device=device)


def linspace(start, end, steps: int, *, dtype=float32, requires_grad=False, device=None):
    """`steps` evenly spaced values from start to end, both included."""
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)):
        raise DTypeError(f"linspace: steps must be an int, got {steps!r}")
    if steps < 0:
        raise ArgumentError(f"linspace: steps must be non-negative, got {steps}")
    array = np.linspace(start, end, steps).astype(as_dtype(dtype, "linspace"))
    return Tensor(array, requires_grad=requires_grad, device=device)


def randint(low=0, high=None, size=None, *, dtype=int64, device=None) -> Tensor:
    """Integers drawn uniformly from [low, high), from the generator seeded by `manual_seed`;
    randint(high, size) and randint(high, size=size) draw from [0, high), as in PyTorch."""
    if size is None and high is not None and not isinstance(high, (int, np.integer)):
        low, high, size = 0, low, high  # randint(high, size)
    elif high is None:
        low, high = 0, low  # randint(high, size=size)
    if size is None:
        raise ArgumentError("randint: size is required, as in randint(10, (2, 3))")
    for name, bound in (("low", low), ("high", high)):
        if isinstance(bound, bool) or not isinstance(bound, (int, np.integer)):
            raise DTypeError(f"randint: {name} must be an int, got {bound!r}")
    if low >= high:
        raise ArgumentError(f"randint: low must be less than high, got low={low}, high={high}")
    size = _size("randint", size)
    dtype = _integer_range("randint", dtype, low, high - 1)
    return Tensor(backend.generator().integers(low, high, size).astype(dtype), device=device)


def randperm(n: int, *, dtype=int64, device=None) -> Tensor:
    """A random permutation of 0..n-1, from the generator seeded by `manual_seed`."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise DTypeError(f"randperm: n must be an int, got {n!r}")
    if n < 0:
        raise ArgumentError(f"randperm: n must be non-negative, got {n}")
    dtype = _integer_range("randperm", dtype, 0, max(n - 1, 0))
    return Tensor(backend.generator().permutation(n).astype(dtype), device=device)


def _size(where: str, size) -> tuple:
    """A shape: an int or a sequence of non-negative ints."""
    dims = (size,) if isinstance(size, (int, np.integer)) else size
    if not isinstance(dims, (tuple, list)) or not all(
        isinstance(n, (int, np.integer)) and not isinstance(n, bool) for n in dims
    ):
        raise DTypeError(f"{where}: size must be a tuple of ints, got {size!r}")
    if any(n < 0 for n in dims):
        raise ArgumentError(f"{where}: size must not be negative, got {tuple(dims)}")
    return tuple(int(n) for n in dims)


def _integer_range(where: str, dtype, low: int, high: int) -> np.dtype:
    """`dtype`, checked to be a real dtype that holds every value from low to high (checked
    before anything is drawn, so a refused call leaves the generator as it was); a floating one
    takes the integers as they round, as PyTorch's does."""
    dtype = as_dtype(dtype, where)
    if dtype.kind not in "iuf":
        raise DTypeError(f"{where}: dtype must be an integer or floating dtype, got {dtype}")
    if dtype.kind == "f":
        return dtype
    limits = np.iinfo(dtype)
    if low < limits.min or high > limits.max:
        raise ArgumentError(
            f"{where}: {dtype} holds {limits.min} to {limits.max}, not every value from {low} "
            f"to {high}"
        )
    return dtype


def _like(t: Tensor, dtype, device):
    return dict(dtype=t.dtype if dtype is None else dtype, device=device or t.device)


def zeros_like(t: Tensor, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    return zeros(t.shape, requires_grad=requires_grad, **_like(t, dtype, device))


def ones_like(t: Tensor, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    return ones(t.shape, requires_grad=requires_grad, **_like(t, dtype, device))


def full_like(t: Tensor, fill_value, dtype=None, requires_grad=False, device=None) -> Tensor:
    return full(t.shape, fill_value, requires_grad=requires_grad, **_like(t, dtype, device))


def randn_like(t: Tensor, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    return randn(t.shape, requires_grad=requires_grad, **_like(t, dtype, device))


def rand_like(t: Tensor, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    return rand(t.shape, requires_grad=requires_grad, **_like(t, dtype, device))


from . import ops  # noqa: E402  (ops need Tensor defined first)
from .ops.elementwise import Add, Div, Mul, Neg, Sub  # noqa: E402
from .ops.reduction import normalize_axis  # noqa: E402

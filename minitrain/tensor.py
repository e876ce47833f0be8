"""Tensor: an array plus its gradient, `requires_grad` and the Node that made it.

Every operator and method calls a registered op: no arithmetic lives here. The functions that
create tensors are in creation.py, the readers of their arguments in arguments.py."""

from __future__ import annotations

import numpy as np

from . import backend, versions
from .arguments import (
    as_array,
    device_and_dtype,
    dim_and_correction,
    dim_arg,
    dims_args,
    keepdim_arg,
    shape_args,
)
from .autograd import RemovableHandle
from .autograd import backward as autograd_backward
from .errors import ArgumentError, DeviceError, DTypeError, GraphError, ShapeError
from .inplace import InPlaceMethods, write_in_place

_new_object = object.__new__


def _check_grad_dtype(array, caller: str) -> None:
    if array.dtype.kind != "f":
        raise DTypeError(
            f"{caller}: only floating-point tensors can require grad, got dtype {array.dtype}"
        )


class Tensor(InPlaceMethods):
    """An n-dimensional array that can record the ops applied to it and carry a gradient.

    `Tensor(array)` wraps an array without copying; `minitrain.tensor(data)` copies.
    """

    __slots__ = (
        "data",
        "_grad",
        "_requires_grad",
        "node",
        "_hooks",
        "__weakref__",
    )
    __array_ufunc__ = None  # `ndarray + Tensor` calls Tensor.__radd__ instead of looping in numpy

    def __init__(self, data, requires_grad: bool = False, dtype=None, device=None):
        self.data = as_array(data.data if isinstance(data, Tensor) else data, dtype, device)
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
        tensor.data = data
        tensor._grad = None
        tensor._requires_grad = False
        tensor.node = None
        tensor._hooks = None
        return tensor

    # The autograd state: requires_grad, the gradient, hooks.

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
        """The same data (and so the same version), outside any graph."""
        return Tensor.wrap(self.data)

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
            self._grad = Tensor.wrap(self._grad.data + grad)
        else:
            self._grad.data = self._grad.data + grad

    # The array's facts: shape, dtype, device, its values in Python.

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
    def is_cuda(self) -> bool:
        """Whether the tensor lives on a GPU."""
        return backend.device_of(self.data).type == "cuda"

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

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The data as a numpy array (no copy). CUDA tensors: call .cpu() first, or pass
        `force=True` for a copy in host memory (a tensor in the graph needs no detach here)."""
        if force and not isinstance(self.data, np.ndarray):
            return backend.to_device(self.data, backend.device("cpu"))
        if not isinstance(self.data, np.ndarray):
            raise DeviceError(
                f"numpy: can't convert a tensor on {self.device} to numpy; use Tensor.cpu() to "
                f"copy it to host memory first"
            )
        return self.data

    def item(self):
        if self.data.size != 1:
            raise ShapeError(f"item: the tensor has {self.data.size} elements, not 1")
        if type(self.data) is not np.ndarray:
            backend.raise_deferred_checks()  # a read from a GPU: its kept checks are read too
        return self.data.reshape(()).item()

    def tolist(self):
        if type(self.data) is not np.ndarray:
            backend.raise_deferred_checks()
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
        return self.to("cpu")

    def cuda(self, device=None) -> Tensor:
        """On a GPU: `device` an index (0 by default), 'cuda:1' or a Device."""
        if device is None or isinstance(device, (int, np.integer)):
            device = f"cuda:{0 if device is None else int(device)}"
        return self.to(device)

    def float(self) -> Tensor:
        return self.to(np.dtype(np.float32))

    def double(self) -> Tensor:
        return self.to(np.dtype(np.float64))

    def half(self) -> Tensor:
        return self.to(np.dtype(np.float16))

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

    # %, // and the bitwise operators (ops/binary_math.py, ops/predicates.py)

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

    # PyTorch's method forms of the operators, and contiguous.

    def add(self, other, *, alpha=1):
        return ops.add(self, other, alpha=alpha)

    def sub(self, other, *, alpha=1):
        return ops.sub(self, other, alpha=alpha)

    def mul(self, other):
        return Mul.apply(self, other)

    def div(self, other, *, rounding_mode=None):
        """self / other; rounding_mode 'trunc' or 'floor' rounds the quotient (PyTorch's)."""
        return ops.div(self, other, rounding_mode=rounding_mode)

    def true_divide(self, other):
        return Div.apply(self, other)

    def neg(self):
        return Neg.apply(self)

    # PyTorch's other spellings of the same
    subtract, multiply, divide, negative = sub, mul, div, neg

    def contiguous(self):
        """self where its memory is in C order already, else a C-ordered copy in the graph."""
        return self if self.data.flags.c_contiguous else ops.contiguous(self)

    # Elementwise math and activations: each method calls its op.

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

    # Transcendental and two-operand math (ops/transcendental.py, ops/binary_math.py).

    def log2(self):
        return ops.log2(self)

    def log10(self):
        return ops.log10(self)

    def exp2(self):
        return ops.exp2(self)

    def expm1(self):
        return ops.expm1(self)

    def log1p(self):
        return ops.log1p(self)

    def erf(self):
        return ops.erf(self)

    def erfc(self):
        return ops.erfc(self)

    def tan(self):
        return ops.tan(self)

    def asin(self):
        return ops.asin(self)

    def acos(self):
        return ops.acos(self)

    def atan(self):
        return ops.atan(self)

    def sinh(self):
        return ops.sinh(self)

    def cosh(self):
        return ops.cosh(self)

    def asinh(self):
        return ops.asinh(self)

    def acosh(self):
        return ops.acosh(self)

    def atanh(self):
        return ops.atanh(self)

    def atan2(self, other):
        return ops.atan2(self, other)

    def hypot(self, other):
        return ops.hypot(self, other)

    def logaddexp(self, other):
        return ops.logaddexp(self, other)

    def copysign(self, other):
        return ops.copysign(self, other)

    def lerp(self, end, weight):
        return ops.lerp(self, end, weight)

    def fmod(self, other):
        return ops.fmod(self, other)

    def remainder(self, other):
        return ops.remainder(self, other)

    def floor_divide(self, other):
        return ops.floor_divide(self, other)

    # PyTorch's numpy spellings of the same
    arcsin, arccos, arctan, arctan2 = asin, acos, atan, atan2
    arcsinh, arccosh, arctanh = asinh, acosh, atanh

    # Tests, logic and bits: bool or integer results, outside the graph (ops/predicates.py).

    def isnan(self):
        return ops.isnan(self)

    def isinf(self):
        return ops.isinf(self)

    def isposinf(self):
        return ops.isposinf(self)

    def isneginf(self):
        return ops.isneginf(self)

    def isfinite(self):
        return ops.isfinite(self)

    def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        return ops.isclose(self, other, rtol, atol, equal_nan)

    def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
        return ops.allclose(self, other, rtol, atol, equal_nan)

    def equal(self, other) -> bool:
        """Whether other has self's shape and elements (one bool; `==` is elementwise)."""
        return ops.array_equal(self, other)

    def logical_and(self, other):
        return ops.logical_and(self, other)

    def logical_or(self, other):
        return ops.logical_or(self, other)

    def logical_xor(self, other):
        return ops.logical_xor(self, other)

    def logical_not(self):
        return ops.logical_not(self)

    def bitwise_and(self, other):
        return ops.bitwise_and(self, other)

    def bitwise_or(self, other):
        return ops.bitwise_or(self, other)

    def bitwise_xor(self, other):
        return ops.bitwise_xor(self, other)

    def bitwise_not(self):
        return ops.bitwise_not(self)

    def bitwise_left_shift(self, other):
        return ops.bitwise_left_shift(self, other)

    def bitwise_right_shift(self, other):
        return ops.bitwise_right_shift(self, other)

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

    def softmax(self, dim=None, dtype=None, *, axis=None):
        """Softmax over one dim, the last by default (torch's `dim`, numpy's `axis`), of self
        cast to `dtype` first if given."""
        x = ops.cast_first(self, dtype, "softmax")
        return ops.softmax(x, dim_arg(dim, axis, "softmax"))

    def log_softmax(self, dim=None, dtype=None, *, axis=None):
        """Log-softmax over one dim, the last by default, of self cast to `dtype` first."""
        x = ops.cast_first(self, dtype, "log_softmax")
        return ops.log_softmax(x, dim_arg(dim, axis, "log_softmax"))

    def matmul(self, other):
        return ops.matmul(self, other)

    # Reductions: PyTorch's dim and keepdim, or numpy's axis and keepdims.

    # dtype casts self first, as PyTorch's; axis and keepdims are numpy's (and PyTorch's
    # undocumented) spellings of dim and keepdim

    def sum(self, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
        x = ops.cast_first(self, dtype, "sum", int64=True)
        return ops.sum(x, dim_arg(dim, axis, "sum"), keepdim_arg(keepdim, keepdims))

    def mean(self, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
        x = ops.cast_first(self, dtype, "mean")
        return ops.mean(x, dim_arg(dim, axis, "mean"), keepdim_arg(keepdim, keepdims))

    def prod(self, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
        x = ops.cast_first(self, dtype, "prod", int64=True)
        return ops.prod(x, dim_arg(dim, axis, "prod"), keepdim_arg(keepdim, keepdims))

    def cumsum(self, dim=None, *, dtype=None, axis=None):
        """The running sum along one dim; the shape stays."""
        x = ops.cast_first(self, dtype, "cumsum", int64=True)
        return ops.cumsum(x, dim_arg(dim, axis, "cumsum"))

    def cumprod(self, dim=None, *, dtype=None, axis=None):
        """The running product along one dim; the shape stays."""
        return ops.cumprod(self, dim_arg(dim, axis, "cumprod"), dtype=dtype)

    def cummax(self, dim=None, *, axis=None):
        """(values, indices) of the running maximum along one dim."""
        return ops.cummax(self, dim_arg(dim, axis, "cummax"))

    def cummin(self, dim=None, *, axis=None):
        """(values, indices) of the running minimum along one dim."""
        return ops.cummin(self, dim_arg(dim, axis, "cummin"))

    def logcumsumexp(self, dim=None, *, axis=None):
        return ops.logcumsumexp(self, dim_arg(dim, axis, "logcumsumexp"))

    def norm(self, p="fro", dim=None, keepdim=False, *, axis=None, keepdims=None):
        """The p-norm over dim (all elements by default): 'fro' (the default) and 2 are the
        Euclidean norm, p > 0 (sum |x|^p)^(1/p), inf / -inf the max / min of |x|."""
        if isinstance(p, str):
            if p != "fro":
                raise ArgumentError(f"norm: p={p!r} is not supported; use 'fro', a number or inf")
            p = 2
        return ops.norm(self, p, dim_arg(dim, axis, "norm"), keepdim_arg(keepdim, keepdims))

    def amax(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        return ops.max(self, dim_arg(dim, axis, "amax"), keepdim_arg(keepdim, keepdims))

    def amin(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        return ops.min(self, dim_arg(dim, axis, "amin"), keepdim_arg(keepdim, keepdims))

    def max(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """Like PyTorch: the maximum of all elements, its gradient split evenly among tied
        maxima, or with one `dim` a (values, indices) pair, the gradient going to the index
        returned; a NaN is the maximum and takes the gradient. `amax` takes several dims (and
        gives a slice holding NaN a NaN gradient)."""
        dim = dim_arg(dim, axis, "max")
        return values_and_indices(self, "max", dim, keepdim_arg(keepdim, keepdims))

    def min(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """Like PyTorch: see `max`."""
        dim = dim_arg(dim, axis, "min")
        return values_and_indices(self, "min", dim, keepdim_arg(keepdim, keepdims))

    def all(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        return ops.all(self, dim_arg(dim, axis, "all"), keepdim_arg(keepdim, keepdims))

    def any(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        return ops.any(self, dim_arg(dim, axis, "any"), keepdim_arg(keepdim, keepdims))

    def argmax(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        return ops.argmax(self, dim_arg(dim, axis, "argmax"), keepdim_arg(keepdim, keepdims))

    def argmin(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        return ops.argmin(self, dim_arg(dim, axis, "argmin"), keepdim_arg(keepdim, keepdims))

    def var(
        self, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None, keepdims=None
    ):
        """The variance over dim (all elements by default), as PyTorch's: `correction`
        (default 1, Bessel's) or the older `unbiased` (True is correction 1, False 0), which
        may also come alone in dim's place, as in x.var(False)."""
        dim, correction = dim_and_correction(dim, unbiased, correction, "var")
        return ops.var(self, dim_arg(dim, axis, "var"), keepdim_arg(keepdim, keepdims), correction)

    def std(
        self, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None, keepdims=None
    ):
        """The standard deviation: see `var`."""
        dim, correction = dim_and_correction(dim, unbiased, correction, "std")
        return ops.std(self, dim_arg(dim, axis, "std"), keepdim_arg(keepdim, keepdims), correction)

    def logsumexp(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        return ops.logsumexp(self, dim_arg(dim, axis, "logsumexp"), keepdim_arg(keepdim, keepdims))

    def aminmax(self, *, dim=None, keepdim=False):
        """(min, max) of all elements or along one dim."""
        return ops.aminmax(self, dim=dim, keepdim=keepdim)

    def count_nonzero(self, dim=None):
        return ops.count_nonzero(self, dim)

    def median(self, dim=None, keepdim=False):
        """The lower median of all elements, or (values, indices) along one dim."""
        return ops.median(self, dim, keepdim)

    def quantile(self, q, dim=None, keepdim=False, *, interpolation="linear"):
        return ops.quantile(self, q, dim, keepdim, interpolation=interpolation)

    # Sorting: values gathered where the indices say, the indices outside the graph.

    def sort(self, dim=-1, descending=False, *, stable=False):
        return ops.sort(self, dim, descending, stable=stable)

    def argsort(self, dim=-1, descending=False, *, stable=False):
        return ops.argsort(self, dim, descending, stable=stable)

    def topk(self, k, dim=None, largest=True, sorted=True):
        return ops.topk(self, k, dim, largest, sorted)

    def kthvalue(self, k, dim=None, keepdim=False):
        return ops.kthvalue(self, k, dim, keepdim)

    # Shape methods: a shape or dims spread out, f(2, 3), or as one sequence, f((2, 3)).

    def reshape(self, *shape):
        return ops.reshape(self, shape_args(shape))

    def view(self, *shape):
        """reshape that never copies, as PyTorch's: a tensor whose memory the new shape does not
        fit (a transposed one, say) is refused, since writes into a copy would not reach it;
        reshape copies there. view(dtype), reinterpreting the bytes, is not supported."""
        shape = shape_args(shape)
        if not all(isinstance(n, (int, np.integer)) for n in shape):
            raise DTypeError(f"view: takes ints (view(dtype) is not supported), got {shape}")
        out = ops.reshape(self, shape)
        if out.data.size and versions.owner(out.data) is not versions.owner(self.data):
            raise ShapeError(
                f"view: shape {tuple(shape)} does not fit the memory layout of a tensor of shape "
                f"{self.shape} and strides {self.data.strides} without a copy; use reshape"
            )
        return out

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
        return ops.permute(self, shape_args(dims))

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

    def broadcast_to(self, size):
        """self repeated along new leading dims and dims of size 1 to reach `size`."""
        return ops.broadcast_to(self, size)

    def expand(self, *size):
        """PyTorch's expand: broadcast_to where -1 keeps an existing dim's size."""
        shape = shape_args(size)
        lead = len(shape) - self.ndim
        if any(n == -1 for n in shape[: max(lead, 0)]):
            raise ShapeError(f"expand: -1 in a new leading dim of {shape} (tensor {self.shape})")
        return ops.broadcast_to(
            self, tuple(self.shape[i - lead] if n == -1 else n for i, n in enumerate(shape))
        )

    def expand_as(self, other: Tensor):
        """Broadcast to other's shape."""
        return ops.broadcast_to(self, other.shape)

    def repeat(self, *repeats):
        """Tiled repeats[d] times along each dim d, with a count for every dim (more counts add
        leading dims): PyTorch's repeat, numpy's tile. The gradient sums over the copies."""
        sizes = shape_args(repeats)
        if len(sizes) < self.ndim:
            raise ShapeError(
                f"repeat: needs a size for each of the {self.ndim} dims of shape {self.shape}, "
                f"got {sizes}"
            )
        return ops.shape.tile_as("repeat", self, sizes)

    def tile(self, *dims, **keywords):
        """Like repeat, but fewer sizes than dims repeat the last dims (PyTorch's tile);
        tile(dims=...) too."""
        return ops.tile(self, dims_args("tile", dims, keywords))

    def flip(self, *dims, **keywords):
        """The elements in reverse order along the given dims: flip(0), flip(0, 1), flip([0]),
        flip(dims=...); flip(()) reverses none, a copy."""
        if not dims and not keywords:
            raise ArgumentError("flip: needs the dims to reverse (() for none), got none")
        return ops.flip(self, dims_args("flip", dims, keywords))

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

    # Rearranging (ops/rearrange.py).

    def roll(self, shifts, dims=None):
        return ops.roll(self, shifts, dims)

    def unfold(self, dimension: int, size: int, step: int):
        """The windows of `size` elements, `step` apart, along `dimension`, in a new last dim."""
        return ops.unfold(self, dimension, size, step)

    def diagonal(self, offset: int = 0, dim1: int = 0, dim2: int = 1):
        return ops.diagonal(self, offset, dim1, dim2)

    def diag(self, diagonal: int = 0):
        return ops.diag(self, diagonal)

    def diag_embed(self, offset: int = 0, dim1: int = -2, dim2: int = -1):
        return ops.diag_embed(self, offset, dim1, dim2)

    def unflatten(self, dim: int, sizes):
        return ops.unflatten(self, dim, sizes)

    def repeat_interleave(self, repeats=None, dim=None, *, output_size=None):
        return ops.repeat_interleave(self, repeats, dim, output_size=output_size)

    def movedim(self, source, destination):
        return ops.movedim(self, source, destination)

    moveaxis = movedim

    def narrow(self, dim: int, start, length: int):
        return ops.narrow(self, dim, start, length)

    def swapaxes(self, axis0: int, axis1: int):
        return ops.swapaxes(self, axis0, axis1)

    def swapdims(self, dim0: int, dim1: int):
        return ops.swapdims(self, dim0, dim1)

    def rot90(self, k: int = 1, dims=(0, 1)):
        return ops.rot90(self, k, dims)

    # Selection and scatter by index (ops/scattering.py), and their in-place forms.

    def nonzero(self, *, as_tuple: bool = False):
        return ops.nonzero(self, as_tuple=as_tuple)

    def argwhere(self):
        return ops.argwhere(self)

    def masked_select(self, mask):
        return ops.masked_select(self, mask)

    def masked_scatter(self, mask, source):
        return ops.masked_scatter(self, mask, source)

    def masked_scatter_(self, mask, source):
        return write_in_place(self, lambda: self.masked_scatter(mask, source), "masked_scatter_")

    def index_select(self, dim: int, index):
        return ops.index_select(self, dim, index)

    def take_along_dim(self, indices, dim=None):
        return ops.take_along_dim(self, indices, dim)

    def scatter(self, dim: int, index, src=None, *, value=None, reduce=None):
        return ops.scatter(self, dim, index, src, value=value, reduce=reduce)

    def scatter_(self, dim: int, index, src=None, *, value=None, reduce=None):
        return write_in_place(
            self, lambda: self.scatter(dim, index, src, value=value, reduce=reduce), "scatter_"
        )

    def scatter_add(self, dim: int, index, src):
        return ops.scatter_add(self, dim, index, src)

    def scatter_add_(self, dim: int, index, src):
        return write_in_place(self, lambda: self.scatter_add(dim, index, src), "scatter_add_")

    def scatter_reduce(self, dim: int, index, src, reduce: str, *, include_self: bool = True):
        return ops.scatter_reduce(self, dim, index, src, reduce, include_self=include_self)

    def scatter_reduce_(self, dim: int, index, src, reduce: str, *, include_self: bool = True):
        return write_in_place(
            self,
            lambda: self.scatter_reduce(dim, index, src, reduce, include_self=include_self),
            "scatter_reduce_",
        )

    def index_add(self, dim: int, index, source, *, alpha=1):
        return ops.index_add(self, dim, index, source, alpha=alpha)

    def index_add_(self, dim: int, index, source, *, alpha=1):
        return write_in_place(
            self, lambda: self.index_add(dim, index, source, alpha=alpha), "index_add_"
        )

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


from . import ops  # noqa: E402  (ops need Tensor defined first)
from .ops.checks import normalize_axis  # noqa: E402
from .ops.elementwise import Add, Div, Mul, Neg, Sub  # noqa: E402
from .ops.reduction import values_and_indices  # noqa: E402

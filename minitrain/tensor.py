"""Tensor: an array plus its gradient, `requires_grad` and the Node that made it.

Every operator and method calls a registered op: no arithmetic lives here. The functions that
create tensors are in creation.py, the readers of their arguments in arguments.py."""

from __future__ import annotations

import numpy as np

from . import backend
from .arguments import (
    as_array,
    device_and_dtype,
    dim_and_correction,
    dim_arg,
    dims_args,
    keepdim_arg,
    shape_args,
)
from .autograd import RemovableHandle, versions
from .autograd import backward as autograd_backward
from .errors import ArgumentError, DeviceError, DTypeError, GraphError, ShapeError
from .inplace import InPlaceMethods, in_place_twin, write_in_place

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
        """Whether the tensor is a leaf, not computed by a recorded op (no `grad_fn`): a tensor
        made by the user, or any result computed without recording."""
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
            self._grad = Tensor.wrap(self._grad.data + grad)
        else:
            self._grad.data = self._grad.data + grad

    # The array's facts: shape, dtype, device, its values in Python.

    @property
    def shape(self) -> tuple:
        """The size of each dim, as a tuple of ints (PyTorch's `torch.Size`)."""
        return self.data.shape

    @property
    def ndim(self) -> int:
        """The number of dims."""
        return self.data.ndim

    @property
    def dtype(self):
        """The element type, a numpy dtype (`np.float32`, `np.int64`, `np.bool_`, ...)."""
        return self.data.dtype

    @property
    def device(self) -> backend.Device:
        """Where the data lives, a `Device`: `cpu` or `cuda:N`; it compares equal to its
        string (`x.device == "cpu"`)."""
        return backend.device_of(self.data)

    @property
    def is_cuda(self) -> bool:
        """Whether the tensor lives on a GPU."""
        return backend.device_of(self.data).type == "cuda"

    @property
    def xp(self):
        """The array module of the data: `numpy` on the CPU, `cupy` on a GPU."""
        return backend.array_module(self.data)

    def size(self, dim: int | None = None):
        """The shape as a tuple of ints, or with `dim` the size of that one dim (negative
        counts from the end)."""
        return self.data.shape if dim is None else self.data.shape[dim]

    def numel(self) -> int:
        """The number of elements, the product of the shape (`nelement` is the same
        method)."""
        return int(self.data.size)

    nelement = numel

    def dim(self) -> int:
        """The number of dims, as `ndim`."""
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
        """The value of a one-element tensor as a Python number (ShapeError for any other
        size). On a GPU, reading it first raises any failed device-side check kept until then."""
        if self.data.size != 1:
            raise ShapeError(f"item: the tensor has {self.data.size} elements, not 1")
        if type(self.data) is not np.ndarray:
            backend.raise_deferred_checks()  # a read from a GPU: its kept checks are read too
        return self.data.reshape(()).item()

    def tolist(self):
        """The elements as nested Python lists (a Python number for a 0-d tensor). On a
        GPU, reading them first raises any failed device-side check kept until then."""
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
        """The tensor on the CPU: itself if it is there already, else a copy recorded in the
        graph (`to("cpu")`)."""
        return self.to("cpu")

    def cuda(self, device=None) -> Tensor:
        """On a GPU: `device` an index (0 by default), 'cuda:1' or a Device."""
        if device is None or isinstance(device, (int, np.integer)):
            device = f"cuda:{0 if device is None else int(device)}"
        return self.to(device)

    def float(self) -> Tensor:
        """As float32 (`to(np.float32)`): recorded, and the tensor itself if it is float32
        already."""
        return self.to(np.dtype(np.float32))

    def double(self) -> Tensor:
        """As float64 (`to(np.float64)`): recorded, and the tensor itself if it is float64
        already."""
        return self.to(np.dtype(np.float64))

    def half(self) -> Tensor:
        """As float16 (`to(np.float16)`): recorded, and the tensor itself if it is float16
        already."""
        return self.to(np.dtype(np.float16))

    def astype(self, dtype) -> Tensor:
        """Cast to `dtype`, numpy's spelling: always a new tensor, a copy even where the
        dtype does not change. Recorded to a floating dtype, outside the graph to an integer or bool
        one (which has no gradient)."""
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
        """`input + alpha * other`, elementwise, broadcasting; `other` may be a number.

        Dtypes promote as in PyTorch; for integer operands `alpha` must be an integer (DTypeError),
        as in PyTorch."""
        return ops.add(self, other, alpha=alpha)

    def sub(self, other, *, alpha=1):
        """`input - alpha * other`, elementwise, broadcasting; `other` may be a number.
        `subtract` is the same method.

        Dtypes promote as in PyTorch; for integer operands `alpha` must be an integer (DTypeError),
        as in PyTorch."""
        return ops.sub(self, other, alpha=alpha)

    def mul(self, other):
        """`input * other`, elementwise, broadcasting; `other` may be a number. `multiply` is
        the same method."""
        return Mul.apply(self, other)

    def div(self, other, *, rounding_mode=None):
        """self / other; rounding_mode 'trunc' or 'floor' rounds the quotient (PyTorch's)."""
        return ops.div(self, other, rounding_mode=rounding_mode)

    def true_divide(self, other):
        """`input / other`, elementwise, broadcasting: true division, where integer
        operands give float32 (`div` without `rounding_mode`)."""
        return Div.apply(self, other)

    def neg(self):
        """`-input`, elementwise; a bool tensor is refused, as in PyTorch. `negative` is the
        same method."""
        return Neg.apply(self)

    # PyTorch's other spellings of the same
    subtract, multiply, divide, negative = sub, mul, div, neg

    def contiguous(self):
        """self where its memory is in C order already, else a C-ordered copy in the graph."""
        return self if self.data.flags.c_contiguous else ops.contiguous(self)

    # Elementwise math and activations: each method calls its op.

    def exp(self):
        """The elementwise exponential, `e ** x`; integer and bool tensors compute in
        float32."""
        return ops.exp(self)

    def log(self):
        """The elementwise natural logarithm (-inf at 0, NaN below); integer and bool tensors
        compute in float32."""
        return ops.log(self)

    def sqrt(self):
        """The elementwise square root (NaN below 0); integer and bool tensors compute in
        float32."""
        return ops.sqrt(self)

    def abs(self):
        """The elementwise absolute value, `|x|`; the gradient at 0 is 0. A bool tensor is
        refused, as in PyTorch."""
        return ops.abs(self)

    def pow(self, exponent):
        """`input ** exponent`, elementwise, broadcasting; `exponent` is a tensor or a number.

        An integer tensor to a negative integer number is refused (ArgumentError), as in PyTorch; a
        tensor of integer exponents gives 0 where one is negative (but for bases 1 and -1). The
        gradient of `0 ** 0` is 0."""
        return ops.pow(self, exponent)

    def maximum(self, other):
        """The elementwise maximum of the tensor and `other`, broadcasting; where the two are
        equal, each gets half the gradient. A NaN in either gives NaN."""
        return ops.maximum(self, other)

    def minimum(self, other):
        """The elementwise minimum of the tensor and `other`, broadcasting; where the two are
        equal, each gets half the gradient. A NaN in either gives NaN."""
        return ops.minimum(self, other)

    def clip(self, min=None, max=None):  # noqa: A002 (PyTorch's and numpy's names)
        """The elements limited to `[min, max]`; `clamp` is the same method.

        Either bound may be None, not both (ArgumentError). Bounds are numbers: tensor bounds, which
        PyTorch takes, are refused (use `maximum` / `minimum`). The gradient passes where
        `min <= x <= max`."""
        return ops.clip(self, min, max)

    clamp = clip

    def clamp_min(self, min):  # noqa: A002
        """The elements limited from below by the number `min`: `clamp(min=min)`."""
        return ops.clip(self, min, None)

    def clamp_max(self, max):  # noqa: A002
        """The elements limited from above by the number `max`: `clamp(max=max)`."""
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
        """The elementwise sine (radians); integer and bool tensors compute in float32."""
        return ops.sin(self)

    def cos(self):
        """The elementwise cosine (radians); integer and bool tensors compute in float32."""
        return ops.cos(self)

    # Transcendental and two-operand math (ops/transcendental.py, ops/binary_math.py).

    def log2(self):
        """The elementwise base-2 logarithm (-inf at 0, NaN below); integer and bool tensors
        compute in float32."""
        return ops.log2(self)

    def log10(self):
        """The elementwise base-10 logarithm (-inf at 0, NaN below); integer and bool
        tensors compute in float32."""
        return ops.log10(self)

    def exp2(self):
        """The elementwise `2 ** x`; integer and bool tensors compute in float32."""
        return ops.exp2(self)

    def expm1(self):
        """The elementwise `exp(x) - 1`, accurate for small x; integer and bool tensors
        compute in float32."""
        return ops.expm1(self)

    def log1p(self):
        """The elementwise `log(1 + x)`, accurate for small x; integer and bool tensors
        compute in float32."""
        return ops.log1p(self)

    def erf(self):
        """The elementwise error function, `2 / sqrt(pi)` times the integral of `exp(-t**2)`
        from 0 to x; integer and bool tensors compute in float32."""
        return ops.erf(self)

    def erfc(self):
        """The elementwise complementary error function, `1 - erf(x)`, accurate in the right
        tail; integer and bool tensors compute in float32."""
        return ops.erfc(self)

    def tan(self):
        """The elementwise tangent (radians); integer and bool tensors compute in float32."""
        return ops.tan(self)

    def asin(self):
        """The elementwise arcsine, in [-pi/2, pi/2] (NaN outside [-1, 1]); integer and bool
        tensors compute in float32. `arcsin` is the same method (numpy's name)."""
        return ops.asin(self)

    def acos(self):
        """The elementwise arccosine, in [0, pi] (NaN outside [-1, 1]); integer and bool
        tensors compute in float32. `arccos` is the same method (numpy's name)."""
        return ops.acos(self)

    def atan(self):
        """The elementwise arctangent, in (-pi/2, pi/2); integer and bool tensors compute in
        float32. `arctan` is the same method (numpy's name)."""
        return ops.atan(self)

    def sinh(self):
        """The elementwise hyperbolic sine; integer and bool tensors compute in float32."""
        return ops.sinh(self)

    def cosh(self):
        """The elementwise hyperbolic cosine; integer and bool tensors compute in float32."""
        return ops.cosh(self)

    def asinh(self):
        """The elementwise inverse hyperbolic sine; integer and bool tensors compute in
        float32. `arcsinh` is the same method (numpy's name)."""
        return ops.asinh(self)

    def acosh(self):
        """The elementwise inverse hyperbolic cosine, >= 0 (NaN below 1); integer and bool
        tensors compute in float32. `arccosh` is the same method (numpy's name)."""
        return ops.acosh(self)

    def atanh(self):
        """The elementwise inverse hyperbolic tangent (+-inf at +-1, NaN beyond); integer
        and bool tensors compute in float32. `arctanh` is the same method (numpy's name)."""
        return ops.atanh(self)

    def atan2(self, other):
        """The elementwise angle of the point (`other`, the tensor's element), in
        [-pi, pi]: `atan(input / other)` in the quadrant the two signs give. Broadcasting; integers
        and bools compute in float32; at the origin the gradient is 0. `arctan2` is the same method
        (numpy's name)."""
        return ops.atan2(self, other)

    def hypot(self, other):
        """`sqrt(input**2 + other**2)`, elementwise, broadcasting, without overflow; floating
        operands only (DTypeError otherwise), as in PyTorch."""
        return ops.hypot(self, other)

    def logaddexp(self, other):
        """`log(exp(input) + exp(other))`, elementwise, broadcasting, without overflow;
        floating operands only (DTypeError otherwise), as in PyTorch."""
        return ops.logaddexp(self, other)

    def copysign(self, other):
        """The elements' magnitudes with the signs of `other`'s (-0.0 counts as
        negative), broadcasting; integers and bools compute in float32. `other` gets a zero
        gradient, as in PyTorch."""
        return ops.copysign(self, other)

    def lerp(self, end, weight):
        """Linear interpolation from the tensor to `end`: `input + weight * (end - input)`,
        elementwise, all three broadcasting; `weight` is a number or a tensor.

        As in PyTorch, the tensor and `end` must be floating point and of one dtype, and so must a
        `weight` tensor of one dim or more (a 0-d one stands for its number)."""
        return ops.lerp(self, end, weight)

    def fmod(self, other):
        """The remainder of `input / other` with the sign of the tensor's element (C's
        fmod), elementwise, broadcasting. Integers stay integers (a zero divisor is refused,
        ArgumentError); bools are refused, as in PyTorch."""
        return ops.fmod(self, other)

    def remainder(self, other):
        """`input % other`: the remainder with the sign of `other` (Python's %),
        elementwise, broadcasting. Integers stay integers (a zero divisor is refused,
        ArgumentError); bools are refused, as in PyTorch."""
        return ops.remainder(self, other)

    def floor_divide(self, other):
        """`input // other`, the quotient rounded down (Python's //), elementwise,
        broadcasting. Integers stay integers (a zero divisor is refused, ArgumentError); bools are
        refused. The gradient is zero, as that of PyTorch's `div(rounding_mode="floor")`."""
        return ops.floor_divide(self, other)

    # PyTorch's numpy spellings of the same
    arcsin, arccos, arctan, arctan2 = asin, acos, atan, atan2
    arcsinh, arccosh, arctanh = asinh, acosh, atanh

    # Tests, logic and bits: bool or integer results, outside the graph (ops/predicates.py).

    def isnan(self):
        """True where an element is NaN: a bool tensor, outside the graph."""
        return ops.isnan(self)

    def isinf(self):
        """True where an element is inf or -inf: a bool tensor, outside the graph."""
        return ops.isinf(self)

    def isposinf(self):
        """True where an element is inf: a bool tensor, outside the graph."""
        return ops.isposinf(self)

    def isneginf(self):
        """True where an element is -inf: a bool tensor, outside the graph."""
        return ops.isneginf(self)

    def isfinite(self):
        """True where an element is neither NaN nor infinite: a bool tensor, outside the
        graph."""
        return ops.isfinite(self)

    def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        """True where `|input - other| <= atol + rtol * |other|`, elementwise, broadcasting,
        or where the two are equal (infinities of one sign): a bool tensor, outside the graph.

        NaNs are close only with `equal_nan=True`. As in PyTorch, two tensors must share a dtype
        (DTypeError otherwise); integers and bools compare in float32."""
        return ops.isclose(self, other, rtol, atol, equal_nan)

    def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
        """Whether `isclose` holds for every element, as a Python bool."""
        return ops.allclose(self, other, rtol, atol, equal_nan)

    def equal(self, other) -> bool:
        """Whether other has self's shape and elements (one bool; `==` is elementwise)."""
        return ops.array_equal(self, other)

    def logical_and(self, other):
        """The elementwise logical and of the tensor and `other`, broadcasting, any dtype
        (nonzero is True): a bool tensor, outside the graph."""
        return ops.logical_and(self, other)

    def logical_or(self, other):
        """The elementwise logical or of the tensor and `other`, broadcasting, any dtype
        (nonzero is True): a bool tensor, outside the graph."""
        return ops.logical_or(self, other)

    def logical_xor(self, other):
        """The elementwise logical xor of the tensor and `other`, broadcasting, any dtype
        (nonzero is True): a bool tensor, outside the graph."""
        return ops.logical_xor(self, other)

    def logical_not(self):
        """The elementwise logical not, any dtype (nonzero is True): a bool tensor,
        outside the graph."""
        return ops.logical_not(self)

    def bitwise_and(self, other):
        """`input & other`, elementwise, broadcasting, on integer or bool operands
        (promoted as in PyTorch; DTypeError otherwise); outside the graph."""
        return ops.bitwise_and(self, other)

    def bitwise_or(self, other):
        """`input | other`, elementwise, broadcasting, on integer or bool operands
        (promoted as in PyTorch; DTypeError otherwise); outside the graph."""
        return ops.bitwise_or(self, other)

    def bitwise_xor(self, other):
        """`input ^ other`, elementwise, broadcasting, on integer or bool operands
        (promoted as in PyTorch; DTypeError otherwise); outside the graph."""
        return ops.bitwise_xor(self, other)

    def bitwise_not(self):
        """`~input`, elementwise: each bit flipped for integers, the logical not for
        bools (other dtypes are refused); outside the graph."""
        return ops.bitwise_not(self)

    def bitwise_left_shift(self, other):
        """`input << other`, elementwise, broadcasting, on integers (a bool
        operand promotes to an integer one); a shift by a negative count, or by the dtype's width or
        more, gives 0. Outside the graph."""
        return ops.bitwise_left_shift(self, other)

    def bitwise_right_shift(self, other):
        """`input >> other`, elementwise, broadcasting, on integers, the sign
        filled in; a shift by a negative count, or by the dtype's width or more, gives 0 (-1 for a
        negative element). Outside the graph."""
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
        """`max(x, 0)`, elementwise; the gradient at 0 is 0. An integer tensor stays integer;
        a bool tensor is refused, as in PyTorch."""
        return ops.relu(self)

    def sigmoid(self):
        """`1 / (1 + exp(-x))`, elementwise, without overflow; integer and bool tensors
        compute in float32, as in PyTorch."""
        return ops.sigmoid(self)

    def tanh(self):
        """The elementwise hyperbolic tangent; integer and bool tensors compute in float32, as
        in PyTorch."""
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
        """The matrix product `input @ other`: 1-D operands are vectors, dims before the
        last two are batch dims and broadcast. Both must share a dtype (DTypeError otherwise): no
        promotion, as in PyTorch."""
        return ops.matmul(self, other)

    # Reductions: PyTorch's dim and keepdim, or numpy's axis and keepdims.

    # dtype casts self first, as PyTorch's; axis and keepdims are numpy's (and PyTorch's
    # undocumented) spellings of dim and keepdim

    def sum(self, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
        """The sum of the elements over `dim`: an int, a tuple of ints, or None for all.

        `keepdim=True` keeps each reduced dim with size 1. Integer and bool tensors sum to int64,
        as in PyTorch. `dtype` (a floating dtype, or int64) casts the tensor first, recorded. `axis`
        and `keepdims` are numpy's names for `dim` and `keepdim`."""
        x = ops.cast_first(self, dtype, "sum", int64=True)
        return ops.sum(x, dim_arg(dim, axis, "sum"), keepdim_arg(keepdim, keepdims))

    def mean(self, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
        """The mean of the elements over `dim`: an int, a tuple of ints, or None for all.

        Floating tensors only, as in PyTorch: an integer one needs `dtype=` (a floating dtype, cast
        first, recorded). Over no elements it is NaN. `keepdim=True` keeps each reduced dim with
        size 1; `axis` and `keepdims` are numpy's names for `dim` and `keepdim`."""
        x = ops.cast_first(self, dtype, "mean")
        return ops.mean(x, dim_arg(dim, axis, "mean"), keepdim_arg(keepdim, keepdims))

    def prod(self, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
        """The product of the elements over `dim`: an int, a tuple of ints, or None for all.

        Integer and bool tensors multiply in int64, as in PyTorch; the gradient is exact where
        elements are zero. `dtype` (a floating dtype, or int64) casts the tensor first, recorded.
        `keepdim`, `axis` and `keepdims` as in `sum`."""
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
        """The running `log(sum(exp(x)))` along `dim`, without overflow; the shape
        stays. `dim` (or numpy's `axis`) must be given, one int; floating tensors only, as in
        PyTorch."""
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
        """The maximum over `dim` (an int, a tuple of ints, or None for all), values only.

        Tied maxima share the gradient evenly; a slice holding NaN has maximum NaN and a NaN
        gradient. An empty dim is refused (ShapeError). `axis` and `keepdims` are numpy's names for
        `dim` and `keepdim`."""
        return ops.max(self, dim_arg(dim, axis, "amax"), keepdim_arg(keepdim, keepdims))

    def amin(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """The minimum over `dim` (an int, a tuple of ints, or None for all), values only.

        Tied minima share the gradient evenly; a slice holding NaN has minimum NaN and a NaN
        gradient. An empty dim is refused (ShapeError). `axis` and `keepdims` are numpy's names for
        `dim` and `keepdim`."""
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
        """Whether every element over `dim` (an int, a tuple of ints, or None for all) is
        nonzero: a bool tensor, outside the graph; True over no elements; uint8 for a uint8 tensor,
        as in PyTorch."""
        return ops.all(self, dim_arg(dim, axis, "all"), keepdim_arg(keepdim, keepdims))

    def any(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """Whether some element over `dim` (an int, a tuple of ints, or None for all) is
        nonzero: a bool tensor, outside the graph; False over no elements; uint8 for a uint8 tensor,
        as in PyTorch."""
        return ops.any(self, dim_arg(dim, axis, "any"), keepdim_arg(keepdim, keepdims))

    def argmax(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """The index of the first maximum along one int `dim`, or in the flattened tensor
        where `dim` is None: an int64 tensor, outside the graph. A NaN counts as the maximum; a bool
        tensor is refused, as in PyTorch."""
        return ops.argmax(self, dim_arg(dim, axis, "argmax"), keepdim_arg(keepdim, keepdims))

    def argmin(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """The index of the first minimum along one int `dim`, or in the flattened tensor
        where `dim` is None: an int64 tensor, outside the graph. A NaN counts as the minimum; a bool
        tensor is refused, as in PyTorch."""
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
        """`log(sum(exp(x)))` over `dim`, without overflow: an int, a tuple of ints, or
        None for all elements (PyTorch requires a dim). Integer and bool tensors compute in float32;
        over no elements it is -inf. `keepdim`, `axis` and `keepdims` as in `sum`."""
        return ops.logsumexp(self, dim_arg(dim, axis, "logsumexp"), keepdim_arg(keepdim, keepdims))

    def aminmax(self, *, dim=None, keepdim=False):
        """(min, max) of all elements or along one dim."""
        return ops.aminmax(self, dim=dim, keepdim=keepdim)

    def count_nonzero(self, dim=None):
        """The number of nonzero elements (NaN counts) over `dim`: an int, a tuple of
        ints, or None for all. An int64 tensor, outside the graph."""
        return ops.count_nonzero(self, dim)

    def median(self, dim=None, keepdim=False):
        """The lower median of all elements, or (values, indices) along one dim."""
        return ops.median(self, dim, keepdim)

    def quantile(self, q, dim=None, keepdim=False, *, interpolation="linear"):
        """The `q`-th quantiles along `dim` (of all elements where None), as PyTorch's.

        `q` is a number or a 1-D tensor of the tensor's dtype, in [0, 1]; a 1-D `q` adds a leading
        dim, one quantile per level. `interpolation` says how a rank between two sorted values is
        read: "linear", "lower", "higher", "midpoint" or "nearest". A slice holding NaN gives NaN.
        Floating, non-empty tensors only; the gradient goes to the elements read."""
        return ops.quantile(self, q, dim, keepdim, interpolation=interpolation)

    # Sorting: values gathered where the indices say, the indices outside the graph.

    # Shape methods: a shape or dims spread out, f(2, 3), or as one sequence, f((2, 3)).

    def reshape(self, *shape):
        """The same elements in a new shape, given spread out (`x.reshape(2, 3)`) or as one
        sequence (`x.reshape((2, 3))`); one size may be -1, inferred from the others.
        A view of the tensor's memory where the layout allows, else a copy (see `view`)."""
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
        """Reshaped to `other`'s shape: `reshape(other.shape)`."""
        return ops.reshape(self, other.shape)

    def flatten(self, start_dim: int = 0, end_dim: int = -1):
        """Dims `start_dim` to `end_dim` (both included) merged into one; a 0-d tensor
        becomes 1-D."""
        return ops.flatten(self, start_dim, end_dim)

    def transpose(self, dim0: int, dim1: int):
        """Dims `dim0` and `dim1` swapped (a view)."""
        return ops.transpose(self, dim0, dim1)

    def permute(self, *dims):
        """The dims reordered, given spread out or as one sequence: the result's dim `i` is
        the tensor's dim `dims[i]` (a view)."""
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
        return ops.shapes.shape.tile_as("repeat", self, sizes)

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

    # Rearranging: ops/shapes/rearrange.py declares its methods (ops/core/variants.py).

    # Selection and scatter by index (ops/scattering.py), and their in-place forms.

    def nonzero(self, *, as_tuple: bool = False):
        """The indices of the nonzero elements (NaN counts), in row-major order, outside
        the graph: an int64 tensor of shape `(count, ndim)`, or with `as_tuple=True` one 1-D int64
        tensor per dim (a 0-d tensor counting as 1-D)."""
        return ops.nonzero(self, as_tuple=as_tuple)

    def argwhere(self):
        """The indices of the nonzero elements as the rows of an int64 `(count, ndim)`
        tensor, outside the graph: `nonzero()`."""
        return ops.argwhere(self)

    def masked_select(self, mask):
        """The elements where the bool `mask` is True, as a 1-D tensor in row-major
        order; the tensor and `mask` broadcast against each other first. The gradient goes back to
        the elements selected."""
        return ops.masked_select(self, mask)

    def masked_scatter(self, mask, source):
        """A copy with the places where the bool `mask` is True filled, in row-major
        order, by the first elements of `source` (taken flat; at least as many as the mask selects).

        `mask` broadcasts with the tensor; `source` must have its dtype. The gradient goes to the
        tensor outside the mask and to the elements of `source` used."""
        return ops.masked_scatter(self, mask, source)

    def masked_scatter_(self, mask, source):
        """`masked_scatter` in place: changes the tensor and returns it. As in
        PyTorch, a leaf that requires grad changes in place only under `no_grad`."""
        return write_in_place(self, lambda: self.masked_scatter(mask, source), "masked_scatter_")

    def index_select(self, dim: int, index):
        """The slices at `index` (a 1-D int64 or int32 tensor, or a 0-d one) along
        `dim`, in index's order, repeats allowed: the shape with `dim` of size `len(index)`. An
        element picked more than once gets the sum of its gradients."""
        return ops.index_select(self, dim, index)

    def take_along_dim(self, indices, dim=None):
        """The elements at `indices` (an int64 tensor) along `dim`: `gather` after the
        tensor and `indices` broadcast against each other in the other dims; with `dim` None, the
        flattened tensor at the flattened indices. Negative or too large indices are refused."""
        return ops.take_along_dim(self, indices, dim)

    def scatter(self, dim: int, index, src=None, *, value=None, reduce=None):
        """A copy with `src` written at `index` along `dim`: `out[..., index[p], ...] = src[p]`.

        Args:
            dim: the dim that `index` indexes; the other coordinates are p's own.
            index: an int64 or int32 tensor with the tensor's number of dims, no larger than `src`,
                nor than the tensor outside `dim`.
            src: a tensor of the tensor's dtype, or a number (as `value`).
            value: a number written instead of `src`.
            reduce: None (where `index` repeats a place, the last write wins), or "add" or
                "multiply", reducing into the tensor's values as `scatter_reduce`'s "sum" and
                "prod".

        The gradient goes to the tensor where nothing was written, and to `src` at `index`."""
        return ops.scatter(self, dim, index, src, value=value, reduce=reduce)

    def scatter_(self, dim: int, index, src=None, *, value=None, reduce=None):
        """`scatter` in place: changes the tensor and returns it. As in PyTorch, a leaf
        that requires grad changes in place only under `no_grad`."""
        return write_in_place(
            self, lambda: self.scatter(dim, index, src, value=value, reduce=reduce), "scatter_"
        )

    def scatter_add(self, dim: int, index, src):
        """A copy with each element of `src` added at `index` along `dim`:
        `out[..., index[p], ...] += src[p]` (`scatter_reduce`'s "sum"); `index` and `src` as in
        `scatter`. The gradient goes to the tensor as is, and to `src` read back at `index`."""
        return ops.scatter_add(self, dim, index, src)

    def scatter_add_(self, dim: int, index, src):
        """`scatter_add` in place: changes the tensor and returns it. As in PyTorch, a
        leaf that requires grad changes in place only under `no_grad`."""
        return write_in_place(self, lambda: self.scatter_add(dim, index, src), "scatter_add_")

    def scatter_reduce(self, dim: int, index, src, reduce: str, *, include_self: bool = True):
        """A copy with each element of `src` reduced into `out[..., index[p], ...]`
        along `dim`, by `reduce`: "sum", "prod", "mean" (an integer mean rounds down), "amax" or
        "amin".

        `index` and `src` as in `scatter` (`src` of the tensor's dtype). With `include_self=False`,
        the tensor's own value is left out where `src` reaches. Gradients as PyTorch's: "prod" gets
        the product of the others, "amax" and "amin" split evenly among ties."""
        return ops.scatter_reduce(self, dim, index, src, reduce, include_self=include_self)

    def scatter_reduce_(self, dim: int, index, src, reduce: str, *, include_self: bool = True):
        """`scatter_reduce` in place: changes the tensor and returns it. As in
        PyTorch, a leaf that requires grad changes in place only under `no_grad`."""
        return write_in_place(
            self,
            lambda: self.scatter_reduce(dim, index, src, reduce, include_self=include_self),
            "scatter_reduce_",
        )

    def index_add(self, dim: int, index, source, *, alpha=1):
        """A copy with `alpha * source` added at `index` (1-D, int64 or int32) along
        `dim`: slice `i` of `source` is added to slice `index[i]`, repeats adding up. `source` has
        the tensor's dtype, and its shape but `len(index)` along `dim`; for an integer tensor,
        `alpha` must be a whole number."""
        return ops.index_add(self, dim, index, source, alpha=alpha)

    def index_add_(self, dim: int, index, source, *, alpha=1):
        """`index_add` in place: changes the tensor and returns it. As in PyTorch, a
        leaf that requires grad changes in place only under `no_grad`."""
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
from .ops.core.checks import normalize_axis  # noqa: E402
from .ops.core.variants import declared  # noqa: E402
from .ops.pointwise.arithmetic import Add, Div, Mul, Neg, Sub  # noqa: E402
from .ops.reductions.reduction import values_and_indices  # noqa: E402


def _bind_declared_methods() -> None:
    """The methods and in-place twins the ops declare (ops/core/variants.py), bound here: the
    method is the op's function itself, the tensor as self."""
    for variant in declared():
        for name in (*variant.methods, variant.inplace):
            if name and name in Tensor.__dict__:
                raise GraphError(f"Tensor.{name} is both defined in tensor.py and declared")
        for name in variant.methods:
            setattr(Tensor, name, variant.function)
        if variant.inplace:
            setattr(Tensor, variant.inplace, in_place_twin(variant.function, variant.inplace))


_bind_declared_methods()

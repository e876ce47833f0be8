"""Tensor's method table: PyTorch's methods that no op declares (ops/core/variants.py binds
those), each calling its op: the method forms of the operators, elementwise math, reductions with
PyTorch's dim and keepdim (or numpy's axis and keepdims), shape methods taking a shape spread
out, selection and scatter by index. tensor.py binds them on Tensor once ops exist."""

from __future__ import annotations

import mmap

import numpy as np

from . import backend, creation, ops
from .arguments import (
    as_dtype,
    dims_args,
    shape_args,
)
from .autograd import versions
from .errors import ArgumentError, DTypeError, ShapeError
from .inplace import write_in_place
from .ops.core.checks import normalize_axis
from .ops.pointwise.arithmetic import Div, Mul, Neg
from .tensor import Tensor
from .tensor_types import TYPE_DTYPES, TYPE_NAMES, LegacyTensorType

__all__ = ["TensorMethods"]

# PyTorch's type strings (x.type()), by numpy dtype; on a GPU, 'torch.cuda.' in front of the name


def _names_dtype(target) -> bool:
    """Whether view's one argument is a dtype (np.int32, np.dtype('f4')) rather than a size: a
    numeric dtype, or a type naming one (strings are refused, as PyTorch refuses them)."""
    if not isinstance(target, (np.dtype, type)) or isinstance(target, bool):
        return False
    try:
        return np.dtype(target).kind in "biufc"
    except TypeError:
        return False


def _view_as_dtype(x: Tensor, dtype: np.dtype) -> Tensor:
    """x's memory read as `dtype`, as PyTorch's view(dtype): the same shape where the element
    sizes agree; else the last dim (which must have stride 1, in a tensor of at least one dim)
    grows or shrinks by the ratio of the sizes, and for a larger element the last dim's size,
    the other strides and the offset into the memory must divide by the ratio. As in PyTorch,
    the result shares x's memory and is outside the graph (it never requires grad)."""
    array, old = x.array, x.array.dtype
    if dtype.itemsize == old.itemsize:
        return Tensor.wrap(array.view(dtype))
    reading = f"to view {old} as {dtype} (different element sizes)"
    if array.ndim == 0:
        raise ShapeError(f"view: the tensor must have at least one dim {reading}")
    strides = [stride // old.itemsize for stride in array.strides]
    if strides[-1] != 1:
        raise ShapeError(f"view: the last dim's stride must be 1 {reading}, got {strides[-1]}")
    if dtype.itemsize > old.itemsize:
        ratio = dtype.itemsize // old.itemsize
        base = versions.owner(array)
        offset = (_address(array) - _address(base)) // old.itemsize
        checks = [(f"the last dim's size {array.shape[-1]}", array.shape[-1])]
        checks += [(f"dim {d}'s stride {stride}", stride) for d, stride in enumerate(strides[:-1])]
        for what, value in [*checks, (f"the offset into its memory {offset}", offset)]:
            if value % ratio:
                raise ShapeError(f"view: {what} must divide by {ratio} {reading}")
    return Tensor.wrap(array.view(dtype))  # numpy (>= 1.23) needs only the last dim contiguous


def _address(array) -> int:
    """Where an array's first element sits in memory (numpy's or CuPy's)."""
    pointer = getattr(array.data, "ptr", None)  # CuPy's memory pointer
    return array.__array_interface__["data"][0] if pointer is None else pointer


def _type_target(dtype) -> tuple:
    """`type`'s argument as (device or None, numpy dtype): a dtype, or PyTorch's type string or
    legacy type, which name the device too ('torch.DoubleTensor' and minitrain.DoubleTensor the
    CPU, 'torch.cuda.FloatTensor' a GPU)."""
    if isinstance(dtype, LegacyTensorType):
        return "cpu", dtype.dtype
    if isinstance(dtype, str) and dtype.startswith("torch."):
        name = dtype.removeprefix("torch.")
        device = "cuda" if name.startswith("cuda.") else "cpu"
        if name.removeprefix("cuda.") not in TYPE_DTYPES:
            raise DTypeError(f"type: invalid type {dtype!r}")
        return device, TYPE_DTYPES[name.removeprefix("cuda.")]
    return None, as_dtype(dtype, "type")


def _new_options(self, dtype, device) -> dict:
    """The new_* methods' dtype and device: self's unless given."""
    return {
        "dtype": self.dtype if dtype is None else as_dtype(dtype, "new tensor"),
        "device": self.device if device is None else device,
    }


class TensorMethods:
    """The methods tensor.py binds on Tensor (this class is never instantiated)."""

    # PyTorch's method forms of the operators, and contiguous.

    def mul(self, other):
        """`input * other`, elementwise, broadcasting; `other` may be a number. `multiply` is
        the same method."""
        return Mul.apply(self, other)

    def true_divide(self, other):
        """`input / other`, elementwise, broadcasting: true division, where integer
        operands give float32 (`div` without `rounding_mode`)."""
        return Div.apply(self, other)

    def neg(self):
        """`-input`, elementwise; a bool tensor is refused, as in PyTorch. `negative` is the
        same method."""
        return Neg.apply(self)

    # PyTorch's other spellings of the same
    multiply, negative = mul, neg

    def contiguous(self):
        """self where its memory is in C order already, else a C-ordered copy in the graph."""
        return self if self.array.flags.c_contiguous else ops.contiguous(self)

    # Elementwise math by other names (clamp_min, square, ...): each calls its op.

    # Tests, outside the graph (the other pointwise methods: their ops declare them).

    def equal(self, other) -> bool:
        """Whether other has self's shape and elements (one bool; `==` is elementwise)."""
        return ops.array_equal(self, other)

    def where(self, condition, other):
        """self where condition is True, other elsewhere: where(condition, self, other)."""
        return ops.where(condition, self, other)

    # The matrix products' in-place forms (ops/linalg/products.py declares the rest).

    def addmm_(self, mat1, mat2, *, beta=1, alpha=1):
        """`addmm` in place: beta * self + alpha * (mat1 @ mat2) written into self, which
        must have the product's shape (it cannot broadcast); returns self."""
        return write_in_place(
            self, lambda: ops.addmm(self, mat1, mat2, beta=beta, alpha=alpha), "addmm_"
        )

    def addmv_(self, mat, vec, *, beta=1, alpha=1):
        """`addmv` in place: beta * self + alpha * (mat @ vec) written into self, which must
        have the product's shape; returns self."""
        return write_in_place(
            self, lambda: ops.addmv(self, mat, vec, beta=beta, alpha=alpha), "addmv_"
        )

    # New tensors in this one's dtype and on its device (PyTorch's new_*), leaves.

    def new_zeros(self, *size, dtype=None, device=None, requires_grad: bool = False):
        """Zeros of `size` (spread out or one sequence), in self's dtype and on its device
        unless `dtype` or `device` is given."""
        return creation.zeros(
            *size, requires_grad=requires_grad, **_new_options(self, dtype, device)
        )

    def new_ones(self, *size, dtype=None, device=None, requires_grad: bool = False):
        """Ones of `size` (spread out or one sequence), in self's dtype and on its device
        unless `dtype` or `device` is given."""
        return creation.ones(
            *size, requires_grad=requires_grad, **_new_options(self, dtype, device)
        )

    def new_empty(self, *size, dtype=None, device=None, requires_grad: bool = False):
        """A tensor of `size` (spread out or one sequence) whose values are whatever its new
        memory held, in self's dtype and on its device unless `dtype` or `device` is given."""
        return creation.empty(
            *size, requires_grad=requires_grad, **_new_options(self, dtype, device)
        )

    def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad: bool = False):
        """A tensor of `size` (a sequence of ints) filled with `fill_value`, in self's dtype
        and on its device unless `dtype` or `device` is given."""
        if not isinstance(size, (tuple, list)):
            raise DTypeError(f"new_full: size must be a tuple of ints, got {type(size).__name__}")
        options = _new_options(self, dtype, device)
        return creation.full(tuple(size), fill_value, requires_grad=requires_grad, **options)

    def new_tensor(self, data, *, dtype=None, device=None, requires_grad: bool = False):
        """A new leaf holding a copy of `data` (a tensor's values are copied and detached), in
        self's dtype and on its device unless `dtype` or `device` is given."""
        return creation.tensor(
            data, requires_grad=requires_grad, **_new_options(self, dtype, device)
        )

    # The memory layout, PyTorch's type names, and where the tensor is not.

    def stride(self, dim=None):
        """The step in elements from one element to the next along each dim (a tuple), or
        along `dim`: numpy's strides in bytes over the item size. A 0-d tensor's is ()."""
        strides = tuple(n // self.array.itemsize for n in self.array.strides)
        if dim is None:
            return strides
        (dim,) = normalize_axis(dim, self.ndim, "stride")
        return strides[dim]

    @property
    def itemsize(self) -> int:
        """The bytes one element takes (`element_size()` too)."""
        return self.array.itemsize

    def element_size(self) -> int:
        """The bytes one element takes, as `itemsize`."""
        return self.array.itemsize

    @property
    def nbytes(self) -> int:
        """The bytes the elements take: numel times itemsize (of a view, its elements only)."""
        return self.array.nbytes

    def type(self, dtype=None, non_blocking: bool = False):
        """With no dtype, PyTorch's name of the tensor's type ('torch.FloatTensor', on a GPU
        'torch.cuda.FloatTensor'); with one (a numpy dtype, or such a name), the tensor cast to
        it (a name moves it to the name's device too): itself where it has that dtype already,
        else `to(dtype)`. `non_blocking` is PyTorch's, and changes nothing here."""
        if dtype is None:
            name = TYPE_NAMES.get(self.dtype)
            if name is None:
                raise DTypeError(f"type: PyTorch has no tensor type of dtype {self.dtype}")
            return f"torch.{'cuda.' if self.is_cuda else ''}{name}"
        device, dtype = _type_target(dtype)
        return self.to(device=device, dtype=dtype)

    # The casts PyTorch names by dtype: recorded to a floating dtype, outside the graph else.

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

    # Memory that worker processes share (Hogwild training), and pinning (a no-op on the CPU).

    def share_memory_(self):
        """Move the values into memory that processes forked afterwards share (PyTorch's, for
        torch.multiprocessing): an anonymous shared mapping, so a child's in-place update (an
        optimizer step) is seen by the parent and its siblings. The tensor keeps its identity;
        views taken before keep the old memory. Processes started by 'spawn' get a copy, as the
        mapping is not passed by pickling. A tensor on a GPU, or already shared, is unchanged.
        Returns self."""
        if self.is_cuda or self.is_shared():
            return self
        memory = mmap.mmap(-1, max(self.array.nbytes, 1))  # MAP_SHARED | MAP_ANONYMOUS
        shared = np.ndarray(self.shape, self.dtype, buffer=memory)
        shared[...] = self.array
        self.array = shared
        return self

    def is_shared(self) -> bool:
        """Whether `share_memory_` put the values in shared memory."""
        base = self.array
        while isinstance(base, np.ndarray):
            base = base.base
        return isinstance(base, mmap.mmap)

    def pin_memory(self):
        """PyTorch's page-locked copy for faster transfers to a GPU: the tensor itself here
        (minitrain copies to a GPU through CuPy, which pins as it needs)."""
        return self

    def is_pinned(self) -> bool:
        """Whether the memory is page-locked: never, here (see `pin_memory`)."""
        return False

    @property
    def is_cpu(self) -> bool:
        """Whether the tensor lives in host memory."""
        return backend.device_of(self.array).type == "cpu"

    @property
    def is_sparse(self) -> bool:
        """False: minitrain's tensors are dense."""
        return False

    @property
    def is_quantized(self) -> bool:
        """False: minitrain has no quantized tensors."""
        return False

    @property
    def is_meta(self) -> bool:
        """False: every minitrain tensor holds its data."""
        return False

    @property
    def is_mps(self) -> bool:
        """False: minitrain runs on the CPU and on CUDA GPUs only."""
        return False

    @property
    def is_xpu(self) -> bool:
        """False: minitrain runs on the CPU and on CUDA GPUs only."""
        return False

    # Shape methods: a shape or dims spread out, f(2, 3), or as one sequence, f((2, 3)).

    def reshape(self, *shape):
        """The same elements in a new shape, given spread out (`x.reshape(2, 3)`) or as one
        sequence (`x.reshape((2, 3))`); one size may be -1, inferred from the others.
        A view of the tensor's memory where the layout allows, else a copy (see `view`)."""
        return ops.reshape(self, shape_args(shape))

    def view(self, *shape):
        """reshape that never copies, as PyTorch's: a tensor whose memory the new shape does not
        fit (a transposed one, say) is refused, since writes into a copy would not reach it;
        reshape copies there. view(dtype) reads the same bytes as another dtype, as PyTorch's:
        the same shape for a dtype of the same element size, else the last dim (of stride 1)
        scaled by the ratio of the sizes; it shares the memory and never requires grad."""
        if len(shape) == 1 and _names_dtype(shape[0]):
            return _view_as_dtype(self, np.dtype(shape[0]))
        shape = shape_args(shape)
        if not all(isinstance(n, (int, np.integer)) for n in shape):
            raise DTypeError(f"view: takes ints or one dtype, got {shape}")
        out = ops.reshape(self, shape)
        if out.array.size and versions.owner(out.array) is not versions.owner(self.array):
            raise ShapeError(
                f"view: shape {tuple(shape)} does not fit the memory layout of a tensor of shape "
                f"{self.shape} and strides {self.array.strides} without a copy; use reshape"
            )
        return out

    def view_as(self, other: Tensor):
        """Reshaped to other's shape (see view)."""
        return ops.reshape(self, other.shape)

    def reshape_as(self, other: Tensor):
        """Reshaped to `other`'s shape: `reshape(other.shape)`."""
        return ops.reshape(self, other.shape)

    def permute(self, *dims):
        """The dims reordered, given spread out or as one sequence: the result's dim `i` is
        the tensor's dim `dims[i]` (a view)."""
        return ops.permute(self, shape_args(dims))

    @property
    def T(self):  # noqa: N802
        """All dims reversed, as numpy's `.T`."""
        return ops.permute(self, tuple(reversed(range(self.ndim))))

    @property
    def mT(self):  # noqa: N802
        """The last two dims swapped (a batch of matrices transposed), PyTorch's `.mT`."""
        if self.ndim < 2:
            raise ShapeError(f"mT: takes a tensor of at least 2 dims, got shape {self.shape}")
        return self.transpose(-2, -1)

    def to_sparse(self, sparseDims=None):  # noqa: N803 (PyTorch's name)
        """PyTorch's sparse form: the tensor itself, as minitrain holds tensors dense (see
        `minitrain.sparse_coo_tensor`); its values and every op on it are the same."""
        return self

    def to_dense(self, dtype=None, *, masked_grad=None):
        """The dense tensor: itself (minitrain's tensors are dense), cast to `dtype` if given;
        `masked_grad` is PyTorch's and changes nothing here."""
        return self if dtype is None else self.to(dtype)

    def coalesce(self):
        """PyTorch's sparse coalesce: itself (dense, nothing to merge)."""
        return self

    def t(self):
        """A 2-D tensor transposed; a 0-D or 1-D one as it is (PyTorch's t)."""
        if self.ndim > 2:
            raise ShapeError(
                f"t: takes a tensor of at most 2 dims, got shape {self.shape}; use transpose"
            )
        return self.T

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

    # The in-place forms of the scatters (ops/shapes/scattering.py declares the rest).

    def masked_scatter_(self, mask, source):
        """`masked_scatter` in place: changes the tensor and returns it. As in
        PyTorch, a leaf that requires grad changes in place only under `no_grad`."""
        return write_in_place(self, lambda: self.masked_scatter(mask, source), "masked_scatter_")

    def scatter_(self, dim: int, index, src=None, *, value=None, reduce=None):
        """`scatter` in place: changes the tensor and returns it. As in PyTorch, a leaf
        that requires grad changes in place only under `no_grad`."""
        return write_in_place(
            self, lambda: self.scatter(dim, index, src, value=value, reduce=reduce), "scatter_"
        )

    def scatter_add_(self, dim: int, index, src):
        """`scatter_add` in place: changes the tensor and returns it. As in PyTorch, a
        leaf that requires grad changes in place only under `no_grad`."""
        return write_in_place(self, lambda: self.scatter_add(dim, index, src), "scatter_add_")

    def scatter_reduce_(self, dim: int, index, src, reduce: str, *, include_self: bool = True):
        """`scatter_reduce` in place: changes the tensor and returns it. As in
        PyTorch, a leaf that requires grad changes in place only under `no_grad`."""
        return write_in_place(
            self,
            lambda: self.scatter_reduce(dim, index, src, reduce, include_self=include_self),
            "scatter_reduce_",
        )

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

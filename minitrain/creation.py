"""The functions that create tensors (tensor, as_tensor and asarray, zeros, ones, empty, full,
randn, rand, arange, eye, linspace, randint, randperm and the *_like ones), and the dtype names
they take. Each takes `device=` and makes its array there: on a GPU, CuPy allocates it and
cupy.random draws it."""

from __future__ import annotations

import numpy as np

from . import backend
from .arguments import as_array, as_dtype, shape_args
from .errors import ArgumentError, DTypeError, ShapeError
from .runtime.defaults import default_device_or, get_default_device, get_default_dtype
from .runtime.generator import numpy_source
from .tensor import Tensor

__all__ = [
    "tensor", "as_tensor", "asarray", "zeros", "empty", "ones", "full", "randn", "rand", "arange",
    "eye", "linspace", "randint", "randperm", "zeros_like", "empty_like", "ones_like", "full_like",
    "randn_like", "rand_like", "sparse_coo_tensor",
]  # fmt: skip


float16, float32, float64 = np.float16, np.float32, np.float64
int32, int64 = np.int32, np.int64


def tensor(data, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    """A new tensor holding a copy of data (Python floats become the default dtype, float32
    unless `set_default_dtype` changed it), on `device` or the default device."""
    if device is None and get_default_device().type != "cpu":
        device = get_default_device()
    array = as_array(data.array if isinstance(data, Tensor) else data, dtype, device)
    if array is data or (isinstance(data, Tensor) and array is data.array):
        array = array.copy()
    return Tensor(array, requires_grad=requires_grad)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """data as a tensor, sharing its memory where no cast or move is needed (PyTorch's
    as_tensor): a Tensor comes back itself (`data.to(device, dtype)` where either differs, in
    its graph); a numpy or CuPy array of that dtype on that device is wrapped, its strides kept
    and writes showing through both ways; anything else (lists, numbers, another dtype) is
    copied as `tensor` copies it."""
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=dtype)
    if device is None and get_default_device().type != "cpu":
        device = get_default_device()
    return Tensor(as_array(data, dtype, device))


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad: bool = False) -> Tensor:
    """PyTorch's asarray: `as_tensor`, where copy=True always copies and copy=False refuses a
    cast or move that would need a copy; requires_grad=True makes the result require grad (a
    Tensor in a graph comes back as it is, its graph kept, as PyTorch's does; a copy is a new
    leaf)."""
    if copy is True:
        out = tensor(obj.detach() if isinstance(obj, Tensor) else obj, dtype=dtype, device=device)
    else:
        out = as_tensor(obj, dtype=dtype, device=device)
        if copy is False and not _shares_memory(out, obj):
            raise ArgumentError(
                f"asarray: copy=False, but {type(obj).__name__} needs a copy to become a tensor "
                f"of dtype {out.dtype} on {out.device}"
            )
    if requires_grad and not out.requires_grad:
        out.requires_grad_(True)
    return out


def _shares_memory(out: Tensor, obj) -> bool:
    array = obj.array if isinstance(obj, Tensor) else obj
    if not backend.is_array(array) or backend.device_of(array) != out.device:
        return False
    return backend.array_module(array).shares_memory(out.array, array)


def _made(device, make, requires_grad: bool = False) -> Tensor:
    """A tensor of the array `make(xp)` creates, with xp the array module of `device` (the CPU
    for None) and, on a GPU, within its context, so that CuPy allocates it there."""
    target = default_device_or(device)
    with backend.device_context(target):
        array = make(target.xp)
    return Tensor(array, requires_grad=requires_grad)


def _float_or(dtype):
    """`dtype`, or the default floating dtype when it is None."""
    return get_default_dtype() if dtype is None else dtype


def _filled(caller: str, fill, shape, dtype, requires_grad, device) -> Tensor:
    shape, dtype = _size(caller, shape_args(shape)), np.dtype(_float_or(dtype))
    return _made(device, lambda xp: xp.full(shape, fill, dtype=dtype), requires_grad)


def zeros(*shape, size=None, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    """A tensor of `shape` (sizes spread out or as one sequence, or PyTorch's `size=`) filled
    with 0; the default dtype (float32 unless `set_default_dtype` changed it) unless `dtype` is
    given."""
    return _filled("zeros", 0, _sized("zeros", shape, size), dtype, requires_grad, device)


def empty(*shape, size=None, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    """A tensor of `shape` (or `size=`) whose values are whatever its new memory held
    (PyTorch's empty): for memory that is about to be written whole."""
    shape = _size("empty", shape_args(_sized("empty", shape, size)))
    dtype = np.dtype(_float_or(dtype))
    return _made(device, lambda xp: xp.empty(shape, dtype=dtype), requires_grad)


def ones(*shape, size=None, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    """A tensor of `shape` (sizes spread out or as one sequence, or PyTorch's `size=`) filled
    with 1; the default dtype (float32 unless `set_default_dtype` changed it) unless `dtype` is
    given."""
    return _filled("ones", 1, _sized("ones", shape, size), dtype, requires_grad, device)


def full(shape, fill_value, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    """A tensor of `shape` (an int or a sequence) filled with `fill_value`. `dtype` is the
    default dtype (float32 unless set) unless given, whatever `fill_value` is: PyTorch infers
    bool or int64 from a bool or int."""
    return _filled("full", fill_value, (shape,), dtype, requires_grad, device)


def randn(
    *shape, size=None, dtype=None, requires_grad: bool = False, device=None, generator=None
) -> Tensor:
    """Standard normal samples of `shape` (or `size=`) from the generator seeded by
    `manual_seed` (the CPU's, or on a GPU cupy.random's), or from `generator` (a
    minitrain.Generator, on the CPU)."""
    shape = _sized("randn", shape, size)
    return _drawn("normal", shape, dtype, requires_grad, device, generator)


def rand(
    *shape, size=None, dtype=None, requires_grad: bool = False, device=None, generator=None
) -> Tensor:
    """Uniform samples in [0, 1) of `shape` (or `size=`) from the generator seeded by
    `manual_seed` (the CPU's, or on a GPU cupy.random's), or from `generator` (a
    minitrain.Generator, on the CPU)."""
    shape = _sized("rand", shape, size)
    return _drawn("uniform", shape, dtype, requires_grad, device, generator)


def _sized(caller: str, shape: tuple, size) -> tuple:
    """The shape arguments: spread out or one sequence, or PyTorch's `size=` keyword."""
    if size is None:
        return shape
    if shape:
        raise ArgumentError(f"{caller}: give the shape positionally or as size=, not both")
    return (size,)


def _drawn(kind: str, shape, dtype, requires_grad: bool, device, generator) -> Tensor:
    """A tensor of backend.draw's values (which draws on the device, in its context), from
    `generator`'s stream when one is given."""
    where = default_device_or(device)
    caller = "randn" if kind == "normal" else "rand"
    source = numpy_source(generator, caller)
    values = backend.draw(
        where, kind, _size(caller, shape_args(shape)), np.dtype(_float_or(dtype)), source=source
    )
    return Tensor(values, requires_grad=requires_grad)


def arange(start, end=None, step=1, dtype=None, requires_grad: bool = False, device=None):
    """Like PyTorch: int arguments give int64, any float gives the default dtype (float32
    unless `set_default_dtype` changed it)."""
    if end is None:
        start, end = 0, start
    if dtype is None:
        is_float = any(isinstance(v, (float, np.floating)) for v in (start, end, step))
        dtype = get_default_dtype() if is_float else np.int64
    return _made(device, lambda xp: xp.arange(start, end, step, dtype=dtype), requires_grad)


def eye(n: int, m: int | None = None, *, dtype=None, requires_grad=False, device=None):
    """The n x m identity matrix (m defaults to n)."""
    for name, size in (("n", n), ("m", n if m is None else m)):
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
            raise DTypeError(f"eye: {name} must be an int, got {size!r}")
        if size < 0:
            raise ArgumentError(f"eye: {name} must be non-negative, got {size}")
    dtype = as_dtype(_float_or(dtype), "eye")
    return _made(device, lambda xp: xp.eye(n, m, dtype=dtype), requires_grad)


def linspace(start, end, steps: int, *, dtype=None, requires_grad=False, device=None):
    """`steps` evenly spaced values from start to end, both included."""
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)):
        raise DTypeError(f"linspace: steps must be an int, got {steps!r}")
    if steps < 0:
        raise ArgumentError(f"linspace: steps must be non-negative, got {steps}")
    dtype = as_dtype(_float_or(dtype), "linspace")
    if dtype == np.bool_:
        raise DTypeError("linspace: dtype bool is not supported (as in PyTorch)")
    return _made(device, lambda xp: xp.linspace(start, end, steps).astype(dtype), requires_grad)


def randint(low=0, high=None, size=None, *, dtype=int64, device=None, generator=None) -> Tensor:
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
    source = numpy_source(generator, "randint")
    dtype = _integer_range("randint", dtype, low, high - 1)

    def draw(xp):
        if xp is np:
            return (source or backend.generator()).integers(low, high, size).astype(dtype)
        drawn = dtype if dtype.kind in "iu" else np.int64  # a float dtype takes int64's values
        return xp.random.randint(low, high, size, dtype=drawn).astype(dtype, copy=False)

    return _made(device, draw)


def randperm(n: int, *, dtype=int64, device=None, generator=None) -> Tensor:
    """A random permutation of 0..n-1, from the generator seeded by `manual_seed`."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise DTypeError(f"randperm: n must be an int, got {n!r}")
    if n < 0:
        raise ArgumentError(f"randperm: n must be non-negative, got {n}")
    dtype = _integer_range("randperm", dtype, 0, max(n - 1, 0))
    source = numpy_source(generator, "randperm")

    def draw(xp):
        random = (source or backend.generator()) if xp is np else xp.random
        return random.permutation(int(n)).astype(dtype, copy=False)

    return _made(device, draw)


def _size(caller: str, size) -> tuple:
    """A shape: an int or a sequence of non-negative ints (PyTorch's RuntimeError for a negative
    size is ArgumentError's, its TypeError for a float DTypeError's)."""
    dims = (size,) if isinstance(size, (int, np.integer)) else size
    if not isinstance(dims, (tuple, list)) or not all(
        isinstance(n, (int, np.integer)) and not isinstance(n, bool) for n in dims
    ):
        raise DTypeError(f"{caller}: size must be a tuple of ints, got {size!r}")
    if any(n < 0 for n in dims):
        raise ArgumentError(f"{caller}: size must not be negative, got {tuple(dims)}")
    return tuple(int(n) for n in dims)


def _integer_range(caller: str, dtype, low: int, high: int) -> np.dtype:
    """`dtype`, checked to be a real dtype that holds every value from low to high (checked
    before anything is drawn, so a refused call leaves the generator as it was); a floating one
    takes the integers as they round, as PyTorch's does."""
    dtype = as_dtype(dtype, caller)
    if dtype.kind not in "iuf":
        raise DTypeError(f"{caller}: dtype must be an integer or floating dtype, got {dtype}")
    if dtype.kind == "f":
        return dtype
    limits = np.iinfo(dtype)
    if low < limits.min or high > limits.max:
        raise ArgumentError(
            f"{caller}: {dtype} holds {limits.min} to {limits.max}, not every value from {low} "
            f"to {high}"
        )
    return dtype


def _like(caller: str, t: Tensor, dtype, device):
    """The dtype and device a `*_like` function makes its tensor with."""
    if not isinstance(t, Tensor):
        raise DTypeError(f"{caller}: argument 'input' must be a Tensor, got {type(t).__name__}")
    return dict(dtype=t.dtype if dtype is None else dtype, device=device or t.device)


def zeros_like(t: Tensor, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    """Zeros of `t`'s shape, in `t`'s dtype and on its device unless `dtype` or `device` is
    given."""
    like = _like("zeros_like", t, dtype, device)
    return zeros(t.shape, requires_grad=requires_grad, **like)


def empty_like(t: Tensor, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    """An uninitialized tensor (see `empty`) of `t`'s shape, in `t`'s dtype and on its device
    unless `dtype` or `device` is given."""
    like = _like("empty_like", t, dtype, device)
    return empty(t.shape, requires_grad=requires_grad, **like)


def ones_like(t: Tensor, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    """Ones of `t`'s shape, in `t`'s dtype and on its device unless `dtype` or `device` is
    given."""
    like = _like("ones_like", t, dtype, device)
    return ones(t.shape, requires_grad=requires_grad, **like)


def full_like(t: Tensor, fill_value, dtype=None, requires_grad=False, device=None) -> Tensor:
    """A tensor of `t`'s shape filled with `fill_value`, in `t`'s dtype (`fill_value` cast to
    it) and on its device unless `dtype` or `device` is given."""
    like = _like("full_like", t, dtype, device)
    return full(t.shape, fill_value, requires_grad=requires_grad, **like)


def randn_like(t: Tensor, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    """Standard normal samples (see `randn`) of `t`'s shape, in `t`'s dtype and on its device
    unless `dtype` or `device` is given. An integer dtype truncates the samples toward zero
    (PyTorch refuses one)."""
    like = _like("randn_like", t, dtype, device)
    return randn(t.shape, requires_grad=requires_grad, **like)


def rand_like(t: Tensor, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    """Uniform samples in [0, 1) (see `rand`) of `t`'s shape, in `t`'s dtype and on its device
    unless `dtype` or `device` is given. An integer dtype truncates every sample to 0 (PyTorch
    refuses one)."""
    like = _like("rand_like", t, dtype, device)
    return rand(t.shape, requires_grad=requires_grad, **like)


def sparse_coo_tensor(
    indices, values, size=None, *, dtype=None, device=None, requires_grad: bool = False,
    is_coalesced=None, check_invariants=None,
) -> Tensor:  # fmt: skip
    """PyTorch's sparse COO tensor, held dense: minitrain has no sparse storage, so this is the
    dense tensor of `size` whose element at each column of `indices` (ndim, nnz) is its value
    in `values` (nnz,), values at one index summed, as PyTorch's coalesce sums them, and 0
    elsewhere. Its values and every op on it are PyTorch's; its memory is the dense shape's.
    `size` defaults to one past the largest index in each dim; `is_coalesced` and
    `check_invariants` are PyTorch's and change nothing here."""
    host = backend.device("cpu")  # built on the host, then moved to `device` whole
    index = np.asarray(
        backend.to_device(indices.array, host) if isinstance(indices, Tensor) else indices
    )
    entries = np.asarray(
        backend.to_device(values.array, host) if isinstance(values, Tensor) else values
    )
    if index.ndim != 2 or index.dtype.kind not in "iu":
        raise DTypeError(
            f"sparse_coo_tensor: indices must be an integer (ndim, nnz) tensor, got dtype "
            f"{index.dtype} and shape {index.shape}"
        )
    if np.ndim(entries) != 1 or len(entries) != index.shape[1]:
        raise ShapeError(
            f"sparse_coo_tensor: values must be 1-d with one value per index column "
            f"({index.shape[1]}), got shape {np.shape(entries)}"
        )
    size = tuple(index.max(axis=1) + 1) if size is None else tuple(size)
    if len(size) != index.shape[0] or (index.size and ((index < 0).any() or (
        index.max(axis=1) >= np.asarray(size)).any())):  # fmt: skip
        raise ShapeError(
            f"sparse_coo_tensor: indices of {index.shape[0]} dims must lie within size {size}"
        )
    dtype = np.dtype(entries.dtype if dtype is None else dtype)
    dense = np.zeros(size, dtype=dtype)
    np.add.at(dense, tuple(index), entries)
    return Tensor(dense, requires_grad=requires_grad, device=device)

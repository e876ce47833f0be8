"""A strict stand-in for CuPy on the CPU: arrays on a pretend CUDA device that refuse, as CuPy's
do, to become numpy arrays behind the caller's back.

CI has no GPU, so the code paths minitrain takes for CuPy arrays would otherwise never run. The
stand-in is an array module with CuPy's rules, built over numpy:

- `StrictArray` holds a numpy array ("device memory") and is not an np.ndarray. numpy's
  functions and ufuncs work on it through NEP 13/18 dispatch, as they do on CuPy arrays, and
  return StrictArrays (0-d where numpy would return a scalar, as CuPy does).
- Implicit conversion is refused with CuPy's TypeError: np.asarray(a), np.array(a), and any
  numpy function or ufunc given a StrictArray together with an np.ndarray (device and host
  memory mixed in one call). numba's kernels refuse it too (it is not an ndarray), as they refuse
  CuPy's. Explicit transfers are `strict.asarray(host)` and `a.get()` / `strict.asnumpy(a)`.
- float(a), int(a), bool(a), a.item() and a.tolist() copy to the host, as CuPy's do.
- Host transfers can be counted: within `with counting() as transfers:`, every copy to the host
  is noted in `transfers.events` ("what at file:line (function)", the caller outside this
  file), `transfers.count` of them: float, int, bool, operator.index, item, tolist, get, repr,
  strict.asnumpy, and what CuPy reads back to size its result (a boolean-mask index, nonzero,
  argwhere, flatnonzero, unique, extract, compress, where of a condition alone). On a GPU each
  waits for every kernel queued before it, so a training step that makes none never stalls the
  GPU's pipeline (tests/device/test_device_syncs.py). `strict_device.transfers` is the
  innermost open count (None outside one).

`install(monkeypatch)` makes it minitrain's CUDA array module for one test (backend.cupy and
backend.cupyx), so Device('cuda') arrays are StrictArrays. What it cannot stand in for is CuPy's
own kernels (ElementwiseKernel, RawKernel, cuDNN): it has none, and minitrain has none yet
either: on a GPU the generic xp paths run, as here.
"""

from __future__ import annotations

import contextlib
import math
import operator
import os
import sys
import types
import weakref

import numpy as np

_IMPLICIT = (
    "Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a "
    "NumPy array explicitly."
)


def _unwrap(value, caller: str):
    """value with StrictArrays replaced by their memory, through lists, tuples and dicts; an
    np.ndarray (host memory) is refused as CuPy refuses it, 0-d ones (numpy scalars) aside."""
    kind = type(value)
    if kind is StrictArray:
        return value._memory
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return value
        raise TypeError(f"{caller}: Unsupported type {kind} (a host array given to the device)")
    if kind in (list, tuple):
        return kind(_unwrap(v, caller) for v in value)
    if kind is dict:
        return {k: _unwrap(v, caller) for k, v in value.items()}
    return value


def _wrap(value):
    """numpy results as device results: arrays and numpy scalars become StrictArrays."""
    if isinstance(value, np.ndarray):
        return StrictArray(value)
    if isinstance(value, np.generic):
        return StrictArray(np.asarray(value))
    if type(value) in (list, tuple):
        return type(value)(_wrap(v) for v in value)
    return value


class TransferCount:
    """The host transfers made while `counting()` is open: `events`, one line each, and
    `count`."""

    def __init__(self):
        self.events: list[str] = []

    @property
    def count(self) -> int:
        return len(self.events)

    def note(self, what: str) -> None:
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename == __file__:
            frame = frame.f_back
        if frame is None:
            self.events.append(what)
            return
        code = frame.f_code
        name = os.path.basename(code.co_filename)
        self.events.append(f"{what} at {name}:{frame.f_lineno} ({code.co_name})")


transfers: TransferCount | None = None  # the innermost open count (see counting)
_open_counts: list[TransferCount] = []


@contextlib.contextmanager
def counting():
    """Count host transfers within the block: yields a TransferCount (every open one counts)."""
    global transfers
    count = TransferCount()
    _open_counts.append(count)
    transfers = count
    try:
        yield count
    finally:
        _open_counts.remove(count)
        transfers = _open_counts[-1] if _open_counts else None


def _note_transfer(what: str) -> None:
    for count in _open_counts:
        count.note(what)


# CuPy's functions whose result's size depends on the data: they read a count back to the host
# (where also, given the condition alone).
_SIZED_BY_DATA = {"nonzero", "argwhere", "flatnonzero", "unique", "extract", "compress"}


def _note_sized_by_data(name: str, args) -> None:
    if _open_counts and (name in _SIZED_BY_DATA or (name == "where" and len(args) == 1)):
        _note_transfer(f"{name}() (its size read back)")


def _has_mask(key) -> bool:
    """Whether an index holds a boolean array with dims (CuPy reads back its count of Trues)."""
    entries = key if type(key) is tuple else (key,)
    return any(
        type(k) in (StrictArray, np.ndarray) and k.dtype == np.bool_ and k.ndim for k in entries
    )


class _DeviceId:
    id = 0


_owners: dict = {}  # id(numpy array owning some memory) -> weakref to the StrictArray owning it


def _root(memory: np.ndarray) -> np.ndarray:
    while isinstance(memory.base, np.ndarray):
        memory = memory.base
    return memory


class StrictArray:
    """An array on the pretend device (see the module docstring). A view's `base` is the
    StrictArray that owns its memory (one object per piece of memory, kept alive by its views),
    as CuPy's: minitrain's version counters key memory by it."""

    __slots__ = ("_memory", "_owner", "__weakref__")
    __array_priority__ = 100
    __hash__ = None
    device = _DeviceId()

    def __init__(self, memory: np.ndarray):
        self._memory = memory
        root = _root(memory)
        if root is memory:
            self._owner = None
            key = id(memory)
            _owners[key] = weakref.ref(self, lambda _, key=key: _owners.pop(key, None))
            return
        known = _owners.get(id(root))
        owner = None if known is None else known()
        self._owner = StrictArray(root) if owner is None else owner

    def __array__(self, *args, **kwargs):
        raise TypeError(_IMPLICIT)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        caller = f"{ufunc.__name__}.{method}"
        result = getattr(ufunc, method)(*_unwrap(inputs, caller), **_unwrap(kwargs, caller))
        if "out" in kwargs:  # the out arrays themselves, as numpy returns them
            out = kwargs["out"]
            return out[0] if isinstance(out, tuple) and len(out) == 1 else out
        return _wrap(result)

    def __array_function__(self, func, types_, args, kwargs):
        caller = func.__name__
        _note_sized_by_data(caller, args)
        result = func(*_unwrap(args, caller), **_unwrap(kwargs, caller))
        if "out" in kwargs and kwargs["out"] is not None:
            return kwargs["out"]
        return _wrap(result)

    # The facts: what CuPy's ndarray has, read from the memory.
    shape = property(lambda self: self._memory.shape)
    dtype = property(lambda self: self._memory.dtype)
    ndim = property(lambda self: self._memory.ndim)
    size = property(lambda self: self._memory.size)
    itemsize = property(lambda self: self._memory.itemsize)
    nbytes = property(lambda self: self._memory.nbytes)
    strides = property(lambda self: self._memory.strides)
    flags = property(lambda self: self._memory.flags)
    base = property(lambda self: self._owner)
    T = property(lambda self: StrictArray(self._memory.T))
    real = property(lambda self: StrictArray(self._memory.real))
    imag = property(lambda self: StrictArray(self._memory.imag))

    def get(self) -> np.ndarray:
        """The values on the host: a copy, as CuPy's .get()."""
        _note_transfer("get()")
        return self._memory.copy()

    def item(self):
        _note_transfer("item()")
        return self._memory.item()

    def tolist(self):
        _note_transfer("tolist()")
        return self._memory.tolist()

    def __float__(self):
        _note_transfer("float()")
        return float(self._memory)

    def __int__(self):
        _note_transfer("int()")
        return int(self._memory)

    def __bool__(self):
        _note_transfer("bool()")
        return bool(self._memory)

    def __index__(self):
        _note_transfer("operator.index()")
        return operator.index(self._memory)

    def __len__(self):
        return len(self._memory)

    def __iter__(self):
        return (_wrap(row) for row in self._memory)

    def __repr__(self):
        _note_transfer("repr()")
        return f"StrictArray({self._memory!r})"

    def __getitem__(self, key):
        if _open_counts and _has_mask(key):
            _note_transfer("a boolean-mask index")
        return _wrap(self._memory[_index(key)])

    def __setitem__(self, key, value):
        self._memory[_index(key)] = _unwrap(value, "__setitem__")

    def __getattr__(self, name):
        # every other ndarray method (reshape, astype, sum, ...): on the memory, results wrapped;
        # not the array protocols (__array_interface__, ...), through which numpy would read the
        # memory as its own
        if name.startswith("__"):
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")
        method = getattr(self._memory, name)
        if not callable(method):
            return _wrap(method)

        def on_device(*args, **kwargs):
            caller = f"ndarray.{name}"
            _note_sized_by_data(name, (self, *args))
            result = method(*_unwrap(args, caller), **_unwrap(kwargs, caller))
            out = kwargs.get("out")
            return out if out is not None else _wrap(result)

        return on_device


def _index(key):
    """An index into device memory: device index arrays unwrapped; host index arrays allowed
    (CuPy copies them over)."""
    if type(key) is tuple:
        return tuple(_index(k) for k in key)
    if type(key) is StrictArray:
        return key._memory
    if type(key) is list:
        return [_index(k) for k in key]
    return key


def _binary(ufunc, left, right):
    """left <op> right through the ufunc; NotImplemented where right opts out of ufuncs
    (`__array_ufunc__ = None`, as the engine's deferred gradient sums do), so that Python calls
    right's reflected operator, as numpy's and CuPy's operators do."""
    if getattr(type(right), "__array_ufunc__", ufunc) is None:
        return NotImplemented
    return ufunc(left, right)


for _name, _ufunc in {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide,
    "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power, "matmul": np.matmul,
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
    "lshift": np.left_shift, "rshift": np.right_shift,
}.items():  # fmt: skip
    setattr(StrictArray, f"__{_name}__", lambda self, other, _u=_ufunc: _binary(_u, self, other))
    setattr(StrictArray, f"__r{_name}__", lambda self, other, _u=_ufunc: _u(other, self))
    setattr(StrictArray, f"__i{_name}__", lambda self, other, _u=_ufunc: _u(self, other, out=self))
for _name, _ufunc in {
    "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
    "eq": np.equal, "ne": np.not_equal,
}.items():  # fmt: skip
    setattr(StrictArray, f"__{_name}__", lambda self, other, _u=_ufunc: _u(self, other))
for _name, _ufunc in {
    "neg": np.negative, "pos": np.positive, "abs": np.absolute, "invert": np.invert
}.items():  # fmt: skip
    setattr(StrictArray, f"__{_name}__", lambda self, _u=_ufunc: _u(self))


def _transfer(host_function):
    """A creation function (asarray, array, ...): host data in, device array out."""

    def create(obj=None, *args, **kwargs):
        if type(obj) is StrictArray:
            result = host_function(obj._memory, *args, **kwargs)
            # asarray and ascontiguousarray of a device array that needs no change return it,
            # as CuPy's do: writing to the result writes to obj
            return obj if result is obj._memory else StrictArray(np.array(result, copy=True))
        if type(obj) in (list, tuple):
            obj = _unwrap(obj, host_function.__name__) if _has_device_array(obj) else obj
        # a copy that owns its memory, as a transfer to the device is
        return StrictArray(np.array(host_function(obj, *args, **kwargs), copy=True))

    return create


def _has_device_array(values) -> bool:
    return any(
        type(v) is StrictArray or (type(v) in (list, tuple) and _has_device_array(v))
        for v in values
    )


def _on_device(function, name: str):
    """A numpy function as the stand-in module's: device arrays in (host ones refused), device
    arrays out."""

    def call(*args, **kwargs):
        _note_sized_by_data(name, args)
        result = function(*_unwrap(args, name), **_unwrap(kwargs, name))
        out = kwargs.get("out")
        return out if out is not None else _wrap(result)

    call.__name__ = name
    return call


_TRANSFERS = ("asarray", "array", "ascontiguousarray", "asfortranarray")

# The ufunc methods CuPy has beyond reduce and outer, and the ufuncs it has them for (at: those
# with a scatter operation; accumulate: cumsum's and cumprod's).
_UFUNC_METHODS = {
    "at": {"add", "subtract", "maximum", "minimum"},
    "accumulate": {"add", "multiply"},
    "reduceat": {"add"},
}


class _StrictUfunc:
    """A numpy ufunc as CuPy's: called and reduced on device arrays; `at`, `accumulate` and
    `reduceat` only where CuPy has them (an AttributeError elsewhere, as CuPy raises)."""

    def __init__(self, ufunc):
        self._ufunc, self.__name__ = ufunc, ufunc.__name__
        self.nin, self.nout = ufunc.nin, ufunc.nout
        self.reduce = _on_device(ufunc.reduce, f"{ufunc.__name__}.reduce")
        self.outer = _on_device(ufunc.outer, f"{ufunc.__name__}.outer")
        for method, names in _UFUNC_METHODS.items():
            if ufunc.__name__ in names:
                setattr(self, method, _on_device(getattr(ufunc, method), method))
        if ufunc.__name__ in _SCATTER_OPS:  # at is CuPy's scatter_add / max / min
            self.at = _scatter(_SCATTER_OPS[ufunc.__name__], ufunc)

    def __call__(self, *args, **kwargs):
        return _on_device(self._ufunc, self.__name__)(*args, **kwargs)


class _StrictModule(types.ModuleType):
    """numpy's namespace, every function and ufunc on device arrays."""

    def __init__(self, name: str, source):
        super().__init__(name)
        self._source = source

    def __getattr__(self, name):
        value = getattr(self._source, name)
        if isinstance(value, type) or not callable(value):
            return value  # dtypes, scalar types, constants
        if name in _TRANSFERS:
            return _transfer(value)
        wrapped = _StrictUfunc(value) if isinstance(value, np.ufunc) else _on_device(value, name)
        setattr(self, name, wrapped)
        return wrapped


def _asnumpy(a, *args, **kwargs):
    if type(a) is not StrictArray:
        return np.asarray(a)
    _note_transfer("asnumpy()")
    return a._memory.copy()


class _Device:
    """cupy.cuda.Device: a context manager for device 0, the only one."""

    def __init__(self, index=0):
        if index != 0:
            raise RuntimeError(f"the strict stand-in has one device, 0; got {index}")
        self.id = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return False

    def synchronize(self):
        pass


# The dtypes CuPy's scatters (cupyx.scatter_add / max / min, and add.at, maximum.at, minimum.at
# through them) take where the index holds integer arrays: those of CUDA's atomics. A boolean
# mask, or slices and ints alone, scatter by other kernels with no such limit. CuPy 13's list:
# CuPy 14 takes int64 as well (minitrain carries it either way).
_SCATTER_DTYPES = {
    "add": ("int32", "float16", "float32", "float64", "uint32", "uint64"),
    "max": ("int32", "float32", "float64", "uint32", "uint64"),
    "min": ("int32", "float32", "float64", "uint32", "uint64"),
}
_SCATTER_OPS = {"add": "add", "maximum": "max", "minimum": "min"}


def _scatter(op: str, ufunc):
    """cupyx.scatter_{op}: ufunc.at on the device memory, refusing the dtypes CuPy refuses."""

    def scatter(target, index, values=None):
        key = _index(index)
        if target.dtype.name not in _SCATTER_DTYPES[op] and _by_integer_arrays(key):
            raise TypeError(
                f"scatter_{op} only supports {', '.join(_SCATTER_DTYPES[op])} as data type"
            )
        values = _unwrap(values, f"scatter_{op}")
        if op != "add" and target.dtype.kind == "f" and _by_integer_arrays(key):
            _fmaxf_scatter(op, target._memory, key, values)
        else:
            ufunc.at(target._memory, key, values)

    return scatter


def _fmaxf_scatter(op: str, memory, key, values) -> None:
    """CuPy's float atomicMax / atomicMin as they compute (cupy/_core/include/cupy/atomics.cuh,
    CuPy 14.2, seen on an H200): through fmaxf / fminf, in float32, so a float64 target's
    reached elements come back rounded to float32 (replaced or not), and a NaN loses to any
    number."""
    reached = np.zeros(memory.shape, dtype=bool)
    reached[key] = True
    single = memory.astype(np.float32)
    (np.fmax if op == "max" else np.fmin).at(single, key, np.asarray(values, np.float32))
    memory[reached] = single[reached]


def _by_integer_arrays(key) -> bool:
    """Whether CuPy scatters at `key` by its integer-array kernel: an index holding an integer
    array, or more than one array."""
    entries = key if type(key) is tuple else (key,)
    arrays = [np.asarray(k) for k in entries if type(k) in (np.ndarray, list)]
    return len(arrays) > 1 or any(a.dtype.kind != "b" for a in arrays)


def _special_ufunc(function, name: str, types: str):
    """A cupyx.scipy.special ufunc of one argument: `types` its loops as CuPy lists them
    ("e->d f->f d->d"); the first whose input x's dtype casts to safely computes, as CuPy picks
    one, and a 0-d x gives a 0-d array."""
    loops = [(np.dtype(loop[0]), np.dtype(loop[-1])) for loop in types.split()]
    scalar = np.frompyfunc(function, 1, 1)

    def call(x):
        memory = np.asarray(_unwrap(x, name))
        for source, result in loops:
            if np.can_cast(memory.dtype, source):
                return StrictArray(np.asarray(scalar(memory.astype(source)), dtype=result))
        raise TypeError(f"Wrong type ({memory.dtype}) of arguments for {name}")

    call.__name__ = name
    return call


class _StrictRandom(types.ModuleType):
    """cupy.random's module-level functions: a generator of the device's own, apart from numpy's
    global one (`seed(n)` seeds it alone; n from 0 to 2**64 - 1, else CuPy's errors), drawing
    device arrays; floats in float32 or float64 only (`dtype=`, float64 by default; any other is
    CuPy's TypeError), integers in any integer dtype."""

    def __init__(self):
        super().__init__("strict_cupy.random")
        self.seed()

    def seed(self, seed=None):
        if seed is not None:
            if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
                raise TypeError("Seed must be an integer.")
            if not 0 <= seed < 2**64:
                raise ValueError("Seed must be an integer between 0 and 2**64 - 1")
            seed = int(seed)
        self._state = np.random.RandomState(np.random.MT19937(seed))

    def _floats(self, values, dtype):
        dtype = np.dtype(dtype)
        if dtype.char not in "fd":
            raise TypeError("cupy.random only supports float32 and float64")
        return StrictArray(np.asarray(values, dtype=np.float64).astype(dtype))

    def random(self, size=None, dtype=float):
        return self._floats(self._state.random_sample(size), dtype)

    random_sample = random

    def rand(self, *size, dtype=float):
        return self.random(size, dtype)

    def standard_normal(self, size=None, dtype=float):
        return self._floats(self._state.standard_normal(size), dtype)

    def randn(self, *size, dtype=float):
        return self.standard_normal(size, dtype)

    def uniform(self, low=0.0, high=1.0, size=None, dtype=float):
        return self._floats(self._state.uniform(low, high, size), dtype)

    def normal(self, loc=0.0, scale=1.0, size=None, dtype=float):
        return self._floats(self._state.normal(loc, scale, size), dtype)

    def randint(self, low, high=None, size=None, dtype="l"):
        return StrictArray(np.asarray(self._state.randint(low, high, size, dtype=dtype)))

    def permutation(self, a):
        if type(a) is StrictArray:
            return StrictArray(self._state.permutation(a._memory))
        return StrictArray(self._state.permutation(a))


def build():
    """(cupy, cupyx): the stand-in's two modules."""
    strict = _StrictModule("strict_cupy", np)
    strict.ndarray = StrictArray
    strict.asnumpy = _asnumpy
    strict.get_array_module = lambda *arrays: strict
    strict.random = _StrictRandom()
    strict.linalg = _StrictModule("strict_cupy.linalg", np.linalg)
    # cupy.lib.stride_tricks has as_strided(x, shape, strides) (strides in bytes, as numpy's)
    stride_tricks = types.SimpleNamespace(
        as_strided=_on_device(np.lib.stride_tricks.as_strided, "as_strided")
    )
    strict.lib = types.SimpleNamespace(stride_tricks=stride_tricks)
    runtime = types.SimpleNamespace(getDeviceCount=lambda: 1)
    stream = types.SimpleNamespace(null=types.SimpleNamespace(synchronize=lambda: None))
    strict.cuda = types.SimpleNamespace(Device=_Device, runtime=runtime, Stream=stream)
    # CuPy's loops (its main branch): erf and erfc compute float16 in float64 (older CuPy, in
    # float32); gammaln has none for float16, which casts to float32
    special = types.SimpleNamespace(
        erf=_special_ufunc(math.erf, "erf", "e->d f->f d->d"),
        erfc=_special_ufunc(math.erfc, "erfc", "e->d f->f d->d"),
        gammaln=_special_ufunc(math.lgamma, "gammaln", "f->f d->d"),
    )
    strictx = types.SimpleNamespace(
        scatter_add=_scatter("add", np.add),
        scatter_max=_scatter("max", np.maximum),
        scatter_min=_scatter("min", np.minimum),
        scipy=types.SimpleNamespace(special=special),
    )
    return strict, strictx


def install(monkeypatch):
    """Make the stand-in minitrain's CUDA array module for one test; returns it."""
    from minitrain import backend

    strict, strictx = build()
    monkeypatch.setattr(backend, "cupy", strict)
    monkeypatch.setattr(backend, "cupyx", strictx, raising=False)
    # the checks kept for the next read of device values (backend.defer_check) end with the test
    monkeypatch.setattr(backend, "_deferred_checks", {})
    return strict

"""Devices and their array modules (numpy on the CPU, CuPy on CUDA), the random generator, and the
switch for numba kernels."""

from __future__ import annotations

import contextlib
import functools
import importlib
import math
import numbers
import os
import sys
import threading

import numpy as np

from .autograd.grad_mode import recording
from .errors import ArgumentError, DeviceError, DTypeError
from .runtime import background_compile, float_warnings, numba_pool

float_warnings.quiet_minitrain_modules()  # numpy's inf and nan warnings: PyTorch has none

cupy = None  # the cupy module once a CUDA device has been asked for, else None
cupyx = None  # CuPy's extras (scatter_add, scipy.special), imported with it


def _import_cupy():
    """The cupy module, imported on first use; a DeviceError saying what to install where CuPy
    is missing or sees no GPU (no driver, no device)."""
    global cupy, cupyx
    if cupy is None:
        try:
            module = importlib.import_module("cupy")
            extras = importlib.import_module("cupyx")
            importlib.import_module("cupyx.scipy.special")
        except ImportError as exc:
            raise DeviceError(
                "device 'cuda' needs CuPy, which is not installed: "
                "pip install 'minitrain[cuda]' (or a cupy-cudaXXx wheel matching your CUDA)"
            ) from exc
        try:
            count = module.cuda.runtime.getDeviceCount()
        except Exception as exc:  # noqa: BLE001 (CuPy raises its own CUDA errors without a driver)
            raise DeviceError(
                f"device 'cuda': CuPy is installed but cannot reach a GPU ({exc}); it needs an "
                f"NVIDIA driver (nvidia-smi shows it) and the CuPy wheel matching its CUDA "
                f"version (pip install 'minitrain[cuda]' installs cupy-cuda12x)"
            ) from exc
        if count == 0:
            raise DeviceError(
                "device 'cuda': CuPy is installed but finds no GPU; run on 'cpu' instead"
            )
        cupy, cupyx = module, extras
        if _device_seed is not None:
            seed_cuda(_device_seed)
    return cupy


def cuda_device_count() -> int:
    """How many GPUs CuPy sees: 0 where CuPy is missing or sees none (never an error)."""
    try:
        return int(_import_cupy().cuda.runtime.getDeviceCount())
    except DeviceError:
        return 0


def device_context(target: Device):
    """A context within which CuPy puts new arrays on `target` (a no-op one for the CPU); a
    DeviceError where `target` is a GPU that is missing (no CuPy, no GPU, an index too high)."""
    if target.type == "cpu":
        return contextlib.nullcontext()
    count = _import_cupy().cuda.runtime.getDeviceCount()
    if target.index >= count:
        raise DeviceError(
            f"device '{target}' does not exist: CuPy sees {count} GPU"
            f"{'' if count == 1 else 's'} (cuda:0 to cuda:{count - 1})"
        )
    return cupy.cuda.Device(target.index)


class Device:
    """A place arrays live: `Device('cpu')` or `Device('cuda', index)`."""

    __slots__ = ("type", "index")

    def __init__(self, type: str, index: int | None = None):
        self.type = type
        self.index = index

    @property
    def xp(self):
        """The array module for this device: numpy or cupy."""
        return np if self.type == "cpu" else _import_cupy()

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = device(other)
            except DeviceError:  # `in` and `==` ask anything; only device() refuses non-devices
                return False
        return isinstance(other, Device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        index = "" if self.index is None else f", index={self.index}"
        return f"device(type='{self.type}'{index})"


CPU = Device("cpu")


def device(spec: str | Device = "cpu") -> Device:
    """Parse 'cpu', 'cuda' or 'cuda:N' into a Device."""
    if isinstance(spec, Device):
        return spec
    if not isinstance(spec, str):
        raise DeviceError(f"device: expected 'cpu', 'cuda' or 'cuda:N', got {spec!r}")
    kind, colon, index = spec.partition(":")
    if kind == "cpu" and not colon:
        return CPU
    if kind == "cuda" and (index.isascii() and index.isdigit() or not colon):
        return Device("cuda", int(index) if index else 0)
    raise DeviceError(f"device: expected 'cpu', 'cuda' or 'cuda:N', got {spec!r}")


def device_of(array) -> Device:
    """The device an array lives on."""
    if isinstance(array, np.ndarray) or np.isscalar(array):
        return CPU
    if cupy is not None and isinstance(array, cupy.ndarray):
        return Device("cuda", array.device.id)
    raise DeviceError(f"device_of: not an array minitrain knows: {type(array).__name__}")


def check_same_device(caller: str, arrays) -> None:
    """A DeviceError naming `caller` and the devices where `arrays` (numbers skipped) are on more
    than one: CuPy's own error, a TypeError about numpy arrays, would name neither."""
    devices = {str(device_of(a)) for a in arrays if is_array(a)}
    if len(devices) > 1:
        raise DeviceError(f"{caller}: inputs are on different devices: {sorted(devices)}")


# Array types besides numpy's and CuPy's that kernels written against xp take, with the function
# giving a value's module: minitrain's Tensor, whose module records each call as an op
# (ops/core/graph_math.py), so that one backward rule serves first derivatives on arrays and
# higher ones on Tensors. Set once, at import, by the layer that defines the type.
_array_types: tuple[type, ...] = ()
_module_of_type = None


def register_array_type(kind: type, module_of) -> None:
    """Make `array_module` give `module_of(value)` for values of `kind` (one such type)."""
    global _array_types, _module_of_type
    _array_types, _module_of_type = (kind,), module_of


def array_module(*arrays):
    """The array module the arguments compute with: cupy if any is a CuPy array (the others must
    be too, or scalars), minitrain's graph math if any is a Tensor, else numpy."""
    for value in arrays:
        if type(value) is np.ndarray:
            continue
        if isinstance(value, _array_types):
            return _module_of_type(value)
        if cupy is not None and isinstance(value, cupy.ndarray):
            return cupy
    return np


def special(xp):
    """scipy.special's functions for arrays of `xp`, where numpy has none: cupyx.scipy.special
    for CuPy (None for numpy: minitrain's own, ops/special.py, serve there)."""
    return None if xp is np else cupyx.scipy.special


def is_array(value) -> bool:
    """Whether value is an array of a device minitrain supports."""
    return isinstance(value, np.ndarray) or (cupy is not None and isinstance(value, cupy.ndarray))


def to_device(array, target: Device):
    """Copy an array to a device (no copy when it is already there)."""
    if device_of(array) == target:
        return array
    if target.type == "cpu":
        raise_deferred_checks()
        return cupy.asnumpy(array)
    with device_context(target):
        return cupy.array(array, copy=True)  # from the host, or from another GPU


# A data-dependent check of GPU values (a class target out of range) that failed or not, kept
# until the host next reads the GPU: (error type, message) -> 0-d bool array, true where it
# failed (see defer_check).
_deferred_checks: dict = {}


def defer_check(failed, error_type: type, message: str) -> bool:
    """Whether the check whose result is `failed` (0-d, true where it failed) is deferred: where
    `failed` is a GPU array, reading it now would wait for every kernel queued before it, on
    every step. So it is kept (or-ed into the one kept with the same error, which bounds the
    memory) and read, with every other kept check, at the next read of a GPU value on the host
    (Tensor.item and tolist, a copy to the CPU: raise_deferred_checks), which raises
    `error_type(message)` for it, as PyTorch's device-side asserts surface at the next
    synchronisation. False, for the caller to check at once, on the CPU and under anomaly mode
    (which reads every op's output anyway)."""
    if type(failed) is np.ndarray or not is_array(failed) or recording.anomaly:
        return False
    key = (error_type, message)
    kept = _deferred_checks.get(key)
    _deferred_checks[key] = failed if kept is None else kept | failed
    return True


def raise_deferred_checks() -> None:
    """Read the kept checks (defer_check) on the host, one copy per GPU, forget them, and raise
    the error of the first that failed."""
    if not _deferred_checks:
        return
    kept = list(_deferred_checks.items())
    _deferred_checks.clear()
    by_device: dict = {}
    for key, failed in kept:
        by_device.setdefault(failed.device.id, []).append((key, failed))
    for index, checks in by_device.items():
        with cupy.cuda.Device(index):
            results = cupy.asnumpy(cupy.stack([failed for _, failed in checks]))
        for ((error_type, message), _), result in zip(checks, results, strict=True):
            if result:
                raise error_type(message)


def scatter_add(xp, target, index, values) -> None:
    """target[index] += values, adding repeated indices once per occurrence. On the CPU, a
    floating target indexed by integer arrays in every dim sums with np.bincount over the flat
    positions (in float64, then cast): about ten times np.add.at's speed. Indexed by integer
    arrays in its leading dims only (an embedding's gradient: rows of a table), the values for
    each row are summed first (np.add.reduceat over the rows sorted) and added once, equal to
    np.add.at's to rounding: 0.22 against 1.56 ms for 1024 rows of 128 into a table of 100 (the
    char LM's embeddings). np.add.at takes the rest."""
    if xp is not np:
        _cupy_scatter("add", target, index, values)
        return
    found = _flat_positions(target, index)
    if found is None:
        np.add.at(target, index, values)
    elif found[1] == target.ndim:
        _add_by_bincount(target, found[0], values)
    elif not _add_rows(target, *found, values):
        np.add.at(target, index, values)


def _add_by_bincount(target, flat, values) -> None:
    weights = np.broadcast_to(values, flat.shape).ravel()
    sums = np.bincount(flat.ravel(), weights=weights, minlength=target.size)
    target += sums.reshape(target.shape).astype(target.dtype, copy=False)


def _add_rows(target, rows, indexed_dims: int, values) -> bool:
    """scatter_add where the index picks rows of `target`: `rows` their flat numbers among the
    first `indexed_dims` dims (in the index's shape), each row the dims after. False, with
    nothing done, where `target` is not such a table of rows without a copy, or `values` is of
    another dtype."""
    values = np.asarray(values)
    table = target.reshape(-1, math.prod(target.shape[indexed_dims:]))
    if values.dtype != target.dtype or not np.may_share_memory(table, target):  # (a copy)
        return False
    picked = np.broadcast_to(values, rows.shape + target.shape[indexed_dims:])  # or numpy's error
    if not rows.size:
        return True
    picked = picked.reshape(rows.size, table.shape[1])
    rows = rows.reshape(-1)
    order = np.argsort(rows, kind="stable")
    rows = rows[order]
    starts = np.flatnonzero(np.concatenate(([True], rows[1:] != rows[:-1])))
    table[rows[starts]] += np.add.reduceat(picked[order], starts, axis=0)
    return True


def scatter_max(xp, target, index, values) -> None:
    """target[index] = maximum(target[index], values), each repeated index taking part (NaN
    wins): np.maximum.at, or cupy.maximum.at (see _cupy_scatter)."""
    if xp is np:
        np.maximum.at(target, index, values)
    else:
        _cupy_scatter("max", target, index, values)


def scatter_min(xp, target, index, values) -> None:
    """target[index] = minimum(target[index], values): see scatter_max."""
    if xp is np:
        np.minimum.at(target, index, values)
    else:
        _cupy_scatter("min", target, index, values)


# The dtypes CuPy's scatters take (those of CUDA's atomics) where the index holds integer arrays:
# CuPy 13's (CuPy 14 takes int64 too; carried either way).
_CUPY_SCATTER_DTYPES = {
    "add": frozenset({"float16", "float32", "float64", "int32", "uint32", "uint64"}),
    "max": frozenset({"float32", "float64", "int32", "uint32", "uint64"}),
    "min": frozenset({"float32", "float64", "int32", "uint32", "uint64"}),
}
_CUPY_UFUNCS = {"add": "add", "max": "maximum", "min": "minimum"}
_SIGN_BIT = np.uint64(1 << 63)


def _cupy_scatter(op: str, target, index, values) -> None:
    """cupy.add.at / maximum.at / minimum.at (CuPy's scatters; op "add", "max" or "min") for a
    target of any integer, bool or float dtype: one CuPy's atomics lack is carried by one they
    have, the result the same. int64 as uint64 (the same bits add alike; for max and min the
    sign bit flipped, which keeps the order), float16's add as float32, bool and the narrower
    ints as uint32 / int32 (sums wrap back on the cast, as numpy's do; bool's add is or, its max
    or, its min and). Floats' max and min go by integer keys (_cupy_scatter_float_extreme)."""
    scatter = getattr(cupy, _CUPY_UFUNCS[op]).at  # cupyx.scatter_*: deprecated in CuPy 14
    dtype = target.dtype
    if op != "add" and dtype.kind == "f":
        _cupy_scatter_float_extreme(op, target, index, values)
        return
    if dtype.name in _CUPY_SCATTER_DTYPES[op] or dtype.kind not in "biuf":
        scatter(target, index, values)
        return
    values = cupy.asarray(values, dtype=dtype)
    if dtype == np.int64 and op == "add":
        scatter(target.view(np.uint64), index, values.view(np.uint64))
    elif dtype == np.int64:
        carrier = target.view(np.uint64) ^ _SIGN_BIT
        scatter(carrier, index, values.view(np.uint64) ^ _SIGN_BIT)
        target[...] = (carrier ^ _SIGN_BIT).view(np.int64)
    else:
        wide = {"f": np.float32, "i": np.int32}.get(dtype.kind, np.uint32)
        carrier = target.astype(wide)
        scatter(carrier, index, values.astype(wide))
        target[...] = carrier.astype(dtype)


def _cupy_scatter_float_extreme(op: str, target, index, values) -> None:
    """scatter max or min into a floating target by integer keys in the floats' order. CuPy's
    own float atomicMax and atomicMin (14.2) go through fmaxf / fminf: a float64 is rounded to
    float32 (the target's reached elements too, whether replaced or not) and a NaN loses to any
    number, where numpy's maximum.at keeps float64 and lets NaN win. The keys are the floats'
    bits with the magnitude bits of negatives flipped, so that a larger float is a larger signed
    integer; every NaN is made the key that wins (the largest for max, the smallest for min).
    float16 goes as float32, exactly."""
    dtype = target.dtype
    work = target.astype(np.float32) if dtype == np.float16 else target
    key_dtype = np.dtype(np.int32 if work.dtype == np.float32 else np.int64)
    info = np.iinfo(key_dtype)
    nan_key = key_dtype.type(info.max if op == "max" else info.min)
    magnitude = key_dtype.type(info.max)  # every bit but the sign

    def keys(floats):
        bits = floats.view(key_dtype)
        ordered = cupy.where(bits < 0, bits ^ magnitude, bits)
        return cupy.where(cupy.isnan(floats), nan_key, ordered)

    carried = keys(work)
    values = cupy.asarray(values, dtype=work.dtype)  # view() takes any strides
    _cupy_scatter(op, carried, index, keys(values))
    floats = cupy.where(carried < 0, carried ^ magnitude, carried).view(work.dtype)
    target[...] = floats.astype(dtype, copy=False)


def _flat_positions(target, index):
    """Where in `target` an index of integer arrays in its first k dims reaches (negative ones
    counting from the end), as (flat numbers among those k dims, in the index's shape, k): with
    k = ndim, flat positions of elements; with fewer, of rows. None for any other index, or a
    target that is empty or not floating."""
    if target.dtype.kind != "f" or not target.size:
        return None
    entries = index if isinstance(index, tuple) else (index,)
    if not 0 < len(entries) <= target.ndim or not all(
        isinstance(e, np.ndarray) and e.dtype.kind in "iu" for e in entries
    ):
        return None
    for axis, (entry, size) in enumerate(zip(entries, target.shape[: len(entries)], strict=True)):
        # "wrap" below takes negative indices from the end, as numpy does, but would also wrap
        # the out-of-range ones np.add.at refuses: refuse them first, with numpy's message
        outside = (entry < -size) | (entry >= size)
        if outside.any():
            raise IndexError(
                f"index {entry[outside].flat[0]} is out of bounds for axis {axis} with size {size}"
            )
    try:
        entries = np.broadcast_arrays(*entries)
    except ValueError:  # arrays that do not broadcast: np.add.at's own IndexError
        return None
    lead = target.shape[: len(entries)]
    return np.ravel_multi_index(entries, lead, mode="wrap"), len(entries)


_generator = np.random.default_rng()
_device_seed = None  # manual_seed's last seed: given to CuPy's generators when CuPy is imported


def manual_seed(seed: int) -> None:
    """Seed the generators behind randn, rand, dropout and parameter initialisation: the CPU's
    and, as torch.manual_seed, every GPU's (cupy.random; now, or once CuPy is first used)."""
    global _generator, _device_seed
    _generator = seeded_generator(seed, "manual_seed")
    _device_seed = int(seed)
    if cupy is not None:
        seed_cuda(_device_seed)


def seed_cpu(seed: int) -> None:
    """Seed the CPU's generator alone: manual_seed for a process forked from one that uses CUDA
    (a DataLoader worker), where CUDA cannot be touched."""
    global _generator
    _generator = seeded_generator(seed, "manual_seed")


def seed_cuda(seed: int, index: int | None = None) -> None:
    """Seed CuPy's generator (cupy.random.seed) on GPU `index`, or on every GPU for None."""
    indices = range(cupy.cuda.runtime.getDeviceCount()) if index is None else (index,)
    for i in indices:
        with cupy.cuda.Device(i):
            cupy.random.seed(seed % 2**64)  # CuPy's seeds stop at 2**64 - 1, numpy's do not


def seeded_generator(seed, caller: str) -> np.random.Generator:
    """A numpy generator seeded with `seed`, a non-negative int (numpy's included)."""
    return np.random.default_rng(check_seed(seed, caller))


def check_seed(seed, caller: str) -> int:
    """`seed` as an int, when it is a non-negative int (numpy's included); else an error naming
    `caller`."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise DTypeError(f"{caller}: seed must be an int, got {seed!r}")
    if seed < 0:
        raise ArgumentError(f"{caller}: seed must be non-negative, got {seed}")
    return int(seed)


def generator() -> np.random.Generator:
    """The CPU's random generator (numpy). Arrays for a GPU are drawn there, by cupy.random
    within device_context(device), seeded by manual_seed as well."""
    note_draw("the random generator")
    return _generator


def note_draw(what: str) -> None:
    """A random draw is about to be made by `what`: a capture (minitrain.compile) running now
    cannot replay a draw made outside an op's forward (its values would be a constant)."""
    capture = recording.capture
    if capture is not None and not capture.in_op:
        capture.breaks(f"{what} drew random numbers outside an op (they would replay unchanged)")


def draw(where: Device, kind: str, shape: tuple, dtype, low=0.0, high=1.0, source=None):
    """Random floats of `dtype` drawn on device `where` by minitrain's generator for it: `kind`
    'uniform' (in [low, high)) or 'normal' (mean low, standard deviation high). On the CPU,
    numpy's generator draws in float64 and the values are cast (the stream manual_seed fixes);
    on a GPU, cupy.random draws in float32 or float64, the only dtypes it has (float64 for a
    float64 tensor, float32 for any other, cast). `source`, a numpy Generator (a
    minitrain.Generator's), draws in place of the global CPU generator."""
    note_draw("a random draw")
    dtype = np.dtype(dtype)
    if source is not None and where.type != "cpu":
        raise DeviceError(f"a minitrain.Generator draws on the CPU, not on '{where}'")
    if where.type == "cpu":
        source = generator() if source is None else source
        values = (
            source.uniform(low, high, shape)
            if kind == "uniform"
            else source.normal(low, high, shape)
        )
        return values.astype(dtype, copy=False)
    drawn = np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)
    with device_context(where):
        random = cupy.random
        if kind == "uniform":
            values = random.uniform(low, high, shape, dtype=drawn)
        else:
            values = random.normal(low, high, shape, dtype=drawn)
    return values.astype(dtype, copy=False)


_numba_enabled = os.environ.get("MINITRAIN_NUMBA", "1").strip().lower() not in ("0", "false", "no")


def numba_enabled() -> bool:
    """Whether CPU ops use their numba kernels (MINITRAIN_NUMBA=0 switches them off)."""
    return _numba_enabled


def set_numba(enabled: bool) -> bool:
    """Switch numba kernels on or off; returns the previous setting (tests compare both paths)."""
    global _numba_enabled
    previous, _numba_enabled = _numba_enabled, bool(enabled)
    return previous


# the dtypes minitrain's numba kernels are compiled for
NUMBA_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def numba_takes(*arrays) -> bool:
    """Whether minitrain's numba kernels take these arrays (None entries skipped): numba is on,
    and they are CPU numpy arrays of float32 or float64, all of one dtype, none of them empty.
    Elsewhere (float16, integers, mixed dtypes, CuPy, empty tensors) the generic xp kernels run.

    The one question every numba variant asks, once per call, of the arrays its kernels would
    take: an op with `numba_forward` through `Op.numba_applies` (by default this, of its inputs),
    a public kernel (conv_grad, the pooling kernels, lstm_cell_grad, attention_grad, ...) at its
    own top (minitrain/ops/core/op.py, `Op`'s docstring)."""
    if background_compile.holding_blas:  # BLAS back to its threads once kernels are compiled
        background_compile.release_blas_when_done()
    if not _numba_enabled or _numba_paused:
        return False
    first = None
    for array in arrays:
        if array is None:
            continue
        if type(array) is not np.ndarray or array.size == 0:
            return False
        if first is None:
            if array.dtype not in NUMBA_DTYPES:
                return False
            first = array
        elif array.dtype != first.dtype:
            return False
    return first is not None


# Callers running their generic kernels again while a numba kernel compiles in the background
# (runtime/background_compile.py): while any is, numba_takes says no, in every thread (as
# use_numba(False) would: each op still runs one path or the other whole)
_numba_paused = 0
_pause_lock = threading.Lock()


def _after_fork_in_child() -> None:
    global _numba_paused, _pause_lock
    _numba_paused, _pause_lock = 0, threading.Lock()  # the parent's pausing threads are not here


os.register_at_fork(after_in_child=_after_fork_in_child)


@contextlib.contextmanager
def numba_paused():
    """Within the block, numba_takes refuses every array (a forward run again with its generic
    kernels, a kernel it called being compiled in the background)."""
    global _numba_paused
    with _pause_lock:
        _numba_paused += 1
    try:
        yield
    finally:
        with _pause_lock:
            _numba_paused -= 1


@contextlib.contextmanager
def use_numba(enabled: bool):
    """Within the block, CPU ops run their numba kernels (True) or the generic ones (False)."""
    previous = set_numba(enabled)
    try:
        yield
    finally:
        set_numba(previous)


def jit(**options):
    """Decorator: `numba.njit(cache=True, **options)` applied on the first call, so importing
    minitrain neither imports numba nor compiles anything. The plain Python function stays
    reachable as `.py_func`. Before a parallel build's first call, numba's thread pool is
    started as minitrain/runtime/numba_pool.py says (its OpenMP threads spin briefly when idle,
    so that they do not hold the cores through the GEMMs that follow). A first call that
    would compile may instead raise KernelNotReady, to a caller that runs generic kernels
    meanwhile (runtime/background_compile.py)."""

    def decorate(fn):
        compiled = None
        lock = threading.Lock()  # threads calling it first at once make one dispatcher
        address = background_compile.kernel_address(sys._getframe(1))

        def dispatcher():
            nonlocal compiled
            if compiled is None:
                with lock:
                    if compiled is None:
                        compiled = background_compile.new_dispatcher(fn, options, address)
            return compiled

        @functools.wraps(fn)
        def call(*args):
            if compiled is None:
                if options.get("parallel"):
                    numba_pool.start_numba_threads()
                dispatcher()
            return compiled(*args)

        call.py_func = fn
        call.dispatcher = dispatcher
        if address is not None:
            background_compile.register_kernel(address, call)
        return call

    return decorate

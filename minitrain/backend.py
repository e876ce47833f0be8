"""Devices and their array modules (numpy on the CPU, CuPy on CUDA), the random generator, and the
switch for numba kernels."""

from __future__ import annotations

import contextlib
import functools
import importlib
import numbers
import os
import threading

import numpy as np

from .errors import ArgumentError, DeviceError, DTypeError

cupy = None  # the cupy module once a CUDA device has been asked for, else None


def _import_cupy():
    global cupy
    if cupy is None:
        try:
            cupy = importlib.import_module("cupy")
        except ImportError as exc:
            raise DeviceError(
                "device 'cuda' needs CuPy, which is not installed: "
                "pip install 'minitrain[cuda]' (or a cupy-cudaXXx wheel matching your CUDA)"
            ) from exc
    return cupy


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
        other = device(other) if isinstance(other, str) else other
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
    kind, _, index = spec.partition(":")
    if kind == "cpu" and not index:
        return CPU
    if kind == "cuda" and (not index or index.isdigit()):
        return Device("cuda", int(index) if index else 0)
    raise DeviceError(f"device: expected 'cpu', 'cuda' or 'cuda:N', got {spec!r}")


def device_of(array) -> Device:
    """The device an array lives on."""
    if isinstance(array, np.ndarray) or np.isscalar(array):
        return CPU
    if cupy is not None and isinstance(array, cupy.ndarray):
        return Device("cuda", array.device.id)
    raise DeviceError(f"device_of: not an array minitrain knows: {type(array).__name__}")


def array_module(*arrays):
    """numpy, or cupy if any argument is a CuPy array (the others must be too, or scalars)."""
    if cupy is None:
        return np
    if any(isinstance(a, cupy.ndarray) for a in arrays):
        return cupy
    return np


def is_array(value) -> bool:
    """Whether value is an array of a device minitrain supports."""
    return isinstance(value, np.ndarray) or (cupy is not None and isinstance(value, cupy.ndarray))


def to_device(array, target: Device):
    """Copy an array to a device (no copy when it is already there)."""
    if device_of(array) == target:
        return array
    if target.type == "cpu":
        return cupy.asnumpy(array)
    cp = _import_cupy()
    with cp.cuda.Device(target.index):
        return cp.asarray(array)


def scatter_add(xp, target, index, values) -> None:
    """target[index] += values, adding repeated indices once per occurrence. On the CPU, a
    floating target indexed by integer arrays in every dim sums with np.bincount over the flat
    positions (in float64, then cast): about ten times np.add.at's speed, which takes the rest."""
    if xp is not np:
        importlib.import_module("cupyx").scatter_add(target, index, values)
        return
    flat = _flat_positions(target, index)
    if flat is None:
        np.add.at(target, index, values)
        return
    weights = np.broadcast_to(values, flat.shape).ravel()
    sums = np.bincount(flat.ravel(), weights=weights, minlength=target.size)
    target += sums.reshape(target.shape).astype(target.dtype, copy=False)


def _flat_positions(target, index):
    """The flat positions in `target` that an index of integer arrays, one per dim, reaches
    (negative ones counting from the end); None for any other index, or a target bincount
    cannot sum (not floating)."""
    if target.dtype.kind != "f" or not target.size:
        return None
    entries = index if isinstance(index, tuple) else (index,)
    if len(entries) != target.ndim or not all(
        isinstance(e, np.ndarray) and e.dtype.kind in "iu" for e in entries
    ):
        return None
    return np.ravel_multi_index(np.broadcast_arrays(*entries), target.shape, mode="wrap")


_generator = np.random.default_rng()


def manual_seed(seed: int) -> None:
    """Seed the generator behind randn, rand, dropout and parameter initialisation."""
    global _generator
    _generator = seeded_generator(seed, "manual_seed")


def seeded_generator(seed, caller: str) -> np.random.Generator:
    """A numpy generator seeded with `seed`, a non-negative int (numpy's included)."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise DTypeError(f"{caller}: seed must be an int, got {seed!r}")
    if seed < 0:
        raise ArgumentError(f"{caller}: seed must be non-negative, got {seed}")
    return np.random.default_rng(int(seed))


def generator() -> np.random.Generator:
    """The global random generator (numpy; arrays for CUDA are drawn here and copied)."""
    return _generator


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
    and they are CPU numpy arrays of float32 or float64, all of one dtype, the first not empty.
    Elsewhere (float16, integers, mixed dtypes, CuPy, empty tensors) the generic xp kernels run."""
    if not _numba_enabled:
        return False
    first = None
    for array in arrays:
        if array is None:
            continue
        if type(array) is not np.ndarray:
            return False
        if first is None:
            if array.dtype not in NUMBA_DTYPES or array.size == 0:
                return False
            first = array
        elif array.dtype != first.dtype:
            return False
    return first is not None


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
    reachable as `.py_func`."""

    def decorate(fn):
        compiled = None
        lock = threading.Lock()  # threads calling it first at once make one dispatcher

        @functools.wraps(fn)
        def call(*args):
            nonlocal compiled
            if compiled is None:
                with lock:
                    if compiled is None:
                        compiled = importlib.import_module("numba").njit(cache=True, **options)(fn)
            return compiled(*args)

        call.py_func = fn
        return call

    return decorate

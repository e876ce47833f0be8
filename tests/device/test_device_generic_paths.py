"""The generic paths ops take on a CUDA device (the strict stand-in for CuPy, and a real GPU where
one is at hand) where CuPy lacks what numpy has: scans without ufunc.accumulate, scatters in the
dtypes CuPy's atomics lack, the product scatter, special functions computed in another dtype,
and the index of a 0-d selection; each against the CPU, beyond the registry samples."""

from __future__ import annotations

import numpy as np
import pytest

import minitrain as mt
from minitrain import backend, ops
from minitrain.errors import DeviceError

CPU = mt.device("cpu")


def _same(on_device, on_cpu, rtol=0.0, atol=0.0):
    """A device Tensor holds what the CPU's does (exactly, by default), and lives on the device."""
    assert type(on_device.array) is backend.cupy.ndarray
    assert on_device.dtype == on_cpu.dtype and on_device.shape == on_cpu.shape
    np.testing.assert_allclose(on_device.cpu().array, on_cpu.array, rtol=rtol, atol=atol)


def _rows_with_ties_and_nans(rng, shape):
    """Values with many ties (few distinct ones) and NaNs in some rows, some from the start."""
    values = rng.integers(-3, 4, size=shape).astype(np.float64)
    values[1, 5] = values[2, 0] = values[2, 30] = np.nan
    return values


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("name", ["cummax", "cummin"])
@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.bool_])
def test_running_extremes_scan_as_on_the_cpu(cuda_device, name, dim, dtype):
    # 37 along the rows: not a power of two, so the scan's last step is a partial one
    values = _rows_with_ties_and_nans(np.random.default_rng(0), (4, 37))
    values = values if dtype is np.float64 else np.nan_to_num(values).astype(dtype)
    op = getattr(ops, name)
    want = op(mt.tensor(values), dim)
    got = op(mt.tensor(values, device="cuda"), dim)
    _same(got.values, want.values)
    _same(got.indices, want.indices)


def test_logcumsumexp_scans_long_rows_as_on_the_cpu(cuda_device):
    rng = np.random.default_rng(1)
    values = rng.standard_normal((3, 101)) * 30.0  # spread: terms that underflow beside others
    values[0, :7] = -np.inf
    upstream = rng.standard_normal(values.shape)
    x = mt.tensor(values, requires_grad=True)
    x_d = mt.tensor(values, requires_grad=True, device="cuda")
    out, out_d = ops.logcumsumexp(x, 1), ops.logcumsumexp(x_d, 1)
    _same(out_d, out, rtol=1e-13)
    out.backward(mt.tensor(upstream))
    out_d.backward(mt.tensor(upstream, device="cuda"))
    _same(x_d.grad, x.grad, rtol=1e-12, atol=1e-14)  # parts that cancel: summed in another order


def _scatter_on_device(op: str, ufunc, target, index, values):
    """(minitrain's scatter `op` of values into target at index, on the device, brought back;
    numpy's ufunc.at of the same)."""
    want = target.copy()
    ufunc.at(want, index, values)
    xp = backend.cupy
    got = xp.asarray(target)
    scatter = getattr(backend, f"scatter_{op}")
    scatter(xp, got, tuple(xp.asarray(i) for i in index), xp.asarray(values))
    return backend.to_device(got, CPU), want


SCATTER_DTYPES = [np.int64, np.int32, np.int16, np.int8, np.uint8, np.bool_, np.float16]


@pytest.mark.parametrize("dtype", SCATTER_DTYPES)
@pytest.mark.parametrize("op, ufunc", [("add", np.add), ("max", np.maximum), ("min", np.minimum)])
def test_scatter_in_dtypes_cupy_atomics_lack(cuda_device, dtype, op, ufunc):
    rng = np.random.default_rng(2)
    target = rng.integers(-100, 100, size=(5, 3)).astype(dtype)
    values = rng.integers(-100, 100, size=(8, 3)).astype(dtype)
    if dtype is np.int64:  # the ends of the range, where the sign-bit carrier must keep order
        info = np.iinfo(np.int64)
        values[0, 0], values[1, 1], target[4, 2] = info.min, info.max, info.min + 1
    index = (np.array([0, 2, 2, 4, 0, 0, 1, 4])[:, None], np.arange(3)[None, :])  # repeats
    got, want = _scatter_on_device(op, ufunc, target, index, values)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op", ["add", "max"])
def test_cupy_atomics_refuse_int16_where_minitrain_carries_it(cuda_device, op):
    """What the carriers are for: CuPy's own scatter refuses an int16 target (CuPy 13 an int64
    one too; the stand-in is as strict as CuPy 13)."""
    xp = backend.cupy
    target = xp.zeros(3, dtype=np.int16)
    with pytest.raises(TypeError, match="only supports"):
        getattr(xp, {"add": "add", "max": "maximum"}[op]).at(
            target, xp.asarray([0, 0]), xp.asarray([1, 2], dtype=np.int16)
        )


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
@pytest.mark.parametrize("op, ufunc", [("max", np.maximum), ("min", np.minimum)])
def test_scatter_max_min_keep_the_dtype_and_let_nan_win(cuda_device, dtype, op, ufunc):
    """numpy's maximum.at to the bit, where CuPy's float atomics (fmaxf / fminf) round a float64
    to float32, the target's reached elements included, and let NaN lose to any number."""
    rng = np.random.default_rng(4)
    target = rng.standard_normal((6, 3)).astype(dtype)  # not float32-representable in float64
    values = rng.standard_normal((9, 3)).astype(dtype)
    values[2, 1] = np.nan  # reaches row 4 with others after it
    target[5, 0] = np.nan  # reached by numbers only
    values[0, 2], values[3, 2] = np.inf, -np.inf
    values[6, 0], target[1, 1] = -0.0, -np.inf
    index = (np.array([0, 4, 4, 5, 0, 1, 1, 4, 5])[:, None], np.arange(3)[None, :])
    got, want = _scatter_on_device(op, ufunc, target, index, values)
    assert got.dtype == dtype
    assert np.isnan(got[4, 1]) and np.isnan(got[5, 0])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float64, np.int64])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_prod_multiplies_each_repeat(cuda_device, dtype, include_self):
    rng = np.random.default_rng(3)
    x = rng.integers(-3, 4, size=(4, 5)).astype(dtype)
    src = rng.integers(-3, 4, size=(9, 5)).astype(dtype)
    index = np.zeros((9, 5), dtype=np.int64)  # all nine rows into row 0, then a few elsewhere
    index[6:, ::2] = 3
    want = ops.scatter_reduce(mt.tensor(x), 0, index, mt.tensor(src), "prod",
                              include_self=include_self)  # fmt: skip
    got = ops.scatter_reduce(
        mt.tensor(x, device="cuda"),
        0,
        mt.tensor(index, device="cuda"),
        mt.tensor(src, device="cuda"),
        "prod",
        include_self=include_self,
    )
    _same(got, want)


@pytest.mark.parametrize("reduce", ["amax", "amin", "sum", "mean"])
def test_scatter_reduce_of_int64_on_the_device(cuda_device, reduce):
    rng = np.random.default_rng(4)
    x = rng.integers(-50, 50, size=(3, 4))
    src = rng.integers(-50, 50, size=(6, 4))
    index = rng.integers(0, 3, size=(6, 4))
    want = ops.scatter_reduce(mt.tensor(x), 0, index, mt.tensor(src), reduce)
    got = ops.scatter_reduce(
        mt.tensor(x, device="cuda"),
        0,
        mt.tensor(index, device="cuda"),
        mt.tensor(src, device="cuda"),
        reduce,
    )
    _same(got, want)


@pytest.mark.parametrize(
    "function",
    [ops.erf, ops.erfc, ops.gelu, lambda x: ops.gelu(x, approximate="tanh")],
    ids=["erf", "erfc", "gelu", "gelu_tanh"],
)
def test_special_functions_keep_float16_on_the_device(cuda_device, function):
    """cupyx.scipy.special computes float16 in float32 or float64 (by CuPy's version); the
    result, and its gradient, stay float16 as on the CPU."""
    values = np.linspace(-4, 4, 17).astype(np.float16)
    x = mt.tensor(values, requires_grad=True)
    x_d = mt.tensor(values, requires_grad=True, device="cuda")
    out, out_d = function(x), function(x_d)
    _same(out_d, out, rtol=1e-3, atol=1e-3)
    out.sum().backward()
    out_d.sum().backward()
    _same(x_d.grad, x.grad, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize(
    "select",
    [
        lambda x: ops.sort(x),
        lambda x: ops.topk(x, 1),
        lambda x: ops.kthvalue(x, 1),
        lambda x: ops.median(x, 0),
        lambda x: ops.cummax(x, 0),
        lambda x: ops.cummin(x, 0),
    ],
    ids=["sort", "topk", "kthvalue", "median", "cummax", "cummin"],
)
def test_selection_from_a_0d_tensor_indexes_on_its_device(cuda_device, select):
    x = mt.tensor(2.5, requires_grad=True, device="cuda")
    values, indices = select(x)
    assert values.device == cuda_device and indices.device == cuda_device
    assert indices.dtype == np.int64 and indices.item() == 0
    values.backward()
    assert x.grad.device == cuda_device and x.grad.item() == 1.0
    assert ops.argsort(x).device == cuda_device


def test_quantile_refuses_q_on_another_device(cuda_device):
    x = mt.tensor(np.arange(5.0), device="cuda")
    with pytest.raises(DeviceError, match=r"quantile: q is on cpu but input is on cuda:0"):
        ops.quantile(x, mt.tensor([0.5], dtype=np.float64))

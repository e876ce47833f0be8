"""Winograd convolution (ops/convolution/winograd.py): F(2x2, 3x3) and F(4x4, 3x3), forward and
both gradients, against the im2col path (MINITRAIN_WINOGRAD=0), finite differences in float64
and PyTorch; the float32 error bound of docs/kernels.md section 4.3; which convs the rule
gives it; the conv registry's samples that qualify, run through it."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys

import numpy as np
import pytest
from op_samples import SAMPLES, minitrain_inputs, rng_for

import minitrain as mt
from minitrain import ops
from minitrain.autograd.gradcheck import gradcheck

standard = importlib.import_module("minitrain.ops.convolution.standard")
winograd = importlib.import_module("minitrain.ops.convolution.winograd")
window_of = importlib.import_module("minitrain.ops.convolution.window").conv_window

STEPS = (2, 4)


@pytest.fixture
def forced(monkeypatch):
    """forced(step): every conv Winograd applies to takes F(step x step, 3 x 3) (0: im2col),
    whatever the measured rule says; returns the list each Winograd forward appends to."""

    def force(step: int) -> list:
        calls = []
        original = winograd.winograd_forward

        def spy(*args):
            calls.append(args[-1])
            return original(*args)

        monkeypatch.setattr(winograd, "_measured_choice", lambda *args: step)
        monkeypatch.setattr(standard, "winograd_forward", spy)
        return calls

    return force


def _im2col(monkeypatch, fn):
    """fn() with Winograd switched off (the im2col path)."""
    with monkeypatch.context() as patch:
        patch.setenv("MINITRAIN_WINOGRAD", "0")
        return fn()


def _window(spatial, pads):
    return window_of(spatial, (3, 3), (1, 1), pads, (1, 1))


def _tolerance(dtype, step: int, reference) -> float:
    """Absolute tolerance against the im2col path: float32's rounding (F(4x4) loses a little
    more, see test_float32_error_bound), float64's far below."""
    scale = max(1.0, float(np.abs(reference).max()))
    if dtype == np.float64:
        return 1e-11 * scale
    return (3e-5 if step == 4 else 3e-6) * scale


@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "x_shape, filters, pads",
    [
        ((2, 3, 8, 8), 4, (1, 1, 1, 1)),
        ((1, 1, 3, 3), 1, (0, 0, 0, 0)),  # one output
        ((2, 5, 9, 7), 3, (1, 1, 1, 1)),  # odd sizes: last tiles padded
        ((3, 2, 6, 11), 6, (0, 0, 0, 0)),
        ((1, 4, 5, 5), 2, (2, 2, 2, 2)),
        ((2, 3, 7, 6), 5, (0, 2, 1, 0)),  # asymmetric
        ((1, 2, 4, 10), 3, (3, 0, 1, 2)),  # wider than the kernel's reach
        ((4, 17, 13, 10), 9, (1, 1, 1, 1)),
    ],
)
def test_matches_im2col(monkeypatch, step, dtype, x_shape, filters, pads):
    rng = np.random.default_rng(0)
    X = rng.standard_normal(x_shape).astype(dtype)
    W = rng.standard_normal((filters, x_shape[1], 3, 3)).astype(dtype)
    B = rng.standard_normal(filters).astype(dtype)
    window = _window(x_shape[2:], pads)
    dY = rng.standard_normal((x_shape[0], filters) + window.out).astype(dtype)
    need = (True, True, True)
    Y = _im2col(monkeypatch, lambda: standard.conv_forward(X, W, B, window, 1))
    expected = _im2col(
        monkeypatch, lambda: standard.conv_grad_unchecked(dY, X, W, x_shape, window, 1, need)
    )
    got = winograd.winograd_forward(X, W, B, window, step)
    np.testing.assert_allclose(got, Y, rtol=0, atol=_tolerance(dtype, step, Y))
    assert got.dtype == dtype
    dX, dW = winograd.winograd_grad(dY, X, W, x_shape, window, step, True, True)
    for ours, theirs in zip((dX, dW), expected[:2], strict=True):
        assert ours.dtype == dtype and ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=_tolerance(dtype, step, theirs))


@pytest.mark.parametrize("step", STEPS)
def test_need_skips_work(step):
    rng = np.random.default_rng(1)
    X, W = rng.standard_normal((2, 3, 6, 6)), rng.standard_normal((4, 3, 3, 3))
    window = _window((6, 6), (1, 1, 1, 1))
    dY = rng.standard_normal((2, 4, 6, 6))
    dX, dW = winograd.winograd_grad(dY, X, W, X.shape, window, step, True, True)
    only_x = winograd.winograd_grad(dY, None, W, X.shape, window, step, True, False)
    only_w = winograd.winograd_grad(dY, X, W, X.shape, window, step, False, True)
    assert only_x[1] is None and only_w[0] is None
    np.testing.assert_array_equal(only_x[0], dX)
    np.testing.assert_array_equal(only_w[1], dW)


@pytest.mark.parametrize("step", STEPS)
def test_batch_in_chunks_on_threads(monkeypatch, step):
    """Chunks of one image each (on side_by_side's threads where BLAS has several): the same
    result, dW summed over the chunks and threads."""
    rng = np.random.default_rng(2)
    X, W = rng.standard_normal((5, 3, 8, 8)), rng.standard_normal((4, 3, 3, 3))
    window = _window((8, 8), (1, 1, 1, 1))
    dY = rng.standard_normal((5, 4, 8, 8))
    whole = winograd.winograd_grad(dY, X, W, X.shape, window, step, True, True)
    Y = winograd.winograd_forward(X, W, None, window, step)
    monkeypatch.setattr(winograd, "_CHUNK_BYTES", 1)
    monkeypatch.setattr(winograd, "_CHUNK_TILES", 1)
    monkeypatch.setattr(winograd, "_SIDE_BY_SIDE_BYTES", 1)
    chunked = winograd.winograd_grad(dY, X, W, X.shape, window, step, True, True)
    np.testing.assert_allclose(winograd.winograd_forward(X, W, None, window, step), Y, atol=1e-13)
    for ours, theirs in zip(chunked, whole, strict=True):
        np.testing.assert_allclose(ours, theirs, atol=1e-12)


def test_float32_error_bound():
    """docs/kernels.md 4.3's bound: against a float64 conv of randn inputs with kaiming weights
    (C up to 256), F(2x2)'s float32 error is within 4x im2col's and F(4x4)'s within 64x (each
    the largest error over the largest magnitude; measured: F(2x2) up to 1.7x, F(4x4) up to 25x,
    about 1e-5)."""
    rng = np.random.default_rng(3)
    for channels in (16, 256):
        X = rng.standard_normal((2, channels, 12, 12))
        W = rng.standard_normal((16, channels, 3, 3)) * np.sqrt(2 / (9 * channels))
        window = _window((12, 12), (1, 1, 1, 1))
        dY = rng.standard_normal((2, 16, 12, 12))
        x32, w32, dy32 = (a.astype(np.float32) for a in (X, W, dY))
        exact = [
            winograd.winograd_forward(X, W, None, window, 2),
            *winograd.winograd_grad(dY, X, W, X.shape, window, 2, True, True),
        ]
        need = (True, True, False)
        old = [
            standard.conv_forward(x32, w32, None, window, 1),
            *standard.conv_grad_unchecked(dy32, x32, w32, X.shape, window, 1, need)[:2],
        ]
        for step, factor in ((2, 4), (4, 64)):
            new = [
                winograd.winograd_forward(x32, w32, None, window, step),
                *winograd.winograd_grad(dy32, x32, w32, X.shape, window, step, True, True),
            ]
            for ours, im2col, truth in zip(new, old, exact, strict=True):
                scale = np.abs(truth).max()
                im2col_error = max(np.abs(im2col - truth).max() / scale, 2**-24)
                assert np.abs(ours - truth).max() / scale <= factor * im2col_error


@pytest.mark.parametrize("step", STEPS)
def test_gradcheck_float64(forced, step):
    calls = forced(step)
    rng = np.random.default_rng(4)
    x = mt.tensor(rng.standard_normal((2, 3, 5, 6)), requires_grad=True)
    w = mt.tensor(rng.standard_normal((4, 3, 3, 3)), requires_grad=True)
    b = mt.tensor(rng.standard_normal(4), requires_grad=True)
    assert gradcheck(lambda x, w, b: ops.conv(x, w, b, padding=1), (x, w, b), mode="full")
    assert gradcheck(
        lambda x, w: ops.conv(x, w, None, padding=((0, 2), (1, 0))), (x, w), mode="full"
    )
    assert calls and set(calls) == {step}


@pytest.mark.parametrize("step", STEPS)
def test_against_torch_with_second_order(forced, step):
    torch = pytest.importorskip("torch")
    calls = forced(step)
    rng = np.random.default_rng(5)
    x_np, w_np = rng.standard_normal((3, 5, 7, 9)), rng.standard_normal((6, 5, 3, 3))
    b_np, v_np = rng.standard_normal(6), rng.standard_normal((3, 6, 7, 9))
    x, w, b = (mt.tensor(a, requires_grad=True) for a in (x_np, w_np, b_np))
    y = ops.conv(x, w, b, padding=1)
    (gx, gw) = mt.autograd.grad((y * mt.tensor(v_np)).sum(), (x, w), create_graph=True)
    ((gx * gx).sum() + (gw * gw).sum()).backward()
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x_np, w_np, b_np))
    ty = torch.nn.functional.conv2d(tx, tw, tb, padding=1)
    tgx, tgw = torch.autograd.grad((ty * torch.tensor(v_np)).sum(), (tx, tw), create_graph=True)
    ((tgx * tgx).sum() + (tgw * tgw).sum()).backward()
    pairs = ((y, ty), (gx, tgx), (gw, tgw), (x.grad, tx.grad), (w.grad, tw.grad))
    for ours, theirs in pairs:
        np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-9, atol=1e-9)
    assert calls and set(calls) == {step}


@pytest.mark.parametrize("step", STEPS)
def test_conv_transpose_3x3_stride1(monkeypatch, forced, step):
    """conv_transpose's forward is conv_grad's dX: a 3x3 stride-1 one goes through Winograd."""
    forced(step)
    rng = np.random.default_rng(6)
    x, w = rng.standard_normal((2, 4, 6, 5)), rng.standard_normal((4, 3, 3, 3))

    def run():
        return ops.conv_transpose(mt.tensor(x), mt.tensor(w), None, padding=1).numpy()

    np.testing.assert_allclose(run(), _im2col(monkeypatch, run), atol=1e-12)


def _qualifying_conv_samples():
    return [
        pytest.param(sample, id=sample.name)
        for sample in SAMPLES["conv"]
        if sample.name.startswith("2d")
    ]


@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize("sample", _qualifying_conv_samples())
def test_conv_registry_samples(monkeypatch, forced, step, sample):
    """Each 2-D conv sample in float32 and float64, forward and gradients, equal to the im2col
    path (those Winograd does not apply to run im2col on both sides); those it applies to
    pass gradcheck through it."""
    calls = forced(step)
    values = sample.make(rng_for("conv", sample))
    for dtype in (np.float32, np.float64):

        def run(dtype=dtype):
            inputs = minitrain_inputs(values, sample, dtype)
            out = sample.call(*inputs)
            out.backward(mt.tensor(np.ones(out.shape, dtype)))
            grads = [t.grad.numpy() for t in inputs if getattr(t, "grad", None) is not None]
            return [out.numpy(), *grads]

        got, expected = run(), _im2col(monkeypatch, run)
        for ours, theirs in zip(got, expected, strict=True):
            np.testing.assert_allclose(ours, theirs, atol=_tolerance(dtype, step, theirs))
    if calls:
        inputs = minitrain_inputs(values, sample, np.float64)
        assert gradcheck(sample.call, inputs)


def test_registry_samples_reach_winograd(forced):
    """Enough of the samples above qualify for the test to mean something."""
    calls = forced(4)
    for sample in SAMPLES["conv"]:
        values = sample.make(rng_for("conv", sample))
        sample.call(*minitrain_inputs(values, sample, np.float64))
    assert len(calls) >= 4


def test_rule(monkeypatch):
    """The measured rule: F(2x2) for the 64 -> 64 conv on 32x32 (float32 or float64), im2col
    for a first layer's 3 channels, small images, 128 filters, float16 and what Winograd does
    not apply to; MINITRAIN_WINOGRAD=0 turns it off."""
    X, W = np.zeros((2, 64, 32, 32), np.float32), np.zeros((64, 64, 3, 3), np.float32)
    window = _window((32, 32), (1, 1, 1, 1))
    assert winograd.winograd_tile(X.shape, window, 1, W, X) == 2
    assert winograd.winograd_tile(X.shape, window, 2, W, X) == 0
    small = _window((8, 8), (1, 1, 1, 1))
    assert winograd.winograd_tile((2, 64, 8, 8), small, 1, W) == 0
    first = np.zeros((64, 3, 3, 3), np.float32)
    assert winograd.winograd_tile((2, 3, 32, 32), window, 1, first) == 0
    assert winograd.winograd_tile(X.shape, window, 1, W.astype(np.float64)) == 2
    wide = np.zeros((128, 64, 3, 3), np.float32)
    assert winograd.winograd_tile(X.shape, window, 1, wide) == 0
    assert winograd.winograd_tile(X.shape, window, 1, W.astype(np.float16)) == 0
    strided = window_of((32, 32), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1))
    dilated = window_of((32, 32), (3, 3), (1, 1), (2, 2, 2, 2), (2, 2))
    assert winograd.winograd_tile(X.shape, strided, 1, W) == 0
    assert winograd.winograd_tile(X.shape, dilated, 1, W) == 0
    monkeypatch.setenv("MINITRAIN_WINOGRAD", "0")
    assert winograd.winograd_tile(X.shape, window, 1, W, X) == 0


@pytest.mark.parametrize("transforms", [winograd.F2, winograd.F4])
def test_transform_matrices(transforms):
    """A^T [(G g) * (B^T d)] is the correlation of d with g (1-D, so 2-D by separability)."""
    rng = np.random.default_rng(7)
    d, g = rng.standard_normal(transforms.alpha), rng.standard_normal(3)
    got = transforms.output_t @ ((transforms.filter_g @ g) * (transforms.input_t @ d))
    expected = [d[i : i + 3] @ g for i in range(transforms.step)]
    np.testing.assert_allclose(got, expected, atol=1e-12)


def test_the_transform_kernels_load_from_numba_cache_in_a_fresh_process(tmp_path):
    # numba's cache keys a kernel on its closure's pickled contents: kernels that captured jitted
    # helpers (dispatchers) pickled differently in every process, so every process compiled the
    # four transforms again (seconds each) and the cache grew. A second process must load them.
    code = (
        "import gc, numpy as np, minitrain as mt\n"
        "from numba.core.dispatcher import Dispatcher\n"
        "from minitrain.nn import functional as F\n"
        "rng = np.random.default_rng(0)\n"
        "x = mt.tensor(rng.standard_normal((1, 32, 24, 24), dtype=np.float32), "
        "requires_grad=True)\n"
        "w = mt.tensor(rng.standard_normal((32, 32, 3, 3), dtype=np.float32), "
        "requires_grad=True)\n"
        "F.conv2d(x, w, padding=1).sum().backward()\n"
        "ran = [d.py_func.__qualname__ for d in gc.get_objects() if isinstance(d, Dispatcher)]\n"
        "compiled = [d.py_func.__qualname__ for d in gc.get_objects()\n"
        "            if isinstance(d, Dispatcher) and d.stats.cache_misses]\n"
        "print(sorted(set(ran)), sorted(compiled))\n"
    )
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), MINITRAIN_NUMBA="1")
    env.pop("MINITRAIN_WINOGRAD", None)
    runs = [
        subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        ).stdout.strip()
        for _ in range(2)
    ]
    assert "transform_inputs" in runs[0] and "transform_grads" in runs[0]  # Winograd ran
    assert runs[1].endswith("[]"), runs[1]

"""The conv op's numba kernels against numpy, its batch in chunks and side by side on threads,
and its choice of column layout."""

from __future__ import annotations

import importlib
import threading

import numpy as np
import pytest

import minitrain as mt
from minitrain import backend, ops

chunking = importlib.import_module("minitrain.ops.convolution.chunking")
columns_module = importlib.import_module("minitrain.ops.convolution.columns")
window_module = importlib.import_module("minitrain.ops.convolution.window")


def _normal(rng, *shape, dtype=np.float64):
    return rng.standard_normal(shape).astype(dtype)


def _leaves(rng, x_shape, w_shape, bias=True):
    values = [_normal(rng, *x_shape), _normal(rng, *w_shape)]
    if bias:
        values.append(_normal(rng, w_shape[0]))
    return values


def _conv_and_grads(x_value, w_value, b_value, **attrs):
    x, w, b = (mt.tensor(v, requires_grad=True) for v in (x_value, w_value, b_value))
    y = ops.conv(x, w, b, **attrs)
    y.backward(np.cos(np.arange(y.array.size)).reshape(y.shape).astype(y.dtype))
    return y.array, x.grad.array, w.grad.array, b.grad.array


@pytest.mark.parametrize(
    "attrs",
    [{"padding": 1}, {"stride": 2, "padding": ((1, 0), (0, 1))}, {"dilation": 2, "groups": 2}],
    ids=["same_3x3", "strided", "dilated_groups"],
)
def test_numba_conv_matches_numpy_in_float32(attrs):
    rng = np.random.default_rng(9)
    values = _leaves(rng, (3, 4, 9, 8), (6, 4 // attrs.get("groups", 1), 3, 3))
    values = [v.astype(np.float32) for v in values]
    with backend.use_numba(True):
        fast = _conv_and_grads(*values, **attrs)
    with backend.use_numba(False):
        generic = _conv_and_grads(*values, **attrs)
    for got, want in zip(fast, generic, strict=True):
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


# (wide, split): the compact layout, the wide one, and the wide one with the taps of the
# canonical dims before `split` taken by shifting
LAYOUTS = [(False, 0), (True, 0), (True, 1), (True, 2), (True, 3)]
LAYOUT_IDS = ["compact", "wide", "wide_split_depth", "wide_split_rows", "wide_split_all"]


def test_convs_in_two_threads_at_once_match_each_alone(monkeypatch):
    # nothing a conv keeps between calls (cached layouts, kernel arguments) is shared state:
    # two threads' convs, switching while BLAS runs, give what each gives alone
    monkeypatch.setattr(chunking, "_COL_CHUNK_BYTES", 1 << 17)  # a few chunks each
    rng = np.random.default_rng(13)
    cases = [_leaves(rng, (6, 8, 12, 12), (8, 8, 3, 3)), _leaves(rng, (5, 8, 10, 9), (8, 8, 3, 3))]
    alone = [_conv_and_grads(*values, padding=1) for values in cases]
    results = [[], []]

    def run(i):
        for _ in range(10):
            results[i].append(_conv_and_grads(*cases[i], padding=1))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for runs, want in zip(results, alone, strict=True):
        assert len(runs) == 10
        for got in runs:
            for a, b in zip(got, want, strict=True):
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("attrs", [{"padding": 1}, {"stride": (2, 1)}], ids=["wide", "compact"])
def test_a_batch_in_chunks_matches_one_chunk(monkeypatch, attrs):
    rng = np.random.default_rng(10)
    values = _leaves(rng, (7, 3, 6, 5), (4, 3, 3, 3))
    whole = _conv_and_grads(*values, **attrs)
    monkeypatch.setattr(chunking, "_COL_CHUNK_BYTES", 1)  # one image per chunk
    for got, want in zip(_conv_and_grads(*values, **attrs), whole, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


# the factories of the numba kernels the conv op runs, each building a parallel or a serial build
NUMBA_FACTORIES = (
    "_im2col_kernels",
    "_col2im_kernels",
    "_columns_to_images_kernel",
    "_images_to_columns_kernel",
)


@pytest.mark.parametrize(
    "attrs", [{"padding": 1}, {"stride": (2, 1), "groups": 2}], ids=["wide", "compact"]
)
def test_chunks_side_by_side_match_one_thread(monkeypatch, side_by_side_on, record_builds, attrs):
    rng = np.random.default_rng(12)
    w_shape = (6, 4 // attrs.get("groups", 1), 3, 3)
    values = [v.astype(np.float32) for v in _leaves(rng, (7, 4, 6, 5), w_shape)]
    monkeypatch.setattr(chunking, "_COL_CHUNK_BYTES", 1)  # one image per chunk
    one = _conv_and_grads(*values, **attrs)
    shares = side_by_side_on(3)
    recorded = [record_builds(columns_module, factory) for factory in NUMBA_FACTORIES]
    y, dx, dw, db = _conv_and_grads(*values, **attrs)
    builds = [parallel for factory_builds in recorded for parallel in factory_builds]
    # only the serial builds: numba's default (workqueue) threading layer aborts when parallel
    # kernels are launched from two threads at once
    assert builds and not any(builds)
    # the forward and the backward, each the 7 images in 7 chunks, shared by 3 threads
    chunks = [[slice(i, i + 1) for i in range(t, 7, 3)] for t in range(3)]
    assert shares == [chunks, chunks]
    np.testing.assert_array_equal(y, one[0])  # each image's work is the same, wherever it runs
    np.testing.assert_array_equal(dx, one[1])
    np.testing.assert_allclose(dw, one[2], rtol=1e-5, atol=1e-5)  # summed in another order
    np.testing.assert_allclose(db, one[3], rtol=1e-6, atol=1e-6)


def test_only_a_big_batch_runs_side_by_side_and_memory_does_not_grow_with_the_cores(
    monkeypatch,
):
    cores = [2]
    monkeypatch.setattr(chunking, "side_by_side_threads", lambda: cores[0])
    dtype = np.dtype(np.float32)

    def threads(x_shape, filters):
        window = window_module.conv_window(x_shape[2:], (3, 3), (1, 1), (1, 1, 1, 1), (1, 1))
        weight = np.zeros((filters, x_shape[1], 3, 3), np.float32)
        return chunking.Chunked.of(x_shape, dtype, weight, window, 1).threads

    assert threads((32, 64, 32, 32), 64) == 2  # the benchmark's conv: 51 MB of buffers
    assert threads((8, 64, 32, 32), 64) == 2  # 12.8 MB
    assert threads((64, 16, 14, 14), 32) == 1  # 9.7 MB (the CNN benchmark's second conv)
    assert threads((1, 64, 256, 256), 64) == 1  # one image
    cores[0] = 16
    # a one-image chunk and dW's two sums (2.0 MB) fit 12 MB 6 times
    assert threads((32, 64, 32, 32), 64) == 6
    assert threads((4, 64, 224, 224), 64) == 1  # one image's buffers fill the budget
    assert threads((64, 512, 14, 14), 512) == 1  # dW's sum and product take 19 MB


def test_a_first_layer_runs_side_by_side_from_a_smaller_batch(monkeypatch):
    # GEMMs that sum over at most 32 rows of columns (C/group * taps) are cheap beside the
    # serial passes between them: such a conv goes side by side from 1 MiB of buffers, not 12
    monkeypatch.setattr(chunking, "side_by_side_threads", lambda: 2)
    dtype = np.dtype(np.float32)

    def threads(x_shape, filters, group=1):
        window = window_module.conv_window(x_shape[2:], (3, 3), (1, 1), (1, 1, 1, 1), (1, 1))
        weight = np.zeros((filters, x_shape[1] // group, 3, 3), np.float32)
        return chunking.Chunked.of(x_shape, dtype, weight, window, group).threads

    assert threads((32, 3, 32, 32), 32) == 2  # 8.2 MB, 27 rows
    assert threads((64, 1, 28, 28), 16) == 2  # 5.4 MB, 9 rows
    assert threads((8, 3, 32, 32), 16) == 2  # 1.5 MB
    assert threads((2, 3, 16, 16), 16) == 1  # 0.1 MB: the threads' start would cost more
    assert threads((32, 4, 32, 32), 32) == 1  # 36 rows, 9.5 MB: under 12 MB
    assert threads((32, 6, 32, 32), 32, group=2) == 2  # 27 rows a group, 12.0 MB in all


def test_a_first_layer_side_by_side_matches_one_thread_and_torch(monkeypatch):
    # the benchmark CNN's first layer, its input needing no gradient: Y, dW and dB as on one
    # thread and as PyTorch's
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(14)
    x_value, w_value, b_value = (
        v.astype(np.float32) for v in _leaves(rng, (32, 3, 32, 32), (32, 3, 3, 3))
    )
    dy = _normal(rng, 32, 32, 32, 32, dtype=np.float32)

    def run(cores: int):
        monkeypatch.setattr(chunking, "side_by_side_threads", lambda: cores)
        x = mt.tensor(x_value)
        w, b = mt.tensor(w_value, requires_grad=True), mt.tensor(b_value, requires_grad=True)
        y = ops.conv(x, w, b, padding=1)
        y.backward(dy)
        return y.array, w.grad.array, b.grad.array

    one, two = run(1), run(2)
    np.testing.assert_array_equal(two[0], one[0])  # each image's work is the same
    np.testing.assert_allclose(two[1], one[1], rtol=1e-5, atol=1e-3)  # summed in other orders
    np.testing.assert_allclose(two[2], one[2], rtol=1e-5, atol=1e-3)
    tx = torch.from_numpy(x_value)
    tw, tb = torch.from_numpy(w_value).requires_grad_(), torch.from_numpy(b_value).requires_grad_()
    ty = torch.nn.functional.conv2d(tx, tw, tb, padding=1)
    ty.backward(torch.from_numpy(dy))
    np.testing.assert_allclose(two[0], ty.detach().numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(two[1], tw.grad.numpy(), rtol=1e-4, atol=1e-2)
    np.testing.assert_allclose(two[2], tb.grad.numpy(), rtol=1e-4, atol=1e-2)


@pytest.mark.parametrize(
    "N, threads, chunk_images, expected",
    [
        (7, 3, 1, [[0, 3, 6], [1, 4], [2, 5]]),
        (10, 2, 2, [[0, 3, 6], [1, 5, 8]]),  # 5 chunks of 2 make 6, 3 for each thread
        (3, 2, 5, [[0], [1]]),  # a multiple of the threads, even where one chunk fits
        (5, 1, 5, [[0]]),
    ],
)
def test_shares_split_the_batch_in_even_chunks_for_every_thread(
    monkeypatch, N, threads, chunk_images, expected
):
    monkeypatch.setattr(chunking, "_COL_CHUNK_BYTES", 100 * threads * chunk_images)
    shares = chunking._shares(N, lambda n: 100 * n, threads)
    assert [[part.start for part in share] for share in shares] == expected
    parts = sorted((part for share in shares for part in share), key=lambda p: p.start)
    assert [p.start for p in parts[1:]] == [p.stop for p in parts[:-1]]
    assert parts[0].start == 0 and parts[-1].stop == N
    sizes = [p.stop - p.start for p in parts]
    assert max(sizes) - min(sizes) <= 1 and max(sizes) <= chunk_images


@pytest.mark.parametrize("use_numba", [True, False], ids=["numba", "numpy"])
@pytest.mark.parametrize("layout", LAYOUTS[1:], ids=LAYOUT_IDS[1:])
@pytest.mark.parametrize(
    "x_shape, w_shape, attrs",
    [
        ((2, 4, 9), (6, 2, 3), {"padding": ((2, 1),), "dilation": 2, "groups": 2}),
        ((2, 3, 6, 7), (4, 3, 3, 2), {"padding": ((1, 2), (0, 1)), "dilation": (1, 2)}),
        ((3, 4, 5, 6), (6, 2, 3, 3), {"padding": 1, "groups": 2}),
        (
            (2, 2, 4, 5, 3),
            (3, 2, 2, 3, 2),
            {"padding": ((1, 0), (1, 1), (0, 1)), "dilation": (2, 1, 1)},
        ),
    ],
    ids=["1d_groups_dilated", "2d_asymmetric_dilated", "2d_groups_same", "3d_dilated"],
)
def test_every_layout_agrees_with_the_compact_one_on_the_op(
    monkeypatch, x_shape, w_shape, attrs, layout, use_numba
):
    rng = np.random.default_rng(11)
    values = _leaves(rng, x_shape, w_shape)
    with backend.use_numba(use_numba):
        monkeypatch.setattr(
            chunking,
            "_layout",
            lambda window, spatial, *_: columns_module.Columns.of(window, spatial, False),
        )
        compact = _conv_and_grads(*values, **attrs)
        wide, split = layout
        monkeypatch.setattr(
            chunking,
            "_layout",
            lambda window, spatial, *_: columns_module.Columns.of(window, spatial, wide, split),
        )
        for got, want in zip(_conv_and_grads(*values, **attrs), compact, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize(
    "x_shape, w_shape, attrs, split",
    [
        ((32, 64, 32, 32), (64, 64, 3, 3), {"padding": 1}, 2),  # the benchmark's: (192, 192)
        ((32, 128, 16, 16), (64, 128, 3, 3), {"padding": 1}, 2),  # (192, 384), not (64, 1152)
        ((64, 1, 28, 28), (16, 1, 3, 3), {"padding": 1}, 0),  # (16, 9), not (48, 3)
        # (96, 48) would be squarer than (32, 144), but its shifts reach 13% more columns
        ((64, 16, 14, 14), (32, 16, 3, 3), {"padding": 1}, 0),
        ((8, 64, 4, 4), (64, 64, 3, 3), {"padding": 1}, 0),  # shifts would reach 40% more columns
        ((8, 64, 16, 16), (64, 64, 3, 3), {"stride": 2, "padding": 1}, None),  # compact
    ],
    ids=[
        "benchmark",
        "halving_channels",
        "first_cnn_layer",
        "second_cnn_layer",
        "small_image",
        "strided",
    ],
)
def test_layout_splits_where_the_gemm_gets_squarer(x_shape, w_shape, attrs, split):
    window = window_module.torch_conv_window(
        "conv", x_shape, w_shape, attrs.get("stride", 1), attrs["padding"], 1, 1
    )
    columns = chunking._layout(window, x_shape[2:], x_shape[1], w_shape[0])
    assert columns.wide == (split is not None)
    assert columns.split == (split or 0)

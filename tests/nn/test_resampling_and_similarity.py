"""Resampling (interpolate, max_unpool, unfold / fold, pixel_shuffle) and similarity (cosine
similarity, distances, normalize, softmin, one_hot, the losses of pairs) against PyTorch: the
composed functions' samples run through the registry's checks, PyTorch's rules worked through
by hand (interpolate's sizes and scales, its nearest indices in float32), the numba kernels
against the numpy ones, the layers, and the errors. (The registered ops' gradchecks and PyTorch
comparisons run from the samples in tests/samples/resampling/.)"""

from __future__ import annotations

import importlib
import itertools
import warnings

import numpy as np
import op_samples  # (first: it imports the sample files, as COMPOSED below reads)
import pytest

import minitrain as mt
from minitrain import backend, nn, ops
from minitrain.errors import (
    ArgumentError,
    DimensionError,
    DTypeError,
    IndexOutOfRangeError,
    ShapeError,
)
from minitrain.nn import functional as F  # noqa: N812 (PyTorch's idiom)

COMPOSED = {
    name: samples
    for module in ("resampling.shuffle", "losses.similarity", "losses.pair_loss")
    for name, samples in importlib.import_module(f"samples.{module}").COMPOSED.items()
}


def _leaf(values, dtype=np.float64):
    return mt.tensor(np.asarray(values, dtype=dtype), requires_grad=True)


# The composed functions' samples, through the checks test_ops.py and test_second_order.py run
# on the registered ops' samples.
def test_every_composed_function_has_samples():
    families = ("resampling", "losses.similarity", "losses.pair_loss")
    public = {
        name
        for family in families
        for name in importlib.import_module(f"minitrain.ops.{family}").__all__
    }
    composed = public - ops.registry().keys()
    assert composed == set(COMPOSED), sorted(composed ^ set(COMPOSED))
    assert not COMPOSED.keys() & ops.registry().keys()
    # F.softmin, softmax of -input: sampled in samples/activations/softmax_family.py
    assert op_samples.COMPOSED["softmin"]


# (The registry's checks run on these COMPOSED samples too: tests/ops/test_ops.py and
# test_second_order.py.)


# interpolate: PyTorch's sizes, scales and index rules over many shapes.
SWEEP = [
    (mode, dims, length, spec, align)
    for mode, dims in [
        ("nearest", 1),
        ("nearest", 2),
        ("nearest-exact", 2),
        ("linear", 1),
        ("bilinear", 2),
        ("trilinear", 3),
        ("bicubic", 2),
        ("area", 2),
    ]
    for length in (1, 3, 7)
    for spec in [
        ("size", 1),
        ("size", 5),
        ("size", 13),
        ("scale_factor", 2.0),
        ("scale_factor", 0.5),
        ("scale_factor", 1.7),
        ("scale_factor", 0.3),
        ("recompute", 3.3),
    ]  # fmt: skip
    for align in ([None] if mode in ("nearest", "nearest-exact", "area") else [False, True])
]


@pytest.mark.parametrize("mode, dims, length, spec, align", SWEEP)
def test_interpolate_matches_torch_over_sizes_and_scales(torch, mode, dims, length, spec, align):
    shape = (2, 2) + tuple(length + i for i in range(dims))
    x = np.random.default_rng(length).standard_normal(shape)
    kw = {"mode": mode} if align is None else {"mode": mode, "align_corners": align}
    kind, value = spec
    if kind == "size":
        kw["size"] = value
    else:
        kw.update(scale_factor=value, recompute_scale_factor=kind == "recompute" or None)
    tx = torch.tensor(x, requires_grad=True)
    try:
        expected = torch.nn.functional.interpolate(tx, **kw)
        assert expected.numel() > 0
    except (RuntimeError, AssertionError):
        with pytest.raises(ShapeError, match="interpolate: scale_factor .* leaves an output"):
            ops.interpolate(mt.tensor(x), **kw)
        return
    ours = _leaf(x)
    out = ops.interpolate(ours, **kw)
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-12, atol=1e-12)
    upstream = np.random.default_rng(0).standard_normal(out.shape)
    out.backward(upstream)
    expected.backward(torch.from_numpy(upstream))
    np.testing.assert_allclose(ours.grad.array, tx.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "mode, dtype",
    [("nearest", np.float32), ("nearest", np.float64), ("nearest-exact", np.float64)],
)
def test_nearest_indices_follow_torchs_arithmetic(torch, mode, dtype):
    # floor(j * in / out) in float32 errs from the exact quotient for some sizes: nearest's
    # indices are float32's whatever the dtype, in PyTorch and here; nearest-exact's ratio is
    # the dtype's, its product with j + 0.5 a double floored as a float32. (For float32 input,
    # PyTorch's nearest-exact kernel rounds differently at a few ratios whose product lands
    # within an ulp of an integer, 2 -> 41 at position 20 say: one index off there.)
    for length, out in itertools.product(range(1, 40), (3, 7, 11, 29, 61, 97)):
        x = np.arange(length, dtype=dtype).reshape(1, 1, length)
        ours = ops.interpolate(mt.tensor(x), size=out, mode=mode).array
        theirs = torch.nn.functional.interpolate(torch.from_numpy(x), size=out, mode=mode)
        np.testing.assert_array_equal(ours, theirs.numpy(), err_msg=f"{length} -> {out}")


def test_interpolate_to_the_same_size_copies_where_torch_does(torch):
    # linear modes copy a dim that keeps its size whatever the scale says (PyTorch's rule);
    # nearest and bicubic read it through the scale's ratio
    x = np.arange(10.0).reshape(1, 1, 10)
    for mode in ("linear", "nearest"):
        ours = ops.interpolate(mt.tensor(x), scale_factor=1.07, mode=mode).array
        theirs = torch.nn.functional.interpolate(torch.from_numpy(x), scale_factor=1.07, mode=mode)
        np.testing.assert_array_equal(ours, theirs.numpy())
    np.testing.assert_array_equal(ops.interpolate(mt.tensor(x), 10, mode="linear").array, x)
    # PyTorch's 2-D nearest copies a dim that keeps its size too (its 1-D and 3-D do not)
    grid = np.random.default_rng(1).standard_normal((1, 1, 5, 20))
    for scale in (1.04, (1.07, 2.0)):
        ours = ops.interpolate(_leaf(grid), scale_factor=scale, mode="nearest")
        tx = torch.from_numpy(grid.copy()).requires_grad_()
        theirs = torch.nn.functional.interpolate(tx, scale_factor=scale, mode="nearest")
        np.testing.assert_array_equal(ours.array, theirs.detach().numpy())


@pytest.mark.parametrize("mode", ["nearest", "bicubic"])
def test_interpolate_gradient_is_the_adjoint_where_a_scale_keeps_the_size(torch, mode):
    # Deliberately not PyTorch's: where scale_factor leaves a dim its size but moves its
    # samples (10 * 1.07 -> 10), PyTorch's nearest and bicubic backward copy the gradient
    # straight through, which is not the gradient of their own forward. Ours is (gradcheck).
    shape = (1, 1, 10) if mode == "nearest" else (1, 1, 4, 10)
    x = _leaf(np.random.default_rng(0).standard_normal(shape))
    call = lambda t: ops.interpolate(t, scale_factor=1.07, mode=mode)  # noqa: E731
    assert mt.gradcheck(call, [x])
    tx = torch.from_numpy(x.array.copy()).requires_grad_()
    out = torch.nn.functional.interpolate(tx, scale_factor=1.07, mode=mode)
    np.testing.assert_allclose(call(x).array, out.detach().numpy(), rtol=1e-12)
    out.backward(torch.ones_like(out))
    call(x).backward(np.ones(call(x).shape))
    assert not np.allclose(x.grad.array, tx.grad.numpy())


@pytest.mark.parametrize(
    "kw",
    [
        {"scale_factor": 2, "mode": "bilinear"},
        {"size": (5, 9), "mode": "bicubic", "align_corners": True},
        {"scale_factor": 0.6, "mode": "nearest"},
        {"size": (4, 3), "mode": "nearest-exact"},
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_interpolate_numba_kernels_match_the_numpy_ones(kw, dtype):
    x = np.random.default_rng(0).standard_normal((2, 3, 6, 7)).astype(dtype)
    upstream = None
    results = []
    for use_numba in (True, False):
        leaf = _leaf(x, dtype)
        with backend.use_numba(use_numba):
            out = ops.interpolate(leaf, **kw)
            upstream = np.random.default_rng(1).standard_normal(out.shape).astype(dtype)
            out.backward(upstream)
        results.append((out.array, leaf.grad.array))
    tol = 1e-6 if dtype == np.float32 else 1e-13
    for ours, generic in zip(*results, strict=True):
        np.testing.assert_allclose(ours, generic, rtol=tol, atol=tol)


def test_interpolate_float16_computes_in_float32(torch):
    x = np.random.default_rng(0).standard_normal((1, 2, 4, 5)).astype(np.float16)
    leaf = _leaf(x, np.float16)
    out = ops.interpolate(leaf, scale_factor=2, mode="bilinear")
    assert out.dtype == np.float16
    expected = torch.nn.functional.interpolate(
        torch.from_numpy(x.astype(np.float32)), scale_factor=2, mode="bilinear"
    )
    np.testing.assert_allclose(out.array, expected.numpy(), rtol=1e-3, atol=1e-3)
    out.backward(np.ones(out.shape, np.float16))
    assert leaf.grad.dtype == np.float16
    np.testing.assert_allclose(leaf.grad.array, 4.0)  # each input shares out to 4 outputs


def test_area_mode_is_adaptive_average_pooling(torch):
    x = np.random.default_rng(0).standard_normal((2, 3, 7, 9))
    for kw in ({"size": (3, 4)}, {"scale_factor": 0.5}):
        ours = F.interpolate(mt.tensor(x), mode="area", **kw)
        theirs = torch.nn.functional.interpolate(torch.from_numpy(x), mode="area", **kw)
        np.testing.assert_allclose(ours.array, theirs.numpy(), rtol=1e-12)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda x: ops.interpolate(x, 4, mode="cubic"), ArgumentError, "mode must be one of"),
        (lambda x: ops.interpolate(x, 4, mode="linear"), ShapeError, "'linear' takes 3-D input"),
        (lambda x: ops.interpolate(x, 4, align_corners=True), ArgumentError, "align_corners"),
        (lambda x: ops.interpolate(x), ArgumentError, "exactly one of size and scale_factor"),
        (lambda x: ops.interpolate(x, 4, 2.0), ArgumentError, "exactly one of"),
        (lambda x: ops.interpolate(x, (4, 5, 6)), ShapeError, "size needs 2 values"),
        (lambda x: ops.interpolate(x, 4.0), DTypeError, "size must be"),
        (lambda x: ops.interpolate(x, 0), ArgumentError, "size must be >= 1"),
        (lambda x: ops.interpolate(x, scale_factor=(2, 2, 2)), ShapeError, "scale_factor needs"),
        (lambda x: ops.interpolate(x, scale_factor="2"), DTypeError, "scale_factor must be"),
        (lambda x: ops.interpolate(x, scale_factor=0.1), ShapeError, r"leaves an output size"),
        (lambda x: ops.interpolate(x, 4, recompute_scale_factor=True), ArgumentError,
         "recompute_scale_factor=True is for scale_factor"),
        (lambda x: ops.interpolate(x[0, 0], 4), ShapeError, r"\(N, C, \*spatial\)"),
        (lambda x: ops.interpolate(x.long(), 4), DTypeError, "'input' must be floating point"),
        (lambda x: F.interpolate(x, 4, antialias=True), ArgumentError,
         r"interpolate: antialias=True is not supported"),
    ],
)  # fmt: skip
def test_interpolate_errors_name_the_argument(call, error, message):
    with pytest.raises(error, match=message):
        call(mt.zeros(1, 2, 3, 4))


def test_upsample_layers_and_deprecated_functions_match_torch(torch):
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5))
    pairs = [
        (nn.Upsample(scale_factor=2), torch.nn.Upsample(scale_factor=2)),
        (
            nn.Upsample(size=(3, 7), mode="bilinear", align_corners=False),
            torch.nn.Upsample(size=(3, 7), mode="bilinear", align_corners=False),
        ),
        (nn.UpsamplingNearest2d(scale_factor=3), torch.nn.UpsamplingNearest2d(scale_factor=3)),
        (nn.UpsamplingBilinear2d(size=6), torch.nn.UpsamplingBilinear2d(size=6)),
    ]
    for ours, theirs in pairs:
        assert repr(ours) == repr(theirs)
        np.testing.assert_allclose(
            ours(mt.tensor(x)).array, theirs(torch.from_numpy(x)).numpy(), rtol=1e-12
        )
    for name, kw in [("upsample", {"mode": "bilinear"}), ("upsample_nearest", {}),
                     ("upsample_bilinear", {})]:  # fmt: skip
        with pytest.warns(UserWarning, match=f"nn.functional.{name}` is deprecated") as warned:
            ours = getattr(F, name)(mt.tensor(x), scale_factor=2, **kw)
        assert [w.filename for w in warned] == [__file__]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = getattr(torch.nn.functional, name)(torch.from_numpy(x), scale_factor=2, **kw)
        np.testing.assert_allclose(ours.array, theirs.numpy(), rtol=1e-12)


# max_unpool: the inverse of max pooling.
@pytest.mark.parametrize("dims", [1, 2, 3])
def test_max_unpool_layers_undo_max_pool(torch, dims):
    shape = (2, 3) + (4, 6, 4)[:dims]
    x = np.random.default_rng(0).permutation(np.prod(shape)).reshape(shape).astype(np.float64)
    pool = getattr(nn, f"MaxPool{dims}d")(2, return_indices=True)
    unpool = getattr(nn, f"MaxUnpool{dims}d")(2)
    their_unpool = getattr(torch.nn, f"MaxUnpool{dims}d")(2)
    assert repr(unpool) == repr(their_unpool)
    pooled, indices = pool(mt.tensor(x))
    out = unpool(pooled, indices)
    expected = their_unpool(torch.from_numpy(pooled.array), torch.from_numpy(indices.array))
    np.testing.assert_array_equal(out.array, expected.numpy())
    # every window's max back in place, zeros elsewhere
    assert (out.array == np.where(out.array != 0, x, 0)).all() and np.count_nonzero(out.array) == (
        pooled.array.size
    )
    bigger = tuple(n + 1 for n in shape[2:])
    assert unpool(pooled, indices, output_size=bigger).shape == shape[:2] + bigger


def test_max_unpool_sends_each_gradient_back_from_where_it_was_placed():
    x = _leaf([[[1.0, 2.0]]])
    out = F.max_unpool1d(x, mt.tensor(np.array([[[3, 0]]])), 2)
    np.testing.assert_array_equal(out.array, [[[2.0, 0.0, 0.0, 1.0]]])
    out.backward(np.array([[[10.0, 20.0, 30.0, 40.0]]]))
    np.testing.assert_array_equal(x.grad.array, [[[40.0, 10.0]]])


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda x, i: F.max_unpool2d(x, i.float(), 2), DTypeError, "indices must be int64"),
        (lambda x, i: F.max_unpool2d(x, i[:, :, :1], 2), ShapeError, "must have input's shape"),
        (lambda x, i: F.max_unpool2d(x, i + 30, 2), ArgumentError,
         r"indices must lie in \[0, 16\) .* found 30"),
        (lambda x, i: F.max_unpool2d(x, i, 2, output_size=(6, 4)), ShapeError,
         r"dim 0 must be between 2 and 6"),
        (lambda x, i: F.max_unpool2d(x, i, 2, output_size=(4,)), ShapeError,
         "output_size must hold 2 sizes"),
        (lambda x, i: F.max_unpool1d(x, i, 2), ShapeError, "with 1 spatial dims"),
        (lambda x, i: F.max_unpool2d(x.long(), i, 2), DTypeError, "floating point"),
        (lambda x, i: ops.max_unpool(x, i, (2, 2), padding=2), ShapeError, "empty dim"),
    ],
)  # fmt: skip
def test_max_unpool_errors_name_the_argument(call, error, message):
    indices = mt.tensor(np.array([[[[0, 2], [8, 15]]]]))
    with pytest.raises(error, match=message):
        call(mt.ones(1, 1, 2, 2), indices)


# unfold / fold.
def test_fold_of_unfold_counts_each_position_once_per_window(torch):
    x = np.random.default_rng(0).standard_normal((2, 3, 6, 5))
    columns = F.unfold(mt.tensor(x), 3, padding=1, stride=(1, 2))
    folded = F.fold(columns, (6, 5), 3, padding=1, stride=(1, 2))
    expected = torch.nn.functional.fold(
        torch.nn.functional.unfold(torch.from_numpy(x), 3, padding=1, stride=(1, 2)),
        (6, 5),
        3,
        padding=1,
        stride=(1, 2),
    )
    np.testing.assert_allclose(folded.array, expected.numpy(), rtol=1e-12)
    for ours, theirs in [
        (nn.Unfold(2, stride=2), torch.nn.Unfold(2, stride=2)),
        (nn.Fold((4, 4), 2, stride=2), torch.nn.Fold((4, 4), 2, stride=2)),
    ]:
        assert repr(ours) == repr(theirs)
    y = nn.Fold((6, 4), 2, stride=2)(nn.Unfold(2, stride=2)(mt.tensor(x[:, :, :, :4])))
    np.testing.assert_array_equal(y.array, x[:, :, :, :4])  # windows that tile the image


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: F.unfold(mt.zeros(2, 3, 4), 2, 1, 0, 1), None, None),
        (lambda: F.unfold(mt.zeros(3, 4), 2), ShapeError, r"unfold: input must be \(N, C"),
        (lambda: F.unfold(mt.zeros(1, 1, 3, 3), 4), ShapeError, "the kernel spans 4 positions"),
        (lambda: F.unfold(mt.zeros(1, 1, 3, 3), 2, stride=0), ArgumentError, "stride must be"),
        (lambda: F.unfold(mt.zeros(1, 1, 3, 3, dtype=np.int64), 2), DTypeError, "floating"),
        (lambda: F.fold(mt.zeros(1, 5, 4), (3, 3), 2), ShapeError,
         r"must be C \* K, a multiple of the 4 taps of kernel_size"),
        (lambda: F.fold(mt.zeros(1, 4, 5), (3, 3), 2), ShapeError, r"must hold L = 4 windows"),
        (lambda: F.fold(mt.zeros(4), (3, 3), 2), ShapeError, r"input must be \(N, C\*K, L\)"),
        (lambda: F.fold(mt.zeros(1, 4, 4), (3, 3, 3), 2), ShapeError, "output_size needs 2"),
    ],
)  # fmt: skip
def test_unfold_and_fold_errors_name_the_argument(call, error, message):
    if error is None:  # a (C, H, W) image is unbatched, as in PyTorch
        assert call().shape == (8, 6)  # C*K = 2*4 taps, L = 2*3 windows
        return
    with pytest.raises(error, match=message):
        call()


# pixel_shuffle / pixel_unshuffle.
def test_pixel_unshuffle_inverts_pixel_shuffle_and_the_layers_match_torch(torch):
    x = np.random.default_rng(0).standard_normal((2, 12, 3, 4))
    shuffled = nn.PixelShuffle(2)(mt.tensor(x))
    np.testing.assert_array_equal(
        shuffled.array, torch.nn.PixelShuffle(2)(torch.from_numpy(x)).numpy()
    )
    np.testing.assert_array_equal(nn.PixelUnshuffle(2)(shuffled).array, x)
    assert repr(nn.PixelShuffle(2)) == repr(torch.nn.PixelShuffle(2))
    assert repr(nn.PixelUnshuffle(3)) == repr(torch.nn.PixelUnshuffle(3))


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda x: F.pixel_shuffle(x, 3), ShapeError, "multiple of upscale_factor\\^2 = 9"),
        (lambda x: F.pixel_shuffle(x, 0), ArgumentError, "upscale_factor must be positive"),
        (lambda x: F.pixel_shuffle(x, 2.0), DTypeError, "upscale_factor must be an int"),
        (lambda x: F.pixel_shuffle(x[0, 0], 2), ShapeError, "at least 3 dims"),
        (lambda x: F.pixel_unshuffle(x, 3), ShapeError, "multiples of downscale_factor 3"),
    ],
)
def test_pixel_shuffle_errors_name_the_argument(call, error, message):
    with pytest.raises(error, match=message):
        call(mt.zeros(1, 4, 2, 2))


# one_hot.
def test_one_hot_matches_torch(torch):
    labels = np.array([[0, 3], [2, 2]])
    for num_classes in (-1, 4, 6):
        ours = F.one_hot(mt.tensor(labels), num_classes)
        theirs = torch.nn.functional.one_hot(torch.from_numpy(labels), num_classes)
        assert ours.dtype == np.int64 and not ours.requires_grad
        np.testing.assert_array_equal(ours.array, theirs.numpy())
    assert F.one_hot(mt.tensor(np.zeros(0, np.int64)), 3).shape == (0, 3)


@pytest.mark.parametrize(
    "values, num_classes, error, message",
    [
        (np.array([0, 2], np.int32), -1, DTypeError, "int64 class indices, got int32"),
        (np.array([0, 2]), 2, IndexOutOfRangeError, r"must lie in \[0, 2\)"),
        (np.array([-1, 2]), 5, IndexOutOfRangeError, "from -1 to 2"),
        (np.zeros(0, np.int64), -1, ArgumentError, "cannot infer num_classes"),
        (np.array([1]), -2, ArgumentError, "num_classes must be -1 or >= 0"),
        (np.array([1]), 2.0, DTypeError, "num_classes must be an int"),
    ],
)
def test_one_hot_errors(values, num_classes, error, message):
    with pytest.raises(error, match=f"one_hot: .*{message}"):
        F.one_hot(mt.tensor(values), num_classes)


# similarity and the losses of pairs: layers, warnings, dtypes and errors.
def test_similarity_layers_and_losses_match_torch(torch):
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal((4, 5)) for _ in range(3))
    signs = np.array([1.0, -1.0, 1.0, -1.0])
    log_p = np.log(rng.dirichlet(np.ones(5), 4))
    q = rng.dirichlet(np.ones(5), 4)
    cases = [
        (nn.CosineSimilarity(0), torch.nn.CosineSimilarity(0), (a, b)),
        (nn.PairwiseDistance(1.0, keepdim=True), torch.nn.PairwiseDistance(1.0, keepdim=True),
         (a, b)),
        (nn.Softmin(1), torch.nn.Softmin(1), (a,)),
        (nn.KLDivLoss(reduction="batchmean"), torch.nn.KLDivLoss(reduction="batchmean"),
         (log_p, q)),
        (nn.KLDivLoss(reduction="sum", log_target=True),
         torch.nn.KLDivLoss(reduction="sum", log_target=True), (log_p, np.log(q))),
        (nn.CosineEmbeddingLoss(0.1), torch.nn.CosineEmbeddingLoss(0.1), (a, b, signs)),
        (nn.MarginRankingLoss(0.2, reduction="sum"),
         torch.nn.MarginRankingLoss(0.2, reduction="sum"), (a[:, 0], b[:, 0], signs)),
        (nn.TripletMarginLoss(2.0, swap=True), torch.nn.TripletMarginLoss(2.0, swap=True),
         (a, b, c)),
    ]  # fmt: skip
    for ours, theirs, values in cases:
        out = ours(*(mt.tensor(v) for v in values))
        expected = theirs(*(torch.from_numpy(v) for v in values))
        np.testing.assert_allclose(out.array, expected.numpy(), rtol=1e-12, err_msg=repr(ours))
    assert repr(nn.Softmin(1)) == repr(torch.nn.Softmin(1))
    assert repr(nn.TripletMarginLoss(reduction="sum")) == "TripletMarginLoss(reduction='sum')"


def test_kl_div_mean_warns_as_torch_and_batchmean_divides_by_the_batch():
    log_p, q = mt.tensor(np.log(np.full((2, 4), 0.25))), mt.tensor(np.full((2, 4), 0.25))
    with pytest.warns(UserWarning, match="'mean' divides the total loss by both") as warned:
        F.kl_div(log_p, q)
    assert [w.filename for w in warned] == [__file__]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        total = F.kl_div(log_p * 2, q, reduction="sum")
        assert F.kl_div(log_p * 2, q, reduction="batchmean").item() == pytest.approx(
            total.item() / 2
        )


def test_softmin_without_dim_warns_as_softmax():
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmin") as warned:
        nn.Softmin()(mt.zeros(2, 3))
    assert [w.filename for w in warned] == [__file__]


def test_cosine_similarity_clamps_small_norms_in_value_only_as_torch(torch):
    # rows of norm 0 and 1e-9 < eps: PyTorch clamps the norms in place under no_grad, so the
    # value divides by eps while the gradient still flows through the unclamped norm (no
    # derivative of the value, hence no gradcheck: PyTorch's convention, matched)
    x1 = np.array([[0.0, 0.0, 0.0], [1e-9, 0.0, 0.0], [1.0, 2.0, 0.5]])
    x2 = np.random.default_rng(0).standard_normal((3, 3))
    ours = [_leaf(x1), _leaf(x2)]
    theirs = [torch.tensor(v, requires_grad=True) for v in (x1, x2)]
    out = F.cosine_similarity(*ours)
    expected = torch.nn.functional.cosine_similarity(*theirs)
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-12)
    out.backward(np.array([1.0, 2.0, 3.0]))
    expected.backward(torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64))
    for leaf, reference in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(leaf.grad.array, reference.grad.numpy(), rtol=1e-10)


def test_cosine_similarity_and_distance_dtypes_follow_torch(torch):
    ints, floats = np.array([[1, 2, 3]]), np.array([[1.0, 0.0, 3.0]])
    ours = F.cosine_similarity(mt.tensor(ints), mt.tensor(floats))
    theirs = torch.nn.functional.cosine_similarity(torch.from_numpy(ints), torch.from_numpy(floats))
    assert ours.dtype == np.float64 == theirs.numpy().dtype
    np.testing.assert_allclose(ours.array, theirs.numpy(), rtol=1e-12)
    with pytest.raises(DTypeError, match="cosine_similarity: x1 and x2 must have a floating"):
        F.cosine_similarity(mt.tensor(ints), mt.tensor(ints))
    distance = F.pairwise_distance(mt.tensor(ints), mt.tensor(ints * 2))
    assert distance.dtype == np.float32
    np.testing.assert_allclose(
        distance.array,
        torch.nn.functional.pairwise_distance(
            torch.from_numpy(ints), torch.from_numpy(ints * 2)
        ).numpy(),
        rtol=1e-6,
    )
    counts = F.pairwise_distance(mt.tensor(floats), mt.tensor(floats * 0), p=0)
    np.testing.assert_array_equal(counts.array, [3.0])  # nonzero entries, eps included


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda x: F.normalize(x, dim=2), DimensionError, "normalize: dim 2 is out of range"),
        (lambda x: F.normalize(x.long()), DTypeError, "normalize: input must be floating"),
        (lambda x: F.normalize(x, out=x), ArgumentError, "normalize: out=<Tensor> is not"),
        (lambda x: F.cosine_similarity(x, x[:1, :2]), ShapeError, r"\(1, 2\) do not broadcast"),
        (lambda x: F.pairwise_distance(x, x, p=float("nan")), ArgumentError, "p must not be nan"),
        (lambda x: F.kl_div(x, x, reduction="batch"), ArgumentError,
         "kl_div: reduction must be one of"),
        (lambda x: F.kl_div(x, x.long(), reduction="sum"), DTypeError,
         "kl_div: target must be floating point"),
        (lambda x: F.kl_div(x[:0], x[:0], reduction="batchmean"), ArgumentError,
         "divides by 0"),
        (lambda x: F.margin_ranking_loss(x[0], x[0], x), ShapeError,
         "must have the same number of dims"),
        (lambda x: F.margin_ranking_loss(x, x, x, reduction="avg"), ArgumentError,
         "margin_ranking_loss: reduction must be"),
        (lambda x: F.cosine_embedding_loss(x, x, mt.ones(2, 1)), ShapeError,
         "target must be 0-d or 1-d"),
        (lambda x: F.cosine_embedding_loss(x, x, mt.ones(())), ShapeError,
         "a 0-d target .* takes 1-d inputs"),
        (lambda x: F.cosine_embedding_loss(x[:0], x[:0], mt.ones(0)), ArgumentError,
         "reduction='mean' over an empty input"),
        (lambda x: F.triplet_margin_loss(x, x, x[0]), ShapeError, "the same number of dims"),
        (lambda x: F.triplet_margin_loss(x, x, x, margin=0.0), ArgumentError,
         "margin must be > 0"),
        (lambda x: nn.KLDivLoss(reduction="avg"), ArgumentError, "KLDivLoss: reduction must be"),
    ],
)  # fmt: skip
def test_similarity_errors_name_the_argument(call, error, message):
    with pytest.raises(error, match=message):
        call(mt.ones(2, 3))


def test_pair_losses_read_the_deprecated_size_average_as_pytorch():
    with pytest.warns(UserWarning, match="MarginRankingLoss: size_average and reduce"):
        assert nn.MarginRankingLoss(size_average=False).reduction == "sum"
    with pytest.warns(UserWarning, match="reduction='none'"):
        assert nn.KLDivLoss(reduce=False).reduction == "none"

"""F.pad with negative widths (a crop, in every mode: values and gradients), F.pad's unknown
mode (PyTorch's NotImplementedError), and F.interpolate on uint8 images with PyTorch's integer
arithmetic, against PyTorch where it is installed and against hand-worked values."""

from __future__ import annotations

import numpy as np
import pytest

import minitrain as mt
from minitrain.errors import ArgumentError, DTypeError, ShapeError, UnknownModeError
from minitrain.nn import functional as F  # noqa: N812 (PyTorch's idiom)

ROW = np.arange(1.0, 9.0).reshape(1, 1, 8)

# (mode, pads) -> the row 1..8 padded, worked by hand: a negative pad drops that many elements
# from its side; a positive one adds elements by the mode's rule
CROPS = {
    ("constant", (-2, -1)): [3, 4, 5, 6, 7],
    ("constant", (-2, 1)): [3, 4, 5, 6, 7, 8, 0],
    ("reflect", (-1, 2)): [2, 3, 4, 5, 6, 7, 8, 7, 6],
    ("reflect", (2, -3)): [3, 2, 1, 2, 3, 4, 5],
    ("replicate", (-2, 1)): [3, 4, 5, 6, 7, 8, 8],
    ("replicate", (1, -7)): [1, 1],
    ("circular", (-2, 1)): [3, 4, 5, 6, 7, 8, 3],
}


@pytest.mark.parametrize("mode, pads", sorted(CROPS))
def test_a_negative_pad_crops(mode, pads):
    out = F.pad(mt.tensor(ROW), pads, mode=mode)
    assert out.array.reshape(-1).tolist() == CROPS[mode, pads]


@pytest.mark.parametrize("mode, pads", sorted(CROPS))
def test_a_negative_pad_crops_as_torch(torch, mode, pads):
    ours = F.pad(mt.tensor(ROW), pads, mode=mode)
    theirs = torch.nn.functional.pad(torch.tensor(ROW), pads, mode=mode)
    np.testing.assert_array_equal(ours.array, theirs.numpy())


PLANE_PADS = [
    ("constant", (-1, 2, 1, -2)),
    ("reflect", (-1, 2, 1, -2)),
    ("replicate", (-2, 3, 2, -1)),
    ("reflect", (2, -2, -1, -1)),
]


@pytest.mark.parametrize("mode, pads", PLANE_PADS)
def test_negative_pad_gradients_against_finite_differences(mode, pads):
    x = mt.tensor(np.random.default_rng(0).standard_normal((2, 1, 4, 5)), requires_grad=True)
    assert mt.gradcheck(lambda t: F.pad(t, pads, mode=mode), [x])


@pytest.mark.parametrize("mode, pads", PLANE_PADS)
def test_negative_pad_gradients_match_torch(torch, mode, pads):
    values = np.random.default_rng(1).standard_normal((2, 1, 4, 5))
    seed = np.random.default_rng(2).standard_normal(
        tuple(torch.nn.functional.pad(torch.tensor(values), pads, mode=mode).shape)
    )
    ours = mt.tensor(values, requires_grad=True)
    F.pad(ours, pads, mode=mode).backward(mt.tensor(seed))
    theirs = torch.tensor(values, requires_grad=True)
    torch.nn.functional.pad(theirs, pads, mode=mode).backward(torch.tensor(seed))
    np.testing.assert_allclose(ours.grad.array, theirs.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
def test_a_plane_pad_may_crop_a_dim_away_but_a_row_pad_may_not(mode):
    # PyTorch's 2-D and 3-D reflect and replicate pads give an empty dim for a crop of it
    # whole; its 1-D ones refuse ("input is too small"), and a crop past the size is refused
    plane = mt.ones(1, 1, 5, 5, requires_grad=True)
    out = F.pad(plane, (1, 1, 0, -5), mode=mode)
    assert out.shape == (1, 1, 0, 7)
    out.sum().backward()
    assert plane.grad.array.sum() == 0.0 and plane.grad.shape == (1, 1, 5, 5)
    assert F.pad(mt.ones(1, 1, 3, 5, 5), (0, 0, 0, 0, 0, -3), mode=mode).shape == (1, 1, 0, 5, 5)
    with pytest.raises(ShapeError):
        F.pad(mt.ones(1, 1, 5), (0, -5), mode=mode)
    with pytest.raises(ShapeError):
        F.pad(mt.ones(1, 1, 5, 5), (0, 0, 0, -6), mode=mode)


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
def test_crops_to_nothing_match_torch(torch, mode):
    for shape, pads in (((1, 1, 5, 5), (0, 0, -2, -3)), ((1, 1, 5, 5), (0, -5, 0, 0))):
        ours = F.pad(mt.ones(*shape), pads, mode=mode)
        assert ours.shape == tuple(
            torch.nn.functional.pad(torch.ones(*shape), pads, mode=mode).shape
        )
    with pytest.raises(RuntimeError):
        torch.nn.functional.pad(torch.ones(1, 1, 5), (0, -5), mode=mode)


def test_an_unknown_pad_mode_is_not_implemented_as_in_torch():
    with pytest.raises(NotImplementedError, match="foo") as raised:
        F.pad(mt.ones(1, 1, 3), (1, 1), mode="foo")
    assert isinstance(raised.value, UnknownModeError)
    assert isinstance(raised.value, ArgumentError)  # minitrain's callers' ValueError still


def test_an_unknown_pad_mode_is_torchs_not_implemented_error(torch):
    with pytest.raises(NotImplementedError):
        torch.nn.functional.pad(torch.ones(1, 1, 3), (1, 1), mode="foo")


# uint8 images ----------------------------------------------------------------------------------


def _image(shape=(2, 3, 8, 11), seed=0):
    return np.random.default_rng(seed).integers(0, 256, shape, dtype=np.uint8)


def test_uint8_nearest_copies_pixels():
    image = _image((1, 1, 2, 3))
    out = F.interpolate(mt.tensor(image), scale_factor=2, mode="nearest")
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out.array, image.repeat(2, axis=2).repeat(2, axis=3))


def test_uint8_bilinear_rounds_to_the_nearest_integer():
    # 2 pixels, 0 and 255, to 4 with align_corners: 0, 85, 170, 255 exactly; to 3 without:
    # positions 1/6, 1, 11/6 -> 0, 127.5 and 255 (a tie rounded up, as PyTorch's integers do)
    image = np.array([[[[0, 255]]]], np.uint8)
    wide = F.interpolate(mt.tensor(image), size=(1, 4), mode="bilinear", align_corners=True)
    assert wide.array.reshape(-1).tolist() == [0, 85, 170, 255]
    three = F.interpolate(mt.tensor(image), size=(1, 3), mode="bilinear")
    assert three.array.reshape(-1).tolist() == [0, 128, 255]


def test_uint8_bicubic_clamps_its_overshoot():
    image = np.array([[[[0, 0, 255, 255]]]], np.uint8)
    out = F.interpolate(mt.tensor(image), size=(1, 9), mode="bicubic").array
    assert out.dtype == np.uint8 and out.min() == 0 and out.max() == 255
    as_float = F.interpolate(mt.tensor(image.astype(np.float64)), size=(1, 9), mode="bicubic")
    assert as_float.array.min() < 0 and as_float.array.max() > 255  # what was clamped
    np.testing.assert_allclose(out, np.clip(as_float.array, 0, 255), atol=1)


@pytest.mark.parametrize("mode", ["linear", "trilinear", "area"])
def test_uint8_modes_torch_refuses_are_refused(mode):
    shape = {"linear": (1, 1, 4), "trilinear": (1, 1, 2, 2, 2), "area": (1, 1, 4, 4)}[mode]
    with pytest.raises(DTypeError, match="floating point"):
        F.interpolate(mt.zeros(*shape, dtype=mt.uint8), scale_factor=2, mode=mode)
    with pytest.raises(DTypeError):
        F.interpolate(mt.zeros(1, 1, 4, 4, dtype=mt.int64), scale_factor=2)


@pytest.mark.parametrize(
    "mode, align_corners",
    [("nearest", None), ("nearest-exact", None)]
    + [(mode, corners) for mode in ("bilinear", "bicubic") for corners in (False, True)],
)
def test_uint8_interpolate_matches_torch(torch, mode, align_corners):
    mismatched = total = 0
    for seed, size in enumerate([(7, 9), (3, 5), (16, 16), (5, 12), (20, 30), (13, 4)]):
        image = _image(seed=seed)
        ours = F.interpolate(mt.tensor(image), size=size, mode=mode, align_corners=align_corners)
        theirs = torch.nn.functional.interpolate(
            torch.from_numpy(image), size=size, mode=mode, align_corners=align_corners
        ).numpy()
        assert ours.dtype == np.uint8 and ours.shape == theirs.shape
        difference = np.abs(ours.array.astype(int) - theirs.astype(int))
        mismatched, total = mismatched + (difference > 0).sum(), total + difference.size
        # bicubic: PyTorch's weights may round differently by one unit in a few pixels
        assert difference.max() <= (2 if mode == "bicubic" else 0)
    assert mismatched <= 0.01 * total


@pytest.mark.parametrize("scale", [0.5, 1.7, 2, 3.3])
def test_uint8_bilinear_by_scale_factor_matches_torch(torch, scale):
    image = _image((1, 2, 9, 7), seed=5)
    ours = F.interpolate(mt.tensor(image), scale_factor=scale, mode="bilinear")
    theirs = torch.nn.functional.interpolate(
        torch.from_numpy(image), scale_factor=scale, mode="bilinear"
    )
    np.testing.assert_array_equal(ours.array, theirs.numpy())

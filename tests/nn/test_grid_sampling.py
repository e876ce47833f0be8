"""F.affine_grid and F.grid_sample against PyTorch: grids from the same theta, samples and the
gradients of the image, the grid and theta (bilinear and nearest, zeros and border padding,
align_corners both ways), finite differences in float64, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import minitrain as mt
from minitrain.errors import ArgumentError, ShapeError
from minitrain.nn import functional as F  # noqa: N812 (PyTorch's idiom)

THETA = np.array([[[0.9, -0.3, 0.1], [0.2, 1.1, -0.2]], [[1.2, 0.4, 0.3], [-0.5, 0.8, 0.05]]])


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("size", [(2, 3, 5, 4), (2, 1, 1, 3)])
def test_affine_grid_matches_torch(align_corners, size):
    torch = pytest.importorskip("torch")
    ours_theta, theirs_theta = (
        mt.tensor(THETA, requires_grad=True),
        torch.tensor(THETA, requires_grad=True),
    )
    out = F.affine_grid(ours_theta, size, align_corners=align_corners)
    expected = torch.nn.functional.affine_grid(theirs_theta, size, align_corners=align_corners)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), atol=1e-12)
    upstream = np.random.default_rng(0).standard_normal(expected.shape)
    (out * mt.tensor(upstream)).sum().backward()
    (expected * torch.tensor(upstream)).sum().backward()
    np.testing.assert_allclose(ours_theta.grad.numpy(), theirs_theta.grad.numpy(), atol=1e-12)


def test_affine_grid_3d_matches_torch():
    torch = pytest.importorskip("torch")
    theta = np.random.default_rng(1).standard_normal((1, 3, 4))
    out = F.affine_grid(mt.tensor(theta), (1, 2, 3, 4, 5), align_corners=False)
    expected = torch.nn.functional.affine_grid(torch.tensor(theta), (1, 2, 3, 4, 5), False)
    np.testing.assert_allclose(out.numpy(), expected.numpy(), atol=1e-12)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_matches_torch(mode, padding_mode, align_corners):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    image = rng.standard_normal((2, 3, 5, 6))
    grid = rng.uniform(-1.3, 1.3, (2, 4, 7, 2))  # some points outside the image
    ours_in = [mt.tensor(image, requires_grad=True), mt.tensor(grid, requires_grad=True)]
    theirs_in = [torch.tensor(image, requires_grad=True), torch.tensor(grid, requires_grad=True)]
    options = {"mode": mode, "padding_mode": padding_mode, "align_corners": align_corners}
    out = F.grid_sample(*ours_in, **options)
    expected = torch.nn.functional.grid_sample(*theirs_in, **options)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), atol=1e-12)
    upstream = rng.standard_normal(expected.shape)
    (out * mt.tensor(upstream)).sum().backward()
    (expected * torch.tensor(upstream)).sum().backward()
    np.testing.assert_allclose(ours_in[0].grad.numpy(), theirs_in[0].grad.numpy(), atol=1e-12)
    theirs_grid = theirs_in[1].grad.numpy()
    ours_grid = ours_in[1].grad.numpy() if ours_in[1].grad is not None else np.zeros_like(grid)
    np.testing.assert_allclose(ours_grid, theirs_grid, atol=1e-10)


def test_the_identity_grid_gives_the_image_back_and_gradchecks():
    image = np.random.default_rng(3).standard_normal((1, 2, 4, 5))
    identity = F.affine_grid(mt.tensor(THETA[:1] * 0 + [[1, 0, 0], [0, 1, 0]]), (1, 2, 4, 5),
                             align_corners=False)  # fmt: skip
    out = F.grid_sample(mt.tensor(image), identity, align_corners=False)
    np.testing.assert_allclose(out.numpy(), image, atol=1e-12)
    # a spatial transformer's path: theta -> grid -> samples, differentiable end to end
    theta = mt.tensor(THETA[:1] * 0.7, requires_grad=True)
    x = mt.tensor(image, requires_grad=True)

    def transform(theta, x):
        grid = F.affine_grid(theta, (1, 2, 3, 3), align_corners=False)
        return F.grid_sample(x, grid, align_corners=False)

    assert mt.gradcheck(transform, [theta, x])


def test_errors_and_the_default_warning():
    image, grid = mt.ones(1, 1, 3, 3), mt.zeros(1, 2, 2, 2)
    with pytest.warns(UserWarning, match="align_corners=False"):
        F.grid_sample(image, grid)
    with pytest.raises(ArgumentError, match="mode must be"):
        F.grid_sample(image, grid, mode="bicubic", align_corners=False)
    with pytest.raises(ArgumentError, match="padding_mode must be"):
        F.grid_sample(image, grid, padding_mode="reflection", align_corners=False)
    with pytest.raises(ShapeError, match="grid_sample: expected input"):
        F.grid_sample(image, mt.zeros(1, 2, 2, 3), align_corners=False)
    with pytest.raises(ShapeError, match=r"affine_grid: expected theta of shape \(1, 2, 3\)"):
        F.affine_grid(mt.zeros(1, 3, 3), (1, 1, 4, 4), align_corners=False)

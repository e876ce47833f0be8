"""nn.init's orthogonal_, trunc_normal_, eye_, dirac_ and sparse_, and `generator=` (a
minitrain.Generator, as torch's, or a numpy Generator) on every init that draws: the properties
each promises (checked by hand and statistically, seeded, tolerance-wide), shapes and errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import minitrain as mt
from minitrain import nn
from minitrain.errors import ArgumentError, DTypeError, ShapeError
from minitrain.nn import init


@pytest.mark.parametrize("shape", [(3, 7), (7, 3), (5, 5), (4, 2, 3), (6, 2, 2, 2)])
@pytest.mark.parametrize("gain", [1.0, 2.5])
def test_orthogonal_rows_or_columns_are_orthonormal_times_gain(shape, gain):
    weight = init.orthogonal_(mt.empty(*shape, dtype=mt.float64), gain=gain)
    assert weight.shape == shape
    flat = weight.numpy().reshape(shape[0], -1)
    rows, columns = flat.shape
    if rows <= columns:
        assert np.allclose(flat @ flat.T, gain**2 * np.eye(rows))
    else:
        assert np.allclose(flat.T @ flat, gain**2 * np.eye(columns))


def test_orthogonal_is_seeded_by_its_generator_and_differs_between_streams():
    a = init.orthogonal_(mt.empty(4, 4), generator=mt.Generator().manual_seed(1)).numpy()
    b = init.orthogonal_(mt.empty(4, 4), generator=mt.Generator().manual_seed(1)).numpy()
    c = init.orthogonal_(mt.empty(4, 4), generator=mt.Generator().manual_seed(2)).numpy()
    assert np.array_equal(a, b) and not np.allclose(a, c)
    mt.manual_seed(3)
    d = init.orthogonal_(mt.empty(4, 4)).numpy()
    mt.manual_seed(3)
    assert np.array_equal(d, init.orthogonal_(mt.empty(4, 4)).numpy())


def test_orthogonal_errors_and_empty_tensors():
    with pytest.raises(ShapeError, match="orthogonal_: only tensors with 2 or more"):
        init.orthogonal_(mt.empty(5))
    empty = mt.empty(0, 3)
    assert init.orthogonal_(empty) is empty


def test_trunc_normal_stays_in_bounds_with_the_truncated_moments():
    generator = mt.Generator().manual_seed(0)
    mean, std, a, b = 0.5, 2.0, -1.0, 3.0
    values = init.trunc_normal_(mt.empty(200_000, dtype=mt.float64), mean, std, a, b,
                                generator=generator).numpy()  # fmt: skip
    assert values.min() >= a and values.max() <= b
    # the truncated normal's mean and variance, from the standard normal's pdf and cdf
    alpha, beta = (a - mean) / std, (b - mean) / std
    pdf = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda z: 0.5 * (1 + math.erf(z / math.sqrt(2)))  # noqa: E731
    mass = cdf(beta) - cdf(alpha)
    expected_mean = mean + std * (pdf(alpha) - pdf(beta)) / mass
    expected_var = std**2 * (
        1 + (alpha * pdf(alpha) - beta * pdf(beta)) / mass - ((pdf(alpha) - pdf(beta)) / mass) ** 2
    )
    assert abs(values.mean() - expected_mean) < 0.01
    assert abs(values.var() - expected_var) < 0.02


def test_trunc_normal_defaults_and_a_narrow_std():
    mt.manual_seed(0)
    values = init.trunc_normal_(mt.empty(50_000)).numpy()
    assert values.min() >= -2 and values.max() <= 2 and abs(values.mean()) < 0.02
    values = init.trunc_normal_(mt.empty(50_000), std=0.02).numpy()  # the ViT idiom
    assert abs(values.std() - 0.02) < 0.001


def test_trunc_normal_matches_torch_statistically():
    torch = pytest.importorskip("torch")
    theirs = torch.nn.init.trunc_normal_(
        torch.empty(100_000, dtype=torch.float64), 1.0, 1.0, 0.0, 1.5,
        generator=torch.Generator().manual_seed(0),
    ).numpy()  # fmt: skip
    ours = init.trunc_normal_(
        mt.empty(100_000, dtype=mt.float64), 1.0, 1.0, 0.0, 1.5,
        generator=mt.Generator().manual_seed(0),
    ).numpy()  # fmt: skip
    assert abs(ours.mean() - theirs.mean()) < 0.01 and abs(ours.std() - theirs.std()) < 0.01


def test_trunc_normal_errors():
    with pytest.raises(ArgumentError, match="a < b"):
        init.trunc_normal_(mt.empty(3), a=1.0, b=0.0)
    with pytest.raises(ArgumentError, match="std must be positive"):
        init.trunc_normal_(mt.empty(3), std=0.0)
    with pytest.warns(UserWarning, match="more than 2 std"):
        init.trunc_normal_(mt.empty(3), mean=10.0, std=1.0, a=0.0, b=5.0)


def test_eye_and_dirac_match_torch_and_by_hand():
    assert np.array_equal(init.eye_(mt.empty(2, 3)).numpy(), np.eye(2, 3))
    weight = init.dirac_(mt.empty(4, 2, 3))
    assert weight.numpy()[0, 0, 1] == 1 and weight.numpy()[1, 1, 1] == 1
    assert weight.numpy().sum() == 2
    torch = pytest.importorskip("torch")
    for shape, groups in (((4, 2, 3), 1), ((6, 3, 3, 3), 2), ((4, 4, 2, 3, 3), 2), ((2, 5, 3), 1)):
        expected = torch.nn.init.dirac_(torch.empty(shape), groups).numpy()
        assert np.array_equal(init.dirac_(mt.empty(*shape), groups).numpy(), expected)
    assert np.array_equal(
        init.eye_(mt.empty(4, 2)).numpy(), torch.nn.init.eye_(torch.empty(4, 2)).numpy()
    )


def test_a_dirac_convolution_passes_its_input_through():
    conv = nn.Conv1d(3, 3, 3, padding=1, bias=False)
    init.dirac_(conv.weight)
    x = mt.randn(2, 3, 7)
    assert np.allclose(conv(x).numpy(), x.numpy())


def test_eye_and_dirac_errors():
    with pytest.raises(ShapeError, match="eye_: only tensors with 2 dimensions"):
        init.eye_(mt.empty(2, 2, 2))
    with pytest.raises(ShapeError, match="dirac_: only tensors with 3, 4 or 5"):
        init.dirac_(mt.empty(2, 2))
    with pytest.raises(ArgumentError, match="divisible by groups=3"):
        init.dirac_(mt.empty(4, 2, 3), groups=3)


def test_sparse_zeroes_the_share_of_each_column():
    weight = init.sparse_(mt.empty(10, 6, dtype=mt.float64), 0.25, std=0.5,
                          generator=mt.Generator().manual_seed(0)).numpy()  # fmt: skip
    assert ((weight == 0).sum(axis=0) == math.ceil(0.25 * 10)).all()
    assert 0.2 < weight[weight != 0].std() < 1.0
    with pytest.raises(ShapeError, match="sparse_: only tensors with 2 dimensions"):
        init.sparse_(mt.empty(3), 0.1)
    with pytest.raises(ArgumentError, match="sparsity"):
        init.sparse_(mt.empty(3, 3), 1.5)


@pytest.mark.parametrize(
    "name, kwargs",
    [("uniform_", {}), ("normal_", {}), ("xavier_uniform_", {}), ("xavier_normal_", {}),
     ("kaiming_uniform_", {}), ("kaiming_normal_", {}), ("trunc_normal_", {}),
     ("orthogonal_", {}), ("sparse_", {"sparsity": 0.5})],
)  # fmt: skip
def test_every_drawing_init_takes_a_minitrain_generator(name, kwargs):
    draws = [
        getattr(init, name)(mt.empty(4, 5), generator=mt.Generator().manual_seed(7), **kwargs)
        for _ in range(2)
    ]
    assert np.array_equal(draws[0].numpy(), draws[1].numpy())
    other = getattr(init, name)(mt.empty(4, 5), generator=mt.Generator().manual_seed(8), **kwargs)
    assert not np.array_equal(draws[0].numpy(), other.numpy())
    with pytest.raises(DTypeError, match="generator must be"):
        getattr(init, name)(mt.empty(4, 5), generator=7, **kwargs)


def test_torch_signatures_take_the_same_arguments():
    torch = pytest.importorskip("torch")
    import inspect

    for name in ("trunc_normal_", "orthogonal_", "eye_", "dirac_", "sparse_"):
        theirs = list(inspect.signature(getattr(torch.nn.init, name)).parameters)
        assert list(inspect.signature(getattr(init, name)).parameters) == theirs, name

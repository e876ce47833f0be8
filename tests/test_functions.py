"""PyTorch's top-level functions (minitrain.exp, .sum, .max, ...) and dtype names, against torch."""

from __future__ import annotations

import numpy as np
import pytest

import minitrain as mt
from minitrain.errors import ArgumentError, DTypeError

torch = pytest.importorskip("torch")

# name -> extra arguments after the input, as both libraries take them
CALLS = {
    "abs": (), "exp": (), "log": (), "sqrt": (), "rsqrt": (), "square": (), "reciprocal": (),
    "sin": (), "cos": (), "sign": (), "floor": (), "ceil": (), "trunc": (), "round": (),
    "clamp": (0.7, 1.5), "clip": (0.7, None), "clamp_min": (0.9,), "clamp_max": (1.1,),
    "tril": (), "triu": (1,), "relu": (), "sigmoid": (), "tanh": (), "softmax": (1,),
    "log_softmax": (0,), "sum": (1,), "mean": (), "prod": (0,), "cumsum": (1,), "norm": (),
    "amax": (0,), "amin": (1,), "var": (1,), "std": (), "logsumexp": (1,),
    "reshape": ((4, 3),), "flatten": (), "transpose": (0, 1), "permute": ((1, 0),), "t": (),
    "unsqueeze": (1,), "broadcast_to": ((2, 3, 4),), "tile": ((2, 1),), "flip": ((0,),),
    "clone": (), "pow": (3,),
}  # fmt: skip

MULTI = {"split": (2, 1), "chunk": (2, 0), "unbind": (1,)}


def _pair(seed=0, shape=(3, 4)):
    values = np.random.default_rng(seed).uniform(0.5, 2.0, shape)
    return mt.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_function_matches_torch_in_values_and_gradients(name):
    x, tx = _pair()
    args = CALLS[name]
    y, ty = getattr(mt, name)(x, *args), getattr(torch, name)(tx, *args)
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-12, atol=1e-12)
    upstream = np.random.default_rng(1).standard_normal(ty.shape)
    y.backward(upstream)
    ty.backward(torch.tensor(upstream))
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(MULTI))
def test_functions_returning_pieces_match_torch(name):
    x, tx = _pair()
    pieces = getattr(mt, name)(x, *MULTI[name])
    expected = getattr(torch, name)(tx, *MULTI[name])
    assert len(pieces) == len(expected)
    for piece, reference in zip(pieces, expected, strict=True):
        np.testing.assert_array_equal(piece.numpy(), reference.detach().numpy())


def test_max_and_min_take_torch_three_forms():
    x, tx = _pair()
    other, t_other = _pair(seed=2)
    for name in ("max", "min"):
        f, tf = getattr(mt, name), getattr(torch, name)
        np.testing.assert_array_equal(f(x).numpy(), tf(tx).detach().numpy())
        values, indices = f(x, 1)
        t_values, t_indices = tf(tx, 1)
        np.testing.assert_array_equal(values.numpy(), t_values.detach().numpy())
        np.testing.assert_array_equal(indices.numpy(), t_indices.numpy())
        kept = f(x, dim=0, keepdim=True)
        assert kept.values.shape == tuple(tf(tx, dim=0, keepdim=True).values.shape)
        np.testing.assert_array_equal(f(x, other).numpy(), tf(tx, t_other).detach().numpy())


def test_reductions_take_torch_keywords():
    x, tx = _pair()
    np.testing.assert_allclose(
        mt.sum(x, dim=0, keepdim=True).numpy(), torch.sum(tx, dim=0, keepdim=True).detach()
    )
    np.testing.assert_array_equal(mt.argmax(x, dim=1).numpy(), torch.argmax(tx, dim=1).numpy())
    np.testing.assert_array_equal(mt.all(x > 1).numpy(), torch.all(tx > 1).numpy())
    np.testing.assert_array_equal(mt.any(x > 1, 1).numpy(), torch.any(tx > 1, 1).numpy())


def test_pow_takes_a_number_base_as_torch_does():
    x, tx = _pair()
    np.testing.assert_allclose(mt.pow(2.0, x).numpy(), torch.pow(2.0, tx).detach().numpy())


def test_masked_fill_gather_and_squeeze_match_torch():
    x, tx = _pair()
    mask = np.random.default_rng(3).random((3, 4)) > 0.5
    np.testing.assert_array_equal(
        mt.masked_fill(x, mt.tensor(mask), -1.0).numpy(),
        torch.masked_fill(tx, torch.tensor(mask), -1.0).detach().numpy(),
    )
    index = np.array([[0, 3], [1, 1], [2, 0]])
    np.testing.assert_array_equal(
        mt.gather(x, 1, mt.tensor(index)).numpy(),
        torch.gather(tx, 1, torch.tensor(index)).detach().numpy(),
    )
    y = mt.unsqueeze(x, 0)
    assert mt.squeeze(y).shape == (3, 4) and mt.squeeze(y, 0).shape == (3, 4)


def test_detach_numel_is_tensor():
    x, _ = _pair()
    assert not mt.detach(x).requires_grad and mt.numel(x) == 12
    assert mt.is_tensor(x) and not mt.is_tensor(x.numpy())


def test_from_numpy_shares_memory_and_keeps_the_dtype():
    array = np.arange(6.0).reshape(2, 3)
    x = mt.from_numpy(array)
    array[0, 0] = 42.0
    assert x.dtype == np.float64 and x.numpy()[0, 0] == 42.0
    with pytest.raises(DTypeError, match="from_numpy: expected a numpy array, got list"):
        mt.from_numpy([1.0, 2.0])


def test_a_non_tensor_input_names_the_function():
    with pytest.raises(DTypeError, match=r"minitrain\.exp: input must be a Tensor, got list"):
        mt.exp([1.0, 2.0])
    with pytest.raises(DTypeError, match=r"minitrain\.max: input must be a Tensor, got ndarray"):
        mt.max(np.ones(3), 0)


@pytest.mark.parametrize(
    "name", ["float", "double", "half", "long", "int", "short", "int8", "int16", "uint8", "bool"]
)
def test_dtype_names_mean_what_torch_means(name):
    expected = torch.empty(0, dtype=getattr(torch, name)).numpy().dtype
    assert np.dtype(getattr(mt, name)) == expected
    assert mt.zeros(2, dtype=getattr(mt, name)).dtype == expected


def test_every_public_function_is_tested():
    tested = set(CALLS) | set(MULTI) | {"max", "min", "argmax", "argmin", "all", "any"}
    tested |= {"masked_fill", "gather", "squeeze", "detach", "numel", "is_tensor", "from_numpy"}
    dtypes = {"float", "double", "half", "long", "int", "short", "int8", "int16", "uint8", "bool"}
    assert set(mt.functions.__all__) == tested | dtypes


@pytest.mark.parametrize(
    "args, keywords",
    [((1, False), {}), ((1, True), {}), ((False,), {}), ((), {"unbiased": False}),
     ((0, True, True), {}), ((1,), {"correction": 0}), ((1,), {"keepdim": True}), ((), {})],
)  # fmt: skip
def test_var_and_std_take_torch_unbiased_positionally(args, keywords):
    x, tx = _pair(shape=(3, 5))
    for name in ("var", "std"):
        value = getattr(mt, name)(x, *args, **keywords)
        expected = getattr(torch, name)(tx, *args, **keywords)
        assert value.shape == tuple(expected.shape)
        np.testing.assert_allclose(value.numpy(), expected.detach().numpy(), rtol=1e-12)


def test_a_bool_dim_is_refused_as_torch_refuses_it():
    x, _ = _pair()
    for call in (lambda: mt.sum(x, True), lambda: mt.mean(x, False), lambda: x.max(True)):
        with pytest.raises(DTypeError, match="dim must be an int or a tuple of ints, got"):
            call()


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_along_a_dim_sends_the_gradient_to_the_index_it_returns(name):
    values = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0], [np.nan, 1.0, np.nan]])
    for dim in (0, 1):
        for keepdim in (False, True):
            x = mt.tensor(values, requires_grad=True)
            tx = torch.tensor(values, requires_grad=True)
            picked, indices = getattr(mt, name)(x, dim, keepdim)
            t_picked, t_indices = getattr(torch, name)(tx, dim, keepdim)
            np.testing.assert_array_equal(indices.numpy(), t_indices.numpy())
            upstream = np.arange(1.0, 1 + t_picked.numel()).reshape(t_picked.shape)
            picked.backward(upstream)
            t_picked.backward(torch.tensor(upstream))
            np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


def test_max_of_two_tensors_checks_its_arguments():
    x, _ = _pair()
    with pytest.raises(DTypeError, match=r"minitrain\.max: input must be a Tensor"):
        mt.max(np.ones((3, 4)), x)
    with pytest.raises(ArgumentError, match=r"minitrain\.min: keepdim goes with a dim"):
        mt.min(x, x, True)


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "logsumexp"])
@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int64])
def test_integer_input_computes_in_float32_as_torch(name, dtype):
    values = np.array([1, 2, 3, 1]).astype(dtype)
    result = getattr(mt, name)(mt.tensor(values))
    expected = getattr(torch, name)(torch.tensor(values), *((0,) if name == "logsumexp" else ()))
    assert result.dtype == expected.numpy().dtype == np.float32
    np.testing.assert_allclose(result.numpy(), expected.numpy(), rtol=1e-6)

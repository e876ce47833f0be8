"""PyTorch's top-level functions (minitrain.exp, .sum, .max, ...) and dtype names, against torch."""

from __future__ import annotations

import inspect
import pathlib
import re

import numpy as np
import pytest
from parameter_names import parameter_names, torch_parameter_names
from reference import torch

import minitrain as mt
from minitrain.errors import ArgumentError, DTypeError
from minitrain.ops.core.variants import declared

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


def _pair(seed=0, shape=(3, 4), dtype=np.float64):
    values = np.random.default_rng(seed).uniform(0.5, 2.0, shape).astype(dtype)
    return mt.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)


def _assert_same(y, ty, x, tx, rtol=1e-12, grad_rtol=1e-10, grad_atol=1e-12):
    """y and ty (of x and tx) agree in dtype and value, and so do x's and tx's gradients."""
    assert y.dtype == ty.detach().numpy().dtype
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=rtol, atol=rtol)
    upstream = np.random.default_rng(1).standard_normal(ty.shape)
    y.backward(upstream.astype(y.dtype))
    ty.backward(torch.tensor(upstream, dtype=ty.dtype))
    assert x.grad.dtype == tx.grad.numpy().dtype
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=grad_rtol, atol=grad_atol)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_function_matches_torch_in_values_and_gradients(name):
    x, tx = _pair()
    args = CALLS[name]
    _assert_same(getattr(mt, name)(x, *args), getattr(torch, name)(tx, *args), x, tx)


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


# The top-level functions whose values (and gradients) are checked against torch in the test
# file of their ops, each named there
TESTED_ELSEWHERE = {
    "ops/test_transcendental.py": [


        "floor_divide",
        "remainder",
    ],
    "ops/test_predicates.py": [
        "bitwise_and", "bitwise_left_shift", "bitwise_or",
        "bitwise_right_shift", "bitwise_xor", "equal",

    ],
    "ops/test_sorting_and_statistics.py": [
        "cummax", "cummin", "cumprod",
        "logcumsumexp", "std_mean", "var_mean",
    ],
    "ops/test_scatter.py": [


    ],
    "ops/test_rearrange.py": ["einsum"],
    "nn/test_resampling_and_similarity.py": [
        "cosine_similarity", "pairwise_distance", "pixel_shuffle", "pixel_unshuffle",
    ],
    "tensor/test_pytorch_spellings.py": [
        "mul", "multiply", "true_divide", "neg",
        "negative", "meshgrid",
    ],
}  # fmt: skip


def test_every_public_function_is_tested():
    tested = set(CALLS) | set(MULTI) | {"max", "min", "argmax", "argmin", "all", "any"}
    tested |= {"masked_fill", "gather", "squeeze", "detach", "numel", "is_tensor", "from_numpy"}
    tests = pathlib.Path(__file__).resolve().parents[1]
    for path, names in TESTED_ELSEWHERE.items():
        text = (tests / path).read_text()
        unnamed = [n for n in names if not re.search(rf"\b{n}\b", text)]
        assert not unnamed, f"{path} does not test {unnamed}"
        tested |= set(names)
    dtypes = {"float", "double", "half", "long", "int", "short", "int8", "int16", "uint8", "bool"}
    declared_functions = {name for v in declared() for name in v.functions}
    assert set(mt.functions.__all__) == tested | dtypes | declared_functions  # (their test:
    # tests/tensor/test_declared_variants.py)


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
    with pytest.raises(ArgumentError, match=r"min: keepdim goes with a dim"):
        mt.min(x, x, True)


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "logsumexp"])
@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int64])
def test_integer_input_computes_in_float32_as_torch(name, dtype):
    values = np.array([1, 2, 3, 1]).astype(dtype)
    result = getattr(mt, name)(mt.tensor(values))
    expected = getattr(torch, name)(torch.tensor(values), *((0,) if name == "logsumexp" else ()))
    assert result.dtype == expected.numpy().dtype == np.float32
    np.testing.assert_allclose(result.numpy(), expected.numpy(), rtol=1e-6)


# PyTorch's parameter names


def _by_name(name, x, tx, args):
    """The arguments of `minitrain.<name>(x, *args)` by the names minitrain's signature gives
    them, for minitrain and (tx in x's place) for torch."""
    keywords = inspect.signature(getattr(mt, name)).bind(x, *args).arguments
    first = next(iter(keywords))
    return keywords, {**keywords, first: tx}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_every_argument_passes_by_torchs_keyword(torch, name):
    """All the arguments by name, the input too: torch takes minitrain's names, and agrees."""
    x, tx = _pair()
    keywords, t_keywords = _by_name(name, x, tx, CALLS[name])
    _assert_same(getattr(mt, name)(**keywords), getattr(torch, name)(**t_keywords), x, tx)


@pytest.mark.parametrize("name", sorted(MULTI))
def test_pieces_by_torchs_keywords_match_torch(torch, name):
    x, tx = _pair()
    keywords, t_keywords = _by_name(name, x, tx, MULTI[name])
    pieces, expected = getattr(mt, name)(**keywords), getattr(torch, name)(**t_keywords)
    assert len(pieces) == len(expected)
    weights = [np.random.default_rng(i).standard_normal(p.shape) for i, p in enumerate(expected)]
    sum((p * mt.tensor(w)).sum() for p, w in zip(pieces, weights, strict=True)).backward()
    sum((p * torch.tensor(w)).sum() for p, w in zip(expected, weights, strict=True)).backward()
    for piece, reference in zip(pieces, expected, strict=True):
        np.testing.assert_array_equal(piece.numpy(), reference.detach().numpy())
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)


# the calls a PyTorch user writes, with torch's keywords: (name, the input's dtype, keywords),
# dtype in numpy's spelling; the input goes by name too
KEYWORD_CALLS = [
    ("pow", np.float64, {"exponent": 2}),
    ("pow", np.float64, {"exponent": 0.5}),
    ("reshape", np.float64, {"shape": (2, 6)}),
    ("reshape", np.float64, {"shape": [-1]}),
    ("permute", np.float64, {"dims": (1, 0)}),
    ("broadcast_to", np.float64, {"size": (2, 3, 4)}),
    ("tile", np.float64, {"dims": (1, 2)}),
    ("flip", np.float64, {"dims": (0, 1)}),
    ("sum", np.float32, {"dtype": np.float64}),
    ("sum", np.float32, {"dim": 0, "keepdim": True, "dtype": np.float64}),
    ("sum", np.float64, {"dim": (0, 1), "dtype": np.float32}),
    ("mean", np.float32, {"dtype": np.float64}),
    ("mean", np.float32, {"dim": 1, "keepdim": True, "dtype": np.float64}),
    ("prod", np.float32, {"dtype": np.float64}),
    ("prod", np.float32, {"dim": 1, "keepdim": True, "dtype": np.float64}),
    ("cumsum", np.float32, {"dim": 1, "dtype": np.float64}),
    ("cumsum", np.float64, {"dim": 0, "dtype": np.float32}),
    ("softmax", np.float32, {"dim": 1, "dtype": np.float64}),
    ("softmax", np.float64, {"dim": 0, "dtype": np.float32}),
    ("log_softmax", np.float32, {"dim": 0, "dtype": np.float64}),
    ("log_softmax", np.float64, {"dim": 1, "dtype": np.float32}),
]


def _torch_dtype(dtype):
    return torch.from_numpy(np.empty(0, dtype)).dtype


@pytest.mark.parametrize(
    "name, dtype, keywords",
    KEYWORD_CALLS,
    ids=[f"{name}-{np.dtype(dtype)}-{'-'.join(kw)}" for name, dtype, kw in KEYWORD_CALLS],
)
def test_torchs_keywords_match_torch(torch, name, dtype, keywords):
    """dtype casts the input first, in the graph: the values come in dtype and the gradient
    comes back in the input's, as in torch."""
    x, tx = _pair(dtype=dtype)
    t_keywords = {
        key: _torch_dtype(value) if key == "dtype" else value for key, value in keywords.items()
    }
    y, ty = getattr(mt, name)(input=x, **keywords), getattr(torch, name)(input=tx, **t_keywords)
    rtol = 1e-6 if np.float32 in (dtype, keywords.get("dtype")) else 1e-12
    # a float32 gradient that cancels (log_softmax's dy - exp(y) * sum(dy), terms near 1) keeps
    # float32's absolute rounding, ~1e-7, whatever its size: two float32 kernels agree to
    # that, not to 1e-6 of a small result (the values are compared so too, atol=rtol)
    _assert_same(y, ty, x, tx, rtol=rtol, grad_rtol=max(rtol, 1e-10), grad_atol=rtol)


def test_split_takes_torchs_keywords(torch):
    x, tx = _pair(shape=(5, 4))
    for keywords in [
        {"split_size_or_sections": 2, "dim": 0},
        {"split_size_or_sections": [1, 3], "dim": 1},
        {"split_size_or_sections": [4, 1]},
    ]:
        pieces = mt.split(tensor=x, **keywords)
        expected = torch.split(tensor=tx, **keywords)
        assert [p.shape for p in pieces] == [tuple(p.shape) for p in expected]
        for piece, reference in zip(pieces, expected, strict=True):
            np.testing.assert_array_equal(piece.numpy(), reference.detach().numpy())


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "cumsum", "softmax", "log_softmax"])
def test_dtype_is_a_floating_numpy_dtype_or_int64_for_sums(torch, name):
    """Other integer dtypes and bool are refused: minitrain's sums and products of integers
    come out int64, where torch keeps the dtype asked for (torch's mean and softmax refuse them,
    and int64 too)."""
    x, _ = _pair()
    f = getattr(mt, name)
    keeps_int64 = name in ("sum", "prod", "cumsum")
    for dtype in (np.int32, np.uint8, np.bool_) + (() if keeps_int64 else (np.int64,)):
        with pytest.raises(DTypeError, match=rf"^{name}: dtype must be a floating"):
            f(x, 0, dtype=dtype)
    with pytest.raises(DTypeError, match=rf"^{name}: dtype must be a numpy dtype"):
        f(x, 0, dtype=torch.float64)
    assert f(x, 0, dtype="float32").dtype == np.float32
    assert f(x, 0, dtype=None).dtype == np.float64


@pytest.mark.parametrize("name", ["sum", "prod", "cumsum"])
def test_sums_take_int64_as_torch(torch, name):
    """dtype=int64 truncates a float input first, or counts a mask, outside the graph; an
    input that requires grad is refused while gradients are recorded, as torch refuses it."""
    values = np.array([[0.5, 2.7, -1.9], [3.2, 1.0, -0.2]])
    for array in (values, values > 1):
        x = mt.tensor(array)
        for keywords in ({"dim": 1}, {"dim": 0}) + (() if name == "cumsum" else ({},)):
            y = getattr(mt, name)(x, **keywords, dtype=np.int64)
            expected = getattr(torch, name)(torch.tensor(array), **keywords, dtype=torch.int64)
            assert y.dtype == np.int64 and not y.requires_grad
            np.testing.assert_array_equal(y.numpy(), expected.numpy())
    x, tx = mt.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    with pytest.raises(RuntimeError, match="Autograd not support dtype: Long"):
        getattr(torch, name)(tx, 0, dtype=torch.int64)
    with pytest.raises(DTypeError, match=rf"^{name}: dtype int64 has no gradient"):
        getattr(mt, name)(x, 0, dtype=np.int64)
    with torch.no_grad():
        expected = getattr(torch, name)(tx, 0, dtype=torch.int64)
    with mt.no_grad():
        np.testing.assert_array_equal(getattr(mt, name)(x, 0, dtype=np.int64).numpy(), expected)


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_and_min_take_the_second_tensor_as_other(torch, name):
    x, tx = _pair()
    other, t_other = _pair(seed=2)
    y = getattr(mt, name)(input=x, other=other)
    ty = getattr(torch, name)(input=tx, other=t_other)
    _assert_same(y, ty, x, tx)
    np.testing.assert_array_equal(other.grad.numpy(), t_other.grad.numpy())
    with pytest.raises(ArgumentError, match=rf"{name}: give a dim or a second"):
        getattr(mt, name)(x, 0, other=other)
    with pytest.raises(ArgumentError, match=rf"{name}: other given twice"):
        getattr(mt, name)(x, other, other=other)


@pytest.mark.parametrize(
    "name, call",
    [
        ("sum", lambda v: mt.sum(v, dtype=np.float64)),
        ("softmax", lambda v: mt.softmax(v, 0, dtype=np.float64)),
        ("cumsum", lambda v: mt.cumsum(input=v, dim=0)),
        ("reshape", lambda v: mt.reshape(v, shape=(2,))),
        ("permute", lambda v: mt.permute(v, (0,))),
        ("broadcast_to", lambda v: mt.broadcast_to(v, size=(2, 2))),
        ("tile", lambda v: mt.tile(v, (2,))),
        ("flip", lambda v: mt.flip(v, dims=(0,))),
        ("split", lambda v: mt.split(v, 1)),
        ("min", lambda v: mt.min(v, other=mt.ones(2))),
        ("round", lambda v: mt.round(input=v, decimals=1)),
    ],
)
def test_a_non_tensor_input_names_the_function_and_argument(name, call):
    argument = "tensor" if name == "split" else "input"
    with pytest.raises(DTypeError, match=rf"^minitrain\.{name}: {argument} must be a Tensor, got"):
        call([1.0, 2.0])


# torch's parameters are read from its docstrings (parameter_names.torch_parameter_names).
# Where that first line does not tell: torch's overloads (sum(input, *, dtype) beside
# sum(input, dim, keepdim, *, dtype): minitrain takes the second), torch's docstring lagging its
# binding (softmax's dtype is positional there), no docstring at all (relu, clamp_min, selu,
# celu, spmm), and one difference left (norm takes no dtype).
OVERLOADED = {
    "all": "input, dim, keepdim",
    "any": "input, dim, keepdim",
    "argmax": "input, dim, keepdim",
    "broadcast_to": "input, size",
    "celu": "input, alpha",
    "clamp_max": "input, max",
    "clamp_min": "input, min",
    "detach": "input",
    "log_softmax": "input, dim, dtype",
    "masked_fill": "input, mask, value",
    "masked_scatter": "input, mask, source",
    "max": "input, dim, keepdim, *, other",
    "mean": "input, dim, keepdim, *, dtype",
    "median": "input, dim, keepdim",
    "min": "input, dim, keepdim, *, other",
    "norm": "input, p, dim, keepdim",
    "prod": "input, dim, keepdim, *, dtype",
    "relu": "input",
    "scatter": "input, dim, index, src, *, value, reduce",
    "selu": "input",
    "softmax": "input, dim, dtype",
    "spmm": "input, mat2",  # no docstring; torch.spmm(input, mat2) is mm's
    "std": "input, dim, unbiased, keepdim, *, correction",
    "std_mean": "input, dim, unbiased, keepdim, *, correction",
    "sum": "input, dim, keepdim, *, dtype",
    "var": "input, dim, unbiased, keepdim, *, correction",
    "var_mean": "input, dim, unbiased, keepdim, *, correction",
}  # fmt: skip
FUNCTIONS = sorted(n for n in mt.functions.__all__ if inspect.isfunction(getattr(mt, n)))


@pytest.mark.parametrize("name", FUNCTIONS)
def test_parameter_names_are_torchs(torch, name):
    expected = OVERLOADED.get(name) or torch_parameter_names(getattr(torch, name))
    assert parameter_names(getattr(mt, name)) == expected


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_takes_dtype_after_dim_positionally_as_torch_runs_it(torch, name):
    x, tx = _pair()
    y = getattr(mt, name)(x, 1, np.float32)
    expected = getattr(torch, name)(tx, 1, torch.float32)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y.numpy(), expected.detach().numpy(), rtol=1e-6)

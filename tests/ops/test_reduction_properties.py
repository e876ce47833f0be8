"""Property tests of the reductions, scans and sorts against PyTorch, with hypothesis drawing the
inputs: shapes from 0-d and empty up to 3 dims, float32 and float64 with every value a float can
hold (nan, infinities, signed zeros, subnormals, huge magnitudes), int32, int64 and bool where
the op takes them, every dim (an int, a tuple of dims, or none), keepdim or not.

Forward: where PyTorch raises (a dim out of range, an empty dim a max cannot reduce), minitrain
raises too, one of its own errors or the builtin PyTorch raises; where PyTorch computes, the same
shape, dtype, nan and infinity pattern and values, and indices that are PyTorch's wherever they
are defined (ties broken the same way: the first in order; a stable sort's order). Backward, on
finite float64 inputs without ties: the same first and second derivatives. How many examples
each property draws is the hypothesis profile's (tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

import minitrain as mt  # noqa: E402
from minitrain.errors import MinitrainError  # noqa: E402

# inf and nan are what these tests feed in (silent in minitrain's kernels and in numpy's ndarray
# methods they call: runtime/float_warnings.py); PyTorch's var of one element warns of its
# degrees of freedom, as minitrain does not
pytestmark = [
    pytest.mark.filterwarnings("ignore::RuntimeWarning:minitrain"),
    pytest.mark.filterwarnings("ignore::RuntimeWarning:numpy"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
]

FLOATS = (np.float32, np.float64)
INTEGERS = (np.int32, np.int64, np.bool_)


def _reduce(name: str, **options) -> Callable:
    """name(t) without a dim, name(t, dim=, keepdim=) with one, on minitrain or torch alike."""

    def call(lib, t, dim, keepdim):
        function = getattr(lib, name)
        if dim is None:
            return function(t, **options)
        return function(t, dim=dim, keepdim=keepdim, **options)

    return call


def _along(name: str, **options) -> Callable:
    """A scan or sort: name(t, dim, **options); keepdim is unused (a sort's `descending`)."""

    def call(lib, t, dim, keepdim):
        if name in ("sort", "argsort"):
            options["descending"] = keepdim
        return getattr(lib, name)(t, dim=dim, **options)

    return call


@dataclass(frozen=True)
class Reduction:
    call: Callable  # (lib, tensor, dim, keepdim) -> tensor or tuple of tensors
    dims: str = "many"  # "many": None, an int or a tuple; "one": None or an int; "int": an int
    dtypes: tuple = FLOATS
    gradient: bool = True  # differentiable (checked on finite inputs without ties)


REDUCTIONS = {
    "sum": Reduction(_reduce("sum"), dtypes=FLOATS + INTEGERS),
    "mean": Reduction(_reduce("mean")),
    "prod": Reduction(_reduce("prod"), dims="one", dtypes=FLOATS + INTEGERS),
    "var": Reduction(_reduce("var")),
    "std": Reduction(_reduce("std")),
    "var_mean": Reduction(_reduce("var_mean")),
    "std_mean": Reduction(_reduce("std_mean")),
    "logsumexp": Reduction(_reduce("logsumexp"), dims="many_required"),
    "amax": Reduction(_reduce("amax"), dtypes=FLOATS + INTEGERS),
    "amin": Reduction(_reduce("amin"), dtypes=FLOATS + INTEGERS),
    "norm": Reduction(_reduce("norm", p=2)),
    "norm_1": Reduction(_reduce("norm", p=1)),
    "norm_inf": Reduction(_reduce("norm", p=float("inf"))),
    "max": Reduction(_reduce("max"), dims="one", dtypes=FLOATS + INTEGERS),
    "min": Reduction(_reduce("min"), dims="one", dtypes=FLOATS + INTEGERS),
    "median": Reduction(_reduce("median"), dims="one", dtypes=FLOATS + INTEGERS[:2]),
    "aminmax": Reduction(
        lambda lib, t, dim, keepdim: lib.aminmax(t, dim=dim, keepdim=keepdim),
        dims="one",
        dtypes=FLOATS + INTEGERS[:2],
        gradient=False,
    ),
    "argmax": Reduction(
        _reduce("argmax"), dims="one", dtypes=FLOATS + INTEGERS[:2], gradient=False
    ),
    "argmin": Reduction(
        _reduce("argmin"), dims="one", dtypes=FLOATS + INTEGERS[:2], gradient=False
    ),
    "all": Reduction(_reduce("all"), dims="one", dtypes=FLOATS + INTEGERS, gradient=False),
    "any": Reduction(_reduce("any"), dims="one", dtypes=FLOATS + INTEGERS, gradient=False),
    "count_nonzero": Reduction(
        lambda lib, t, dim, keepdim: lib.count_nonzero(t, dim=dim),
        dtypes=FLOATS + INTEGERS,
        gradient=False,
    ),
    "kthvalue": Reduction(
        lambda lib, t, dim, keepdim: lib.kthvalue(t, 1, dim=dim, keepdim=keepdim),
        dims="int",
        dtypes=FLOATS + INTEGERS[:2],
    ),
    "quantile": Reduction(
        lambda lib, t, dim, keepdim: lib.quantile(t, 0.3, dim=dim, keepdim=keepdim), dims="one"
    ),
    "cumsum": Reduction(_along("cumsum"), dims="int", dtypes=FLOATS + INTEGERS),
    "cumprod": Reduction(_along("cumprod"), dims="int", dtypes=FLOATS + INTEGERS[:2]),
    "logcumsumexp": Reduction(_along("logcumsumexp"), dims="int"),
    "cummax": Reduction(_along("cummax"), dims="int", dtypes=FLOATS + INTEGERS[:2]),
    "cummin": Reduction(_along("cummin"), dims="int", dtypes=FLOATS + INTEGERS[:2]),
    "sort": Reduction(_along("sort", stable=True), dims="int", dtypes=FLOATS + INTEGERS[:2]),
    "argsort": Reduction(
        _along("argsort", stable=True), dims="int", dtypes=FLOATS + INTEGERS[:2], gradient=False
    ),
    "topk": Reduction(
        lambda lib, t, dim, keepdim: lib.topk(t, 1, dim=dim, largest=keepdim), dims="int"
    ),
}

# Where PyTorch's index is not fixed by its documentation, minitrain's is checked by what it
# picks (the input at it is the value) rather than against PyTorch's: the first of the ties.
FREE_INDICES = {"topk", "median", "kthvalue"}


def _elements(dtype, finite: bool):
    if dtype == np.bool_:
        return st.booleans()
    if np.dtype(dtype).kind == "i":
        return st.integers(-4, 4)  # small: ties, zeros, and products that do not overflow
    width = 32 if dtype == np.float32 else 64
    if finite:  # distinct values with probability ~1, away from the kinks at 0
        return st.floats(-4, 4, width=width, allow_subnormal=False).filter(lambda v: abs(v) > 1e-2)
    return st.floats(width=width, allow_nan=True, allow_infinity=True, allow_subnormal=True)


def _dims(kind: str, ndim: int):
    one = st.integers(-max(ndim, 1) - 1, max(ndim, 1))  # one past each end: PyTorch's error
    if kind == "int":
        return one
    if kind == "one":
        return st.one_of(st.none(), one)
    every = st.just(tuple(range(ndim)))
    some = st.lists(st.integers(-ndim, ndim - 1), min_size=1, max_size=ndim).map(tuple)
    if kind == "many_required":
        return st.one_of(one, every, some) if ndim else one
    return st.one_of(st.none(), one, every, some) if ndim else st.one_of(st.none(), one)


def _cases(reduction: Reduction, dtype, finite: bool, min_side: int = 0):
    shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=min_side, max_side=4)

    def with_dim(shape):
        values = hnp.arrays(dtype, shape, elements=_elements(dtype, finite))
        return st.tuples(values, _dims(reduction.dims, len(shape)), st.booleans())

    return shapes.flatmap(with_dim)


def _outputs(result) -> list:
    return list(result) if isinstance(result, tuple) else [result]


def _assert_values_like(ours, theirs, inputs, name: str) -> None:
    """Shape, dtype, where nan and infinities fall (with their signs), and the rest to float
    rounding: a few ulps of the sum of the magnitudes reduced (what a different summation order
    can change), relative for the products."""
    theirs = theirs.detach().numpy()
    ours = ours.detach().numpy()
    assert ours.shape == theirs.shape, f"{name}: shape {ours.shape} against {theirs.shape}"
    assert ours.dtype == theirs.dtype, f"{name}: dtype {ours.dtype} against {theirs.dtype}"
    if ours.dtype.kind != "f":
        np.testing.assert_array_equal(ours, theirs, err_msg=name)
        return
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs), err_msg=f"{name}: nan")
    np.testing.assert_array_equal(
        np.where(np.isinf(ours), np.sign(ours), 0),
        np.where(np.isinf(theirs), np.sign(theirs), 0),
        err_msg=f"{name}: infinities",
    )
    finite = np.isfinite(ours) & np.isfinite(theirs)
    info = np.finfo(ours.dtype)
    with np.errstate(all="ignore"):
        magnitude = np.abs(inputs.astype(np.float64))
        scale = np.nansum(np.where(np.isfinite(magnitude), magnitude, 0)) if inputs.size else 0.0
        allowed = 1e-5 if ours.dtype == np.float32 else 1e-12
        allowed = allowed * np.abs(theirs[finite]) + 16 * info.eps * scale + 1e3 * info.tiny
        error = np.abs(ours[finite].astype(np.float64) - theirs[finite])
    assert np.all(error <= allowed), f"{name}: {ours[finite]} against {theirs[finite]}"


def _assert_like_torch(name: str, ours, theirs, values, dim, keepdim) -> None:
    ours, theirs = _outputs(ours), _outputs(theirs)
    assert len(ours) == len(theirs), name
    for our, their in zip(ours, theirs, strict=True):
        if name in FREE_INDICES and our is ours[-1] and len(ours) == 2:
            continue  # checked through the values they pick, below
        _assert_values_like(our, their, values, name)
    if name in FREE_INDICES and len(ours) == 2:
        _assert_indices_pick_values(ours, theirs, values, dim, keepdim, name)


def _assert_indices_pick_values(ours, theirs, values, dim, keepdim, name: str) -> None:
    """The input at each returned index (along dim; the last by default) is the value returned,
    nan where it is nan."""
    picked, at = ours[0].numpy(), ours[1].numpy()
    assert at.shape == tuple(theirs[1].shape) and at.dtype == np.int64, name
    if not values.ndim or not at.size:
        return
    dim = -1 if dim is None else dim
    if not keepdim and name != "topk":  # topk keeps the dim (its k)
        picked, at = np.expand_dims(picked, dim), np.expand_dims(at, dim)
    taken = np.take_along_axis(values, at, axis=dim)
    np.testing.assert_array_equal(taken, picked, err_msg=f"{name}: indices")


# What minitrain may raise where PyTorch refuses the input (never an internal error such as an
# AttributeError, a KeyError or numpy's own AxisError without minitrain's message).
REFUSALS = (MinitrainError, TypeError, ValueError, IndexError, RuntimeError)


def _refused_where_torch_is_not_right(name: str, values, dim) -> bool:
    """Where PyTorch returns a value minitrain refuses, rightly: a dim out of range, which
    PyTorch's scans let pass on an empty tensor; the median of an empty integer tensor, which
    PyTorch gives as its dtype's least value (there is none: a float one's is nan)."""
    if isinstance(dim, int) and not -max(values.ndim, 1) <= dim < max(values.ndim, 1):
        return True
    return name == "median" and dim is None and not values.size and values.dtype.kind != "f"


def _forward(name: str, reduction: Reduction, torch, values, dim, keepdim) -> None:
    try:
        theirs = reduction.call(torch, torch.tensor(values), dim, keepdim)
        if _refused_where_torch_is_not_right(name, values, dim):
            with pytest.raises(MinitrainError):
                reduction.call(mt, mt.tensor(values), dim, keepdim)
            return
    except (RuntimeError, IndexError, ValueError, TypeError) as refused:
        with pytest.raises(REFUSALS) as raised:
            reduction.call(mt, mt.tensor(values), dim, keepdim)
        assert not isinstance(raised.value, (KeyError, np.exceptions.AxisError)) or isinstance(
            raised.value, MinitrainError
        ), f"{name}: {raised.value!r} where PyTorch said {refused}"
        return
    ours = reduction.call(mt, mt.tensor(values), dim, keepdim)
    _assert_like_torch(name, ours, theirs, values, dim, keepdim)


SAMPLES = [(name, np.dtype(dtype)) for name in REDUCTIONS for dtype in REDUCTIONS[name].dtypes]


@pytest.mark.parametrize("name, dtype", SAMPLES, ids=[f"{n}-{d}" for n, d in SAMPLES])
def test_forward_on_every_value_and_dim_matches_torch(name, dtype, torch):
    reduction = REDUCTIONS[name]

    @given(_cases(reduction, dtype.type, finite=False))
    def check(case):
        _forward(name, reduction, torch, *case)

    check()


def _output_shape(values, dim, keepdim, name, reduction, torch):
    """The shape of the (first) output where the case has a derivative PyTorch computes: no
    error, a float output, and no ties where the op picks an element (ties split or pick the
    gradient as each library chooses); None where not."""
    if len(np.unique(values)) < values.size and name not in ("sum", "mean", "cumsum"):
        return None
    try:
        out = _outputs(reduction.call(torch, torch.tensor(values), dim, keepdim))[0]
    except (RuntimeError, IndexError, ValueError, TypeError):
        return None
    if not out.is_floating_point() or not out.numel() or not torch.isfinite(out).all():
        return None  # var of one value is nan: no derivative to compare
    return tuple(out.shape)


@pytest.mark.parametrize("name", sorted(n for n, r in REDUCTIONS.items() if r.gradient))
def test_first_and_second_derivatives_match_torch(name, torch):
    """d(out . v)/dx, and the second derivative along w: d((d(out . v)/dx) . w)/dx, as
    PyTorch's, for random v and w."""
    reduction = REDUCTIONS[name]

    @given(_cases(reduction, np.float64, finite=True, min_side=1), st.randoms())
    def check(case, random):
        values, dim, keepdim = case
        shape = _output_shape(values, dim, keepdim, name, reduction, torch)
        if shape is None:
            return
        rng = np.random.default_rng(random.randrange(2**32))
        v, w = rng.standard_normal(shape), rng.standard_normal(values.shape)
        derivatives = []
        for lib in (mt, torch):
            x = lib.tensor(values, requires_grad=True)
            out = _outputs(reduction.call(lib, x, dim, keepdim))[0]
            (first,) = lib.autograd.grad((out * lib.tensor(v)).sum(), x, create_graph=True)
            if first.requires_grad:
                (second,) = lib.autograd.grad((first * lib.tensor(w)).sum(), x, allow_unused=True)
            else:  # a derivative constant in x (sum, mean): its own derivative is zero
                second = None
            if second is None or getattr(second, "_is_zerotensor", lambda: False)():
                second = np.zeros_like(values)  # PyTorch's ZeroTensor: no numpy of its own
            else:
                second = second.detach().numpy()
            derivatives.append((first.detach().numpy(), second))
        (ours, our_second), (theirs, their_second) = derivatives
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12, err_msg=f"{name}: first")
        np.testing.assert_allclose(
            our_second, their_second, rtol=1e-8, atol=1e-10, err_msg=f"{name}: second"
        )

    check()

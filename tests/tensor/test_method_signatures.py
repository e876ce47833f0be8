"""Tensor's methods against PyTorch's: every method minitrain.Tensor shares with torch.Tensor
takes torch's parameters, by name and in order, as torch's docstring gives them (its first
line: 'add(other, *, alpha=1) -> Tensor'); where that docstring lags torch's own binding, the
names torch's binding takes are checked by calling torch with them. With the top-level
functions' table (test_functions.py), well over 200 of torch's names."""

from __future__ import annotations

import pytest
from parameter_names import parameter_names, torch_parameter_names

import minitrain as mt

torch = pytest.importorskip("torch")

# every public method of minitrain.Tensor that torch.Tensor has too, each checked below: read
# from the class, so that a method an op declares (ops/core/variants.py) is checked the moment
# it exists
METHODS = sorted(
    name
    for name in dir(mt.Tensor)
    if not name.startswith("_")
    and callable(getattr(mt.Tensor, name))
    and hasattr(torch.Tensor, name)
)


def _x():
    return torch.randn(3, 4)


def _y():
    return torch.rand(3, 4) + 1


# Where torch's docstring lags its binding: minitrain's names, and a call proving torch's binding
# takes them
BINDING = {
    **{
        name: ("other", lambda name=name: getattr(_x(), name)(other=_y()))
        for name in ("mul", "multiply", "true_divide", "floor_divide", "fmod", "fmod_", "remainder",
                     "logical_and", "logical_or", "logical_xor")
    },
    "mul_": ("other", lambda: _x().mul_(other=_y())),
    "matmul": ("other", lambda: _x().matmul(other=_y().T)),
    **{
        name: ("other, *, rounding_mode",
               lambda name=name: getattr(_x(), name)(other=_y(), rounding_mode="floor"))
        for name in ("div", "divide", "div_", "divide_")
    },
    **{
        name: ("other",
               lambda name=name: getattr(torch.tensor([1, 2]), name)(other=torch.tensor([3, 1])))
        for name in ("bitwise_and", "bitwise_or", "bitwise_xor")
    },
    "where": ("condition, other", lambda: _x().where(condition=_x() > 0, other=_y())),
    "type_as": ("other", lambda: _x().type_as(other=_y())),
    "masked_scatter": ("mask, source", lambda: _x().masked_scatter(mask=_x() > 0, source=_y())),
    "narrow": ("dim, start, length", lambda: _x().narrow(dim=0, start=0, length=1)),
    "nonzero": ("*, as_tuple", lambda: _x().nonzero(as_tuple=True)),
    **{
        name: ("dim, descending, *, stable",
               lambda name=name: getattr(_x(), name)(dim=1, descending=True, stable=True))
        for name in ("argsort", "sort")
    },
    "softmax": ("dim, dtype", lambda: _x().softmax(dim=1, dtype=torch.float64)),
    # max(dim, keepdim) beside max(other): torch's binding takes `other` by name too
    **{
        name: ("dim, keepdim, *, other", lambda name=name: getattr(_x(), name)(other=_y()))
        for name in ("max", "min")
    },
    "cumsum_": ("dim, *, dtype", lambda: _x().cumsum_(dim=0, dtype=torch.float32)),
    # var(dim, unbiased, keepdim) runs beside var(dim, *, correction, keepdim)
    **{
        name: ("dim, unbiased, keepdim, *, correction",
               lambda name=name: getattr(_x(), name)(1, True, True))
        for name in ("var", "std")
    },
    **{
        name: ("dim, index, src, *, value, reduce",
               lambda name=name: getattr(_x(), name)(
                   dim=0, index=torch.zeros(1, 4, dtype=torch.long), value=1.0))
        for name in ("scatter", "scatter_")
    },
    # dtype keyword-only in torch's binding (its docstrings list it after keepdim)
    **{
        name: ("dim, keepdim, *, dtype",
               lambda name=name: getattr(_x(), name)(dim=1, keepdim=True, dtype=torch.float64))
        for name in ("sum", "prod")
    },
    **{
        name: ("dim, *, dtype", lambda name=name: getattr(_x(), name)(dim=1, dtype=torch.float64))
        for name in ("cumsum", "cumprod")
    },
    **{
        name: ("*, decimals", lambda name=name: getattr(_x(), name)(decimals=2))
        for name in ("round", "round_")
    },
    # the method's docstring says shape, torch.broadcast_to's size: the binding takes size
    "broadcast_to": ("size", lambda: torch.randn(4).broadcast_to(size=(3, 4))),
    # torch's docstring is prose or missing: its binding is called with the names
    "backward": (
        "gradient, retain_graph, create_graph, inputs, *, grad",  # grad: minitrain's alias
        lambda: (_x().requires_grad_() * 2).backward(
            gradient=torch.ones(3, 4), retain_graph=True, create_graph=False, inputs=None
        ),
    ),
    **{name: ("", lambda name=name: getattr(_x(), name)())
       for name in ("detach", "detach_", "relu", "relu_", "is_pinned")},
    # torch's docstring reads atanh_(other): its binding takes nothing
    **{name: ("", lambda name=name: getattr(torch.rand(3), name)())
       for name in ("atanh_", "arctanh_")},
    **{name: ("max", lambda name=name: getattr(_x(), name)(max=1.0))
       for name in ("clamp_max", "clamp_max_")},
    **{name: ("min", lambda name=name: getattr(_x(), name)(min=0.0))
       for name in ("clamp_min", "clamp_min_")},
    # generator is left out of torch's names (parameter_names.TORCH_ONLY): minitrain takes it
    "normal_": ("mean, std, *, generator", lambda: torch.randn(3).normal_(
        mean=0.0, std=1.0, generator=torch.Generator().manual_seed(0))),
    "log_softmax": ("dim, dtype", lambda: _x().log_softmax(dim=1, dtype=torch.float64)),
    "to": ("target, *, device, dtype", lambda: _x().to(torch.float64).to(device="cpu",
                                                                         dtype=torch.float32)),
    # the docstrings say batch2 and other: the bindings take mat2 and tensor
    "bmm": ("mat2", lambda: torch.randn(2, 3, 4).bmm(mat2=torch.randn(2, 4, 5))),
    "dot": ("tensor", lambda: torch.randn(3).dot(tensor=torch.randn(3))),
    # the size given spread out too (new_zeros(2, 3)), as torch's binding takes it
    **{
        name: ("*size, dtype, device, requires_grad",
               lambda name=name: getattr(_x(), name)(
                   2, 3, dtype=torch.float64, device="cpu", requires_grad=False))
        for name in ("new_zeros", "new_ones", "new_empty")
    },
    # non_blocking named, where torch's docstring adds **kwargs (its deprecated async)
    "type": ("dtype, non_blocking", lambda: _x().type(dtype=torch.float64, non_blocking=False)),
    # dims given spread out or as dims=...
    **{
        name: ("*dims, **keywords", lambda name=name: getattr(_x(), name)(dims=(0,)))
        for name in ("flip", "tile")
    },
}  # fmt: skip


def _torch_names(name: str) -> str:
    return torch_parameter_names(getattr(torch.Tensor, name), method=True)


def _our_names(name: str) -> str:
    return parameter_names(getattr(mt.Tensor, name), method=True)


def test_the_table_is_long_and_every_name_is_torchs():
    assert len(METHODS) >= 200 and len(set(METHODS)) == len(METHODS)
    assert all(hasattr(torch.Tensor, name) for name in METHODS)


# where minitrain's parameters still differ from torch's (real PyTorch programs: issue 33)
DIFFERENT = {
    "norm": "no dtype",
    "uniform_": "takes a, b where torch takes from, to",
}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=DIFFERENT[n]))
        if n in DIFFERENT
        else n
        for n in METHODS
    ],
)
def test_method_takes_torchs_parameters(name):
    assert callable(getattr(mt.Tensor, name, None)), f"minitrain.Tensor has no {name}"
    if name in BINDING:
        ours, call = BINDING[name]
        assert _our_names(name) == ours
        call()  # torch's binding takes these names
    else:
        assert _our_names(name) == _torch_names(name)

"""What the ops declare users reach them by (ops/core/variants.py), bound as declared: each
top-level function, Tensor method and in-place twin exists, is the op's function (the method that
very function) or writes its result, and checks its tensor; each nn.functional entry and nn layer
takes PyTorch's parameters, prints as PyTorch's layer and computes its values, gradients and
in-place writes. Read from the declarations: an op that declares a variant is tested here the
moment it does (its values and derivatives: the registry's samples, tests/ops/)."""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest
from parameter_names import torch_parameter_names
from reference import torch

import minitrain as mt
from minitrain import nn
from minitrain.errors import ArgumentError, DTypeError, GraphError
from minitrain.nn import functional as F  # noqa: N812 (PyTorch's idiom)
from minitrain.nn.modules.declared import DeclaredLayer, functional_of, layer_of
from minitrain.ops.core.variants import declared, variants

FUNCTIONS = {name: v.function for v in declared() for name in v.functions}
METHODS = {name: v.function for v in declared() for name in v.methods}
TWINS = {name: v.function for v in declared() for name in v.inplace}


# PyTorch's names of the tensor operands of elementwise ops, the ops that have in-place twins,
# and the values the others take here (by PyTorch's parameter name, so any op can be called)
TENSOR_OPERANDS = {"input", "other", "end", "weight", "exponent", "tensor1", "tensor2"}
VALUES = {"min": 0.7, "max": 1.5, "mask": None, "value": -1.0, "diagonal": 0}


def _arguments(function, seed: int) -> tuple[list, dict]:
    """(positional, keyword) arguments: one (3, 4) float64 tensor in (0.5, 2) for each required
    tensor operand, VALUES' entry for each parameter it names (mask: the tensor's values > 1)."""
    rng = np.random.default_rng(seed)
    positional, keywords = [], {}
    for p in inspect.signature(function).parameters.values():
        if p.name in VALUES:
            keywords[p.name] = VALUES[p.name]
        elif p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            assert p.name in TENSOR_OPERANDS, f"{function.__name__}: give {p.name} a value here"
            positional.append(mt.tensor(rng.uniform(0.5, 2.0, (3, 4))))
    if "mask" in keywords:
        keywords["mask"] = positional[0] > 1
    return positional, keywords


def test_the_declarations_are_bound():
    assert len(declared()) >= 1
    for v in declared():
        assert all(getattr(mt, name).__wrapped__ is v.function for name in v.functions)
        assert all(getattr(mt.Tensor, name) is v.function for name in v.methods)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_a_declared_function_is_its_op_and_refuses_a_non_tensor(name):
    function = getattr(mt, name)
    assert function.__wrapped__ is FUNCTIONS[name]
    assert inspect.signature(function) == inspect.signature(FUNCTIONS[name])
    with pytest.raises(DTypeError, match=rf"minitrain\.{name}: input must be a Tensor"):
        function([1.0, 2.0])


@pytest.mark.parametrize("name", sorted(TWINS))
def test_a_declared_twin_writes_the_result_into_its_tensor(name):
    function = TWINS[name]
    (x, *others), keywords = _arguments(function, 1)
    with np.errstate(invalid="ignore"):  # acos of 2 is nan, in both
        expected = function(x, *others, **keywords).array
        before = x.array
        assert getattr(x, name)(*others, **keywords) is x
    assert x.array is before  # written into the tensor's own memory
    np.testing.assert_array_equal(x.array, expected)
    method = getattr(mt.Tensor, name)
    assert (
        list(inspect.signature(method).parameters)[1:]
        == list(inspect.signature(function).parameters)[1:]
    )
    (leaf, *others), keywords = _arguments(function, 2)
    leaf.requires_grad_()
    with pytest.raises(GraphError, match=name):  # a leaf that requires grad stays as it is
        getattr(leaf, name)(*others, **keywords)


def test_a_declaration_names_the_tensor_input_and_is_made_once():
    with pytest.raises(GraphError, match="first parameter must be the tensor"):

        @variants("method")
        def made_up(x, other):
            return x

    with pytest.raises(GraphError, match="kinds must be among"):
        variants("property")
    with pytest.raises(GraphError, match="inplace_flag must be among"):
        variants("functional", inplace_flag="printed")
    with pytest.raises(GraphError, match="goes with the functional entry"):
        variants("method", module="MadeUp")
    with pytest.raises(GraphError, match="need defaults: they are its layer nn.MadeUp"):

        @variants("functional", module="MadeUp")
        def made_up_layer(input, other):  # noqa: A002
            return input

    name = next(iter(FUNCTIONS), None) or pytest.skip("no op declares a function yet")
    with pytest.raises(GraphError, match="declared twice"):
        variants("function")(FUNCTIONS[name])


# The nn.functional entries and nn layers the ops declare ("functional", module=): bound on F and
# nn, and, where PyTorch has them, taking its parameters, printing as its layers print and
# computing its values, gradients and in-place writes.
FUNCTIONALS = {name: v for v in declared() for name in v.functional}
LAYERS = {v.module: v for v in declared() if v.module}
# a value other than the default for each layer argument, by PyTorch's name
OPTIONS = {
    "alpha": 2.5, "negative_slope": 0.2, "beta": 2.0, "threshold": 3.0, "dim": 0,
    "approximate": "tanh", "min_val": -0.5, "max_val": 0.75, "weight": None,
}  # fmt: skip


def test_the_declared_entries_and_layers_are_bound():
    assert FUNCTIONALS and LAYERS
    for name, v in FUNCTIONALS.items():
        assert F.__dict__[name].__wrapped__ is v.function and name in F.__all__
    for name, v in LAYERS.items():
        layer = getattr(nn, name)
        assert name in nn.__all__ and issubclass(layer, DeclaredLayer)
        assert layer.__module__ == "minitrain.nn.modules.activation" and layer.__qualname__ == name
        assert v.function.__name__ in layer.__doc__ and layer.forward.__doc__


def _torch_signature(function) -> list[tuple]:
    """(name, kind, default) of each parameter of torch's `function`: from its signature, or
    from its docstring's first line where it is a builtin (defaults left out there)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except ValueError:
        return [(n, None, None) for n in torch_parameter_names(function).split(", ")]
    parameters = [p for p in parameters if p.name != "self"]
    if all(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in parameters):
        return []  # Module's own __init__: the layer takes no arguments
    return [(p.name, p.kind.name, p.default) for p in parameters]


def _described(function, theirs: list[tuple]) -> list[tuple]:
    """(name, kind, default) of each parameter of `function` (self left out), kind and default
    left out where PyTorch's (`theirs`) leaves them out."""
    parameters = [p for p in inspect.signature(function).parameters.values() if p.name != "self"]
    bare = bool(theirs) and theirs[0][1] is None
    return [(p.name, None, None) if bare else (p.name, p.kind.name, p.default) for p in parameters]


def _options(function) -> dict:
    """OPTIONS' value of each argument of `function` after input (inplace left out)."""
    names = list(inspect.signature(function).parameters)
    names = names[2:] if names[0] == "self" else names[1:]
    missing = [n for n in names if n != "inplace" and n not in OPTIONS]
    assert not missing, f"{function.__qualname__}: give {missing} a value in OPTIONS"
    return {n: OPTIONS[n] for n in names if n != "inplace"}


def _run(call, torch_call, values, inplace: bool) -> tuple:
    """(ours, theirs): (output, gradient of the input) of call and torch_call on values, on a
    tensor in the graph (which inplace=True may write)."""
    results = []
    for library, make, fn in ((mt, mt.tensor, call), (torch, torch.tensor, torch_call)):
        leaf = make(values, requires_grad=True)
        x = leaf * 1.0
        out = fn(x)
        if inplace:
            assert out is x, "inplace=True did not write into the input"
        upstream = np.random.default_rng(3).standard_normal(tuple(out.shape))
        out.backward(make(upstream) if library is mt else torch.from_numpy(upstream))
        results.append((np.asarray(out.detach().numpy()), leaf.grad.numpy()))
    return tuple(results)


def _differences(name: str, ours, theirs) -> list[str]:
    """Where F.<name> or nn.<name> (ours) differs from PyTorch's (theirs): its parameters, its
    repr with its defaults and with every argument set (inplace too), and its values and
    gradients, written in place where inplace=True."""
    layer = inspect.isclass(ours)
    found = []
    signature = _torch_signature(theirs.__init__ if layer else theirs)
    described = _described(ours.__init__ if layer else ours, signature)
    if described != signature:
        found.append(f"{name}: parameters {described}, PyTorch's {signature}")
    options = _options(ours.__init__ if layer else ours)
    takes_inplace = "inplace" in inspect.signature(ours.__init__ if layer else ours).parameters
    values = np.random.default_rng(4).standard_normal((4, 6)) * 3
    for arguments in [{}, options] + ([{**options, "inplace": True}] if takes_inplace else []):
        if layer:
            built, reference = ours(**arguments), theirs(**arguments)
            if repr(built) != repr(reference):
                found.append(f"{name}{arguments}: prints {built!r}, PyTorch's {reference!r}")
            call, torch_call = built, reference
        else:
            call = lambda x, a=arguments: ours(x, **a)  # noqa: E731
            torch_call = lambda x, a=arguments: theirs(x, **a)  # noqa: E731
        try:
            (out, grad), (want, want_grad) = _run(
                call, torch_call, values, arguments.get("inplace", False)
            )
            np.testing.assert_allclose(out, want, rtol=1e-7, atol=1e-12)
            np.testing.assert_allclose(grad, want_grad, rtol=1e-7, atol=1e-12)
        except AssertionError as error:
            found.append(f"{name}{arguments}: {str(error).strip().splitlines()[0]}")
    return found


@pytest.mark.parametrize("name", sorted(FUNCTIONALS))
def test_a_declared_entry_matches_torchs(torch, name):
    if not hasattr(torch.nn.functional, name):
        pytest.skip(f"F.{name} is minitrain's own")
    if name == "prelu":  # its values against PyTorch's: its samples
        pytest.skip("takes a weight tensor, which OPTIONS cannot give")
    assert _differences(f"F.{name}", getattr(F, name), getattr(torch.nn.functional, name)) == []


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_a_declared_layer_matches_torchs(torch, name):
    if not hasattr(torch.nn, name):
        pytest.skip(f"nn.{name} is minitrain's own")
    assert _differences(f"nn.{name}", getattr(nn, name), getattr(torch.nn, name)) == []


def test_a_binding_that_differs_from_torch_is_found(torch):
    """The comparison can fail: a layer declared as showing no inplace=True where PyTorch's shows
    it, and an entry declared without PyTorch's inplace, are each found."""
    shown = next(v for v in LAYERS.values() if v.inplace_flag == "shown")
    name = shown.module
    hidden = dataclasses.replace(shown, inplace_flag="hidden")
    layer = layer_of(hidden, functional_of(hidden), __name__)
    assert any("prints" in d for d in _differences(name, layer, getattr(torch.nn, name)))
    bare = dataclasses.replace(shown, inplace_flag="")
    entry, function_name = functional_of(bare), shown.function.__name__
    found = _differences(function_name, entry, getattr(torch.nn.functional, function_name))
    assert any("parameters" in d for d in found)


def test_an_entry_takes_inplace_once_in_its_place_or_by_name():
    x = mt.tensor([-1.0, 2.0])
    y = F.celu(x, 2.0, True)  # inplace in its place, as torch's F.celu(x, 2.0, True)
    assert y is x
    np.testing.assert_allclose(x.numpy(), [2.0 * np.expm1(-0.5), 2.0])
    with pytest.raises(ArgumentError, match=r"^celu: takes 3 positional arguments at most"):
        F.celu(x, 2.0, True, True)
    with pytest.raises(ArgumentError, match=r"^celu: takes 3 positional arguments at most"):
        F.celu(x, 2.0, True, inplace=True)

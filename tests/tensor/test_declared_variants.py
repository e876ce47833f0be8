"""What the ops declare users reach them by (ops/core/variants.py), bound as declared: each
top-level function, Tensor method and in-place twin exists, is the op's function (the method that
very function) or writes its result, and checks its tensor. Read from the declarations: an op that
declares a variant is tested here the moment it does (its values and derivatives: the registry's
samples, tests/ops/)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import minitrain as mt
from minitrain.errors import DTypeError, GraphError
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
        expected = function(x, *others, **keywords).data
        before = x.data
        assert getattr(x, name)(*others, **keywords) is x
    assert x.data is before  # written into the tensor's own memory
    np.testing.assert_array_equal(x.data, expected)
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
    name = next(iter(FUNCTIONS), None) or pytest.skip("no op declares a function yet")
    with pytest.raises(GraphError, match="declared twice"):
        variants("function")(FUNCTIONS[name])

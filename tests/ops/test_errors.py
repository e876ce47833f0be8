"""The exception hierarchy, and errors raised at op boundaries with clear messages."""

import pathlib
import re
import sys

import numpy as np
import pytest

import minitrain
from minitrain import backend, ops
from minitrain.errors import (
    ArgumentError,
    DeviceError,
    DTypeError,
    GradcheckError,
    GraphError,
    MinitrainError,
    ShapeError,
)


def leaf(shape):
    return minitrain.tensor(np.ones(shape), requires_grad=True)


def test_hierarchy():
    assert issubclass(ShapeError, MinitrainError) and issubclass(ShapeError, ValueError)
    assert issubclass(DTypeError, MinitrainError) and issubclass(DTypeError, TypeError)
    assert issubclass(DeviceError, MinitrainError) and issubclass(DeviceError, RuntimeError)
    assert issubclass(GraphError, MinitrainError) and issubclass(GraphError, RuntimeError)
    assert issubclass(GradcheckError, MinitrainError)
    assert issubclass(MinitrainError, Exception)
    assert not issubclass(ShapeError, TypeError)
    assert not issubclass(DTypeError, ValueError)


def test_errors_are_catchable_as_builtins():
    with pytest.raises(ValueError):
        minitrain.ones(2, 3) + minitrain.ones(4)
    with pytest.raises(TypeError):
        minitrain.tensor([1, 2], requires_grad=True)
    with pytest.raises(RuntimeError):
        minitrain.tensor([1.0]).sum().backward()


def test_no_bare_value_or_type_error_is_raised_on_purpose():
    # every deliberate ValueError / TypeError is an ArgumentError / DTypeError (or a more
    # specific MinitrainError), so `except MinitrainError` catches what minitrain refuses
    package = pathlib.Path(minitrain.__file__).parent
    bare = [
        f"{path.relative_to(package)}:{number}"
        for path in sorted(package.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"raise (ValueError|TypeError)\(", line)
    ]
    assert bare == []
    assert issubclass(ArgumentError, MinitrainError) and issubclass(ArgumentError, ValueError)


def _message(exc_type, fn):
    with pytest.raises(exc_type) as info:
        fn()
    return str(info.value)


def test_add_shape_mismatch_names_op_and_both_shapes():
    a, b = leaf((2, 3)), leaf((4,))
    message = _message(ShapeError, lambda: a + b)
    assert "add" in message and "(2, 3)" in message and "(4,)" in message


@pytest.mark.parametrize(
    "name, fn",
    [
        ("sub", lambda a, b: a - b),
        ("mul", lambda a, b: a * b),
        ("div", lambda a, b: a / b),
        ("maximum", minitrain.maximum),
    ],
)
def test_binary_shape_mismatch_names_op_and_both_shapes(name, fn):
    message = _message(ShapeError, lambda: fn(leaf((2, 3)), leaf((4,))))
    assert name in message and "(2, 3)" in message and "(4,)" in message


def test_matmul_mismatch():
    message = _message(ShapeError, lambda: leaf((2, 3)) @ leaf((4, 5)))
    assert "matmul" in message and "(2, 3)" in message and "(4, 5)" in message


def test_reshape_to_wrong_size():
    message = _message(ShapeError, lambda: leaf((2, 3)).reshape(4, 2))
    assert "reshape" in message and "(2, 3)" in message and "(4, 2)" in message
    message = _message(ShapeError, lambda: leaf((2, 3)).reshape(-1, 4))
    assert "reshape" in message and "(2, 3)" in message


def test_broadcast_to_incompatible():
    message = _message(ShapeError, lambda: leaf((3,)).broadcast_to((2, 4)))
    assert "broadcast_to" in message and "(3,)" in message and "(2, 4)" in message
    message = _message(ShapeError, lambda: leaf((2, 3)).expand(3))
    assert "(2, 3)" in message


def test_concat_mismatched():
    message = _message(ShapeError, lambda: minitrain.concat([leaf((2, 3)), leaf((2, 4))], axis=0))
    assert "concat" in message and "(2, 3)" in message and "(2, 4)" in message
    assert minitrain.concat([leaf((2, 3)), leaf((2, 4))], axis=1).shape == (2, 7)


def test_stack_mismatched():
    message = _message(ShapeError, lambda: minitrain.stack([leaf((2, 3)), leaf((3, 2))]))
    assert "stack" in message and "(2, 3)" in message and "(3, 2)" in message


def test_permute_not_a_permutation():
    message = _message(ShapeError, lambda: leaf((2, 3)).permute(0, 0))
    assert "permute" in message and "(2, 3)" in message
    message = _message(ShapeError, lambda: leaf((2, 3, 4)).permute(0, 1))
    assert "permute" in message and "(2, 3, 4)" in message


def test_sum_axis_out_of_range():
    message = _message(ShapeError, lambda: leaf((2, 3)).sum(dim=2))
    assert "sum" in message and "2" in message
    _message(ShapeError, lambda: leaf((2, 3)).sum(axis=-3))
    message = _message(ShapeError, lambda: leaf((2, 3)).mean(dim=(0, 5)))
    assert "mean" in message and "5" in message


def test_transpose_dim_out_of_range():
    message = _message(ShapeError, lambda: leaf((2, 3)).transpose(0, 2))
    assert "transpose" in message


def test_where_with_non_bool_condition():
    cond = minitrain.tensor([1.0, 0.0])
    message = _message(DTypeError, lambda: minitrain.where(cond, leaf((2,)), leaf((2,))))
    assert "where" in message and "float32" in message
    ok = minitrain.where(minitrain.tensor([True, False]), leaf((2,)), minitrain.zeros(2))
    np.testing.assert_array_equal(ok.numpy(), [1.0, 0.0])


def test_pad_negative():
    message = _message(ShapeError, lambda: ops.pad(leaf((2, 3)), [(0, 0), (-1, 1)]))
    assert "pad" in message and "(2, 3)" in message
    _message(ShapeError, lambda: ops.pad(leaf((2, 3)), [(1, 1)]))  # one pair for two dims


def test_getitem_out_of_bounds():
    message = _message(IndexError, lambda: leaf((2, 3))[5])
    assert "getitem" in message
    message = _message(IndexError, lambda: leaf((2, 3))[:, np.array([0, 3])])
    assert "getitem" in message


def test_getitem_with_float_index_raises_dtype_error():
    with pytest.raises(DTypeError):
        leaf((2, 3))[np.array([0.5])]


def test_var_without_degrees_of_freedom_warns_naming_the_op_and_correction():
    with pytest.warns(UserWarning) as caught:
        leaf((1, 3)).var(dim=0)
    message = str(caught[0].message)
    assert "var" in message and "correction=1" in message and "(1, 3)" in message


def test_operand_of_unsupported_type():
    message = _message(DTypeError, lambda: leaf((2,)) + "a")
    assert "add" in message and "str" in message


def test_bad_device_spec():
    with pytest.raises(DeviceError):
        minitrain.device("tpu")
    with pytest.raises(DeviceError):
        minitrain.device("cuda:x")
    assert minitrain.device("cuda:1").index == 1


def test_cuda_without_cupy_raises_device_error_with_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # `import cupy` now fails, as if not installed
    monkeypatch.setattr(backend, "cupy", None)
    x = leaf((2,))
    with minitrain.Tape() as tape:
        with pytest.raises(DeviceError) as info:
            x.to("cuda")
    message = str(info.value)
    assert "cupy" in message.lower()
    assert "install" in message
    assert tape.nodes == []
    with pytest.raises(DeviceError):
        x.cuda()
    with pytest.raises(DeviceError):
        minitrain.zeros(2, device="cuda")
    # the tensor is untouched and still usable
    assert x.device == minitrain.device("cpu")
    (x * 2.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])


@pytest.mark.parametrize(
    "fn",
    [
        lambda a, b: a + b,
        lambda a, b: a @ b,
        lambda a, b: a.reshape(7),
        lambda a, b: minitrain.concat([a, b]),
        lambda a, b: minitrain.where(a, a, b),
        lambda a, b: a[3, 0],
        lambda a, b: a.sum(dim=4),
    ],
    ids=["add", "matmul", "reshape", "concat", "where", "getitem", "sum"],
)
def test_failed_op_changes_no_state(fn):
    a, b = leaf((2, 3)), leaf((4,))
    with minitrain.Tape() as tape:
        # getitem raises a plain IndexError, as numpy and torch do; the rest minitrain's errors
        with pytest.raises((MinitrainError, IndexError)):
            fn(a, b)
    assert tape.nodes == []
    assert tape.saved_bytes() == 0
    assert a.grad is None and b.grad is None
    assert a.node is None and b.node is None
    # the tensors still work
    (a.sum() + b.sum()).backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.ones((2, 3)))


@pytest.mark.parametrize(
    "data, detail",
    [
        ([[1, 2], [3]], "expected a sequence of length 2 at dim 1, got 1"),
        ([[[1], [2]], [[3], [4, 5]]], "expected a sequence of length 1 at dim 2, got 2"),
        ([[1.0, 2.0], 3.0], "at dim 1, some elements are sequences and some are not"),
        ([np.array([1, 2]), np.array([3])], "expected a sequence of length 2 at dim 1, got 1"),
        ([np.array([1, 2]), [3]], "expected a sequence of length 2 at dim 1, got 1"),
        (
            [[np.array([1]), [2]], [[3], np.array([4, 5])]],
            "expected a sequence of length 1 at dim 2, got 2",
        ),
    ],
)
def test_ragged_nested_sequences_say_where_they_are_ragged(data, detail):
    with pytest.raises(
        ShapeError, match=re.escape(f"tensor: nested sequences must be rectangular: {detail}")
    ):
        minitrain.tensor(data)
    x = minitrain.tensor(np.zeros((2, 3)))
    with pytest.raises(
        ShapeError,
        match=re.escape(f"gather: index: nested sequences must be rectangular: {detail}"),
    ):
        x.gather(1, data)


def test_rectangular_nested_sequences_still_make_tensors():
    assert minitrain.tensor([[1, 2], [3, 4]]).shape == (2, 2)
    assert minitrain.tensor([[[1.0], [2.0]]]).shape == (1, 2, 1)
    assert minitrain.tensor([]).shape == (0,)
    assert minitrain.tensor([np.array([1, 2]), (3, 4)]).shape == (2, 2)
    assert minitrain.tensor([np.float32(1.0), np.array(2.0)]).shape == (2,)
    np.testing.assert_array_equal(
        minitrain.tensor(np.arange(6.0).reshape(2, 3)).gather(1, [[2, 0], [1, 1]]).array,
        [[2.0, 0.0], [4.0, 4.0]],
    )


@pytest.mark.parametrize("name", ["fmod", "remainder", "logaddexp", "floor_divide"])
def test_binary_math_refuses_an_operand_that_is_not_a_number(name):
    # a str reached the dtype promotion and raised AttributeError ('str' has no 'ndim')
    with pytest.raises(
        DTypeError, match=f"{name}: other must be a Tensor, an array or a number, got str"
    ):
        getattr(minitrain, name)(minitrain.ones(2), "foo")


@pytest.mark.parametrize("name", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_comparisons_refuse_strings_naming_the_op(name):
    # numpy's UFuncTypeError leaked for a str or a list of str
    x = minitrain.ones(2)
    with pytest.raises(DTypeError, match=f"{name}: other must be a Tensor, an array or a number"):
        getattr(minitrain, name)(x, "foo")
    with pytest.raises(DTypeError, match=f"{name}: cannot compare input of dtype float32"):
        getattr(minitrain, name)(x, ["a", "b"])

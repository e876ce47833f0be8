"""Bad calls raise an instance of the builtin class PyTorch raises for them, so a PyTorch
program's `except RuntimeError` (or IndexError, TypeError, NotImplementedError) catches
minitrain's error, which keeps its own class (ShapeError, ArgumentError, ...) for minitrain's
callers."""

from __future__ import annotations

import numpy as np
import pytest

import minitrain
from minitrain.errors import (
    ArgumentError,
    DimensionError,
    DTypeError,
    IndexOutOfRangeError,
    IndexTypeError,
    MinitrainError,
    ShapeError,
    UnknownModeError,
)


def _long(lib, shape, fill=0):
    return lib.full(shape, fill, dtype=lib.int64)


# name -> (the call on a library, minitrain or torch; the class PyTorch 2.13 raises)
BAD_CALLS = {
    "matmul": (lambda m: m.matmul(m.ones(2, 3), m.ones(4, 5)), RuntimeError),
    "matmul_operator": (lambda m: m.ones(2, 3) @ m.ones(2, 3), RuntimeError),
    "mm": (lambda m: m.mm(m.ones(2, 3), m.ones(4, 5)), RuntimeError),
    "bmm": (lambda m: m.bmm(m.ones(2, 2, 3), m.ones(3, 3, 5)), RuntimeError),
    "mv": (lambda m: m.mv(m.ones(2, 3), m.ones(4)), RuntimeError),
    "dot": (lambda m: m.dot(m.ones(3), m.ones(4)), RuntimeError),
    "linear": (lambda m: m.nn.functional.linear(m.ones(2, 3), m.ones(4, 5)), RuntimeError),
    "reshape": (lambda m: m.ones(2, 3).reshape(4, 2), RuntimeError),
    "reshape_inferred": (lambda m: m.ones(2, 3).reshape(-1, 4), RuntimeError),
    "view_size": (lambda m: m.ones(2, 3).view(5), RuntimeError),
    "view_layout": (lambda m: m.ones(2, 3).t().view(6), RuntimeError),
    "view_dtype_size": (lambda m: m.ones(3).view(m.float64), RuntimeError),
    "permute_repeated": (lambda m: m.ones(2, 3).permute(0, 0), RuntimeError),
    "permute_length": (lambda m: m.ones(2, 3, 4).permute(0, 1), RuntimeError),
    "flip_repeated": (lambda m: m.ones(2, 3).flip(0, 0), RuntimeError),
    "gather_shape": (lambda m: m.gather(m.ones(2, 3), 1, _long(m, (3, 3))), RuntimeError),
    "gather_rank": (lambda m: m.gather(m.ones(2, 3), 1, _long(m, (3,))), RuntimeError),
    "scatter_shape": (
        lambda m: m.zeros(2, 3).scatter(1, _long(m, (3, 4)), m.ones(3, 4)),
        RuntimeError,
    ),
    "einsum_sizes": (lambda m: m.einsum("ij,jk->ik", m.ones(2, 3), m.ones(4, 5)), RuntimeError),
    "einsum_operands": (lambda m: m.einsum("ij,jk->ik", m.ones(2, 3)), RuntimeError),
    "conv_input_too_small": (
        lambda m: m.nn.functional.conv2d(m.ones(1, 1, 2, 2), m.ones(1, 1, 3, 3)),
        RuntimeError,
    ),
    "conv_channels": (
        lambda m: m.nn.functional.conv2d(m.ones(1, 2, 5, 5), m.ones(1, 3, 3, 3)),
        RuntimeError,
    ),
    "conv1d_channels": (
        lambda m: m.nn.functional.conv1d(m.ones(1, 2, 5), m.ones(1, 3, 3)),
        RuntimeError,
    ),
    "conv_rank": (
        lambda m: m.nn.functional.conv2d(m.ones(2, 5, 5, 5, 5), m.ones(1, 2, 3, 3)),
        RuntimeError,
    ),
    "max_pool_too_small": (
        lambda m: m.nn.functional.max_pool2d(m.ones(1, 1, 2, 2), 3),
        RuntimeError,
    ),
    "cat_sizes": (lambda m: m.cat([m.ones(2, 3), m.ones(2, 4)]), RuntimeError),
    "cat_ranks": (lambda m: m.cat([m.ones(2, 3), m.ones(3)]), RuntimeError),
    "stack_sizes": (lambda m: m.stack([m.ones(2, 3), m.ones(2, 4)]), RuntimeError),
    "add_broadcast": (lambda m: m.ones(2, 3) + m.ones(4), RuntimeError),
    "mul_broadcast": (lambda m: m.ones(2, 3) * m.ones(2, 4), RuntimeError),
    "where_broadcast": (lambda m: m.where(m.ones(2, 3) > 0, m.ones(2), m.ones(3)), RuntimeError),
    "masked_fill_broadcast": (
        lambda m: m.ones(2, 3).masked_fill(m.ones(4) > 0, 0.0),
        RuntimeError,
    ),
    "expand": (lambda m: m.ones(2, 3).expand(4, 3), RuntimeError),
    "expand_fewer_dims": (lambda m: m.ones(2, 3).expand(3), RuntimeError),
    "broadcast_to": (lambda m: m.broadcast_to(m.ones(2, 3), (4, 3)), RuntimeError),
    "setitem_shape": (lambda m: m.ones(2, 3).__setitem__(0, m.ones(4)), RuntimeError),
    "split_sizes": (lambda m: m.ones(6).split([2, 2]), RuntimeError),
    "chunk_zero": (lambda m: m.ones(6).chunk(0), RuntimeError),
    "narrow_past_end": (lambda m: m.ones(2, 3).narrow(1, 2, 3), RuntimeError),
    "topk_too_many": (lambda m: m.ones(3).topk(5), RuntimeError),
    "repeat_fewer_dims": (lambda m: m.ones(2, 3).repeat(2), RuntimeError),
    "unflatten_sizes": (lambda m: m.ones(2, 6).unflatten(1, (4, 2)), RuntimeError),
    "layer_norm_shape": (
        lambda m: m.nn.functional.layer_norm(m.ones(2, 3), (4,)),
        RuntimeError,
    ),
    "mse_loss_shapes": (
        lambda m: m.nn.functional.mse_loss(m.ones(2, 3), m.ones(4, 3)),
        RuntimeError,
    ),
    "item_many": (lambda m: m.ones(2, 3).item(), RuntimeError),
    "bool_many": (lambda m: bool(m.ones(2, 3)), RuntimeError),
    "zeros_negative": (lambda m: m.zeros(-1), RuntimeError),
    "randn_negative": (lambda m: m.randn(2, -1), RuntimeError),
    "randperm_negative": (lambda m: m.randperm(-1), RuntimeError),
    "int_requires_grad": (lambda m: m.tensor([1, 2], requires_grad=True), RuntimeError),
    "backward_non_scalar": (
        lambda m: m.ones(2, requires_grad=True).mul(2).backward(),
        RuntimeError,
    ),
    "add_into_int": (lambda m: m.ones(2, dtype=m.int64).add_(m.ones(2)), RuntimeError),
    "multinomial_negative": (lambda m: m.multinomial(m.tensor([-1.0, 1.0]), 1), RuntimeError),
    "multinomial_too_many": (lambda m: m.multinomial(m.tensor([1.0, 1.0]), 3), RuntimeError),
    "multinomial_rank": (lambda m: m.multinomial(m.ones(2, 2, 2), 1), RuntimeError),
    "nonzero_static_negative": (
        lambda m: m.nonzero_static(m.ones(3), size=-1),
        RuntimeError,
    ),
    "sum_dim": (lambda m: m.ones(2, 3).sum(5), IndexError),
    "transpose_dim": (lambda m: m.ones(2, 3).transpose(0, 3), IndexError),
    "softmax_dim": (lambda m: m.ones(2, 3).softmax(4), IndexError),
    "unsqueeze_dim": (lambda m: m.ones(2, 3).unsqueeze(5), IndexError),
    "index_out_of_range": (lambda m: m.ones(2, 3)[5], IndexError),
    "float_tensor_index": (lambda m: m.ones(3)[m.ones(1)], IndexError),
    "float_index": (lambda m: m.ones(3)[1.5], IndexError),
    "gather_index_value": (
        lambda m: m.gather(m.ones(2, 3), 1, _long(m, (2, 3), 5)),
        RuntimeError,
    ),
    "scatter_index_value": (
        lambda m: m.zeros(2, 3).scatter(1, _long(m, (2, 3), 5), m.ones(2, 3)),
        RuntimeError,
    ),
    "index_select_value": (lambda m: m.index_select(m.ones(2, 3), 0, m.tensor([5])), IndexError),
    "embedding_index": (
        lambda m: m.nn.functional.embedding(m.tensor([5]), m.ones(3, 2)),
        IndexError,
    ),
    "cross_entropy_class": (
        lambda m: m.nn.functional.cross_entropy(m.ones(2, 3), m.tensor([0, 7])),
        IndexError,
    ),
    "string_index": (lambda m: m.ones(3)["a"], TypeError),
    "zeros_float_size": (lambda m: m.zeros(2.5), TypeError),
    "multinomial_float_count": (lambda m: m.multinomial(m.ones(2), 1.0), TypeError),
    "nonzero_static_float_size": (lambda m: m.nonzero_static(m.ones(3), size=2.0), TypeError),
    "cross_entropy_batch": (
        lambda m: m.nn.functional.cross_entropy(m.ones(2, 3), m.zeros(3, dtype=m.int64)),
        ValueError,
    ),
    "tensor_ragged": (lambda m: m.tensor([[1, 2], [3]]), ValueError),
    "linspace_bool": (lambda m: m.linspace(5, 10, 3, dtype=m.bool), NotImplementedError),
    "shift_float": (lambda m: m.tensor([1.0]) << 2, NotImplementedError),
    "interpolate_int64": (
        lambda m: m.nn.functional.interpolate(m.zeros(1, 1, 4, 4, dtype=m.int64), size=8),
        NotImplementedError,
    ),
    "interpolate_uint8_linear": (
        lambda m: m.nn.functional.interpolate(
            m.zeros(1, 1, 4, dtype=m.uint8), size=8, mode="linear"
        ),
        NotImplementedError,
    ),
    "pad_mode": (
        lambda m: m.nn.functional.pad(m.ones(1, 1, 3), (1, 1), mode="foo"),
        NotImplementedError,
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_CALLS))
def test_the_error_is_the_class_pytorch_raises(name):
    call, expected = BAD_CALLS[name]
    with pytest.raises(expected) as raised:
        call(minitrain)
    # every one is minitrain's own error, but getitem's IndexError (Python's index protocol)
    assert isinstance(raised.value, MinitrainError) or name == "index_out_of_range"


@pytest.mark.filterwarnings("ignore::UserWarning")  # torch's own, on the mse and "a" rows
@pytest.mark.parametrize("name", sorted(BAD_CALLS))
def test_the_error_class_agrees_with_torch(torch, name):
    call, expected = BAD_CALLS[name]
    with pytest.raises(Exception) as theirs:  # noqa: PT011 (the class is what is compared)
        call(torch)
    assert isinstance(theirs.value, expected), (name, type(theirs.value))
    with pytest.raises(type(theirs.value)):
        call(minitrain)


def test_the_classes_keep_their_minitrain_bases():
    # `except ValueError` in minitrain's own callers and tests still catches shape and argument
    # errors, `except TypeError` dtype errors; PyTorch's RuntimeError is added, not swapped in
    assert issubclass(ShapeError, ValueError) and issubclass(ShapeError, RuntimeError)
    assert issubclass(ArgumentError, ValueError) and issubclass(ArgumentError, RuntimeError)
    assert issubclass(DTypeError, TypeError) and issubclass(DTypeError, RuntimeError)
    assert issubclass(DTypeError, NotImplementedError)  # PyTorch's "not implemented for 'Int'"
    assert issubclass(DimensionError, IndexError) and issubclass(DimensionError, ShapeError)
    assert issubclass(IndexTypeError, IndexError) and issubclass(IndexTypeError, DTypeError)
    assert issubclass(UnknownModeError, NotImplementedError)
    assert issubclass(UnknownModeError, ArgumentError)
    assert not issubclass(ShapeError, TypeError) and not issubclass(DTypeError, ValueError)
    assert issubclass(IndexOutOfRangeError, IndexError)
    assert issubclass(IndexOutOfRangeError, RuntimeError)


def test_a_pytorch_style_except_clause_catches_minitrain_errors():
    caught = []
    for call in (
        lambda: minitrain.ones(2, 3) @ minitrain.ones(2, 3),
        lambda: minitrain.ones(2, 3).reshape(7),
        lambda: minitrain.cat([minitrain.ones(2, 3), minitrain.ones(2, 4)]),
    ):
        try:
            call()
        except RuntimeError as error:  # what a PyTorch program writes
            caught.append(type(error))
    assert caught == [ShapeError, ShapeError, ShapeError]


def test_gather_out_of_range_names_the_value_and_stays_an_index_error():
    index = minitrain.full((2, 3), 5, dtype=np.int64)
    with pytest.raises(IndexOutOfRangeError, match="index 5 .* dim 1 of size 3"):
        minitrain.gather(minitrain.ones(2, 3), 1, index)

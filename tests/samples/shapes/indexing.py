"""Samples of ops/shapes/indexing.py: getitem, setitem with every kind of index; gather."""

from __future__ import annotations

import numpy as np
from op_samples import Draw, Sample, draws, indices, normal
from reference import torch

import minitrain as mt
from minitrain import ops


def _torch_index(index):
    """A numpy index with integer or boolean arrays as PyTorch tensors."""
    items = index if isinstance(index, tuple) else (index,)
    converted = tuple(torch.from_numpy(i) if isinstance(i, np.ndarray) else i for i in items)
    return converted if isinstance(index, tuple) else converted[0]


def _getitem_grad(name, shape, index) -> Sample:
    """getitem_grad of a normal grad shaped as x[index], for x of `shape`."""
    picked = ops.getitem(mt.zeros(shape), index).shape  # PyTorch's rule, not numpy's

    def ref(grad):
        x = torch.zeros(shape, dtype=grad.dtype, requires_grad=True)
        (dx,) = torch.autograd.grad(x[_torch_index(index)], x, grad, create_graph=True)
        return dx

    return Sample(name, draws(normal(*picked)), lambda g: ops.getitem_grad(g, shape, index), ref)


def _getitem(name, shape, index, ref=None) -> Sample:
    """x[index] on a normal x; PyTorch indexes with the same index unless `ref` is given."""
    return Sample(
        name,
        draws(normal(*shape)),
        lambda x: ops.getitem(x, index),
        ref or (lambda x: x[_torch_index(index)]),
    )


def _setitem(name, shape, index, value_shape) -> Sample:
    """x with x[index] = value, out of place, for x and value normal; PyTorch assigns into a
    clone. Repeated integer indices are left out: which copy wins is unspecified in PyTorch."""

    def reference(x, value):
        y = x.clone()
        y[_torch_index(index)] = value
        return y

    return Sample(
        name,
        draws(normal(*shape), normal(*value_shape)),
        lambda x, value: ops.setitem(x, index, value),
        reference,
    )


SAMPLES: dict[str, list[Sample]] = {
    "getitem": [
        _getitem("slices", (4, 5), (slice(1, 3), slice(None, None, 2))),
        _getitem("int_and_slice", (4, 5), (-1, slice(1, None))),
        _getitem("scalar_element", (4, 5), (2, 3)),
        _getitem(
            "negative_steps",
            (4, 5),
            (slice(None, None, -1), slice(3, 0, -2)),
            ref=lambda x: torch.flip(x, [0])[:, [3, 1]],
        ),
        _getitem("negative_step_1d", (6,), slice(4, None, -2), ref=lambda x: x[[4, 2, 0]]),
        _getitem("none_ellipsis", (2, 3, 4), (None, Ellipsis, 1)),
        _getitem("ellipsis_step", (2, 3, 4), (Ellipsis, slice(None, None, 2))),
        _getitem("int_array_repeated", (4, 3), np.array([0, 0, 2, 3, 0])),
        _getitem("list_repeated", (4,), [1, 1, 0]),
        _getitem("tuple_inside_tuple", (4, 5), ((1, 0, -1), slice(None))),  # a list, as torch
        _getitem("int_arrays_2d_repeated", (3, 4), (np.array([0, 0, 2]), np.array([1, 1, 3]))),
        _getitem("slice_then_int_array", (3, 4), (slice(None), np.array([2, 0, 2]))),
        _getitem("bool_mask", (3, 4), np.arange(12).reshape(3, 4) % 3 == 0),
        _getitem("bool_mask_rows", (4, 3), np.array([True, False, True, True])),
        _getitem("slice_then_bool_mask", (2, 3), (slice(None), np.array([True, False, True]))),
        _getitem(
            "int_array_then_negative_step",
            (3, 4),
            ([0, 2, 0], slice(None, None, -1)),
            ref=lambda x: torch.flip(x, [1])[[0, 2, 0]],
        ),
        # PyTorch's rule where numpy's differs: an int beside an index array selects first,
        # so the array's dim stays in place ((3, 2) here; numpy's x[0, :, [0, 2]] is (2, 3))
        _getitem("int_slice_list", (2, 3, 4), (0, slice(None), [0, 2])),
        _getitem("int_array_int", (3, 4, 5), (1, np.array([0, 2, 2]), -1)),
        _getitem("mask_slice_int", (3, 4, 5), (np.array([True, False, True]), slice(None), 1)),
        _getitem("bool_int_list", (3, 4), (True, 1, [0, 2, 0])),
        _getitem("zero_d_index_slice_list", (2, 3, 4), (np.array(1), slice(None), [0, 2])),
        Sample(
            "tensor_index_repeated",
            draws(normal(4, 2)),
            lambda x: ops.getitem(x, mt.tensor(np.array([3, 1, 3]))),
            lambda x: x[torch.tensor([3, 1, 3])],
        ),
    ],
    # getitem's backward as an op: its reference is PyTorch's vector-Jacobian product of x[index]
    "getitem_grad": [
        _getitem_grad("slices", (4, 5), (slice(1, 3), slice(None, None, 2))),
        _getitem_grad("int_array_repeated", (4, 3), np.array([0, 0, 2, 3, 0])),
        _getitem_grad("bool_mask", (3, 4), np.arange(12).reshape(3, 4) % 3 == 0),
        _getitem_grad("none_ellipsis", (2, 3, 4), (None, Ellipsis, 1)),
        _getitem_grad("int_slice_list", (2, 3, 4), (0, slice(None), [0, 2])),
    ],
    # gather: repeated indices add their gradients; index may be smaller than x outside axis
    "setitem": [
        _setitem("slices", (4, 5), (slice(1, 3), slice(None, None, 2)), (2, 3)),
        _setitem("row_broadcast", (4, 5), 1, (1,)),
        _setitem("element", (4, 5), (2, 3), ()),
        _setitem("steps", (4, 5), (slice(None, None, 2), slice(1, None, 2)), (2, 2)),
        _setitem("none_ellipsis", (2, 3, 4), (None, Ellipsis, 1), (1, 2, 3)),
        _setitem("int_array", (4, 3), np.array([0, 2, 3]), (3, 3)),
        _setitem("int_arrays_2d", (3, 4), (np.array([0, 1, 2]), np.array([1, 0, 3])), (3,)),
        _setitem("bool_mask", (3, 4), np.arange(12).reshape(3, 4) % 3 == 0, (4,)),
        _setitem("bool_mask_rows_broadcast", (4, 3), np.array([True, False, True, True]), (3,)),
        # PyTorch's rule: an int beside an index array selects first (x[0][:, [0, 2]], (3, 2))
        _setitem("int_slice_list", (2, 3, 4), (0, slice(None), [0, 2]), (3, 2)),
        _setitem("value_with_leading_one", (3, 4), 1, (1, 4)),
    ],
    "gather": [
        Sample(
            name,
            draws(normal(*shape), index),
            lambda x, i, a=axis: ops.gather(x, a, i),
            lambda x, i, a=axis: torch.gather(x, a, i),
        )
        for name, shape, axis, index in [
            ("axis0", (3, 4), 0, indices(3, 5, 4)),
            ("axis1_repeated", (3, 4), 1, Draw(lambda rng: np.array([[0, 0, 3], [1, 1, 1]]))),
            ("axis_minus1_smaller", (3, 5), -1, indices(5, 2, 3)),
            ("3d_axis1", (2, 3, 4), 1, indices(3, 2, 6, 3)),
            ("vector", (5,), 0, Draw(lambda rng: np.array([4, 0, 4, 4]))),
            ("empty_index", (3, 4), 1, indices(4, 3, 0)),
        ]
    ],
}

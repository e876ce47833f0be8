"""Samples of ops/shapes/shape.py: reshaping, permuting, joining and padding."""

from __future__ import annotations

from op_samples import Sample, draws, normal
from reference import torch

from minitrain import ops


def _torch_pad(pad_width):
    """numpy (before, after) pairs as PyTorch's flat list, last dim first."""
    return [n for before, after in reversed(pad_width) for n in (before, after)]


def _pad(name, shape, pad_width, value=0.0) -> Sample:
    return Sample(
        name,
        draws(normal(*shape)),
        lambda x: ops.pad(x, pad_width, value),
        lambda x: torch.nn.functional.pad(x, _torch_pad(pad_width), value=value),
    )


def _joined(name, shapes, call, ref) -> Sample:
    """concat / stack of len(shapes) normal tensors: `call(list_of_tensors)`."""
    return Sample(
        name,
        draws(*(normal(*s) for s in shapes)),
        lambda *xs: call(list(xs)),
        lambda *xs: ref(list(xs)),
    )


SAMPLES: dict[str, list[Sample]] = {
    "reshape": [
        Sample(
            name,
            draws(normal(*old)),
            lambda x, new=new: ops.reshape(x, new),
            lambda x, new=new: torch.reshape(x, new if isinstance(new, tuple) else (new,)),
        )
        for name, old, new in [
            ("matrix", (2, 6), (3, 4)),
            ("infer", (2, 3, 4), (4, -1)),
            ("int_shape", (2, 3), 6),
            ("to_zero_d", (1,), ()),
            ("from_zero_d", (), (1, 1)),
            ("empty", (0, 3), (3, 0)),
            ("empty_infer", (2, 0), (-1, 4)),
        ]
    ],
    "flatten": [
        Sample(
            name,
            draws(normal(*shape)),
            lambda x, s=start, e=end: ops.flatten(x, s, e),
            lambda x, s=start, e=end: torch.flatten(x, s, e),
        )
        for name, shape, start, end in [
            ("all", (2, 3, 4), 0, -1),
            ("trailing", (2, 3, 4), 1, -1),
            ("leading", (2, 3, 4), 0, 1),
            ("negative_dims", (2, 3, 4, 2), -3, -2),
            ("one_dim", (2, 3), 1, 1),
            ("zero_d", (), 0, -1),
        ]
    ],
    "transpose": [
        Sample(
            f"dims{d0}_{d1}",
            draws(normal(*shape)),
            lambda x, d0=d0, d1=d1: ops.transpose(x, d0, d1),
            lambda x, d0=d0, d1=d1: torch.transpose(x, d0, d1),
        )
        for shape, d0, d1 in [((3, 4), 0, 1), ((2, 3, 4), 0, 2), ((2, 3, 4), -1, -2)]
    ],
    "permute": [
        Sample(
            "dims" + "_".join(map(str, dims)),
            draws(normal(*shape)),
            lambda x, dims=dims: ops.permute(x, dims),
            lambda x, dims=dims: torch.permute(x, dims),
        )
        for shape, dims in [((2, 3, 4), (2, 0, 1)), ((2, 3, 4), (-1, 0, 1)), ((3, 4), (1, 0))]
    ],
    "broadcast_to": [
        Sample(
            name,
            draws(normal(*shape)),
            lambda x, new=new: ops.broadcast_to(x, new),
            lambda x, new=new: torch.broadcast_to(x, new),
        )
        for name, shape, new in [
            ("new_and_stretched_dims", (3, 1), (2, 3, 4)),
            ("leading", (4,), (3, 4)),
            ("zero_d", (), (2, 3)),
            ("same", (2, 3), (2, 3)),
        ]
    ],
    # contiguous of a transposed (F-ordered) input: the C-ordered copy
    "contiguous": [
        Sample(
            "transposed",
            draws(normal(3, 4)),
            lambda x: ops.contiguous(x.T),
            lambda x: x.T.contiguous(),
        ),
        Sample("zero_d", draws(normal()), ops.contiguous, lambda x: x.contiguous()),
    ],
    "flip": [
        Sample("dim0", draws(normal(3, 4)), lambda x: ops.flip(x, 0), lambda x: torch.flip(x, [0])),
        Sample(
            "dims_0_2",
            draws(normal(2, 3, 4)),
            lambda x: ops.flip(x, (0, 2)),
            lambda x: torch.flip(x, [0, 2]),
        ),
        Sample("last", draws(normal(5)), lambda x: ops.flip(x, -1), lambda x: torch.flip(x, [-1])),
    ],
    "concat": [
        _joined("axis0", [(2, 3), (4, 3)], ops.concat, lambda xs: torch.cat(xs, 0)),
        _joined(
            "axis_minus1_three",
            [(2, 3), (2, 1), (2, 2)],
            lambda xs: ops.concat(xs, -1),
            lambda xs: torch.cat(xs, -1),
        ),
        _joined(
            "axis_minus2_3d",
            [(2, 1, 3), (2, 2, 3)],
            lambda xs: ops.concat(xs, -2),
            lambda xs: torch.cat(xs, -2),
        ),
        _joined(
            "with_empty",
            [(2, 0), (2, 3)],
            lambda xs: ops.concat(xs, 1),
            lambda xs: torch.cat(xs, 1),
        ),
        _joined("single", [(3,)], ops.concat, lambda xs: torch.cat(xs, 0)),
    ],
    "stack": [
        _joined("axis0", [(2, 3), (2, 3)], ops.stack, lambda xs: torch.stack(xs, 0)),
        _joined(
            "axis_minus1_three",
            [(2, 3), (2, 3), (2, 3)],
            lambda xs: ops.stack(xs, -1),
            lambda xs: torch.stack(xs, -1),
        ),
        _joined(
            "axis1_vectors",
            [(4,), (4,)],
            lambda xs: ops.stack(xs, 1),
            lambda xs: torch.stack(xs, 1),
        ),
        _joined("zero_d", [(), (), ()], ops.stack, lambda xs: torch.stack(xs, 0)),
    ],
    "pad": [
        _pad("asymmetric_2d", (2, 3), ((1, 2), (0, 3))),
        _pad("value_3d", (2, 2, 3), ((0, 0), (2, 1), (1, 0)), value=1.5),
        _pad("asymmetric_1d", (4,), ((3, 1),), value=-2.0),
        _pad("none", (2, 3), ((0, 0), (0, 0))),
    ],
}

"""The normalization ops' and kernels' errors name the op, the argument and the shapes, and an
error leaves the running statistics untouched."""

from __future__ import annotations

import numpy as np
import pytest

import minitrain as mt
from minitrain import ops
from minitrain.errors import DTypeError, ShapeError


def _ones(*shape):
    return mt.tensor(np.ones(shape), requires_grad=True)


def _arrays(*shape):
    return np.ones(shape)


# (call, error type, fragments the message must hold)
ERRORS = {
    "batch_norm_M_1": (
        lambda: ops.batch_norm(_ones(1, 3)),
        ShapeError,
        ["batch_norm", "(1, 3)", "M = "],
    ),
    "batch_norm_M_1_spatial": (
        lambda: ops.batch_norm(_ones(1, 2, 1, 1)),
        ShapeError,
        ["batch_norm", "(1, 2, 1, 1)", "M = 1"],
    ),
    "batch_norm_grad_M_1": (
        lambda: ops.batch_norm_grad(_arrays(1, 3), _arrays(1, 3), None, _arrays(3), _arrays(3)),
        ShapeError,
        ["batch_norm_grad", "(1, 3)", "M = 1"],
    ),
    "layer_norm_M_0": (
        lambda: ops.layer_norm(_ones(3, 0), (0,)),
        ShapeError,
        ["layer_norm", "(3, 0)", "M = 0"],
    ),
    "invertible_M_0": (
        lambda: ops.layer_norm(_ones(3, 2, 0), (2, 0), invertible=True),
        ShapeError,
        ["layer_norm", "(3, 2, 0)", "M = 0"],
    ),
    "rms_norm_M_0": (
        lambda: ops.rms_norm(_ones(2, 0), axis=-1),
        ShapeError,
        ["rms_norm", "(2, 0)", "M = 0"],
    ),
    "layer_norm_grad_M_0": (
        lambda: ops.layer_norm_grad(
            _arrays(3, 0), _arrays(3, 0), None, _arrays(3, 1), _arrays(3, 1)
        ),
        ShapeError,
        ["layer_norm_grad", "(3, 0)", "M = 0"],
    ),
    "batch_norm_weight_shape": (
        lambda: ops.batch_norm(_ones(2, 3, 4), _ones(4)),
        ShapeError,
        ["batch_norm", "weight", "(4,)", "(3,)"],
    ),
    "batch_norm_bias_shape": (
        lambda: ops.batch_norm(_ones(2, 3), None, _ones(3, 1)),
        ShapeError,
        ["batch_norm", "bias", "(3, 1)", "(3,)"],
    ),
    "batch_norm_grad_scale_shape": (
        lambda: ops.batch_norm_grad(
            _arrays(2, 3), _arrays(2, 3), _arrays(4), _arrays(3), _arrays(3)
        ),
        ShapeError,
        ["batch_norm_grad", "scale", "(4,)", "(3,)"],
    ),
    "layer_norm_weight_shape": (
        lambda: ops.layer_norm(_ones(2, 4), (4,), _ones(5)),
        ShapeError,
        ["layer_norm", "weight", "(5,)", "(4,)"],
    ),
    "rms_norm_weight_shape": (
        lambda: ops.rms_norm(_ones(2, 3, 4), (3, 4), _ones(4)),
        ShapeError,
        ["rms_norm", "weight", "(4,)", "(3, 4)"],
    ),
    "layer_norm_grad_scale_shape": (
        lambda: ops.layer_norm_grad(
            _arrays(2, 4), _arrays(2, 4), _arrays(2), _arrays(2, 1), _arrays(2, 1)
        ),
        ShapeError,
        ["layer_norm_grad", "scale", "(2,)", "(4,)"],
    ),
    "simplified_grad_inv_std_shape": (
        lambda: ops.simplified_layer_norm_grad(_arrays(2, 4), _arrays(2, 4), None, _arrays(2)),
        ShapeError,
        ["simplified_layer_norm_grad", "inv_std", "(2,)", "(2, 1)"],
    ),
    "invertible_grad_bias_shape": (
        lambda: ops.invertible_layer_norm_grad(
            _arrays(2, 4), _arrays(2, 4), None, _arrays(3), _arrays(2, 1)
        ),
        ShapeError,
        ["invertible_layer_norm_grad", "bias", "(3,)", "(4,)"],
    ),
    "kernel_dY_shape": (
        lambda: ops.layer_norm_grad(
            _arrays(2, 5), _arrays(2, 4), None, _arrays(2, 1), _arrays(2, 1)
        ),
        ShapeError,
        ["layer_norm_grad", "dY", "(2, 5)", "(2, 4)"],
    ),
    "batch_norm_rank_1": (
        lambda: ops.batch_norm(_ones(5)),
        ShapeError,
        ["batch_norm", "(5,)", "(N, C)"],
    ),
    "batch_norm_rank_6": (
        lambda: ops.batch_norm(_ones(2, 2, 1, 1, 1, 2)),
        ShapeError,
        ["batch_norm", "(2, 2, 1, 1, 1, 2)"],
    ),
    "batch_norm_grad_rank_1": (
        lambda: ops.batch_norm_grad(_arrays(4), _arrays(4), None, _arrays(1), _arrays(1)),
        ShapeError,
        ["batch_norm_grad", "(4,)"],
    ),
    "layer_norm_0d": (
        lambda: ops.layer_norm(mt.tensor(np.float64(1.0))),
        ShapeError,
        ["layer_norm", "0-d"],
    ),
    "layer_norm_axis_out_of_range": (
        lambda: ops.layer_norm(_ones(2, 3), axis=2),
        ShapeError,
        ["layer_norm", "dim 2"],
    ),
    "normalized_shape_mismatch": (
        lambda: ops.layer_norm(_ones(2, 3, 4), (5,)),
        ShapeError,
        ["layer_norm", "(5,)", "(2, 3, 4)"],
    ),
    "normalized_shape_and_axis": (
        lambda: ops.rms_norm(_ones(2, 3), (3,), axis=-1),
        ValueError,
        ["rms_norm", "not both"],
    ),
    "running_stats_one_missing": (
        lambda: ops.batch_norm(_ones(2, 3), running_mean=np.zeros(3)),
        ValueError,
        ["batch_norm", "running_var"],
    ),
    "running_stats_shape": (
        lambda: ops.batch_norm(_ones(2, 3), running_mean=np.zeros(4), running_var=np.ones(3)),
        ShapeError,
        ["batch_norm", "running_mean", "(4,)", "(3,)"],
    ),
    "running_stats_shape_eval": (
        lambda: ops.batch_norm(
            _ones(2, 3), running_mean=np.zeros(3), running_var=np.ones(2), training=False
        ),
        ShapeError,
        ["batch_norm", "running_var", "(2,)", "(3,)"],
    ),
    "integer_x": (
        lambda: ops.batch_norm(mt.tensor(np.ones((2, 3), np.int64))),
        DTypeError,
        ["batch_norm", "x", "int64"],
    ),
    "negative_eps": (
        lambda: ops.layer_norm(_ones(2, 3), eps=-1e-5),
        ValueError,
        ["layer_norm", "eps"],
    ),
    "eps_not_a_number": (
        lambda: ops.rms_norm(_ones(2, 3), eps="1e-5"),
        DTypeError,
        ["rms_norm", "eps"],
    ),
    "momentum_not_finite": (
        lambda: ops.batch_norm(_ones(2, 3), momentum=float("nan")),
        ValueError,
        ["batch_norm", "momentum"],
    ),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_name_the_op_the_argument_and_the_shapes(name, numba):
    call, error, fragments = ERRORS[name]
    with pytest.raises(error) as info:
        call()
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"


def test_an_error_leaves_the_running_statistics_untouched(numba):
    mean, var = np.zeros(3), np.ones(3)
    x = np.random.default_rng(9).standard_normal((4, 3)) + 5.0
    with pytest.raises(ShapeError):
        ops.batch_norm(x, np.ones(4), running_mean=mean, running_var=var)
    np.testing.assert_array_equal(mean, 0.0)
    np.testing.assert_array_equal(var, 1.0)
    ops.batch_norm(x, np.ones(3), running_mean=mean, running_var=var)  # and a good call moves them
    assert (mean > 0).all() and not np.allclose(var, 1.0)

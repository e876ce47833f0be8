"""Draws that take tensors of parameters: multinomial (categories from rows of weights) and
normal (a normal value for each mean and standard deviation)."""

from __future__ import annotations

import numpy as np

from ... import backend
from ...errors import ArgumentError, DTypeError, ShapeError
from ...runtime.defaults import default_device_or, get_default_dtype
from ...runtime.generator import numpy_source
from ...tensor import Tensor
from ..core.op import array_of
from ..core.variants import variants

__all__ = ["multinomial", "normal"]


@variants("function", "method")
def multinomial(  # noqa: A002
    input, num_samples: int, replacement: bool = False, *, generator=None
) -> Tensor:
    """`num_samples` category indices drawn from each row of `input`, non-negative weights (a
    1-d tensor of categories, or 2-d: a row of them per draw), each index with probability its
    weight over the row's sum: an int64 tensor of (num_samples,) or (rows, num_samples), outside
    the graph. Without `replacement` a row's indices are distinct: each draw is among the
    categories not drawn yet, in proportion to their weights, so num_samples is at most the
    number of categories; once the nonzero weights are drawn, zero-weight categories follow in
    index order (PyTorch draws them too, in an order it does not specify). Draws from
    `generator` (a minitrain.Generator) or the stream `manual_seed` fixes, on the CPU; the
    result goes to `input`'s device. Errors (RuntimeErrors, as PyTorch's) for a weight that is
    negative, inf or NaN, and for a row summing to 0."""
    source = numpy_source(generator, "multinomial")
    array = array_of(input)
    weights = _checked_weights(array, num_samples, replacement)
    random = source or backend.generator()
    rows = weights.reshape(-1, weights.shape[-1])
    if replacement:
        # each draw independently: where a uniform number falls among the rows' cumulative sums
        totals = np.cumsum(rows, axis=1)
        uniforms = random.random((rows.shape[0], num_samples)) * totals[:, -1:]
        drawn = [
            np.searchsorted(row, u, side="right") for row, u in zip(totals, uniforms, strict=True)
        ]
        # a category of weight 0 at the end must not be reached through a rounding of the sums
        picked = np.minimum(
            np.array(drawn, dtype=np.int64).reshape(-1, num_samples), _last_nonzero(rows)[:, None]
        )
    else:
        # successive draws without replacement are the categories in increasing order of
        # E / w with E ~ Exp(1) (the first of independent exponential clocks of rates w to ring)
        clocks = random.exponential(size=rows.shape)
        with np.errstate(divide="ignore"):
            keys = np.where(rows > 0, clocks / np.where(rows > 0, rows, 1), np.inf)
        picked = np.argsort(keys, axis=1, kind="stable")[:, :num_samples].astype(np.int64)
    out = picked.reshape((*weights.shape[:-1], num_samples))
    return Tensor(backend.to_device(out, backend.device_of(array)))


def _checked_weights(array, num_samples, replacement) -> np.ndarray:
    """The weights as a float64 numpy array, after PyTorch's checks of them and of num_samples."""
    if isinstance(num_samples, bool) or not isinstance(num_samples, (int, np.integer)):
        raise DTypeError(f"multinomial: num_samples must be an int, got {num_samples!r}")
    if getattr(array, "dtype", np.dtype(np.int64)).kind != "f":
        raise DTypeError(
            f"multinomial: input must be floating point, got {getattr(array, 'dtype', None)}"
        )
    if array.ndim not in (1, 2):
        raise ShapeError(f"multinomial: input must be 1-d or 2-d, got shape {array.shape}")
    if num_samples <= 0:
        raise ArgumentError(f"multinomial: num_samples must be positive, got {num_samples}")
    categories = array.shape[-1]
    if not replacement and num_samples > categories:
        raise ArgumentError(
            f"multinomial: cannot draw {num_samples} samples without replacement from "
            f"{categories} categories (input shape {array.shape})"
        )
    weights = backend.to_device(array, backend.device("cpu")).astype(np.float64)
    if not np.isfinite(weights).all() or (weights < 0).any():
        raise ArgumentError(
            f"multinomial: weights must be finite and non-negative (no inf, NaN or value < 0), "
            f"got input of shape {array.shape} with such a value"
        )
    sums = weights.sum(axis=-1)
    if sums.size and (sums <= 0).any():
        raise ArgumentError(
            f"multinomial: each row of weights must have a positive sum, got sums "
            f"{np.atleast_1d(sums).tolist()}"
        )
    return weights


def _last_nonzero(rows: np.ndarray) -> np.ndarray:
    """Each row's last category of nonzero weight."""
    return rows.shape[1] - 1 - np.argmax(rows[:, ::-1] > 0, axis=1)


def normal(
    mean=0.0,
    std=1.0,
    size=None,
    *,
    generator=None,
    dtype=None,
    device=None,
    requires_grad: bool = False,
) -> Tensor:
    """Values drawn from normal distributions, PyTorch's torch.normal: `mean` and `std` tensors
    (or one of them a number) broadcast against each other give one draw per element, in their
    floating dtype and on their device; two numbers need `size`, and give a tensor of it in
    `dtype` (the default dtype unless given) on `device`. The result is outside the graph:
    PyTorch's gradient through a draw is 0. A negative std is an ArgumentError (a
    RuntimeError, as PyTorch's). Draws from `generator` (a minitrain.Generator) or the stream
    `manual_seed` fixes."""
    source = numpy_source(generator, "normal")
    tensors = [value for value in (mean, std) if isinstance(value, Tensor)]
    # every check before the draw, so that a refused call leaves the generator where it was
    if not tensors:
        if size is None:
            raise ArgumentError(
                "normal: with a number for both mean and std, give size (a tuple of ints)"
            )
        dtype = np.dtype(get_default_dtype() if dtype is None else dtype)
        where = backend.device(default_device_or(device))
        shape = tuple(size)
        mean_array, std_array = float(mean), float(std)
    else:
        if size is not None:
            raise ArgumentError("normal: size is for a number mean and std; tensors set it")
        mean_array, std_array = (array_of(value) for value in (mean, std))
        floating = [t.dtype for t in tensors if t.dtype.kind == "f"]  # a number takes theirs
        if len(floating) < len(tensors):
            raise DTypeError("normal: mean and std must be floating point tensors")
        dtype, where = np.result_type(*floating), tensors[0].device
        try:
            shape = np.broadcast_shapes(np.shape(mean_array), np.shape(std_array))
        except ValueError:
            raise ShapeError(
                f"normal: mean of shape {np.shape(mean_array)} and std of shape "
                f"{np.shape(std_array)} do not broadcast"
            ) from None
    if (np.asarray(backend.to_device(std_array, backend.device("cpu"))) < 0).any():
        raise ArgumentError(f"normal: expects std >= 0.0, got std={std!r}")
    values = backend.draw(where, "normal", shape, dtype, 0.0, 1.0, source)
    drawn = (mean_array + std_array * values).astype(dtype, copy=False)
    return Tensor(drawn, requires_grad=requires_grad)

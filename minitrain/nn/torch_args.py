"""PyTorch's arguments that minitrain checks, refuses or translates by name: sizes, defaults it
does not support, the deprecated loss arguments (read as PyTorch reads them), embedding options.

(The conv and pool ops take PyTorch's arguments themselves; their translation to the kernels'
ONNX spelling is minitrain.ops.convolution.window's.)

Errors name the PyTorch function (`caller`) and PyTorch's argument names.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..errors import ArgumentError, DTypeError


def check_positive_int(caller: str, name: str, value, least: int = 1) -> int:
    """A size argument (`name` in the caller's signature): an int (bools refused), at least
    `least` (1: positive)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise DTypeError(f"{caller}: {name} must be an int, got {value!r}")
    if value < least:
        bound = "positive" if least == 1 else f">= {least}"
        raise ArgumentError(f"{caller}: {name} must be {bound}, got {value}")
    return int(value)


def check_default(caller: str, name: str, value, default, reason: str) -> None:
    """A PyTorch argument minitrain does not support: code pasted from PyTorch that spells out
    its default keeps working; any other value is refused by name rather than ignored."""
    plain = isinstance(value, (bool, int, float, str))
    if value is default or (plain and value == default):
        return
    shown = repr(value) if plain else f"<{type(value).__name__}>"
    raise ArgumentError(
        f"{caller}: {name}={shown} is not supported ({reason}); leave it at {default!r}"
    )


def legacy_reduction(caller: str, size_average, reduce, reduction: str) -> str:
    """The reduction to use: `reduction`, or, where PyTorch's deprecated size_average or reduce
    is given, the one they mean (PyTorch's rule, with its warning): reduce=False is 'none',
    else size_average=False is 'sum', else 'mean'. Either overrides `reduction`, as in PyTorch."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    meant = "none" if not reduce else ("mean" if size_average else "sum")
    warnings.warn(
        f"{caller}: size_average and reduce args will be deprecated, please use "
        f"reduction='{meant}' instead.",
        UserWarning,
        stacklevel=3,
    )
    return meant


def check_embedding_options(caller: str, max_norm, scale_grad_by_freq, sparse) -> None:
    """An embedding's max_norm, scale_grad_by_freq and sparse: PyTorch's defaults only.
    norm_type is not checked: without max_norm, PyTorch ignores it too."""
    check_default(caller, "max_norm", max_norm, None, "rows are never renormalized")
    check_default(
        caller, "scale_grad_by_freq", scale_grad_by_freq, False, "gradients are never rescaled"
    )
    check_default(caller, "sparse", sparse, False, "minitrain has no sparse gradients")


def padding_row(padding_idx: int | None, rows: int, caller: str) -> int | None:
    """padding_idx as a row of a (rows, dim) table: in [-rows, rows), negative ones counting from
    the end (as PyTorch), else a ValueError rather than a row number that wraps. None stays None."""
    if padding_idx is None:
        return None
    if not -rows <= padding_idx < rows:
        raise ArgumentError(
            f"{caller}: padding_idx {padding_idx} is out of range for num_embeddings={rows} "
            f"(valid: {-rows} to {rows - 1})"
        )
    return padding_idx % rows

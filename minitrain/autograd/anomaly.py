"""Anomaly mode's checks: the first nan or inf an op's forward makes, or its backward sends, raises
a GraphError naming the op, the phase, statistics of what it read, and the line of user code
that ran the op. Turned on by `minitrain.autograd.detect_anomaly` (or set_detect_anomaly); off,
none of this runs."""

from __future__ import annotations

import math
import os
import sys

import numpy as np

from ..errors import GraphError

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # minitrain/


def user_line() -> str:
    """'file:line in function' of the innermost caller outside minitrain: the user code that
    ran the op being recorded."""
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame = frame.f_back
    if frame is None:
        return "minitrain itself"
    return f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}"


def check_forward(op_name: str, inputs, out) -> str:
    """Raise if the forward output `out` holds nan, or inf where no input held one (a -inf put
    in on purpose, as an attention mask's, may flow on); else return the user line, kept with
    the op's node for its backward's message."""
    line = user_line()
    if not _finite(out) and (_has_nan(out) or all(map(_finite, inputs))):
        raise GraphError(
            f"{op_name}: anomaly in forward: its output {_stats(out)}; its inputs "
            f"{_stats_of(inputs)}; the op was run at {line}"
        )
    return line


def check_backward(node, grad, grads) -> None:
    """Raise if a gradient the node's backward sent to its inputs holds nan or inf."""
    for index, input_grad in enumerate(grads):
        if input_grad is not None and not _finite(input_grad):
            ctx = node.ctx
            raise GraphError(
                f"{node.name}: anomaly in backward: the gradient of {node.op.name}'s input "
                f"'{node.op.input_name(index)}' {_stats(input_grad)}; the gradient it received "
                f"{_stats(grad)}; its saved values {_stats_of(ctx.saved_values())}; the op was "
                f"run at {ctx.trace or 'an unknown line (recorded outside anomaly mode)'}"
            )


def _finite(value) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if not hasattr(value, "dtype") or value.dtype.kind not in "fc":
        return True
    return bool(_xp(value).isfinite(value).all())


def _has_nan(array) -> bool:
    return bool(_xp(array).isnan(array).any())


def _xp(array):
    return sys.modules["cupy"] if type(array).__module__.startswith("cupy") else np


def _stats(value) -> str:
    """An array's shape, dtype, and min / max / mean of its finite values with its nan and inf
    counts; a number or None as it is."""
    if not hasattr(value, "dtype"):
        return repr(value)
    described = f"{tuple(value.shape)} {value.dtype}"
    if value.dtype.kind not in "fciub" or value.size == 0:
        return described
    array = np.asarray(value.get() if hasattr(value, "get") else value, dtype=np.float64)
    finite = array[np.isfinite(array)]
    numbers = (
        f"min {finite.min():.4g}, max {finite.max():.4g}, mean {finite.mean():.4g}"
        if finite.size
        else "no finite values"
    )
    nans, infs = int(np.isnan(array).sum()), int(np.isinf(array).sum())
    return f"{described} ({numbers}; {nans} nan, {infs} inf)"


def _stats_of(values) -> str:
    items = values.items() if isinstance(values, dict) else enumerate(values)
    return "; ".join(f"{name}: {_stats(value)}" for name, value in items) or "none"

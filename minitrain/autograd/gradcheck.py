"""Finite-difference gradient checks in float64: the full Jacobian for small inputs, a
random-direction check for large ones."""

from __future__ import annotations

import math

import numpy as np

from ..errors import ArgumentError, DTypeError, GradcheckError
from . import grad
from .boundary import is_tensor, new_tensor
from .grad_mode import enable_grad, no_grad

__all__ = ["gradcheck", "gradgradcheck"]


def _as_float64(value):
    if is_tensor(value) and value.dtype.kind == "f":
        copy = new_tensor(value.array.astype(np.float64, copy=True))
        copy.requires_grad = value.requires_grad
        return copy
    return value


def _outputs(fn, inputs) -> list:
    out = fn(*inputs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    for i, o in enumerate(outs):
        if not is_tensor(o):
            raise GradcheckError(f"gradcheck: output {i} of fn is a {type(o).__name__}")
    return outs


def _flat_output(fn, inputs) -> np.ndarray:
    with no_grad():
        return np.concatenate([o.array.ravel() for o in _outputs(fn, inputs)])


def _close(analytic, numeric, atol, rtol):
    """How far each analytic value lies outside the tolerance around the numeric one (> 0:
    they disagree); inf where either is nan or inf, which never agrees."""
    with np.errstate(invalid="ignore"):
        excess = np.abs(analytic - numeric) - (atol + rtol * np.abs(numeric))
    return np.where(np.isfinite(analytic) & np.isfinite(numeric), excess, np.inf)


def _check_arguments(fn, eps, atol, rtol, mode, directions) -> None:
    if not callable(fn):
        raise DTypeError(f"gradcheck: fn must be callable, got {type(fn).__name__}")
    for name, value, smallest in (
        ("eps", eps, "> 0"),
        ("atol", atol, ">= 0"),
        ("rtol", rtol, ">= 0"),
    ):
        number = isinstance(value, (int, float, np.floating, np.integer))
        if isinstance(value, bool) or not number:
            raise DTypeError(f"gradcheck: {name} must be a number, got {type(value).__name__}")
        if not math.isfinite(value) or value < 0 or (name == "eps" and value == 0):
            raise ArgumentError(f"gradcheck: {name} must be finite and {smallest}, got {value!r}")
    if mode not in ("auto", "full", "direction"):
        raise ArgumentError(f"gradcheck: mode must be 'auto', 'full' or 'direction', got {mode!r}")
    if isinstance(directions, bool) or not isinstance(directions, (int, np.integer)):
        raise DTypeError(f"gradcheck: directions must be an int, got {type(directions).__name__}")
    if directions < 1:
        raise ArgumentError(f"gradcheck: directions must be at least 1, got {directions!r}")


def _checked_inputs(caller, fn, inputs, eps, atol, rtol, mode, directions) -> tuple:
    """(inputs as float64 copies, the positions of those checked: floating and requiring
    grad), once the arguments are checked."""
    _check_arguments(fn, eps, atol, rtol, mode, directions)
    inputs = [_as_float64(x) for x in ([inputs] if is_tensor(inputs) else inputs)]
    checked = [i for i, x in enumerate(inputs) if is_tensor(x) and x.requires_grad]
    if not checked:
        raise GradcheckError(f"{caller}: no input requires grad, nothing to check")
    return inputs, checked


def _precision_hint(outputs) -> str:
    """Why a mismatch may be rounding: a (non-empty) output computed below float64."""
    low = [
        (i, o.dtype)
        for i, o in enumerate(outputs)
        if o.dtype.kind == "f" and o.dtype.itemsize < 8 and o.array.size
    ]
    if not low:
        return ""
    i, dtype = low[0]
    return (
        f"; output {i} is {dtype}, not float64: fn computes in lower precision even from float64 "
        f"inputs, so its finite differences are rounding noise"
    )


def gradcheck(
    fn,
    inputs,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    *,
    mode: str = "auto",
    directions: int = 3,
    seed: int = 0,
) -> bool:
    """Check the gradients of `fn(*inputs)` against central finite differences, in float64.

    `inputs` is a Tensor or a sequence of arguments; every floating input that requires grad is
    checked (on a float64 copy: the caller's tensors, values and .grad, are never touched), the
    others are passed as they are. `mode='full'` compares the whole Jacobian, one backward per
    output element and two forwards per input element; `mode='direction'` compares the
    derivative along `directions` random directions per input; `'auto'` takes full when inputs
    and outputs have at most 1000 elements each. A nan or inf on either side is a mismatch.
    Returns True, or raises GradcheckError naming the input, the worst element and both values.
    """
    inputs, checked = _checked_inputs("gradcheck", fn, inputs, eps, atol, rtol, mode, directions)
    outputs = _outputs(fn, inputs)
    n_out = sum(o.array.size for o in outputs)
    n_in = sum(inputs[i].array.size for i in checked)
    if mode == "auto":
        mode = "full" if n_in <= 1000 and n_out <= 1000 else "direction"
    hint = _precision_hint(outputs)
    wrt = [inputs[i] for i in checked]
    graph_outputs = [o for o in outputs if o.requires_grad]

    def vjp(cotangent: np.ndarray) -> list[np.ndarray]:
        """Analytic cotangent @ Jacobian, one array per checked input."""
        if not graph_outputs:
            return [np.zeros_like(x.array) for x in wrt]
        pieces, start = [], 0
        for o in outputs:
            pieces.append(cotangent[start : start + o.array.size].reshape(o.shape))
            start += o.array.size
        seeds = [new_tensor(p) for o, p in zip(outputs, pieces, strict=True) if o.requires_grad]
        grads = grad(graph_outputs, wrt, seeds, retain_graph=True, allow_unused=True)
        return [
            np.zeros_like(x.array) if g is None else g.array
            for x, g in zip(wrt, grads, strict=True)
        ]

    def numeric(x, direction: np.ndarray) -> np.ndarray:
        """(f(x + eps*d) - f(x - eps*d)) / 2eps, flattened over the outputs."""
        original = x.array
        x.array = np.asarray(original + eps * direction)  # 0-d stays an array, not a scalar
        plus = _flat_output(fn, inputs)
        x.array = np.asarray(original - eps * direction)
        minus = _flat_output(fn, inputs)
        x.array = original
        return (plus - minus) / (2 * eps)

    if mode == "full":
        _check_full(inputs, checked, outputs, vjp, numeric, atol, rtol, hint)
    else:
        _check_directions(inputs, checked, n_out, vjp, numeric, atol, rtol, directions, seed, hint)
    return True


def _output_element(outputs, flat: int) -> str:
    """'output element (1, 2)', or 'output 1 element (0,)' when fn has several outputs: where
    entry `flat` of the outputs, raveled and concatenated, lies."""
    ends = np.cumsum([o.array.size for o in outputs])
    i = int(np.searchsorted(ends, flat, side="right"))
    shape = outputs[i].shape
    flat -= int(ends[i]) - outputs[i].array.size
    at = tuple(int(v) for v in np.unravel_index(flat, shape)) if shape else ()
    return f"output {i} element {at}" if len(outputs) > 1 else f"output element {at}"


def _check_full(inputs, checked, outputs, vjp, numeric, atol, rtol, hint) -> None:
    n_out = sum(o.array.size for o in outputs)
    if n_out == 0:  # an empty Jacobian: backward must still run and give zero-size or zero grads
        for k, g in enumerate(vjp(np.zeros(0))):
            if np.any(g != 0):
                raise GradcheckError(
                    f"gradcheck: the output is empty, yet input {checked[k]} got a nonzero gradient"
                )
        return
    rows = [vjp(np.eye(1, n_out, j).ravel()) for j in range(n_out)]
    for k, i in enumerate(checked):
        x = inputs[i]
        analytic = np.stack([row[k].ravel() for row in rows], axis=1).reshape(x.array.size, n_out)
        numeric_jac = np.empty_like(analytic)
        for e in range(x.array.size):
            direction = np.zeros_like(x.array)
            direction.flat[e] = 1.0
            numeric_jac[e] = numeric(x, direction)
        excess = _close(analytic, numeric_jac, atol, rtol)
        if (excess > 0).any():
            e, j = np.unravel_index(np.argmax(excess), excess.shape)
            at = np.unravel_index(e, x.shape) if x.shape else ()
            raise GradcheckError(
                f"gradcheck: gradient of input {i} (shape {x.shape}) is wrong at element "
                f"{tuple(int(v) for v in at)} for {_output_element(outputs, int(j))}: "
                f"analytic {analytic[e, j]:.6g}, numeric {numeric_jac[e, j]:.6g} "
                f"(atol={atol}, rtol={rtol}; {int((excess > 0).sum())} of {excess.size} "
                f"Jacobian entries disagree){hint}"
            )


def _check_directions(inputs, checked, n_out, vjp, numeric, atol, rtol, directions, seed, hint):
    rng = np.random.default_rng(seed)
    for _ in range(directions):
        cotangent = rng.standard_normal(n_out)
        analytic_grads = vjp(cotangent)
        for k, i in enumerate(checked):
            x = inputs[i]
            direction = rng.standard_normal(x.shape)
            analytic = float(np.sum(analytic_grads[k] * direction))
            numeric_value = float(cotangent @ numeric(x, direction))
            if _close(analytic, numeric_value, atol, rtol) > 0:
                worst = np.unravel_index(np.argmax(np.abs(analytic_grads[k])), x.shape)
                raise GradcheckError(
                    f"gradcheck: gradient of input {i} (shape {x.shape}) is wrong along a random "
                    f"direction: analytic {analytic:.6g}, numeric {numeric_value:.6g} "
                    f"(atol={atol}, rtol={rtol}); largest analytic entry at element "
                    f"{tuple(int(v) for v in worst)}; mode='full' on a smaller input localises it"
                    f"{hint}"
                )


def gradgradcheck(
    fn,
    inputs,
    grad_outputs=None,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    *,
    mode: str = "auto",
    directions: int = 3,
    seed: int = 0,
) -> bool:
    """Check the second derivatives of `fn(*inputs)` against finite differences of its
    gradient, in float64, as `torch.autograd.gradgradcheck`.

    The function checked is `(inputs, v) -> grad(fn(inputs), inputs, v, create_graph=True)`:
    its gradient, by gradcheck, is the second derivative contracted with v, taken through the
    recorded backward. `grad_outputs` (v, one per output) default to random normal tensors
    (seeded by `seed`), which require grad: the derivative with respect to v is checked too.
    `mode` and `directions` as gradcheck's: the full matrix, or random directions. Returns True,
    or raises GradcheckError (input indices past fn's count the grad_outputs)."""
    inputs, checked = _checked_inputs(
        "gradgradcheck", fn, inputs, eps, atol, rtol, mode, directions
    )
    outputs = _outputs(fn, inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(seed)
        grad_outputs = [
            new_tensor(rng.standard_normal(o.shape), requires_grad=True) for o in outputs
        ]
    else:
        grad_outputs = [_as_float64(v) for v in _sequence(grad_outputs)]
        if len(grad_outputs) != len(outputs):
            raise GradcheckError(
                f"gradgradcheck: got {len(grad_outputs)} grad_outputs for {len(outputs)} outputs"
            )
        for i, (o, v) in enumerate(zip(outputs, grad_outputs, strict=True)):
            if not is_tensor(v) or v.shape != o.shape:
                raise GradcheckError(
                    f"gradgradcheck: grad_outputs[{i}] must be a Tensor of the output's shape "
                    f"{o.shape}, got {getattr(v, 'shape', type(v).__name__)}"
                )
    n = len(inputs)

    def gradient_of_fn(*values):
        """fn's gradient with respect to its checked inputs, recorded (zeros where unused);
        recorded under gradcheck's no_grad too, where its finite differences evaluate this."""
        wrt = [values[i] for i in checked]
        with enable_grad():
            outs = _outputs(fn, values[:n])
        pairs = [(o, v) for o, v in zip(outs, values[n:], strict=True) if o.requires_grad]
        if not pairs:
            return tuple(new_tensor(np.zeros_like(x.array)) for x in wrt)
        with enable_grad():
            found = grad(
                [o for o, _ in pairs], wrt, [v for _, v in pairs], create_graph=True,
                allow_unused=True,
            )  # fmt: skip
        return tuple(
            new_tensor(np.zeros_like(x.array)) if g is None else g
            for x, g in zip(wrt, found, strict=True)
        )

    try:
        return gradcheck(
            gradient_of_fn, [*inputs, *grad_outputs], eps, atol, rtol,
            mode=mode, directions=directions, seed=seed,
        )  # fmt: skip
    except GradcheckError as error:
        first_order = "gradcheck: gradient of"
        message = str(error).replace(first_order, "gradgradcheck: second derivative of")
        raise GradcheckError(message) from None


def _sequence(values) -> list:
    return [values] if is_tensor(values) else list(values)

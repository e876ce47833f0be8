"""What the fused recurrent cells and sequence ops (lstm.py, gru.py) share: the shape checks of a
cell, of a sequence and of a cell's gradient kernel, the numba gate math (sigmoid and tanh on
numba_math's vectorisable exp), the input's part of the gates, the weights' gradients and the
order a direction runs its steps in.

Each cell op takes one time step's input and the previous hidden state, does both matmuls (input
to hidden and hidden to hidden, PyTorch's weight layout: gates stacked along dim 0) and the gate
math, and saves the activated gates for backward. The matmuls are BLAS through numpy; the gate
math between them runs as a numba kernel on the CPU (one pass where numpy makes a dozen), chosen
per call as conv_grad chooses (one backend.numba_takes of the step's arrays); each cell's
`numba_bench` names the row that keeps its kernels (train step LSTM, train step GRU).

The input's product may also come from outside (w_ih None: x is then the input's gates): nn.LSTM
and nn.GRU compute x_t @ w_ih^T + b_ih for every time step in one linear, whose rows (T * batch)
keep BLAS at full speed. The sequence ops (lstm_sequence, gru_sequence) take all of it and loop
over the steps inside, their backward giving the input gates' gradient as one array and dw_hh as
one product over all steps. Chained cells (a PackedSequence) read a slice each; the slices'
gradients add up into one array (a SliceSum, autograd/deferred.py), and each step's dw_hh, a
ProductSum, into one product of the stacked steps.
"""

from __future__ import annotations

import functools
import importlib
import math
from types import SimpleNamespace

import numpy as np

from ...autograd.deferred import ProductSum
from ...errors import ShapeError
from ..activations.special import stable_sigmoid
from ..core import numba_math
from ..core.op import shape_of
from ..linalg.products import linear
from ..shapes.shape import stack

__all__ = [
    "GATE_PARALLEL_ELEMENTS",
    "NO_RAISE",
    "check_cell",
    "check_cell_grad",
    "check_need",
    "check_sequence",
    "gate_sigmoid",
    "gate_tanh",
    "input_gates",
    "input_gates_grad",
    "numba_arrays",
    "recurrent_weight_grads",
    "register_gate_math",
    "sequence_order",
    "weight_grads",
]

# batch * hidden_size from which the LSTM's and GRU's gate kernels run their parallel build (see
# numba_math.loop): a step's gate math sits between GEMMs whose BLAS threads hold the cores
GATE_PARALLEL_ELEMENTS = 1 << 20


def check_cell(caller, gates, x, state, state_name, lead, w_ih, w_hh, b_ih, b_hh) -> None:
    """The shapes of a cell's inputs: x (batch, input_size), the state `lead` + (batch,
    hidden_size), w_ih (gates * hidden_size, input_size), w_hh (gates * hidden_size,
    hidden_size), the biases (gates * hidden_size,) or None. w_ih None: x is the input's part
    of the gates already, x @ w_ih^T + b_ih (batch, gates * hidden_size), and b_ih is None.
    Errors name `caller` and the shapes."""
    sw_hh, sx = shape_of(w_hh), shape_of(x)
    if len(sw_hh) != 2 or sw_hh[0] != gates * sw_hh[1]:
        raise ShapeError(
            f"{caller}: w_hh {sw_hh} must be ({gates} * hidden_size, hidden_size), the "
            f"{gates} gates' weights stacked"
        )
    hidden = sw_hh[1]
    if len(sx) != 2:
        raise ShapeError(f"{caller}: x {sx} must be (batch, input_size)")
    if w_ih is None:
        if sx[1] != gates * hidden or b_ih is not None:
            raise ShapeError(
                f"{caller}: without w_ih, x {sx} must be the input's gates (batch, {gates} * "
                f"hidden_size) = (batch, {gates * hidden}) for w_hh {sw_hh}, b_ih folded in"
            )
    elif (sw_ih := shape_of(w_ih)) != (gates * hidden, sx[1]):
        raise ShapeError(
            f"{caller}: w_ih {sw_ih} must be ({gates} * hidden_size, input_size) = "
            f"{(gates * hidden, sx[1])} for x {sx} and w_hh {sw_hh}"
        )
    expected = lead + (sx[0], hidden)
    if shape_of(state) != expected:
        layout = "h over c, each (batch, hidden_size)" if lead else "(batch, hidden_size)"
        raise ShapeError(
            f"{caller}: {state_name} {shape_of(state)} must have shape {expected} ({layout}) "
            f"for x {sx} and hidden_size {hidden}"
        )
    for name, bias in (("b_ih", b_ih), ("b_hh", b_hh)):
        if bias is not None and shape_of(bias) != (gates * hidden,):
            raise ShapeError(
                f"{caller}: {name} {shape_of(bias)} must have shape ({gates * hidden},) "
                f"({gates} * hidden_size)"
            )


def check_sequence(caller, gates, input_gates, state, state_name, lead, w_hh, b_hh) -> None:
    """The shapes of a whole-sequence op's inputs: the input's gates (T, batch, gates *
    hidden_size) for T >= 1 steps, and a cell's for one step of them (see check_cell)."""
    shape = shape_of(input_gates)
    if len(shape) != 3 or shape[0] == 0:
        raise ShapeError(
            f"{caller}: input_gates {shape} must be (seq_len, batch, {gates} * hidden_size), "
            f"the input's gates of every time step, seq_len >= 1"
        )
    step = SimpleNamespace(shape=shape[1:])  # one step's input gates, for check_cell
    check_cell(caller, gates, step, state, state_name, lead, None, w_hh, None, b_hh)


def sequence_order(steps: int, reverse: bool) -> range:
    """The time steps in the order a direction runs them."""
    return range(steps - 1, -1, -1) if reverse else range(steps)


def stepwise_tensor_backward(ctx, grad, cell_backward, state_name: str):
    """A sequence op's tensor_backward: its cell's (cell_backward, the cell op's
    tensor_backward) step by step from the last step run, each step's inputs read from the
    graph (its input gates, and as its state the initial one, ctx.<state_name>, or the output
    of the step before), so every derivative moves with the inputs and has one formula, the
    cell's. Returns the sequence op's (dinput_gates, dstate, dw_hh, db_hh)."""
    out, need = ctx.out, ctx.needs_grad
    steps = len(out)
    order = sequence_order(steps, ctx.reverse)
    step_need = (need[0], True, False, need[2], False, need[3])
    input_grads, carry, dw_hh, db_hh = [None] * steps, None, None, None
    for count in range(steps - 1, -1, -1):
        t = order[count]
        state = getattr(ctx, state_name) if count == 0 else out[order[count - 1]]
        step = SimpleNamespace(
            x=ctx.input_gates[t], w_ih=None, w_hh=ctx.w_hh, b_ih=None, b_hh=ctx.b_hh,
            needs_grad=step_need, **{state_name: state},
        )  # fmt: skip
        dx, carry, _, dw, _, db = cell_backward(step, grad[t] if carry is None else grad[t] + carry)
        input_grads[t] = dx
        dw_hh = dw if dw_hh is None or dw is None else dw_hh + dw
        db_hh = db if db_hh is None or db is None else db_hh + db
    return (stack(input_grads) if need[0] else None), (carry if need[1] else None), dw_hh, db_hh


def recurrent_weight_grads(xp, dgates, hidden, initial, reverse: bool, need_w, need_b):
    """(dw_hh, db_hh) of a sequence op, each None where not needed, from every step's gradient of
    the recurrent gates' pre-activations dgates (T, batch, G hidden_size) and every step's new
    hidden state `hidden` (T, batch, hidden_size) after `initial`: dw_hh = dG^T @ h_prev and
    db_hh = the sum of dG, one product and one sum over all steps."""
    flat = dgates.reshape(-1, dgates.shape[-1])
    dw_hh = None
    if need_w:  # every step's previous hidden state, in one C-contiguous array
        h_prev = xp.empty(hidden.shape, hidden.dtype)
        if reverse:  # step t follows step t + 1
            h_prev[:-1], h_prev[-1] = hidden[1:], initial
        else:
            h_prev[1:], h_prev[0] = hidden[:-1], initial
        dw_hh = flat.T @ h_prev.reshape(-1, h_prev.shape[-1])
    return dw_hh, (flat.sum(axis=0) if need_b else None)


def check_cell_grad(caller, gates, dY, X, hidden, w_ih, w_hh, saved_gates, state_shape) -> None:
    """A cell kernel's arrays must be those of one forward: dY and the state of `state_shape`,
    X (batch, input_size), the weights, the saved gates (batch, gates * hidden_size)."""
    batch, size = X.shape[0], hidden.shape[-1]
    expected = {
        "dY": state_shape,
        "hidden state": state_shape,
        "w_ih": (gates * size, X.shape[1]),
        "w_hh": (gates * size, size),
        "gates": (batch, gates * size),
    }
    given = {"dY": dY, "hidden state": hidden, "w_ih": w_ih, "w_hh": w_hh, "gates": saved_gates}
    if w_ih is None:  # X holds the input's gates
        expected["X"], given["X"] = expected.pop("w_ih"), X
        expected["X"] = (batch, gates * size)
    for name, want in expected.items():
        if tuple(given[name].shape) != want:
            raise ShapeError(
                f"{caller}: {name} {tuple(given[name].shape)} must have shape {want} (X "
                f"{tuple(X.shape)}, hidden state {tuple(hidden.shape)})"
            )


def check_need(caller: str, need) -> tuple[bool, ...]:
    """A kernel's `need`: six flags, one per gradient it can compute."""
    need = tuple(bool(n) for n in need)
    if len(need) != 6:
        raise ShapeError(f"{caller}: need must hold 6 flags, got {len(need)}")
    return need


def gate_sigmoid(v):
    """1 / (1 + exp(-v)), stable. In numba code (after `register_gate_math()`) the two-branch
    form on numba_math's vectorisable exp; in Python, the same through numpy."""
    return stable_sigmoid(np, v)


def gate_tanh(v):
    """tanh(v). In numba code (after `register_gate_math()`) -expm1(-2|v|) / (2 + expm1(-2|v|))
    with the sign of v, expm1 from numba_math's vectorisable exp (a Taylor polynomial below
    |u| = 1/2, where exp(u) - 1 would cancel); in Python, numpy's."""
    return np.tanh(v)


# numpy's error model: a division by zero gives inf or nan rather than raising, so numba emits no
# check before each division, a branch that keeps LLVM from vectorising the loop
NO_RAISE = {"error_model": "numpy"}

# The Taylor degree n of expm1(u) on [-1/2, 0] per dtype: the first term left out, at most
# 0.5^(n+1) / (n+1)!, is under a hundredth of an ulp of |expm1(u)| >= |u| / 1.3 there.
_EXPM1_DEGREE = {np.dtype(np.float32): 9, np.dtype(np.float64): 15}


@functools.cache
def register_gate_math() -> None:
    """Give `gate_sigmoid` and `gate_tanh` their numba implementations (on first use, as
    numba_math's helpers, and as overloads for the same reason: numba's on-disk cache)."""
    numba_math.register()
    extending = importlib.import_module("numba.extending")
    types = importlib.import_module("numba.core.types")

    @extending.overload(gate_sigmoid, jit_options=NO_RAISE)
    def _numba_sigmoid(v):
        if not isinstance(v, types.Float):
            return None
        real = np.dtype(v.name).type
        zero, one = real(0), real(1)

        def sigmoid_of(v):
            e = numba_math.exp_nonpositive(-abs(v))
            r = one / (one + e)
            return r if v >= zero else e * r

        return sigmoid_of

    @extending.overload(gate_tanh, jit_options=NO_RAISE)
    def _numba_tanh(v):
        if not isinstance(v, types.Float) or np.dtype(v.name) not in _EXPM1_DEGREE:
            return None
        real = np.dtype(v.name).type
        degree = _EXPM1_DEGREE[np.dtype(real)]
        one, two, small = real(1), real(2), real(-0.5)
        # expm1(u) = u (1 + u/2 (1 + u/3 (1 + ...))), innermost first
        divisors = tuple(real(n) for n in range(degree, 1, -1))

        def tanh_of(v):
            u = -two * abs(v)
            series = one
            for divisor in divisors:
                series = one + u / divisor * series
            near, far = u * series, numba_math.exp_nonpositive(u) - one  # both: a select
            expm1 = near if u > small else far
            return math.copysign(-expm1 / (two + expm1), v)

        return tanh_of


def numba_arrays(*arrays):
    """The arrays as numba's kernels take them: C-contiguous (a copy only where not already)."""
    return [None if a is None else np.ascontiguousarray(a) for a in arrays]


def weight_grads(need, dgates_x, dgates_h, X, h_prev, w_ih, sums: bool):
    """A cell's gradients but the hidden state's, from its gate gradients: dgates_x, what the
    input's product fed, and dgates_h, what the hidden state's did (one array for an LSTM).

    With `sums`, the weights' and biases' gradients come as ProductSums (deferred.py): the
    engine adds up every time step's as one product of the stacked steps, not one per step."""
    if w_ih is None:  # X was the input's gates: their gradient is dgates_x itself
        need = (need[0], need[1], False, need[3], False, need[5])
        dX = dgates_x if need[0] else None
    else:
        dX = dgates_x @ w_ih if need[0] else None
    if sums:
        return (
            dX,
            ProductSum(dgates_x, X) if need[2] else None,
            ProductSum(dgates_h, h_prev) if need[3] else None,
            ProductSum(dgates_x) if need[4] else None,
            ProductSum(dgates_h) if need[5] else None,
        )
    dw_ih = dgates_x.T @ X if need[2] else None
    dw_hh = dgates_h.T @ h_prev if need[3] else None
    db_ih = dgates_x.sum(axis=0) if need[4] else None
    db_hh = dgates_h.sum(axis=0) if need[5] else None
    if db_ih is not None and db_hh is not None and dgates_h is dgates_x:
        db_hh = db_ih.copy()  # two leaves' gradients: not one array
    return dX, dw_ih, dw_hh, db_ih, db_hh


def input_gates(x, w_ih, b_ih=None):
    """The input's part of a cell's gates, x @ w_ih^T + b_ih (arrays or tensors); x itself where
    w_ih is None (the layer computed them for every time step in one product)."""
    if w_ih is None:
        return x
    return x @ w_ih.T if b_ih is None else linear(x, w_ih, b_ih)


def input_gates_grad(dgates, w_ih):
    """The gradient of a cell's x from that of its input gates (see input_gates)."""
    return dgates if w_ih is None else dgates @ w_ih

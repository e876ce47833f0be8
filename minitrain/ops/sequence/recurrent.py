"""Recurrent cell steps as fused ops, one node per time step: lstm_cell and gru_cell, with their
gradient kernels lstm_cell_grad and gru_cell_grad (docs/kernels.md section 7).

Each op takes one time step's input and the previous hidden state, does both matmuls (input to
hidden and hidden to hidden, PyTorch's weight layout: gates stacked along dim 0) and the gate
math, and saves the activated gates for backward. The matmuls are BLAS through numpy; the gate
math between them runs as a numba kernel on the CPU (one pass where numpy makes a dozen), chosen
per call as conv_grad chooses (backend.numba_takes). An LSTM's state is one tensor, h over c
stacked as (2, batch, hidden_size), so a step's output is the next step's input as it is and
backprop through time is a chain of cell nodes.

The input's product may also come from outside (w_ih None: x is then the input's gates): nn.LSTM
and nn.GRU compute x_t @ w_ih^T + b_ih for every time step in one linear, whose rows (T * batch)
keep BLAS at full speed, and each step reads its slice of it; the slices' gradients add up into
one array (a SliceSum, autograd/deferred.py), so the input's weight gradient and dx are one
product each too. The hidden state's weights get one gradient per step, returned as ProductSums,
which the engine adds up as one product of the stacked steps.

Op by op: its gradient kernel, its Op class, its numba kernels and its function; first the
shape checks both share and the numba gate math both use.
"""

from __future__ import annotations

import functools
import importlib
import math
from types import SimpleNamespace

import numpy as np

from ... import backend
from ...autograd.deferred import ProductSum
from ...errors import ShapeError
from ...tensor import Tensor
from ..activations.activation import floating_input, sigmoid, tanh
from ..activations.special import stable_sigmoid
from ..core import numba_math
from ..core.op import Op, shape_of
from ..linalg.products import linear
from ..shapes.shape import concat, stack

__all__ = ["gru_cell", "gru_cell_grad", "lstm_cell", "lstm_cell_grad"]

# batch * hidden_size from which the gate kernels run their parallel build (see
# numba_math.loop): a step's gate math sits between GEMMs whose BLAS threads hold the cores
_PARALLEL_ELEMENTS = 1 << 20


def _check_cell(caller, gates, x, state, state_name, lead, w_ih, w_hh, b_ih, b_hh) -> None:
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


def _check_cell_grad(caller, gates, dY, X, hidden, w_ih, w_hh, saved_gates, state_shape) -> None:
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


def _need(caller: str, need) -> tuple[bool, ...]:
    """A kernel's `need`: six flags, one per gradient it can compute."""
    need = tuple(bool(n) for n in need)
    if len(need) != 6:
        raise ShapeError(f"{caller}: need must hold 6 flags, got {len(need)}")
    return need


def _sigmoid(v):
    """1 / (1 + exp(-v)), stable. In numba code (after `_register_gate_math()`) the two-branch
    form on numba_math's vectorisable exp; in Python, the same through numpy."""
    return stable_sigmoid(np, v)


def _tanh(v):
    """tanh(v). In numba code (after `_register_gate_math()`) -expm1(-2|v|) / (2 + expm1(-2|v|))
    with the sign of v, expm1 from numba_math's vectorisable exp (a Taylor polynomial below
    |u| = 1/2, where exp(u) - 1 would cancel); in Python, numpy's."""
    return np.tanh(v)


# numpy's error model: a division by zero gives inf or nan rather than raising, so numba emits no
# check before each division, a branch that keeps LLVM from vectorising the loop
_NO_RAISE = {"error_model": "numpy"}

# The Taylor degree n of expm1(u) on [-1/2, 0] per dtype: the first term left out, at most
# 0.5^(n+1) / (n+1)!, is under a hundredth of an ulp of |expm1(u)| >= |u| / 1.3 there.
_EXPM1_DEGREE = {np.dtype(np.float32): 9, np.dtype(np.float64): 15}


@functools.cache
def _register_gate_math() -> None:
    """Give `_sigmoid` and `_tanh` their numba implementations (on first use, as numba_math's
    helpers, and as overloads for the same reason: numba's on-disk cache)."""
    numba_math.register()
    extending = importlib.import_module("numba.extending")
    types = importlib.import_module("numba.core.types")

    @extending.overload(_sigmoid, jit_options=_NO_RAISE)
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

    @extending.overload(_tanh, jit_options=_NO_RAISE)
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


def _numba_arrays(*arrays):
    """The arrays as numba's kernels take them: C-contiguous (a copy only where not already)."""
    return [None if a is None else np.ascontiguousarray(a) for a in arrays]


def lstm_cell_grad(dY, X, state, w_ih, w_hh, gates, Y, need=(True,) * 6):
    """(dX, dstate, dw_ih, dw_hh, db_ih, db_hh): the backward of `lstm_cell`.

    dY (2, batch, hidden) is the gradient of the output state (dh over dc), X (batch, input) the
    step's input, state (2, batch, hidden) the previous state (h_prev over c_prev), w_ih and
    w_hh PyTorch's weights, gates (batch, 4 hidden) the activated gates [i, f, g, o] the forward
    saved, Y (2, batch, hidden) the forward's output (h over c). With t = tanh(c):

        dc_total = dc + dh * o * (1 - t^2)
        dG = [dc_total * g * i (1 - i), dc_total * c_prev * f (1 - f),
              dc_total * i * (1 - g^2), dh * t * o (1 - o)]             (batch, 4 hidden)
        dX = dG @ w_ih, dh_prev = dG @ w_hh, dc_prev = dc_total * f
        dw_ih = dG^T @ X, dw_hh = dG^T @ h_prev, db_ih = db_hh = sum over the batch of dG

    dG is the gradient of the gates' pre-activations. With w_ih None (X the input's gates, see
    lstm_cell), dX = dG and dw_ih, db_ih are None.

    `need` says which of the six to compute (the others come back None). The gate math runs as a
    numba kernel where backend.numba_takes the arrays.
    """
    return _lstm_cell_grad(dY, X, state, w_ih, w_hh, gates, Y, need, sums=False)


def _lstm_cell_grad(dY, X, state, w_ih, w_hh, gates, Y, need, sums: bool):
    """lstm_cell_grad; with `sums`, the weights' and biases' gradients as ProductSums."""
    need = _need("lstm_cell_grad", need)
    _check_cell_grad("lstm_cell_grad", 4, dY, X, state, w_ih, w_hh, gates, state.shape)
    if Y.shape != state.shape:
        raise ShapeError(f"lstm_cell_grad: Y {Y.shape} must have state's shape {state.shape}")
    xp = backend.array_module(dY, X)
    dgates = xp.empty(gates.shape, gates.dtype)
    dstate = xp.empty(state.shape, state.dtype)
    if backend.numba_takes(dY, gates, state, Y):
        dY, gates, c_prev, c = _numba_arrays(dY, gates, state[1], Y[1])
        kernels = _lstm_kernels(c.size >= _PARALLEL_ELEMENTS)
        kernels.gates_grad(dY, gates, c_prev, c, dgates, dstate[1])
    else:
        _lstm_gates_grad(xp, dY, gates, state[1], Y[1], dgates, dstate[1])
    if need[1]:
        xp.matmul(dgates, w_hh, out=dstate[0])
    dX, dw_ih, dw_hh, db_ih, db_hh = _weight_grads(need, dgates, dgates, X, state[0], w_ih, sums)
    return dX, (dstate if need[1] else None), dw_ih, dw_hh, db_ih, db_hh


def _lstm_gates_grad(xp, dY, gates, c_prev, c, dgates, dc_prev) -> None:
    """The gate math of lstm_cell_grad (its docstring's formulas) in xp, into dgates and dc_prev."""
    i, f, g, o = (gates[:, k * c.shape[1] : (k + 1) * c.shape[1]] for k in range(4))
    t = xp.tanh(c)
    dh = dY[0]
    dc = dY[1] + dh * o * (1 - t * t)
    parts = (dc * g * i * (1 - i), dc * c_prev * f * (1 - f), dc * i * (1 - g * g))
    for k, part in enumerate(parts + (dh * t * o * (1 - o),)):
        dgates[:, k * c.shape[1] : (k + 1) * c.shape[1]] = part
    dc_prev[...] = dc * f


def _weight_grads(need, dgates_x, dgates_h, X, h_prev, w_ih, sums: bool):
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


class LSTMCell(Op):
    """One LSTM step, PyTorch's: gates = x @ w_ih^T + b_ih + h_prev @ w_hh^T + b_hh, split into
    [i, f, g, o]; c = sigmoid(f) * c_prev + sigmoid(i) * tanh(g), h = sigmoid(o) * tanh(c). The
    state (h over c) comes in and goes out as one (2, batch, hidden) tensor."""

    name = "lstm_cell"
    inputs = ("x", "state", "w_ih", "w_hh", "b_ih", "b_hh")
    saved = ("x", "state", "w_ih", "w_hh", "b_ih", "b_hh", "gates", "out")
    grad_kernel = "LSTMCellGrad"
    same_dtype = True
    fused_backward = "train step LSTM"

    @staticmethod
    def forward(ctx, x, state, w_ih, w_hh, b_ih, b_hh):
        xp = ctx.xp
        gx, gh = _input_gates(x, w_ih), state[0] @ w_hh.T
        gates = xp.empty(gx.shape, gx.dtype)
        out = xp.empty(state.shape, gx.dtype)
        bias = _joint_bias(xp, b_ih, b_hh, gx)
        if backend.numba_takes(x, state, w_ih, w_hh, bias):
            gx, gh, bias, c_prev = _numba_arrays(gx, gh, bias, state[1])
            _lstm_kernels(c_prev.size >= _PARALLEL_ELEMENTS).gates(gx, gh, bias, c_prev, gates, out)
        else:
            _lstm_gates(xp, gx + gh + bias, state[1], gates, out)
        ctx.save(x=x, state=state, w_ih=w_ih, w_hh=w_hh, b_ih=b_ih, b_hh=b_hh, gates=gates, out=out)
        return out

    @staticmethod
    def backward(ctx, grad):
        """dG = gate grads (lstm_cell_grad), dx = dG @ w_ih, dw_ih = dG^T x, dstate, dw_hh, db."""
        return _lstm_cell_grad(
            grad, ctx.x, ctx.state, ctx.w_ih, ctx.w_hh, ctx.gates, ctx.out, ctx.needs_grad, True
        )

    @staticmethod
    def tensor_backward(ctx, grad):
        """lstm_cell_grad's formulas in tensor ops, the gates recomputed from the inputs (the
        saved ones would be constants to the second derivative)."""
        x, w_ih, w_hh = ctx.x, ctx.w_ih, ctx.w_hh
        size = w_hh.shape[1]
        h_prev, c_prev = ctx.state[0], ctx.state[1]
        pre = _input_gates(x, w_ih, ctx.b_ih) + linear(h_prev, w_hh, ctx.b_hh)
        i, f, g, o = (pre[:, k * size : (k + 1) * size] for k in range(4))
        i, f, g, o = sigmoid(i), sigmoid(f), tanh(g), sigmoid(o)
        t = tanh(f * c_prev + i * g)
        dh, dc = grad[0], grad[1]
        dc = dc + dh * o * (1 - t * t)
        dgates = concat(
            [dc * g * i * (1 - i), dc * c_prev * f * (1 - f), dc * i * (1 - g * g),
             dh * t * o * (1 - o)],
            axis=1,
        )  # fmt: skip
        need = ctx.needs_grad
        dgates_t = dgates.T
        return (
            _input_gates_grad(dgates, w_ih) if need[0] else None,
            stack([dgates @ w_hh, dc * f]) if need[1] else None,
            dgates_t @ x if need[2] else None,
            dgates_t @ h_prev if need[3] else None,
            dgates.sum(axis=0) if need[4] else None,
            dgates.sum(axis=0) if need[5] else None,
        )


def _input_gates(x, w_ih, b_ih=None):
    """The input's part of a cell's gates, x @ w_ih^T + b_ih (arrays or tensors); x itself where
    w_ih is None (the layer computed them for every time step in one product)."""
    if w_ih is None:
        return x
    return x @ w_ih.T if b_ih is None else linear(x, w_ih, b_ih)


def _input_gates_grad(dgates, w_ih):
    """The gradient of a cell's x from that of its input gates (see _input_gates)."""
    return dgates if w_ih is None else dgates @ w_ih


def _joint_bias(xp, b_ih, b_hh, like):
    """b_ih + b_hh (either may be None; zeros where both are): an LSTM adds them together."""
    if b_ih is None and b_hh is None:
        return xp.zeros(like.shape[1], like.dtype)
    if b_ih is None or b_hh is None:
        return b_hh if b_ih is None else b_ih
    return b_ih + b_hh


def _lstm_gates(xp, pre, c_prev, gates, out) -> None:
    """The LSTM's gate math in xp, from the pre-activations (batch, 4 hidden): activated gates
    into `gates`, h and c into out[0] and out[1]."""
    size = c_prev.shape[1]
    gates[...] = stable_sigmoid(xp, pre)
    gates[:, 2 * size : 3 * size] = xp.tanh(pre[:, 2 * size : 3 * size])
    i, f, g, o = (gates[:, k * size : (k + 1) * size] for k in range(4))
    out[1] = f * c_prev + i * g
    out[0] = o * xp.tanh(out[1])


@functools.cache
def _lstm_kernels(parallel: bool) -> SimpleNamespace:
    """The LSTM gate math as numba kernels, forward and gradient, on C-contiguous arrays, in a
    parallel build (rows of the batch in parallel) and a serial one. Multiply-adds may fuse
    ("contract"); nothing is reordered. Each row runs as a few short loops over few arrays
    each, which LLVM vectorises (one loop touching every array does not: too many pairs of
    arrays that might overlap to check)."""
    _register_gate_math()
    loop = numba_math.loop(parallel)

    @backend.jit(parallel=parallel, fastmath={"contract"}, **_NO_RAISE)
    def lstm_gates(gx, gh, bias, c_prev, gates, out):
        size = c_prev.shape[1]
        for b in loop(gx.shape[0]):
            for j in range(2 * size):  # i, f
                gates[b, j] = _sigmoid(gx[b, j] + gh[b, j] + bias[j])
            for j in range(2 * size, 3 * size):  # g
                gates[b, j] = _tanh(gx[b, j] + gh[b, j] + bias[j])
            for j in range(3 * size, 4 * size):  # o
                gates[b, j] = _sigmoid(gx[b, j] + gh[b, j] + bias[j])
            for j in range(size):
                c = gates[b, size + j] * c_prev[b, j] + gates[b, j] * gates[b, 2 * size + j]
                out[1, b, j] = c
                out[0, b, j] = gates[b, 3 * size + j] * _tanh(c)

    @backend.jit(parallel=parallel, fastmath={"contract"}, **_NO_RAISE)
    def lstm_gates_grad(dy, gates, c_prev, c, dgates, dc_prev):
        size = c.shape[1]
        one = c.dtype.type(1)
        for b in loop(c.shape[0]):
            for j in range(size):  # dc_total into dc_prev, and o's gradient
                o = gates[b, 3 * size + j]
                t = _tanh(c[b, j])
                dh = dy[0, b, j]
                dc_prev[b, j] = dy[1, b, j] + dh * o * (one - t * t)
                dgates[b, 3 * size + j] = dh * t * o * (one - o)
            for j in range(size):
                i, f, g = gates[b, j], gates[b, size + j], gates[b, 2 * size + j]
                dc = dc_prev[b, j]
                dgates[b, j] = dc * g * i * (one - i)
                dgates[b, size + j] = dc * c_prev[b, j] * f * (one - f)
                dgates[b, 2 * size + j] = dc * i * (one - g * g)
                dc_prev[b, j] = dc * f

    return SimpleNamespace(gates=lstm_gates, gates_grad=lstm_gates_grad)


def lstm_cell(x, state, w_ih, w_hh, b_ih=None, b_hh=None) -> Tensor:
    """One LSTM step: the new state (2, batch, hidden_size), h over c, from x (batch,
    input_size) and the previous state (2, batch, hidden_size), h_prev over c_prev, with
    PyTorch's weights: w_ih (4 hidden_size, input_size), w_hh (4 hidden_size, hidden_size), the
    gates [i, f, g, o] stacked; biases (4 hidden_size,) or None. One node in the graph; its
    backward is lstm_cell_grad.

    w_ih (and b_ih) may be None, x then being the input's gates x @ w_ih^T + b_ih (batch,
    4 hidden_size) already: nn.LSTM computes those for all time steps in one product."""
    x = floating_input("lstm_cell", x)
    _check_cell("lstm_cell", 4, x, state, "state", (2,), w_ih, w_hh, b_ih, b_hh)
    return LSTMCell.apply(x, state, w_ih, w_hh, b_ih, b_hh)


def gru_cell_grad(dY, X, h, w_ih, w_hh, gates, hn, need=(True,) * 6):
    """(dX, dh, dw_ih, dw_hh, db_ih, db_hh): the backward of `gru_cell`.

    dY (batch, hidden) is the gradient of the new hidden state, X (batch, input) the step's
    input, h (batch, hidden) the previous hidden state, w_ih and w_hh PyTorch's weights, gates
    (batch, 3 hidden) the activated gates [r, z, n] the forward saved, hn (batch, hidden) the
    hidden part of n's pre-activation, h @ w_hn^T + b_hn (which r scales). With
    dn = dY * (1 - z) * (1 - n^2), dz = dY * (h - n) * z (1 - z), dr = dn * hn * r (1 - r):

        dG_x = [dr, dz, dn], dG_h = [dr, dz, dn * r]                        (batch, 3 hidden)
        dX = dG_x @ w_ih, dh = dG_h @ w_hh + dY * z
        dw_ih = dG_x^T @ X, dw_hh = dG_h^T @ h, db_ih = sum of dG_x, db_hh = sum of dG_h

    dG_x and dG_h are the gradients of the input's and the hidden state's products. With w_ih
    None (X the input's gates, see gru_cell), dX = dG_x and dw_ih, db_ih are None.

    `need` says which of the six to compute (the others come back None). The gate math runs as a
    numba kernel where backend.numba_takes the arrays.
    """
    return _gru_cell_grad(dY, X, h, w_ih, w_hh, gates, hn, need, sums=False)


def _gru_cell_grad(dY, X, h, w_ih, w_hh, gates, hn, need, sums: bool):
    """gru_cell_grad; with `sums`, the weights' and biases' gradients as ProductSums."""
    need = _need("gru_cell_grad", need)
    _check_cell_grad("gru_cell_grad", 3, dY, X, h, w_ih, w_hh, gates, h.shape)
    if hn.shape != h.shape:
        raise ShapeError(f"gru_cell_grad: hn {hn.shape} must have h's shape {h.shape}")
    xp = backend.array_module(dY, X)
    dgates_x, dgates_h = xp.empty(gates.shape, gates.dtype), xp.empty(gates.shape, gates.dtype)
    dh = xp.empty(h.shape, h.dtype)
    if backend.numba_takes(dY, gates, h, hn):
        dY, gates, h_c, hn = _numba_arrays(dY, gates, h, hn)
        _gru_kernels(h.size >= _PARALLEL_ELEMENTS).gates_grad(
            dY, gates, hn, h_c, dgates_x, dgates_h, dh
        )
    else:
        _gru_gates_grad(dY, gates, hn, h, dgates_x, dgates_h, dh)
    if need[1]:
        dh += dgates_h @ w_hh
    dX, dw_ih, dw_hh, db_ih, db_hh = _weight_grads(need, dgates_x, dgates_h, X, h, w_ih, sums)
    return dX, (dh if need[1] else None), dw_ih, dw_hh, db_ih, db_hh


def _gru_gates_grad(dY, gates, hn, h, dgates_x, dgates_h, dh) -> None:
    """gru_cell_grad's gate math (its docstring's formulas) in xp, into dgates_x, dgates_h, dh."""
    size = h.shape[1]
    r, z, n = (gates[:, k * size : (k + 1) * size] for k in range(3))
    dn = dY * (1 - z) * (1 - n * n)
    dr = dn * hn * r * (1 - r)
    dz = dY * (h - n) * z * (1 - z)
    for dgates in (dgates_x, dgates_h):
        dgates[:, :size], dgates[:, size : 2 * size], dgates[:, 2 * size :] = dr, dz, dn
    dgates_h[:, 2 * size :] *= r
    dh[...] = dY * z


class GRUCell(Op):
    """One GRU step, PyTorch's: with the input's and the hidden state's products split into
    [r, z, n] parts, r = sigmoid(x_r + h_r), z = sigmoid(x_z + h_z) (biases included),
    n = tanh(x_n + r * h_n), and h' = (1 - z) * n + z * h."""

    name = "gru_cell"
    inputs = ("x", "h", "w_ih", "w_hh", "b_ih", "b_hh")
    saved = ("x", "h", "w_ih", "w_hh", "b_ih", "b_hh", "gates", "hn")
    grad_kernel = "GRUCellGrad"
    same_dtype = True
    # the gate kernels and the per-step weight sums of the LSTM's, which that row measures
    fused_backward = "train step LSTM"

    @staticmethod
    def forward(ctx, x, h, w_ih, w_hh, b_ih, b_hh):
        xp = ctx.xp
        gx, gh = _input_gates(x, w_ih), h @ w_hh.T
        if b_ih is not None:
            gx += b_ih
        if b_hh is not None:
            gh += b_hh
        gates = xp.empty(gx.shape, gx.dtype)
        hn, out = xp.empty(h.shape, gx.dtype), xp.empty(h.shape, gx.dtype)
        if backend.numba_takes(x, h, w_ih, w_hh):
            gx, gh, h_c = _numba_arrays(gx, gh, h)
            _gru_kernels(h.size >= _PARALLEL_ELEMENTS).gates(gx, gh, h_c, gates, hn, out)
        else:
            _gru_gates(xp, gx, gh, h, gates, hn, out)
        ctx.save(x=x, h=h, w_ih=w_ih, w_hh=w_hh, b_ih=b_ih, b_hh=b_hh, gates=gates, hn=hn)
        return out

    @staticmethod
    def backward(ctx, grad):
        """dG = gate grads (gru_cell_grad), dx = dG_x @ w_ih, dh = dG_h @ w_hh + grad * z, ..."""
        return _gru_cell_grad(
            grad, ctx.x, ctx.h, ctx.w_ih, ctx.w_hh, ctx.gates, ctx.hn, ctx.needs_grad, True
        )

    @staticmethod
    def tensor_backward(ctx, grad):
        """gru_cell_grad's formulas in tensor ops, the gates recomputed from the inputs."""
        x, h, w_ih, w_hh = ctx.x, ctx.h, ctx.w_ih, ctx.w_hh
        size = w_hh.shape[1]
        gx, gh = _input_gates(x, w_ih, ctx.b_ih), linear(h, w_hh, ctx.b_hh)
        r = sigmoid(gx[:, :size] + gh[:, :size])
        z = sigmoid(gx[:, size : 2 * size] + gh[:, size : 2 * size])
        hn = gh[:, 2 * size :]
        n = tanh(gx[:, 2 * size :] + r * hn)
        dn = grad * (1 - z) * (1 - n * n)
        dr = dn * hn * r * (1 - r)
        dz = grad * (h - n) * z * (1 - z)
        dgates_x, dgates_h = concat([dr, dz, dn], axis=1), concat([dr, dz, dn * r], axis=1)
        need = ctx.needs_grad
        return (
            _input_gates_grad(dgates_x, w_ih) if need[0] else None,
            dgates_h @ w_hh + grad * z if need[1] else None,
            dgates_x.T @ x if need[2] else None,
            dgates_h.T @ h if need[3] else None,
            dgates_x.sum(axis=0) if need[4] else None,
            dgates_h.sum(axis=0) if need[5] else None,
        )


def _gru_gates(xp, gx, gh, h, gates, hn, out) -> None:
    """The GRU's gate math in xp from the two products, biases added: activated gates into
    `gates`, the hidden part of n's pre-activation into hn, the new state into out."""
    size = h.shape[1]
    gates[:, : 2 * size] = stable_sigmoid(xp, gx[:, : 2 * size] + gh[:, : 2 * size])
    r, z = gates[:, :size], gates[:, size : 2 * size]
    hn[...] = gh[:, 2 * size :]
    n = gates[:, 2 * size :]
    n[...] = xp.tanh(gx[:, 2 * size :] + r * hn)
    out[...] = (1 - z) * n + z * h


@functools.cache
def _gru_kernels(parallel: bool) -> SimpleNamespace:
    """The GRU gate math as numba kernels, forward and gradient, as _lstm_kernels."""
    _register_gate_math()
    loop = numba_math.loop(parallel)

    @backend.jit(parallel=parallel, fastmath={"contract"}, **_NO_RAISE)
    def gru_gates(gx, gh, h, gates, hn, out):
        size = h.shape[1]
        one = h.dtype.type(1)
        for b in loop(h.shape[0]):
            for j in range(2 * size):  # r, z
                gates[b, j] = _sigmoid(gx[b, j] + gh[b, j])
            for j in range(size):  # n's pre-activation, in out for now
                hn[b, j] = gh[b, 2 * size + j]
                out[b, j] = gx[b, 2 * size + j] + gates[b, j] * gh[b, 2 * size + j]
            for j in range(size):
                gates[b, 2 * size + j] = _tanh(out[b, j])
            for j in range(size):
                z = gates[b, size + j]
                out[b, j] = (one - z) * gates[b, 2 * size + j] + z * h[b, j]

    @backend.jit(parallel=parallel, fastmath={"contract"}, **_NO_RAISE)
    def gru_gates_grad(dy, gates, hn, h, dgates_x, dgates_h, dh):
        size = h.shape[1]
        one = h.dtype.type(1)
        for b in loop(h.shape[0]):
            for j in range(size):  # n's and r's gradients
                r, z, n = gates[b, j], gates[b, size + j], gates[b, 2 * size + j]
                dn = dy[b, j] * (one - z) * (one - n * n)
                dgates_x[b, 2 * size + j] = dn
                dgates_h[b, 2 * size + j] = dn * r
                dgates_x[b, j] = dn * hn[b, j] * r * (one - r)
            for j in range(size):  # z's, and the direct path of h
                z = gates[b, size + j]
                dgates_x[b, size + j] = (
                    dy[b, j] * (h[b, j] - gates[b, 2 * size + j]) * z * (one - z)
                )
                dh[b, j] = dy[b, j] * z
            for j in range(2 * size):
                dgates_h[b, j] = dgates_x[b, j]

    return SimpleNamespace(gates=gru_gates, gates_grad=gru_gates_grad)


def gru_cell(x, h, w_ih, w_hh, b_ih=None, b_hh=None) -> Tensor:
    """One GRU step: the new hidden state (batch, hidden_size) from x (batch, input_size) and h
    (batch, hidden_size), with PyTorch's weights: w_ih (3 hidden_size, input_size), w_hh
    (3 hidden_size, hidden_size), the gates [r, z, n] stacked; biases (3 hidden_size,) or None.
    One node in the graph; its backward is gru_cell_grad. As lstm_cell's, w_ih and b_ih may be
    None, x then being the input's gates (batch, 3 hidden_size)."""
    x = floating_input("gru_cell", x)
    _check_cell("gru_cell", 3, x, h, "h", (), w_ih, w_hh, b_ih, b_hh)
    return GRUCell.apply(x, h, w_ih, w_hh, b_ih, b_hh)

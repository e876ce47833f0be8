"""lstm_cell: one LSTM time step as a fused op, with its gradient kernel lstm_cell_grad
(docs/kernels.md section 7) and its numba gate kernels; lstm_sequence, a layer's whole sequence as
one op on those kernels; what both share with the GRU's (the checks, the numba gate math, the
weights' gradients) is in recurrent_common.py.

An LSTM's state is one tensor, h over c stacked as (2, batch, hidden_size), so a step's output is
the next step's input as it is and backprop through time is a chain of cell nodes.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

from ... import backend
from ...errors import ShapeError
from ...tensor import Tensor
from ..activations.activation import floating_input, sigmoid, tanh
from ..activations.special import stable_sigmoid
from ..core import numba_math
from ..core.op import Op
from ..linalg.products import linear
from ..shapes.shape import concat, stack
from .recurrent_common import (
    GATE_PARALLEL_ELEMENTS,
    NO_RAISE,
    check_cell,
    check_cell_grad,
    check_need,
    check_sequence,
    gate_sigmoid,
    gate_tanh,
    input_gates,
    input_gates_grad,
    numba_arrays,
    recurrent_weight_grads,
    register_gate_math,
    sequence_order,
    stepwise_tensor_backward,
    weight_grads,
)

__all__ = ["lstm_cell", "lstm_cell_grad", "lstm_sequence"]


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
    need = check_need("lstm_cell_grad", need)
    check_cell_grad("lstm_cell_grad", 4, dY, X, state, w_ih, w_hh, gates, state.shape)
    if Y.shape != state.shape:
        raise ShapeError(f"lstm_cell_grad: Y {Y.shape} must have state's shape {state.shape}")
    xp = backend.array_module(dY, X)
    dgates = xp.empty(gates.shape, gates.dtype)
    dstate = xp.empty(state.shape, state.dtype)
    if backend.numba_takes(dY, gates, state, Y):
        dY, gates, c_prev, c = numba_arrays(dY, gates, state[1], Y[1])
        kernels = _lstm_kernels(c.size >= GATE_PARALLEL_ELEMENTS)
        kernels.gates_grad(dY, gates, c_prev, c, dgates, dstate[1])
    else:
        _lstm_gates_grad(xp, dY, gates, state[1], Y[1], dgates, dstate[1])
    if need[1]:
        xp.matmul(dgates, w_hh, out=dstate[0])
    dX, dw_ih, dw_hh, db_ih, db_hh = weight_grads(need, dgates, dgates, X, state[0], w_ih, sums)
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
    numba_bench = "train step LSTM"  # the gate kernels, chosen per call (lstm_cell_grad)

    @staticmethod
    def forward(ctx, x, state, w_ih, w_hh, b_ih, b_hh):
        xp = ctx.xp
        gx, gh = input_gates(x, w_ih), state[0] @ w_hh.T
        gates = xp.empty(gx.shape, gx.dtype)
        out = xp.empty(state.shape, gx.dtype)
        bias = _joint_bias(xp, b_ih, b_hh, gx)
        if backend.numba_takes(x, state, w_ih, w_hh, bias):
            gx, gh, bias, c_prev = numba_arrays(gx, gh, bias, state[1])
            kernels = _lstm_kernels(c_prev.size >= GATE_PARALLEL_ELEMENTS)
            kernels.gates(gx, gh, bias, c_prev, gates, out)
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
        pre = input_gates(x, w_ih, ctx.b_ih) + linear(h_prev, w_hh, ctx.b_hh)
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
            input_gates_grad(dgates, w_ih) if need[0] else None,
            stack([dgates @ w_hh, dc * f]) if need[1] else None,
            dgates_t @ x if need[2] else None,
            dgates_t @ h_prev if need[3] else None,
            dgates.sum(axis=0) if need[4] else None,
            dgates.sum(axis=0) if need[5] else None,
        )


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
    register_gate_math()
    loop = numba_math.loop(parallel)

    @backend.jit(parallel=parallel, fastmath={"contract"}, **NO_RAISE)
    def lstm_gates(gx, gh, bias, c_prev, gates, out):
        size = c_prev.shape[1]
        for b in loop(gx.shape[0]):
            for j in range(2 * size):  # i, f
                gates[b, j] = gate_sigmoid(gx[b, j] + gh[b, j] + bias[j])
            for j in range(2 * size, 3 * size):  # g
                gates[b, j] = gate_tanh(gx[b, j] + gh[b, j] + bias[j])
            for j in range(3 * size, 4 * size):  # o
                gates[b, j] = gate_sigmoid(gx[b, j] + gh[b, j] + bias[j])
            for j in range(size):
                c = gates[b, size + j] * c_prev[b, j] + gates[b, j] * gates[b, 2 * size + j]
                out[1, b, j] = c
                out[0, b, j] = gates[b, 3 * size + j] * gate_tanh(c)

    @backend.jit(parallel=parallel, fastmath={"contract"}, **NO_RAISE)
    def lstm_gates_grad(dy, gates, c_prev, c, dgates, dc_prev):
        size = c.shape[1]
        one = c.dtype.type(1)
        for b in loop(c.shape[0]):
            for j in range(size):  # dc_total into dc_prev, and o's gradient
                o = gates[b, 3 * size + j]
                t = gate_tanh(c[b, j])
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
    check_cell("lstm_cell", 4, x, state, "state", (2,), w_ih, w_hh, b_ih, b_hh)
    return LSTMCell.apply(x, state, w_ih, w_hh, b_ih, b_hh)


class LSTMSequence(Op):
    """A whole LSTM layer's direction over a sequence: lstm_cell's step (its gate kernels) at
    every time step, the input's gates given for all steps. Forward runs the steps inside the
    op: per step one product h_prev @ w_hh^T and one gate kernel call. Backward runs them in
    reverse: per step the gate gradient kernel and dh_prev = dG_t @ w_hh, every step's dG kept
    in one (T, batch, 4 hidden) array, so the input gates' gradient is that array, and
    dw_hh = dG^T @ h_prev and db_hh = sum of dG are one product and one sum over all steps.
    It saves what T cells would: the activated gates and every step's state (its output)."""

    name = "lstm_sequence"
    inputs = ("input_gates", "state", "w_hh", "b_hh")
    attrs = ("reverse",)
    saved = ("input_gates", "state", "w_hh", "b_hh", "gates", "out")
    same_dtype = True
    fused_backward = "train step LSTM"
    numba_bench = "train step LSTM"  # lstm_cell's gate kernels, chosen per call

    @staticmethod
    def forward(ctx, input_gates, state, w_hh, b_hh):
        xp = ctx.xp
        steps, batch, width = input_gates.shape
        dtype = input_gates.dtype
        out = xp.empty((steps, 2, batch, w_hh.shape[1]), dtype)
        # every step's gates when backward will read them; one step's buffer otherwise
        gates = xp.empty((steps if ctx.records else 1, batch, width), dtype)
        gh = xp.empty((batch, width), dtype)
        bias = xp.zeros(width, dtype) if b_hh is None else b_hh
        # w_hh^T copied C-contiguous once: OpenBLAS runs h (batch, hidden) @ it 13% faster
        # than on the transposed view, every step (measured at batch 32, hidden 256)
        w_hh_t = xp.ascontiguousarray(w_hh.T)
        numba = backend.numba_takes(input_gates, state, w_hh, bias)
        given, previous = input_gates, state  # C-contiguous for the kernels; the inputs saved
        if numba:
            given, previous, bias = numba_arrays(input_gates, state, bias)
            kernels = _lstm_kernels(state[1].size >= GATE_PARALLEL_ELEMENTS)
        for t in sequence_order(steps, ctx.reverse):
            xp.matmul(previous[0], w_hh_t, out=gh)
            step_gates = gates[t if ctx.records else 0]
            if numba:
                kernels.gates(given[t], gh, bias, previous[1], step_gates, out[t])
            else:
                _lstm_gates(xp, given[t] + gh + bias, previous[1], step_gates, out[t])
            previous = out[t]
        ctx.save(input_gates=input_gates, state=state, w_hh=w_hh, b_hh=b_hh, gates=gates, out=out)
        return out

    @staticmethod
    def backward(ctx, grad):
        """Backprop through time: per step, from the last one run, dY_t = grad[t] plus the state
        gradient the later step sent; lstm_cell_grad's gate math gives dG_t and dc_prev, and
        dh_prev = dG_t @ w_hh. Then dinput_gates = dG, dw_hh = dG^T @ h_prev, db_hh = sum dG."""
        xp = ctx.xp
        gates, out, state, w_hh = ctx.gates, ctx.out, ctx.state, ctx.w_hh
        steps = len(out)
        dgates = xp.empty(gates.shape, gates.dtype)
        carry = xp.zeros(state.shape, state.dtype)  # dstate of the step before, sent back
        step_grad = xp.empty(state.shape, state.dtype)
        numba = backend.numba_takes(grad, gates, out, state)
        if numba:
            grad, state = numba_arrays(grad, state)
            kernels = _lstm_kernels(state[1].size >= GATE_PARALLEL_ELEMENTS)
        order = sequence_order(steps, not ctx.reverse)
        for count, t in enumerate(order):
            xp.add(grad[t], carry, out=step_grad)
            c_prev = (state if count == steps - 1 else out[order[count + 1]])[1]
            if numba:
                kernels.gates_grad(step_grad, gates[t], c_prev, out[t, 1], dgates[t], carry[1])
            else:
                _lstm_gates_grad(xp, step_grad, gates[t], c_prev, out[t, 1], dgates[t], carry[1])
            if count < steps - 1 or ctx.needs_grad[1]:
                xp.matmul(dgates[t], w_hh, out=carry[0])
        need = ctx.needs_grad
        dw_hh, db_hh = recurrent_weight_grads(
            xp, dgates, out[:, 0], state[0], ctx.reverse, need[2], need[3]
        )
        return (dgates if need[0] else None), (carry if need[1] else None), dw_hh, db_hh

    @staticmethod
    def tensor_backward(ctx, grad):
        """The cell's formula step by step (LSTMCell.tensor_backward on each step's inputs, the
        states read from the output in the graph), so every derivative moves with the inputs."""
        return stepwise_tensor_backward(ctx, grad, LSTMCell.tensor_backward, "state")


def lstm_sequence(input_gates, state, w_hh, b_hh=None, reverse: bool = False) -> Tensor:
    """An LSTM layer's direction over a whole sequence, as one op: every step's state
    (T, 2, batch, hidden_size), h over c, from the input's gates x_t @ w_ih^T + b_ih of every
    step (T, batch, 4 hidden_size), the initial state (2, batch, hidden_size), w_hh (4
    hidden_size, hidden_size) and b_hh (4 hidden_size,) or None. Step t's state is lstm_cell's
    of input_gates[t] and the previous step's state; `reverse` runs the steps from T - 1 down
    to 0 (out[t] is then the state after step t, the last one run being out[0])."""
    input_gates = floating_input("lstm_sequence", input_gates)
    check_sequence("lstm_sequence", 4, input_gates, state, "state", (2,), w_hh, b_hh)
    return LSTMSequence.apply(input_gates, state, w_hh, b_hh, reverse=bool(reverse))

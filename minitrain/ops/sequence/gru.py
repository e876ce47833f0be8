"""gru_cell: one GRU time step as a fused op, with its gradient kernel gru_cell_grad
(docs/kernels.md section 7) and its numba gate kernels; gru_sequence, a layer's whole sequence as
one op on those kernels; what both share with the LSTM's (the checks, the numba gate math, the
weights' gradients) is in recurrent_common.py.
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
from ..shapes.shape import concat
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

__all__ = ["gru_cell", "gru_cell_grad", "gru_sequence"]


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
    need = check_need("gru_cell_grad", need)
    check_cell_grad("gru_cell_grad", 3, dY, X, h, w_ih, w_hh, gates, h.shape)
    if hn.shape != h.shape:
        raise ShapeError(f"gru_cell_grad: hn {hn.shape} must have h's shape {h.shape}")
    xp = backend.array_module(dY, X)
    dgates_x, dgates_h = xp.empty(gates.shape, gates.dtype), xp.empty(gates.shape, gates.dtype)
    dh = xp.empty(h.shape, h.dtype)
    if backend.numba_takes(dY, gates, h, hn):
        dY, gates, h_c, hn = numba_arrays(dY, gates, h, hn)
        _gru_kernels(h.size >= GATE_PARALLEL_ELEMENTS).gates_grad(
            dY, gates, hn, h_c, dgates_x, dgates_h, dh
        )
    else:
        _gru_gates_grad(dY, gates, hn, h, dgates_x, dgates_h, dh)
    if need[1]:
        dh += dgates_h @ w_hh
    dX, dw_ih, dw_hh, db_ih, db_hh = weight_grads(need, dgates_x, dgates_h, X, h, w_ih, sums)
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
    fused_backward = "train step GRU"
    numba_bench = "train step GRU"  # the gate kernels, chosen per call (gru_cell_grad)

    @staticmethod
    def forward(ctx, x, h, w_ih, w_hh, b_ih, b_hh):
        xp = ctx.xp
        gx, gh = input_gates(x, w_ih), h @ w_hh.T
        if b_ih is not None:
            gx += b_ih
        if b_hh is not None:
            gh += b_hh
        gates = xp.empty(gx.shape, gx.dtype)
        hn, out = xp.empty(h.shape, gx.dtype), xp.empty(h.shape, gx.dtype)
        if backend.numba_takes(x, h, w_ih, w_hh):
            gx, gh, h_c = numba_arrays(gx, gh, h)
            _gru_kernels(h.size >= GATE_PARALLEL_ELEMENTS).gates(gx, gh, h_c, gates, hn, out)
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
        gx, gh = input_gates(x, w_ih, ctx.b_ih), linear(h, w_hh, ctx.b_hh)
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
            input_gates_grad(dgates_x, w_ih) if need[0] else None,
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
    """The GRU gate math as numba kernels, forward and gradient, built as lstm.py's are."""
    register_gate_math()
    loop = numba_math.loop(parallel)

    @backend.jit(parallel=parallel, fastmath={"contract"}, **NO_RAISE)
    def gru_gates(gx, gh, h, gates, hn, out):
        size = h.shape[1]
        one = h.dtype.type(1)
        for b in loop(h.shape[0]):
            for j in range(2 * size):  # r, z
                gates[b, j] = gate_sigmoid(gx[b, j] + gh[b, j])
            for j in range(size):  # n's pre-activation, in out for now
                hn[b, j] = gh[b, 2 * size + j]
                out[b, j] = gx[b, 2 * size + j] + gates[b, j] * gh[b, 2 * size + j]
            for j in range(size):
                gates[b, 2 * size + j] = gate_tanh(out[b, j])
            for j in range(size):
                z = gates[b, size + j]
                out[b, j] = (one - z) * gates[b, 2 * size + j] + z * h[b, j]

    @backend.jit(parallel=parallel, fastmath={"contract"}, **NO_RAISE)
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
    check_cell("gru_cell", 3, x, h, "h", (), w_ih, w_hh, b_ih, b_hh)
    return GRUCell.apply(x, h, w_ih, w_hh, b_ih, b_hh)


class GRUSequence(Op):
    """A whole GRU layer's direction over a sequence: gru_cell's step (its gate kernels) at
    every time step, the input's gates given for all steps. Forward runs the steps inside the
    op: per step one product h_prev @ w_hh^T + b_hh and one gate kernel call. Backward runs them
    in reverse: per step the gate gradient kernel and dh_prev = dG_h,t @ w_hh + dY_t * z, every
    step's dG_x and dG_h kept in one (T, batch, 3 hidden) array each, so the input gates'
    gradient is dG_x, and dw_hh = dG_h^T @ h_prev and db_hh = sum of dG_h are one product and
    one sum over all steps. It saves what T cells would: the gates, hn and every step's h."""

    name = "gru_sequence"
    inputs = ("input_gates", "h", "w_hh", "b_hh")
    attrs = ("reverse",)
    saved = ("input_gates", "h", "w_hh", "b_hh", "gates", "hn", "out")
    same_dtype = True
    fused_backward = "train step GRU"
    numba_bench = "train step GRU"  # gru_cell's gate kernels, chosen per call

    @staticmethod
    def forward(ctx, input_gates, h, w_hh, b_hh):
        xp = ctx.xp
        steps, batch, width = input_gates.shape
        dtype = input_gates.dtype
        out = xp.empty((steps,) + h.shape, dtype)
        kept = steps if ctx.records else 1  # every step's when backward will read them
        gates, hn = xp.empty((kept, batch, width), dtype), xp.empty((kept,) + h.shape, dtype)
        gh = xp.empty((batch, width), dtype)
        # w_hh^T copied C-contiguous once: OpenBLAS runs h (batch, hidden) @ it 13% faster
        # than on the transposed view, every step (measured at batch 32, hidden 256)
        w_hh_t = xp.ascontiguousarray(w_hh.T)
        numba = backend.numba_takes(input_gates, h, w_hh)
        given, previous = input_gates, h  # C-contiguous for the kernels; the inputs saved
        if numba:
            given, previous = numba_arrays(input_gates, h)
            kernels = _gru_kernels(h.size >= GATE_PARALLEL_ELEMENTS)
        for t in sequence_order(steps, ctx.reverse):
            xp.matmul(previous, w_hh_t, out=gh)
            if b_hh is not None:
                gh += b_hh
            kept_at = t if ctx.records else 0
            if numba:
                kernels.gates(given[t], gh, previous, gates[kept_at], hn[kept_at], out[t])
            else:
                _gru_gates(xp, given[t], gh, previous, gates[kept_at], hn[kept_at], out[t])
            previous = out[t]
        ctx.save(input_gates=input_gates, h=h, w_hh=w_hh, b_hh=b_hh, gates=gates, hn=hn, out=out)
        return out

    @staticmethod
    def backward(ctx, grad):
        """Backprop through time: per step, from the last one run, dY_t = grad[t] plus the
        gradient the later step sent its h; gru_cell_grad's gate math gives dG_x,t, dG_h,t and
        dY_t * z, and dh_prev = dG_h,t @ w_hh + dY_t * z. Then dinput_gates = dG_x,
        dw_hh = dG_h^T @ h_prev, db_hh = sum of dG_h."""
        xp = ctx.xp
        gates, hn, out, h, w_hh = ctx.gates, ctx.hn, ctx.out, ctx.h, ctx.w_hh
        steps = len(out)
        dgates_x, dgates_h = xp.empty(gates.shape, gates.dtype), xp.empty(gates.shape, gates.dtype)
        carry = xp.zeros(h.shape, h.dtype)  # dh of the step before, sent back
        step_grad, through_w_hh = xp.empty(h.shape, h.dtype), xp.empty(h.shape, h.dtype)
        numba = backend.numba_takes(grad, gates, hn, out, h)
        if numba:
            grad, h = numba_arrays(grad, h)
            kernels = _gru_kernels(h.size >= GATE_PARALLEL_ELEMENTS)
        order = sequence_order(steps, not ctx.reverse)
        for count, t in enumerate(order):
            xp.add(grad[t], carry, out=step_grad)
            h_prev = h if count == steps - 1 else out[order[count + 1]]
            if numba:
                kernels.gates_grad(
                    step_grad, gates[t], hn[t], h_prev, dgates_x[t], dgates_h[t], carry
                )
            else:
                _gru_gates_grad(step_grad, gates[t], hn[t], h_prev, dgates_x[t], dgates_h[t], carry)
            if count < steps - 1 or ctx.needs_grad[1]:
                carry += xp.matmul(dgates_h[t], w_hh, out=through_w_hh)
        need = ctx.needs_grad
        dw_hh, db_hh = recurrent_weight_grads(xp, dgates_h, out, h, ctx.reverse, need[2], need[3])
        return (dgates_x if need[0] else None), (carry if need[1] else None), dw_hh, db_hh

    @staticmethod
    def tensor_backward(ctx, grad):
        """The cell's formula step by step (GRUCell.tensor_backward on each step's inputs, the
        states read from the output in the graph), so every derivative moves with the inputs."""
        return stepwise_tensor_backward(ctx, grad, GRUCell.tensor_backward, "h")


def gru_sequence(input_gates, h, w_hh, b_hh=None, reverse: bool = False) -> Tensor:
    """A GRU layer's direction over a whole sequence, as one op: every step's hidden state
    (T, batch, hidden_size) from the input's gates x_t @ w_ih^T + b_ih of every step (T, batch,
    3 hidden_size), the initial state h (batch, hidden_size), w_hh (3 hidden_size, hidden_size)
    and b_hh (3 hidden_size,) or None. Step t's state is gru_cell's of input_gates[t] and the
    previous step's; `reverse` runs the steps from T - 1 down to 0 (the last one run: out[0])."""
    input_gates = floating_input("gru_sequence", input_gates)
    check_sequence("gru_sequence", 3, input_gates, h, "h", (), w_hh, b_hh)
    return GRUSequence.apply(input_gates, h, w_hh, b_hh, reverse=bool(reverse))

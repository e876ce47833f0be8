"""The normalization tests' cases: one op on one input shape (`Case`, `CASES`), how to run one
through minitrain and through PyTorch, and how to compare the results."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

import minitrain as mt
from minitrain import ops

STATISTICS = {"saved_mean", "saved_inv_std", "mean", "inv_std"}  # names of saved statistics


class Case(NamedTuple):
    """One op on one input shape: batch norm over (N, C, *spatial), or a layer-norm family op
    over the last `dims` dims."""

    op: str
    shape: tuple
    dims: int = 1

    def __str__(self):
        return f"{self.op}-{'x'.join(map(str, self.shape))}" + (
            f"-last{self.dims}" if self.op != "batch_norm" else ""
        )

    @property
    def normalized(self) -> tuple:
        return self.shape[len(self.shape) - self.dims :]

    @property
    def param_shape(self) -> tuple:
        return (self.shape[1],) if self.op == "batch_norm" else self.normalized

    @property
    def has_bias(self) -> bool:
        return self.op != "rms_norm"

    def make(self, dtype=np.float64, seed=0, affine=True):
        """(x, weight, bias, dy) arrays; weight and bias None without affine (or bias for RMS)."""
        rng = np.random.default_rng(seed)
        x = (2.0 * rng.standard_normal(self.shape) + 0.5).astype(dtype)
        dy = rng.standard_normal(self.shape).astype(dtype)
        weight = bias = None
        if affine:  # weights away from 0: the invertible variant divides by them
            weight = rng.choice([-1.0, 1.0], self.param_shape) * rng.uniform(0.5, 1.5)
            weight = weight.astype(dtype)
            if self.has_bias:
                bias = rng.standard_normal(self.param_shape).astype(dtype)
        return x, weight, bias, dy

    def call(self, x, weight=None, bias=None, **kw):
        if self.op == "batch_norm":
            return ops.batch_norm(x, weight, bias, **kw)
        if self.op == "batch_norm_composite":
            return ops.batch_norm_composite(x, weight, bias, **kw)
        if self.op == "rms_norm":
            return ops.rms_norm(x, self.normalized, weight, **kw)
        invertible = self.op == "invertible_layer_norm"
        return ops.layer_norm(x, self.normalized, weight, bias, invertible=invertible, **kw)

    def torch_call(self, torch, x, weight=None, bias=None):
        functional = torch.nn.functional
        if self.op == "batch_norm":
            return functional.batch_norm(x, None, None, weight, bias, training=True)
        if self.op == "rms_norm":
            return functional.rms_norm(x, self.normalized, weight)
        return functional.layer_norm(x, self.normalized, weight, bias)


CASES = [
    Case("batch_norm", (8, 3)),
    Case("batch_norm", (4, 3, 5)),
    Case("batch_norm", (3, 4, 5, 6)),
    Case("batch_norm", (2, 3, 3, 4, 5)),
    Case("layer_norm", (6, 7)),
    Case("layer_norm", (2, 3, 4, 5), dims=2),
    Case("invertible_layer_norm", (6, 7)),
    Case("invertible_layer_norm", (2, 3, 4, 5), dims=2),
    Case("rms_norm", (6, 7)),
    Case("rms_norm", (2, 3, 4, 5), dims=2),
]

ROW_CASES = [c for c in CASES if c.op == "layer_norm"]


def run(case, x, weight, bias, dy, **kw):
    """The case's output and the gradients of sum(output * dy): [x, weight, bias] (None where
    absent), as arrays; the output tensor; and what its node saved for backward. The arrays keep
    their layout (Tensor does not copy)."""
    leaves = [None if a is None else mt.Tensor(a, requires_grad=True) for a in (x, weight, bias)]
    out = case.call(*leaves, **kw)
    saved = out.grad_fn.saved_arrays()
    present = [leaf for leaf in leaves if leaf is not None]
    found = iter(mt.grad(out, present, grad_outputs=mt.Tensor(dy)))
    grads = [None if leaf is None else next(found).array for leaf in leaves]
    return out.array, grads, out, saved


def torch_run(torch, case, x, weight, bias, dy):
    """PyTorch's output and gradients [x, weight, bias] of the case, as `run`'s."""
    leaves = [None if a is None else torch.tensor(a, requires_grad=True) for a in (x, weight, bias)]
    out = case.torch_call(torch, *leaves)
    out.backward(torch.tensor(dy))
    return out.detach().numpy(), [None if t is None else t.grad.numpy() for t in leaves]


def assert_all_close(got, want, **tol):
    """Two lists of arrays (None where absent) agree entry by entry, shapes included."""
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert (g is None) == (w is None), f"output {i}"
        if g is not None:
            assert g.shape == w.shape, f"output {i}: shape {g.shape}, expected {w.shape}"
            np.testing.assert_allclose(g, w, err_msg=f"output {i}", **tol)

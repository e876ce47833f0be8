"""What the activation tests share: an op's value and gradient, PyTorch's, and a guard that
fails on floating-point warnings."""

from __future__ import annotations

import contextlib
import warnings

import numpy as np

import minitrain as mt


@contextlib.contextmanager
def no_float_warnings():
    """Fail on any overflow, invalid or divide-by-zero (underflow to 0 is fine)."""
    with warnings.catch_warnings(), np.errstate(over="raise", invalid="raise", divide="raise"):
        warnings.simplefilter("error")
        yield


def value_and_grad(op, x, dy, *args):
    """op(x, *args) and d(sum(op * dy))/dx as arrays; x keeps its layout (Tensor does not copy)."""
    leaf = mt.Tensor(x, requires_grad=True)
    out = op(leaf, *args)
    (grad,) = mt.grad(out, [leaf], grad_outputs=mt.Tensor(dy))
    return out.data, grad.data


def torch_value_and_grad(torch, fn, x, dy):
    """PyTorch's fn(x) and its gradient seeded with dy, as arrays."""
    leaf = torch.tensor(x, requires_grad=True)
    out = fn(leaf)
    out.backward(torch.tensor(dy))
    return out.detach().numpy(), leaf.grad.numpy()

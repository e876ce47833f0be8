"""What the activation tests share: an op's value and gradient, PyTorch's, a guard that fails
on floating-point warnings, and the distinct one-input calls of the activations' samples."""

from __future__ import annotations

import contextlib
import warnings

import numpy as np
from op_samples import Sample, rng_for

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
    return out.array, grad.array


def torch_value_and_grad(torch, fn, x, dy):
    """PyTorch's fn(x) and its gradient seeded with dy, as arrays."""
    leaf = torch.tensor(x, requires_grad=True)
    out = fn(leaf)
    out.backward(torch.tensor(dy))
    return out.detach().numpy(), leaf.grad.numpy()


def one_input_calls(*tables: dict[str, list[Sample]]) -> dict[str, Sample]:
    """Each distinct call among the samples of `tables` (a sample file's SAMPLES, COMPOSED)
    that take one input, by the first sample making it: 'op-sample' -> that Sample, whose call
    and PyTorch's (`ref`) the activation tests run where the sample table does not (at every
    kink, in the far tails, in other dtypes). Calls are told apart by their code and defaults:
    `ops.<name>` is one call, `lambda x, args=(2.0,): ops.<name>(x, *args)` one per args."""
    calls, seen = {}, set()
    for table in tables:
        for op_name, samples in table.items():
            for sample in samples:
                call = sample.call
                key = (getattr(call, "__code__", call), getattr(call, "__defaults__", None))
                if key not in seen and len(sample.make(rng_for(op_name, sample))) == 1:
                    seen.add(key)
                    calls[f"{op_name}-{sample.name}"] = sample
    return calls

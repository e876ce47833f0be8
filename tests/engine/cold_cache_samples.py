"""Run by test_background_compile.py in a process of its own, with kernels held back
(MINITRAIN_COMPILE_IN_BACKGROUND=hold) and an empty numba cache: every registry sample's value
and gradients, in float32 and float64, computed as a cold start computes them (each numba kernel
raising KernelNotReady, the op falling back to its generic kernels) and with numba switched off;
prints, as JSON, how many ran, how many fallbacks were taken, and the samples whose results
differ in any bit."""

from __future__ import annotations

import json
import sys

import numpy as np
from op_samples import COMPOSED, SAMPLES, minitrain_inputs, rng_for

import minitrain as mt
from minitrain import backend
from minitrain.runtime import background_compile


def results(op_name, sample, dtype) -> list:
    rng = rng_for(op_name, sample)
    values = sample.make(rng)
    inputs = minitrain_inputs(values, sample, dtype=dtype)
    mt.manual_seed(0)
    out = sample.call(*inputs)
    wrt = [inputs[i] for i in sample.differentiable(values)]
    upstream = rng.standard_normal(out.shape).astype(out.dtype)
    grads = mt.grad(out, wrt, grad_outputs=mt.tensor(upstream), allow_unused=True)
    return [out.array] + [None if g is None else g.array for g in grads]


def attention_on_threads(dtype) -> list:
    """Causal attention large enough that its numba path splits the heads over threads
    (runtime/threads.side_by_side), whose pool threads relay KernelNotReady to the op."""
    rng = np.random.default_rng(7)
    q, k, v = (
        mt.tensor(rng.standard_normal((8, 4, 256, 32)).astype(dtype), requires_grad=True)
        for _ in range(3)
    )
    out = mt.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    out.backward(mt.tensor(rng.standard_normal(out.shape).astype(dtype)))
    return [out.array, q.grad.array, k.grad.array, v.grad.array]


EXTRA = {"attention on threads": attention_on_threads}


def main() -> None:
    assert background_compile._mode == "hold", "run with MINITRAIN_COMPILE_IN_BACKGROUND=hold"
    ran, differ = 0, []
    for name, run in EXTRA.items():
        cold = run(np.float32)
        with backend.use_numba(False):
            generic = run(np.float32)
        if not all(np.array_equal(a, b) for a, b in zip(cold, generic, strict=True)):
            differ.append(name)
    ran += len(EXTRA)
    for op_name, samples in {**SAMPLES, **COMPOSED}.items():
        for sample in samples:
            for dtype in (np.float32, np.float64):
                cold = results(op_name, sample, dtype)
                with backend.use_numba(False):
                    generic = results(op_name, sample, dtype)
                ran += 1
                same = all(
                    (a is None and b is None)
                    or (a is not None and b is not None and np.array_equal(a, b, equal_nan=True))
                    for a, b in zip(cold, generic, strict=True)
                )
                if not same:
                    differ.append(f"{op_name}-{sample.name}-{np.dtype(dtype).name}")
    report = {"ran": ran, "extra": list(EXTRA), "fallbacks": background_compile.fallbacks}
    json.dump({**report, "differ": differ}, sys.stdout)


if __name__ == "__main__":
    main()

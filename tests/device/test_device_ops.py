"""Every op's samples on a CUDA device, the strict stand-in for CuPy (tests/strict_device.py) and
a real GPU where one is at hand: the forward and the backward run on device arrays from start to
end, never handing one to numpy or to a numba kernel, and give what they give on the CPU."""

from __future__ import annotations

import numpy as np
import pytest
from op_samples import COMPOSED, SAMPLES, minitrain_inputs, rng_for

import minitrain as mt
from minitrain import backend

CASES = [
    pytest.param(op_name, sample, id=f"{op_name}-{sample.name}")
    for table in (SAMPLES, COMPOSED)
    for op_name, samples in table.items()
    for sample in samples
]


def _run(sample, inputs, upstream):
    """The sample's output and its inputs' gradients, `upstream` (a host array) sent back from
    the output's device."""
    out = sample.call(*inputs)
    wrt = [t for t in inputs if isinstance(t, mt.Tensor) and t.requires_grad]
    upstream = mt.tensor(upstream, device=out.device)
    grads = mt.grad(out, wrt, grad_outputs=upstream, allow_unused=True)
    return out, grads


def _draws(op_name, sample) -> bool:
    """Whether the sample draws random numbers: on a GPU the device's generator draws them, so
    its values differ from the CPU's (the seed fixes each device's stream, not one for both)."""
    return op_name == "dropout" or "dropout" in sample.name


def _check_drawn_on_the_device(sample, on_device, upstream, out_d, grads_d) -> None:
    """A sample that draws: the same seed gives the same values on the device again, and
    dropout's output and gradient keep or zero the same elements, survivors scaled alike."""
    again, grads_again = _run(sample, on_device, upstream)
    np.testing.assert_array_equal(again.cpu().array, out_d.cpu().array)
    for g, g_again in zip(grads_d, grads_again, strict=True):
        assert np.isfinite(g.cpu().array).all()
        np.testing.assert_array_equal(g.cpu().array, g_again.cpu().array)
    if len(on_device) == 1:  # dropout(x): out = x * mask, dx = upstream * mask
        x = on_device[0].cpu().array
        mask = out_d.cpu().array / x
        np.testing.assert_allclose(grads_d[0].cpu().array, upstream * mask, rtol=1e-12)
        kept = mask[mask != 0]
        assert kept.size and np.allclose(kept, kept[0]) and kept[0] > 1


@pytest.mark.parametrize("op_name, sample", CASES)
def test_op_runs_on_the_device_as_on_the_cpu(cuda_device, op_name, sample):
    rng = rng_for(op_name, sample)
    values = sample.make(rng)
    shape = sample.call(*minitrain_inputs(values, sample)).shape
    upstream = rng.standard_normal(shape)
    out, grads = _run(sample, minitrain_inputs(values, sample), upstream)
    on_device = [
        mt.tensor(t.array, requires_grad=t.requires_grad, device="cuda")
        if isinstance(t, mt.Tensor)
        else t
        for t in minitrain_inputs(values, sample)
    ]
    out_d, grads_d = _run(sample, on_device, upstream)
    # to_device's output is where its sample sends it (the CPU); every other op's stays put
    place = out.device if op_name == "to_device" else cuda_device
    assert out_d.device == place
    assert type(out_d.array) is (backend.cupy.ndarray if place == cuda_device else np.ndarray)
    assert out_d.dtype == out.dtype and out_d.shape == out.shape
    if _draws(op_name, sample):
        _check_drawn_on_the_device(sample, on_device, upstream, out_d, grads_d)
        return
    np.testing.assert_allclose(out_d.cpu().array, out.array, rtol=1e-7, atol=1e-10)
    for i, (g, g_d) in enumerate(zip(grads, grads_d, strict=True)):
        if g is None:
            assert g_d is None
            continue
        assert g_d.device == cuda_device, f"gradient {i} is on {g_d.device}"
        np.testing.assert_allclose(
            g_d.cpu().array, g.array, rtol=1e-7, atol=1e-10, err_msg=f"gradient {i}"
        )

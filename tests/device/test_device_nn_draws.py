"""The layers of minitrain.nn that draw in training mode (channel dropout, alpha dropout,
RReLU's slopes) on a CUDA device: what they draw cannot match the CPU's, so each output is
checked against the gradient it gives (the kept mask, the slope drawn), all of it on the device.
Plain Dropout's draw: test_device_nn.py."""

from __future__ import annotations

import numpy as np
import pytest

import minitrain as mt
from minitrain import backend, nn

CPU = mt.device("cpu")


def _is_device_array(array) -> bool:
    return backend.cupy is not None and type(array) is backend.cupy.ndarray


def _host(array) -> np.ndarray:
    return backend.to_device(array, CPU)


# SELU's negative saturation, -scale * alpha: where alpha dropout sends a dropped element
_ALPHA_PRIME = 1.0507009873554805 * 1.6732632423543772

# Layers that draw in training mode: (layer, input shape, what one draw covers: an element, an
# (n, c) channel, or a channel of an unbatched (C, L)). Each output is checked against the
# gradient it gives.
DRAWN_IN_TRAINING = {
    "Dropout1d": (lambda: nn.Dropout1d(0.4), (30, 20, 3), "channel"),
    "Dropout1d-unbatched": (lambda: nn.Dropout1d(0.4), (400, 3), "row"),
    "Dropout2d": (lambda: nn.Dropout2d(0.4), (30, 20, 2, 3), "channel"),
    "Dropout3d": (lambda: nn.Dropout3d(0.4), (30, 20, 2, 1, 3), "channel"),
    "AlphaDropout": (lambda: nn.AlphaDropout(0.3), (40, 30), "element"),
    "FeatureAlphaDropout": (lambda: nn.FeatureAlphaDropout(0.3), (30, 20, 4), "channel"),
    "RReLU": (lambda: nn.RReLU(0.1, 0.3), (40, 30), "element"),
}


@pytest.mark.parametrize("name", sorted(DRAWN_IN_TRAINING))
def test_a_layer_draws_in_training_mode_on_the_device(cuda_device, name):
    make, shape, per = DRAWN_IN_TRAINING[name]
    mt.manual_seed(0)  # the device's generator too: the kept fractions below are fixed draws
    layer = make().to("cuda")
    p = getattr(layer, "p", None)
    values = np.linspace(-2.0, 3.0, int(np.prod(shape))).reshape(shape)
    x = mt.tensor(values, device="cuda", requires_grad=True)
    y = layer(x)
    y.backward(mt.ones(shape, dtype=y.dtype, device="cuda"))
    assert _is_device_array(y.array) and _is_device_array(x.grad.array)
    out, grad = _host(y.array), _host(x.grad.array)
    if name == "RReLU":  # the slope of each negative element drawn from U(lower, upper)
        np.testing.assert_array_equal(grad[values > 0], 1.0)
        slopes = grad[values <= 0]
        assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and slopes.std() > 0.03
        np.testing.assert_allclose(out, values * grad, rtol=1e-12)
        return
    kept = grad != 0
    # one row per draw: every position a draw covers kept or dropped alike
    rows = {"channel": shape[0] * shape[1], "row": shape[0], "element": kept.size}[per]
    draws = kept.reshape(rows, -1)
    assert (draws == draws[:, :1]).all()
    assert abs(draws[:, 0].mean() - (1 - p)) < 0.1
    if "Alpha" in name:  # kept: scale * (x + alpha' * p); dropped: scale * alpha' * (p - 1)
        scale = 1.0 / np.sqrt((_ALPHA_PRIME**2 * p + 1.0) * (1.0 - p))
        np.testing.assert_allclose(grad[kept], scale, rtol=1e-12)
        want = np.where(kept, scale * (values + _ALPHA_PRIME * p), scale * _ALPHA_PRIME * (p - 1))
    else:
        np.testing.assert_allclose(grad[kept], 1.0 / (1.0 - p), rtol=1e-12)
        want = np.where(kept, values / (1.0 - p), 0.0)
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)

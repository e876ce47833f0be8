"""nn.utils.get_total_norm and clip_grads_with_norm_, the two halves of clip_grad_norm_:
PyTorch's values, and the halves doing what the whole does; nn.utils laid out as torch's."""

from __future__ import annotations

import math

import numpy as np
import pytest

import minitrain as mt
from minitrain import nn
from minitrain.errors import DeviceError


def _with_grads(arrays):
    params = [mt.tensor(a, requires_grad=True) for a in arrays]
    for param, array in zip(params, arrays, strict=True):
        param.grad = mt.tensor(array * 3)
    return params


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf, 0.0])
def test_the_two_halves_clip_as_clip_grad_norm_does(norm_type):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((3, 4)) for _ in range(3)]
    whole, halves = _with_grads(arrays), _with_grads(arrays)
    expected = nn.utils.clip_grad_norm_(whole, 1.0, norm_type)
    total = nn.utils.get_total_norm([p.grad for p in halves], norm_type, foreach=True)
    assert total.item() == expected.item() > 1.0
    assert nn.utils.clip_grads_with_norm_(halves, 1.0, total) is None
    for ours, theirs in zip(halves, whole, strict=True):
        np.testing.assert_array_equal(ours.grad.array, theirs.grad.array)
    assert nn.utils.get_total_norm([]).item() == 0.0


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf, 0.0])
def test_the_two_halves_match_torch(torch, norm_type):
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal((3, 4)) for _ in range(3)]
    ours = _with_grads(arrays)
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    for param, array in zip(theirs, arrays, strict=True):
        param.grad = torch.tensor(array * 3)
    our_total = nn.utils.get_total_norm([p.grad for p in ours], norm_type)
    their_total = torch.nn.utils.get_total_norm([p.grad for p in theirs], norm_type)
    np.testing.assert_allclose(our_total.array, their_total.numpy(), rtol=1e-12)
    nn.utils.clip_grads_with_norm_(ours, 0.5, our_total)
    torch.nn.utils.clip_grads_with_norm_(theirs, 0.5, their_total)
    for mine, their in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(mine.grad.array, their.grad.numpy(), rtol=1e-12)


def test_get_total_norm_errors():
    with pytest.raises(RuntimeError, match=r"^get_total_norm: the total norm of order 2.0"):
        nn.utils.get_total_norm([mt.tensor([1.0, math.nan])], error_if_nonfinite=True)


def test_get_total_norm_refuses_two_devices(cuda_device):
    tensors = [mt.ones(2), mt.ones(2, device=cuda_device)]
    with pytest.raises(DeviceError, match=r"^get_total_norm: the gradients are on"):
        nn.utils.get_total_norm(tensors)
    total = nn.utils.get_total_norm(tensors[1:], 1.0)
    assert total.device == cuda_device and total.cpu().item() == 2.0


def test_nn_utils_is_laid_out_as_torchs():
    from minitrain.nn.utils import clip_grad, convert_parameters, rnn

    assert nn.utils.clip_grad_norm_ is clip_grad.clip_grad_norm_
    assert nn.utils.parameters_to_vector is convert_parameters.parameters_to_vector
    assert nn.utils.rnn is rnn and nn.utils.rnn.PackedSequence.__name__ == "PackedSequence"

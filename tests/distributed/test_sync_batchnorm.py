"""SyncBatchNorm in one process (a world of one): BatchNorm's values, gradients and running
statistics, PyTorch's, and convert_sync_batchnorm; against BatchNorm on the whole batch split
over two ranks in test_distributed_mpi.py."""

from __future__ import annotations

import numpy as np
import pytest

import minitrain as mt
from minitrain import nn
from minitrain.errors import ShapeError
from minitrain.nn.modules.sync_batchnorm import SyncBatchNormalization


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 4, 4), (2, 3, 2, 3, 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_equals_torchs_batchnorm_in_values_gradients_and_running_statistics(
    world, torch, shape, dtype
):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    dy = rng.standard_normal(shape).astype(dtype)
    layer = nn.SyncBatchNorm(3, momentum=0.3, dtype=dtype)
    layer.weight.array[...] = [0.5, -1.0, 2.0]
    layer.bias.array[...] = [0.1, 0.0, -0.3]
    xt = mt.tensor(x, requires_grad=True)
    out = layer(xt)
    assert out.grad_fn.op is SyncBatchNormalization  # the all-reducing op ran, not batch_norm
    out.backward(mt.tensor(dy))
    reference = torch.nn.BatchNorm1d(3, momentum=0.3).to(torch.float64)
    with torch.no_grad():
        reference.weight[:] = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64)
        reference.bias[:] = torch.tensor([0.1, 0.0, -0.3], dtype=torch.float64)
    x_ref = torch.tensor(x.astype(np.float64), requires_grad=True)
    flat = x_ref if len(shape) < 4 else x_ref.reshape(shape[0], 3, -1)
    out_ref = reference(flat).reshape(shape)
    out_ref.backward(torch.tensor(dy.astype(np.float64)))
    tolerance = {"rtol": 1e-5, "atol": 1e-5} if dtype == np.float32 else {"rtol": 1e-10}
    assert out.dtype == dtype and xt.grad.dtype == dtype
    np.testing.assert_allclose(out.numpy(), out_ref.detach().numpy(), **tolerance)
    np.testing.assert_allclose(xt.grad.numpy(), x_ref.grad.numpy(), **tolerance)
    np.testing.assert_allclose(layer.weight.grad.numpy(), reference.weight.grad, **tolerance)
    np.testing.assert_allclose(layer.bias.grad.numpy(), reference.bias.grad, **tolerance)
    np.testing.assert_allclose(layer.running_mean.numpy(), reference.running_mean, **tolerance)
    np.testing.assert_allclose(layer.running_var.numpy(), reference.running_var, **tolerance)
    assert int(layer.num_batches_tracked.numpy()) == 1


def test_eval_mode_and_no_process_group_are_batchnorms(world):
    x = np.random.default_rng(1).standard_normal((5, 3, 4)).astype(np.float32)
    plain, synced = nn.BatchNorm1d(3), nn.SyncBatchNorm(3)
    for layer in (plain, synced):
        layer(mt.tensor(x))
        layer.eval()
    np.testing.assert_allclose(synced(mt.tensor(x)).numpy(), plain(mt.tensor(x)).numpy())


def test_eval_mode_without_running_statistics_does_not_synchronize(world):
    # as PyTorch's: only training synchronizes, so ranks may evaluate different batch counts
    x = np.random.default_rng(1).standard_normal((5, 3, 4))
    plain = nn.BatchNorm1d(3, track_running_stats=False).double().eval()
    synced = nn.SyncBatchNorm(3, track_running_stats=False).double().eval()
    out = synced(mt.tensor(x, requires_grad=True))
    assert out.grad_fn.op is not SyncBatchNormalization
    np.testing.assert_allclose(out.numpy(), plain(mt.tensor(x)).numpy(), rtol=1e-12)


def test_before_init_process_group_it_runs_batch_norm():
    out = nn.SyncBatchNorm(3)(mt.tensor(np.ones((4, 3)), requires_grad=True))
    assert out.grad_fn.op is not SyncBatchNormalization


def test_bad_input_is_refused(world):
    layer = nn.SyncBatchNorm(3)
    with pytest.raises(ShapeError, match=r"rank 2 or more \(N, C, ...\), got shape \(3,\)"):
        layer(mt.ones(3))
    with pytest.raises(ShapeError, match="input has 4 channels"):
        layer(mt.ones(2, 4))
    with pytest.raises(ShapeError, match="more than one value per channel over all ranks"):
        layer(mt.ones(1, 3))


def test_convert_sync_batchnorm_keeps_the_tensors_and_the_mode():
    model = nn.Sequential(
        nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.Sequential(nn.Flatten(), nn.BatchNorm1d(8))
    )
    model[1].eval()
    old_weight, old_mean = model[1].weight, model[1].running_mean
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert converted is model
    assert isinstance(model[1], nn.SyncBatchNorm) and isinstance(model[2][1], nn.SyncBatchNorm)
    assert model[1].weight is old_weight and model[1].running_mean is old_mean
    assert not model[1].training and model[2][1].training
    assert isinstance(model[0], nn.Conv2d)
    alone = nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm1d(4, affine=False))
    assert isinstance(alone, nn.SyncBatchNorm) and alone.weight is None
    no_bias = nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm1d(4, bias=False))
    assert no_bias.bias is None and no_bias.weight is not None

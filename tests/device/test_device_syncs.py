"""A training step on a CUDA device never waits on the host: zero_grad, forward, loss, backward
(and clip_grad_norm_) and the optimizer's step copy nothing from the device, so the host queues
the whole step while the GPU works. On the strict stand-in for CuPy each copy to the host is
counted (strict_device.counting); on a real GPU the host must get through a step while a long
kernel still occupies the GPU. Data-dependent checks (a class target out of range, a mean over no
targets, a probability outside [0, 1]) are read at the next read of a GPU value instead, as
PyTorch's device-side asserts surface at the next synchronisation; on a GPU the conv ops take the
batch in one chunk."""

from __future__ import annotations

import importlib
import time

import numpy as np
import pytest
import strict_device

import minitrain as mt
from minitrain import backend, nn, optim
from minitrain.errors import ArgumentError, IndexOutOfRangeError

chunking = importlib.import_module("minitrain.ops.convolution.chunking")


def _on_stand_in() -> bool:
    return backend.cupy is not None and backend.cupy.ndarray is strict_device.StrictArray


class _Encoder(nn.Module):
    """A causal transformer encoder layer over a sequence, classified from its last position."""

    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.1, batch_first=True)
        self.head = nn.Linear(16, 5)

    def forward(self, x):
        length = x.shape[1]
        mask = mt.triu(mt.full((length, length), float("-inf"), device=x.device), diagonal=1)
        return self.head(self.layer(x, src_mask=mask, is_causal=True)[:, -1])


def _benchmark_cnn() -> nn.Module:
    """benchmarks/training.py's CNN: Conv, BatchNorm, ReLU, MaxPool twice, then Linear."""
    from benchmarks.training import minitrain_step

    model, _ = minitrain_step("cnn")
    return model


class _Recurrent(nn.Module):
    """An LSTM over a sequence, classified from its last output."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 16, batch_first=True)
        self.head = nn.Linear(16, 5)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


# name: (model, optimizer, input shape, clip_grad_norm_'s max_norm or None)
STEPS = {
    "mlp-adam": (
        lambda: nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 5)),
        lambda params: optim.Adam(params, lr=1e-3),
        (8, 20),
        None,
    ),
    "cnn-sgd-momentum": (
        _benchmark_cnn,
        lambda params: optim.SGD(params, lr=0.01, momentum=0.9),
        (4, 1, 28, 28),
        None,
    ),
    "transformer-adamw-clip": (
        _Encoder,
        lambda params: optim.AdamW(params, lr=1e-3),
        (3, 6, 16),
        1.0,
    ),
    "lstm-adam": (_Recurrent, lambda params: optim.Adam(params, lr=1e-3), (3, 7, 8), None),
}


def _training_step(name: str, device, targets=None):
    """The model of STEPS[name] on `device`, and its training step on one batch (the loss
    returned, never read)."""
    build, make_optimizer, shape, max_norm = STEPS[name]
    mt.manual_seed(0)
    model = build().to(device)
    optimizer = make_optimizer(model.parameters())
    rng = np.random.default_rng(0)
    x = mt.tensor(rng.standard_normal(shape).astype(np.float32), device=device)
    classes = rng.integers(0, 5, shape[0]) if targets is None else np.asarray(targets)
    y = mt.tensor(classes, device=device)

    def step():
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        if max_norm is not None:
            nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        optimizer.step()
        return loss

    return model, step


def _weights(model) -> list[np.ndarray]:
    return [backend.to_device(p.array, backend.CPU) for p in model.parameters()]


@pytest.mark.parametrize("name", list(STEPS))
def test_a_training_step_copies_nothing_to_the_host(cuda_device, name):
    if not _on_stand_in():
        pytest.skip("host transfers are counted on the strict stand-in (a GPU: the timing test)")
    model, step = _training_step(name, cuda_device)
    step()  # the first step makes the optimizer's state
    before = _weights(model)
    with strict_device.counting() as transfers:
        step()
        loss = step()
    assert transfers.events == []
    # reading the loss is the first wait: for the kept checks (backend.defer_check) and the
    # value, two copies, the second after the GPU has drained
    with strict_device.counting() as transfers:
        assert np.isfinite(loss.item())
    assert transfers.count == 2, transfers.events
    assert any(not np.array_equal(a, b) for a, b in zip(before, _weights(model), strict=True))


def test_the_host_gets_through_a_step_while_the_gpu_is_busy(cuda_device):
    """On a real GPU: a step queued behind a kernel that spins for about a second returns on the
    host long before the GPU finishes; one copy to the host would wait out the spin. The MLP
    step: a bigger one may fill CUDA's queue of launches, which blocks the host for reasons of
    its own."""
    if _on_stand_in():
        pytest.skip("a real GPU's timing; the stand-in counts the transfers")
    cupy = backend.cupy
    spin = cupy.RawKernel(
        r"""
        extern "C" __global__ void spin(long long cycles) {
            long long start = clock64();
            while (clock64() - start < cycles) {}
        }
        """,
        "spin",
    )
    _, step = _training_step("mlp-adam", cuda_device)
    step()
    step()  # kernels compiled, the memory pool filled
    spin((1,), (1,), (np.int64(0),))  # compiled
    cupy.cuda.Device().synchronize()
    start = time.perf_counter()
    spin((1,), (1,), (np.int64(2_000_000_000),))
    step()
    on_host = time.perf_counter() - start
    cupy.cuda.Device().synchronize()
    on_gpu = time.perf_counter() - start
    assert on_gpu > 0.3, f"the spin took {on_gpu:.3f} s: too short to tell"
    assert on_host < on_gpu / 3, f"the step took {on_host:.3f} s of the GPU's {on_gpu:.3f} s"


def test_the_stand_in_counts_every_copy_to_the_host(cuda_device):
    if not _on_stand_in():
        pytest.skip("the stand-in's counter")
    xp = cuda_device.xp
    a = xp.asarray(np.array([1.5, -2.0, 3.0]))
    with strict_device.counting() as outer:
        with strict_device.counting() as inner:
            float(a[0]), int(a[1]), bool(a[2]), a[0].item(), a.tolist(), a.get()
            assert strict_device.transfers is inner
        xp.asnumpy(a), a[a > 0], xp.nonzero(a > 0), a[xp.asarray([0, 2])]
        assert strict_device.transfers is outer
    assert strict_device.transfers is None
    assert inner.count == 6
    assert outer.count == 9  # the inner six, asnumpy, a mask's count and nonzero's; not a gather
    assert inner.events[0].startswith("float() at test_device_syncs.py:")


# Data-dependent checks: at the next read on a GPU, at once on the CPU and under anomaly mode


def test_a_target_out_of_range_is_reported_at_the_next_read(cuda_device):
    targets = [0, 1, 2, 3, 4, -2, 0, 1]  # -2: no class of 5, nor ignore_index
    _, step = _training_step("mlp-adam", "cpu", targets)
    with pytest.raises(IndexOutOfRangeError, match="target -2 is out of range for 5 classes"):
        step()  # on the CPU, at once
    _, step = _training_step("mlp-adam", cuda_device, targets)
    with strict_device.counting() as transfers:
        loss = step()
    if _on_stand_in():
        assert transfers.count == 0
    with pytest.raises(IndexOutOfRangeError, match="cross_entropy: a target is out of range"):
        loss.item()
    assert np.isfinite(loss.item())  # reported once, then forgotten


def test_under_anomaly_mode_a_target_out_of_range_is_reported_at_once(cuda_device):
    _, step = _training_step("mlp-adam", cuda_device, [0, 1, 7, 2, 3, 4, 0, 1])
    with mt.autograd.detect_anomaly(), pytest.raises(IndexOutOfRangeError, match="target 7"):
        step()
    mt.tensor([1.0], device=cuda_device).item()  # nothing left to report


def test_a_mean_over_no_targets_is_reported_at_the_next_read(cuda_device):
    logits = mt.randn(4, 3, device=cuda_device, requires_grad=True)
    target = mt.tensor([-100] * 4, device=cuda_device)
    with strict_device.counting() as transfers:
        loss = nn.functional.cross_entropy(logits, target)
        loss.backward()
    if _on_stand_in():
        assert transfers.count == 0
    with pytest.raises(ArgumentError, match="reduction='mean' over no targets"):
        loss.cpu()
    assert np.isnan(loss.item()) and np.isnan(logits.grad.cpu().numpy()).all()


@pytest.mark.filterwarnings("ignore:invalid value encountered in log:RuntimeWarning")
def test_a_probability_outside_0_1_is_reported_at_the_next_read(cuda_device):
    # (the stand-in's numpy warns of log(-0.5); CuPy does not)
    x = mt.tensor([0.2, 1.5, 0.7], device=cuda_device)
    t = mt.tensor([0.0, 1.0, 1.0], device=cuda_device)
    with strict_device.counting() as transfers:
        loss = nn.functional.binary_cross_entropy(x, t)
    if _on_stand_in():
        assert transfers.count == 0
    with pytest.raises(ArgumentError, match="every element of input must lie in"):
        loss.tolist()


# Conv chunks: a CPU cache's worth on the CPU, the whole batch on a GPU


def _chunk_counts(monkeypatch, device) -> list[int]:
    """How many chunks each conv and conv_grad call of one conv layer's step split the batch
    into."""
    counts = []
    original = chunking.Chunked.of

    def recording(cls, *args, **kwargs):
        chunked = original(*args, **kwargs)
        counts.append(sum(len(share) for share in chunked.shares))
        return chunked

    monkeypatch.setattr(chunking.Chunked, "of", classmethod(recording))
    mt.manual_seed(0)
    layer = nn.Conv2d(16, 32, 3, padding=1).to(device)
    x = mt.randn(64, 16, 28, 28, device=device, requires_grad=True)
    layer(x).sum().backward()
    return counts


def test_a_gpu_takes_the_batch_in_one_chunk(cuda_device, monkeypatch):
    on_cpu = _chunk_counts(monkeypatch, "cpu")
    assert len(on_cpu) == 2 and min(on_cpu) > 1  # the forward and the backward, in chunks
    assert _chunk_counts(monkeypatch, cuda_device) == [1, 1]
    monkeypatch.setattr(chunking, "_DEVICE_CHUNK_BYTES", 1 << 22)  # a smaller GPU bound
    assert min(_chunk_counts(monkeypatch, cuda_device)) > 1

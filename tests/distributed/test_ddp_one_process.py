"""DistributedDataParallel in a world of one: the buckets, their all-reduce started while
backward runs, no_sync, unused parameters, the refusals; the two-rank runs are in
test_distributed_mpi.py."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import minitrain as mt
from minitrain import distributed, nn
from minitrain.autograd import hooks
from minitrain.errors import ArgumentError, DistributedError, DTypeError
from minitrain.nn.parallel import DistributedDataParallel


def mlp():
    mt.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 2))


def loss_of(model, x):
    return (model(mt.tensor(x)) ** 2).mean()


def test_without_a_process_group_it_says_to_initialize():
    with pytest.raises(DistributedError, match="init_process_group"):
        DistributedDataParallel(mlp())


@pytest.mark.parametrize(
    "build, error, words",
    [
        (lambda: DistributedDataParallel(nn.ReLU()), ArgumentError, "ReLU has no parameters"),
        (
            lambda: DistributedDataParallel(nn.Linear(2, 2).requires_grad_(False)),
            ArgumentError,
            "no parameters that require grad",
        ),
        (lambda: DistributedDataParallel(lambda x: x), DTypeError, "must be an nn.Module"),
        (lambda: DistributedDataParallel(mlp(), device_ids=[0]), ArgumentError, "device_ids"),
        (lambda: DistributedDataParallel(mlp(), bucket_cap_mb=0), ArgumentError, "positive"),
        (lambda: DistributedDataParallel(mlp(), bucket_cap_mb="25"), DTypeError, "a number"),
        (
            lambda: DistributedDataParallel(nn.Linear(2, 2).half()),
            DTypeError,
            "'weight' has dtype float16",
        ),
    ],
)
def test_bad_modules_and_arguments_are_refused(world, build, error, words):
    with pytest.raises(error, match=f"DistributedDataParallel: .*{words}"):
        build()


def test_gradients_and_state_dict_are_the_modules(world):
    x = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    plain = mlp()
    loss_of(plain, x).backward()
    model = DistributedDataParallel(mlp(), bucket_cap_mb=0.00005)
    loss_of(model, x).backward()
    assert [len(b.params) for b in model.buckets] == [2, 2, 2]  # reverse order, 52 bytes each
    assert model.buckets[0].params[0] is model.module[4].bias
    for (name, p), q in zip(plain.named_parameters(), model.module.parameters(), strict=True):
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy(), err_msg=name)
    assert list(model.state_dict()) == [f"module.{k}" for k in plain.state_dict()]


def test_each_bucket_starts_while_backward_still_runs(world):
    model = DistributedDataParallel(mlp(), bucket_cap_mb=0.00005)
    started_when_first_layer_runs = []
    hidden = model.module[0](mt.tensor(np.ones((3, 4), np.float32)))
    hidden.register_hook(lambda grad: started_when_first_layer_runs.append(model.next_bucket))
    model.sync_this_backward = True  # what forward sets; here the forward ran layer by layer
    out = model.module[1:](hidden)
    (out**2).mean().backward()
    # the buckets of layers 3 and 2 were started before layer 1's backward ran
    assert started_when_first_layer_runs == [2]
    assert model.next_bucket == 0 and not model.reducing  # the end of backward finished all


def test_no_sync_accumulates_and_the_next_backward_averages_the_sum(world):
    x = np.random.default_rng(2).standard_normal((6, 4)).astype(np.float32)
    plain = mlp()
    loss_of(plain, x[:3]).backward()
    loss_of(plain, x[3:]).backward()
    model = DistributedDataParallel(mlp())
    with model.no_sync():
        loss_of(model, x[:3]).backward()
    assert not model.reducing and model.buckets[0].ready == 0  # nothing was bucketed
    loss_of(model, x[3:]).backward()
    for p, q in zip(plain.parameters(), model.module.parameters(), strict=True):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("find_unused", [False, True])
def test_a_parameter_without_gradient(world, find_unused):
    class TwoHeads(nn.Module):
        def __init__(self):
            super().__init__()
            self.used, self.unused = nn.Linear(3, 2), nn.Linear(3, 2)

        def forward(self, x):
            return self.used(x)

    model = DistributedDataParallel(TwoHeads(), find_unused_parameters=find_unused)
    (model(mt.ones(2, 3)) ** 2).sum().backward()
    assert model.module.used.weight.grad is not None
    if find_unused:  # unused on every rank: left as it was, as PyTorch's
        assert model.module.unused.weight.grad is None
    else:
        np.testing.assert_array_equal(model.module.unused.weight.grad.numpy(), 0)


def test_a_backward_that_raised_is_forgotten_by_the_next_forward(world):
    model = DistributedDataParallel(mlp(), bucket_cap_mb=0.00005)
    x = np.ones((2, 4), np.float32)

    def fail(grad):
        raise ValueError("failed")

    def watch(module, args, out):
        out.register_hook(fail)

    handle = model.module[0].register_forward_hook(watch)
    with pytest.raises(ValueError, match="failed"):
        loss_of(model, x).backward()  # after the last two layers' buckets started
    handle.remove()
    assert model.reducing is not None and model.next_bucket == 2
    assert all(p.grad is None for p in model.parameters())
    loss_of(model, x).backward()
    assert model.reducing is None
    plain = mlp()
    loss_of(plain, x).backward()
    for p, q in zip(plain.parameters(), model.module.parameters(), strict=True):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6)


def test_a_second_backward_without_forward_after_one_that_raised_averages(world):
    model = DistributedDataParallel(mlp(), bucket_cap_mb=0.00005)
    x = np.ones((2, 4), np.float32)
    hidden = model.module[0](mt.tensor(x))
    handle = hidden.register_hook(lambda grad: 1 / 0)
    model.sync_this_backward = True  # what forward sets; here the forward ran layer by layer
    loss = (model.module[1:](hidden) ** 2).mean()
    with pytest.raises(ZeroDivisionError):
        loss.backward(retain_graph=True)
    handle.remove()
    loss.backward()  # the same graph again, without a forward: it ends the failed one first
    assert model.reducing is None and model.next_bucket == 0
    plain = mlp()
    loss_of(plain, x).backward()
    for p, q in zip(plain.parameters(), model.module.parameters(), strict=True):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6)


def test_backward_with_inputs_runs_the_averaging_for_the_parameters_among_them(world):
    model = DistributedDataParallel(mlp(), bucket_cap_mb=0.00005)
    finished = []
    finish = model.finish_backward

    def counted():
        finished.append(1)
        finish()

    model.finish_backward = counted
    x = np.ones((2, 4), np.float32)
    loss_of(model, x).backward(inputs=list(model.module.parameters()))
    assert finished == [1] and model.reducing is None
    plain = mlp()
    loss_of(plain, x).backward()
    for p, q in zip(plain.parameters(), model.module.parameters(), strict=True):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6)


def test_dropping_the_wrapper_takes_its_hooks_off(world):
    module = mlp()
    model = DistributedDataParallel(module)
    watched = {id(p) for p in module.parameters()}
    assert watched <= hooks._ready_hooks.keys()
    del model
    gc.collect()
    assert not watched & hooks._ready_hooks.keys()


def test_distributed_data_parallel_is_reachable_as_in_pytorch():
    assert nn.parallel.DistributedDataParallel is DistributedDataParallel
    assert distributed.ReduceOp.SUM.name == "SUM"


def counting_collectives(monkeypatch) -> list:
    """The names of the collectives DistributedDataParallel starts from now on, in order."""
    started = []
    for name in ("all_reduce_buffer", "broadcast", "all_reduce", "all_gather_object"):
        original = getattr(distributed, name)

        def counted(*args, original=original, name=name, **kwargs):
            started.append(name)
            return original(*args, **kwargs)

        monkeypatch.setattr(distributed, name, counted)
    return started


def test_a_training_step_runs_one_all_reduce_per_bucket_and_the_status(world, monkeypatch):
    model = DistributedDataParallel(mlp(), bucket_cap_mb=0.00005)
    optimizer = mt.optim.SGD(model.parameters(), lr=0.1)
    x = np.ones((2, 4), np.float32)
    loss_of(model, x).backward()
    started = counting_collectives(monkeypatch)
    for _ in range(3):
        optimizer.zero_grad()
        loss = loss_of(model, x)
        assert started == []  # the forward runs none: the last backward ran what it owed
        loss.backward()
        optimizer.step()
        assert started == ["all_reduce_buffer"] * (len(model.buckets) + 1)
        started.clear()


def test_a_backward_that_raised_before_its_first_gradient_is_ended_by_the_next_forward(
    world, monkeypatch
):
    model = DistributedDataParallel(mlp(), bucket_cap_mb=0.00005)
    x = np.ones((2, 4), np.float32)
    loss = loss_of(model, x)
    loss.register_hook(lambda grad: 1 / 0)  # raises before any parameter's gradient
    with pytest.raises(ZeroDivisionError):
        loss.backward()
    started = counting_collectives(monkeypatch)
    loss = loss_of(model, x)  # runs the collectives the failed backward owed the other ranks
    assert started == ["all_reduce_buffer"] * (len(model.buckets) + 1)
    assert model.buckets[0].work is None and model.owed  # this forward's, now
    loss.backward()
    plain = mlp()
    loss_of(plain, x).backward()
    for p, q in zip(plain.parameters(), model.module.parameters(), strict=True):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6)


def test_a_forward_without_backward_is_ended_by_the_next_and_raises_nothing(world, monkeypatch):
    model = DistributedDataParallel(mlp(), bucket_cap_mb=0.00005)
    x = np.ones((2, 4), np.float32)
    loss_of(model, x)
    started = counting_collectives(monkeypatch)
    with mt.no_grad():
        loss_of(model, x)  # an evaluation next: it ends the forward that owed a backward
    assert started == ["all_reduce_buffer"] * (len(model.buckets) + 1)
    started.clear()
    with mt.no_grad():
        loss_of(model, x)  # owes nothing
    assert started == [] and model.synced_forwards == 1


def test_backward_with_inputs_leaves_the_other_parameters_grad_as_it_was(world):
    model = DistributedDataParallel(mlp(), bucket_cap_mb=0.00005)
    x = np.ones((2, 4), np.float32)
    last = model.module[4].weight
    loss_of(model, x).backward(inputs=[last])
    assert last.grad is not None
    assert all(p.grad is None for p in model.parameters() if p is not last)
    before = {id(p): mt.full_like(p, 3.0) for p in model.parameters()}
    for p in model.parameters():
        p.grad = before[id(p)]
    loss_of(model, x).backward(inputs=[last])
    plain = mlp()
    loss_of(plain, x).backward()
    np.testing.assert_allclose(last.grad.numpy(), 3 + plain[4].weight.grad.numpy(), rtol=1e-6)
    for p in model.parameters():
        if p is not last:
            assert p.grad is before[id(p)]
            np.testing.assert_array_equal(p.grad.numpy(), 3.0)

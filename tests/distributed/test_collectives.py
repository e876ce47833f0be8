"""minitrain.distributed in one process: a world of one (with or without mpi4py), PyTorch's
names and in-place results, and bad arguments refused before anything runs."""

from __future__ import annotations

import datetime
import socket
import subprocess
import sys
import types

import numpy as np
import pytest

import minitrain as mt
from minitrain import distributed
from minitrain.errors import ArgumentError, DistributedError, DTypeError, ShapeError


def test_before_init_every_collective_names_init_process_group():
    assert distributed.is_available()
    assert not distributed.is_initialized()
    for call in (
        distributed.get_rank,
        distributed.get_world_size,
        distributed.barrier,
        distributed.destroy_process_group,
        lambda: distributed.all_reduce(mt.ones(2)),
    ):
        with pytest.raises(DistributedError, match="init_process_group"):
            call()


def test_a_process_without_a_launcher_is_a_world_of_one(world):
    assert distributed.is_initialized()
    assert (distributed.get_rank(), distributed.get_world_size()) == (0, 1)
    assert distributed.get_backend() == "mpi"
    with pytest.raises(DistributedError, match="already initialized"):
        distributed.init_process_group()
    distributed.destroy_process_group()
    assert not distributed.is_initialized()
    distributed.init_process_group(backend="mpi", world_size=1, rank=0)  # again, explicitly
    assert distributed.get_world_size() == 1


@pytest.mark.parametrize(
    "arguments, error, words",
    [
        ({"backend": "nccl"}, ArgumentError, "backend 'nccl' is not available"),
        ({"init_method": "tcp://10.0.0.1:23456"}, ArgumentError, "MPI launcher"),
        ({"timeout": 30}, DTypeError, "timeout must be a datetime.timedelta, got int 30"),
        ({"timeout": datetime.timedelta(0)}, ArgumentError, "timeout must be positive"),
        ({"world_size": 2}, DistributedError, "world_size=2, but the MPI launcher started 1"),
        ({"rank": 1}, DistributedError, "rank=1, but MPI gave this process rank 0"),
        ({"world_size": 0}, ArgumentError, "world_size must be at least 1, got 0"),
        ({"world_size": 2, "rank": 2}, ArgumentError, "rank 2 is not below world_size 2"),
    ],
)
def test_init_refuses_what_it_cannot_honour(arguments, error, words):
    pytest.importorskip("mpi4py")
    with pytest.raises(error, match=f"^init_process_group: .*{words}"):
        distributed.init_process_group(**arguments)
    assert not distributed.is_initialized()


@pytest.fixture
def without_mpi4py(monkeypatch):
    monkeypatch.setitem(sys.modules, "mpi4py", None)
    monkeypatch.setitem(sys.modules, "mpi4py.MPI", None)
    for variable in distributed.LAUNCHER_SIZE_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    return monkeypatch


def test_without_mpi4py_a_world_of_one_still_works(without_mpi4py):
    assert not distributed.is_mpi_available()
    distributed.init_process_group()
    try:
        t = mt.tensor([1.0, 2.0])
        distributed.all_reduce(t, distributed.ReduceOp.AVG)
        parts = [mt.zeros(2)]
        distributed.all_gather(parts, t)
        distributed.barrier()
        np.testing.assert_array_equal(parts[0].numpy(), [1.0, 2.0])
    finally:
        distributed.destroy_process_group()


@pytest.mark.parametrize("launched, arguments", [("2", {}), (None, {"world_size": 2})])
def test_without_mpi4py_a_world_of_several_says_what_to_install(
    without_mpi4py, launched, arguments
):
    if launched is not None:
        without_mpi4py.setenv("PMI_SIZE", launched)
    with pytest.raises(DistributedError, match=r"pip install 'minitrain\[distributed\]'"):
        distributed.init_process_group(**arguments)
    assert not distributed.is_initialized()


@pytest.mark.parametrize("op", list(distributed.ReduceOp))
def test_all_reduce_of_one_rank_leaves_the_values(world, op):
    values = np.array([[1.5, -2.0], [3.0, 0.25]])
    t = mt.tensor(values)
    assert distributed.all_reduce(t, op) is None
    np.testing.assert_array_equal(t.numpy(), values)


def test_async_collectives_return_work(world):
    work = distributed.all_reduce(mt.ones(3), async_op=True)
    assert work.is_completed() and work.wait() is True
    assert distributed.barrier(async_op=True).wait()


def test_all_gather_and_broadcast_of_one_rank(world):
    t = mt.tensor(np.arange(6.0).reshape(2, 3))
    parts = [mt.zeros(2, 3, dtype=mt.float64)]
    distributed.all_gather(parts, t)
    np.testing.assert_array_equal(parts[0].numpy(), t.numpy())
    assert parts[0].array is not t.array  # a copy, as PyTorch's
    distributed.broadcast(t, src=0)
    np.testing.assert_array_equal(t.numpy(), np.arange(6.0).reshape(2, 3))
    objects = [None]
    distributed.all_gather_object(objects, {"step": 3, "name": "a"})
    assert objects == [{"step": 3, "name": "a"}]


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: distributed.all_reduce(np.ones(2)), DTypeError, "tensor must be a Tensor"),
        (
            lambda: distributed.all_reduce(mt.ones(2), "sum"),
            DTypeError,
            "op must be a ReduceOp",
        ),
        (
            lambda: distributed.all_reduce(mt.ones(2, dtype=mt.int64), distributed.ReduceOp.AVG),
            DTypeError,
            "ReduceOp.AVG needs a floating tensor, got int64",
        ),
        (
            lambda: distributed.all_reduce(mt.ones(2, dtype=mt.float16)),
            DTypeError,
            "has dtype float16",
        ),
        (
            lambda: distributed.all_reduce(mt.Tensor(np.broadcast_to(np.ones(1), (3,)))),
            ArgumentError,
            "read-only",
        ),
        (lambda: distributed.all_reduce(mt.ones(2), group=object()), ArgumentError, "group"),
        (lambda: distributed.broadcast(mt.ones(2), src=1), ArgumentError, "src 1 is not a rank"),
        (lambda: distributed.broadcast(mt.ones(2), src=-1), ArgumentError, "src must be at least"),
        (
            lambda: distributed.all_gather([mt.ones(2), mt.ones(2)], mt.ones(2)),
            ArgumentError,
            "tensor_list must be a list of 1 tensors",
        ),
        (
            lambda: distributed.all_gather([mt.ones(3)], mt.ones(2)),
            ShapeError,
            r"tensor_list\[0\] is float32 \(3,\), but tensor is float32 \(2,\)",
        ),
        (lambda: distributed.all_gather_object([], 1), ArgumentError, "object_list"),
        (lambda: distributed.barrier(device_ids=[0]), ArgumentError, "device_ids"),
    ],
)
def test_bad_arguments_are_refused_naming_the_call(world, call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_all_reduce_buffer_takes_contiguous_arrays_only(world):
    assert distributed.all_reduce_buffer(np.ones(4)).wait()
    with pytest.raises(DTypeError, match="C-contiguous numpy array"):
        distributed.all_reduce_buffer(np.ones((4, 4))[:, 0])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_rank_on_another_machine_of_the_same_name_is_not_taken_for_dead():
    # another machine named alike, in its first pid namespace (4026531836 on every machine),
    # whose rank's pid does not run here: only this machine's ranks are looked at
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    other = (socket.gethostname(), "another-boot-id pid:[4026531836]", ended.pid)
    world = distributed._World(None, None, 0, 2, 1.0)
    world.processes = [distributed._this_process(), other]
    distributed._raise_if_ranks_died(world, "all_reduce")  # no error
    world.processes[1] = (*distributed._this_process()[:2], ended.pid)  # this machine's
    with pytest.raises(DistributedError, match=f"rank 1 \\(pid {ended.pid} on "):
        distributed._raise_if_ranks_died(world, "all_reduce")


def test_a_header_that_is_no_collectives_says_the_ranks_are_out_of_step():
    # rank 1's all_reduce met a collective that sends no header (a bucket of
    # DistributedDataParallel's): what arrived as its header is a float64 gradient's bits
    def gather(header, headers):
        headers[0] = header
        headers[1] = np.float64(0.5).view(np.int64)

    mpi = types.SimpleNamespace(Request=types.SimpleNamespace(Testall=lambda requests: True))
    world = distributed._World(mpi, types.SimpleNamespace(Iallgather=gather), 0, 2, 1.0)
    bits = int(np.float64(0.5).view(np.int64))
    with pytest.raises(
        DistributedError,
        match=f"all_reduce: the ranks' collectives are out of step: rank 1 sent \\[{bits}, ",
    ):
        distributed._agree(world, "all_reduce", 0, np.ones(3))

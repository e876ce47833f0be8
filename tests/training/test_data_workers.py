"""DataLoader with worker processes (num_workers > 0), as PyTorch's: the batches and their order
are those of num_workers=0, workers are seeded and told who they are, their errors and deaths
reach the main process, and no worker outlives its loader."""

import gc
import multiprocessing
import os
import pickle
import random
import signal
import subprocess
import sys

import numpy as np
import pytest

import minitrain
from minitrain.errors import ArgumentError, WorkerError
from minitrain.utils.data import (
    BatchSampler,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    TensorDataset,
    get_worker_info,
    multiprocess_iterator,
)
from minitrain.utils.data.worker import WorkerInfo

_init_calls = []  # in a worker: the ids worker_init_fn was called with there


class Numbered(Dataset):
    """Sample i is (i as a float32 array of 2, i); indices in `fail_at` raise `error`, and the
    index `kill_at` kills the worker reading it."""

    def __init__(self, size, fail_at=(), error=ValueError, kill_at=None):
        self.size, self.fail_at, self.error, self.kill_at = size, fail_at, error, kill_at

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        if index == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        if index in self.fail_at:
            raise self.error(f"bad sample {index}")
        return np.full(2, index, np.float32), index


class WhoAmI(Dataset):
    """Sample i says which process read it and what that process's worker state is."""

    def __len__(self):
        return 8

    def __getitem__(self, index):
        info = get_worker_info()
        return {
            "index": index,
            "pid": os.getpid(),
            "id": info.id,
            "num_workers": info.num_workers,
            "seed": info.seed,
            "dataset": type(info.dataset).__name__,
            "init_calls": list(_init_calls),
            "random": random.random(),
            "minitrain": float(minitrain.rand(1).item()),
            "numpy": np.random.random_sample(),
        }


class Blocks(Dataset):
    """A sample that never comes (its worker waits on an event nobody sets)."""

    def __init__(self):
        self.never = multiprocessing.get_context().Event()

    def __len__(self):
        return 2

    def __getitem__(self, index):
        self.never.wait()


class Split(IterableDataset):
    """The numbers start..stop-1, each worker reading its share (all of them in the main
    process): even contiguous shares, as PyTorch's IterableDataset example splits them."""

    def __init__(self, start, stop, shares=None):
        self.start, self.stop, self.shares = start, stop, shares or even_shares

    def __iter__(self):
        return iter(range(*self.shares(self.start, self.stop, get_worker_info())))


def even_shares(start, stop, info):
    if info is None:
        return start, stop
    per_worker = -(-(stop - start) // info.num_workers)
    first = start + info.id * per_worker
    return first, min(first + per_worker, stop)


def uneven_shares(start, stop, info):
    """Worker 0 reads the first seven numbers, worker 1 the rest."""
    if info is None:
        return start, stop
    return (start, start + 7) if info.id == 0 else (start + 7, stop)


class Whole(IterableDataset):
    """The numbers 0..size-1, whole in every worker."""

    def __init__(self, size):
        self.size = size

    def __iter__(self):
        return iter(range(self.size))


def keep(samples):
    return samples


def record_init(worker_id):
    _init_calls.append(worker_id)


def fail_init(worker_id):
    raise ArgumentError(f"worker_init_fn: no setup for worker {worker_id}")


def rows(loader):
    """Each batch's values as lists (the first field of tuple batches)."""
    return [_as_list(batch[0] if isinstance(batch, tuple) else batch) for batch in loader]


def _as_list(value):
    return value.tolist() if hasattr(value, "tolist") else value


def assert_no_worker_alive(pids):
    for pid in pids:  # os-level: the process is gone and reaped
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert multiprocessing.active_children() == []


@pytest.mark.parametrize(
    "options",
    [
        {"batch_size": 3, "shuffle": True},
        {"batch_size": 3, "shuffle": True, "drop_last": True},
        {"batch_size": None, "shuffle": True},
        {"batch_sampler": "random"},
        {"batch_size": 4, "collate_fn": keep, "shuffle": True},
    ],
    ids=["shuffle", "drop_last", "unbatched", "batch_sampler", "collate_fn"],
)
@pytest.mark.parametrize("tensors", [False, True], ids=["dataset", "TensorDataset"])
def test_two_workers_give_the_batches_of_no_workers_in_the_same_order(options, tensors):
    dataset = TensorDataset(np.arange(17.0)) if tensors else Numbered(17)

    def epochs(num_workers):  # three epochs of one loader: every epoch's order, not the first's
        settings = dict(options)
        if settings.get("batch_sampler") == "random":
            sampler = RandomSampler(dataset, generator=np.random.default_rng(4))
            settings["batch_sampler"] = BatchSampler(sampler, 5, drop_last=False)
        else:
            settings["generator"] = np.random.default_rng(4)
        loader = DataLoader(dataset, num_workers=num_workers, **settings)
        return [[pickle.dumps(_plain(batch)) for batch in loader] for _ in range(3)], len(loader)

    batches, length = epochs(0)
    assert epochs(2) == (batches, length)
    assert all(len(epoch) == length > 1 for epoch in batches)
    assert batches[0] != batches[1]  # shuffled anew each epoch
    assert multiprocessing.active_children() == []


def _plain(batch):
    """A batch with its Tensors as arrays, for comparison."""
    if isinstance(batch, (tuple, list)):
        return [_plain(item) for item in batch]
    return batch.array if isinstance(batch, minitrain.Tensor) else batch


def test_workers_match_pytorchs_batches_for_the_same_order():
    order = [7, 2, 9, 0, 4, 1, 10, 3, 5]
    ours = DataLoader(
        Numbered(11), batch_sampler=BatchSampler(order, 2, drop_last=False), num_workers=2
    )
    labels = [batch[1].tolist() for batch in ours]
    assert labels == [[7, 2], [9, 0], [4, 1], [10, 3], [5]]
    torch = pytest.importorskip("torch")

    class Reference(torch.utils.data.Dataset):
        def __len__(self):
            return 11

        def __getitem__(self, index):
            return np.full(2, index, np.float32), index

    reference = torch.utils.data.DataLoader(
        Reference(),
        batch_sampler=torch.utils.data.BatchSampler(order, 2, drop_last=False),
        num_workers=2,
    )
    assert [batch[1].tolist() for batch in reference] == labels


@pytest.mark.parametrize("drop_last", [False, True])
def test_an_iterable_dataset_split_by_worker_gives_no_worker_s_samples(drop_last):
    def epoch(num_workers, batch_size):
        loader = DataLoader(Split(0, 10), batch_size, num_workers=num_workers, drop_last=drop_last)
        return rows(loader)

    # each worker's share is read whole, its batches taken from the workers in turn (each
    # worker drops its own partial batch)
    expected = [[0, 1], [5, 6], [2, 3], [7, 8], [4], [9]]
    if drop_last:
        expected = [[0, 1], [5, 6], [2, 3], [7, 8]]
    assert epoch(2, 2) == expected
    assert epoch(0, 2) == ([[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]])
    assert sorted(sum(epoch(2, 1), [])) == sum(epoch(0, 1), []) == list(range(10))


def test_an_iterable_dataset_without_a_split_is_read_whole_by_every_worker():
    loader = DataLoader(Whole(5), 2, num_workers=2)
    assert rows(loader) == [[0, 1], [0, 1], [2, 3], [2, 3], [4], [4]]
    assert rows(DataLoader(Whole(3), None, num_workers=2)) == [0, 0, 1, 1, 2, 2]


@pytest.mark.parametrize("drop_last", [False, True])
def test_iterable_datasets_interleave_as_pytorchs_when_workers_end_at_different_times(drop_last):
    # a worker whose stream ends leaves the round; the others go on in turn
    ours = DataLoader(Split(0, 10, uneven_shares), 2, num_workers=2, drop_last=drop_last)
    expected = [[0, 1], [7, 8], [2, 3], [9], [4, 5], [6]]
    if drop_last:
        expected = [[0, 1], [7, 8], [2, 3], [4, 5]]
    assert rows(ours) == expected
    torch = pytest.importorskip("torch")

    class Reference(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter(range(*uneven_shares(0, 10, torch.utils.data.get_worker_info())))

    reference = torch.utils.data.DataLoader(Reference(), 2, num_workers=2, drop_last=drop_last)
    assert [batch.tolist() for batch in reference] == expected


def test_worker_init_fn_runs_once_in_each_worker_with_its_id_and_worker_info_tells_it():
    assert get_worker_info() is None  # the main process is no worker
    loader = DataLoader(WhoAmI(), 2, num_workers=2, worker_init_fn=record_init, collate_fn=keep)
    samples = [sample for batch in loader for sample in batch]
    assert [s["index"] for s in samples] == list(range(8))
    by_worker = {}
    for sample in samples:
        by_worker.setdefault(sample["id"], set()).add(sample["pid"])
        assert sample["init_calls"] == [sample["id"]]  # once, with this worker's id
        assert sample["num_workers"] == 2 and sample["dataset"] == "WhoAmI"
    assert sorted(by_worker) == [0, 1]
    assert all(len(pids) == 1 for pids in by_worker.values())
    assert by_worker[0] != by_worker[1] and os.getpid() not in by_worker[0] | by_worker[1]
    assert _init_calls == []  # nothing ran in this process


def _first_draws(loader):
    """Each worker's first sample in one epoch of `loader`: its seed and its generators' first
    draws, by worker id."""
    first_draws = {}
    for sample in (sample for batch in loader for sample in batch):
        draws = (sample["seed"], sample["random"], sample["minitrain"], sample["numpy"])
        first_draws.setdefault(sample["id"], draws)
    return first_draws


@pytest.mark.parametrize("shuffle", [False, True])
def test_worker_seeds_differ_per_worker_and_epoch_and_follow_the_generator(shuffle):
    def epochs(generator, count=2):
        loader = DataLoader(
            WhoAmI(), 1, shuffle=shuffle, num_workers=2, generator=generator, collate_fn=keep
        )
        return [_first_draws(loader) for _ in range(count)]

    first = epochs(np.random.default_rng(7))
    base = first[0][0][0]
    for epoch in first:  # worker i's seed is the epoch's base seed + i, a non-negative int64
        assert sorted(epoch) == [0, 1] and epoch[1][0] == epoch[0][0] + 1
        assert 0 <= epoch[0][0] < 2**63
        assert epoch[0][1:] != epoch[1][1:]
    assert first[1][0][0] != base  # a new epoch: new seeds, with or without a shuffle
    assert first[1][0][1:] != first[0][0][1:]
    assert epochs(np.random.default_rng(7)) == first  # the same seeding: the same seeds
    assert epochs(np.random.default_rng(8))[0][0][0] not in (base, first[1][0][0])
    for epoch in first:
        for worker_id in (0, 1):  # the first draws of generators seeded as the worker's were
            seed, draws = epoch[worker_id][0], epoch[worker_id][1:]
            assert draws[0] == random.Random(seed).random()
            generator = minitrain.Generator().manual_seed(seed)
            assert draws[1] == float(minitrain.rand(1, generator=generator).item())
    minitrain.manual_seed(3)
    unseeded = epochs(None)
    minitrain.manual_seed(3)
    assert epochs(None) == unseeded  # the global generator's state, when the loader has none
    assert unseeded[0][0][0] != unseeded[1][0][0]
    torch = pytest.importorskip("torch")
    from torch.utils.data._utils.worker import _generate_state  # PyTorch's numpy seeding

    for worker_id in (0, 1):
        reference = np.random.RandomState(_generate_state(base, worker_id))
        assert first[0][worker_id][3] == reference.random_sample()
    assert torch.utils.data.get_worker_info() is None


class RandomValues(Dataset):
    """Sample i is a draw from Python's `random`: augmentation's randomness, as a worker has it."""

    def __len__(self):
        return 4

    def __getitem__(self, index):
        return random.random()


class RandomStream(IterableDataset):
    """Four draws from Python's `random`, each worker its own share."""

    def __iter__(self):
        info = get_worker_info()
        count = 4 if info is None else 2
        return iter([random.random() for _ in range(count)])


@pytest.mark.parametrize(
    "make_loader",
    [
        lambda: DataLoader(RandomValues(), 2, num_workers=2),
        lambda: DataLoader(
            RandomValues(),
            2,
            num_workers=2,
            sampler=RandomSampler(range(4), generator=np.random.default_rng(0)),
        ),  # fmt: skip
        lambda: DataLoader(RandomStream(), 2, num_workers=2),
    ],
    ids=["no_shuffle", "sampler_with_its_generator", "IterableDataset"],
)
def test_random_augmentation_differs_from_epoch_to_epoch(make_loader):
    loader = make_loader()
    first, second = (sorted(sum(rows(loader), [])) for _ in range(2))
    assert len(first) == len(second) == 4
    assert set(first).isdisjoint(second)  # epoch 2 draws anew, in every worker
    assert sorted(sum(rows(make_loader()), [])) == first  # and the same from the same seeding


def test_worker_info_cannot_be_changed():
    info = WorkerInfo(id=0, num_workers=2, seed=5, dataset=None)
    with pytest.raises(RuntimeError, match="Cannot assign attributes to WorkerInfo"):
        info.id = 1
    assert repr(info) == "WorkerInfo(id=0, num_workers=2, seed=5, dataset=None)"


def test_a_worker_s_exception_reaches_the_main_process_with_its_class_and_traceback():
    loader = DataLoader(Numbered(8, fail_at=(3,)), 1, num_workers=2)
    iterator = iter(loader)
    pids = [worker.pid for worker in iterator.workers]
    assert [next(iterator)[1].tolist() for _ in range(3)] == [[0], [1], [2]]
    with pytest.raises(ValueError) as caught:  # index 3 is worker 1's second batch
        next(iterator)
    message = str(caught.value)
    assert message.startswith("Caught ValueError in DataLoader worker process 1.\n")
    assert "Original Traceback (most recent call last):" in message
    assert "in __getitem__" in message and "ValueError: bad sample 3" in message
    assert all(worker.is_alive() for worker in iterator.workers)  # one batch's error: read on
    assert [batch[1].tolist() for batch in iterator] == [[4], [5], [6], [7]]
    assert_no_worker_alive(pids)


def _read_through_errors(iterator):
    """Every batch's first label, or "error" for a batch that raised, as a loop that catches
    the error and reads on."""
    got = []
    while True:
        try:
            got.append(int(next(iterator)[1][0]))
        except StopIteration:
            return got
        except KeyError:
            got.append("error")


@pytest.mark.parametrize("num_workers", [0, 2])
def test_an_error_in_one_batch_leaves_the_rest_of_the_epoch_as_pytorch(num_workers):
    dataset = Numbered(6, fail_at=(2, 4), error=KeyError)
    loader = DataLoader(dataset, 1, num_workers=num_workers)
    iterator = iter(loader)
    pids = [worker.pid for worker in getattr(iterator, "workers", [])]
    expected = [0, 1, "error", 3, "error", 5]
    assert _read_through_errors(iterator) == expected
    assert_no_worker_alive(pids)
    assert _read_through_errors(iter(loader)) == expected  # the loader's next epoch too
    iterator = iter(loader)  # an iterator dropped after an error stops its workers
    pids = [worker.pid for worker in getattr(iterator, "workers", [])]
    assert [int(next(iterator)[1][0]) for _ in range(2)] == [0, 1]
    with pytest.raises(KeyError, match="bad sample 2"):
        next(iterator)
    del iterator
    gc.collect()
    assert_no_worker_alive(pids)
    torch = pytest.importorskip("torch")
    reference = torch.utils.data.DataLoader(dataset, 1, num_workers=num_workers)
    assert _read_through_errors(iter(reference)) == expected


def test_a_worker_s_error_keeps_its_minitrain_class_and_matches_pytorchs_message():
    with pytest.raises(ArgumentError, match="Caught ArgumentError in DataLoader worker process 0"):
        list(DataLoader(Numbered(4, fail_at=(0,), error=ArgumentError), 2, num_workers=2))
    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process 1"):
        list(DataLoader(Numbered(4, fail_at=(1,), error=KeyError), None, num_workers=2))
    with pytest.raises(ArgumentError, match="(?s)worker process 0.*no setup for worker 0"):
        list(DataLoader(Numbered(4), 1, num_workers=2, worker_init_fn=fail_init))
    assert multiprocessing.active_children() == []
    torch = pytest.importorskip("torch")

    class Reference(torch.utils.data.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, index):
            raise ValueError("bad sample")

    with pytest.raises(ValueError) as ours:
        list(DataLoader(Numbered(4, fail_at=(0,)), 1, num_workers=2))
    with pytest.raises(ValueError) as reference:
        list(torch.utils.data.DataLoader(Reference(), 1, num_workers=2))
    assert str(ours.value).splitlines()[:2] == str(reference.value).splitlines()[:2]
    # PyTorch's workers wait for its iterator, held by the traceback, to be collected
    for process in multiprocessing.active_children():
        process.terminate()
        process.join()
    del reference
    gc.collect()


def test_a_batch_that_cannot_be_pickled_is_an_error_naming_the_worker():
    def unpicklable(samples):
        return lambda: samples

    with pytest.raises(Exception, match="Caught .* in DataLoader worker process 0"):
        list(DataLoader(Numbered(4), 2, num_workers=1, collate_fn=unpicklable))
    assert multiprocessing.active_children() == []


def test_a_killed_worker_raises_naming_it_instead_of_hanging():
    iterator = iter(DataLoader(Numbered(12, kill_at=1), 1, num_workers=2))
    pids = [worker.pid for worker in iterator.workers]
    with pytest.raises(
        RuntimeError, match=r"exited unexpectedly: worker 1 \(pid \d+, exit code -9"
    ):
        list(iterator)
    assert_no_worker_alive(pids)


def test_a_timeout_raises_instead_of_waiting_for_ever(monkeypatch):
    monkeypatch.setattr(multiprocess_iterator, "SHUTDOWN_GRACE_SECONDS", 0.5)
    iterator = iter(DataLoader(Blocks(), 1, num_workers=1, timeout=0.3))
    pids = [worker.pid for worker in iterator.workers]
    with pytest.raises(WorkerError, match="DataLoader timed out after 0.3 seconds"):
        next(iterator)
    assert isinstance(WorkerError("x"), RuntimeError)
    assert_no_worker_alive(pids)


def test_no_worker_survives_an_epoch_s_end_or_a_dropped_iterator():
    loader = DataLoader(Numbered(10), 2, num_workers=2)
    iterator = iter(loader)
    pids = [worker.pid for worker in iterator.workers]
    assert len(iterator) == 5 and len(list(iterator)) == 5
    assert_no_worker_alive(pids)
    iterator = iter(loader)
    pids = [worker.pid for worker in iterator.workers]
    next(iterator)
    del iterator  # mid-epoch, batches still on their way
    assert_no_worker_alive(pids)


def test_persistent_workers_are_the_same_processes_every_epoch():
    loader = DataLoader(
        WhoAmI(), 3, num_workers=2, persistent_workers=True, collate_fn=keep,
        worker_init_fn=record_init,
    )  # fmt: skip
    epochs = [[sample for batch in loader for sample in batch] for _ in range(2)]
    pids = [{s["pid"] for s in epoch} for epoch in epochs]
    assert pids[0] == pids[1] and len(pids[0]) == 2
    assert [s["index"] for s in epochs[1]] == list(range(8))
    assert [s["init_calls"] for s in epochs[1]] == [[s["id"]] for s in epochs[1]]  # not rerun
    assert len(multiprocessing.active_children()) == 2  # kept between epochs
    iterator = iter(loader)
    next(iterator)  # an epoch left half-read: the next one starts afresh on the same workers
    assert [s["index"] for batch in loader for s in batch] == list(range(8))
    del loader, iterator
    assert_no_worker_alive(pids[0])


def test_persistent_workers_read_an_iterable_dataset_anew_each_epoch():
    loader = DataLoader(Split(0, 6), 2, num_workers=2, persistent_workers=True)
    assert rows(loader) == rows(loader) == [[0, 1], [3, 4], [2], [5]]
    del loader
    assert multiprocessing.active_children() == []


_LEFT_AT_EXIT = """
import numpy as np
from minitrain.utils.data import DataLoader, TensorDataset

dataset = TensorDataset(np.arange(40.0))
half_read = iter(DataLoader(dataset, 2, num_workers=2))
next(half_read)
persistent = DataLoader(dataset, 2, num_workers=2, persistent_workers=True)
list(persistent)
print(*[worker.pid for worker in half_read.workers + persistent._iterator.workers])
"""


def test_no_worker_survives_the_interpreter_that_started_it():
    completed = subprocess.run(
        [sys.executable, "-c", _LEFT_AT_EXIT],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert completed.returncode == 0, completed.stderr
    pids = [int(pid) for pid in completed.stdout.split()]
    assert len(pids) == 4
    for pid in pids:  # stopped and reaped before the interpreter exited
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_other_start_methods_work_with_picklable_datasets(method):
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"{method} is not a start method of this platform")
    loader = DataLoader(Numbered(6), 2, num_workers=1, multiprocessing_context=method)
    assert [batch[1].tolist() for batch in loader] == [[0, 1], [2, 3], [4, 5]]


def test_worker_options_are_checked_before_anything_starts():
    with pytest.raises(ArgumentError, match="prefetch_factor must be at least 1"):
        DataLoader(Numbered(4), num_workers=2, prefetch_factor=0)
    with pytest.raises(ArgumentError, match="multiprocessing_context 'nonesuch'"):
        DataLoader(Numbered(4), num_workers=2, multiprocessing_context="nonesuch")
    with pytest.raises(ArgumentError, match="multiprocessing_context is only used by worker"):
        DataLoader(Numbered(4), multiprocessing_context="spawn")
    with pytest.raises(TypeError, match="worker_init_fn must be callable"):
        DataLoader(Numbered(4), num_workers=2, worker_init_fn=3)
    loader = DataLoader(Numbered(4), 2, num_workers=1, prefetch_factor=1, pin_memory=True)
    assert loader.prefetch_factor == 1 and rows(loader) == [[[0, 0], [1, 1]], [[2, 2], [3, 3]]]


def test_a_tensor_pickles_as_its_array_and_requires_grad():
    leaf = minitrain.tensor([1.0, 2.0], requires_grad=True)
    computed = leaf * 3
    copy = pickle.loads(pickle.dumps(computed))
    assert copy.tolist() == [3.0, 6.0] and copy.requires_grad and copy.grad_fn is None
    copy.sum().backward()  # a leaf of its own
    assert copy.grad.tolist() == [1.0, 1.0] and leaf.grad is None
    parameter = pickle.loads(pickle.dumps(minitrain.nn.Parameter(minitrain.zeros(2))))
    assert type(parameter) is minitrain.nn.Parameter and parameter.requires_grad


class _CudaInUse:
    """Stands for CuPy in a process that uses CUDA: seeding its GPUs fails, as in a forked child."""

    class cuda:  # noqa: N801  (CuPy's name)
        class runtime:  # noqa: N801
            @staticmethod
            def getDeviceCount():  # noqa: N802
                raise RuntimeError("CUDA touched in a forked worker")

    ndarray = type("ndarray", (), {})


def test_a_worker_forked_from_a_process_using_cuda_seeds_the_cpu_alone(monkeypatch):
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("fork is not a start method of this platform")
    monkeypatch.setattr(minitrain.backend, "cupy", _CudaInUse)
    loader = DataLoader(
        WhoAmI(), 4, num_workers=1, generator=3, collate_fn=keep, multiprocessing_context="fork"
    )
    first = next(sample for batch in loader for sample in batch)
    generator = minitrain.Generator().manual_seed(first["seed"])
    assert first["minitrain"] == float(minitrain.rand(1, generator=generator).item())

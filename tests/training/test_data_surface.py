"""minitrain.utils.data laid out as torch.utils.data: the samplers (orders and lengths against
PyTorch's where they are deterministic; seeded determinism and the distribution where random),
BatchSampler, DataLoader with sampler= and batch_sampler=, IterableDataset, ConcatDataset, and
the module paths PyTorch programs import from."""

import importlib
import itertools
import multiprocessing

import numpy as np
import pytest

import minitrain
from minitrain import data
from minitrain.errors import ArgumentError, DTypeError
from minitrain.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    IterableDataset,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
)


class Stream(IterableDataset):
    """The numbers start..stop-1 as (value, label) samples, read as a stream."""

    def __init__(self, start, stop):
        self.start, self.stop = start, stop

    def __iter__(self):
        return iter((np.float32(i), i % 3) for i in range(self.start, self.stop))


def values(loader):
    return [np.asarray(batch[0].array if hasattr(batch[0], "data") else batch[0]).tolist()
            for batch in loader]  # fmt: skip


def torch_values(loader):
    return [batch[0].tolist() for batch in loader]


@pytest.mark.parametrize(
    "module, names",
    [
        ("minitrain.utils.data", ["DataLoader", "Dataset", "TensorDataset", "random_split",
                                  "Subset", "Sampler", "BatchSampler", "IterableDataset"]),
        ("minitrain.utils.data.dataloader", ["DataLoader", "default_collate",
                                             "get_worker_info"]),
        ("minitrain.utils.data.dataset", ["Dataset", "IterableDataset", "TensorDataset",
                                          "ConcatDataset", "Subset", "random_split"]),
        ("minitrain.utils.data.sampler", ["Sampler", "SequentialSampler", "RandomSampler",
                                          "SubsetRandomSampler", "WeightedRandomSampler",
                                          "BatchSampler"]),
        ("minitrain.utils.data.distributed", ["DistributedSampler"]),
    ],
)  # fmt: skip
def test_pytorchs_import_paths_give_the_same_objects(module, names, torch):
    imported = importlib.import_module(module)
    reference = importlib.import_module(module.replace("minitrain", "torch", 1))
    for name in names:
        assert hasattr(reference, name)  # the path is PyTorch's
        assert getattr(imported, name) is getattr(data, name)  # minitrain.data is an alias
    assert minitrain.utils.data.DataLoader is data.DataLoader


def test_minitrain_data_re_exports_every_name():
    # `import minitrain.data` and `from minitrain.data import ...` reach the same module
    assert importlib.import_module("minitrain.data") is minitrain.utils.data
    assert data.__all__ == minitrain.utils.data.__all__
    for name in data.__all__:
        assert getattr(data, name) is getattr(minitrain.utils.data, name)


def test_sequential_sampler_matches_pytorch(torch):
    assert list(SequentialSampler(range(7))) == list(torch.utils.data.SequentialSampler(range(7)))
    assert len(SequentialSampler(range(7))) == 7
    assert isinstance(SequentialSampler(range(1)), Sampler)


@pytest.mark.parametrize("size, batch_size, drop_last", [(10, 3, False), (10, 3, True),
                                                         (9, 3, True), (2, 5, False),
                                                         (2, 5, True), (0, 2, False)])  # fmt: skip
def test_batch_sampler_matches_pytorch(size, batch_size, drop_last, torch):
    ours = BatchSampler(SequentialSampler(range(size)), batch_size, drop_last)
    reference = torch.utils.data.BatchSampler(
        torch.utils.data.SequentialSampler(range(size)), batch_size, drop_last
    )
    assert list(ours) == list(reference)
    assert len(ours) == len(reference)
    # any iterable of indices with a length, in its own order
    ours = BatchSampler([5, 1, 4, 2, 0], batch_size, drop_last)
    assert list(ours) == list(torch.utils.data.BatchSampler([5, 1, 4, 2, 0], batch_size, drop_last))


def test_batch_sampler_refuses_bad_arguments():
    with pytest.raises(ArgumentError, match="batch_size must be a positive int"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(DTypeError, match="drop_last must be a bool"):
        BatchSampler(range(3), 2, 1)


def test_random_sampler_is_a_permutation_each_epoch_and_seeded():
    sampler = RandomSampler(range(50), generator=3)
    epochs = [list(sampler) for _ in range(3)]
    for epoch in epochs:
        assert sorted(epoch) == list(range(50))  # every index once per epoch
    assert epochs[0] != epochs[1]  # a new order each epoch
    again = RandomSampler(range(50), generator=np.random.default_rng(3))
    assert [list(again) for _ in range(3)] == epochs  # an int seeds a generator once
    assert len(sampler) == 50


def test_random_sampler_draws_from_minitrains_global_generator():
    minitrain.manual_seed(11)
    first = list(RandomSampler(range(20)))
    minitrain.manual_seed(11)
    assert list(RandomSampler(range(20))) == first
    assert sorted(first) == list(range(20))


def test_random_sampler_num_samples_and_replacement(torch):
    sampler = RandomSampler(range(4), num_samples=10, generator=0)
    drawn = list(sampler)
    # without replacement, PyTorch gives whole permutations, then the head of one more
    assert sorted(drawn[:4]) == sorted(drawn[4:8]) == [0, 1, 2, 3]
    assert len(set(drawn[8:])) == 2
    assert len(sampler) == len(torch.utils.data.RandomSampler(range(4), num_samples=10)) == 10
    with_replacement = list(
        RandomSampler(range(5), replacement=True, num_samples=5000, generator=1)
    )
    assert len(with_replacement) == 5000 and set(with_replacement) == set(range(5))
    counts = np.bincount(with_replacement, minlength=5) / 5000
    assert np.allclose(counts, 0.2, atol=0.03)
    with pytest.raises(ArgumentError, match="num_samples must be a positive int"):
        RandomSampler(range(4), num_samples=0)


def test_a_sampler_far_longer_than_memory_is_read_as_batches_are_made():
    # minGPT's trainer: RandomSampler(replacement=True, num_samples=int(1e10)); an epoch is read
    # a batch at a time, never drawn whole
    data_set = TensorDataset(minitrain.arange(10))
    sampler = RandomSampler(data_set, replacement=True, num_samples=10**12, generator=0)
    assert len(sampler) == 10**12
    loader = DataLoader(data_set, batch_size=4, sampler=sampler)
    batches = iter(loader)
    first = [next(batches)[0].tolist() for _ in range(3)]
    assert all(len(batch) == 4 and set(batch) <= set(range(10)) for batch in first)
    blocks = list(itertools.islice(iter(sampler), 3 * 2**16 + 5))  # across several draw blocks
    assert len(blocks) == 3 * 2**16 + 5 and set(blocks) == set(range(10))
    without = RandomSampler(range(3), num_samples=10**12, generator=1)
    head = list(itertools.islice(iter(without), 9))
    assert sorted(head[:3]) == sorted(head[3:6]) == sorted(head[6:]) == [0, 1, 2]


def test_a_custom_sampler_is_read_lazily_with_drop_last():
    def endless():
        yield from itertools.count()

    class Endless(Sampler):
        def __iter__(self):
            return endless()

    loader = DataLoader(TensorDataset(minitrain.arange(100)), batch_size=3, sampler=Endless())
    batches = iter(loader)
    assert [next(batches)[0].tolist() for _ in range(2)] == [[0, 1, 2], [3, 4, 5]]
    short = DataLoader(TensorDataset(minitrain.arange(7)), 3, sampler=range(7), drop_last=True)
    assert [batch[0].tolist() for batch in short] == [[0, 1, 2], [3, 4, 5]]


def test_subset_random_sampler_permutes_its_indices():
    indices = [3, 8, 11, 20, 42]
    sampler = SubsetRandomSampler(indices, generator=5)
    epochs = [list(sampler) for _ in range(4)]
    assert all(sorted(epoch) == indices for epoch in epochs)
    assert len({tuple(epoch) for epoch in epochs}) > 1
    assert [list(SubsetRandomSampler(indices, generator=5)) for _ in range(1)] == epochs[:1]
    assert len(sampler) == 5


def test_weighted_random_sampler_respects_the_weights():
    weights = [0.1, 0.0, 0.6, 0.3]
    drawn = list(WeightedRandomSampler(weights, 20000, generator=2))
    frequencies = np.bincount(drawn, minlength=4) / 20000
    assert np.allclose(frequencies, weights, atol=0.015)
    assert frequencies[1] == 0  # a zero weight is never drawn
    assert list(WeightedRandomSampler(weights, 30, generator=2)) == drawn[:30]
    # unnormalised weights, a Tensor of them too, and without replacement: distinct indices
    tensor_weights = minitrain.tensor(np.array([1.0, 1.0, 2.0, 4.0]))
    once = list(WeightedRandomSampler(tensor_weights, 4, replacement=False, generator=0))
    assert sorted(once) == [0, 1, 2, 3]
    # a Tensor's values are read from its array, whatever it requires (a leaf of a graph too)
    as_array = np.array(weights)  # float64: the same draws as the list
    for tensor in (minitrain.tensor(as_array), minitrain.tensor(as_array, requires_grad=True)):
        sampler = WeightedRandomSampler(tensor, 30, generator=2)
        assert list(sampler) == drawn[:30]
        assert isinstance(sampler.weights, np.ndarray) and sampler.weights.tolist() == weights
    assert len(WeightedRandomSampler(weights, 7)) == 7


def test_weighted_random_sampler_takes_a_tensor_of_weights_on_a_device(cuda_device):
    weights = np.array([0.1, 0.0, 0.6, 0.3])
    on_device = minitrain.tensor(weights, device=cuda_device)
    sampler = WeightedRandomSampler(on_device, 30, generator=2)
    assert isinstance(sampler.weights, np.ndarray)  # copied to the host once, to draw there
    assert list(sampler) == list(WeightedRandomSampler(weights.tolist(), 30, generator=2))


def test_weighted_random_sampler_refuses_bad_weights():
    with pytest.raises(ArgumentError, match="non-negative"):
        WeightedRandomSampler([1.0, -1.0], 2)
    with pytest.raises(ArgumentError, match="without replacement"):
        WeightedRandomSampler([1.0, 0.0], 2, replacement=False)
    with pytest.raises(ArgumentError, match="num_samples must be a positive int"):
        WeightedRandomSampler([1.0], 0)


def test_a_generator_with_a_numpy_generator_method_is_taken():
    class Generator:
        def __init__(self, seed):
            self.rng = np.random.default_rng(seed)

        def numpy_generator(self):
            return self.rng

    ours = list(RandomSampler(range(30), generator=Generator(9)))
    assert ours == np.random.default_rng(9).permutation(30).tolist()
    with pytest.raises(DTypeError, match="RandomSampler: generator must be None, an int seed"):
        RandomSampler(range(3), generator=object())


def dataset_pair(torch, size=11):
    features = np.arange(size * 2, dtype=np.float32).reshape(size, 2)
    labels = np.arange(size, dtype=np.int64) % 3
    ours = TensorDataset(features, labels)
    reference = torch.utils.data.TensorDataset(torch.from_numpy(features), torch.from_numpy(labels))
    return ours, reference


@pytest.mark.parametrize("batch_size, drop_last", [(3, False), (3, True), (4, False)])
def test_loader_with_a_sequential_sampler_matches_pytorch(batch_size, drop_last, torch):
    ours, reference = dataset_pair(torch)
    loader = DataLoader(ours, batch_size, sampler=SequentialSampler(ours), drop_last=drop_last)
    expected = torch.utils.data.DataLoader(
        reference,
        batch_size,
        sampler=torch.utils.data.SequentialSampler(reference),
        drop_last=drop_last,
    )
    assert values(loader) == torch_values(expected)
    assert len(loader) == len(expected)


@pytest.mark.parametrize("drop_last", [False, True])
def test_loader_with_a_batch_sampler_matches_pytorch(drop_last, torch):
    ours, reference = dataset_pair(torch)
    order = [7, 2, 9, 0, 4, 1, 10, 3]
    loader = DataLoader(ours, batch_sampler=BatchSampler(order, 3, drop_last))
    expected = torch.utils.data.DataLoader(
        reference, batch_sampler=torch.utils.data.BatchSampler(order, 3, drop_last)
    )
    assert values(loader) == torch_values(expected)
    assert len(loader) == len(expected)
    # a plain list of index lists, through the item-by-item path (a collate_fn given)
    batches = [[1, 2], [5], [0, 3, 4]]
    listed = DataLoader(ours, batch_sampler=batches, collate_fn=data.default_collate)
    expected = torch.utils.data.DataLoader(reference, batch_sampler=batches)
    assert values(listed) == torch_values(expected)


def test_batch_sampler_excludes_the_batching_arguments():
    dataset = TensorDataset(np.arange(4.0))
    for arguments in ({"batch_size": 2}, {"shuffle": True}, {"sampler": [0, 1]},
                      {"drop_last": True}):  # fmt: skip
        with pytest.raises(ArgumentError, match="batch_sampler gives whole batches"):
            DataLoader(dataset, batch_sampler=[[0, 1]], **arguments)


def test_loader_takes_pytorchs_positional_order_and_a_generator(torch):
    ours, reference = dataset_pair(torch)
    # DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn)
    loader = DataLoader(ours, 4, False, None, None, 0, None)
    assert values(loader) == torch_values(torch.utils.data.DataLoader(reference, 4, False))
    first = values(DataLoader(ours, 4, shuffle=True, generator=6))
    assert first == values(DataLoader(ours, 4, shuffle=True, generator=np.random.default_rng(6)))
    assert sorted(sum((b for b in first), [])) == sorted(sum(values(loader), []))


def test_unbatched_loading_matches_pytorch(torch):
    ours, reference = dataset_pair(torch, 4)
    loader = DataLoader(ours, batch_size=None)
    expected = torch.utils.data.DataLoader(reference, batch_size=None)
    assert [s[0].array.tolist() for s in loader] == [s[0].tolist() for s in expected]
    assert len(loader) == len(expected) == 4


@pytest.mark.parametrize("batch_size, drop_last", [(4, False), (4, True), (1, False)])
def test_an_iterable_dataset_is_batched_as_pytorch_does(batch_size, drop_last, torch):
    class TorchStream(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter((np.float32(i), i % 3) for i in range(2, 13))

    loader = DataLoader(Stream(2, 13), batch_size, drop_last=drop_last)
    expected = torch.utils.data.DataLoader(TorchStream(), batch_size, drop_last=drop_last)
    ours = [(b[0].array.tolist(), b[1].array.tolist()) for b in loader]
    assert ours == [(b[0].tolist(), b[1].tolist()) for b in expected]
    assert [str(b[1].dtype) for b in loader][:1] == ["int64"]
    assert list(loader) != [] and len(list(loader)) == len(ours)  # each epoch reads it again


def test_an_iterable_dataset_takes_no_order():
    for arguments in ({"shuffle": True}, {"sampler": [0]}, {"batch_sampler": [[0]]}):
        with pytest.raises(ArgumentError, match="IterableDataset gives its own order"):
            DataLoader(Stream(0, 3), **arguments)
    with pytest.raises(TypeError):
        len(DataLoader(Stream(0, 3), 2))  # no __len__, as in PyTorch


def test_an_error_raised_inside_a_len_reaches_the_caller_unchanged():
    class BadLength(Stream):
        def __len__(self):  # minitrain's own errors are NotImplementedErrors too
            raise DTypeError("BadLength: the length must be an int, got 'three'")

    with pytest.raises(DTypeError, match="the length must be an int, got 'three'"):
        len(DataLoader(BadLength(0, 3), 2))
    with pytest.raises(DTypeError, match="Stream has no __len__, so the loader has no length"):
        len(DataLoader(Stream(0, 3), 2))


def test_concat_dataset_matches_pytorch(torch):
    parts = [list(range(0, 3)), list(range(10, 15)), [], list(range(20, 22))]
    ours = ConcatDataset(parts)
    reference = torch.utils.data.ConcatDataset(parts)
    assert len(ours) == len(reference) == 10
    assert ours.cumulative_sizes == reference.cumulative_sizes
    assert [ours[i] for i in range(-10, 10)] == [reference[i] for i in range(-10, 10)]
    with pytest.raises(IndexError):
        ours[10]
    with pytest.raises(ValueError):
        ours[-11]
    added = TensorDataset(np.arange(3.0)) + TensorDataset(np.arange(3.0, 5.0))
    assert isinstance(added, ConcatDataset) and len(added) == 5
    assert values(DataLoader(added, 2)) == [[0.0, 1.0], [2.0, 3.0], [4.0]]
    with pytest.raises(DTypeError, match="IterableDataset"):
        ConcatDataset([Stream(0, 2)])
    with pytest.raises(ArgumentError, match="empty"):
        ConcatDataset([])


def test_worker_only_options_are_refused_without_workers_as_pytorch():
    with pytest.raises(ArgumentError, match="persistent_workers=True needs num_workers > 0"):
        DataLoader(TensorDataset(np.arange(4.0)), 2, persistent_workers=True)
    with pytest.raises(ArgumentError, match="prefetch_factor is only used by worker processes"):
        DataLoader(TensorDataset(np.arange(4.0)), 2, prefetch_factor=2)


def test_random_split_takes_a_generator():
    first = [list(s.indices) for s in data.random_split(range(10), [4, 6], generator=3)]
    assert first == [list(s.indices) for s in data.random_split(range(10), [4, 6], seed=3)]
    with pytest.raises(ArgumentError, match="generator or seed, not both"):
        data.random_split(range(10), [4, 6], generator=3, seed=3)


class Keyed(data.Dataset):
    """A data set indexed by string keys and (key, scale) tuples, as a dict-backed one is."""

    values = {"a": 1.0, "b": 2.0, "c": 3.0}

    def __len__(self):
        return len(self.values)

    def __getitem__(self, key):
        if isinstance(key, tuple):
            key, scale = key
            return np.float32(self.values[key] * scale)
        return np.float32(self.values[key])


@pytest.mark.parametrize("num_workers", [0, 2])
def test_a_sampler_of_keys_indexes_the_data_set_with_them(num_workers):
    def batches(loader_class, **options):
        loader = loader_class(Keyed(), num_workers=num_workers, **options)
        return [batch.tolist() for batch in loader]

    expected = [[3.0, 1.0], [2.0]]
    assert batches(DataLoader, batch_size=2, sampler=["c", "a", "b"]) == expected
    assert batches(DataLoader, batch_size=None, sampler=["b", "c"]) == [2.0, 3.0]
    assert batches(DataLoader, batch_sampler=[[("a", 10.0), "b"]]) == [[10.0, 2.0]]
    torch = pytest.importorskip("torch")
    assert batches(torch.utils.data.DataLoader, batch_size=2, sampler=["c", "a", "b"]) == expected
    assert multiprocessing.active_children() == []  # no worker outlives its epoch

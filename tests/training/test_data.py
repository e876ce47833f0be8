"""Data sets and loading: TensorDataset, Subset, random_split, DataLoader batching, shuffling and
collation, and the digits data set."""

import sys
from collections import namedtuple

import numpy as np
import pytest

import minitrain
from minitrain import data
from minitrain.errors import ArgumentError, DTypeError, ShapeError


def _torch():
    return pytest.importorskip("torch")


class Samples(data.Dataset):
    """A data set of given samples, indexed one by one (no fast path)."""

    def __init__(self, samples):
        self.samples = list(samples)

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        return self.samples[index]


def numbered(count, features=3):
    """A TensorDataset whose sample i is (features filled with i, label i)."""
    inputs = np.repeat(np.arange(count, dtype=np.float32)[:, None], features, axis=1)
    return data.TensorDataset(inputs, np.arange(count, dtype=np.int64))


def epoch_labels(loader):
    return [batch[1].numpy().tolist() for batch in loader]


def flat(batches):
    return [label for batch in batches for label in batch]


# Dataset, TensorDataset, Subset.
def test_dataset_base_class_asks_subclasses_for_both_methods():
    class Empty(data.Dataset):
        pass

    with pytest.raises(NotImplementedError, match="Empty must implement __getitem__"):
        Empty()[0]
    with pytest.raises(NotImplementedError, match="Empty must implement __len__"):
        len(Empty())


def test_tensor_dataset_indexes_every_tensor_along_the_first_axis():
    images = np.arange(24, dtype=np.float32).reshape(4, 2, 3)
    labels = minitrain.tensor(np.array([3, 1, 4, 1], dtype=np.int64))
    dataset = data.TensorDataset(images, labels)
    assert len(dataset) == 4
    image, label = dataset[2]
    assert isinstance(image, minitrain.Tensor) and isinstance(label, minitrain.Tensor)
    np.testing.assert_array_equal(image.numpy(), images[2])
    assert label.item() == 4 and label.dtype == np.int64
    assert dataset.tensors[1] is labels
    assert np.shares_memory(dataset.tensors[0].array, images)  # wrapped, not copied
    assert len(dataset[-1]) == 2 and dataset[-1][1].item() == 1


def test_tensor_dataset_refuses_tensors_of_different_lengths():
    with pytest.raises(ShapeError, match=r"sizes \[5, 4, 5\]"):
        data.TensorDataset(np.ones((5, 2)), np.ones(4), np.ones(5))


def test_tensor_dataset_needs_tensors_with_a_first_dimension():
    with pytest.raises(ShapeError, match="tensor 1 is 0-d"):
        data.TensorDataset(np.ones(3), np.array(1.0))
    with pytest.raises(ValueError, match="at least one tensor"):
        data.TensorDataset()


def test_subset_maps_indices_into_its_data_set():
    subset = data.Subset(numbered(10), [7, 2, -1])
    assert len(subset) == 3
    assert [subset[i][1].item() for i in range(3)] == [7, 2, 9]
    assert subset[-1][1].item() == 9
    assert subset.indices.tolist() == [7, 2, 9]


def test_subset_refuses_indices_out_of_range():
    with pytest.raises(IndexError, match="index 10 is out of range for a data set of 10"):
        data.Subset(numbered(10), [0, 10])
    with pytest.raises(IndexError, match="-11"):
        data.Subset(numbered(10), [-11])
    with pytest.raises(TypeError, match="ints"):
        data.Subset(numbered(10), [0.5])
    assert len(data.Subset(numbered(10), [])) == 0


# random_split.
def test_random_split_by_counts_is_disjoint_and_complete():
    parts = data.random_split(numbered(20), [12, 5, 3], seed=0)
    assert [len(part) for part in parts] == [12, 5, 3]
    labels = [part[i][1].item() for part in parts for i in range(len(part))]
    assert sorted(labels) == list(range(20))
    assert labels != list(range(20))  # shuffled


def test_random_split_by_fractions_deals_the_remainder_from_the_first_split():
    assert [len(p) for p in data.random_split(numbered(10), [0.33, 0.33, 0.34], seed=0)] == [
        4,
        3,
        3,
    ]
    assert [len(p) for p in data.random_split(numbered(11), [0.5, 0.5], seed=0)] == [6, 5]


@pytest.mark.filterwarnings("ignore:.*(has no samples|is 0):UserWarning")  # empty splits
@pytest.mark.parametrize("total", [1, 2, 7, 10, 97, 1000])
@pytest.mark.parametrize(
    "lengths",
    [[0.5, 0.5], [0.8, 0.2], [0.33, 0.33, 0.34], [0.7, 0.2, 0.1], [0.1] * 10, [1.0], [0.25] * 4],
    ids=str,
)
def test_random_split_sizes_match_pytorch(total, lengths):
    torch = _torch()
    ours = [len(part) for part in data.random_split(numbered(total), lengths, seed=0)]
    reference = torch.utils.data.random_split(range(total), lengths)
    assert ours == [len(part) for part in reference]


@pytest.mark.filterwarnings("ignore:.*(has no samples|is 0):UserWarning")
def test_random_split_counts_match_pytorch_when_they_sum_to_one():
    torch = _torch()  # [1, 0] on 5 samples sums to 1, so PyTorch reads it as fractions
    ours = [len(p) for p in data.random_split(numbered(5), [1, 0], seed=0)]
    assert ours == [len(p) for p in torch.utils.data.random_split(range(5), [1, 0])] == [5, 0]


def test_random_split_is_reproducible_from_seed_or_global_generator():
    def labels(parts):
        return [[part[i][1].item() for i in range(len(part))] for part in parts]

    dataset = numbered(30)
    assert labels(data.random_split(dataset, [20, 10], seed=4)) == labels(
        data.random_split(dataset, [20, 10], seed=4)
    )
    assert labels(data.random_split(dataset, [20, 10], seed=4)) != labels(
        data.random_split(dataset, [20, 10], seed=5)
    )
    minitrain.manual_seed(11)
    first = labels(data.random_split(dataset, [20, 10]))
    minitrain.manual_seed(11)
    assert labels(data.random_split(dataset, [20, 10])) == first
    order = np.random.default_rng(11).permutation(30)
    assert first == [order[:20].tolist(), order[20:].tolist()]


@pytest.mark.parametrize(
    "lengths, complaint",
    [
        ([5, 4], "summing to the data set's length"),
        ([5, 6], r"\(10\)"),
        ([11, -1], "non-negative"),
        ([0.5, 0.4], "fractions summing to 1"),
        ([1.5, -0.5], "index 0 is 1.5"),
        ([2.5, 7.5], "ints"),
    ],
)
def test_random_split_refuses_lengths_that_do_not_fit(lengths, complaint):
    with pytest.raises(ValueError, match=complaint):
        data.random_split(numbered(10), lengths)


def test_random_split_warns_about_an_empty_split():
    with pytest.warns(UserWarning, match="index 2 has no samples"):
        sizes = [len(p) for p in data.random_split(numbered(3), [0.5, 0.4, 0.1], seed=0)]
    assert sizes == [2, 1, 0]


# DataLoader: batches and epochs.
@pytest.mark.parametrize(
    "count, batch_size, drop_last, sizes",
    [
        (10, 3, False, [3, 3, 3, 1]),
        (10, 3, True, [3, 3, 3]),
        (9, 3, False, [3, 3, 3]),
        (9, 3, True, [3, 3, 3]),
        (2, 5, False, [2]),
        (2, 5, True, []),
        (0, 4, False, []),
        (5, 1, False, [1] * 5),
    ],
)
@pytest.mark.parametrize("shuffle", [False, True])
def test_batch_counts_and_sizes(count, batch_size, drop_last, sizes, shuffle):
    for dataset in (numbered(count), Samples(numbered(count)[i] for i in range(count))):
        loader = data.DataLoader(dataset, batch_size, shuffle=shuffle, drop_last=drop_last, seed=0)
        assert len(loader) == len(sizes)
        batches = epoch_labels(loader)
        assert [len(batch) for batch in batches] == sizes


def test_without_shuffle_samples_come_in_order():
    loader = data.DataLoader(numbered(7), batch_size=3)
    assert epoch_labels(loader) == [[0, 1, 2], [3, 4, 5], [6]]
    inputs, labels = next(iter(loader))
    np.testing.assert_array_equal(inputs.numpy(), [[0.0] * 3, [1.0] * 3, [2.0] * 3])


def test_shuffle_sees_every_sample_once_per_epoch_in_a_new_order():
    loader = data.DataLoader(numbered(50), batch_size=8, shuffle=True, seed=0)
    epochs = [flat(epoch_labels(loader)) for _ in range(4)]
    for labels in epochs:
        assert sorted(labels) == list(range(50))
    assert len({tuple(labels) for labels in epochs}) == 4
    assert all(labels != list(range(50)) for labels in epochs)


def test_shuffle_with_drop_last_sees_each_sample_at_most_once():
    loader = data.DataLoader(numbered(50), batch_size=8, shuffle=True, drop_last=True, seed=1)
    seen = set()
    for _ in range(5):
        labels = flat(epoch_labels(loader))
        assert len(labels) == len(set(labels)) == 48
        seen.update(labels)
    assert seen == set(range(50))  # the dropped samples change from epoch to epoch


def test_shuffling_is_reproducible_from_seed():
    def epochs(seed):
        loader = data.DataLoader(numbered(40), batch_size=6, shuffle=True, seed=seed)
        return [epoch_labels(loader) for _ in range(3)]

    assert epochs(7) == epochs(7)
    assert epochs(7) != epochs(8)
    generator = np.random.default_rng(7)
    expected = [generator.permutation(40).tolist() for _ in range(3)]
    assert [flat(epoch) for epoch in epochs(7)] == expected


def test_without_seed_shuffling_draws_from_the_global_generator():
    loader = data.DataLoader(numbered(40), batch_size=6, shuffle=True)
    minitrain.manual_seed(21)
    first = [flat(epoch_labels(loader)) for _ in range(2)]
    minitrain.manual_seed(21)
    again = [flat(epoch_labels(loader)) for _ in range(2)]
    assert first == again and first[0] != first[1]
    generator = np.random.default_rng(21)
    assert first == [generator.permutation(40).tolist() for _ in range(2)]


def test_each_iter_is_an_epoch_drawn_when_iter_is_called():
    loader = data.DataLoader(numbered(30), batch_size=30, shuffle=True, seed=3)
    first, second = iter(loader), iter(loader)
    second_labels = next(second)[1].numpy().tolist()
    first_labels = next(first)[1].numpy().tolist()
    generator = np.random.default_rng(3)
    assert first_labels == generator.permutation(30).tolist()
    assert second_labels == generator.permutation(30).tolist()


def test_the_fast_path_gives_the_batches_of_the_item_by_item_path():
    rng = np.random.default_rng(0)
    dataset = data.TensorDataset(
        rng.standard_normal((23, 2, 3)).astype(np.float64), rng.integers(0, 5, 23).astype(np.int32)
    )
    slow = Samples(dataset[i] for i in range(len(dataset)))
    for subset_indices in (None, [5, 3, 22, 0, 9, 9, 14]):
        fast_set = dataset if subset_indices is None else data.Subset(dataset, subset_indices)
        slow_set = slow if subset_indices is None else data.Subset(slow, subset_indices)
        fast_loader = data.DataLoader(fast_set, batch_size=4, shuffle=True, seed=2)
        slow_loader = data.DataLoader(slow_set, batch_size=4, shuffle=True, seed=2)
        for fast_batch, slow_batch in zip(fast_loader, slow_loader, strict=True):
            assert isinstance(fast_batch, tuple) and len(fast_batch) == 2
            for fast, slow_tensor in zip(fast_batch, slow_batch, strict=True):
                assert isinstance(fast, minitrain.Tensor)
                assert fast.dtype == slow_tensor.dtype and fast.shape == slow_tensor.shape
                np.testing.assert_array_equal(fast.numpy(), slow_tensor.numpy())


def test_a_tensor_dataset_is_batched_without_indexing_item_by_item(monkeypatch):
    def item_by_item(self, index):
        raise AssertionError("the DataLoader indexed one sample at a time")

    def subset_item_by_item(self, index):
        raise AssertionError("the DataLoader indexed one sample of a Subset at a time")

    monkeypatch.setattr(data.TensorDataset, "__getitem__", item_by_item)
    monkeypatch.setattr(data.Subset, "__getitem__", subset_item_by_item)
    dataset = numbered(20)
    inner = data.Subset(dataset, list(range(19, -1, -1)))  # reversed
    outer = data.Subset(inner, [0, 2, 4, 6])
    assert epoch_labels(data.DataLoader(dataset, batch_size=8)) == [
        list(range(8)),
        list(range(8, 16)),
        list(range(16, 20)),
    ]
    assert epoch_labels(data.DataLoader(outer, batch_size=3)) == [[19, 17, 15], [13]]


def test_a_subclass_that_changes_indexing_is_indexed_item_by_item():
    class Doubled(data.TensorDataset):
        def __getitem__(self, index):
            inputs, label = super().__getitem__(index)
            return inputs * 2, label

    loader = data.DataLoader(Doubled(*numbered(4).tensors), batch_size=4)
    inputs, labels = next(iter(loader))
    np.testing.assert_array_equal(inputs.numpy()[:, 0], [0.0, 2.0, 4.0, 6.0])


def test_batches_are_new_data_outside_the_graph():
    weights = minitrain.tensor(np.ones((4, 2)), requires_grad=True)
    dataset = data.TensorDataset(weights)
    for loader_set in (dataset, Samples(dataset[i] for i in range(4))):
        (batch,) = next(iter(data.DataLoader(loader_set, batch_size=4)))
        assert not batch.requires_grad and batch.node is None
        assert not np.shares_memory(batch.array, weights.array)


# Collation.
@pytest.mark.parametrize(
    "samples, dtype, shape",
    [
        ([1, 2, 3], np.int64, (3,)),
        ([1.5, 2.0, 3.0], np.float32, (3,)),
        ([1, 2.5], np.float32, (2,)),
        ([True, False], np.bool_, (2,)),
        ([np.int32(1), np.int32(2)], np.int32, (2,)),
        ([np.float64(1.0), np.float64(2.0)], np.float64, (2,)),
        ([np.ones(3, np.float16), np.zeros(3, np.float16)], np.float16, (2, 3)),
        ([np.ones((2, 2)), np.zeros((2, 2))], np.float64, (2, 2, 2)),
        ([np.array(4, np.uint8), np.array(5, np.uint8)], np.uint8, (2,)),
        ([minitrain.tensor([1.0, 2.0]), minitrain.tensor([3.0, 4.0])], np.float32, (2, 2)),
        ([minitrain.tensor(7), minitrain.tensor(8)], np.int64, (2,)),
    ],
    ids=lambda v: type(v[0]).__name__ if isinstance(v, list) else str(v),
)
def test_default_collate_stacks_along_a_new_first_axis_keeping_dtypes(samples, dtype, shape):
    batch = data.default_collate(samples)
    assert isinstance(batch, minitrain.Tensor)
    assert batch.dtype == dtype and batch.shape == shape
    first = samples[0].numpy() if isinstance(samples[0], minitrain.Tensor) else samples[0]
    np.testing.assert_array_equal(batch.numpy()[0], first)


def test_default_collate_batches_tuples_field_by_field():
    samples = [(np.full(2, i, np.float64), i, float(i), "name") for i in range(3)]
    inputs, labels, weights, names = data.default_collate(samples)
    assert inputs.dtype == np.float64 and inputs.shape == (3, 2)
    assert labels.dtype == np.int64 and labels.numpy().tolist() == [0, 1, 2]
    assert weights.dtype == np.float32 and weights.numpy().tolist() == [0.0, 1.0, 2.0]
    assert names == ["name"] * 3


def test_default_collate_keeps_namedtuples_as_pytorch_does():
    torch = _torch()
    Pair = namedtuple("Pair", "image label")
    samples = [Pair(np.full(2, i, np.float32), i) for i in range(3)]
    ours = data.default_collate(samples)
    theirs = torch.utils.data.default_collate(samples)
    assert type(ours) is type(theirs) is Pair
    np.testing.assert_array_equal(ours.image.numpy(), theirs.image.numpy())
    np.testing.assert_array_equal(ours.label.numpy(), theirs.label.numpy())


def test_default_collate_batches_lists_and_dicts():
    batch = data.default_collate([[1, 2.0], [3, 4.0]])
    assert isinstance(batch, tuple) and batch[0].numpy().tolist() == [1, 3]
    batch = data.default_collate([{"x": np.ones(2), "y": 0}, {"x": np.zeros(2), "y": 1}])
    assert list(batch) == ["x", "y"] and batch["x"].shape == (2, 2)
    assert batch["y"].dtype == np.int64


def test_a_loader_over_single_arrays_yields_tensors():
    loader = data.DataLoader(Samples(np.full(3, i) for i in range(5)), batch_size=2)
    batches = list(loader)
    assert all(isinstance(batch, minitrain.Tensor) for batch in batches)
    assert [batch.shape for batch in batches] == [(2, 3), (2, 3), (1, 3)]


def test_default_collate_names_what_it_cannot_batch():
    with pytest.raises(ShapeError, match=r"shapes \[\(2,\), \(3,\)\]"):
        data.default_collate([np.ones(2), np.ones(3)])
    with pytest.raises(DTypeError, match="NoneType.*collate_fn"):
        data.default_collate([None, None])
    with pytest.raises(DTypeError, match="int, str"):
        data.default_collate([1, "a"])
    with pytest.raises(ValueError, match="differ in their fields"):
        data.default_collate([(1, 2), (1, 2, 3)])
    with pytest.raises(ValueError, match="differ in their keys"):
        data.default_collate([{"x": 1}, {"y": 1}])


def test_a_custom_collate_fn_gets_the_list_of_samples():
    received = []

    def collate(samples):
        received.append(samples)
        return len(samples)

    loader = data.DataLoader(numbered(5), batch_size=2, collate_fn=collate)
    assert list(loader) == [2, 2, 1]
    assert [label.item() for _, label in received[0]] == [0, 1]


@pytest.mark.parametrize(
    "arguments, error, complaint",
    [
        ({"batch_size": 0}, ValueError, "at least 1"),
        ({"batch_size": -2}, ValueError, "at least 1"),
        ({"batch_size": 2.0}, TypeError, "must be an int"),
        ({"batch_size": True}, TypeError, "must be an int"),
        ({"collate_fn": "stack"}, TypeError, "callable"),
    ],
)
def test_data_loader_refuses_bad_arguments(arguments, error, complaint):
    with pytest.raises(error, match=complaint):
        data.DataLoader(numbered(4), **arguments)


@pytest.mark.parametrize(
    "seed, error, complaint",
    [
        ("7", DTypeError, "seed must be an int, got '7'"),
        (1.5, DTypeError, "seed must be an int, got 1.5"),
        (True, DTypeError, "seed must be an int, got True"),
        (-1, ArgumentError, "seed must be non-negative, got -1"),
    ],
)
def test_a_bad_seed_is_refused_naming_the_function(seed, error, complaint):
    with pytest.raises(error, match=f"DataLoader: {complaint}"):
        data.DataLoader(numbered(4), shuffle=True, seed=seed)
    with pytest.raises(error, match=f"random_split: {complaint}"):
        data.random_split(numbered(4), [2, 2], seed=seed)
    state = minitrain.backend.generator().bit_generator.state
    with pytest.raises(error, match=f"manual_seed: {complaint}"):
        minitrain.manual_seed(seed)
    assert minitrain.backend.generator().bit_generator.state == state  # the old generator stays


def test_data_loader_takes_pytorchs_worker_arguments_and_refuses_negative_workers():
    loader = data.DataLoader(numbered(5), 2, num_workers=0, pin_memory=True)
    assert flat(epoch_labels(loader)) == list(range(5))
    with pytest.raises(ArgumentError, match="DataLoader: num_workers must be non-negative.*-1"):
        data.DataLoader(numbered(5), 2, num_workers=-1)


def test_a_numpy_int_seed_shuffles_as_the_int_does():
    def labels(seed):
        return flat(epoch_labels(data.DataLoader(numbered(20), 5, shuffle=True, seed=seed)))

    assert labels(np.int64(3)) == labels(3) == np.random.default_rng(3).permutation(20).tolist()


def test_data_loader_matches_pytorch_batches_without_shuffle():
    torch = _torch()
    images = np.random.default_rng(0).standard_normal((10, 1, 2, 2)).astype(np.float32)
    labels = np.arange(10)
    ours = data.DataLoader(data.TensorDataset(images, labels), batch_size=4)
    theirs = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.from_numpy(images), torch.from_numpy(labels)),
        batch_size=4,
    )
    assert len(ours) == len(theirs)
    for (x, y), (tx, ty) in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(x.numpy(), tx.numpy())
        assert str(y.dtype) == str(ty.dtype)[6:]
        np.testing.assert_array_equal(y.numpy(), ty.numpy())


# load_digits.
def test_load_digits_shapes_dtypes_and_range():
    images, labels = data.load_digits()
    assert images.shape == (1797, 1, 8, 8) and images.dtype == np.float32
    assert labels.shape == (1797,) and labels.dtype == np.int64
    assert images.min() == 0.0 and images.max() == 1.0
    assert sorted(set(labels.tolist())) == list(range(10))
    raw, raw_labels = data.load_digits(normalize=False)
    assert raw.dtype == np.float32 and raw.max() == 16.0
    assert set(np.unique(raw).tolist()) <= set(range(17))
    np.testing.assert_array_equal(raw / 16, images)
    np.testing.assert_array_equal(raw_labels, labels)


def test_load_digits_matches_scikit_learn():
    from sklearn.datasets import load_digits

    digits = load_digits()
    images, labels = data.load_digits(normalize=False)
    np.testing.assert_array_equal(images[:, 0], digits.images)
    np.testing.assert_array_equal(labels, digits.target)


def test_load_digits_without_scikit_learn_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn", None)
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    with pytest.raises(ImportError, match=r"scikit-learn.*pip install 'minitrain\[examples\]'"):
        data.load_digits()


def test_digits_train_through_a_loader_end_to_end():
    images, labels = data.load_digits()
    train, test = data.random_split(data.TensorDataset(images, labels), [0.8, 0.2], seed=0)
    loader = data.DataLoader(train, batch_size=64, shuffle=True, seed=0)
    seen = []
    for inputs, targets in loader:
        assert inputs.shape[1:] == (1, 8, 8) and inputs.dtype == np.float32
        seen.extend(targets.numpy().tolist())
    assert len(loader) == 23 and len(seen) == len(train) == 1438 and len(test) == 359


def test_a_sampler_gives_the_order_and_the_length():
    dataset = data.TensorDataset(minitrain.tensor(np.arange(10.0)))
    sampler = [7, 3, 9, 0, 5]
    loader = data.DataLoader(dataset, batch_size=2, sampler=sampler)
    batches = [batch[0].array.tolist() for batch in loader]
    assert batches == [[7.0, 3.0], [9.0, 0.0], [5.0]] and len(loader) == 3
    loader = data.DataLoader(dataset, batch_size=2, sampler=sampler, drop_last=True)
    assert [batch[0].array.tolist() for batch in loader] == [[7.0, 3.0], [9.0, 0.0]]
    assert len(loader) == 2


def test_a_sampler_with_shuffle_or_not_iterable_is_refused_one_without_a_length_has_no_len():
    dataset = data.TensorDataset(minitrain.tensor(np.arange(4.0)))
    with pytest.raises(ArgumentError, match="sampler and shuffle=True are mutually exclusive"):
        data.DataLoader(dataset, sampler=[0, 1], shuffle=True)
    with pytest.raises(DTypeError, match="sampler must be an iterable of indices, got int"):
        data.DataLoader(dataset, sampler=3)
    unsized = data.DataLoader(dataset, batch_size=1, sampler=iter([2, 0]))  # PyTorch takes it
    with pytest.raises(TypeError):
        len(unsized)
    assert [batch[0].tolist() for batch in unsized] == [[2.0], [0.0]]


class IndexTypes(data.Dataset):
    """Sample i is the type name of the index it was read with."""

    def __len__(self):
        return 5

    def __getitem__(self, index):
        return type(index).__name__


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("batch_size", [2, None])
def test_the_loader_s_own_orders_index_with_python_ints_as_pytorch(shuffle, batch_size):
    same = lambda samples: samples  # noqa: E731 (each sample unbatched, the list batched)
    loader = data.DataLoader(IndexTypes(), batch_size, shuffle=shuffle, collate_fn=same, seed=0)
    names = [batch if batch_size is None else tuple(batch) for batch in loader]
    assert set(names) == ({"int"} if batch_size is None else {("int", "int"), ("int",)})
    torch = pytest.importorskip("torch")
    reference = torch.utils.data.DataLoader(
        IndexTypes(), batch_size, shuffle=shuffle, collate_fn=same
    )
    assert [batch if batch_size is None else tuple(batch) for batch in reference] == names


def test_a_batch_sampler_s_indices_reach_the_data_set_unchanged():
    batches = [[np.int64(0), 1], [(2, 3)]]
    loader = data.DataLoader(IndexTypes(), batch_sampler=batches, collate_fn=list)
    assert list(loader) == [["int64", "int"], ["tuple"]]
    dataset = data.TensorDataset(np.arange(5.0))  # ints, as an array: the TensorDataset cut
    loader = data.DataLoader(dataset, batch_sampler=[[4, np.int32(1)], np.array([0, 2])])
    assert [batch[0].tolist() for batch in loader] == [[4.0, 1.0], [0.0, 2.0]]


def test_an_iterator_without_workers_has_the_loader_s_length():
    iterator = iter(data.DataLoader(numbered(5), batch_size=2))
    assert len(iterator) == 3 and len(list(iterator)) == 3
    unsized = iter(data.DataLoader(numbered(5), batch_size=2, sampler=iter([4, 0])))
    with pytest.raises(TypeError, match="this iterator has no length"):
        len(unsized)

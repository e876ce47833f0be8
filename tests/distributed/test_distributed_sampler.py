"""data.DistributedSampler against torch.utils.data.DistributedSampler: the same padding and
partition for several sizes and world sizes; the shuffled order is numpy's, seeded alike on
every rank."""

from __future__ import annotations

import numpy as np
import pytest

from minitrain.errors import ArgumentError, DistributedError, DTypeError
from minitrain.utils.data import DistributedSampler

CASES = [(size, replicas) for size in (0, 1, 5, 10, 11, 17) for replicas in (1, 2, 3, 4, 7)]


@pytest.mark.parametrize("size, replicas", CASES)
@pytest.mark.parametrize("drop_last", [False, True])
def test_partition_and_padding_are_pytorchs(torch, size, replicas, drop_last):
    from torch.utils.data import DistributedSampler as TorchSampler

    data = list(range(size))
    for rank in range(replicas):
        ours = DistributedSampler(data, replicas, rank, shuffle=False, drop_last=drop_last)
        theirs = TorchSampler(data, replicas, rank, shuffle=False, drop_last=drop_last)
        assert list(ours) == list(theirs)
        assert len(ours) == len(theirs)


@pytest.mark.parametrize("size, replicas", [(10, 3), (11, 4), (3, 7), (17, 2)])
@pytest.mark.parametrize("drop_last", [False, True])
def test_shuffled_shares_are_pytorchs_layout_of_one_permutation(torch, size, replicas, drop_last):
    """Put back together, the ranks' shares are one permutation padded (or cut) as PyTorch
    pads its own: PyTorch's layout applied to our order gives our shares."""
    from torch.utils.data import DistributedSampler as TorchSampler

    samplers = [
        DistributedSampler(range(size), replicas, r, seed=5, drop_last=drop_last)
        for r in range(replicas)
    ]
    order = np.random.default_rng(5).permutation(size).tolist()

    class Permuted:  # PyTorch's sampler, unshuffled, over our order
        def __len__(self):
            return size

    for rank, sampler in enumerate(samplers):
        positions = list(TorchSampler(Permuted(), replicas, rank, False, drop_last=drop_last))
        assert list(sampler) == [order[p] for p in positions]


def test_set_epoch_draws_a_new_order_the_same_on_every_rank():
    ranks = [DistributedSampler(range(20), 2, r, seed=3) for r in range(2)]
    first = [list(s) for s in ranks]
    assert sorted(first[0] + first[1]) == list(range(20))
    for sampler in ranks:
        sampler.set_epoch(1)
    second = [list(s) for s in ranks]
    assert sorted(second[0] + second[1]) == list(range(20)) and second != first
    ranks[0].set_epoch(0)
    assert list(ranks[0]) == first[0]


def test_world_from_the_process_group(world):
    sampler = DistributedSampler(range(5))
    assert (sampler.num_replicas, sampler.rank, list(sampler)) == (1, 0, list(sampler))
    assert sorted(sampler) == list(range(5))


@pytest.mark.parametrize(
    "arguments, error, words",
    [
        ({"num_replicas": 2, "rank": 2}, ArgumentError, r"rank 2 is out of range: .*\[0, 1\]"),
        ({"num_replicas": 2, "rank": -1}, ArgumentError, "rank -1 is out of range"),
        ({"num_replicas": 0, "rank": 0}, ArgumentError, "num_replicas must be at least 1"),
        ({"num_replicas": 2.0, "rank": 0}, DTypeError, "num_replicas must be an int"),
        ({"num_replicas": 2, "rank": 0, "seed": -1}, ArgumentError, "seed must be non-negative"),
    ],
)
def test_bad_arguments_are_refused(arguments, error, words):
    with pytest.raises(error, match=f"DistributedSampler: {words}"):
        DistributedSampler(range(4), **arguments)


def test_without_a_process_group_num_replicas_must_be_given():
    with pytest.raises(DistributedError, match="init_process_group"):
        DistributedSampler(range(4))
    with pytest.raises(ArgumentError, match="epoch must be an int >= 0"):
        DistributedSampler(range(4), 1, 0).set_epoch(-1)

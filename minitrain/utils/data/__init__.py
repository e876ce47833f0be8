"""Data sets, samplers and loaders, laid out as torch.utils.data: `dataset` (Dataset,
IterableDataset, TensorDataset, ConcatDataset, Subset, random_split), `sampler` (Sampler,
SequentialSampler, RandomSampler, SubsetRandomSampler, WeightedRandomSampler, BatchSampler),
`dataloader` (DataLoader, default_collate, get_worker_info; its worker processes in `worker`
and `multiprocess_iterator`), `distributed` (DistributedSampler), and `datasets` (load_digits,
minitrain's own). `minitrain.data` is this module under its older name."""

from .dataloader import DataLoader, default_collate, get_worker_info
from .dataset import (
    ConcatDataset,
    Dataset,
    IterableDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .datasets import load_digits
from .distributed import DistributedSampler
from .sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "Subset", "random_split",
    "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
    "WeightedRandomSampler", "BatchSampler", "default_collate", "DataLoader", "get_worker_info",
    "DistributedSampler", "load_digits",
]  # fmt: skip

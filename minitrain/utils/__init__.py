"""PyTorch's `torch.utils` as far as minitrain has it: `minitrain.utils.data`, the data sets,
samplers and loaders, laid out as `torch.utils.data` is."""

from . import data

__all__ = ["data"]

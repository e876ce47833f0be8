"""PyTorch's `torch.utils` as far as minitrain has it: `minitrain.utils.data`, the data sets,
samplers and loaders, laid out as `torch.utils.data` is, and `minitrain.utils.tensorboard`
(SummaryWriter), imported when asked for as `torch.utils.tensorboard` is."""

from . import data

__all__ = ["data"]

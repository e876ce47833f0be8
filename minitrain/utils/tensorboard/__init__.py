"""PyTorch's `torch.utils.tensorboard`: `SummaryWriter`, which writes scalars, histograms,
images, text, figures and hparams to event files TensorBoard reads, through the tensorboard
package (`pip install tensorboard`, or `minitrain[tensorboard]`). The import works without it;
constructing a SummaryWriter then raises ModuleNotFoundError saying what to install."""

from .writer import SummaryWriter

__all__ = ["SummaryWriter"]

"""Checkpoints, as torch.save and torch.load: minitrain's own format (an .npz archive with a JSON
document, never pickle), PyTorch's zip files read without PyTorch, and safetensors files.

`minitrain.io.checkpoint` is minitrain's format, `minitrain.io.torch_format` the reader of
PyTorch's, `minitrain.io.safetensors` safetensors.torch's functions, `minitrain.io.atomic` the
atomic file writes the rest of minitrain uses too."""

from . import safetensors  # noqa: F401 (minitrain.io.safetensors, reached as an attribute)
from .atomic import write_atomically
from .serialization import load, save

__all__ = ["save", "load", "write_atomically"]

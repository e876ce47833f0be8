"""minitrain: a tape-based autograd engine and training library over numpy."""

import sys

# allocator first: it sets malloc's thresholds before minitrain makes any array
from . import cuda, distributed, functions, io, nn, ops, optim, train, utils, viz
from .autograd import Tape, grad
from .autograd.grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .autograd.gradcheck import gradcheck, gradgradcheck
from .backend import Device, device, manual_seed
from .capture import compile  # noqa: A004 (PyTorch's name)
from .compat import (  # noqa: A004
    accelerator,
    amp,
    are_deterministic_algorithms_enabled,
    backends,
    inference_mode,
    is_deterministic_algorithms_warn_only_enabled,
    use_deterministic_algorithms,
)
from .creation import (
    arange,
    as_tensor,
    asarray,
    empty,
    empty_like,
    eye,
    float16,
    float32,
    float64,
    full,
    full_like,
    int32,
    int64,
    linspace,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    randperm,
    sparse_coo_tensor,
    tensor,
    zeros,
    zeros_like,
)
from .functions import *  # noqa: F403 (PyTorch's names: minitrain.sum, .max, .float, ...)
from .io import load, save
from .ops import concat, maximum, minimum, stack, where
from .ops.random.sampling import normal  # its mean or std may be a number: no Tensor first
from .runtime import allocator
from .runtime.defaults import (
    bfloat16,
    get_default_device,
    get_default_dtype,
    set_default_device,
    set_default_dtype,
)
from .runtime.generator import Generator
from .tensor import Size, Tensor
from .tensor_types import *  # noqa: F403 (FloatTensor, LongTensor, ...: PyTorch's legacy types)
from .utils import data  # PyTorch's torch.utils.data, under minitrain's older name too

cat = concat
serialization = io.serialization  # torch.serialization: save, load and the safe-globals list
autocast = amp.autocast
cuda.amp = amp  # torch.cuda.amp.GradScaler, torch.cuda.amp.autocast (the same classes)

__version__ = "0.2.0"

__all__ = [
    "Tensor", "Size", "tensor", "as_tensor", "asarray", "zeros", "ones", "empty", "empty_like",
    "full", "randn", "rand", "arange", "eye", "linspace", "randint", "randperm",
    "sparse_coo_tensor", "zeros_like", "ones_like", "full_like", "randn_like", "rand_like",
    "float16", "float32", "float64", "int32", "int64",
    "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "Tape", "grad",
    "gradcheck", "gradgradcheck", "Device", "device", "manual_seed",
    "concat", "cat", "stack", "where", "maximum", "minimum", "normal",
    "save", "load",
    *functions.__all__,  # noqa: F405 (PyTorch's top-level functions and dtype names)
    "ops", "nn", "optim", "data", "utils", "train", "viz", "cuda", "allocator", "distributed",
    "set_default_dtype", "get_default_dtype", "set_default_device", "get_default_device",
    "bfloat16", "Generator", "inference_mode", "compile", "backends", "amp", "accelerator",
    "autocast", "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
    "is_deterministic_algorithms_warn_only_enabled", *tensor_types.__all__,  # noqa: F405
]  # fmt: skip

# autograd.functional and autograd.function (Function) are built from ops: imported once they exist
from .autograd import function, functional  # noqa: E402, F401

# `import minitrain.data` and `from minitrain.data import DataLoader` reach the same module; the
# set-up names programs import as modules (`import torch.backends.cudnn as cudnn`) are importable
sys.modules[f"{__name__}.data"] = data
for _path, _module in {
    "backends": backends,
    "backends.cudnn": backends.cudnn,
    "backends.cuda": backends.cuda,
    "backends.mps": backends.mps,
    "amp": amp,
    "cuda.amp": amp,
    "accelerator": accelerator,
    "serialization": io.serialization,  # torch.serialization: save, load, safe_globals
}.items():
    sys.modules[f"{__name__}.{_path}"] = _module
del _path, _module

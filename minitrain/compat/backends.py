"""`minitrain.backends`, PyTorch's torch.backends: the switches programs set before training
(`backends.cudnn.benchmark = True`, `backends.cuda.matmul.allow_tf32 = True`, ...). They are
settable and remembered, and change nothing: minitrain has no cuDNN, no TF32 and no autotuning,
and its CPU kernels are deterministic whatever `deterministic` says. `mps` is never
available."""

from __future__ import annotations

from .. import cuda as cuda_module

__all__ = ["CudnnFlags", "MatmulFlags", "CudaFlags", "MpsBackend", "cudnn", "cuda", "mps"]


class CudnnFlags:
    """torch.backends.cudnn's switches, kept and ignored: `benchmark` (False), `deterministic`
    (False), `enabled` (True), `allow_tf32` (True). minitrain has no cuDNN; its CPU kernels give
    the same result run after run."""

    def __init__(self):
        self.benchmark = False
        self.deterministic = False
        self.enabled = True
        self.allow_tf32 = True

    def is_available(self) -> bool:
        """Whether a GPU can be used (`minitrain.cuda.is_available()`), as PyTorch answers
        where cuDNN is built in."""
        return cuda_module.is_available()

    def version(self) -> None:
        """None: minitrain links no cuDNN."""
        return None


class MatmulFlags:
    """torch.backends.cuda.matmul's switches, kept and ignored: `allow_tf32` (False),
    `allow_fp16_reduced_precision_reduction` (True), `allow_bf16_reduced_precision_reduction`
    (True). minitrain's matmuls run in the tensors' own dtype."""

    def __init__(self):
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True


class CudaFlags:
    """torch.backends.cuda: `matmul` (a MatmulFlags) and `is_built()`."""

    def __init__(self):
        self.matmul = MatmulFlags()

    def is_built(self) -> bool:
        """Whether a GPU can be used (`minitrain.cuda.is_available()`)."""
        return cuda_module.is_available()


class MpsBackend:
    """torch.backends.mps: Apple's GPUs, which minitrain cannot use."""

    def is_available(self) -> bool:
        """False: minitrain has no MPS backend."""
        return False

    def is_built(self) -> bool:
        """False: minitrain has no MPS backend."""
        return False


cudnn = CudnnFlags()
cuda = CudaFlags()
mps = MpsBackend()

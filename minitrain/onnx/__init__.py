"""`minitrain.onnx`, where PyTorch's `torch.onnx` is: importable, so that a program that imports
it and exports only when asked (`--onnx-export`) runs; the export itself is not built yet, and
says so when called."""

from __future__ import annotations

__all__ = ["export", "is_in_onnx_export"]


def export(model, args=(), f=None, *rest, **options) -> None:
    """PyTorch's torch.onnx.export: not built in minitrain yet. Raises NotImplementedError
    (nothing is written); save `model.state_dict()` with minitrain.save or
    minitrain.io.safetensors.save_file to keep the weights."""
    raise NotImplementedError(
        "minitrain.onnx.export: exporting to ONNX is not built yet; save the weights with "
        "minitrain.save(model.state_dict(), path) or minitrain.io.safetensors.save_file"
    )


def is_in_onnx_export() -> bool:
    """Whether an ONNX export is running: never, here."""
    return False

"""Small data sets ready to train on: load_digits."""

from __future__ import annotations

import importlib

import numpy as np

__all__ = ["load_digits"]


def load_digits(normalize: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's 1797 handwritten digits (shipped with it: no download), as numpy arrays.

    Returns `(images, labels)`: images `(1797, 1, 8, 8)` float32, scaled to [0, 1] when
    `normalize`, else the raw gray levels 0..16; labels `(1797,)` int64 in 0..9. Train on them
    with `DataLoader(TensorDataset(images, labels), batch_size=64, shuffle=True)`.
    """
    try:
        datasets = importlib.import_module("sklearn.datasets")
    except ImportError as exc:
        raise ImportError(
            "load_digits needs scikit-learn, which is not installed: "
            "pip install 'minitrain[examples]' (or pip install scikit-learn)"
        ) from exc
    digits = datasets.load_digits()
    images = digits.images.astype(np.float32).reshape(-1, 1, 8, 8)
    if normalize:
        images /= np.float32(16.0)
    return images, digits.target.astype(np.int64)

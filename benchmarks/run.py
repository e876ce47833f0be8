"""Run every benchmark (minitrain against PyTorch in one process) and print the ratios."""

from __future__ import annotations

import importlib
import os
import platform
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.common import print_table, try_import_torch  # noqa: E402

BENCHMARKS = [
    "overhead",
    "softmax_xent",
    "normalization",
    "conv",
    "training",
    "higher_order",
    "einsum",
    "interpolate",
    "activations",
    "char_lm",
    "recurrent",
    "attention",
    "distributed",
]


def main() -> None:
    import numpy as np

    torch = try_import_torch()
    print(
        f"python {platform.python_version()}, numpy {np.__version__}, "
        f"torch {torch.__version__ if torch else 'not installed'} "
        f"({torch.get_num_threads() if torch else '-'} threads), {os.cpu_count()} cores"
    )
    results = []
    for name in BENCHMARKS:
        results.extend(importlib.import_module(f"benchmarks.{name}").run())
    print_table(results)


if __name__ == "__main__":
    main()

"""Run the benchmarks (minitrain against PyTorch in one process), print the table, store the rows
in benchmarks/results.json and regenerate README.md's performance section from it.

    python benchmarks/run.py [--only conv,training] [--no-write]

`--only` runs the named modules alone (their rows replace theirs in the results file; the other
rows are kept); `--no-write` prints the table and leaves the results file and the README alone."""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import readme  # noqa: E402
from benchmarks import results as results_file  # noqa: E402
from benchmarks.common import print_table, try_import_torch  # noqa: E402

BENCHMARKS = [
    "overhead",
    "softmax_xent",
    "normalization",
    "conv",
    "training",
    "transformer",
    "higher_order",
    "einsum",
    "interpolate",
    "activations",
    "char_lm",
    "recurrent",
    "compiled",
    "attention",
    "cold_start",
    "distributed",
]


def parse_arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--only",
        default="",
        help=f"comma-separated modules to run (of: {', '.join(BENCHMARKS)}); all by default",
    )
    parser.add_argument(
        "--no-write", action="store_true", help="leave results.json and README.md alone"
    )
    arguments = parser.parse_args(argv)
    arguments.modules = [name.strip() for name in arguments.only.split(",") if name.strip()]
    unknown = [name for name in arguments.modules if name not in BENCHMARKS]
    if unknown:
        parser.error(f"--only: no benchmark module {', '.join(unknown)}; see --help")
    arguments.modules = arguments.modules or list(BENCHMARKS)
    return arguments


def main(argv: list[str]) -> None:
    import numpy as np

    arguments = parse_arguments(argv)
    torch = try_import_torch()
    print(
        f"python {platform.python_version()}, numpy {np.__version__}, "
        f"torch {torch.__version__ if torch else 'not installed'} "
        f"({torch.get_num_threads() if torch else '-'} threads), {os.cpu_count()} cores"
    )
    results, rows = [], []
    for name in arguments.modules:
        module_results = importlib.import_module(f"benchmarks.{name}").run()
        results.extend(module_results)
        rows.extend(results_file.row_of(name, result) for result in module_results)
    print_table(results)
    if arguments.no_write:
        return
    merged = results_file.merge(results_file.load(), rows, arguments.modules, BENCHMARKS)
    stored = results_file.document(results_file.environment(torch), merged)
    results_file.save(stored)
    readme.regenerate(stored)
    print(f"wrote {os.path.relpath(results_file.PATH)} and README.md's performance section")


if __name__ == "__main__":
    main(sys.argv[1:])

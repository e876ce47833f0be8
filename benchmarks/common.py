"""Shared timing and reporting for the benchmarks: best-of-N wall time, ratio tables."""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass
class Result:
    """One benchmark: minitrain's and PyTorch's time for the same work, and the target ratio."""

    name: str
    minitrain_s: float
    torch_s: float | None
    per: str = "call"
    target: float | None = None
    note: str = ""
    unit: str = "us"  # how the two columns print: "us" (times in seconds) or "MiB" (bytes)

    @property
    def ratio(self) -> float | None:
        return None if self.torch_s is None else self.minitrain_s / self.torch_s


# How long a round waits before it starts: OpenBLAS's worker threads spin for about 0.1 s after a
# multi-threaded GEMM (and OpenMP's after a parallel region), holding a core; without a pause, one
# framework's idle spinning would slow the next round of the other one.
QUIET_S = 0.25


def best_times(fns, number: int, repeat: int = 7) -> list[float]:
    """Seconds per call of each fn: the best of `repeat` rounds of `number` calls, after a
    warm-up. Rounds alternate between the functions, so a change in machine load during the run
    reaches all of them alike and their ratio stays fair; each starts after a quiet pause."""
    for fn in fns:
        fn()
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            time.sleep(QUIET_S)
            start = time.perf_counter()
            for _ in range(number):
                fn()
            best[i] = min(best[i], (time.perf_counter() - start) / number)
    return best


def try_import_torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def _value(amount: float | None, unit: str) -> str:
    if amount is None:
        return "-"
    return f"{amount * 1e6:9.1f} us" if unit == "us" else f"{amount / 2**20:8.1f} MiB"


def print_table(results: list[Result]) -> None:
    print(f"{'benchmark':<46} {'minitrain':>12} {'torch':>12} {'ratio':>7} {'target':>7}")
    for r in results:
        ratio = "-" if r.ratio is None else f"{r.ratio:7.2f}"
        target = "" if r.target is None else f"<={r.target:.2f}"
        verdict = ""
        if r.ratio is not None and r.target is not None:
            verdict = "  ok" if r.ratio <= r.target else "  MISSED"
        print(
            f"{r.name + ' (per ' + r.per + ')':<46} {_value(r.minitrain_s, r.unit):>12} "
            f"{_value(r.torch_s, r.unit):>12} {ratio:>7} {target:>7}{verdict}"
        )
        if r.note:
            print(f"    {r.note}")

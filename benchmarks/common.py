"""Shared timing and reporting for the benchmarks: alternating rounds, each after a quiet pause and
an untimed warm-up; per-framework median times, the median of the per-round ratios and their
spread; the printed table."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field

# How long a round waits before it starts: OpenBLAS's worker threads spin for about 0.1 s after a
# multi-threaded GEMM (and OpenMP's after a parallel region), holding a core; without a pause, one
# framework's idle spinning would slow the next round of the other one.
QUIET_S = 0.25
# After the pause the thread pools are asleep: the first calls pay to wake them (PyTorch's GELU
# read 3.2 ms straight after a pause against 0.4-0.5 ms warm). So each round first calls its
# function, untimed, until at least this long has passed (and at least once).
WARMUP_S = 0.02
ROUNDS = 7


def median(values) -> float:
    return float(statistics.median(values))


def quartiles(values) -> tuple[float, float]:
    """The 25th and 75th percentiles of `values`, interpolated linearly between order statistics
    (numpy's default): a spread that one disturbed round cannot stretch, as min-max would."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0], ordered[0]

    def at(fraction: float) -> float:
        position = fraction * (len(ordered) - 1)
        low = int(position)
        high = min(low + 1, len(ordered) - 1)
        return ordered[low] + (ordered[high] - ordered[low]) * (position - low)

    return at(0.25), at(0.75)


class Timings(list):
    """Seconds per call, the median over the rounds, of each function (a list, in the order the
    functions were given); `per_round[i][r]` is function i's seconds per call in round r."""

    def __init__(self, per_round: list[list[float]]) -> None:
        super().__init__(median(rounds) for rounds in per_round)
        self.per_round = per_round

    def ratios(self, i: int = 0, j: int = 1) -> list[float]:
        """Function i's time over function j's, round by round: both were timed in the same
        round, a few seconds apart, so a change in the machine's load cancels out of each."""
        return [a / b for a, b in zip(self.per_round[i], self.per_round[j], strict=True)]

    def ratios_if_pair(self, i: int = 0, j: int = 1) -> list[float] | None:
        """`ratios(i, j)`, or None when function j was not timed (PyTorch is not installed)."""
        return self.ratios(i, j) if len(self.per_round) > max(i, j) else None


def alternating_times(fns, number: int, rounds: int = ROUNDS) -> Timings:
    """Seconds per call of each fn over `rounds` rounds of `number` calls. Every fn is called once
    first (numba compiles, allocators grow). In each round every fn runs in turn, after a quiet
    pause and an untimed warm-up of at least WARMUP_S; the order is reversed every other round,
    so neither framework always runs first."""
    for fn in fns:
        fn()
    per_round = [[] for _ in fns]
    for round_index in range(rounds):
        order = list(range(len(fns)))
        if round_index % 2:
            order.reverse()
        for i in order:
            time.sleep(QUIET_S)
            warm_until = time.perf_counter() + WARMUP_S
            fns[i]()
            while time.perf_counter() < warm_until:
                fns[i]()
            start = time.perf_counter()
            for _ in range(number):
                fns[i]()
            per_round[i].append((time.perf_counter() - start) / number)
    return Timings(per_round)


@dataclass
class Result:
    """One benchmark: minitrain's and PyTorch's time for the same work (medians over the rounds),
    the per-round ratios where the two were timed in alternating rounds, and the target ratio."""

    name: str
    minitrain_s: float
    torch_s: float | None
    per: str = "call"
    target: float | None = None
    note: str = ""
    unit: str = "us"  # how the two columns print: "us" (times in seconds) or "MiB" (bytes)
    round_ratios: list[float] | None = field(default=None, repr=False)

    @property
    def ratio(self) -> float | None:
        """The median of the per-round ratios; without rounds (a memory row, or one measurement
        each) minitrain's figure over PyTorch's."""
        if self.round_ratios:
            return median(self.round_ratios)
        return None if self.torch_s is None else self.minitrain_s / self.torch_s

    @property
    def spread(self) -> tuple[float, float] | None:
        """The interquartile range of the per-round ratios (None without rounds)."""
        return quartiles(self.round_ratios) if self.round_ratios else None

    @property
    def verdict(self) -> str:
        if self.ratio is None or self.target is None:
            return ""
        return "ok" if self.ratio <= self.target else "MISSED"


def try_import_torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def format_amount(amount: float | None, unit: str) -> str:
    """A time in seconds as microseconds, milliseconds or seconds, whichever reads best, or bytes
    as MiB; '-' for none."""
    if amount is None:
        return "-"
    if unit != "us":
        return f"{amount / 2**20:.1f} MiB"
    if amount < 1e-3:
        return f"{amount * 1e6:.1f} us"
    return f"{amount * 1e3:.2f} ms" if amount < 1 else f"{amount:.2f} s"


def format_target(target: float) -> str:
    """A target ratio with two decimals, or three where two would round it (1/8 is 0.125)."""
    return f"{target:.2f}" if round(target, 2) == target else f"{target:.3f}"


def format_spread(result: Result) -> str:
    spread = result.spread
    return "-" if spread is None else f"{spread[0]:.2f}-{spread[1]:.2f}"


def print_table(results: list[Result]) -> None:
    print(
        f"{'benchmark':<66} {'minitrain':>11} {'torch':>11} {'ratio':>6} {'IQR':>10} {'target':>7}"
    )
    for r in results:
        ratio = "-" if r.ratio is None else f"{r.ratio:.2f}"
        target = "" if r.target is None else f"<={format_target(r.target)}"
        verdict = f"  {r.verdict}" if r.verdict else ""
        print(
            f"{r.name + ' (per ' + r.per + ')':<66} {format_amount(r.minitrain_s, r.unit):>11} "
            f"{format_amount(r.torch_s, r.unit):>11} {ratio:>6} {format_spread(r):>10} "
            f"{target:>7}{verdict}"
        )
        if r.note:
            print(f"    {r.note}")

"""numpy's floating-point warnings kept out of minitrain's ops, as PyTorch has none.

`log(0)`, `1 / 0` and `sqrt(-1)` are -inf, inf and nan in PyTorch, silently; numpy computes the
same values and also prints "RuntimeWarning: divide by zero encountered in log" at the line
that called the ufunc. Inside minitrain that line is an op's kernel, and the warning is noise
about a value PyTorch programs expect (a loss's log of a zero probability, masked later). So a
warnings filter ignores RuntimeWarnings attributed to minitrain's own modules, installed once
at import, after the filters already there: numpy called from the user's own code warns as
before, `-W error`, `PYTHONWARNINGS` and `warnings.simplefilter(...)` set by the user come
first and still apply, and nothing is spent per op (numpy's errstate around every kernel would
cost 1.6 us a call)."""

from __future__ import annotations

import warnings

__all__ = ["quiet_minitrain_modules"]


def quiet_minitrain_modules() -> None:
    """Ignore RuntimeWarnings raised from minitrain's modules (numpy's float warnings)."""
    # appended: the user's own filters (-W error, PYTHONWARNINGS, simplefilter) come first
    warnings.filterwarnings(
        "ignore", category=RuntimeWarning, module=r"minitrain(\.|$)", append=True
    )

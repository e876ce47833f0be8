"""numpy's floating-point warnings kept out of minitrain's ops, as PyTorch has none.

`log(0)`, `1 / 0` and `sqrt(-1)` are -inf, inf and nan in PyTorch, silently; numpy computes the
same values and also prints "RuntimeWarning: divide by zero encountered in log" at the line
that called the ufunc. Inside minitrain that line is an op's kernel, and the warning is noise
about a value PyTorch programs expect (a loss's log of a zero probability, masked later). So a
warnings filter ignores RuntimeWarnings attributed to minitrain's own modules, installed once
at import, after the filters already there: numpy called from the user's own code warns as
before, `-W error`, `PYTHONWARNINGS` and `warnings.simplefilter(...)` set by the user come
first and still apply, and nothing is spent per op (numpy's errstate around every kernel would
cost 1.6 us a call).

numpy's ndarray methods (`sum`, `mean`, `prod`, `var`, `std`) run in numpy's own Python module
numpy/_core/_methods.py, and a warning there is attributed to that module whoever called: those
are ignored too, which also quiets them for a user's own `ndarray.sum` (numpy shows each only
once per line anyway)."""

from __future__ import annotations

import warnings

__all__ = ["quiet_minitrain_modules"]


def quiet_minitrain_modules() -> None:
    """Ignore RuntimeWarnings raised from minitrain's modules (numpy's float warnings)."""
    # appended: the user's own filters (-W error, PYTHONWARNINGS, simplefilter) come first
    for module in (r"minitrain(\.|$)", r"numpy\.(_core|core)\._methods$"):
        warnings.filterwarnings("ignore", category=RuntimeWarning, module=module, append=True)

"""The environment variables that switch off minitrain's process-wide settings. Each setting is
made for speed and is on unless its variable says 0, false or no:

- MINITRAIN_KEEP_FREED_MEMORY: glibc's malloc keeps freed blocks for the next array
  (allocator.py, at import);
- MINITRAIN_SIDE_BY_SIDE: a batch's chunks run on threads with BLAS held to one thread
  meanwhile (threads.py, at each call);
- MINITRAIN_SHORT_OMP_SPIN: numba's OpenMP threads start with a short idle spin, so that they
  hand the cores back to BLAS (numba_pool.py, once, before the first parallel kernel);
- MINITRAIN_COMPILE_IN_BACKGROUND: kernels missing from numba's cache compile in another process
  while the ops run their generic kernels (background_compile.py, read at import; it also takes
  `hold`, for tests)."""

from __future__ import annotations

import os

__all__ = ["switched_off"]


def switched_off(variable: str) -> bool:
    """Whether the environment variable `variable` turns its setting off (0, false or no, in
    any case and with surrounding spaces); unset, the setting is on."""
    return os.environ.get(variable, "1").strip().lower() in ("0", "false", "no")

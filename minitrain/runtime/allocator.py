"""Keep freed memory for the next array: glibc malloc's two thresholds, set once at import.

Training makes the same large temporaries step after step: activations, gradients, masks of a
few MiB each. glibc's malloc hands such a block back to the operating system when it is freed
(blocks above M_MMAP_THRESHOLD are unmapped, and free memory at the top of the heap above
M_TRIM_THRESHOLD is trimmed), so the next array of that size is new memory that page-faults its
way in, one fault per 4 KiB page, each also zeroed by the kernel. On the 2-core VM this project
is developed on that costs about 0.35 ms per MiB: a GELU forward and backward on a (16, 64, 512)
float32 input took 1.83 ms, 0.33 ms of kernels and the rest faults, and an LSTM training step
97 ms instead of 81 ms. PyTorch's CPU tuning guide answers the same problem by preloading
jemalloc or tcmalloc; minitrain asks glibc to keep blocks up to THRESHOLD_BYTES mapped and in
the heap instead, so they are reused. The process keeps up to that much freed memory for later
(its peak memory is unchanged).

It is process-wide, like any allocator setting: MINITRAIN_KEEP_FREED_MEMORY=0 in the environment
leaves malloc as it is. Elsewhere than glibc (macOS, musl) nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform

from .environment import switched_off

THRESHOLD_BYTES = 256 * 1024 * 1024
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)

kept = False  # whether keep_freed_memory() took effect in this process


def keep_freed_memory() -> bool:
    """Raise glibc's mmap and trim thresholds to THRESHOLD_BYTES; whether it took effect
    (False off glibc, where MINITRAIN_KEEP_FREED_MEMORY=0, or where mallopt refused)."""
    global kept
    if switched_off("MINITRAIN_KEEP_FREED_MEMORY") or platform.libc_ver()[0] != "glibc":
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return False
    kept = bool(
        libc.mallopt(_M_MMAP_THRESHOLD, THRESHOLD_BYTES)
        and libc.mallopt(_M_TRIM_THRESHOLD, THRESHOLD_BYTES)
    )
    return kept


keep_freed_memory()  # on import: minitrain/__init__.py imports this module first

"""The compile process of background_compile.py: reads jobs (key, kernel address, qualname,
signature) from its standard input, compiles each into numba's on-disk cache, and answers each
job's key on its standard output, in order; a kernel that fails to compile is answered too (the
caller then compiles it itself, and raises numba's error there). Ends at the end of its input, or
when the parent is gone; the parent ends it as it exits (background_compile.py)."""

from __future__ import annotations

import os
import pickle
import sys

from .background_compile import compile_for


def main() -> None:
    # the lowest priority: the training process (its BLAS threads above all) keeps the cores it
    # wants, and the compile runs on what it leaves idle (no os.nice on Windows: as it is)
    if hasattr(os, "nice"):
        os.nice(19)
    jobs = sys.stdin.buffer
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # anything printed stays off the answers
    while True:
        try:
            key, address, qualname, signature = pickle.load(jobs)
        except EOFError:
            return
        try:
            compile_for(address, qualname, signature)
        except Exception:  # noqa: BLE001, S110 (answered all the same: see the docstring)
            pass
        try:
            pickle.dump(key, answers)
            answers.flush()
        except OSError:  # the parent has ended (killed: it ends this process itself otherwise)
            return


if __name__ == "__main__":
    main()

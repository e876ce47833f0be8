"""`python -m minitrain program.py [args...]` (or `-m package.module [args...]`): run a PyTorch
program on minitrain, its `import torch` answered by minitrain (compat/torch_alias.py), its
argv and sys.path as if run by `python program.py`."""

from __future__ import annotations

import os
import runpy
import sys

from .compat import torch_alias

USAGE = "usage: python -m minitrain program.py [args...] | -m package.module [args...]"


def main(argv: list[str]) -> None:
    if not argv or argv[0] in ("-h", "--help") or (argv[0] == "-m" and len(argv) < 2):
        print(USAGE, file=sys.stderr if not argv else sys.stdout)
        raise SystemExit(0 if argv else 2)
    torch_alias.install()
    if argv[0] == "-m":
        sys.argv = [argv[1], *argv[2:]]
        sys.path.insert(0, os.getcwd())
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return
    program = argv[0]
    sys.argv = list(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(program)))
    runpy.run_path(program, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])

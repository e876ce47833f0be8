"""The notebooks' exercises and their checks.

Every notebook ends with exercises: a function for the learner to write, then a cell that checks
it, `check_<name>(<name>)`. A check never stops the notebook: it prints "not done yet" while the
function still raises NotImplementedError, what is wrong while an assertion fails, and "passed"
once it holds. The checks of notebook NN_<topic> live in exercises/<topic>.py, the solutions in
solutions/<topic>.py under the same names without `check_`; the test suite runs every check on
its solution with `strict=True`, where a wrong answer raises.
"""

from __future__ import annotations

import functools

CHECKS: dict[str, dict] = {}  # module name -> {exercise name: its check}


def exercise(checker):
    """Make `checker(fn)`, which asserts what a correct `fn` does, an exercise's check:
    `check_<name>(fn, strict=False)`, registered under its module and name."""
    name = checker.__name__.removeprefix("check_")

    @functools.wraps(checker)
    def check(fn, strict: bool = False) -> None:
        # returns nothing, so that a cell ending in a check shows only what it prints
        try:
            checker(fn)
        except NotImplementedError:
            if strict:
                raise
            print(f"{name}: not done yet (replace the `raise NotImplementedError` with your code)")
            return
        except AssertionError as failure:
            if strict:
                raise
            print(f"{name}: not yet right: {failure}")
            return
        print(f"{name}: passed")

    CHECKS.setdefault(checker.__module__.rpartition(".")[2], {})[name] = check
    return check

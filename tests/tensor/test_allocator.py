"""allocator.py: freed blocks stay with the process, so the temporaries of the next step reuse
them instead of page-faulting new memory in; MINITRAIN_KEEP_FREED_MEMORY=0 leaves malloc alone.
Each case runs in a fresh process: the setting is process-wide and made at import."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    platform.libc_ver()[0] != "glibc", reason="the thresholds are glibc's mallopt settings"
)

# Two 4 MiB float32 temporaries alive at once, freed, made again: the pattern of an op's output
# and its gradient. Prints whether the setting took and the minor page faults of 50 rounds.
_PROGRAM = """
import json, resource
import numpy as np
import minitrain
from minitrain.runtime import allocator
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(3):
    a, b = np.ones(1 << 20, np.float32), np.ones(1 << 20, np.float32)
    del a, b
before = faults()
for _ in range(50):
    a, b = np.ones(1 << 20, np.float32), np.ones(1 << 20, np.float32)
    del a, b
print(json.dumps({"kept": allocator.kept, "faults": faults() - before}))
"""


def _run(setting: str | None) -> dict:
    env = dict(os.environ)
    env.pop("MINITRAIN_KEEP_FREED_MEMORY", None)
    if setting is not None:
        env["MINITRAIN_KEEP_FREED_MEMORY"] = setting
    result = subprocess.run(
        [sys.executable, "-c", _PROGRAM], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_freed_temporaries_are_reused_without_page_faults():
    measured = _run(None)
    assert measured["kept"] is True
    # 50 rounds of 8 MiB would be 102400 faults of 4 KiB pages if each were new memory
    assert measured["faults"] < 2000, measured


def test_the_environment_switch_leaves_malloc_alone():
    assert _run("0")["kept"] is False

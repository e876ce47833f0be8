"""The results file of `make bench` (benchmarks/results.json): the machine, the versions and every
row, as JSON. The README's performance section is generated from it (benchmarks/readme.py), so a
figure there is always one that a run measured. A run of some modules only (`--only`) replaces
those modules' rows and keeps the others'."""

from __future__ import annotations

import datetime
import json
import os
import platform

from benchmarks.common import Result

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results.json")
SCHEMA = 1
ROW_FIELDS = {
    "module": str,
    "name": str,
    "per": str,
    "unit": str,
    "minitrain": (int, float),
    "torch": (int, float, type(None)),
    "ratio": (int, float, type(None)),
    "spread": (list, type(None)),  # the interquartile range of the per-round ratios
    "rounds": (int, type(None)),  # how many alternating rounds the ratio is the median of
    "target": (int, float, type(None)),
    "verdict": str,  # "ok", "MISSED", or "" without a ratio or a target
    "note": str,
}


def row_of(module: str, result: Result) -> dict:
    spread = result.spread
    return {
        "module": module,
        "name": result.name,
        "per": result.per,
        "unit": result.unit,
        "minitrain": result.minitrain_s,
        "torch": result.torch_s,
        "ratio": result.ratio,
        "spread": None if spread is None else list(spread),
        "rounds": len(result.round_ratios) if result.round_ratios else None,
        "target": result.target,
        "verdict": result.verdict,
        "note": result.note,
    }


def environment(torch) -> dict:
    """The machine and the versions a run measured on."""
    import numba
    import numpy as np

    import minitrain

    return {
        "cpu": _cpu_name(),
        "cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads() if torch else None,
        "versions": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "numba": numba.__version__,
            "minitrain": minitrain.__version__,
            "torch": torch.__version__ if torch else None,
        },
        "date": datetime.date.today().isoformat(),
    }


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def merge(old: dict | None, new_rows: list[dict], modules: list[str], order: list[str]) -> list:
    """The rows of a run of `modules` in place of those modules' rows in `old`, the others kept;
    ordered by module as in `order` (run.py's list), each module's rows in their own order."""
    kept = [row for row in (old or {}).get("rows", []) if row["module"] not in modules]
    rows = kept + new_rows
    rank = {module: i for i, module in enumerate(order)}
    return sorted(rows, key=lambda row: rank.get(row["module"], len(order)))  # a stable sort


def document(env: dict, rows: list[dict]) -> dict:
    return {"schema": SCHEMA, **env, "rows": rows}


def check(results: dict) -> None:
    """Raise ValueError where `results` is not a results file of this schema."""
    if results.get("schema") != SCHEMA:
        raise ValueError(f"results: schema {results.get('schema')!r}, expected {SCHEMA}")
    for key in ("cpu", "cores", "versions", "date", "rows"):
        if key not in results:
            raise ValueError(f"results: no {key!r}")
    for row in results["rows"]:
        if set(row) != set(ROW_FIELDS):
            raise ValueError(f"results: row {row.get('name')!r} has fields {sorted(row)}")
        for key, kinds in ROW_FIELDS.items():
            if not isinstance(row[key], kinds):
                raise ValueError(f"results: row {row['name']!r}: {key} is {row[key]!r}")


def load(path: str = PATH) -> dict | None:
    if not os.path.exists(path):
        return None
    with open(path) as stored:
        results = json.load(stored)
    check(results)
    return results


def save(results: dict, path: str = PATH) -> None:
    check(results)
    with open(path, "w") as out:
        json.dump(results, out, indent=1)
        out.write("\n")

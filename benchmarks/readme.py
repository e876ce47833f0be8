"""The performance section of README.md, generated from benchmarks/results.json between two marker
lines, so that no figure in it is typed by hand: `make bench` rewrites it after each run, and
tests/benchmarks/test_bench_report.py checks that the README holds what this module makes of the
stored file. By hand: `python -m benchmarks.readme` (rewrite) or `... --check` (exit 1 if stale)."""

from __future__ import annotations

import os
import sys
import textwrap

from benchmarks import results as results_file
from benchmarks.common import format_amount, format_target

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")
BEGIN = "<!-- bench:begin (generated from benchmarks/results.json by benchmarks/readme.py) -->"
END = "<!-- bench:end -->"


def _wrapped(text: str, indent: str = "") -> str:
    """`text` in lines of at most 100 columns (the house width), never breaking a word."""
    return textwrap.fill(
        text,
        width=100,
        subsequent_indent=indent,
        break_on_hyphens=False,
        break_long_words=False,
    )


def _ratio(row: dict) -> str:
    return "-" if row["ratio"] is None else f"{row['ratio']:.2f}"


def _spread(row: dict) -> str:
    return "-" if row["spread"] is None else f"{row['spread'][0]:.2f}-{row['spread'][1]:.2f}"


def _target(row: dict) -> str:
    if row["target"] is None:
        return ""
    verdict = {"ok": " ok", "MISSED": " **missed**"}.get(row["verdict"], "")
    return f"<= {format_target(row['target'])}{verdict}"


def render(results: dict) -> str:
    """The section's Markdown (without the markers) for a results file's contents."""
    versions = results["versions"]
    threads = results["torch_threads"]
    torch = versions["torch"] or "(not installed)"
    intro = (
        f"`make bench` on {results['cores']} cores ({results['cpu']}), {results['date']}: "
        f"minitrain {versions['minitrain']} against PyTorch {torch}"
        f"{f' ({threads} threads)' if threads else ''} in the same process, numpy "
        f"{versions['numpy']}, numba {versions['numba']}, Python {versions['python']}. The times "
        "are medians over rounds that alternate between the two frameworks, each round after a "
        "quiet pause and an untimed warm-up; the ratio is the median of the per-round ratios "
        "(below 1 minitrain is faster), the spread their interquartile range. "
        "[Performance](benchmarks/README.md) says what each row times."
    )
    lines = [
        _wrapped(intro),
        "",
        "| benchmark | minitrain | PyTorch | ratio | spread | target |",
        "|---|---|---|---|---|---|",
    ]
    for row in results["rows"]:
        lines.append(
            f"| {row['name']} (per {row['per']}) | {format_amount(row['minitrain'], row['unit'])} "
            f"| {format_amount(row['torch'], row['unit'])} | {_ratio(row)} | {_spread(row)} "
            f"| {_target(row)} |"
        )
    noted = [row for row in results["rows"] if row["note"]]
    if noted:
        lines += ["", "Notes of the rows:", ""]
        lines += [_wrapped(f"- {row['name']}: {row['note']}", indent="  ") for row in noted]
    return "\n".join(lines)


def section_of(text: str) -> str:
    """What stands between the markers in `text` (without the blank lines around it)."""
    if text.count(BEGIN) != 1 or text.count(END) != 1:
        raise ValueError("README.md: the bench markers must appear once each")
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")


def with_section(text: str, body: str) -> str:
    """`text` with `body` in place of what stands between its markers."""
    section_of(text)  # the markers are there, once each
    before, rest = text.split(BEGIN, 1)
    after = rest.split(END, 1)[1]
    return f"{before}{BEGIN}\n{body}\n{END}{after}"


def regenerate(results: dict, path: str = README) -> bool:
    """Write the section for `results` into the README at `path`; True if it changed."""
    with open(path) as readme:
        text = readme.read()
    updated = with_section(text, render(results))
    if updated != text:
        with open(path, "w") as readme:
            readme.write(updated)
    return updated != text


def main(argv: list[str]) -> int:
    results = results_file.load()
    if results is None:
        print(f"no results file at {results_file.PATH}: run `make bench` first", file=sys.stderr)
        return 1
    if "--check" in argv:
        with open(README) as readme:
            fresh = section_of(readme.read()) == render(results)
        print("README.md's performance section is " + ("current" if fresh else "stale"))
        return 0 if fresh else 1
    changed = regenerate(results)
    print("README.md's performance section " + ("rewritten" if changed else "unchanged"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

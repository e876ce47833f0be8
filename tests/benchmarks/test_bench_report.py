"""make bench's arithmetic and reports, without timing anything and without PyTorch: the median of
per-round ratios and its spread, the alternating rounds with their warm-up, the results file's
schema and merge, the --only filter, and README.md's performance section, which must be what
benchmarks/readme.py makes of the stored benchmarks/results.json (no figure typed by hand)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmarks import common, readme, results, run

ROOT = Path(__file__).resolve().parents[2]


def test_the_ratio_is_the_median_of_the_per_round_ratios():
    timings = common.Timings([[2.0, 4.0, 9.0], [1.0, 2.0, 3.0]])
    assert list(timings) == [4.0, 2.0]  # each function's median time
    assert timings.ratios() == [2.0, 2.0, 3.0]
    row = common.Result("r", timings[0], timings[1], round_ratios=timings.ratios())
    assert row.ratio == 2.0  # not median over median (4 / 2 here too) nor mean (7/3)
    assert row.spread == (2.0, 2.5)


def test_a_round_in_which_both_frameworks_slowed_keeps_its_ratio():
    # round 2 ran while the machine was busy: both frameworks slowed alike
    timings = common.Timings([[1.0, 5.0, 1.1, 1.0, 1.2], [2.0, 10.0, 2.0, 1.6, 2.0]])
    row = common.Result("r", timings[0], timings[1], round_ratios=timings.ratios())
    assert row.ratio == pytest.approx(0.55)
    assert row.spread == pytest.approx((0.5, 0.6))


def test_quartiles_interpolate_between_order_statistics():
    assert common.quartiles([3.0]) == (3.0, 3.0)
    assert common.quartiles([4.0, 1.0, 3.0, 2.0]) == (1.75, 3.25)  # numpy's percentile, linear
    assert common.quartiles(range(1, 8)) == (2.5, 5.5)


def test_a_row_without_rounds_divides_its_figures_and_has_no_spread():
    row = common.Result("memory", 3 * 2**20, 4 * 2**20, unit="MiB", target=1.2)
    assert row.ratio == 0.75 and row.spread is None and row.verdict == "ok"
    assert common.Result("alone", 1.0, None, target=1.0).ratio is None
    assert common.Result("alone", 1.0, None, target=1.0).verdict == ""
    assert common.Result("slow", 2.0, 1.0, target=1.0, round_ratios=[2.0]).verdict == "MISSED"


def test_rounds_alternate_with_a_warm_up_after_each_pause(monkeypatch):
    monkeypatch.setattr(common, "QUIET_S", 0.0)
    monkeypatch.setattr(common, "WARMUP_S", 0.0)
    monkeypatch.setattr(common.time, "sleep", lambda seconds: calls.append("pause"))
    calls: list[str] = []
    timings = common.alternating_times(
        [lambda: calls.append("a"), lambda: calls.append("b")], number=2, rounds=3
    )
    assert len(timings.per_round[0]) == len(timings.per_round[1]) == 3
    # the first calls (compilation), then per round: pause, one warm-up call, `number` timed ones;
    # every other round starts with the other function
    expected = ["a", "b"]
    for first, second in (("a", "b"), ("b", "a"), ("a", "b")):
        expected += ["pause", first, first, first, "pause", second, second, second]
    assert calls == expected


def test_times_read_in_their_unit():
    assert common.format_amount(4.8e-6, "us") == "4.8 us"
    assert common.format_amount(0.0123, "us") == "12.30 ms"
    assert common.format_amount(2.5, "us") == "2.50 s"
    assert common.format_amount(3 * 2**20, "MiB") == "3.0 MiB"
    assert common.format_amount(None, "us") == "-"
    assert common.format_target(1.0) == "1.00" and common.format_target(1 / 8) == "0.125"


def _row(module: str, name: str, **changes) -> dict:
    result = common.Result(name, 2e-3, 1e-3, target=1.0, round_ratios=[2.0, 1.9, 2.1])
    return {**results.row_of(module, result), **changes}


def _document(rows: list[dict]) -> dict:
    env = {
        "cpu": "a test CPU",
        "cores": 2,
        "torch_threads": 2,
        "versions": {"python": "3", "numpy": "2", "numba": "0.6", "minitrain": "0.1", "torch": "2"},
        "date": "2026-01-01",
    }
    return results.document(env, rows)


def test_a_row_records_its_median_ratio_spread_rounds_and_verdict():
    row = _row("conv", "conv2d")
    assert row["ratio"] == 2.0 and row["rounds"] == 3 and row["verdict"] == "MISSED"
    assert row["spread"] == pytest.approx([1.95, 2.05])
    results.check(_document([row]))


@pytest.mark.parametrize(
    "damage",
    [
        lambda doc: doc.update(schema=0),
        lambda doc: doc.pop("versions"),
        lambda doc: doc["rows"][0].pop("ratio"),
        lambda doc: doc["rows"][0].update(minitrain="fast"),
        lambda doc: doc["rows"][0].update(extra=1),
    ],
)
def test_a_results_file_off_the_schema_is_refused(damage):
    document = _document([_row("conv", "conv2d")])
    damage(document)
    with pytest.raises(ValueError, match="results"):
        results.check(document)


def test_a_partial_run_replaces_its_modules_rows_and_keeps_the_others_in_order():
    old = _document([_row("overhead", "o"), _row("conv", "c-old"), _row("training", "t")])
    merged = results.merge(old, [_row("conv", "c-new")], ["conv"], run.BENCHMARKS)
    assert [row["name"] for row in merged] == ["o", "c-new", "t"]
    assert [row["name"] for row in results.merge(None, [_row("conv", "c")], ["conv"], [])] == ["c"]


def test_only_selects_modules_and_refuses_unknown_ones(capsys):
    assert run.parse_arguments(["--only", "conv, training"]).modules == ["conv", "training"]
    assert run.parse_arguments([]).modules == run.BENCHMARKS
    with pytest.raises(SystemExit):
        run.parse_arguments(["--only", "convolution"])
    assert "no benchmark module convolution" in capsys.readouterr().err


def test_the_section_is_rendered_from_the_rows():
    rows = [_row("conv", "conv2d 32x64x32x32 64x3x3 fwd+bwd", note="60% of matmul's rate")]
    body = readme.render(_document(rows))
    assert body.endswith("\n- conv2d 32x64x32x32 64x3x3 fwd+bwd: 60% of matmul's rate")
    assert "| conv2d 32x64x32x32 64x3x3 fwd+bwd (per call) | 2.00 ms | 1.00 ms | 2.00 " in body
    assert "| 1.95-2.05 | <= 1.00 **missed** |" in body
    assert "2 cores (a test CPU), 2026-01-01" in body


def test_the_section_replaces_only_what_stands_between_the_markers():
    text = f"# Title\n\nbefore\n\n{readme.BEGIN}\nold figures\n{readme.END}\n\nafter\n"
    updated = readme.with_section(text, "new figures")
    assert updated == f"# Title\n\nbefore\n\n{readme.BEGIN}\nnew figures\n{readme.END}\n\nafter\n"
    assert readme.section_of(updated) == "new figures"
    with pytest.raises(ValueError, match="markers"):
        readme.section_of("no markers here")


def test_the_readme_section_is_generated_from_the_stored_results():
    stored = results.load()
    assert stored is not None, "benchmarks/results.json is missing: run make bench"
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme.section_of(text) == readme.render(stored), (
        "README.md's performance section differs from benchmarks/results.json: run "
        "`python -m benchmarks.readme` (make bench does) instead of editing it by hand"
    )


def test_every_stored_row_is_described_in_the_benchmarks_readme():
    described = re.findall(r"`([^`|]+)`", (ROOT / "benchmarks" / "README.md").read_text())
    stored = results.load()
    assert stored is not None
    for row in stored["rows"]:
        name = row["name"].lower()  # as tests/ops/test_numba_choice.py reads the names
        assert any(name.startswith(row_name.lower()) for row_name in described), row["name"]
    assert {row["module"] for row in stored["rows"]} <= set(run.BENCHMARKS)

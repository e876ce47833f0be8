"""The soak's verdict (benchmarks/soak.py) without its 20 000 steps: synthetic memory curves that
leak are flagged and flat ones pass, the sampling sees a step that keeps what it allocates, the
exit status follows the verdict, and the stored benchmarks/soak.json says what the analysis makes
of its own samples."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from benchmarks import soak

MIB = soak.MIB
STORED = Path(soak.ROOT) / "benchmarks" / "soak.json"


def _record(rss_mib, tensors=lambda step: 46, steps=20_000, every=100, object_every=2000):
    """measure()'s record for a run whose RSS at each step is rss_mib(step) MiB and whose live
    tensor count is tensors(step)."""
    rss_steps = list(range(0, steps + 1, every))
    object_steps = list(range(0, steps + 1, object_every))
    return {
        "commit": None,
        "steps_per_second": 30.0,
        "rss": {
            "step": rss_steps,
            "bytes": [int(rss_mib(step) * MIB) for step in rss_steps],
            "seconds": [step / 30.0 for step in rss_steps],
        },
        "objects": {
            "step": object_steps,
            "tensors": [tensors(step) for step in object_steps],
            "nodes": [0 for _ in object_steps],
            "tensor_bytes": [4 * 2**20 for _ in object_steps],
            "python_objects": [128_000 for _ in object_steps],
        },
    }


def _warmed_up(step):
    """Imports, compiling and the allocator's growth: 50 MiB to 200 MiB over the first 500 steps."""
    return 50 + 150 * min(1.0, step / 500)


def _noisy(curve, seed=0, spread_mib=0.5):
    noise = np.random.default_rng(seed).uniform(-spread_mib, spread_mib, 1000)
    return lambda step: curve(step) + noise[(step // 100) % 1000]


def test_a_flat_curve_after_its_warm_up_passes():
    summary = soak.analyse(_record(_noisy(_warmed_up)), 20_000)
    assert summary["verdict"] == "flat" and summary["problems"] == []
    assert summary["rss_start_mib"] == pytest.approx(50, abs=0.5)
    assert summary["rss_after_warmup_mib"] == pytest.approx(200, abs=0.5)
    assert abs(summary["slope_kib_per_1000_steps"]) < 20


def test_a_steady_leak_is_flagged_by_the_fitted_line_and_the_quarters():
    def leaking(step):  # 1 KiB a step: 18 MiB over the 18 000 steps after warm-up
        return _warmed_up(step) + step / 1024

    summary = soak.analyse(_record(_noisy(leaking)), 20_000)
    assert summary["verdict"] == "grows"
    assert summary["slope_kib_per_1000_steps"] == pytest.approx(1000, rel=0.02)
    assert [problem.split()[:3] for problem in summary["problems"]] == [
        ["RSS", "after", "warm-up"],
        ["the", "last", "quarter's"],
    ]


@pytest.mark.parametrize("growth_mib, verdict", [(3.0, "flat"), (6.0, "grows")])
def test_the_fitted_growth_limit(growth_mib, verdict):
    def slow(step):
        return _warmed_up(step) + growth_mib * max(0, step - 2000) / 18_000

    summary = soak.analyse(_record(slow), 20_000)
    assert summary["fitted_growth_mib"] == pytest.approx(growth_mib, rel=0.01)
    assert summary["verdict"] == verdict


def test_a_late_jump_is_flagged_by_the_quarters_alone():
    def jumping(step):  # 3 MiB more from step 18 000: too late to tilt the line past the limit
        return _warmed_up(step) + (3 if step >= 18_000 else 0)

    summary = soak.analyse(_record(jumping), 20_000)
    assert summary["fitted_growth_mib"] < soak.GROWTH_LIMIT_MIB
    assert summary["verdict"] == "grows"
    assert summary["problems"][0].startswith("the last quarter's RSS peaks at 203.0 MiB")


def test_live_tensors_that_pile_up_are_flagged_though_memory_is_flat():
    summary = soak.analyse(_record(_warmed_up, tensors=lambda step: 46 + step // 2000), 20_000)
    assert summary["verdict"] == "grows"
    assert summary["problems"] == [
        "live tensors rise from at most 50 in the second quarter to 56 in the last"
    ]
    assert (summary["tensors_after_warmup"], summary["tensors_end"]) == (47, 56)


def _measure(step, steps=300):
    record = soak.measure(step, steps, every=10)
    return record, soak.analyse(record, steps)


def test_the_sampling_sees_a_step_that_keeps_what_it_allocates():
    import minitrain as mt

    kept = []

    def leaking_step():  # 64 KiB a step, in a Tensor: 17 MiB after the warm-up
        kept.append(mt.tensor(np.ones(8192)))

    record, summary = _measure(leaking_step)
    assert len(record["rss"]["step"]) == 31 and record["objects"]["step"][-1] == 300
    assert summary["verdict"] == "grows"
    assert summary["fitted_growth_mib"] > 10
    assert summary["tensors_end"] - summary["tensors_after_warmup"] == 270
    assert summary["tensor_bytes_end"] - summary["tensor_bytes_after_warmup"] == 270 * 65536


def test_the_sampling_passes_a_step_that_lets_go():
    import minitrain as mt

    def steady_step():
        (mt.tensor(np.ones(8192), requires_grad=True) * 2).sum().backward()

    _, summary = _measure(steady_step)
    assert summary["verdict"] == "flat", summary["problems"]
    assert summary["nodes_end"] == 0


@pytest.mark.parametrize("leaks, status", [(False, 0), (True, 1)])
def test_the_exit_status_follows_the_verdict_and_both_files_are_written(
    tmp_path, monkeypatch, leaks, status
):
    def fresh_process(model, steps, every):
        return _record(lambda step: _warmed_up(step) + (step / 1024 if leaks else 0))

    monkeypatch.setattr(soak, "soak_in_fresh_process", fresh_process)
    assert soak.main(["--out", str(tmp_path)]) == status
    assert sorted(os.listdir(tmp_path)) == ["soak.json", "soak.png"]  # no temporary left
    document = json.loads((tmp_path / "soak.json").read_text())
    assert document["verdict"] == ("grows" if leaks else "flat")
    assert list(document["models"]) == ["charlm", "cnn"]
    assert (tmp_path / "soak.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_quick_runs_write_elsewhere_and_unknown_models_are_refused():
    quick = soak.parse_arguments(["--quick"])
    assert (quick.steps, quick.every) == (soak.QUICK_STEPS, soak.QUICK_EVERY)
    assert quick.out == os.path.join(soak.ROOT, "runs", "soak")
    full = soak.parse_arguments(["--models", "cnn"])
    assert (full.steps, full.models) == (20_000, ["cnn"])
    assert os.path.samefile(full.out, Path(soak.ROOT) / "benchmarks")
    with pytest.raises(SystemExit):
        soak.parse_arguments(["--models", "resnet"])


@pytest.mark.skipif(not STORED.exists(), reason="no soak recorded (make soak)")
def test_the_stored_soak_is_what_the_analysis_makes_of_its_samples():
    document = json.loads(STORED.read_text())
    for name, model in document["models"].items():
        assert soak.analyse(model, document["steps"]) == model["summary"], (
            f"benchmarks/soak.json's {name} summary is not what benchmarks/soak.py makes of its "
            f"samples: run make soak again"
        )
    flat = all(model["summary"]["verdict"] == "flat" for model in document["models"].values())
    assert document["verdict"] == ("flat" if flat else "grows")

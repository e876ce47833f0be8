"""The soak: thousands of training steps of the char LM (issue 34's tiny GPT, 2 blocks of width
128, context 64, batch 16, examples/train_char_lm.py's training loop on fresh batches) and of the
small CNN (benchmarks/training.py's step on (64, 1, 28, 28)), each in a fresh process, with the
process's memory sampled along the way; the verdict is whether memory grows once warmed up.

    python -m benchmarks.soak [--steps 20000] [--models cnn,charlm] [--every 100] [--quick]
        [--out DIR]

Every `--every` steps a model's process reads its resident memory (RSS, /proc/self/statm); ten
times a run it also collects garbage and counts what is alive: minitrain Tensors, autograd Nodes,
the bytes of the arrays behind the Tensors, and all the objects Python's collector tracks (a scan
of 0.1-0.2 s, too slow for every sample; tracemalloc, which would trace every allocation, slowed
the steps by a third). A model's memory is flat when, after the first tenth of its steps (the
warm-up: kernels compile, the allocator grows to its working set), the line fitted to its RSS
rises less than GROWTH_LIMIT_MIB over the run, the largest RSS of its last quarter is at most the
second quarter's plus QUARTER_TOLERANCE_MIB, and no count of live Tensors, Nodes or their bytes
is higher in the last quarter than in the second.

It writes benchmarks/soak.json (the samples, each model's summary, verdict, steps per second and
the commit its process started at, and the versions) and benchmarks/soak.png (memory against
step), and exits with status 1 when a model's memory grows. `--quick` runs 1000 steps of each
and writes into runs/soak/ instead, so that the recorded run stays; `--out` puts the files
elsewhere. A full run takes about 25 minutes on 2 quiet cores (make soak), hours on busy ones."""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ("charlm", "cnn")
DESCRIPTIONS = {
    "charlm": "char LM: GPT 2x128, T=64, b16, fresh batches, AdamW, clipping, cosine lr",
    "cnn": "CNN (64,1,28,28) Conv-BN-ReLU-MaxPool x2, Linear, SGD momentum (one batch)",
}
STEPS, QUICK_STEPS, EVERY, QUICK_EVERY = 20_000, 1000, 100, 20
OBJECT_SAMPLES = 10  # live-object counts a run: each is a gc scan of 0.1-0.2 s
WARMUP_FRACTION = 0.1
GROWTH_LIMIT_MIB = 4.0  # of the line fitted to RSS after warm-up, from its first to last sample
QUARTER_TOLERANCE_MIB = 2.0  # last quarter's largest RSS over the second quarter's
COUNTS = ("tensors", "nodes", "tensor_bytes")  # must not rise from the second to the last quarter
MIB = 2**20


def rss_bytes() -> int:
    """The process's resident memory now. Without /proc (macOS) its peak instead, from
    getrusage: a peak only rises, so a leak still shows and a flat run still reads flat."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


def live_objects() -> dict:
    """After a full collection: how many minitrain Tensors and autograd Nodes are alive, the
    bytes of the distinct arrays behind the Tensors, and all the objects the collector tracks."""
    import minitrain as mt
    from minitrain.autograd import Node, distinct_bytes

    gc.collect()
    objects = gc.get_objects()
    tensors = [o for o in objects if isinstance(o, mt.Tensor)]
    return {
        "tensors": len(tensors),
        "nodes": sum(1 for o in objects if type(o) is Node),
        "tensor_bytes": distinct_bytes(t.array for t in tensors),
        "python_objects": len(objects),
    }


def measure(step, steps: int, every: int, label: str = "") -> dict:
    """Call `step` `steps` times; RSS before the first call and every `every` calls, live
    objects about OBJECT_SAMPLES times a run (and at its end). Steps per second, and each RSS
    sample's `seconds`, count only the time in `step`. Progress goes to stderr, a line a tenth of
    the run, when `label` is given."""
    object_every = every * max(1, steps // every // OBJECT_SAMPLES)
    rss = {"step": [0], "bytes": [rss_bytes()], "seconds": [0.0]}
    objects = {"step": [0], **{name: [n] for name, n in live_objects().items()}}
    stepping = 0.0
    for done in range(1, steps + 1):
        start = time.perf_counter()
        step()
        stepping += time.perf_counter() - start
        if done % every == 0 or done == steps:
            rss["step"].append(done)
            rss["bytes"].append(rss_bytes())
            rss["seconds"].append(stepping)
        if done % object_every == 0 or done == steps:
            objects["step"].append(done)
            for name, count in live_objects().items():
                objects[name].append(count)
        if label and done % max(1, steps // 10) == 0:
            print(
                f"soak {label}: step {done}/{steps}  RSS {rss['bytes'][-1] / MIB:.1f} MiB  "
                f"{done / stepping:.1f} steps/s",
                file=sys.stderr,
                flush=True,
            )
    return {"steps_per_second": steps / stepping, "rss": rss, "objects": objects}


def cnn_step(steps: int):
    """benchmarks/training.py's small CNN step, on its one batch (its learning rate is fixed:
    `steps` is not needed)."""
    from benchmarks.training import minitrain_step

    return minitrain_step("cnn")[1]


def char_lm_step(steps: int):
    """examples/train_char_lm.py's training loop, without its evaluations, for issue 34's tiny
    GPT: a fresh random batch of the text each step, AdamW, clipping, and the learning rate's
    warm-up and cosine decay over `steps` (a scheduler's state is memory too)."""
    import minitrain as mt
    from benchmarks.char_lm import _example

    example = _example()
    config = example.Config(layers=2, batch=16, steps=steps)
    mt.manual_seed(config.seed)
    train_text, val_text = example.load_texts()
    vocabulary = example.Vocabulary(train_text + val_text)
    data = vocabulary.encode(train_text)
    model = example.build_model(len(vocabulary), config)
    optimizer = example.make_optimizer(model, config)
    scheduler = mt.optim.lr_scheduler.LambdaLR(
        optimizer, lambda done: example.learning_rate_factor(done, config)
    )
    rng = np.random.default_rng(config.seed)

    def step():
        starts = rng.integers(0, len(data) - config.context - 1, config.batch)
        optimizer.zero_grad()
        example.loss_of(model, *example.batch_of(data, starts, config.context)).backward()
        mt.nn.utils.clip_grad_norm_(model.parameters(), config.clip)
        optimizer.step()
        scheduler.step()

    return step


def commit() -> str | None:
    """The commit checked out in this repository (None outside a git checkout)."""
    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


STEP_BUILDERS = {"charlm": char_lm_step, "cnn": cnn_step}


def soak_in_process(model: str, steps: int, every: int) -> dict:
    """`measure`'s record of `model`, with the commit checked out when this process started (the
    code it imported: others may commit while a soak runs)."""
    started_at = commit()
    return {**measure(STEP_BUILDERS[model](steps), steps, every, label=model), "commit": started_at}


def soak_in_fresh_process(model: str, steps: int, every: int) -> dict:
    """`soak_in_process` in a new Python process, its samples read back from its last line.
    Kernels compile at their first call there (not in a background process, where they may
    land after the warm-up), so the warm-up holds all the compiling."""
    environment = dict(os.environ, MINITRAIN_COMPILE_IN_BACKGROUND="0")
    command = [sys.executable, "-m", "benchmarks.soak", "--child", model]
    command += ["--steps", str(steps), "--every", str(every)]
    finished = subprocess.run(
        command, cwd=ROOT, env=environment, stdout=subprocess.PIPE, text=True, check=True
    )
    return json.loads(finished.stdout.strip().splitlines()[-1])


def _in_quarter(steps: np.ndarray, total: int, quarter: int) -> np.ndarray:
    """The samples in quarter 1-4 of a run of `total` steps (the last one ends at `total`)."""
    low, high = (quarter - 1) * total / 4, quarter * total / 4
    return (steps >= low) & ((steps < high) if quarter < 4 else (steps <= high))


def analyse(record: dict, total: int) -> dict:
    """The summary and verdict of one model's samples (`measure`'s record) over `total` steps:
    'flat', or 'grows' with the reasons in `problems`."""
    rss_summary, rss_problems = _rss_verdict(record["rss"], total)
    count_summary, count_problems = _count_verdict(record["objects"], total)
    problems = rss_problems + count_problems
    return {
        **rss_summary,
        **count_summary,
        "problems": problems,
        "verdict": "grows" if problems else "flat",
    }


def _rss_verdict(rss: dict, total: int) -> tuple[dict, list[str]]:
    """RSS's summary, and what in it grows: the line fitted after warm-up rising more than
    GROWTH_LIMIT_MIB, or the last quarter's peak above the second's by QUARTER_TOLERANCE_MIB."""
    steps, memory = np.asarray(rss["step"]), np.asarray(rss["bytes"], dtype=float)
    warm = steps >= WARMUP_FRACTION * total
    slope = np.polyfit(steps[warm], memory[warm], 1)[0] if warm.sum() > 1 else 0.0  # bytes/step
    growth = slope * (steps[warm][-1] - steps[warm][0])
    second, last = (memory[_in_quarter(steps, total, q)] for q in (2, 4))
    summary = {
        "rss_start_mib": memory[0] / MIB,
        "rss_after_warmup_mib": memory[warm][0] / MIB,
        "rss_end_mib": memory[-1] / MIB,
        "rss_peak_mib": memory.max() / MIB,
        "slope_kib_per_1000_steps": slope * 1000 / 1024,
        "fitted_growth_mib": growth / MIB,
        "second_quarter_max_mib": second.max() / MIB if second.size else None,
        "last_quarter_max_mib": last.max() / MIB if last.size else None,
    }
    problems = []
    if growth > GROWTH_LIMIT_MIB * MIB:
        problems.append(
            f"RSS after warm-up rises {growth / MIB:.1f} MiB along its fitted line "
            f"(limit {GROWTH_LIMIT_MIB} MiB)"
        )
    if second.size and last.size and last.max() > second.max() + QUARTER_TOLERANCE_MIB * MIB:
        problems.append(
            f"the last quarter's RSS peaks at {last.max() / MIB:.1f} MiB, above the second "
            f"quarter's {second.max() / MIB:.1f} MiB + {QUARTER_TOLERANCE_MIB} MiB"
        )
    return summary, problems


def _count_verdict(objects: dict, total: int) -> tuple[dict, list[str]]:
    """Each live count after warm-up and at the end, and the COUNTS higher in the last quarter
    than in the second: a steady training step holds the same Tensors and Nodes at the same
    point of every step. Python's own objects are reported, not judged (caches fill lazily)."""
    steps = np.asarray(objects["step"])
    after_warmup = int(np.argmax(steps >= WARMUP_FRACTION * total))
    summary, problems = {}, []
    for name in (*COUNTS, "python_objects"):
        counts = np.asarray(objects[name])
        summary[f"{name}_after_warmup"] = int(counts[after_warmup])
        summary[f"{name}_end"] = int(counts[-1])
        second, last = (counts[_in_quarter(steps, total, q)] for q in (2, 4))
        if name in COUNTS and second.size and last.size and last.max() > second.max():
            problems.append(
                f"live {name} rise from at most {second.max()} in the second quarter to "
                f"{last.max()} in the last"
            )
    return summary, problems


def write_atomically(path: str, write) -> None:
    """`write(temporary path)`, then the temporary file, beside `path`, renamed onto it."""
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        write(temporary)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def report(records: dict, steps: int, every: int) -> dict:
    """The soak.json document: the machine and versions, the limits, and per model its commit,
    samples, summary and verdict."""
    from benchmarks.results import environment

    models = {
        name: {
            "description": DESCRIPTIONS.get(name, name),
            "commit": record["commit"],
            "steps_per_second": record["steps_per_second"],
            "summary": analyse(record, steps),
            "rss": record["rss"],
            "objects": record["objects"],
        }
        for name, record in records.items()
    }
    flat = all(model["summary"]["verdict"] == "flat" for model in models.values())
    return {
        **environment(None),
        "steps": steps,
        "every": every,
        "limits": {
            "warmup_fraction": WARMUP_FRACTION,
            "growth_mib": GROWTH_LIMIT_MIB,
            "quarter_tolerance_mib": QUARTER_TOLERANCE_MIB,
        },
        "verdict": "flat" if flat else "grows",
        "models": models,
    }


def plot(document: dict, path: str) -> None:
    """A column per model: its RSS over the whole run, the warm-up shaded; its RSS after the
    warm-up, above its level there, with the fitted line; its live Tensors, Nodes and tracked
    Python objects."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    names = list(document["models"])
    figure, axes = pyplot.subplots(
        3, len(names), figsize=(6 * len(names), 9), squeeze=False, sharex="col"
    )
    warmup = document["limits"]["warmup_fraction"] * document["steps"]
    for column, name in enumerate(names):
        model = document["models"][name]
        _plot_rss(axes[0][column], axes[1][column], model, warmup)
        axes[0][column].set_title(
            f"{name}: {model['summary']['verdict']}, "
            f"{model['summary']['slope_kib_per_1000_steps']:+.1f} KiB per 1000 steps, "
            f"{model['steps_per_second']:.1f} steps/s",
            fontsize=10,
        )
        _plot_counts(axes[2][column], model["objects"])
    figure.suptitle(f"minitrain {document['versions']['minitrain']} soak, {document['date']}")
    figure.tight_layout()
    write_atomically(path, lambda temporary: figure.savefig(temporary, format="png", dpi=80))
    pyplot.close(figure)


def _plot_rss(whole, after, model: dict, warmup: float) -> None:
    steps, mib = np.asarray(model["rss"]["step"]), np.asarray(model["rss"]["bytes"]) / MIB
    whole.plot(steps, mib, lw=1)
    whole.axvspan(0, warmup, color="0.9", label="warm-up")
    whole.set_ylabel("resident memory (MiB)")
    whole.legend(loc="lower right", fontsize=8)
    warm = steps >= warmup
    above = mib[warm] - mib[warm][0]
    line = np.polyfit(steps[warm], above, 1)
    after.plot(steps[warm], above, lw=1, label="RSS")
    after.plot(steps[warm], np.polyval(line, steps[warm]), "--", color="C3", label="fitted line")
    # at least the growth limit's range, so that a flat run's noise does not fill the panel
    after.set_ylim(min(-1.0, above.min() - 0.5), max(GROWTH_LIMIT_MIB + 1, above.max() + 0.5))
    after.set_ylabel("RSS above its level\nafter warm-up (MiB)")
    after.legend(loc="upper left", fontsize=8)


def _plot_counts(axes, objects: dict) -> None:
    axes.plot(objects["step"], objects["tensors"], "o-", label="minitrain Tensors")
    axes.plot(objects["step"], objects["nodes"], "s-", label="autograd Nodes")
    axes.set_ylabel("live after gc.collect()")
    axes.set_xlabel("step")
    axes.legend(loc="center right", fontsize=8)
    python = axes.twinx()
    python.plot(objects["step"], objects["python_objects"], "^:", color="C2")
    python.set_ylabel("tracked Python objects", color="C2")


def save(document: dict, out: str) -> tuple[str, str]:
    """soak.json and soak.png into `out`; their paths."""
    os.makedirs(out, exist_ok=True)
    json_path, png_path = os.path.join(out, "soak.json"), os.path.join(out, "soak.png")

    def write_json(temporary: str) -> None:
        with open(temporary, "w") as file:
            json.dump(document, file, indent=1)
            file.write("\n")

    write_atomically(json_path, write_json)
    plot(document, png_path)
    return json_path, png_path


def print_summary(document: dict) -> None:
    print(
        f"{'model':8} {'start':>7} {'warm':>7} {'end':>7} {'KiB/1000 steps':>15} "
        f"{'steps/s':>8}  verdict   (RSS in MiB)"
    )
    for name, model in document["models"].items():
        summary = model["summary"]
        print(
            f"{name:8} {summary['rss_start_mib']:7.1f} {summary['rss_after_warmup_mib']:7.1f} "
            f"{summary['rss_end_mib']:7.1f} {summary['slope_kib_per_1000_steps']:+15.1f} "
            f"{model['steps_per_second']:8.1f}  {summary['verdict']}"
        )
        for problem in summary["problems"]:
            print(f"    {problem}")


def parse_arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--steps", type=int, help=f"steps per model ({STEPS}; --quick {QUICK_STEPS})"
    )
    parser.add_argument(
        "--models", default=",".join(MODELS), help="comma-separated, of: " + ", ".join(MODELS)
    )
    parser.add_argument(
        "--every", type=int, help=f"steps between RSS samples ({EVERY}; --quick {QUICK_EVERY})"
    )
    parser.add_argument("--quick", action="store_true", help="a short run, into runs/soak/")
    parser.add_argument("--out", help="folder for soak.json and soak.png (benchmarks/)")
    parser.add_argument("--child", choices=MODELS, help=argparse.SUPPRESS)
    arguments = parser.parse_args(argv)
    arguments.steps = arguments.steps or (QUICK_STEPS if arguments.quick else STEPS)
    arguments.every = arguments.every or (QUICK_EVERY if arguments.quick else EVERY)
    quick_out = os.path.join(ROOT, "runs", "soak")
    arguments.out = arguments.out or (quick_out if arguments.quick else os.path.dirname(__file__))
    arguments.models = [name.strip() for name in arguments.models.split(",") if name.strip()]
    unknown = [name for name in arguments.models if name not in MODELS]
    if unknown:
        parser.error(f"--models: no model {', '.join(unknown)}; of: {', '.join(MODELS)}")
    return arguments


def main(argv: list[str]) -> int:
    arguments = parse_arguments(argv)
    if arguments.child:  # in the model's fresh process: the samples, as one line of JSON
        print(json.dumps(soak_in_process(arguments.child, arguments.steps, arguments.every)))
        return 0
    records = {
        name: soak_in_fresh_process(name, arguments.steps, arguments.every)
        for name in arguments.models
    }
    document = report(records, arguments.steps, arguments.every)
    print_summary(document)
    print("wrote", *save(document, arguments.out))
    return 0 if document["verdict"] == "flat" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

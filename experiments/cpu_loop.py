"""The CPU loop's accuracy over repeated runs: tpsim bench -> calibrate -> run -> compare on gloo ranks.

What it shows: how close the calibrated loopback model predicts the end-to-end time of four schedules
run for real on this host's CPU ranks (targets: within 15% of the measured median for the 4-rank
schedules, 25% for the 8-rank ones), and how much the measurements themselves spread.

Each loop benchmarks the host with the ranks the schedules use (``tpsim bench --nproc 4`` and ``8``,
the collective kinds, group sizes, message sizes and gemm shapes the schedules issue, every rank busy
and each collective after a gemm, as in a schedule: ``--form interleaved``), calibrates ``loopback:4``
and ``loopback:8`` from the benches, then runs each schedule ``--runs`` times (``tpsim run``, median
of ``--iters`` timed iterations each) and compares (``tpsim compare``). Every bench and run waits until the host is idle and is repeated (up to
``--retries`` times) if other people's processes kept more than ``--max-foreign-cores`` cores busy
while it ran (``experiments.quiet_host``, which says every 10 s what it waits for). A line on stderr
every 10 s counts the measurements done and names the one running (``simulator.progress``).

Output: ``OUT/cpu_loop.csv`` (one row per loop and schedule: measured median, min, max, predicted,
relative error, target, foreign load) and the table printed at the end: per schedule the median over
all runs, its spread, the predictions of the loops and the error of their median. The workload is
fixed (gemm M = K = N = 1024, float32, forward + backward) and so is everything else; only the
machine's timing varies.

    python -m experiments.cpu_loop [--loops 3] [--runs 5] [--out experiments/out/cpu_loop] [--quick]

``--quick`` writes to a temporary folder unless ``--out`` is given (``experiments.outputs``).
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import os
import statistics
import subprocess
import sys

from experiments.outputs import OUT, default_folder
from experiments.quiet_host import ForeignLoad, wait_until_quiet
from simulator.commands.schedule_args import add_schedule_arguments, schedule_from_args
from simulator.ir.ops import Gemm
from simulator.progress import Progress

log = logging.getLogger("cpu_loop")

WORKLOAD = ("--workload", "gemm", "--m", "1024", "--k", "1024", "--n", "1024", "--dtype", "float32")
SCHEDULES = (  # name, ranks, generator arguments, target |relative error| of the median
    ("1d [4]", 4, ("--algo", "1d", "--gpus", "4"), 0.15),
    ("2d [2,2,1]", 4, ("--algo", "2d", "--grid", "2,2,1"), 0.15),
    ("summa25d [2,2,2]", 8, ("--algo", "summa25d", "--grid", "2,2,2"), 0.25),
    ("cannon25d [2,2,2]", 8, ("--algo", "cannon25d", "--grid", "2,2,2"), 0.25),
)
BENCH = {  # ranks -> the communication ops the schedules on that many ranks issue (and gemm), their group sizes
    4: ("broadcast,reduce,all_reduce,send,gemm", "2,4"),
    8: ("broadcast,reduce,all_reduce,send,gemm", "2"),
}
BENCH_SIZES = "256KiB:4MiB"
FIELDS = ("loop", "schedule", "ranks", "runs", "measured_median_s", "measured_min_s", "measured_max_s",
          "predicted_s", "rel_error", "target", "within", "foreign_cores_max")


def tpsim(*args: str) -> str:
    """Run ``tpsim ARGS`` in a subprocess; its stdout (CalledProcessError with stderr if it fails)."""
    done = subprocess.run([sys.executable, "-m", "simulator.cli", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"tpsim {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout


def gemm_shapes(ranks: int) -> str:
    """Every gemm shape the schedules on ``ranks`` ranks issue, as --gemm-shapes wants them."""
    shapes = set()
    for _, n, generator, _ in SCHEDULES:
        if n != ranks:
            continue
        parser = argparse.ArgumentParser()
        add_schedule_arguments(parser)
        schedule = schedule_from_args(parser.parse_args([*generator, *WORKLOAD]))
        for rank, program in enumerate(schedule.programs):
            shapes |= {schedule.gemm_shape(rank, op) for op in program if isinstance(op, Gemm)}
    return ",".join(f"{m}x{k}x{n}" for m, k, n in sorted(shapes))


def measured(what: str, args: list[str], settings, progress: Progress | None = None) -> tuple[str, float]:
    """Run ``tpsim args`` on a quiet host, again if others disturbed it; (stdout, foreign cores). Counts
    one measurement on ``progress`` and names it there while it runs."""
    if progress is not None:
        progress.phase(what)
    for attempt in range(settings.retries + 1):
        wait_until_quiet(settings.quiet_cores)
        with ForeignLoad() as load:
            out = tpsim(*args)
        if load.cores <= settings.max_foreign_cores:
            break
        log.info("%s: others kept %.2f cores busy; %s", what, load.cores,
                 "measuring again" if attempt < settings.retries else "keeping it")
    if progress is not None:
        progress.update()
    return out, load.cores


def one_loop(index: int, settings, folder: str, progress: Progress | None = None) -> list[dict]:
    """Bench, calibrate, run and compare every schedule once; one CSV row per schedule."""
    topologies = {}
    for ranks in sorted({n for _, n, _, _ in SCHEDULES}):
        bench = os.path.join(folder, f"loop{index}-bench{ranks}.json")
        ops, group_sizes = BENCH[ranks]
        measured(f"bench {ranks}", ["bench", "--backend", "gloo", "--nproc", str(ranks), "--ops", ops,
                                    "--group-sizes", group_sizes, "--sizes", settings.sizes, "--form", settings.form,
                                    "--warmup", "3", "--iters", str(settings.bench_iters),
                                    "--gemm-shapes", gemm_shapes(ranks), "--out", bench], settings, progress)
        topologies[ranks] = os.path.join(folder, f"loop{index}-calibrated{ranks}.yaml")
        tpsim("calibrate", "--from-bench", bench, "--topology", f"loopback:{ranks}", "--protocol", "simple",
              "--no-holdout", "-o", topologies[ranks])
    rows = []
    for name, ranks, generator, target in SCHEDULES:
        times, files, foreign = [], [], []
        for run in range(settings.runs):
            path = os.path.join(folder, f"loop{index}-{generator[1]}{ranks}-run{run}.json")
            _, cores = measured(f"{name} run {run}", ["run", *generator, *WORKLOAD, "--backend", "gloo", "--nproc",
                                                      str(ranks), "--warmup", "1", "--iters", str(settings.iters),
                                                      "--out", path], settings, progress)
            with open(path) as handle:
                times.append(json.load(handle)["time_s"])
            files.append(path)
            foreign.append(cores)
        # The prediction depends on the schedule and the topology only: any of the runs' files will do.
        comparison = json.loads(tpsim("compare", files[0], "--topology", topologies[ranks], "--json"))
        median = statistics.median(times)
        rel = comparison["predicted_s"] / median - 1
        rows.append({"loop": index, "schedule": name, "ranks": ranks, "runs": len(times),
                     "measured_median_s": median, "measured_min_s": min(times), "measured_max_s": max(times),
                     "predicted_s": comparison["predicted_s"], "rel_error": rel, "target": target,
                     "within": abs(rel) <= target, "foreign_cores_max": max(foreign), "times_s": times})
        log.info("loop %d %s: measured median %.4f s (%.4f..%.4f), predicted %.4f s, error %+.1f%%", index, name,
                 median, min(times), max(times), comparison["predicted_s"], 100 * rel)
    return rows


def summary(rows: list[dict]) -> list[str]:
    """The table: per schedule the median and spread of every loop's runs, the median of the loops'
    predictions, its error against that median, and each loop's own error."""
    lines = [f"{'schedule':<18} {'target':>6} {'runs':>5} {'measured median':>15} {'spread (min..max)':>19} "
             f"{'predicted':>10} {'error':>7}  per-loop errors"]
    for name, _, _, target in SCHEDULES:
        mine = [r for r in rows if r["schedule"] == name]
        if not mine:
            continue
        times = [t for r in mine for t in r["times_s"]]
        runs, measured_s, low, high = len(times), statistics.median(times), min(times), max(times)
        predicted_s = statistics.median(r["predicted_s"] for r in mine)
        errors = " ".join(f"{100 * r['rel_error']:+.1f}%" for r in mine)
        lines.append(f"{name:<18} {100 * target:>5.0f}% {runs:>5} {measured_s:>13.4f} s "
                     f"{low:>8.4f}..{high:.4f} s {predicted_s:>8.4f} s {100 * (predicted_s / measured_s - 1):>+6.1f}%"
                     f"  {errors}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loops", type=int, default=3, help="bench + calibrate + runs, this many times")
    parser.add_argument("--runs", type=int, default=5, help="tpsim run invocations per schedule per loop")
    parser.add_argument("--iters", type=int, default=5, help="timed iterations per run (median kept)")
    parser.add_argument("--bench-iters", type=int, default=10, help="timed ops per bench size")
    parser.add_argument("--sizes", default=BENCH_SIZES, help="bench message sizes")
    parser.add_argument("--form", choices=("interleaved", "lock-step"), default="interleaved",
                        help="how the bench times collectives (tpsim bench --form); default interleaved")
    parser.add_argument("--quiet-cores", type=float, default=0.1, help="start a measurement below this load")
    parser.add_argument("--max-foreign-cores", type=float, default=0.15,
                        help="measure again when others kept more cores busy than this")
    parser.add_argument("--retries", type=int, default=8, help="measurements again when disturbed")
    parser.add_argument("--out", help="folder to write (default experiments/out/cpu_loop; --quick: a temporary folder)")
    parser.add_argument("--quick", action="store_true", help="one loop, 2 runs, 2 iterations (a smoke run)")
    settings = parser.parse_args(argv)
    if settings.quick:
        settings.loops, settings.runs, settings.iters, settings.bench_iters = 1, 2, 2, 3
    if settings.out is None:
        settings.out = default_folder("cpu_loop", True) if settings.quick else os.path.join(OUT, "cpu_loop")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    os.makedirs(settings.out, exist_ok=True)
    rows = []
    csv_path = os.path.join(settings.out, "cpu_loop.csv")
    total = settings.loops * (len(BENCH) + len(SCHEDULES) * settings.runs)
    with Progress("experiments.cpu_loop", total=total, unit="measurement") as progress:
        for index in range(settings.loops):
            rows += one_loop(index, settings, settings.out, progress)
            with open(csv_path, "w", newline="") as handle:  # rewritten each loop: a stopped run keeps its rows
                writer = csv.DictWriter(handle, FIELDS, extrasaction="ignore")
                writer.writeheader()
                writer.writerows({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()}
                                 for r in rows)
    print("\n".join(summary(rows)))
    print(f"wrote {csv_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

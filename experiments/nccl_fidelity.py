"""Collective fidelity: tpsim against every published nccl-tests log in tests/data, before and after calibration.

What it shows: for each real log (``tests/data/nccl-tests/*/``, each folder's README names its source and
licence) the error of ``tpsim collective --compare`` on the matching preset, once with the preset as
published and once with a calibration profile fitted on the *same cluster's other runs*, never on the log
itself:

- a cluster with runs on fewer GPUs (Azure ND A100 v4: 2 .. 128 GPUs): fitted on its logs with fewer
  GPUs than this one, only the multi-server ones for a multi-server log where there are some (they cross
  the same fabric; ``tpsim calibrate --topology dgx-a100`` grows the base to the largest), carried with
  ``--calibration``; its smallest log has none and shows "-";
- a cluster with two runs of one test (the two H200 logs): fitted on the other run;
- a cluster with one run per test (SuperBench's five 8-GPU logs): fitted on the other four tests, the
  held-out test's bytes factor staying 1 (``--no-kind-factors``);
- a cluster with one run (Nebius H100, Lambda and Google Cloud B200, two servers each): none, "-".

Sizes below and from 1 MiB are summarised apart, per log and over all logs: the geometric-mean error
``exp(mean |ln(predicted / measured)|) - 1`` (a symmetric measure: 2x too slow and 2x too fast are
both 100%) and the largest error in the same measure, ``exp(max |ln(predicted / measured)|) - 1``.
Then the issue's targets, each met or not: from 1 MiB, geomean <= 10% and no point over 25% with the
presets, <= 5% geomean calibrated; below 1 MiB, geomean <= 25% with the presets; and every point from
1 MiB over 25% with the presets, per log (size and error), which docs/fidelity.md explains point by point.
The preset is picked from the log's device and rank count (A100-SXM4-40GB -> dgx-a100, H100 -> dgx-h100,
H200 -> dgx-h200, B200 -> dgx-b200; ranks / 8 servers); logs copied from web pages list no device, and
``UNLISTED_DEVICES`` names it from the folder's README.

Every number comes from ``tpsim collective --compare LOG --json`` and ``tpsim calibrate
--from-nccl-tests ... --profile P --json`` run in this process (profiles in a temporary folder). Fixed
inputs; the fit is deterministic on one machine. ``--quick`` (under 30 s): three logs, one per source.
It runs on whatever collective algorithms the simulator has: rerun it after they change.

    python -m experiments.nccl_fidelity [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import tempfile
from dataclasses import dataclass
from pathlib import Path

from simulator.calibrate.nccl_tests import parse_nccl_tests
from simulator.cli import main as tpsim
from simulator.progress import Progress
from simulator.sizes import format_size

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "nccl-tests"
MIB = 1 << 20
FIT_MIN = "1MiB"
"""The calibrations' fit floor: ``tpsim calibrate``'s own default for nccl-tests logs (``--fit-min-bytes``)."""
PRESETS = (("A100-SXM4-40GB", "dgx-a100"), ("H100", "dgx-h100"), ("H200", "dgx-h200"), ("B200", "dgx-b200"))
UNLISTED_DEVICES = {"nebius-h100": "H100", "lambda-b200": "B200", "gcp-a4-b200": "B200"}
"""The GPU of the clusters whose logs list no devices (copied from web pages; each folder's README names it)."""
QUICK = ("azure-ndv4-a100/all_reduce_perf_16gpu.log", "superbench-a100/nccl_allreduce.log",
         "gcp-a3ultra-h200/all_gather_perf_16gpu_gcp.log")
TARGETS = ("from 1 MiB, presets: geomean <= 10%", "from 1 MiB, presets: every point <= 25%",
           "from 1 MiB, calibrated: geomean <= 5%", "below 1 MiB, presets: geomean <= 25%")


@dataclass(frozen=True)
class Log:
    """One published log: where it is, what it ran, the preset that models it."""

    path: Path
    cluster: str
    op: str
    ranks: int
    topology: str

    @property
    def name(self) -> str:
        return f"{self.cluster}/{self.path.name}"


def load_logs(quick: bool) -> list[Log]:
    """Every log under tests/data/nccl-tests (the three ``QUICK`` ones with ``quick``), sorted."""
    logs = []
    for path in sorted(DATA.glob("*/*.log")):
        if quick and f"{path.parent.name}/{path.name}" not in QUICK:
            continue
        parsed = parse_nccl_tests(str(path))
        device = parsed.device or UNLISTED_DEVICES[path.parent.name]
        family = next(preset for name, preset in PRESETS if name in device)
        servers = -(-parsed.n_ranks // 8)
        logs.append(Log(path, path.parent.name, parsed.op, parsed.n_ranks,
                        family if servers == 1 else f"{family}:{servers}"))
    return sorted(logs, key=lambda log: (log.cluster, log.ranks, log.op, log.path.name))


def _tpsim(args: list[str]):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = tpsim(args)
    if status != 0:
        raise SystemExit(f"tpsim {' '.join(args)} exited with status {status}")
    return json.loads(out.getvalue())


def compare(log: Log, profile: str | None = None) -> dict[int, tuple[float, float]]:
    """size -> (measured s, predicted s) of ``tpsim collective --compare`` on the log's preset."""
    extra = ["--calibration", profile] if profile else []
    rows = _tpsim(["collective", "--compare", str(log.path), "--topology", log.topology, "--json", *extra])
    return {row["bytes"]: (row["measured_time_s"], row["time_s"]) for row in rows}


def training_set(log: Log, logs: list[Log]) -> tuple[list[Log], list[str], str]:
    """The same cluster's other runs this log's calibration is fitted on, extra calibrate flags, and how."""
    cluster = [other for other in logs if other.cluster == log.cluster and other.path != log.path]
    smaller = [other for other in cluster if other.ranks < log.ranks]
    if any(other.ranks != log.ranks for other in cluster):
        # A multi-server run is fitted on the smaller multi-server runs where there are some: they cross the
        # same fabric, and single-server runs would pull the shared terms (base latency, start-up) their way.
        across = [other for other in smaller if other.ranks > 8] if log.ranks > 8 else []
        return across or smaller, [], "fewer GPUs"
    same_op = [other for other in cluster if other.op == log.op]
    if same_op:
        return same_op, [], "other run"
    return cluster, ["--no-kind-factors"], "other tests"


def calibrated(log: Log, logs: list[Log], folder: str, fit_min: str) -> tuple[dict | None, str]:
    """The compare rows with a profile fitted on ``training_set``; (None, why) where there is none."""
    train, extra, how = training_set(log, logs)
    if not train:
        alone = all(other.cluster != log.cluster or other.path == log.path for other in logs)
        return None, "no other run" if alone else "no smaller run"
    profile = str(Path(folder) / f"{log.cluster}-{log.path.stem}.yaml")
    family = log.topology.partition(":")[0]
    _tpsim(["calibrate", "--from-nccl-tests", *[str(t.path) for t in train], "--topology", family, "--no-holdout",
            "--fit-min-bytes", fit_min, "-o", str(Path(folder) / "topology.yaml"), "--profile", profile, "--json",
            *extra])
    fitted_on = ", ".join(sorted({f"{t.ranks}" for t in train}, key=int)) + " GPUs" if how == "fewer GPUs" else how
    return compare(log, profile), fitted_on


def errors(rows: dict, small: bool) -> list[float]:
    """ln(predicted / measured) of the sizes below (``small``) or from 1 MiB; size-0 rows are left out."""
    return [math.log(p / m) for size, (m, p) in sorted(rows.items()) if size > 0 and (size < MIB) == small]


def geomean(logs_: list[float]) -> float:
    return math.exp(sum(abs(e) for e in logs_) / len(logs_)) - 1 if logs_ else float("nan")


def worst(logs_: list[float]) -> float:
    return math.exp(max(abs(e) for e in logs_)) - 1 if logs_ else float("nan")


def _cell(logs_: list[float]) -> str:
    return f"{geomean(logs_):.1%} / {worst(logs_):.1%}" if logs_ else "-"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m experiments.nccl_fidelity", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="three logs, one per source (under 30 s)")
    parser.add_argument("--fit-min-bytes", default=FIT_MIN, metavar="SIZE",
                        help=f"the calibrations fit sizes from SIZE (default {FIT_MIN}, calibrate's own; 0 fits the "
                             f"small-message regime too, at some cost from 1 MiB)")
    args = parser.parse_args(argv)
    logs = load_logs(args.quick)
    table, totals = [], {"default-large": [], "default-small": [], "calibrated-large": [], "calibrated-small": []}
    with tempfile.TemporaryDirectory() as folder, Progress("experiments.nccl_fidelity", total=len(logs),
                                                            unit="log") as progress:
        for log in logs:
            default = compare(log)
            after, fitted_on = calibrated(log, logs if not args.quick else load_logs(False), folder,
                                          args.fit_min_bytes)
            row = {"default-large": errors(default, False), "default-small": errors(default, True),
                   "calibrated-large": errors(after, False) if after else [],
                   "calibrated-small": errors(after, True) if after else []}
            for key, values in row.items():
                totals[key] += values
            table.append((log, row, fitted_on, default))
            progress.update()
    print("| log | test | GPUs | preset | < 1 MiB: preset | >= 1 MiB: preset | calibrated on | < 1 MiB: calibrated "
          "| >= 1 MiB: calibrated |")
    print("|---|---|---|---|---|---|---|---|---|")
    for log, row, fitted_on, _ in table:
        print(f"| {log.name} | {log.op} | {log.ranks} | {log.topology} | {_cell(row['default-small'])} | "
              f"{_cell(row['default-large'])} | {fitted_on} | {_cell(row['calibrated-small'])} | "
              f"{_cell(row['calibrated-large'])} |")
    print(f"| all {len(table)} logs | | | | {_cell(totals['default-small'])} | {_cell(totals['default-large'])} | | "
          f"{_cell(totals['calibrated-small'])} | {_cell(totals['calibrated-large'])} |")
    print("\ncells: geomean error / largest error over the log's sizes in that range")
    met = (geomean(totals["default-large"]) <= 0.10, worst(totals["default-large"]) <= 0.25,
           geomean(totals["calibrated-large"]) <= 0.05, geomean(totals["default-small"]) <= 0.25)
    for target, ok in zip(TARGETS, met):
        print(f"target {target}: {'met' if ok else 'NOT met'}")
    over = {log.name: [(size, math.log(p / m)) for size, (m, p) in sorted(default.items())
                       if size >= MIB and abs(math.log(p / m)) > math.log(1.25)] for log, _, _, default in table}
    print(f"points from 1 MiB over 25% with the presets: {sum(map(len, over.values()))} of "
          f"{len(totals['default-large'])}")
    print("  (each as the cells measure it, signed: - predicted faster than measured, + slower)")
    for name, points in over.items():  # each such point, so that the README can say per point why
        if points:
            print(f"  {name}: {', '.join(f'{format_size(size)} {_signed(error)}' for size, error in points)}")


def _signed(error: float) -> str:
    """``exp(|error|) - 1`` with the sign of ``error`` (ln(predicted / measured)): -25% is 1.25x too fast."""
    return f"{'-' if error < 0 else '+'}{math.exp(abs(error)) - 1:.0%}"


if __name__ == "__main__":
    main()

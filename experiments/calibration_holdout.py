"""Calibration on real nccl-tests logs: the error on what the fit did not see, for five held-out sets.

What it shows: ``tpsim calibrate --from-nccl-tests`` fits the ``dgx-a100`` preset to all_reduce on 2, 4
and 8 A100 SXM4 GPUs (``tests/data/nccl-tests/azure-ndv4-a100``, sizes of 1 MiB and more) and reports
its error on held-out size buckets. This script runs the command once per held-out set and prints the
largest |error| on the held-out buckets of at least 1 MiB. ``tests/simulator/test_calibrate_nccl.py``
holds the first three rows at 10%.

Every number comes from ``tpsim calibrate ... --json`` (run in this process through
``simulator.cli.main``; the calibrated topology files go to a temporary folder). Fixed inputs; the fit
(``scipy.optimize.least_squares``) is deterministic on one machine, and its last digits may differ on
another. About 10 s.

    python -m experiments.calibration_holdout
"""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from pathlib import Path

from simulator.cli import main as tpsim
from simulator.progress import Progress

LOGS = Path(__file__).resolve().parents[1] / "tests" / "data" / "nccl-tests" / "azure-ndv4-a100"
MIB = 1 << 20
HOLDOUTS = (
    ("the whole 4-GPU log and every other size of the 2- and 8-GPU logs",
     ["--holdout-ranks", "4", "--holdout-sizes", "alternate"]),
    ("every other size of every log (the default)", []),
    ("4 MiB and 64 MiB everywhere", ["--holdout-sizes", "4MiB,64MiB"]),
    ("extrapolating to the 2-GPU log", ["--holdout-ranks", "2"]),
    ("extrapolating to the 8-GPU log", ["--holdout-ranks", "8"]),
)


def held_out_error(extra: list[str], out_dir: str) -> tuple[float, int]:
    """The largest |error| over held-out buckets of 1 MiB and more, and how many there were."""
    out = io.StringIO()
    args = ["calibrate", "--from-nccl-tests", *(str(LOGS / f"all_reduce_perf_{n}gpu.log") for n in (2, 4, 8)),
            "--topology", "dgx-a100", "-o", str(Path(out_dir) / "calibrated.yaml"), *extra, "--json"]
    with contextlib.redirect_stdout(out):
        status = tpsim(args)
    if status != 0:
        raise SystemExit(f"tpsim {' '.join(args)} exited with status {status}")
    rows = [row for row in json.loads(out.getvalue())["holdout_rows"] if row["nbytes"] >= MIB]
    return max(abs(row["rel_error"]) for row in rows), len(rows)


def main() -> None:
    print("| held out | max \\|error\\| | buckets |")
    print("|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp, Progress("experiments.calibration_holdout", total=len(HOLDOUTS),
                                                       unit="held-out set") as progress:
        for name, extra in HOLDOUTS:
            error, buckets = held_out_error(extra, tmp)
            print(f"| {name} | {error:.1%} | {buckets} |", flush=True)
            progress.update()


if __name__ == "__main__":
    main()

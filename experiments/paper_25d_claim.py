"""The SUMMA2.5 paper's claim, [4,4,4] against [8,8,1] on 64 GPUs, as tpsim predicts it.

What it shows: the SUMMA2.5 (Tesseract) paper reports 1.45x better weak scaling for a [4,4,4] grid than
for [8,8,1] on 64 GPUs. This script prints tpsim's ratio time([8,8,1]) / time([4,4,4]) for summa25d at
P = 64 (mlp, forward + backward, bfloat16) on two 64-GPU machines, ``a100-4gpu:16`` and ``dgx-a100:8``,
for six token counts M and hidden sizes h, under linear placement (the first table) and depth-major
placement (the second). It also names the fastest summa25d grid of each case, which shows where depth
stops paying: when everything is communication-bound, [2,2,16] or [1,1,64] beat both grids. These are
fixed-P comparisons, not the paper's weak-scaling series.

Every number comes from the ``tpsim predict`` command line (run in this process through
``simulator.cli.main``, ``--algos summa25d --json``): one predict per machine, case and placement,
each simulating every summa25d grid of 64 GPUs. Fixed inputs, no randomness: the output is the same on
every machine. About 20-40 s; a line on stderr every 10 s counts the predicts done.

    python -m experiments.paper_25d_claim [--csv FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json

from simulator.cli import main as tpsim
from simulator.progress import Progress

GPUS = 64
TOPOLOGIES = ("a100-4gpu:16", "dgx-a100:8")
PLACEMENTS = ("linear", "depth-major")
GRIDS = ((1, 1, 64), (2, 2, 16), (4, 4, 4), (8, 8, 1))  # every summa25d grid of 64 GPUs
CASES = ((16384, 2048), (32768, 4096), (65536, 4096), (65536, 8192), (131072, 8192), (262144, 16384))


def _name(grid: tuple[int, ...]) -> str:
    return "x".join(map(str, grid))


def predict(topology: str, m: int, hidden: int, placement: str) -> dict[tuple[int, ...], dict]:
    """`tpsim predict --algos summa25d --json` for one case: grid -> its ranked row."""
    out = io.StringIO()
    args = ["predict", "--gpus", str(GPUS), "--topology", topology, "--workload", "mlp", "--m", str(m),
            "--hidden", str(hidden), "--dtype", "bfloat16", "--pass", "both", "--algos", "summa25d",
            "--placement", placement, "--no-prune", "--json"]
    with contextlib.redirect_stdout(out):
        status = tpsim(args)
    if status != 0:
        raise SystemExit(f"tpsim {' '.join(args)} exited with status {status}")
    return {tuple(row["grid"]): row for row in json.loads(out.getvalue()) if row["status"] == "ok"}


def measure() -> list[dict]:
    """One row per (M, h, topology, placement): every summa25d grid's time, the ratio, the fastest grid."""
    rows = []
    progress = Progress("experiments.paper_25d_claim", total=len(CASES) * len(TOPOLOGIES) * len(PLACEMENTS),
                        unit="predict")
    with progress:
        for m, hidden in CASES:
            for topology in TOPOLOGIES:
                for placement in PLACEMENTS:
                    rows.append(_row(topology, m, hidden, placement))
                    progress.update()
    return rows


def _row(topology: str, m: int, hidden: int, placement: str) -> dict:
    """One case's row: every summa25d grid's time, [8,8,1] / [4,4,4], [4,4,4]'s compute, the fastest grid."""
    grids = predict(topology, m, hidden, placement)
    best = min(grids.values(), key=lambda row: row["time_s"])
    row = {"m": m, "hidden": hidden, "topology": topology, "placement": placement}
    row.update({f"time_{_name(grid)}_s": grids[grid]["time_s"] for grid in GRIDS})
    row["ratio_881_over_444"] = grids[(8, 8, 1)]["time_s"] / grids[(4, 4, 4)]["time_s"]
    row["compute_444_s"] = grids[(4, 4, 4)]["compute_s"]
    row["fastest"] = _name(tuple(best["grid"]))
    return row


def table(rows: list[dict], placement: str) -> str:
    """The markdown table of [8,8,1] / [4,4,4] ratios for one placement, one column per topology."""
    lines = ["| M | h | " + " | ".join(TOPOLOGIES) + " |", "|---|---|" + "---|" * len(TOPOLOGIES)]
    for m, hidden in CASES:
        cells = [f"{row['ratio_881_over_444']:.2f}x" for topology in TOPOLOGIES for row in rows
                 if (row["m"], row["hidden"], row["topology"], row["placement"]) == (m, hidden, topology, placement)]
        lines.append(f"| {m} | {hidden} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def fastest(rows: list[dict]) -> str:
    """Per case and topology (linear placement): every summa25d grid's time, the fastest, [4,4,4]'s compute."""
    grids = [_name(grid) for grid in GRIDS]
    lines = ["| M | h | topology | " + " | ".join(f"[{g.replace('x', ',')}]" for g in grids)
             + " | fastest | [4,4,4] compute/rank |", "|---|---|---|" + "---|" * (len(grids) + 2)]
    for row in rows:
        if row["placement"] == "linear":
            times = " | ".join(f"{row[f'time_{g}_s'] * 1e3:.3f} ms" for g in grids)
            lines.append(f"| {row['m']} | {row['hidden']} | {row['topology']} | {times} | "
                         f"[{row['fastest'].replace('x', ',')}] | {row['compute_444_s'] * 1e3:.3f} ms |")
    return "\n".join(lines)


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", metavar="FILE", help="also write every row as CSV")
    args = parser.parse_args()
    rows = measure()
    print("[8,8,1] / [4,4,4], summa25d mlp fwd+bwd bfloat16, P = 64, linear placement:\n")
    print(table(rows, "linear"))
    print("\nthe same, depth-major placement:\n")
    print(table(rows, "depth-major"))
    print("\nevery summa25d grid, linear placement (time: simulated makespan):\n")
    print(fastest(rows))
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        print(f"\nwrote {args.csv}")


if __name__ == "__main__":
    cli()

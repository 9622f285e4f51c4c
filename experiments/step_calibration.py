"""Does one measured step predict the others? ``tpsim calibrate --from-steps`` on the published training tables.

What it shows: a practitioner who measured one step of their own job hands it to ``tpsim calibrate
--from-steps``, which fits the device's ``gemm_efficiency`` (``simulator.calibrate.from_steps``). Here the
"measurements" are published rows, grouped by the GPU they ran on, each group one device as the fit is:

- ``llm-foundry H100 80GB``, ``A100 80GB``, ``A100 40GB``: MosaicML llm-foundry's FSDP rows
  (``experiments.fsdp_tables.MOSAICML``, tokens/s per GPU), each row's ``tpsim predict`` line the one
  ``experiments.repro_fsdp.command`` builds (torchtitan's two rows, on 500 W H100s, are left out);
- ``Megatron A100 80GB``: Narayanan et al. 2021 Table 1 (TFLOP/s per GPU, turned into seconds per step by
  the paper's own FLOP count, 96 B s l h^2 (1 + s / 6h + V / 16 l h), over the GPUs) and Korthikanti et al.
  2022 Table 5 (seconds per iteration) (``experiments.pipeline_tables``), each line
  ``experiments.repro_pipeline.command``'s (Table 1's micro-batch, which the paper does not give, is
  searched at each efficiency as `tpsim predict` searches it).

The rule, fixed before looking: each group is fitted on its FIRST row in table order (the fit's one-entry
root), and every other row of the group is predicted at that value: held-out error against the
uncalibrated error of the same rows. Then the same for every row in turn ("fit on each row, predict the
rest"): the spread of the held-out geomeans says how much the choice of the measured row matters. Last,
the fit on all rows of the group (in sample): the best one scalar can do. Errors are predicted / measured
step time - 1; geomean |error| is exp(mean |log ratio|) - 1.

Writes one CSV row per published row (``CSV_FIELDS``) and prints the summary table.
Deterministic. ``--quick`` (the CI smoke test): the first three rows of each group (Table 1's without
pipelines), to a temporary folder unless ``--csv`` is given (``experiments.outputs``).

    python -m experiments.step_calibration [--quick] [--csv FILE]
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import shlex
import statistics
import sys
from dataclasses import dataclass

from experiments import repro_fsdp, repro_pipeline
from experiments.fsdp_tables import MOSAICML
from experiments.outputs import default_folder
from experiments.pipeline_tables import KORTHIKANTI_TABLE5, NARAYANAN_TABLE1, SEQ, VOCAB, PipelineRun
from simulator.calibrate.from_steps import fit_efficiency, geomean_error
from simulator.calibrate.step_timing import TimedEntry, timed_entry
from simulator.calibrate.steps_file import StepEntry
from simulator.files import replacing
from topologies import load_topology

__all__ = ["GROUPS", "Group", "entries", "timed_group", "group_result", "narayanan_step_s", "cli"]

NAME = "step_calibration"
QUICK_ROWS = 3
CSV_FIELDS = ("group", "row", "measured_s", "uncalibrated_s", "first_fit_s", "all_fit_s", "own_efficiency",
              "own_at_bound", "own_held_geomean", "own_held_largest", "uncalibrated_others_geomean")
"""Per row: measured, predicted uncalibrated, at the group's first-row fit and at its all-row fit, and the
fit on this row alone (its gemm_efficiency, whether at a bound, the held-out geomean and largest error of
the group's other rows at it, and those rows' uncalibrated geomean)."""


@dataclass(frozen=True)
class Group:
    """One device's published rows: a name, the base preset (each entry names its own size), the entries."""

    name: str
    base: str
    runs: tuple


def narayanan_step_s(run: PipelineRun) -> float:
    """Seconds per step implied by a Table 1 row: the paper's FLOP count (section 5.1) over its TFLOP/s x GPUs."""
    B, s, l, h, V = run.global_batch, SEQ, run.layers, run.hidden, VOCAB
    flops = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h))
    return flops / (run.tflops_per_gpu * 1e12 * run.gpus)


GROUPS = tuple(Group(f"llm-foundry {label}", repro_fsdp.PRESETS[device],
                     tuple(r for r in MOSAICML if r.device == device))
               for device, label in (("h100_80gb", "H100 80GB"), ("a100_80gb", "A100 80GB"),
                                     ("a100_40gb", "A100 40GB"))) + (
    Group("Megatron A100 80GB", repro_pipeline.PRESET, NARAYANAN_TABLE1 + KORTHIKANTI_TABLE5),)
"""The four groups, each one GPU kind, rows in table order."""


def _entry(run, index: int) -> StepEntry:
    if isinstance(run, PipelineRun):
        argv = repro_pipeline.command(run)
        table = "Table 1" if run in NARAYANAN_TABLE1 else "Table 5"
        name = f"{run.name} ({table})"
        measure, value = "step_s", run.step_s if run.step_s is not None else narayanan_step_s(run)
    else:
        argv = repro_fsdp.command(run)
        name = f"mpt-{run.model} seq {run.seq} on {run.gpus}"
        measure, value = "tokens_per_s_per_gpu", float(run.tokens_per_s_per_gpu)
    return StepEntry(index, name, shlex.join(argv[1:]), measure, value, NAME)


def entries(group: Group, quick: bool = False) -> list[StepEntry]:
    """The group's rows as steps-file entries (``--quick``: the first ``QUICK_ROWS``, Table 1's without pipelines)."""
    runs = [r for r in group.runs if not quick or not isinstance(r, PipelineRun) or r.pp == 1]
    return [_entry(run, i) for i, run in enumerate(runs[:QUICK_ROWS] if quick else runs, 1)]


def timed_group(group: Group, quick: bool = False) -> list[TimedEntry]:
    """Every entry of ``group`` ready to time on its base preset."""
    base = load_topology(group.base)
    return [timed_entry(e, base, group.base, None) for e in entries(group, quick)]


def group_result(group: Group, quick: bool = False) -> tuple[list[dict], dict]:
    """(CSV rows, summary) of ``group``: fitted on each row in turn (the first is the stated rule), and on all."""
    timed = timed_group(group, quick)
    uncal = [t.step_s(None) / t.measured_s for t in timed]
    e_all, _, _ = fit_efficiency(timed)
    rows, first = [], None
    for i, t in enumerate(timed):
        e, _, at_bound = fit_efficiency([t])
        first = first or (e, at_bound)
        held = [o.step_s(e) / o.measured_s for o in timed if o is not t]
        rows.append({"group": group.name, "row": t.entry.label, "measured_s": t.measured_s,
                     "uncalibrated_s": t.step_s(None), "first_fit_s": None, "all_fit_s": t.step_s(e_all),
                     "own_efficiency": e, "own_at_bound": bool(at_bound), "own_held_geomean": geomean_error(held),
                     "own_held_largest": max(held, key=lambda r: abs(math.log(r))) - 1,
                     "uncalibrated_others_geomean": geomean_error(uncal[:i] + uncal[i + 1:])})
    for row, t in zip(rows, timed):
        row["first_fit_s"] = t.step_s(first[0])
    held_geomeans = [r["own_held_geomean"] for r in rows]
    summary = {
        "group": group.name, "rows": len(timed), "base_cap": timed[0].base_cap(),
        "uncalibrated": geomean_error(uncal), "uncalibrated_worst": max(uncal, key=lambda r: abs(math.log(r))) - 1,
        "first_row": rows[0]["row"], "first_efficiency": first[0], "first_at_bound": first[1],
        "first_held": rows[0]["own_held_geomean"], "first_held_worst": rows[0]["own_held_largest"],
        "first_held_uncalibrated": rows[0]["uncalibrated_others_geomean"],
        "each_min": min(held_geomeans), "each_median": statistics.median(held_geomeans), "each_max": max(held_geomeans),
        "each_better": sum(r["own_held_geomean"] < r["uncalibrated_others_geomean"] for r in rows),
        "all_efficiency": e_all, "all_geomean": geomean_error(r["all_fit_s"] / r["measured_s"] for r in rows),
    }
    return rows, summary


def table_lines(summaries: list[dict]) -> list[str]:
    """The summary as a Markdown table (experiments/README.md)."""
    lines = ["| group | rows | base cap | uncalibrated geomean (largest) | fit on first row: e | held out geomean "
             "(largest) [same rows uncalibrated] | each row in turn: held-out geomean min / median / max "
             "(better than uncalibrated) | fit on all: e, geomean |", "|---|---|---|---|---|---|---|---|"]
    for s in summaries:
        lines.append(
            f"| {s['group']} | {s['rows']} | {s['base_cap']:.3f} | {s['uncalibrated']:.1%} "
            f"({s['uncalibrated_worst']:+.1%}) | {s['first_efficiency']:.3f}{' (at bound)' if s['first_at_bound'] else ''}"
            f" | {s['first_held']:.1%} ({s['first_held_worst']:+.1%}) [{s['first_held_uncalibrated']:.1%}] | "
            f"{s['each_min']:.1%} / {s['each_median']:.1%} / {s['each_max']:.1%} ({s['each_better']} of {s['rows']}) "
            f"| {s['all_efficiency']:.3f}, {s['all_geomean']:.1%} |")
    return lines


def _write_csv(path: str, rows: list[dict]) -> None:
    with replacing(path) as tmp, open(tmp, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_FIELDS)
        writer.writeheader()
        writer.writerows(rows)


def cli(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog=f"python -m experiments.{NAME}", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"the first {QUICK_ROWS} rows of each group")
    parser.add_argument("--csv", metavar="FILE", help=f"default experiments/out/{NAME}.csv (--quick: a temporary "
                                                      f"folder)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    path = args.csv or os.path.join(default_folder(NAME, args.quick), f"{NAME}.csv")
    rows, summaries = [], []
    for group in GROUPS:
        group_rows, summary = group_result(group, args.quick)
        rows += group_rows
        summaries.append(summary)
        print(f"{group.name}: {summary['rows']} rows fitted", file=sys.stderr)
    _write_csv(path, rows)
    print("\n".join(table_lines(summaries)))
    print(f"wrote {path}")


if __name__ == "__main__":
    cli()

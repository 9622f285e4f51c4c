"""What `tpsim schedule` and `verify` print of a pipelined step: its one-line summary, its stage x time
grid, and its proof, one line per tensor (the worst of its micro-batches or layers)."""

from __future__ import annotations

from simulator.ir.printout import workload_label
from simulator.ir.schedule import Schedule
from simulator.limits import check_memory
from simulator.pipeline.order import pipeline_order
from simulator.pipeline.printout import format_order
from simulator.pipeline.proof import float64_bytes, prove_pipeline

__all__ = ["pipeline_grid", "pipeline_line", "verify_pipeline"]


def pipeline_line(pipeline: dict) -> str:
    """``1f1b, pp 4 x tp 2, 8 micro-batches, 8 layers (2 per stage)``."""
    v = pipeline["virtual_stages"]
    chunks = f" x {v} virtual stages" if v > 1 else ""
    per_stage = pipeline["layers"] // (pipeline["pp"] * v)
    head = f", LM head of {pipeline['vocab']:,} columns" if pipeline.get("vocab") else ""
    return (f"{pipeline['schedule']}, pp {pipeline['pp']}{chunks} x tp {pipeline['tp']}, "
            f"{pipeline['micro_batches']} micro-batches, {pipeline['layers']} layers ({per_stage} per stage){head}")


def pipeline_grid(pipeline: dict) -> str:
    """The stage x time grid of the pipeline order (``simulator.pipeline.printout``), under a title line."""
    order = pipeline_order(pipeline["schedule"], pipeline["pp"], pipeline["micro_batches"], pipeline["virtual_stages"])
    return (f"pipeline order: {pipeline_line(pipeline)}\n"
            f"{format_order(order, pipeline['micro_batches'], pipeline['virtual_stages'])}\n")


def verify_pipeline(schedule: Schedule, seed: int, tolerance: float) -> int:
    """Prove the pipelined step and print the worst error of each tensor over its micro-batches or layers;
    return 0 when all are within ``tolerance``, else 1."""
    pipeline = schedule.options["pipeline"]
    what = f"{schedule.algorithm} {list(schedule.grid)} x pp {pipeline['pp']}"
    check_memory(float64_bytes(schedule), f"verifying {what}", "verify fewer layers or micro-batches",
                 " of float64 arrays (every rank's buffers, the inputs and the dense reference)")
    result = prove_pipeline(schedule, seed=seed)
    worst: dict[str, tuple[float, int, str]] = {}
    for name, error in result.errors.items():
        base, _, index = name.rpartition(".")
        base, kind = (base, "micro-batches" if index.startswith("m") else "layers") if base else (name, "")
        previous = worst.get(base, (0.0, 0, kind))
        worst[base] = (max(previous[0], error), previous[1] + 1, kind)
    print(f"{schedule.algorithm} grid {list(schedule.grid)} {workload_label(schedule)}, {pipeline_line(pipeline)}: "
          f"max relative error per output (float64 interpreter, seed {seed})")
    worst = dict(sorted(worst.items(), key=lambda item: item[1][2] != "micro-batches"))  # Y, dX first
    labels = {base: f"{base} ({count} {kind})" if kind else base for base, (_, count, kind) in worst.items()}
    width = max(map(len, labels.values()))
    for base, (error, _, _) in worst.items():
        print(f"  {labels[base]:{width}s} {error:.2e}  {'ok' if error <= tolerance else 'FAIL'}")
    ok = result.ok(tolerance)
    print("verified" if ok else f"FAILED: an output exceeds the tolerance {tolerance:g}")
    return 0 if ok else 1

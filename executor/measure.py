"""The measured-run record (JSON) and its Chrome trace, in the formats the simulator writes.

Record (``format: "tpsim-measured"``, ``version: 1``)::

    algorithm, grid, workload, passes, dtype      what ran (as in the schedule)
    backend, world_size, seed, warmup, timed_iterations
    max_rel_error, errors {tensor: error}          max-norm relative errors (executor.check); null = non-finite
    tolerance, ok, rank_errors [...]               per output block: rank, tensor, buffer, rows, cols,
                                                   max_abs_error, ref_max_abs, rel_error, ok
    time_s                                         median over timed iterations of the max over ranks
    median_iteration, iterations [...]             per timed iteration: iteration, time_s (max over
                                                   ranks), rank_time_s [per rank]
    timing {clock, alignment, ops_from}            how the times below were taken
    clock_origins_s [per rank] | null              t = 0 of the median iteration per rank as a host-
                                                   monotonic reading (perf_counter), so rank r's times
                                                   + origin[r] - min(origins) share one clock; null on
                                                   GPU (CUDA events) or across hosts. Absent in files
                                                   written before it (read as null)
    ops [...]                                      per-op records of the median iteration, rank-major in
                                                   program order: rank, step, kind, group, bytes, flops,
                                                   start_s, end_s, duration_s (the simulator's keys)
    host {torch, cuda, python, hosts, devices}     where it ran (devices: one name per rank)
    schedule {...}                                 schedule_to_dict of exactly what ran

Trace: drawn by ``simulator.timing.trace.chrome_trace``, the simulator's own writer, so a measured and a
simulated run open side by side: ``pid`` = rank, ``tid`` 0 compute, 1 blocking communication and waits,
2+ asynchronous communication ops (in flight from issue to the end of their wait), ``ts``/``dur`` in
microseconds, ``ph: "M"`` names. Event names are the ops' ``short()`` forms.
"""

from __future__ import annotations

import math
import platform

import torch

from executor.check import combine, tolerance_for
from executor.run_rank import RunOptions
from simulator.ir.schedule import Schedule
from simulator.ir.serialize import schedule_to_dict
from simulator.timing.kineto import kineto_args
from simulator.timing.trace import chrome_trace as draw

FORMAT = "tpsim-measured"
VERSION = 1


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _clock_origins(ranks: list[dict], clock: str, hosts: list[str]) -> list[float] | None:
    """Every rank's t = 0 on one host's perf_counter, or None when the readings share no clock."""
    origins = [rank.get("clock_origin_s") for rank in ranks]
    if clock != "perf_counter" or len(hosts) != 1 or any(o is None for o in origins):
        return None
    return origins


def measured_record(schedule: Schedule, result: dict, options: RunOptions) -> dict:
    """The measured JSON of one schedule's run (``result``: one entry of ``run_local``'s list)."""
    ranks = result["ranks"]
    tolerance = (options.tolerance if options.tolerance is not None
                 else tolerance_for(schedule.dtype, schedule.workload.get("name")))
    blocks = [block for rank in ranks for block in rank["blocks"]]
    verdict = combine(schedule, blocks, tolerance)
    for block in blocks:
        block["max_abs_error"], block["rel_error"] = _finite(block["max_abs_error"]), _finite(block["rel_error"])
    times = result["iteration_time_s"]
    median = result["median_iteration"]
    clock = "cuda_events" if options.backend == "nccl" else "perf_counter"
    hosts = sorted({rank["host"] for rank in ranks})
    return {
        "format": FORMAT,
        "version": VERSION,
        **schedule.identity(),
        "backend": options.backend,
        "world_size": schedule.world_size,
        "seed": options.seed,
        "warmup": options.warmup,
        "timed_iterations": options.iters,
        "max_rel_error": _finite(verdict["max_rel_error"]),
        "errors": {name: _finite(error) for name, error in verdict["errors"].items()},
        "tolerance": tolerance,
        "ok": verdict["ok"],
        "uncovered": verdict["uncovered"],
        "rank_errors": blocks,
        "time_s": times[median],
        "median_iteration": median,
        "iterations": [{"iteration": i, "time_s": t, "rank_time_s": [rank["rank_time_s"][i] for rank in ranks]}
                       for i, t in enumerate(times)],
        "timing": {
            "clock": clock,
            "alignment": "rank-local clocks; t = 0 when the rank leaves a barrier on the default group "
                         "before each iteration",
            "ops_from": "the median timed iteration (statistics.median_low of the per-iteration max over ranks)",
        },
        "clock_origins_s": _clock_origins(ranks, clock, hosts),
        "ops": [op for rank in ranks for op in rank["ops"]],
        "host": {"torch": torch.__version__, "cuda": torch.version.cuda, "python": platform.python_version(),
                 "hosts": hosts, "devices": [rank["device"] for rank in ranks]},
        "schedule": schedule_to_dict(schedule),
    }


def chrome_trace(schedule: Schedule, record: dict) -> dict:
    """The Chrome trace of ``record``'s ops, drawn by ``simulator.timing.trace`` exactly as a simulated run is."""
    rows = []
    for op in record["ops"]:
        ir_op = schedule.programs[op["rank"]][op["step"]]
        rows.append(dict(op, name=ir_op.short(), kineto=kineto_args(schedule, op["rank"], ir_op),
                         **({"async": True} if getattr(ir_op, "handle", None) else {})))
    return draw(rows, metadata={"source": "tpsim executor (measured)", "algorithm": record["algorithm"],
                                "grid": record["grid"], "backend": record["backend"],
                                "time_s": record["time_s"]},
                world_size=record["world_size"])


def summary(record: dict) -> list[str]:
    """Lines for the terminal: what ran, whether it is correct, how long it took, and any bad blocks."""
    workload = ", ".join(f"{k}={v}" for k, v in record["workload"].items() if k != "name")
    error = record["max_rel_error"]
    shown = "non-finite" if error is None else f"{error:.2e}"
    verdict = "correct" if record["ok"] else "WRONG"
    lines = [f"{record['algorithm']} grid {record['grid']} {record['workload']['name']} ({workload}) "
             f"{record['passes']} {record['dtype']} on {record['world_size']} ranks ({record['backend']}): "
             f"{verdict}, max_rel_error {shown} (tolerance {record['tolerance']:g})",
             f"time_s {record['time_s']:.6f} (median of {record['timed_iterations']} timed iterations after "
             f"{record['warmup']} warm-up, max over ranks)"]
    if not record["ok"]:
        for name in record["uncovered"]:
            lines.append(f"  {name}: no output block covers part of it")
        for block in record["rank_errors"]:
            if not block["ok"]:
                rel = "non-finite" if block["rel_error"] is None else f"{block['rel_error']:.2e}"
                lines.append(f"  rank {block['rank']} {block['tensor']}[{block['rows'][0]}:{block['rows'][1]}, "
                             f"{block['cols'][0]}:{block['cols'][1]}] (buffer {block['buffer']}): "
                             f"rel error {rel} > {record['tolerance']:g}")
    return lines

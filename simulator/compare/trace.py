"""One Chrome trace holding a measured run and its simulation, as separate processes on one time axis.

Processes ``0 .. W-1`` are "measured rank r" (the median iteration of the measured run), ``W .. 2W-1``
"simulated rank r", and ``2W`` "simulated links" (the busiest links' utilisation counters), so
Perfetto shows each measured rank above its simulated twin's group, both starting at t = 0. Each
process keeps the usual threads (compute, communication, async lanes); both halves are drawn by
``simulator.timing.trace.chrome_trace``, as `tpsim run --trace` and `tpsim simulate --trace` draw them.
"""

from __future__ import annotations

from simulator.timing.trace import chrome_trace, simulated_trace

__all__ = ["comparison_trace"]


def _measured_rows(schedule, ops: list[dict]) -> list[dict]:
    rows = []
    for op in ops:
        ir_op = schedule.programs[op["rank"]][op["step"]]
        row = dict(op, name=ir_op.short())
        if getattr(ir_op, "handle", None):
            row["async"] = True
        rows.append(row)
    return rows


def _shift(events: list[dict], offset: int, label: str) -> list[dict]:
    """Move every event ``offset`` pids up and rename its process "<label> rank r" ("<label> links")."""
    out = []
    for event in events:
        event = dict(event, pid=event["pid"] + offset)
        if event["ph"] == "M" and event["name"] == "process_name":
            name = event["args"]["name"]
            event["args"] = {"name": f"{label} {name}"}
        elif event["ph"] == "M" and event["name"] == "process_sort_index":
            event["args"] = {"sort_index": event["pid"]}
        out.append(event)
    return out


def comparison_trace(comparison) -> dict:
    """The combined trace of a ``simulator.compare.measured.Comparison``."""
    result = comparison.result
    schedule = result.timeline.schedule
    world = schedule.world_size
    measured = chrome_trace(_measured_rows(schedule, comparison.record["ops"]), world_size=world)
    simulated = simulated_trace(result)
    events = _shift(measured["traceEvents"], 0, "measured") + _shift(simulated["traceEvents"], world, "simulated")
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"source": "tpsim compare", "measured_s": comparison.measured_s,
                          "predicted_s": comparison.predicted_s, "rel_error": comparison.rel_error,
                          **{k: v for k, v in comparison.meta.items() if k != "workload"}}}

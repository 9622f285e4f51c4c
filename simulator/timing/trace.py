"""Chrome / Perfetto trace files of a run, simulated or measured (the executor writes the same format).

``chrome_trace(records, ...)`` turns per-op records (mappings with ``simulator.timing.results.OP_RECORD_KEYS``)
into ``{"traceEvents": [...]}``:

- one process per rank (``pid`` = rank, named "rank N" by ``ph: "M"`` events, sorted by rank);
- ``tid`` 0 "compute": gemm, local and slice ops; ``tid`` 1 "communication": blocking communication ops
  and waits, which never overlap on one rank. A record with ``"async": True`` (an op issued with a
  handle, in flight while the rank computes) goes to the first of ``tid`` 2, 3, ... ("async comm N")
  where it overlaps nothing, since Perfetto does not draw overlapping slices on one track;
- complete events ``ph: "X"`` with ``ts`` and ``dur`` in microseconds, named by the record's ``name``
  if it has one, else its kind and group, after the layer part it lowers when the record has a
  non-empty ``part`` ("qkv: gemm"); ``args`` carry step, group, bytes, flops (and ``wait_us`` when
  the record has ``wait_s``, ``part`` when it has a part), and a communication op's record's ``kineto``
  mapping: the PyTorch profiler's names for a collective (``simulator.timing.kineto``);
- counters (``ph: "C"``) on an extra process "links" (``pid`` = number of ranks): for each named series,
  a list of (time_s, utilisation) points, e.g. a busy link's used fraction of its capacity.

Times are rounded to the nanosecond (3 decimals of a microsecond), which keeps files small and exact
enough for any GPU op. Open the file in https://ui.perfetto.dev or chrome://tracing.

Example::

    >>> trace = chrome_trace([{"rank": 0, "step": 0, "kind": "gemm", "group": None, "bytes": 0,
    ...                        "flops": 8, "start_s": 0.0, "end_s": 1e-6, "duration_s": 1e-6}])
    >>> [e["ph"] for e in trace["traceEvents"]][-1], trace["traceEvents"][-1]["dur"]
    ('X', 1.0)
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from simulator.files import write_json_atomic
from simulator.timing.kineto import kineto_args
from simulator.timing.parts import part_labels

__all__ = ["chrome_trace", "write_trace", "COMPUTE_KINDS"]

COMPUTE_KINDS = frozenset({"gemm", "local", "slice"})


def _us(seconds: float) -> float:
    return round(seconds * 1e6, 3)


def _metadata(pid: int, name: str, threads: Sequence[tuple[int, str]]) -> list[dict]:
    events = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}},
              {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}}]
    for tid, label in threads:
        events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": label}})
    return events


def chrome_trace(records: Iterable[Mapping], counters: Mapping[str, Sequence[tuple[float, float]]] | None = None,
                 metadata: Mapping | None = None, world_size: int | None = None) -> dict:
    """The trace object for ``records`` (any order) and ``counters`` (series name -> (time_s, value)).

    ``metadata`` goes into the file's ``otherData``; ``world_size`` names ranks that have no records.
    """
    rows = sorted(records, key=lambda r: (r["rank"], r["start_s"], r["step"]))
    ranks = max([r["rank"] for r in rows], default=-1) + 1
    if world_size is not None:
        ranks = max(ranks, world_size)
    slices: list[dict] = []
    lanes_used: dict[int, int] = {}  # rank -> async lanes in use
    lane_free: dict[tuple[int, int], float] = {}  # (rank, tid) -> when the lane's last slice ends
    for record in rows:
        rank, kind = record["rank"], record["kind"]
        start, end = record["start_s"], record["end_s"]
        if kind in COMPUTE_KINDS:
            tid = 0
        elif not record.get("async"):
            tid = 1
        else:
            tid = 2
            while lane_free.get((rank, tid), float("-inf")) > start:
                tid += 1
            lane_free[(rank, tid)] = end
            lanes_used[rank] = max(lanes_used.get(rank, 0), tid - 1)
        group = record.get("group")
        name = record.get("name") or (f"{kind} {group}" if group else kind)
        args = {"step": record["step"], "group": group, "bytes": record["bytes"], "flops": record["flops"]}
        if "wait_s" in record:
            args["wait_us"] = _us(record["wait_s"])
        args.update(record.get("kineto") or {})
        part = record.get("part")
        if part:
            name = f"{part}: {name}"
            args["part"] = part
        slices.append({"ph": "X", "name": name, "cat": "compute" if tid == 0 else "comm", "pid": rank,
                       "tid": tid, "ts": _us(start), "dur": _us(end - start), "args": args})
    events: list[dict] = []
    for rank in range(ranks):
        threads = [(0, "compute"), (1, "communication")]
        threads += [(2 + lane, f"async comm {lane + 1}") for lane in range(lanes_used.get(rank, 0))]
        events += _metadata(rank, f"rank {rank}", threads)
    if counters:
        events += _metadata(ranks, "links", [])
        for name, points in counters.items():
            for time_s, value in points:
                events.append({"ph": "C", "name": name, "pid": ranks, "tid": 0, "ts": _us(time_s),
                               "args": {"utilisation": round(value, 6)}})
    trace = {"traceEvents": events + slices, "displayTimeUnit": "ms"}
    if metadata:
        trace["otherData"] = dict(metadata)
    return trace


def write_trace(path, trace: dict) -> None:
    """Write a trace object to ``path`` atomically (never half-written)."""
    write_json_atomic(path, trace)


def simulated_trace(result) -> dict:
    """The trace of a ``simulator.timing.results.SimResult`` that kept its timeline: ops named by their
    layer part (where the schedule names parts) and ``short()`` form, asynchronous ops in flight lanes,
    waits in ``args``, and the sampled utilisation of the busiest links as counters."""
    timeline = result.timeline
    if timeline is None:
        raise ValueError("the result kept no per-op timeline; simulate with timeline=True to trace it")
    schedule = timeline.schedule
    labels = [part_labels(schedule, rank) for rank in range(schedule.world_size)] if schedule.parts else None
    rows = []
    for record in timeline.records():
        op = schedule.programs[record["rank"]][record["step"]]
        record["name"] = op.short()
        record["wait_s"] = timeline.waits[record["rank"]][record["step"]]
        record["kineto"] = kineto_args(schedule, record["rank"], op)
        if labels is not None:
            record["part"] = labels[record["rank"]][record["step"]]
        if getattr(op, "handle", None):
            record["async"] = True
        rows.append(record)
    meta = {"source": f"tpsim simulator ({result.model})", "makespan_s": result.makespan_s, **result.meta}
    return chrome_trace(rows, counters=result.link_series, metadata=meta, world_size=schedule.world_size)

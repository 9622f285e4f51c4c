"""Predicted vs measured: simulate the schedule a measured run recorded and set the two side by side.

A measured run (``tpsim run --out``, ``format: "tpsim-measured"``, ``version: 1``) carries the whole
schedule it ran and the per-op records of its median iteration. ``compare_record`` simulates that very
schedule on a topology and compares

- **end to end**: the measured ``time_s`` (median over timed iterations of the max over ranks) against
  the simulated makespan;
- **per op class**: gemm, local/slice (elementwise and copies), each collective kind, send/recv, and
  wait (time blocked in ``wait`` ops on asynchronous communication). A class's time is the mean over
  ranks of the summed durations of its ops, the same sum over the same ops on both sides. A blocking
  communication op's duration includes waiting for its peers (both sides time it from issue to
  return), an asynchronous one runs from issue to the end of its wait.

Each communication class also gets the part of that time spent **waiting for peers**
(``measured_wait_s``, ``predicted_wait_s``): per op, how long it ran before the last member of its
instance (collective, or send/recv pair) issued it, at most its own duration (``simulator.compare.peer_wait``),
summed and averaged over ranks like the class time. The rest is the transfer once everyone was
there. A class whose error sits in the waiting part comes from late peers (uneven compute, ranks the
OS ran later), one whose error sits in the rest from slow transfers. The simulator's times share one
clock; a measured run's do when it carries ``clock_origins_s`` (gloo ranks on one host), otherwise
``measured_wait_s`` is None.

``rel_error`` is (predicted - measured) / measured: +0.10 means the simulator says 10% slower.

Example::

    >>> c = compare_record(load_measured("measured.json"), load_topology("calibrated.yaml"))  # doctest: +SKIP
    >>> c.measured_s, c.predicted_s, c.rel_error                                            # doctest: +SKIP
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

import networkx as nx

from simulator.compare.peer_wait import peer_waits
from simulator.compare.record_checks import check_measured
from simulator.errors import InputError
from simulator.files import load_record
from simulator.ir.serialize import schedule_from_dict
from simulator.timing.simulation import simulate
from topologies import gpu_nodes

__all__ = ["MEASURED_FORMAT", "MEASURED_VERSION", "CLASS_ORDER", "op_class", "load_measured", "ClassRow",
           "Comparison", "compare_record"]

MEASURED_FORMAT = "tpsim-measured"
MEASURED_VERSION = 1
CLASS_ORDER = ("gemm", "local/slice", "broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter",
               "send/recv", "wait")
_CLASS = {"local": "local/slice", "slice": "local/slice", "send": "send/recv", "recv": "send/recv"}
_REQUIRED = ("schedule", "ops", "time_s", "world_size", "iterations")


def op_class(kind: str) -> str:
    """The class an op kind is reported under (``CLASS_ORDER``)."""
    return _CLASS.get(kind, kind)


def load_measured(path: str) -> dict:
    """Read a measured-run JSON; InputError (one line) for a missing file, bad JSON, another format, or
    times that are not finite positive seconds (``simulator.compare.record_checks``)."""
    record = load_record(path, MEASURED_FORMAT, MEASURED_VERSION, name="measured run", writer="tpsim run --out",
                         version_name="measured-run")
    missing = [key for key in _REQUIRED if key not in record]
    if missing:
        raise InputError(f"{path}: measured run lacks {', '.join(missing)}")
    check_measured(record, path)
    return record


@dataclass(frozen=True)
class ClassRow:
    """One op class: how many ops, and mean-per-rank seconds measured and predicted."""

    name: str
    ops: int
    """Ops of this class over all ranks."""
    measured_s: float
    predicted_s: float
    measured_wait_s: float | None = None
    """Of ``measured_s``, the time waiting for peers; None for non-communication classes and for a
    measured run whose ranks' clocks are not on one time line."""
    predicted_wait_s: float | None = None
    """Of ``predicted_s``, the time waiting for peers; None for non-communication classes."""

    @property
    def rel_error(self) -> float | None:
        """(predicted - measured) / measured; None when nothing was measured."""
        return (self.predicted_s - self.measured_s) / self.measured_s if self.measured_s > 0 else None

    def to_dict(self) -> dict:
        return {"class": self.name, "ops": self.ops, "measured_s": self.measured_s,
                "predicted_s": self.predicted_s, "rel_error": self.rel_error,
                "measured_wait_s": self.measured_wait_s, "predicted_wait_s": self.predicted_wait_s}


@dataclass(frozen=True)
class Comparison:
    """A measured run against its simulation: end to end and per op class."""

    measured_s: float
    """The run's time_s: median over timed iterations of the max over ranks."""
    predicted_s: float
    """The simulated makespan."""
    classes: tuple[ClassRow, ...]
    iterations_s: tuple[float, ...]
    """Every timed iteration's time (max over ranks), for the spread."""
    meta: dict = field(default_factory=dict)
    record: dict = field(default_factory=dict, repr=False)
    result: object = field(default=None, repr=False)
    """The simulator.timing.results.SimResult (with its timeline)."""

    @property
    def rel_error(self) -> float:
        """(predicted - measured) / measured, end to end."""
        return (self.predicted_s - self.measured_s) / self.measured_s

    def to_dict(self) -> dict:
        """The JSON form of ``tpsim compare --json``."""
        its = self.iterations_s
        return {"measured_s": self.measured_s, "predicted_s": self.predicted_s, "rel_error": self.rel_error,
                "measured_iterations_s": list(its),
                "measured_min_s": min(its), "measured_median_s": statistics.median(its), "measured_max_s": max(its),
                "classes": [row.to_dict() for row in self.classes], **self.meta}


def _class_sums(records, world: int) -> tuple[dict[str, float], dict[str, int]]:
    seconds: dict[str, float] = {}
    counts: dict[str, int] = {}
    for r in records:
        name = op_class(r["kind"])
        seconds[name] = seconds.get(name, 0.0) + r["duration_s"]
        counts[name] = counts.get(name, 0) + 1
    return {k: v / world for k, v in seconds.items()}, counts


def _class_waits(schedule, records, world: int, offsets_s: list[float] | None = None) -> dict[str, float]:
    """Class -> mean over ranks of the summed peer waits of its ops (communication classes only)."""
    programs = schedule.programs
    waits: dict[str, float] = {}
    for (rank, step), seconds in peer_waits(schedule, records, offsets_s).items():
        name = op_class(programs[rank][step].kind)
        waits[name] = waits.get(name, 0.0) + seconds
    return {k: v / world for k, v in waits.items()}


def _measured_offsets(record: dict, world: int) -> list[float] | None:
    """Seconds to add to each rank's measured times to put all ranks on one clock; None if unknown."""
    origins = record.get("clock_origins_s")
    if not isinstance(origins, list) or len(origins) != world or not all(isinstance(o, (int, float))
                                                                         for o in origins):
        return None
    first = min(origins)
    return [o - first for o in origins]


def compare_record(record: dict, G: nx.DiGraph, placement: str | None = None, source: str = "") -> Comparison:
    """Simulate ``record``'s schedule on ``G`` and compare; InputError when ``G`` cannot hold the run."""
    schedule = schedule_from_dict(record["schedule"], f"{source or 'measured run'}: schedule")
    world = schedule.world_size
    gpus = len(gpu_nodes(G))
    if gpus < world:
        raise InputError(f"topology {G.graph.get('name', '?')} has {gpus} GPUs but the measured run has {world} "
                         f"ranks")
    _check_steps(record, schedule, source or "measured run")
    result = simulate(schedule, G, placement, timeline=True)
    simulated = result.op_records()
    measured, counts = _class_sums(record["ops"], world)
    predicted, _ = _class_sums(simulated, world)
    offsets = _measured_offsets(record, world)
    measured_waits = _class_waits(schedule, record["ops"], world, offsets) if offsets is not None else {}
    predicted_waits = _class_waits(schedule, simulated, world)
    rows = tuple(ClassRow(name, counts.get(name, 0), measured.get(name, 0.0), predicted.get(name, 0.0),
                          measured_waits.get(name), predicted_waits.get(name))
                 for name in CLASS_ORDER if name in measured or name in predicted)
    meta = {"algorithm": schedule.algorithm, "grid": list(schedule.grid), "world_size": world,
            "workload": schedule.workload, "passes": schedule.passes, "dtype": schedule.dtype,
            "backend": record.get("backend"), "topology": G.graph.get("name"),
            "placement": placement or "linear", "measured_file": source}
    where = source or "measured run"
    if not isinstance(record["iterations"], list) or not all(isinstance(i, dict) for i in record["iterations"]):
        raise InputError(f"{where}: iterations must be a list of {{time_s, ...}} objects")
    iterations = tuple(_seconds(i.get("time_s"), f"{where}: iterations[{n}] time_s")
                       for n, i in enumerate(record["iterations"]))
    time_s = _seconds(record["time_s"], f"{where}: time_s")
    return Comparison(time_s, result.makespan_s, rows, iterations or (time_s,), meta, record, result)


def _check_steps(record: dict, schedule, where: str) -> None:
    """Every op record names a step of its rank's program (``check_measured`` has checked the ranks
    against the record's world_size, which must be the schedule's)."""
    if record.get("world_size", schedule.world_size) != schedule.world_size:
        raise InputError(f"{where}: world_size is {record['world_size']} but its schedule has "
                         f"{schedule.world_size} ranks")
    for n, op in enumerate(record["ops"]):
        rank, step = op.get("rank"), op.get("step")
        if not (isinstance(rank, int) and 0 <= rank < schedule.world_size and isinstance(step, int)):
            continue  # (check_measured names these)
        if not 0 <= step < len(schedule.programs[rank]):
            raise InputError(f"{where}: ops[{n}] is rank {rank} step {step}, but rank {rank}'s program has "
                             f"steps 0..{len(schedule.programs[rank]) - 1}")


def _seconds(value, where: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise InputError(f"{where}: expected a number of seconds, got {value!r}") from None

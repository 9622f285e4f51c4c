"""The result of timing a schedule, simulated or analytic: makespan, per rank, per link and per op.

JSON form (``SimResult.to_dict``)::

    {"model": "simulated" | "analytic", "makespan_s": float,
     "critical_rank": int,           # the rank that finishes last (lowest on ties)
     "compute_s": float, "comm_s": float, "wait_s": float,   # the critical rank's split; they sum to makespan_s
     "parts": {"ln1": {"compute_s", "comm_s", "wait_s"}, "qkv": {...}, ...},   # only for schedules naming parts
     "meta": {...},                  # algorithm, grid, workload, passes, dtype, topology, placement, ...
     "stats": {...},                 # instances, collectives, p2p, events, flows, rate changes, fills
     "per_rank": [{"rank", "gpu", "compute_s", "comm_s", "wait_s", "finish_s"}, ...],
     "links": [{"link", "src", "dst", "kind", "bytes", "busy_s", "busy_fraction"}, ...],  # busiest first
     "ops": [{"rank", "step", "kind", "group", "bytes", "flops", "start_s", "end_s", "duration_s"}, ...]}

``parts`` (``simulator.timing.parts``) is the critical rank's split per layer part, in the order the rank
first enters each part: it sums to the top-level split, so to the makespan. The critical rank, not a
per-part maximum over ranks: maxima taken rank by rank would add up to no rank's time, and the
critical rank is the one whose time is the makespan. Ops a labelled schedule leaves unlabelled would
come under "". Schedules naming no parts (gemm, mlp) have no ``parts`` key.

``ops`` is present only when asked for. Its records use exactly the keys the executor writes for a
measured run (``OP_RECORD_KEYS``), so ``tpsim compare`` can match them key for key. For a communication
op, ``start_s`` is when the rank issued it and ``end_s`` when it returned (a blocking op's duration thus
includes waiting for peers; an asynchronous op ends when its ``wait`` returns, as the executor measures); ``bytes`` is the rank's payload per the IR's rule; ``group`` is None for
compute ops and send/recv.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from simulator.ir.schedule import Schedule

__all__ = ["OP_RECORD_KEYS", "RankTimes", "LinkUsage", "Timeline", "SimResult", "critical_rank"]

OP_RECORD_KEYS = ("rank", "step", "kind", "group", "bytes", "flops", "start_s", "end_s", "duration_s")


@dataclass(frozen=True)
class RankTimes:
    """Where one rank's time went; ``compute_s + comm_s + wait_s == finish_s``."""

    rank: int
    gpu: str
    """The GPU node the rank ran on."""
    compute_s: float
    """Seconds computing (gemm, elementwise, slice)."""
    comm_s: float
    """Seconds blocked while a communication op it waits on was in flight (exposed communication)."""
    wait_s: float
    """Seconds blocked because a peer had not yet issued the op (load imbalance, skew)."""
    finish_s: float
    """When the rank's last op completed."""

    def to_dict(self) -> dict:
        return {"rank": self.rank, "gpu": self.gpu, "compute_s": self.compute_s, "comm_s": self.comm_s,
                "wait_s": self.wait_s, "finish_s": self.finish_s}


def critical_rank(per_rank) -> RankTimes:
    """The rank that finishes last (the lowest such rank on ties)."""
    return max(per_rank, key=lambda r: (r.finish_s, -r.rank))


@dataclass(frozen=True)
class LinkUsage:
    """Traffic on one directed link over the whole run."""

    src: str
    dst: str
    kind: str
    bytes: float
    """Bytes carried."""
    busy_s: float
    """Seconds during which at least one flow crossed the link."""
    busy_fraction: float
    """``busy_s`` over the makespan."""
    name: str = ""
    """The link as printed, both ends in one scope (``topologies.naming``): "n0/gpu0->n0/nic0"."""

    @property
    def label(self) -> str:
        """``name``, or "src->dst" where none was given."""
        return self.name or f"{self.src}->{self.dst}"

    def to_dict(self) -> dict:
        return {"link": self.label, "src": self.src, "dst": self.dst, "kind": self.kind,
                "bytes": self.bytes, "busy_s": self.busy_s, "busy_fraction": self.busy_fraction}


@dataclass
class Timeline:
    """Per-op times as columns: ``starts[rank][step]``, ``ends[rank][step]``, ``waits[rank][step]``."""

    schedule: Schedule
    starts: list[list[float]]
    ends: list[list[float]]
    waits: list[list[float]]

    def records(self) -> list[dict]:
        """One record per op, rank-major then step order, with ``OP_RECORD_KEYS``."""
        s = self.schedule
        out = []
        for rank, program in enumerate(s.programs):
            starts, ends = self.starts[rank], self.ends[rank]
            for step, op in enumerate(program):
                start, end = starts[step], ends[step]
                out.append({"rank": rank, "step": step, "kind": op.kind, "group": getattr(op, "group", None),
                            "bytes": s.payload_bytes(rank, op), "flops": s.flops(rank, op),
                            "start_s": start, "end_s": end, "duration_s": end - start})
        return out


@dataclass(frozen=True)
class SimResult:
    """The timing of one schedule on one topology; see the module docstring for the JSON form."""

    model: str
    """"simulated" (flow network, contention) or "analytic" (closed forms, no contention)."""
    makespan_s: float
    per_rank: tuple[RankTimes, ...]
    links: tuple[LinkUsage, ...] = ()
    """Every link that carried traffic, busiest (by busy time, then bytes) first."""
    timeline: Timeline | None = None
    meta: dict = field(default_factory=dict)
    stats: dict = field(default_factory=dict)
    wall_s: dict = field(default_factory=dict)
    """Wall-clock seconds per phase (compile, simulate). Not part of the JSON form, which must be the
    same, byte for byte, for the same inputs."""
    link_series: dict = field(default_factory=dict)
    """Sampled utilisation of the busiest links, "src->dst" -> [(time_s, fraction)], for trace counters."""
    parts: dict = field(default_factory=dict)
    """The critical rank's time per layer part, label -> ``simulator.timing.parts.PartTime``; empty when
    the schedule names no parts."""

    @property
    def critical(self) -> RankTimes:
        """The rank that finishes last (the lowest such rank on ties)."""
        return critical_rank(self.per_rank)

    @property
    def compute_s(self) -> float:
        """The critical rank's compute seconds."""
        return self.critical.compute_s

    @property
    def comm_s(self) -> float:
        """The critical rank's exposed communication seconds."""
        return self.critical.comm_s

    @property
    def wait_s(self) -> float:
        """The critical rank's seconds waiting for peers."""
        return self.critical.wait_s

    def op_records(self) -> list[dict]:
        """Per-op records (``OP_RECORD_KEYS``); ValueError if the run did not keep a timeline."""
        if self.timeline is None:
            raise ValueError("this result kept no per-op timeline (run with ops recorded)")
        return self.timeline.records()

    def to_dict(self, ops: bool = False, top_links: int | None = 10) -> dict:
        """The JSON form; ``ops`` adds per-op records, ``top_links`` limits the link list (None: all)."""
        critical = self.critical
        links = self.links if top_links is None else self.links[:top_links]
        data = {"model": self.model, "makespan_s": self.makespan_s, "critical_rank": critical.rank,
                "compute_s": critical.compute_s, "comm_s": critical.comm_s, "wait_s": critical.wait_s}
        if self.parts:
            data["parts"] = {label: part.to_dict() for label, part in self.parts.items()}
        data.update({"meta": self.meta, "stats": self.stats, "per_rank": [r.to_dict() for r in self.per_rank],
                     "links": [link.to_dict() for link in links]})
        if ops:
            data["ops"] = self.op_records()
        return data

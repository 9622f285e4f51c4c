"""The arrangement predictor: every legal way to lay P GPUs out for every algorithm, simulated and ranked.

This module ranks one block (``predict``); the whole model's training plan, tensor x data parallel
arrangements with their step time and memory per GPU (``tpsim predict --global-batch``), is
``simulator.training.search.plan_training``, re-exported here.

Arrangements of P GPUs (``simulator.algorithms.registry.legal_grids``): ``1d`` and ``1d-sp`` on P;
``2d`` on [q, q, 1] with q*q = P; ``summa25d`` on every [q, q, d] with q*q*d = P; ``cannon25d`` on
every [q, q, c] with c | q; ``3d`` on [q, q, q] with q^3 = P.
Each arrangement is built for the workload; one that does not apply, because its sizes do not divide
(``build_schedule`` raises ``NotApplicable``) or its placement does not fit (``PlacementDoesNotFit``, also
a ``NotApplicable``), is reported as skipped with that reason. Any other exception propagates: a user's
mistake (an unknown placement) stops the whole prediction, and a bug is never dressed up as a skip.
Every other is simulated on the flow network (``simulator.timing.simulation``, contention included)
and timed by the analytic, contention-free model (``simulator.timing.critical_path``) as a bound, then the
list is ranked by simulated time (ties: algorithm, then grid, then placement, in listing order).

Per-GPU memory is what the blocks need: the sum of a rank's declared buffer bytes (inputs, outputs,
workspaces), the largest over ranks; it does not count framework overheads or activations kept for
other layers.

Example::

    >>> rows = predict(load_topology("dgx-a100:8"), Workload.mlp(32768, 4096), gpus=64)   # doctest: +SKIP
    >>> rows[0].algorithm, rows[0].grid, rows[0].time_s                                   # doctest: +SKIP
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable

import networkx as nx

from simulator.algorithms.arrangement import Arrangement, arrangements
from simulator.algorithms.registry import algorithm_class, build_schedule
from simulator.errors import NotApplicable
from simulator.ir.schedule import Schedule
from simulator.timing.critical_path import analyze
from simulator.timing.simulation import plan_on_graph, simulate
from simulator.training.search import plan_training
from simulator.workloads.workload import Workload
from topologies import Router

__all__ = ["Arrangement", "Prediction", "arrangements", "predict", "memory_bytes", "plan_training"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Prediction:
    """The outcome for one arrangement; times are None when it was skipped."""

    arrangement: Arrangement
    time_s: float | None = None
    """Simulated makespan (flow network, contention), seconds."""
    compute_s: float | None = None
    """The critical rank's compute seconds."""
    comm_s: float | None = None
    """The critical rank's exposed communication seconds."""
    wait_s: float | None = None
    """The critical rank's seconds waiting for peers."""
    analytic_s: float | None = None
    """The contention-free analytic makespan, a lower bound on ``time_s``."""
    memory_bytes: int | None = None
    """Largest per-rank sum of declared buffer bytes."""
    collectives: int | None = None
    """Collective instances plus send/recv pairs simulated."""
    skipped: str | None = None
    """Why the arrangement was skipped, or None."""

    @property
    def algorithm(self) -> str:
        return self.arrangement.algorithm

    @property
    def grid(self) -> tuple[int, ...]:
        return self.arrangement.grid

    def to_dict(self) -> dict:
        """The JSON / CSV row (``tpsim predict --json`` list entries)."""
        a = self.arrangement
        return {"algorithm": a.algorithm, "grid": list(a.grid), "placement": a.placement or "linear",
                "overlap": a.overlap, "status": "skipped" if self.skipped else "ok", "time_s": self.time_s,
                "compute_s": self.compute_s, "comm_s": self.comm_s, "wait_s": self.wait_s,
                "analytic_s": self.analytic_s, "memory_bytes": self.memory_bytes,
                "collectives": self.collectives, "reason": self.skipped}


def memory_bytes(schedule: Schedule) -> int:
    """The largest per-rank sum of declared buffer bytes."""
    return max((sum(spec.nbytes for spec in buffers.values()) for buffers in schedule.buffers), default=0)


def _build(a: Arrangement, workload: Workload, passes: str, dtype: str) -> Schedule:
    if not algorithm_class(a.algorithm).square_grid:
        return build_schedule(a.algorithm, workload, passes, dtype, gpus=a.grid[0])
    return build_schedule(a.algorithm, workload, passes, dtype, grid=a.grid, overlap=a.overlap)


def predict_one(G: nx.DiGraph, a: Arrangement, workload: Workload, passes: str = "both", dtype: str = "bfloat16",
                algorithms: dict[str, str] | None = None, router=None) -> Prediction:
    """Build, simulate and bound one arrangement; a NotApplicable on the way makes it a skipped row."""
    try:
        schedule = _build(a, workload, passes, dtype)
        plan = plan_on_graph(schedule, G, a.placement)
    except NotApplicable as error:  # sizes that do not divide, a placement that does not fit
        return Prediction(a, skipped=str(error).splitlines()[0])
    sim = simulate(schedule, G, a.placement, algorithms=algorithms, timeline=False, plan=plan, router=router)
    bound = analyze(schedule, G, a.placement, algorithms=algorithms, timeline=False, plan=plan, router=router)
    return Prediction(a, sim.makespan_s, sim.compute_s, sim.comm_s, sim.wait_s, bound.makespan_s,
                      memory_bytes(schedule), len(plan.instances))


def predict(G: nx.DiGraph, workload: Workload, gpus: int, passes: str = "both", dtype: str = "bfloat16",
            algorithms: dict[str, str] | None = None, candidates: list[Arrangement] | None = None,
            progress: Callable[[Arrangement], None] | None = None) -> list[Prediction]:
    """Predictions for ``candidates`` (default: every arrangement of ``gpus``), ranked fastest first,
    skipped ones last in listing order. ``progress(arrangement)`` is called as each one finishes."""
    candidates = arrangements(gpus) if candidates is None else candidates
    router = Router(G)  # one route cache for every arrangement on this topology
    rows = []
    for a in candidates:
        rows.append(predict_one(G, a, workload, passes, dtype, algorithms, router))
        log.info("%s: %s", a.label, rows[-1].skipped or f"{rows[-1].time_s:.6g} s")
        if progress is not None:
            progress(a)
    order = {a: i for i, a in enumerate(candidates)}
    done = sorted((r for r in rows if not r.skipped), key=lambda r: (r.time_s, order[r.arrangement]))
    return done + [r for r in rows if r.skipped]

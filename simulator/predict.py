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

With ``prune=True`` (what ``tpsim predict`` does unless ``--no-prune``) the bound comes first: every
arrangement is built and bounded (cheap: no flows), then simulated in order of its bound, fastest
first. One whose bound exceeds the best simulated time so far cannot win (the bound is a lower bound
on the simulated time) and is not simulated: its row keeps the bound, with ``simulated=False``
(status "bound" in the JSON). One whose schedule equals, op for op, that of an arrangement already
simulated with the same placement (2d [q,q,1] and summa25d [q,q,1]) is not simulated again: its row
names it (``duplicate_of``, status "duplicate"). The ranking is the same as without pruning for every
row that could be first; pruned rows follow the simulated ones, by bound.

Per-GPU memory is what the blocks need: the sum of a rank's declared buffer bytes (inputs, outputs,
workspaces), the largest over ranks; it does not count framework overheads or activations kept for
other layers.

Example::

    >>> rows = predict(load_topology("dgx-a100:8"), Workload.mlp(32768, 4096), gpus=64)   # doctest: +SKIP
    >>> rows[0].algorithm, rows[0].grid, rows[0].time_s                                   # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import logging
from dataclasses import dataclass
from typing import Callable

import networkx as nx

from simulator.algorithms.arrangement import Arrangement, arrangements
from simulator.algorithms.registry import algorithm_class, build_schedule
from simulator.errors import NotApplicable
from simulator.ir.schedule import Schedule
from simulator.network.topology_cache import TopologyCache
from simulator.timing.critical_path import analyze
from simulator.timing.simulation import plan_on_graph, simulate
from simulator.training.search import plan_training
from simulator.workers import ordered_map
from simulator.workloads.workload import Workload

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
    simulated: bool = True
    """False for a row that pruning left at its bound (``time_s`` and the split are then None)."""
    duplicate_of: str | None = None
    """The label of the simulated arrangement whose schedule this one's equals, or None."""

    @property
    def status(self) -> str:
        """"ok" (simulated), "bound" (pruned: only the bound), "duplicate" or "skipped"."""
        if self.skipped:
            return "skipped"
        if self.duplicate_of:
            return "duplicate"
        return "ok" if self.simulated else "bound"

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
                "overlap": a.overlap, "status": self.status, "time_s": self.time_s,
                "compute_s": self.compute_s, "comm_s": self.comm_s, "wait_s": self.wait_s,
                "analytic_s": self.analytic_s, "memory_bytes": self.memory_bytes,
                "collectives": self.collectives, "reason": self.skipped, "duplicate_of": self.duplicate_of}


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
            progress: Callable[[Arrangement], None] | None = None, prune: bool = False,
            workers: int = 1) -> list[Prediction]:
    """Predictions for ``candidates`` (default: every arrangement of ``gpus``), ranked fastest first,
    skipped ones last in listing order. ``progress(arrangement)`` is called as each one finishes.
    ``prune``: bound first and simulate only what could win (module docstring). ``workers``: forked
    processes that bound and simulate arrangements side by side (``simulator.workers``); the rows are
    the same for every count."""
    candidates = arrangements(gpus) if candidates is None else candidates
    router = TopologyCache(G)  # one route and plan cache for every arrangement on this topology
    if prune:
        return _pruned(G, candidates, workload, passes, dtype, algorithms, router, progress, workers)
    rows = []
    one = functools.partial(predict_one, G, workload=workload, passes=passes, dtype=dtype, algorithms=algorithms,
                            router=router)
    for a, row in zip(candidates, ordered_map(one, candidates, workers)):
        rows.append(row)
        log.info("%s: %s", a.label, rows[-1].skipped or f"{rows[-1].time_s:.6g} s")
        if progress is not None:
            progress(a)
    order = {a: i for i, a in enumerate(candidates)}
    done = sorted((r for r in rows if not r.skipped), key=lambda r: (r.time_s, order[r.arrangement]))
    return done + [r for r in rows if r.skipped]


def _bounded(G, a: Arrangement, workload, passes, dtype, algorithms, router) -> tuple[Prediction, int | None]:
    """The bound and memory of ``a``, not simulated, and a digest of its schedule; a skipped row (digest
    None) where it does not apply."""
    try:
        schedule = _build(a, workload, passes, dtype)
        plan = plan_on_graph(schedule, G, a.placement)
    except NotApplicable as error:
        return Prediction(a, skipped=str(error).splitlines()[0]), None
    bound = analyze(schedule, G, a.placement, algorithms=algorithms, timeline=False, plan=plan, router=router)
    return (Prediction(a, analytic_s=bound.makespan_s, memory_bytes=memory_bytes(schedule),
                       collectives=len(plan.instances), simulated=False), _digest(schedule))


def _digest(schedule: Schedule) -> int:
    """A hash of what the simulator sees; equal digests are then compared in full (``_same_program``)."""
    return hash((tuple(sorted(schedule.groups.items())), tuple(map(tuple, schedule.programs))))


def _same_program(a: Schedule, b: Schedule) -> bool:
    return a.groups == b.groups and a.buffers == b.buffers and a.programs == b.programs


def _without_duplicates(rows, digests, workload, passes, dtype) -> list[Prediction]:
    """``rows`` with each arrangement whose schedule equals an earlier one's (same placement) marked
    ``duplicate_of`` it: 2d [q,q,1] and summa25d [q,q,1] build the same program."""
    first: dict[tuple, Prediction] = {}
    out = []
    for row, digest in zip(rows, digests):
        if row.skipped:
            out.append(row)
            continue
        key = (digest, row.arrangement.placement, row.analytic_s, row.memory_bytes)
        twin = first.get(key)
        if twin is not None and _same_program(_build(row.arrangement, workload, passes, dtype),
                                              _build(twin.arrangement, workload, passes, dtype)):
            out.append(dataclasses.replace(row, duplicate_of=twin.arrangement.label))
        else:
            first.setdefault(key, row)
            out.append(row)
    return out


def _pruned(G, candidates, workload, passes, dtype, algorithms, router, progress, workers=1) -> list[Prediction]:
    """``predict`` with pruning: bound everything, drop duplicates, simulate in bound order while a row
    could still win.

    With ``workers`` > 1 the next ``workers`` rows whose bound is below the best time so far are
    simulated side by side, then taken in bound order as one worker would have: a row whose bound
    exceeds a time an earlier row of its batch just set is left at its bound (its simulation wasted),
    so the rows are those of ``workers=1``.
    """
    def bounded(a):
        return _bounded(G, a, workload, passes, dtype, algorithms, router)

    def simulated(row):
        a = row.arrangement
        sim = simulate(_build(a, workload, passes, dtype), G, a.placement, algorithms=algorithms, timeline=False,
                       router=router)
        return dataclasses.replace(row, time_s=sim.makespan_s, compute_s=sim.compute_s, comm_s=sim.comm_s,
                                   wait_s=sim.wait_s, simulated=True)

    pairs = list(ordered_map(bounded, candidates, workers))
    rows = _without_duplicates([row for row, _ in pairs], [digest for _, digest in pairs], workload, passes, dtype)
    order = {a: i for i, a in enumerate(candidates)}
    by_bound = sorted((r for r in rows if not r.skipped and not r.duplicate_of),
                      key=lambda r: (r.analytic_s, order[r.arrangement]))
    best = None
    done, pruned = [], []
    i = 0
    while i < len(by_bound):
        if best is not None and by_bound[i].analytic_s > best:
            batch, results = by_bound[i:], None  # bounds only grow from here: none of these can win
        else:
            batch = [by_bound[i]] + list(itertools.takewhile(lambda r: best is None or r.analytic_s <= best,
                                                             by_bound[i + 1:i + workers]))
            results = list(ordered_map(simulated, batch, workers))
        for k, row in enumerate(batch):
            if best is not None and row.analytic_s > best:
                pruned.append(row)
            else:
                row = results[k]
                done.append(row)
                best = row.time_s if best is None else min(best, row.time_s)
            log.info("%s: %s", row.arrangement.label, f"{row.time_s:.6g} s" if row.simulated else "bound")
            if progress is not None:
                progress(row.arrangement)
        i += len(batch)
    for row in rows:
        if (row.skipped or row.duplicate_of) and progress is not None:
            progress(row.arrangement)
    done.sort(key=lambda r: (r.time_s, order[r.arrangement]))
    pruned.sort(key=lambda r: (r.analytic_s, order[r.arrangement]))
    twins = [r for r in rows if r.duplicate_of]
    return done + pruned + twins + [r for r in rows if r.skipped]

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

With ``prune=True`` (what ``tpsim predict`` does unless ``--no-prune``) the bounds come first: every
arrangement is built and given its solo-rank bound (``simulator.timing.solo_bound``: a few ranks
walked alone, peers on time; no compile, no flows), then taken in order of that bound, fastest first:
compiled and given the analytic bound, then simulated. Each bound is a lower bound on the next and on
the simulated time, so a row whose bound exceeds the best simulated time so far cannot win and goes no
further: it keeps the bound it stopped at, with ``simulated=False`` (status "bound" in the JSON;
``analytic_s`` None where the solo bound, ``solo_s``, stopped it). One whose schedule equals, op for
op, that of an earlier arrangement with the same placement (2d [q,q,1] and summa25d [q,q,1]) is not
timed again: its row names it (``duplicate_of``, status "duplicate"). The ranking is the same as
without pruning for every row that could be first; pruned rows follow the simulated ones, by bound.

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
from simulator.algorithms.ub_configs import TE_DEFAULT
from simulator.errors import NotApplicable
from simulator.ir.schedule import Schedule
from simulator.network.topology_cache import TopologyCache
from simulator.timing.critical_path import ClosedForms, analyze
from simulator.timing.simulation import plan_on_graph, simulate
from simulator.timing.solo_bound import solo_bound
from simulator.training.search import plan_training
from simulator.sweep.executor import in_order, make_executor
from simulator.workloads.workload import Workload

__all__ = ["Arrangement", "Overlaps", "Prediction", "arrangements", "predict", "memory_bytes", "plan_training"]

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
    solo_s: float | None = None
    """The solo-rank bound pruning ranked the row by (``simulator.timing.solo_bound``), a lower bound on
    ``analytic_s``; None without pruning."""

    @property
    def bound_s(self) -> float | None:
        """The tightest lower bound known: ``analytic_s``, else ``solo_s``."""
        return self.analytic_s if self.analytic_s is not None else self.solo_s

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
                "analytic_s": self.analytic_s, "solo_s": self.solo_s, "memory_bytes": self.memory_bytes,
                "collectives": self.collectives, "reason": self.skipped, "duplicate_of": self.duplicate_of}


def memory_bytes(schedule: Schedule) -> int:
    """The largest per-rank sum of declared buffer bytes."""
    return max((sum(spec.nbytes for spec in buffers.values()) for buffers in schedule.buffers), default=0)


@dataclass(frozen=True)
class Overlaps:
    """The framework overlaps a 1-D schedule is built with (``build_schedule``'s flags of the same names)."""

    async_dgrad: bool = False
    """1d / 1d-sp: Megatron-LM's asynchronous dX communication beside the dW GEMM (the command's default)."""
    tp_comm_overlap: bool = False
    """1d-sp: Transformer Engine's chunked overlap, forward and the backward's dY gathers (``--tp-comm-overlap``)."""
    tp_comm_overlap_cfg: str = TE_DEFAULT
    """The userbuffers config whose SMs its kernels hold (``--tp-comm-overlap-cfg``,
    ``simulator.algorithms.ub_configs``)."""


NO_OVERLAPS = Overlaps()


def _build(a: Arrangement, workload: Workload, passes: str, dtype: str, overlaps: Overlaps = NO_OVERLAPS) -> Schedule:
    cls = algorithm_class(a.algorithm)
    if not cls.square_grid:
        return build_schedule(a.algorithm, workload, passes, dtype, gpus=a.grid[0], async_dgrad=overlaps.async_dgrad,
                              tp_comm_overlap=overlaps.tp_comm_overlap and cls.supports_tp_comm_overlap,
                              tp_comm_overlap_cfg=overlaps.tp_comm_overlap_cfg)
    return build_schedule(a.algorithm, workload, passes, dtype, grid=a.grid, overlap=a.overlap)


def predict_one(G: nx.DiGraph, a: Arrangement, workload: Workload, passes: str = "both", dtype: str = "bfloat16",
                algorithms: dict[str, str] | None = None, router=None, overlaps: Overlaps = NO_OVERLAPS) -> Prediction:
    """Build, simulate and bound one arrangement; a NotApplicable on the way makes it a skipped row."""
    try:
        schedule = _build(a, workload, passes, dtype, overlaps)
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
            workers: int = 1, overlaps: Overlaps = NO_OVERLAPS) -> list[Prediction]:
    """Predictions for ``candidates`` (default: every arrangement of ``gpus``), ranked fastest first,
    skipped ones last in listing order. ``progress(arrangement)`` is called as each one finishes.
    ``prune``: bound first and simulate only what could win (module docstring). ``workers``: forked
    processes that bound and simulate arrangements side by side, on the executor `tpsim sweep` uses
    (``simulator.sweep.executor``: its local pool, whose forked workers inherit the topology and its
    route cache); the rows are the same for every count."""
    candidates = arrangements(gpus) if candidates is None else candidates
    router = TopologyCache(G)  # one route and plan cache for every arrangement on this topology
    with make_executor(workers) as executor:
        if prune:
            return _pruned(G, candidates, workload, passes, dtype, algorithms, router, progress, executor, workers,
                           overlaps)
        rows = []
        one = functools.partial(predict_one, G, workload=workload, passes=passes, dtype=dtype, algorithms=algorithms,
                                overlaps=overlaps, router=router)
        for a, row in zip(candidates, in_order(executor.run(one, candidates))):
            rows.append(row)
            log.info("%s: %s", a.label, rows[-1].skipped or f"{rows[-1].time_s:.6g} s")
            if progress is not None:
                progress(a)
    order = {a: i for i, a in enumerate(candidates)}
    done = sorted((r for r in rows if not r.skipped), key=lambda r: (r.time_s, order[r.arrangement]))
    return done + [r for r in rows if r.skipped]


def _bounded(G, a: Arrangement, workload, passes, dtype, closed_forms, overlaps=NO_OVERLAPS) -> Prediction:
    """``a``'s solo-rank bound and memory, neither compiled nor simulated; a skipped row where it does
    not apply."""
    try:
        schedule = _build(a, workload, passes, dtype, overlaps)
        solo = solo_bound(schedule, G, a.placement, closed_forms=closed_forms)
    except NotApplicable as error:
        return Prediction(a, skipped=str(error).splitlines()[0])
    return Prediction(a, solo_s=solo, memory_bytes=memory_bytes(schedule), simulated=False)


def _evaluated(G, row: Prediction, best: float | None, workload, passes, dtype, algorithms, router,
               overlaps=NO_OVERLAPS) -> Prediction:
    """``row`` with its analytic bound, and simulated too unless that bound exceeds ``best``; one plan
    serves both."""
    a = row.arrangement
    schedule = _build(a, workload, passes, dtype, overlaps)
    plan = plan_on_graph(schedule, G, a.placement)
    bound = analyze(schedule, G, a.placement, algorithms=algorithms, timeline=False, plan=plan, router=router)
    row = dataclasses.replace(row, analytic_s=bound.makespan_s, collectives=len(plan.instances))
    if best is not None and row.analytic_s > best:
        return row
    sim = simulate(schedule, G, a.placement, algorithms=algorithms, timeline=False, plan=plan, router=router)
    return dataclasses.replace(row, time_s=sim.makespan_s, compute_s=sim.compute_s, comm_s=sim.comm_s,
                               wait_s=sim.wait_s, simulated=True)


def _same_program(a: Schedule, b: Schedule) -> bool:
    return a.groups == b.groups and a.buffers == b.buffers and a.programs == b.programs


def _without_duplicates(rows, workload, passes, dtype, overlaps=NO_OVERLAPS) -> list[Prediction]:
    """``rows`` with each arrangement whose schedule equals an earlier one's (same placement) marked
    ``duplicate_of`` it: 2d [q,q,1] and summa25d [q,q,1] build the same program. Equal programs have
    equal bounds and memory, so only rows that share those are built again and compared."""
    alike: dict[tuple, list[Prediction]] = {}
    for row in rows:
        if not row.skipped:
            alike.setdefault((row.arrangement.placement, row.solo_s, row.memory_bytes), []).append(row)
    twin_of: dict[Arrangement, str] = {}
    for members in alike.values():
        if len(members) < 2:
            continue
        firsts: list[tuple[Prediction, Schedule]] = []  # one per distinct program, in listing order
        for row in members:
            schedule = _build(row.arrangement, workload, passes, dtype, overlaps)
            twin = next((first for first, theirs in firsts if _same_program(schedule, theirs)), None)
            if twin is None:
                firsts.append((row, schedule))
            else:
                twin_of[row.arrangement] = twin.arrangement.label
    return [dataclasses.replace(r, duplicate_of=twin_of[r.arrangement]) if r.arrangement in twin_of else r
            for r in rows]


def _pruned(G, candidates, workload, passes, dtype, algorithms, router, progress, executor,
            workers: int, overlaps=NO_OVERLAPS) -> list[Prediction]:
    """``predict`` with pruning: bound everything cheaply, drop duplicates, then in bound order analyse
    and simulate each row while it could still win.

    Two bounds, each a lower bound on the next: the solo-rank bound of every row
    (``simulator.timing.solo_bound``, no compile), then for a row that passes it the analytic bound,
    then the simulation for a row that passes that too. With ``workers`` > 1 (``executor``'s processes)
    the next ``workers`` rows whose solo bound is below the best time so far are evaluated side by
    side, then taken in order as one worker would have: a row whose bound exceeds a time an earlier row
    of its batch just set is left at the bound one worker would have stopped at (its extra work
    wasted), so the rows are those of ``workers=1``.
    """
    closed_forms = ClosedForms(G, algorithms, router=router)

    def bounded(a):
        return _bounded(G, a, workload, passes, dtype, closed_forms, overlaps)

    rows = _without_duplicates(list(in_order(executor.run(bounded, candidates))), workload, passes, dtype, overlaps)
    order = {a: i for i, a in enumerate(candidates)}
    by_bound = sorted((r for r in rows if not r.skipped and not r.duplicate_of),
                      key=lambda r: (r.solo_s, order[r.arrangement]))
    best = None
    done, pruned = [], []
    i = 0
    while i < len(by_bound):
        if best is not None and by_bound[i].solo_s > best:
            batch, results = by_bound[i:], None  # bounds only grow from here: none of these can win
        else:
            batch = [by_bound[i]] + list(itertools.takewhile(lambda r: best is None or r.solo_s <= best,
                                                             by_bound[i + 1:i + workers]))
            at = best
            results = list(in_order(executor.run(
                lambda r: _evaluated(G, r, at, workload, passes, dtype, algorithms, router, overlaps), batch)))
        for k, row in enumerate(batch):
            if best is None or row.solo_s <= best:
                row = results[k]
                if best is not None and row.analytic_s > best:
                    row = dataclasses.replace(row, time_s=None, compute_s=None, comm_s=None, wait_s=None,
                                              simulated=False)
            if row.simulated:
                done.append(row)
                best = row.time_s if best is None else min(best, row.time_s)
            else:
                pruned.append(row)
            log.info("%s: %s", row.arrangement.label, f"{row.time_s:.6g} s" if row.simulated else "bound")
            if progress is not None:
                progress(row.arrangement)
        i += len(batch)
    for row in rows:
        if (row.skipped or row.duplicate_of) and progress is not None:
            progress(row.arrangement)
    done.sort(key=lambda r: (r.time_s, order[r.arrangement]))
    pruned.sort(key=lambda r: (r.bound_s, order[r.arrangement]))
    twins = [r for r in rows if r.duplicate_of]
    return done + pruned + twins + [r for r in rows if r.skipped]

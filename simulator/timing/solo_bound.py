"""A cheap lower bound on a schedule's analytic makespan: a few ranks walked alone, every peer on time.

The analytic model (``simulator.timing.critical_path``) starts a collective or a send/recv when its last
member arrives and ends it a closed-form time later. Walking one rank by itself with every instance
starting the moment that rank arrives (its peers on time) gives that rank a finish no later than the
analytic walk's: each step is a sum or a max of the rank's own clock and a duration, so an earlier start
never ends later. The slowest of the walked ranks is then a lower bound on the analytic makespan, itself
a lower bound on the simulated one, and costs one rank's ops instead of compiling every rank's
(``simulator.timing.plan.compile_schedule``), a third of a 4,096-GPU bound.

Each op is timed as ``compile_schedule`` and ``ClosedForms`` time it: compute ops by the compute model
with the same after-communication flag, communication by ``ClosedForms.time_s`` on the rank's own
payload bytes (matched ops carry equal payloads: validation checks their shapes), so a bound and a
full analysis on one ``TopologyCache`` share the closed-form memo.

Example::

    >>> solo_bound(schedule, G, closed_forms=ClosedForms(G))   # doctest: +SKIP
    0.00671...
"""

from __future__ import annotations

import networkx as nx

from simulator.compute import ComputeConfig, ComputeModel
from simulator.errors import ScheduleError
from simulator.fp8_comm import Fp8Wire
from simulator.ir.checks import spread_ranks
from simulator.ir.schedule import Schedule
from simulator.timing.critical_path import ClosedForms
from simulator.timing.plan import OP_ROLE
from topologies import resolve_placement

__all__ = ["solo_bound", "solo_finish_s", "SOLO_RANKS"]

SOLO_RANKS = 8
"""Ranks walked by default, spread evenly over the world (first and last included)."""


def solo_bound(schedule: Schedule, G: nx.DiGraph, placement: str | None = None, *, closed_forms: ClosedForms,
               compute: ComputeConfig | None = None, ranks: list[int] | None = None) -> float:
    """The slowest finish among ``ranks`` (default ``SOLO_RANKS`` spread ranks) each walked alone;
    a lower bound on ``analyze(schedule, G, placement).makespan_s`` with the same algorithms."""
    grid = schedule.grid if len(schedule.grid) == 3 else None
    gpus = resolve_placement(placement, G, schedule.world_size, grid)
    model = ComputeModel(compute or ComputeConfig.from_sim(G.graph.get("sim")))
    ranks = spread_ranks(schedule.world_size, SOLO_RANKS) if ranks is None else ranks
    wire = Fp8Wire(schedule, [G.nodes[g]["device"] for g in gpus], model.config.fp8_recipe) \
        if model.config.fp8_gemms else None
    return max((solo_finish_s(schedule, rank, gpus, G.nodes[gpus[rank]]["device"], model, closed_forms, wire)
                for rank in ranks), default=0.0)


def solo_finish_s(schedule: Schedule, rank: int, gpus: list[str], device: dict, model: ComputeModel,
                  closed_forms: ClosedForms, wire: Fp8Wire | None = None) -> float:
    """When ``rank`` (on ``gpus[rank]``, a GPU with ``device``) finishes if every peer is on time (``wire``:
    the FP8 plan's gather bytes, as ``compile_schedule`` takes them)."""
    program, buffers, groups = schedule.programs[rank], schedule.buffers[rank], schedule.groups
    # Compute ops are summed per stretch, then added to the clock, as compile_schedule and the analytic walk
    # do: the same float sums keep this bound at or below the analytic one bit for bit.
    clock = stretch = 0.0
    ends: dict[str, float] = {}  # handle -> when its asynchronous op completes
    after_comm = False
    for step, op in enumerate(program):
        role = OP_ROLE[type(op)]
        if role == 0:
            stretch += model.op_time_s(schedule, rank, op, device, after_comm)
            after_comm = False
            continue
        clock += stretch
        stretch = 0.0
        after_comm = True
        if role == 4:
            if op.handle not in ends:
                raise ScheduleError(f"rank {rank} step {step}: wait for handle {op.handle!r}, which no earlier op "
                                    f"of this rank issued")
            clock = max(clock, ends.pop(op.handle))
            continue
        nbytes = buffers[op.payload_buffer()].nbytes
        if wire is not None:
            nbytes = wire.nbytes(rank, step, nbytes)
        if role == 1:
            end = clock + closed_forms.time_s(op.kind, tuple(gpus[r] for r in groups[op.group]), nbytes,
                                              getattr(op, "root", None))
        else:
            pair = (gpus[rank], gpus[op.peer]) if role == 2 else (gpus[op.peer], gpus[rank])
            end = clock + closed_forms.time_s("p2p", pair, nbytes, None)
        if op.handle is not None:
            ends[op.handle] = end
        else:
            clock = end
    return clock + stretch

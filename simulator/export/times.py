"""The durations exported nodes carry: what tpsim's simulator says each op of each rank takes.

A compute op's duration is the compute model's (``simulator.compute``, as compiled into the timing
plan, so the same device, dtype and after-communication rule apply). A communication op's is its
simulated instance's run time on the topology, from the moment its last member issued it to its
completion (contention with whatever else runs included), so a tool that replays a collective's
recorded time, as ASTRA-sim does for a broadcast, replays tpsim's.
"""

from __future__ import annotations

from simulator.ir.schedule import Schedule
from simulator.timing.plan import COMM
from simulator.timing.simulation import plan_on_graph, simulate

__all__ = ["simulated_seconds"]


def simulated_seconds(schedule: Schedule, G, placement: str | None = None,
                      algorithms: dict[str, str] | None = None) -> tuple[list[list[float]], float]:
    """(``seconds[rank][step]`` of every op, the simulated makespan) of ``schedule`` on topology ``G``;
    a ``wait`` takes 0."""
    plan = plan_on_graph(schedule, G, placement)
    result = simulate(schedule, G, placement, algorithms=algorithms, timeline=False, plan=plan)
    seconds = [list(plan.durations[rank]) for rank in range(schedule.world_size)]
    for rank, items in enumerate(plan.items):
        for item in items:
            if item[0] == COMM:
                instance, step = item[1], item[2]
                seconds[rank][step] = instance.end_s - instance.start_s
    return seconds, result.makespan_s

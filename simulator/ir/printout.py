"""The step x rank grid: a schedule printed as one column per rank and one line per step.

Example (2-D SUMMA, gemm forward, [2,2,1], first two ranks)::

    step  rank 0                 rank 1
       0  bc row_j0_k0@0 A       bc row_j0_k0@0 A_ws
       1  bc col_i0_k0@0 B       bc col_i1_k0@0 B
       2  C=A*B                  C=A_ws*B
"""

from __future__ import annotations

from simulator.ir.schedule import Schedule
from simulator.workloads.workload import Workload


def workload_label(schedule: Schedule) -> str:
    """The schedule's workload as its command-line sizes: ``mlp M=8 H=4``, ``transformer B=2 S=8 H=16 A=2 F=64``."""
    return Workload.from_dict(schedule.workload).label()


def format_schedule(schedule: Schedule, ranks: list[int] | None = None, width: int = 24) -> str:
    """The grid for ``ranks`` (default: the first 8), each cell cut to ``width`` characters."""
    shown = list(range(min(8, schedule.world_size))) if ranks is None else ranks
    header = [f"{schedule.algorithm} {list(schedule.grid)} {workload_label(schedule)} pass={schedule.passes} "
              f"dtype={schedule.dtype}, {schedule.world_size} ranks"
              + ("" if len(shown) == schedule.world_size else f", showing ranks {shown[0]}..{shown[-1]}")]

    def cell(text: str) -> str:
        return (text if len(text) <= width else text[: width - 1] + "~").ljust(width)

    header.append("step  " + " ".join(cell(f"rank {r}") for r in shown).rstrip())
    steps = max((len(schedule.programs[r]) for r in shown), default=0)
    for step in range(steps):
        cells = [schedule.programs[r][step].short() if step < len(schedule.programs[r]) else "" for r in shown]
        header.append(f"{step:4d}  " + " ".join(cell(c) for c in cells).rstrip())
    return "\n".join(header)

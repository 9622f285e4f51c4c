"""A pipeline schedule printed as a stage x time grid, micro-batch numbers in the cells.

Each action takes one time slot (forward and backward alike, as PyTorch's pipelining schedules print
theirs), placed where the replay with unit times puts it, so the bubbles show as dots. With
``virtual_stages`` > 1 a cell also names the rank's model chunk (``F3c1``).

Example, 1F1B on 2 ranks, 3 micro-batches::

    >>> from simulator.pipeline.order import pipeline_order
    >>> print(format_order(pipeline_order("1f1b", 2, 3), 3))
    slot   0  1  2  3  4  5  6  7
    pp0   F0 F1  . B0 F2 B1  . B2
    pp1    . F0 B0 F1 B1 F2 B2  .
"""

from __future__ import annotations

from simulator.pipeline.order import Action
from simulator.pipeline.timeline import replay

__all__ = ["format_order"]


def format_order(order: list[list[Action]], micro_batches: int, virtual_stages: int = 1) -> str:
    """The grid: one line per pipeline rank, one column per unit time slot."""
    pp = len(order)
    timeline = replay(order, micro_batches, pp * virtual_stages, lambda a: 1.0)
    slots = int(round(timeline.makespan_s))
    cells = [["."] * slots for _ in range(pp)]
    for r, timed in enumerate(timeline.ranks):
        for t in timed:
            chunk = f"c{t.action.stage // pp}" if virtual_stages > 1 else ""
            cells[r][int(round(t.start_s))] = f"{t.action.kind}{t.action.micro_batch}{chunk}"
    width = max(len(c) for row in cells for c in row) + 1
    lines = ["slot " + "".join(str(i).rjust(width) for i in range(slots))]
    lines += [f"pp{r:<3}" + "".join(c.rjust(width) for c in row) for r, row in enumerate(cells)]
    return "\n".join(line.rstrip() for line in lines)

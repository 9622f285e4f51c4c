"""How a paper's own code ran an algorithm, where it differs from tpsim's faithful schedule.

tpsim's generators build the algorithm as the paper describes it, proven on numbers. A published
timing, though, measured the authors' implementation. Where that implementation is known to skip or
change a step, a reproduction can time the schedule as it ran by rewriting the faithful one here.
The rewritten schedule no longer computes the right gradients; it exists only to be timed.

``without_depth_all_reduce``: Colossal-AI's legacy 2.5-D (Tesseract) layers, the code the SUMMA2.5
paper's experiments ran, leave out the all-reduce of the weight and vector gradients over the depth
group (DESIGN.md, "SUMMA2.5 / Tesseract"; each depth layer sees 1/d of the tokens, so without it the
d copies of a weight drift apart). Every ``all_reduce`` on a ``depth_*`` group goes, with the ``Wait``
of any that was asynchronous; the layer-part labels are moved to the remaining steps.

Example::

    >>> from simulator.algorithms.registry import build_schedule
    >>> from simulator.workloads.workload import Workload
    >>> s = build_schedule("summa25d", Workload.mlp(16, 8), "both", "float32", grid=(2, 2, 2))
    >>> sum(op.kind == "all_reduce" for op in s.programs[0]), sum(
    ...     op.kind == "all_reduce" for op in without_depth_all_reduce(s).programs[0])
    (2, 0)
"""

from __future__ import annotations

import dataclasses

from simulator.ir.schedule import Schedule

__all__ = ["without_depth_all_reduce"]


def _is_depth_all_reduce(op) -> bool:
    return op.kind == "all_reduce" and op.group.startswith("depth_")


def without_depth_all_reduce(schedule: Schedule) -> Schedule:
    """``schedule`` with every all-reduce over a depth group (and its Wait) removed; see the module docstring."""
    programs, parts = [], []
    for rank, program in enumerate(schedule.programs):
        dropped = {op.handle for op in program if _is_depth_all_reduce(op) and op.handle}
        kept_before = []  # kept_before[i]: how many ops before step i survive
        kept = []
        for op in program:
            kept_before.append(len(kept))
            if _is_depth_all_reduce(op) or (op.kind == "wait" and op.handle in dropped):
                continue
            kept.append(op)
        programs.append(kept)
        runs = schedule.parts[rank] if rank < len(schedule.parts) else []
        moved = [(kept_before[first] if first < len(program) else len(kept), label) for first, label in runs]
        parts.append([run for i, run in enumerate(moved) if i + 1 == len(moved) or moved[i + 1][0] > run[0]])
    options = {**schedule.options, "paper_code": "no depth all-reduce"}
    return dataclasses.replace(schedule, programs=programs, parts=parts if schedule.parts else [], options=options)

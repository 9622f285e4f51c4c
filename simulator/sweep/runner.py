"""Run a sweep's plans that are not yet in its file, appending each row as it finishes.

``run_sweep(todo, journal, executor, progress)`` sends every plan not in ``journal`` to the executor
(``plan_run.run_plan`` on its arguments), appends its row (the plan's number and inputs, the result
fields, the spec hash) the moment it comes back, and counts the statuses. An interrupt or a lost worker
stops it with the rows so far on disk; the next run resumes from them (``journal.Journal``).
"""

from __future__ import annotations

from collections import Counter

from simulator.sweep.plan_run import RESULT_FIELDS, run_plan

__all__ = ["run_sweep"]


def run_sweep(todo: list, journal, executor, progress) -> Counter:
    """Run the plans ``todo`` (a list of ``Plan``); append their rows to ``journal``; the status counts."""
    counts = Counter()
    for position, result in executor.run(run_plan, [list(plan.argv) for plan in todo]):
        plan = todo[position]
        journal.append([plan.index, *plan.cells, *(result[f] for f in RESULT_FIELDS), journal.digest])
        counts[result["status"]] += 1
        progress.update()
    return counts

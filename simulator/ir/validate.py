"""Check a Schedule before anything runs it: declarations and shapes, then a dry run of every rank.

A schedule that cannot finish under NCCL's matching rules (see ``simulator.ir.walk``) would hang on real
hardware; ``validate_schedule`` raises ``ScheduleError`` naming the op, the ranks and the group instead.
"""

from __future__ import annotations

from simulator.ir.checks import check_static
from simulator.ir.schedule import Schedule
from simulator.ir.walk import Walker

__all__ = ["validate_schedule"]


def validate_schedule(schedule: Schedule) -> None:
    """Raise ScheduleError with the first problem found; return None when the schedule is sound."""
    check_static(schedule)
    Walker(schedule).run()

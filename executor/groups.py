"""Create every process group a schedule declares, on every rank, in the schedule's declared order.

``torch.distributed.new_group`` must be entered by every rank of the job, members or not, and in the
same order everywhere (measured with gloo: a reordered creation deadlocked with no timeout firing; a group
skipped by non-members gave silently wrong sums). The order used is the schedule's **declaration
order**: ``Schedule.groups`` is an insertion-ordered dict and its JSON form keeps that order, so every
rank, holding the same schedule, walks the same list. (Sorting by name would be as deterministic; the
declaration order is simply what the schedule already fixes, and it keeps row groups before column
groups as the generators emit them.)

Group-local ranks: the IR's group-local rank ``g`` of group ``G`` is ``schedule.groups[G][g]``, as
declared. torch sorts a new group's ranks, so its group rank ``t`` is the t-th smallest member. When a
group is declared out of order, ``GroupInfo.torch_order`` maps torch's order to the IR's; roots are
passed to torch as global ranks, which sidesteps the question for broadcast and reduce.

Worked example: group ``ring = (2, 0, 1)`` (IR order). torch's group holds ranks [0, 1, 2], so torch
rank 0 is global rank 0, IR index 1: ``torch_order = (1, 2, 0)``. An all_gather therefore receives
torch's part t into the IR's part ``torch_order[t]``.

Several schedules run by one job share torch groups that have the same member set (the cache key is
the sorted member tuple); since every rank runs the same schedules in the same order, creation stays
deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch.distributed as dist

from simulator.ir.schedule import Schedule


@dataclass(frozen=True)
class GroupInfo:
    """One declared group on this rank: its members (IR order), torch handle, and order map."""

    name: str
    members: tuple[int, ...]
    handle: Any
    """The torch ProcessGroup, or None when this rank is not a member."""
    torch_order: tuple[int, ...]
    """IR group-local index of torch group rank t (identity when declared in ascending order)."""

    @property
    def in_torch_order(self) -> bool:
        """True when the IR's group-local order equals torch's (members ascending)."""
        return self.torch_order == tuple(range(len(self.members)))


class GroupCache:
    """torch process groups by member set, created on first use; one per job, shared by its schedules."""

    def __init__(self) -> None:
        self._groups: dict[tuple[int, ...], Any] = {}

    def create(self, schedule: Schedule, rank: int) -> dict[str, GroupInfo]:
        """Every group of ``schedule`` in declaration order; every rank must call this identically."""
        table = {}
        for name, members in schedule.groups.items():
            key = tuple(sorted(members))
            if key not in self._groups:
                self._groups[key] = dist.new_group(ranks=list(key))
            handle = self._groups[key] if rank in members else None
            order = tuple(members.index(member) for member in key)
            table[name] = GroupInfo(name, tuple(members), handle, order)
        return table

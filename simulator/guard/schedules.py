"""The guard of the commands that build a schedule: `schedule`, `verify`, `simulate`, `run` (and `export`).

``before_build`` gives ``schedule_from_args`` its hook: called with the algorithm, the resolved grid and
the workload before anything is built, it estimates the build (``tpsim schedule`` adds its full
validation, ``tpsim simulate`` the simulation on its topology) and refuses or notes it
(``simulator.guard.check``). A schedule file is read whole first (at most 1 GiB, ``simulator.limits``);
``guard_loaded`` then guards the simulation of its ops.
"""

from __future__ import annotations

from typing import Callable

from simulator.guard.check import guard
from simulator.guard.costs import build_estimate, schedule_words, simulate_estimate
from simulator.guard.ops import estimated_ops

__all__ = ["before_build", "guard_loaded"]


def before_build(command: str, force: bool = False, *, check: bool = False,
                 simulate_on_gpus: int | None = None) -> Callable[..., None]:
    """The hook for ``schedule_from_args``: guard building (``check``: and validating it in full) or, with
    ``simulate_on_gpus``, building and simulating it on a topology of that many GPUs."""
    def hook(algorithm: str, grid: tuple[int, ...], workload, passes: str, repeat: int) -> None:
        if simulate_on_gpus is None:
            estimate = build_estimate(algorithm, grid, workload, passes, repeat=repeat, check=check)
        else:
            ops, ranks = estimated_ops(algorithm, grid, workload, passes)
            estimate = simulate_estimate(ops * repeat, ranks, simulate_on_gpus,
                                         schedule_words(algorithm, grid, workload), build=True)
        guard(estimate, command, force)

    return hook


def guard_loaded(schedule, gpus: int, command: str, force: bool = False) -> None:
    """Guard simulating a schedule read from a file on a topology of ``gpus`` GPUs."""
    ops = sum(len(program) for program in schedule.programs)
    guard(simulate_estimate(ops, schedule.world_size, gpus, f"{schedule.algorithm} {list(schedule.grid)}"),
          command, force)

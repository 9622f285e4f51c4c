"""The guard of ``tpsim predict --global-batch``: the training-plan search's size, counted before it starts.

The search (``simulator.training.search``) bounds, for every tensor x pipeline x data arrangement, each of
its pipeline schedules (``simulator.pipeline.search_space.schedule_variants``) under the ZeRO stages and
recompute modes it may try (``simulator.training.settings.settings_grid``: 2 recompute levels x 3 ZeRO tiers
without a pipeline, x 1 tier with one; a pinned ``--zero`` or ``--recompute`` is one), each with its
micro-batch search; then it simulates the leading ``--simulate-top`` rows. Those cells, the rows to simulate
and the GPUs their reductions span are what ``simulator.guard.costs.training_estimate`` prices.
"""

from __future__ import annotations

from typing import Callable, Sequence

from simulator.guard.check import Estimate
from simulator.guard.costs import training_estimate
from simulator.training.settings import settings_grid

__all__ = ["search_sizes", "search_estimate"]


def search_sizes(candidates: Sequence, variants: Callable, zero: int | None, recompute: str | None,
                 attention: str) -> tuple[int, int]:
    """(arrangements x their schedule variants, the same x the ZeRO/recompute settings each may bound)."""
    tries = cells = 0
    for a in candidates:
        levels, tiers = settings_grid(zero, recompute, attention, a.pp)
        schedules = len(variants(a))
        tries += schedules
        cells += schedules * len(levels) * len(tiers)
    return tries, cells


def search_estimate(candidates: Sequence, variants: Callable, zero: int | None, recompute: str | None,
                    attention: str, simulate_top: int, gpus: int) -> Estimate:
    """The search of ``candidates`` (``TrainingArrangement``s, each trying ``variants(a)``) on ``gpus`` GPUs."""
    tries, cells = search_sizes(candidates, variants, zero, recompute, attention)
    return training_estimate(len(candidates), tries, cells, min(simulate_top, len(candidates)), gpus)

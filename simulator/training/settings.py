"""The training settings a plan row searches when the user does not pin them: the ZeRO stage and the recompute mode.

A row (an arrangement, its schedule and micro-batch) tries settings on a grid of recompute levels x ZeRO
tiers, lightest first:

- recompute levels: ``none``, ``selective``, ``full``; ``selective`` only under the unfused attention kernel
  (under FlashAttention it recomputes nothing more than flash's own backward: the same step as ``none``);
- ZeRO tiers: stages 0 and 1 together (1 shards the optimizer state: its reduce-scatter and all-gather move
  what stage 0's all-reduce moves, and its optimizer step is sharded, so either can be the faster), then
  stage 2, then stage 3 (each adds communication per micro-batch); with pipelines (pp > 1) only 0 and 1,
  as Megatron-LM and DeepSpeed run them.

Recompute only adds time and ZeRO-2/3 only add communication, while both only lower the memory, so a
heavier setting is tried only where every lighter one does not fit: the row keeps the fastest of the
*lightest fitting* settings, those with no fitting setting lighter in both directions (``lightest_fitting``;
``exhaustive_choice`` is the same rule evaluated on every setting, for the tests). Where nothing fits, the
row shows the setting with the least memory (the last tier, the heaviest recompute) as not fitting.
``--zero`` and ``--recompute`` pin one dimension each (a grid of one cell: the row as before); torchtitan's
per-op ``selective-op`` is tried only where pinned.

Example, pure data parallelism, FlashAttention, nothing pinned::

    >>> settings_grid(None, None, "flash", pp=1)
    (('none', 'full'), ((0, 1), (2,), (3,)))
    >>> settings_grid(1, None, "unfused", pp=4)
    (('none', 'selective', 'full'), ((1,),))
"""

from __future__ import annotations

from typing import Callable

__all__ = ["Setting", "settings_grid", "lightest_fitting", "exhaustive_choice", "short_label"]

Setting = tuple[int, str]
"""(ZeRO stage, recompute mode)."""


def settings_grid(zero: int | None, recompute: str | None, attention: str,
                  pp: int) -> tuple[tuple[str, ...], tuple[tuple[int, ...], ...]]:
    """(recompute levels, ZeRO tiers) a row tries (module docstring); a pinned flag is a single level / tier."""
    if recompute is not None:
        levels: tuple[str, ...] = (recompute,)
    else:
        levels = ("none", "selective", "full") if attention == "unfused" else ("none", "full")
    if zero is not None:
        tiers: tuple[tuple[int, ...], ...] = ((zero,),)
    else:
        tiers = ((0, 1),) if pp > 1 else ((0, 1), (2,), (3,))
    return levels, tiers


def lightest_fitting(levels, tiers, fits: Callable[[Setting], bool | None]) -> tuple[list[Setting], Setting]:
    """(the lightest fitting settings, the least-memory setting) walking the grid from its lightest corner.

    ``fits(setting)`` is asked only for the settings the walk reaches: at each recompute level the tiers are
    tried up to the first that has a fitting stage, and no further than the lowest tier that fitted at a lighter
    level (anything beyond is heavier in both directions than a fitting setting). ``fits`` None (memory not
    modelled) counts as fitting."""
    chosen: list[Setting] = []
    limit = len(tiers)
    for level in levels:
        for j in range(limit):
            here = [(z, level) for z in tiers[j] if fits((z, level)) is not False]
            if here:
                chosen += here
                limit = j
                break
        if limit == 0:
            break
    return chosen, (tiers[-1][-1], levels[-1])


def exhaustive_choice(levels, tiers, fits: Callable[[Setting], bool | None],
                      step_s: Callable[[Setting], float]) -> Setting | None:
    """The fastest lightest-fitting setting, every setting evaluated (the rule ``lightest_fitting`` prunes);
    None when nothing fits."""
    cells = {(i, j): [(z, r) for z in tier if fits((z, r)) is not False]
             for i, r in enumerate(levels) for j, tier in enumerate(tiers)}
    lightest = [s for (i, j), here in cells.items() for s in here
                if not any(cells[i2, j2] for i2 in range(i + 1) for j2 in range(j + 1) if (i2, j2) != (i, j))]
    order = {s: k for k, s in enumerate((z, r) for r in levels for tier in tiers for z in tier)}
    return min(lightest, key=lambda s: (step_s(s), order[s]), default=None)


def short_label(zero: int, recompute: str) -> str:
    """The table's compact column: "Z1 sel", "Z0 -", "Z3 full"."""
    return f"Z{zero} {dict(none='-', selective='sel', full='full', **{'selective-op': 'sel-op'})[recompute]}"

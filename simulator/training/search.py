"""The training-plan search: every tensor x pipeline x data arrangement bounded, the leading ones simulated, ranked.

For each ``TrainingArrangement`` (``simulator.training.arrangement``), and each of its schedule variants
(``variants(a)``: a pipelined row's 1F1B and interleaved schedules, ``simulator.pipeline.search_space``;
the row keeps the variant that fits with the lowest bound, as it keeps the best micro-batch):

1. the micro-batch: the one given, or else the smallest B dividing G / D whose block and LM head the
   algorithm can build (``NotApplicable`` for every B: the row is skipped with the reason of the
   first), then doubled while the doubled one still fits and its bound is lower (a larger micro-batch
   runs larger GEMMs and fewer steps' latencies, and keeps more activations);
2. the contention-free bound of its step (``step_time(..., bound=True)``), cheap enough for every row;
3. its memory per GPU (``memory``, a callable returning an object with ``peak_bytes`` and ``to_dict()``,
   or None when memory is not modelled), and whether it fits: peak <= the device's usable bytes;
4. its training settings, the ZeRO stage and recompute mode (``settings(a, block)``: the grid of
   ``simulator.training.settings``; default: ``options``' own, one cell): the lightest settings that fit are
   bounded and the fastest is kept (``PlanRow.options``); where none fits, the least-memory one is shown.

The fitting rows are ordered by their bound and the leading ``simulate_top`` of them are simulated on
the flow network (contention included). The result lists the fitting rows by step time, simulated
where simulated and the bound elsewhere (each row says which: ``StepTime.model``; a bound row ranked
above a simulated one may be slower once simulated: a larger ``simulate_top`` settles it), then the
rows that do not fit (by bound), then the skipped ones with their reasons, in listing order. The best
simulated row is the plan to launch.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, replace
from typing import Callable, Iterable

import networkx as nx

from simulator.errors import NotApplicable
from simulator.network.topology_cache import TopologyCache
from simulator.training.arrangement import TrainingArrangement
from simulator.training.lm_head import lm_head_workload
from simulator.training.settings import lightest_fitting
from simulator.training.step import StepOptions, StepTime, build_block, step_time

__all__ = ["PlanRow", "plan_training", "micro_batch_for"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PlanRow:
    """One arrangement's outcome: its bound, its simulation (top rows only), memory, or why it was skipped."""

    arrangement: TrainingArrangement
    bound: StepTime | None = None
    simulated: StepTime | None = None
    memory: object | None = None
    """The memory breakdown (``peak_bytes``, ``to_dict()``), or None when not modelled."""
    device_bytes: int | None = None
    """Usable device memory per GPU, bytes, or None when unknown."""
    skipped: str | None = None
    options: StepOptions | None = None
    """The step options the row was bounded under: its ZeRO stage and recompute mode (None: skipped)."""

    @property
    def best(self) -> StepTime | None:
        """The simulated step where there is one, else the bound."""
        return self.simulated or self.bound

    @property
    def fits(self) -> bool | None:
        """Whether the peak memory fits the device (None: unknown)."""
        if self.memory is None or self.device_bytes is None:
            return None
        return self.memory.peak_bytes <= self.device_bytes

    def to_dict(self) -> dict:
        """The ``--json`` row (``tpsim predict --global-batch``)."""
        out = self.arrangement.to_dict()
        out.update(zero=None if self.options is None else self.options.zero,
                   recompute=None if self.options is None else self.options.recompute)
        best = self.best
        if best is not None:
            out.update(best.to_dict())
            out["bound_step_time_s"] = self.bound.step_s
            out["simulated"] = self.simulated is not None
        out.update({"status": "skipped" if self.skipped else "ok", "reason": self.skipped,
                    "memory": None if self.memory is None else self.memory.to_dict(), "fits": self.fits,
                    "device_memory_bytes": self.device_bytes})
        return out


def micro_batch_for(a: TrainingArrangement, make_block: Callable[[int], object], options: StepOptions,
                    micro_batch: int | None, try_build: Callable) -> int:
    """The micro-batch of ``a``: ``micro_batch``, or the smallest B | G/D that ``try_build(a, block, options)``
    accepts."""
    if micro_batch is not None:
        return micro_batch
    per_replica = options.global_batch // a.dp if options.global_batch % a.dp == 0 else 0
    first = None
    for b in (b for b in range(1, per_replica + 1) if per_replica % b == 0):
        try:
            try_build(a, make_block(b), options)
            return b
        except NotApplicable as error:
            first = first or error
    if first is None:
        raise NotApplicable(f"global batch {options.global_batch} is not divisible by dp={a.dp}")
    raise first


def plan_training(G: nx.DiGraph, candidates: Iterable[TrainingArrangement], make_block: Callable[[int], object],
                  options: StepOptions, micro_batch: int | None = None, simulate_top: int = 4,
                  memory: Callable | None = None, device_bytes: int | None = None, try_build: Callable | None = None,
                  router=None, algorithms: dict[str, str] | None = None,
                  progress: Callable[[str], None] | None = None,
                  variants: Callable[[TrainingArrangement], list[TrainingArrangement]] | None = None,
                  cache: dict | None = None, floor: Callable | None = None,
                  settings: Callable | None = None) -> list[PlanRow]:
    """Rows for ``candidates`` in the order of the module docstring. ``make_block(B)`` is the transformer
    block of micro-batch B; ``memory(a, block, options)`` its breakdown; ``progress(label)`` after each row;
    ``variants(a)`` the schedules a row tries (default: ``a`` alone); ``cache`` keeps block times (and
    whatever ``memory`` keeps there) across rows: they depend on the tensor arrangement and B only.
    ``floor(G, a, block, options, router, algorithms, cache)``, a cheap lower bound of a variant's bound:
    variants are tried lowest floor first,
    and one whose floor is not below the best fitting variant's bound is skipped (it cannot be chosen).
    ``settings(a, block)``: (recompute levels, ZeRO tiers) a variant tries (``simulator.training.settings``;
    default: ``options``' own); the floor is taken under the lightest (no recompute, the first tier's highest
    stage: the sharded optimizer step), below every setting's bound."""
    candidates = list(candidates)
    router = router if router is not None else TopologyCache(G)  # routes and plans shared by every row
    cache = {} if cache is None else cache
    rows: list[PlanRow] = []

    def grid(a: TrainingArrangement, block):
        return settings(a, block) if settings is not None else ((options.recompute,), ((options.zero,),))

    def one(a: TrainingArrangement, block, beaten: Callable[[bool | None], bool] = lambda fits: False,
            cutoff: float = math.inf) -> PlanRow | None:
        """``a``'s row under its fastest lightest fitting setting, or None when ``beaten(fits)`` says a variant
        already found is better (memory first) or every fitting setting's floor is at least ``cutoff`` (the
        bound of a fitting variant already found)."""
        levels, tiers = grid(a, block)
        sized: dict = {}

        def fits(setting) -> bool | None:
            opts = replace(options, zero=setting[0], recompute=setting[1])
            mem = memory(a, block, opts) if memory is not None else None
            sized[setting] = (opts, mem)
            return None if mem is None or device_bytes is None else mem.peak_bytes <= device_bytes

        chosen, smallest = lightest_fitting(levels, tiers, fits)
        if not chosen:
            if beaten(False):
                return None
            if smallest not in sized:
                fits(smallest)
            chosen = [smallest]
        best = None
        for setting in chosen:  # lightest first: a tie keeps the lighter
            opts, mem = sized[setting]
            if (cutoff < math.inf and floor is not None and a.pp > 1 and
                    floor(G, a, block, opts, router, algorithms, cache) >= cutoff):
                continue  # its recompute or ZeRO stage already puts it past a fitting variant's bound
            bound = step_time(G, a, block, opts, bound=True, router=router, algorithms=algorithms, cache=cache,
                              split=False)
            if best is None or bound.step_s < best.bound.step_s:
                best = PlanRow(a, bound, memory=mem, device_bytes=device_bytes, options=opts)
        return best

    def lightest(a: TrainingArrangement, block) -> StepOptions:
        levels, tiers = grid(a, block)
        return replace(options, zero=max(tiers[0]), recompute=levels[0])

    def bounded(a: TrainingArrangement, b: int) -> PlanRow:
        block, best, first = make_block(b), None, None
        tries = list(enumerate(variants(a) if variants is not None else [a]))
        floors: dict[int, float] = {}
        if floor is not None and len(tries) > 1:
            for i, variant in tries:
                try:
                    floors[i] = floor(G, variant, block, lightest(variant, block), router, algorithms, cache)
                except NotApplicable as error:
                    first = first or error
            tries = sorted(((i, v) for i, v in tries if i in floors), key=lambda t: (floors[t[0]], t[0]))
        rank = None
        for i, variant in tries:
            if best is not None and best.fits is not False and floors.get(i, -1.0) >= best.bound.step_s:
                break  # sorted by floor: no later variant can beat the best fitting one
            def beaten(fits, i=i) -> bool:  # a variant that does not fit, at least as slow as the best: not chosen
                return best is not None and fits is False and floors.get(i, -1.0) >= best.bound.step_s
            try:
                cutoff = best.bound.step_s if best is not None and best.fits is not False else math.inf
                row = one(variant, block, beaten, cutoff)
            except NotApplicable as error:
                first = first or error
                continue
            if row is None:
                continue
            key = (row.fits is False, row.bound.step_s, i)
            if best is None or key < rank:
                best, rank = row, key
        if best is None:
            raise first
        if best.arrangement.pp > 1:  # the kept schedule's bubble and pipeline communication, split
            best = PlanRow(best.arrangement, step_time(G, best.arrangement, block, best.options, bound=True,
                                                       router=router, algorithms=algorithms, cache=cache),
                           memory=best.memory, device_bytes=device_bytes, options=best.options)
        return best

    for a in candidates:
        try:
            b = micro_batch_for(a, make_block, options, micro_batch, try_build or _builds)
            row = bounded(a, b)
            per_replica = options.global_batch // a.dp
            # Without --batch: double the micro-batch while it still fits and the bound still falls.
            while micro_batch is None and row.fits is not False and per_replica % (2 * b) == 0:
                try:
                    wider = bounded(a, 2 * b)
                except NotApplicable:
                    break
                if wider.fits is False or wider.bound.step_s >= row.bound.step_s:
                    break
                row, b = wider, 2 * b
            rows.append(row)
        except NotApplicable as error:
            rows.append(PlanRow(a, skipped=str(error).splitlines()[0]))
        if progress is not None:
            progress(a.label)
    order = {r.arrangement: i for i, r in enumerate(rows)}  # listing order, with the variant each row chose
    ok = [r for r in rows if not r.skipped and r.fits is not False]
    ok.sort(key=lambda r: (r.bound.step_s, order[r.arrangement]))
    done = []
    for i, r in enumerate(ok):
        if i < simulate_top:
            block = make_block(r.bound.micro_batch)
            sim = step_time(G, r.arrangement, block, r.options, bound=False, router=router, algorithms=algorithms,
                            cache=cache)
            r = PlanRow(r.arrangement, r.bound, sim, r.memory, r.device_bytes, options=r.options)
            if progress is not None:
                progress(r.arrangement.label + " (simulated)")
        done.append(r)
    done.sort(key=lambda r: (r.best.step_s, order[r.arrangement]))
    over = sorted((r for r in rows if not r.skipped and r.fits is False),
                  key=lambda r: (r.bound.step_s, order[r.arrangement]))
    return done + over + [r for r in rows if r.skipped]


def _builds(a: TrainingArrangement, block, options: StepOptions) -> None:
    """Raise NotApplicable unless ``a``'s algorithm takes ``block`` and its LM head (their forwards build)."""
    build_block(a, block, "fwd", options.dtype)
    if options.vocab:
        build_block(a, lm_head_workload(block, options.vocab, a.tp), "fwd", options.dtype)

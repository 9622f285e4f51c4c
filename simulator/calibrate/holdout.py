"""Fit / held-out splits: which size buckets the fit must not see.

A split is a predicate on ``CollectiveSample`` (True: held out). ``alternate_sizes`` is the default
split of ``tpsim calibrate``: within each (kind, ranks) series, the sizes sorted ascending, the 2nd,
4th, 6th, ... smallest are held out, so the fit still spans the whole size range and every held-out
size lies between two fitted ones. On nccl-tests' 8 B .. 1 GiB sweeps (factor 2) it holds out 16 B,
64 B, ..., 2 MiB, 8 MiB, ..., 512 MiB. Example::

    >>> held = holdout_union(sizes_in([1 << 22]), ranks_in([4]))
    >>> held(CollectiveSample("all_reduce", 4, 8, 1e-5)), held(CollectiveSample("all_reduce", 8, 8, 1e-5))
    (True, False)
"""

from __future__ import annotations

from typing import Callable, Iterable

from simulator.calibrate.samples import CollectiveSample
from simulator.errors import InputError
from simulator.sizes import format_size

__all__ = ["Holdout", "alternate_sizes", "sizes_in", "ranks_in", "holdout_union", "nothing", "present"]

Holdout = Callable[[CollectiveSample], bool]


def alternate_sizes(samples: Iterable[CollectiveSample]) -> Holdout:
    """Hold out every other size (2nd, 4th, ... smallest) of each (kind, ranks) series in ``samples``."""
    series: dict[tuple[str, int], set[int]] = {}
    for sample in samples:
        series.setdefault((sample.kind, sample.ranks), set()).add(sample.nbytes)
    held = {(key, size) for key, sizes in series.items() for size in sorted(sizes)[1::2]}
    return lambda sample: ((sample.kind, sample.ranks), sample.nbytes) in held


def sizes_in(sizes: Iterable[int]) -> Holdout:
    """Hold out these nbytes in every series."""
    chosen = frozenset(sizes)
    return lambda sample: sample.nbytes in chosen


def ranks_in(ranks: Iterable[int]) -> Holdout:
    """Hold out every sample on these rank counts."""
    chosen = frozenset(ranks)
    return lambda sample: sample.ranks in chosen


def holdout_union(*splits: Holdout) -> Holdout:
    """Held out by any of ``splits``."""
    return lambda sample: any(split(sample) for split in splits)


def nothing(sample: CollectiveSample) -> bool:
    """Hold out nothing: fit every sample."""
    return False


def present(chosen: Iterable[int], available: Iterable[int], flag: str, what: str) -> list[int]:
    """``chosen`` if every one of them is among ``available`` (the sizes or rank counts the fit sees);
    InputError otherwise: holding out a size no sample has (``--holdout-sizes 0``) held out nothing, and
    the "held-out error" printed was that of no sample at all."""
    chosen, available = list(chosen), sorted(set(available))
    shown = format_size if what == "size" else str
    missing = [value for value in chosen if value not in available]
    if missing:
        listed = ", ".join(shown(v) for v in available[:12]) + (", ..." if len(available) > 12 else "")
        raise InputError(f"{flag}: no sample of {what} {shown(missing[0])} to hold out; the fitted samples have "
                         f"{what}s {listed or 'none'}")
    return chosen

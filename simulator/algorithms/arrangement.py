"""A tensor-parallel arrangement: one algorithm on one grid with one placement, and every one of P GPUs.

``Arrangement`` and ``arrangements`` were ``simulator.predict``'s (which still exports them); they live
here so that ``simulator.training`` (tensor x data parallel plans) and ``simulator.predict`` (which ranks
them) both import them without a circle.

Arrangements of P GPUs (``simulator.algorithms.registry.legal_grids``): ``1d`` and ``1d-sp`` on P;
``2d`` on [q, q, 1] with q*q = P; ``summa25d`` on every [q, q, d] with q*q*d = P; ``cannon25d`` on
every [q, q, c] with c | q; ``3d`` on [q, q, q] with q^3 = P.

Example::

    >>> [a.label for a in arrangements(4, ["1d", "2d"])]
    ['1d [4]', '2d [2,2,1]']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from simulator.algorithms.registry import (ALGORITHMS, OVERLAP_ALGORITHMS, algorithm_class, canonical_algorithm,
                                           legal_grids)
from simulator.errors import InputError

__all__ = ["Arrangement", "arrangements"]


@dataclass(frozen=True)
class Arrangement:
    """One algorithm on one grid with one placement (None: linear) and SUMMA prefetch on or off."""

    algorithm: str
    grid: tuple[int, ...]
    placement: str | None = None
    overlap: bool = False

    @property
    def label(self) -> str:
        """E.g. "summa25d [4,4,4]", "2d+overlap [8,8,1] depth-major"."""
        name = self.algorithm + ("+overlap" if self.overlap else "")
        grid = "[" + ",".join(map(str, self.grid)) + "]"
        return f"{name} {grid}" + (f" {self.placement}" if self.placement else "")



def arrangements(gpus: int, algorithms: Iterable[str] = ALGORITHMS, placements: Iterable[str | None] = (None,),
                 overlap: bool = False) -> list[Arrangement]:
    """Every arrangement of ``gpus`` GPUs, in listing order: algorithm, then grid (largest q first),
    then placement; with ``overlap``, each 2d/summa25d arrangement also with SUMMA prefetch."""
    if not (isinstance(gpus, int) and gpus >= 1):
        raise InputError(f"--gpus must be a positive integer, got {gpus!r}")
    out = []
    for algorithm in dict.fromkeys(canonical_algorithm(a) for a in algorithms):
        for grid in legal_grids(algorithm, gpus):
            # A grid placement means nothing to 1-D's one group; it runs linear only.
            linear = not algorithm_class(algorithm).square_grid
            for placement in ((None,) if linear else tuple(dict.fromkeys(placements))):
                out.append(Arrangement(algorithm, grid, placement))
                if overlap and algorithm in OVERLAP_ALGORITHMS:
                    out.append(Arrangement(algorithm, grid, placement, overlap=True))
    return out

"""A training arrangement: a tensor-parallel arrangement of ``tp`` GPUs times a data-parallel degree D.

P GPUs train one model as D replicas (data parallelism), each replica a tensor-parallel group of
tp = P / D GPUs running one ``simulator.algorithms.arrangement.Arrangement`` (algorithm, grid,
placement). tp = 1 is pure data parallelism, a row of its own (``data parallel dp=64``), never a
degenerate grid: grids with q = 1 (``summa25d [1,1,d]``, whose depth copies are data parallelism in
disguise) are left out, and ``2d [q,q,1]`` and ``summa25d [q,q,1]``, the same algorithm (SUMMA2.5 with
depth 1 is SUMMA), appear once, as ``2d``.

Names a person reads (``label``), after the papers and libraries that made each algorithm known:

=============  =====================================  ======================================
algorithm      label                                  source
=============  =====================================  ======================================
``1d``         ``megatron tp=8 x dp=8``               Shoeybi et al. 2019 (Megatron-LM)
``1d-sp``      ``megatron-sp tp=8 x dp=8``            Korthikanti et al. 2022
``2d``         ``optimus [4,4] x dp=4``               Xu et al. 2021 (Optimus; SUMMA)
``summa25d``   ``tesseract [4,4,4] x dp=2``           Wang et al. 2021 (Tesseract; SUMMA2.5)
``cannon25d``  ``cannon [4,4,2] x dp=2``              Solomonik & Demmel 2011
``3d``         ``3d [2,2,2] x dp=8``                  Bian et al. 2021 (Colossal-AI 3-D)
(tp = 1)       ``data parallel dp=64``
=============  =====================================  ======================================

A non-linear placement and SUMMA prefetch are appended as in ``Arrangement.label``
(``tesseract [4,4,4] depth-major x dp=2``).

Example::

    >>> [a.label for a in training_arrangements(16, ["1d", "2d", "summa25d"], tp_sizes=(1, 4, 16))][:4]
    ['data parallel dp=16', 'megatron tp=4 x dp=4', 'megatron tp=16 x dp=1', 'optimus [2,2] x dp=4']
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

from simulator.algorithms.arrangement import Arrangement
from simulator.algorithms.registry import (ALGORITHMS, OVERLAP_ALGORITHMS, algorithm_class, canonical_algorithm,
                                           legal_grids)
from simulator.errors import InputError

__all__ = ["MAX_DEFAULT_TP", "TrainingArrangement", "training_arrangements", "tp_sizes_of"]

NAMES = {"1d": "megatron", "1d-sp": "megatron-sp", "2d": "optimus", "summa25d": "tesseract",
         "cannon25d": "cannon", "3d": "3d"}
"""Algorithm key -> the name its label uses."""


@dataclass(frozen=True)
class TrainingArrangement:
    """A tensor-parallel arrangement (``tp``) times a data-parallel degree ``dp``."""

    tensor: Arrangement
    """The tensor-parallel group's arrangement; ``1d`` on [1] for pure data parallelism."""
    dp: int
    """Data-parallel degree D: model replicas, each on one tensor-parallel group."""

    def __post_init__(self) -> None:
        if not (isinstance(self.dp, int) and self.dp >= 1):
            raise ValueError(f"data-parallel degree must be an integer >= 1, got {self.dp!r}")

    @property
    def tp(self) -> int:
        """GPUs in one tensor-parallel group."""
        return math.prod(self.tensor.grid)

    @property
    def gpus(self) -> int:
        """tp x dp."""
        return self.tp * self.dp

    @property
    def algorithm(self) -> str:
        return self.tensor.algorithm

    @property
    def label(self) -> str:
        """E.g. ``megatron tp=8 x dp=8``, ``tesseract [4,4,4] x dp=2``, ``data parallel dp=64``."""
        if self.tp == 1:
            return f"data parallel dp={self.dp}"
        a = self.tensor
        name = NAMES.get(a.algorithm, a.algorithm) + ("+overlap" if a.overlap else "")
        if not algorithm_class(a.algorithm).square_grid:
            shape = f"tp={self.tp}"
        else:
            grid = a.grid[:2] if a.algorithm == "2d" else a.grid
            shape = "[" + ",".join(map(str, grid)) + "]"
        placement = f" {a.placement}" if a.placement else ""
        return f"{name} {shape}{placement} x dp={self.dp}"

    def to_dict(self) -> dict:
        """The arrangement's JSON fields: label, algorithm key, grid, placement, overlap, tp, dp."""
        a = self.tensor
        return {"arrangement": self.label, "algorithm": a.algorithm, "grid": list(a.grid),
                "placement": a.placement or "linear", "overlap": a.overlap, "tp": self.tp, "dp": self.dp}


MAX_DEFAULT_TP = 64
"""The largest tensor-parallel size tried by default: 8 DGX servers. Published tensor-parallel runs stay
far below it (Megatron-LM: tp 8 inside a server, Narayanan et al. 2021; Colossal-AI's 2.5-D and 3-D
experiments: up to 64 GPUs, Wang et al. 2021, Bian et al. 2021), and bounding a 1,024-rank grid takes
tens of seconds; ``--tp-sizes`` asks for larger ones."""


def tp_sizes_of(gpus: int, text: str | None = None) -> tuple[int, ...]:
    """The tensor-parallel sizes to try: every divisor of ``gpus`` up to ``MAX_DEFAULT_TP`` (default), or
    ``--tp-sizes`` "1,8,64"."""
    if text is None:
        return tuple(t for t in range(1, min(gpus, MAX_DEFAULT_TP) + 1) if gpus % t == 0)
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise InputError(f"--tp-sizes {text!r}: give integers separated by commas, e.g. 1,8,64") from None
    bad = [t for t in sizes if t < 1 or gpus % t]
    if not sizes or bad:
        raise InputError(f"--tp-sizes {text!r}: {bad[0] if bad else '(none)'} does not divide --gpus {gpus}; "
                         f"valid: divisors of {gpus}")
    return tuple(sorted(set(sizes)))


def training_arrangements(gpus: int, algorithms: Iterable[str] = ALGORITHMS,
                          placements: Iterable[str | None] = (None,), tp_sizes: Iterable[int] | None = None,
                          overlap: bool = False) -> list[TrainingArrangement]:
    """Every tensor x data arrangement of ``gpus`` GPUs: pure data parallelism first (when tp 1 is in
    ``tp_sizes``), then per algorithm, per tp size (smallest first), per grid (largest q first), per placement."""
    if not (isinstance(gpus, int) and gpus >= 1):
        raise InputError(f"--gpus must be a positive integer, got {gpus!r}")
    sizes = tp_sizes_of(gpus) if tp_sizes is None else tuple(tp_sizes)
    out = []
    if 1 in sizes:
        out.append(TrainingArrangement(Arrangement("1d", (1,)), gpus))
    names = list(dict.fromkeys(canonical_algorithm(a) for a in algorithms))
    for algorithm in names:
        square = algorithm_class(algorithm).square_grid
        for tp in (t for t in sizes if t > 1):
            for grid in legal_grids(algorithm, tp):
                if square and (grid[0] == 1 or (algorithm == "summa25d" and grid[2] == 1 and "2d" in names)):
                    continue  # q = 1 is data parallelism; summa25d [q,q,1] is 2d
                for placement in ((None,) if not square else tuple(dict.fromkeys(placements))):
                    out.append(TrainingArrangement(Arrangement(algorithm, grid, placement), gpus // tp))
                    if overlap and algorithm in OVERLAP_ALGORITHMS:
                        out.append(TrainingArrangement(Arrangement(algorithm, grid, placement, True), gpus // tp))
    return out

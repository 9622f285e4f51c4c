"""A training arrangement: a tensor-parallel arrangement of ``tp`` GPUs x pipeline stages x a data-parallel degree D.

P GPUs train one model as D replicas (data parallelism), each replica ``pp`` pipeline stages (pipeline
parallelism: ``simulator.pipeline``; pp = 1 by default), each stage a tensor-parallel group of
tp = P / (pp D) GPUs running one ``simulator.algorithms.arrangement.Arrangement`` (algorithm, grid,
placement). A pipelined arrangement also names its schedule (``1f1b``, ``interleaved`` with
``virtual_stages`` v, ``gpipe``). tp = 1 is pure data parallelism, a row of its own (``data parallel
dp=64``), never a degenerate grid: grids with q = 1 (``summa25d [1,1,d]``, whose depth copies are data parallelism in
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
(``tesseract [4,4,4] depth-major x dp=2``). Pipelines add ``x pp=P`` before the data-parallel degree, and
the schedule unless it is 1F1B: ``megatron tp=8 x pp=16 x dp=8 (interleaved v=3)``, ``tesseract [2,2,2] x
pp=4 x dp=2``, ``data parallel pp=4 x dp=16`` (tp = 1).

Example::

    >>> [a.label for a in training_arrangements(16, ["1d", "2d", "summa25d"], tp_sizes=(1, 4, 16))][:4]
    ['data parallel dp=16', 'megatron tp=4 x dp=4', 'megatron tp=16 x dp=1', 'optimus [2,2] x dp=4']
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Iterable

from simulator.algorithms.arrangement import Arrangement
from simulator.algorithms.registry import (ALGORITHMS, OVERLAP_ALGORITHMS, algorithm_class, canonical_algorithm,
                                           legal_grids)
from simulator.errors import InputError

__all__ = ["MAX_DEFAULT_TP", "TrainingArrangement", "divisors_of", "training_arrangements", "tp_sizes_of"]

_SCHEDULES = ("1f1b", "interleaved", "gpipe")
"""``simulator.pipeline.order.SCHEDULES``, repeated so that this module does not import the pipeline package."""

NAMES = {"1d": "megatron", "1d-sp": "megatron-sp", "2d": "optimus", "summa25d": "tesseract",
         "cannon25d": "cannon", "3d": "3d"}
"""Algorithm key -> the name its label uses."""


@dataclass(frozen=True)
class TrainingArrangement:
    """A tensor-parallel arrangement (``tp``) times a data-parallel degree ``dp``."""

    tensor: Arrangement
    """The tensor-parallel group's arrangement; ``1d`` on [1] for pure data parallelism."""
    dp: int
    """Data-parallel degree D: model replicas, each ``pp`` stages of one tensor-parallel group."""
    pp: int = 1
    """Pipeline stages per replica (pipeline-parallel size); 1: no pipeline."""
    schedule: str = "1f1b"
    """Pipeline schedule: ``1f1b`` (Megatron-LM's default), ``interleaved`` or ``gpipe``."""
    virtual_stages: int = 1
    """Model chunks per pipeline rank (v, interleaved only)."""

    def __post_init__(self) -> None:
        for name, value in (("data-parallel degree", self.dp), ("pipeline size", self.pp),
                            ("virtual stages", self.virtual_stages)):
            if not (isinstance(value, int) and value >= 1):
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if self.schedule not in _SCHEDULES:
            raise ValueError(f"pipeline schedule {self.schedule!r}; valid: {', '.join(_SCHEDULES)}")
        if self.virtual_stages > 1 and self.schedule != "interleaved":
            raise ValueError(f"virtual stages {self.virtual_stages} need the interleaved schedule, not {self.schedule}")

    def pipelined(self, pp: int, schedule: str = "1f1b", virtual_stages: int = 1) -> "TrainingArrangement":
        """The same tensor-parallel arrangement on the same GPUs cut into ``pp`` stages: D shrinks by pp / self.pp."""
        gpus = self.gpus
        if gpus % (self.tp * pp):
            raise ValueError(f"pp={pp} x tp={self.tp} does not divide {gpus} GPUs")
        return replace(self, dp=gpus // (self.tp * pp), pp=pp, schedule=schedule, virtual_stages=virtual_stages)

    @property
    def tp(self) -> int:
        """GPUs in one tensor-parallel group."""
        return math.prod(self.tensor.grid)

    @property
    def gpus(self) -> int:
        """tp x pp x dp."""
        return self.tp * self.pp * self.dp

    @property
    def algorithm(self) -> str:
        return self.tensor.algorithm

    @property
    def label(self) -> str:
        """E.g. ``megatron tp=8 x dp=8``, ``tesseract [4,4,4] x dp=2``, ``data parallel dp=64``,
        ``megatron tp=8 x pp=16 x dp=8 (interleaved v=3)``."""
        pipe = f"pp={self.pp} x " if self.pp > 1 else ""
        how = "" if self.pp == 1 or self.schedule == "1f1b" else \
            f" (interleaved v={self.virtual_stages})" if self.schedule == "interleaved" else f" ({self.schedule})"
        if self.tp == 1:
            return f"data parallel {pipe}dp={self.dp}{how}"
        a = self.tensor
        name = NAMES.get(a.algorithm, a.algorithm) + ("+overlap" if a.overlap else "")
        if not algorithm_class(a.algorithm).square_grid:
            shape = f"tp={self.tp}"
        else:
            grid = a.grid[:2] if a.algorithm == "2d" else a.grid
            shape = "[" + ",".join(map(str, grid)) + "]"
        placement = f" {a.placement}" if a.placement else ""
        return f"{name} {shape}{placement} x {pipe}dp={self.dp}{how}"

    def to_dict(self) -> dict:
        """The arrangement's JSON fields: label, algorithm key, grid, placement, overlap, tp, pp, dp, schedule,
        virtual_stages."""
        a = self.tensor
        return {"arrangement": self.label, "algorithm": a.algorithm, "grid": list(a.grid),
                "placement": a.placement or "linear", "overlap": a.overlap, "tp": self.tp, "pp": self.pp,
                "dp": self.dp, "schedule": self.schedule if self.pp > 1 else None,
                "virtual_stages": self.virtual_stages}


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
    return divisors_of(gpus, text, "--tp-sizes", "1,8,64")


def divisors_of(gpus: int, text: str, flag: str, example: str) -> tuple[int, ...]:
    """``flag``'s comma-separated sizes, sorted and unique, each a divisor of ``gpus``; InputError otherwise."""
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise InputError(f"{flag} {text!r}: give integers separated by commas, e.g. {example}") from None
    bad = [t for t in sizes if t < 1 or gpus % t]
    if not sizes or bad:
        raise InputError(f"{flag} {text!r}: {bad[0] if bad else '(none)'} does not divide --gpus {gpus}; "
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

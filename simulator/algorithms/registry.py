"""One entry point for every schedule generator: ``build_schedule`` and the grids each algorithm allows.

===============  ==========================  ===================================================
algorithm        grid                        file
===============  ==========================  ===================================================
``1d``           ``--gpus P``                ``simulator/algorithms/megatron_1d.py`` (Megatron-LM)
``2d``           ``[q, q, 1]``               ``simulator/algorithms/summa2d.py`` (SUMMA / Optimus)
``cannon25d``    ``[q, q, c]``, c divides q  ``simulator/algorithms/cannon25d.py`` (Solomonik & Demmel)
``summa25d``     ``[q, q, d]``               ``simulator/algorithms/summa25d.py`` (SUMMA2.5 / Tesseract)
===============  ==========================  ===================================================

``tesseract`` is an alias of ``summa25d``.
"""

from __future__ import annotations

import math

from simulator.algorithms.compose import compose
from simulator.algorithms.grid import ProcessGrid
from simulator.errors import InputError
from simulator.ir.schedule import DTYPE_BYTES, Schedule
from simulator.workloads.workload import Workload

ALGORITHMS = ("1d", "2d", "cannon25d", "summa25d")
ALIASES = {"tesseract": "summa25d"}
DTYPES = ("float32", "float64", "bfloat16")
OVERLAP_ALGORITHMS = ("2d", "summa25d")


def canonical_algorithm(name: str) -> str:
    """The algorithm's canonical name; ValueError listing the valid ones."""
    name = ALIASES.get(name, name)
    if name not in ALGORITHMS:
        raise InputError(f"unknown algorithm {name!r}; valid: {', '.join(ALGORITHMS)} (tesseract = summa25d)")
    return name


def legal_grids(algorithm: str, gpus: int) -> list[tuple[int, ...]]:
    """Every grid shape ``algorithm`` can use on ``gpus`` ranks, before workload divisibility."""
    algorithm = canonical_algorithm(algorithm)
    if algorithm == "1d":
        return [(gpus,)]
    grids = []
    for q in range(1, math.isqrt(gpus) + 1):
        if gpus % (q * q):
            continue
        d = gpus // (q * q)
        if algorithm == "2d" and d != 1:
            continue
        if algorithm == "cannon25d" and q % d:
            continue
        grids.append((q, q, d))
    return sorted(grids, reverse=True)


def _resolve_grid(algorithm: str, grid: tuple[int, ...] | None, gpus: int | None) -> tuple[int, ...]:
    if algorithm == "1d":
        if grid is not None:
            raise InputError("1d takes --gpus P, not --grid")
        if gpus is None or gpus < 1:
            raise InputError(f"1d needs --gpus P with P >= 1, got {gpus}")
        return (gpus,)
    if grid is None:
        if gpus is None:
            raise InputError(f"{algorithm} needs --grid Q,Q,D or --gpus P")
        options = legal_grids(algorithm, gpus)
        if len(options) != 1:
            shown = " ".join(",".join(map(str, g)) for g in options) or "none"
            raise InputError(f"{algorithm} on --gpus {gpus} needs --grid Q,Q,D; grids with q*q*d = {gpus}: {shown}")
        return options[0]
    if len(grid) != 3 or grid[0] != grid[1] or min(grid) < 1:
        raise InputError(f"--grid must be Q,Q,D with positive Q and D (a square q x q grid), got "
                         f"{','.join(map(str, grid))}")
    q, _, d = grid
    if gpus is not None and q * q * d != gpus:
        raise InputError(f"--grid {q},{q},{d} has q*q*d = {q * q * d} ranks but --gpus is {gpus}")
    if algorithm == "2d" and d != 1:
        raise InputError(f"2d runs on [q,q,1], got depth {d}; use summa25d or cannon25d for d > 1")
    if algorithm == "cannon25d" and q % d:
        raise InputError(f"cannon25d on [{q},{q},{d}]: the depth c={d} must divide q={q}")
    return tuple(grid)


def build_schedule(algorithm: str, workload: Workload, passes: str = "both", dtype: str = "float32",
                   grid: tuple[int, ...] | None = None, gpus: int | None = None,
                   overlap: bool = False) -> Schedule:
    """The schedule of ``workload`` under ``algorithm``; ValueError naming any violated constraint.

    ``overlap`` (2d and summa25d) issues each SUMMA step's broadcasts one step ahead, asynchronously,
    so that communication overlaps compute; the schedule records it in ``options``.
    """
    algorithm = canonical_algorithm(algorithm)
    if overlap and algorithm not in OVERLAP_ALGORITHMS:
        raise InputError(f"--overlap applies to {' and '.join(OVERLAP_ALGORITHMS)} (SUMMA prefetch), not {algorithm}")
    schedule = _generate(algorithm, workload, passes, dtype, grid, gpus, overlap)
    if overlap:
        schedule.options["overlap"] = True
    return schedule


def _generate(algorithm: str, workload: Workload, passes: str, dtype: str, grid: tuple[int, ...] | None,
              gpus: int | None, overlap: bool) -> Schedule:
    if dtype not in DTYPE_BYTES or dtype == "float16":
        raise InputError(f"unknown dtype {dtype!r}; valid: {', '.join(DTYPES)}")
    workload.input_names(passes)  # validates the pass name
    shape = _resolve_grid(algorithm, grid, gpus)
    if algorithm == "1d":
        from simulator.algorithms.megatron_1d import megatron_1d

        return megatron_1d(shape[0], workload, passes, dtype)
    q, _, d = shape
    if algorithm == "2d":
        from simulator.algorithms.summa2d import summa2d

        return compose(summa2d(q, overlap), workload, passes, dtype)
    if algorithm == "summa25d":
        from simulator.algorithms.summa25d import Summa25D

        return compose(Summa25D(ProcessGrid(q, d), overlap=overlap), workload, passes, dtype)
    from simulator.algorithms.cannon25d import Cannon25D

    return compose(Cannon25D(ProcessGrid(q, d)), workload, passes, dtype)

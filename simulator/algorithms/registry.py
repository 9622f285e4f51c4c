"""The algorithm registry: every tensor-parallel algorithm by name, and ``build_schedule`` over them.

===============  ==========================  ===================================================
algorithm        grid                        class (module)
===============  ==========================  ===================================================
``1d``           ``--gpus P``                ``Megatron1D`` (``megatron_1d``: Megatron-LM)
``1d-sp``        ``--gpus P``                ``Megatron1DSP`` (``megatron_1d_sp``: with sequence
                                             parallelism, Korthikanti et al.)
``2d``           ``[q, q, 1]``               ``Summa2D`` (``summa2d``: SUMMA / Optimus)
``cannon25d``    ``[q, q, c]``, c divides q  ``Cannon25D`` (``cannon25d``: Solomonik & Demmel)
``summa25d``     ``[q, q, d]``               ``Summa25D`` (``summa25d``: SUMMA2.5 / Tesseract)
``3d``           ``[q, q, q]``               ``Tensor3D`` (``tensor3d``: Bian et al., Colossal-AI 3-D)
===============  ==========================  ===================================================

Each algorithm is also known by the name ``predict``'s training plan prints
(``simulator.training.arrangement.NAMES``): ``megatron`` = ``1d``, ``megatron-sp`` = ``1d-sp``,
``optimus`` = ``2d``, ``tesseract`` = ``summa25d``, ``cannon`` = ``cannon25d`` (``3d`` is both). The
command line's ``--algo`` choices, ``predict --algos``, the help texts and the error messages all read
``ALGORITHMS`` and ``ALIASES`` from here, so every name tpsim prints is one it accepts.

To add an algorithm: write one module in ``simulator/algorithms/`` with a subclass of
``simulator.algorithms.base.Algorithm`` (its name, aliases, ``depth_error`` or its own grid methods,
``supports_overlap``, ``on_grid``, and per grid: groups, ``check``, the block layouts of a linear and
its forward, backward-input and backward-weight), and add the class to ``_CLASSES`` below. Nothing
else changes: ``compose`` lowers every workload onto it, and
``tests/simulator/test_registry.py`` runs every registered algorithm through the interpreter, the
validator, the accounting and the simulator.
"""

from __future__ import annotations

import math
from dataclasses import replace

from simulator.algorithms.base import Algorithm
from simulator.algorithms.cannon25d import Cannon25D
from simulator.algorithms.compose import compose
from simulator.algorithms.megatron_1d import Megatron1D
from simulator.algorithms.megatron_1d_sp import Megatron1DSP
from simulator.algorithms.summa2d import Summa2D
from simulator.algorithms.ub_configs import TE_DEFAULT, ub_config
from simulator.algorithms.summa25d import Summa25D
from simulator.algorithms.tensor3d import Tensor3D
from simulator.errors import InputError
from simulator.ir.schedule import Schedule
from simulator.limits import check_ranks
from simulator.workloads.workload import Workload

__all__ = ["ALGORITHMS", "ALIASES", "DTYPES", "OVERLAP_ALGORITHMS", "REGISTRY", "SQUARE_GRID_ALGORITHMS",
           "algorithm_class", "build_schedule", "canonical_algorithm", "legal_grids"]

_CLASSES: tuple[type[Algorithm], ...] = (Megatron1D, Megatron1DSP, Summa2D, Cannon25D, Summa25D, Tensor3D)

REGISTRY: dict[str, type[Algorithm]] = {cls.name: cls for cls in _CLASSES}
"""Canonical name -> algorithm class."""
ALGORITHMS = tuple(REGISTRY)
ALIASES = {alias: cls.name for cls in _CLASSES for alias in cls.aliases}
OVERLAP_ALGORITHMS = tuple(cls.name for cls in _CLASSES if cls.supports_overlap)
SQUARE_GRID_ALGORITHMS = tuple(cls.name for cls in _CLASSES if cls.square_grid)
DTYPES = ("float32", "float64", "bfloat16", "float16")


def canonical_algorithm(name: str) -> str:
    """The algorithm's canonical name; InputError listing the valid ones."""
    name = ALIASES.get(name, name)
    if name not in REGISTRY:
        aliases = ", ".join(f"{alias} = {canonical}" for alias, canonical in ALIASES.items())
        raise InputError(f"unknown algorithm {name!r}; valid: {', '.join(ALGORITHMS)}"
                         + (f" ({aliases})" if aliases else ""))
    return name


def algorithm_class(name: str) -> type[Algorithm]:
    """The class registered under ``name`` or one of its aliases."""
    return REGISTRY[canonical_algorithm(name)]


def legal_grids(algorithm: str, gpus: int) -> list[tuple[int, ...]]:
    """Every grid shape ``algorithm`` can use on ``gpus`` ranks, before workload divisibility; InputError
    for more than ``simulator.limits.MAX_RANKS`` ranks."""
    check_ranks(gpus, f"--gpus {gpus}")
    return algorithm_class(algorithm).legal_grids(gpus)


def build_schedule(algorithm: str, workload: Workload, passes: str = "both", dtype: str = "float32",
                   grid: tuple[int, ...] | None = None, gpus: int | None = None,
                   overlap: bool = False, async_dgrad: bool = False, tp_comm_overlap: bool = False,
                   tp_comm_overlap_cfg: str = TE_DEFAULT) -> Schedule:
    """The schedule of ``workload`` under ``algorithm``; InputError (NotApplicable for sizes that do not
    divide) naming any violated constraint.

    ``overlap`` (2d and summa25d) issues each SUMMA step's broadcasts one step ahead, asynchronously,
    so that communication overlaps compute; the schedule records it in ``options``.
    ``async_dgrad`` (1d and 1d-sp; ignored by the others, which have no such linear) runs each linear's
    input-gradient communication beside its weight-gradient GEMM, as Megatron-LM does by default
    (``megatron_1d``); recorded as ``options["async_dgrad"]``. ``tp_comm_overlap`` (1d-sp only) chunks the
    forward's gathers and reduce-scatters, and the backward's gathers of the row-parallel output gradient,
    beside the GEMMs as Transformer Engine does
    (``tp_comm_overlap``); recorded as ``options["tp_comm_overlap"]``. ``tp_comm_overlap_cfg``: the userbuffers
    config whose SMs its kernels hold (``ub_configs``; TE's default unless named, recorded when named; ignored
    without ``tp_comm_overlap``).
    """
    cls = algorithm_class(algorithm)
    if tp_comm_overlap and not cls.supports_tp_comm_overlap:
        raise InputError(f"--tp-comm-overlap applies to 1d-sp (it overlaps sequence parallelism's gathers and "
                         f"reduce-scatters), not {cls.name}")
    ub_config(tp_comm_overlap_cfg)  # an unknown name is the user's error, with or without the overlap
    if overlap and not cls.supports_overlap:
        raise InputError(f"--overlap applies to {' and '.join(OVERLAP_ALGORITHMS)} (SUMMA prefetch), not {cls.name}")
    if dtype not in DTYPES:
        raise InputError(f"unknown dtype {dtype!r}; valid: {', '.join(DTYPES)}")
    workload.input_names(passes)  # validates the pass name
    # Before resolve_grid: --gpus 10^18 would make it search 10^9 grids, and a large grid's build takes
    # minutes and gigabytes (simulator.limits).
    if gpus is not None:
        check_ranks(gpus, f"--gpus {gpus}")
    if grid is not None and len(grid) == 3 and min(grid) >= 1:
        check_ranks(math.prod(grid), f"--grid {','.join(map(str, grid))}")
    alg = cls.on_grid(cls.resolve_grid(grid, gpus), overlap)
    async_dgrad = async_dgrad and cls.supports_async_dgrad
    if async_dgrad:
        alg = replace(alg, async_dgrad=True)
    if tp_comm_overlap:
        alg = replace(alg, tp_comm_overlap=True, tp_comm_overlap_cfg=tp_comm_overlap_cfg)
    schedule = compose(alg, workload, passes, dtype)
    if overlap:
        schedule.options["overlap"] = True
    if async_dgrad:
        schedule.options["async_dgrad"] = True
    if tp_comm_overlap:
        schedule.options["tp_comm_overlap"] = True
        if tp_comm_overlap_cfg != TE_DEFAULT:  # TE's default is left unrecorded: earlier schedules stay as they were
            schedule.options["tp_comm_overlap_cfg"] = tp_comm_overlap_cfg
    return schedule

"""The pipeline dimension of the training-plan search: pipeline sizes, pipelined candidates, schedule variants.

For P GPUs and a model of L layers, ``predict --global-batch`` crosses every tensor x data arrangement with
a pipeline size pp (default: every divisor of P that divides L, so that every stage holds as many layers;
``--pp-sizes`` pins them, and a pinned pp that does not divide L is a skipped row saying so) wherever
tp x pp divides P. Each pipelined row then tries its schedules (``schedule_variants``): 1F1B and
interleaved 1F1B with every v >= 2 that divides the L / pp layers of a stage (``--schedule`` and
``--virtual-stages`` pin them; GPipe only when asked for: it keeps every micro-batch's activations for no
gain in time), and the search keeps the fastest that fits, as it keeps the best micro-batch.

Example, 16 GPUs, 32 layers, Megatron-LM tp=2::

    >>> from simulator.algorithms.arrangement import Arrangement
    >>> from simulator.training.arrangement import TrainingArrangement
    >>> pipeline_sizes(16, 32)
    (1, 2, 4, 8, 16)
    >>> [a.label for a in pipelined([TrainingArrangement(Arrangement("1d", (2,)), 8)], (1, 4))]
    ['megatron tp=2 x dp=8', 'megatron tp=2 x pp=4 x dp=2']
    >>> [a.label for a in schedule_variants(TrainingArrangement(Arrangement("1d", (2,)), 2, pp=4), 32)]
    ['megatron tp=2 x pp=4 x dp=2', 'megatron tp=2 x pp=4 x dp=2 (interleaved v=2)', \
'megatron tp=2 x pp=4 x dp=2 (interleaved v=4)', 'megatron tp=2 x pp=4 x dp=2 (interleaved v=8)']
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable

from simulator.errors import InputError
from simulator.pipeline.order import SCHEDULES
from simulator.training.arrangement import TrainingArrangement, divisors_of

__all__ = ["check_schedule_flags", "pipeline_sizes", "pipelined", "schedule_variants"]


def pipeline_sizes(gpus: int, layers: int, text: str | None = None) -> tuple[int, ...]:
    """The pipeline sizes to try: every divisor of ``gpus`` that divides ``layers`` (default), or ``--pp-sizes``
    "1,8,16" (each must divide ``gpus``; one that does not divide ``layers`` makes skipped rows)."""
    if text is None:
        return tuple(p for p in range(1, min(gpus, layers) + 1) if gpus % p == 0 and layers % p == 0)
    return divisors_of(gpus, text, "--pp-sizes", "1,8,16")


def check_schedule_flags(schedule: str | None, virtual_stages: int | None) -> None:
    """InputError for a ``--schedule`` / ``--virtual-stages`` pair no pipeline runs."""
    if schedule is not None and schedule not in SCHEDULES:
        raise InputError(f"--schedule {schedule!r} unknown; valid: {', '.join(SCHEDULES)}")
    if virtual_stages is not None:
        if virtual_stages < 1:
            raise InputError(f"--virtual-stages {virtual_stages}: must be an integer >= 1")
        if virtual_stages > 1 and schedule not in (None, "interleaved"):
            raise InputError(f"--virtual-stages {virtual_stages} needs --schedule interleaved (got {schedule}); "
                             f"gpipe and 1f1b run one stage per GPU")
        if virtual_stages == 1 and schedule == "interleaved":
            raise InputError("--schedule interleaved needs --virtual-stages >= 2 (v = 1 is 1f1b)")


def pipelined(candidates: Iterable[TrainingArrangement], sizes: Iterable[int]) -> list[TrainingArrangement]:
    """Each candidate (pp = 1) cut into every pipeline size of ``sizes`` that its tensor-parallel size leaves
    room for (tp x pp divides the GPUs), in candidate order, pp ascending."""
    sizes = sorted(set(sizes))
    out = []
    for a in candidates:
        out += [a.pipelined(pp) if pp > 1 else a for pp in sizes if a.gpus % (a.tp * pp) == 0]
    return out


def schedule_variants(a: TrainingArrangement, layers: int, schedule: str | None = None,
                      virtual_stages: int | None = None) -> list[TrainingArrangement]:
    """The schedules a pipelined row tries (module docstring); pp = 1 is itself. A pinned ``virtual_stages``
    implies the interleaved schedule."""
    if a.pp == 1:
        return [a]
    if virtual_stages is not None and virtual_stages > 1:
        return [replace(a, schedule="interleaved", virtual_stages=virtual_stages)]
    if schedule in ("1f1b", "gpipe"):
        return [replace(a, schedule=schedule, virtual_stages=1)]
    per = layers // a.pp if layers % a.pp == 0 else 0
    interleaved = [replace(a, schedule="interleaved", virtual_stages=v) for v in range(2, per + 1) if per % v == 0]
    if schedule == "interleaved":
        return interleaved or [replace(a, schedule="interleaved", virtual_stages=2)]  # skipped with the reason
    return [replace(a, schedule="1f1b", virtual_stages=1)] + interleaved

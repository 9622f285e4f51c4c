"""Pipeline schedules as data: the ordered (micro-batch, stage, forward|backward) actions of every pipeline rank.

A model of L blocks is cut into ``pp x v`` consecutive virtual stages; virtual stage ``c * pp + r`` runs on
pipeline rank r (its model chunk c), so with v > 1 each GPU holds v chunks round-robin (Narayanan et al.
2021, arXiv 2104.04473, section 2.2). A schedule is one ordered list of ``Action`` per pipeline rank:

- ``gpipe``: every micro-batch's forward, then every backward (Huang et al. 2019; PyTorch's ScheduleGPipe
  order: backwards in micro-batch order).
- ``1f1b``: PipeDream-Flush, Megatron-LM's default (Narayanan et al. 2021, section 2.1): rank r runs
  min(pp - r - 1, m) warm-up forwards, then alternates one forward and one backward, then the cool-down
  backwards. Rank r keeps at most min(pp - r, m) micro-batches' activations.
- ``interleaved``: interleaved 1F1B with v model chunks per rank (Megatron-LM's
  ``forward_backward_pipelining_with_interleaving``): the rank's m x v chunk-passes are taken in groups of
  pp micro-batches per chunk, forwards chunk 0..v-1 and backwards chunk v-1..0; warm-up is
  (pp - r - 1) x 2 + (v - 1) x pp forwards (all of them when m == pp), then one forward one backward.
  Megatron-LM requires m to be a multiple of pp here; so does this generator.

Example, 1F1B on 2 ranks with 3 micro-batches (``F0`` forward of micro-batch 0 on the rank's stage)::

    >>> [" ".join(map(str, r)) for r in pipeline_order("1f1b", pp=2, micro_batches=3)]
    ['F0.s0 F1.s0 B0.s0 F2.s0 B1.s0 B2.s0', 'F0.s1 B0.s1 F1.s1 B1.s1 F2.s1 B2.s1']
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.errors import InputError

__all__ = ["SCHEDULES", "Action", "pipeline_order", "check_pipeline_sizes"]

SCHEDULES = ("gpipe", "1f1b", "interleaved")
"""The pipeline schedules tpsim generates, by the names ``--schedule`` takes."""


@dataclass(frozen=True, order=True)
class Action:
    """One pass of one micro-batch through one virtual stage: ``kind`` "F" (forward) or "B" (backward)."""

    kind: str
    micro_batch: int
    stage: int
    """Virtual stage index 0 .. pp * v - 1; it runs on pipeline rank ``stage % pp``."""

    def __str__(self) -> str:
        return f"{self.kind}{self.micro_batch}.s{self.stage}"


def check_pipeline_sizes(schedule: str, pp: int, micro_batches: int, virtual_stages: int = 1,
                         layers: int | None = None) -> None:
    """Raise InputError naming the first size that ``schedule`` cannot run with (module docstring)."""
    if schedule not in SCHEDULES:
        raise InputError(f"--schedule {schedule!r} unknown; valid: {', '.join(SCHEDULES)}")
    for flag, value in (("--pp", pp), ("--micro-batches", micro_batches), ("--virtual-stages", virtual_stages)):
        if not (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
            raise InputError(f"{flag} must be an integer >= 1, got {value!r}")
    if virtual_stages > 1 and schedule != "interleaved":
        raise InputError(f"--virtual-stages {virtual_stages} needs --schedule interleaved (got {schedule}); "
                         f"gpipe and 1f1b run one stage per GPU")
    if schedule == "interleaved":
        if pp < 2:
            raise InputError("--schedule interleaved needs --pp >= 2 (one pipeline rank has nothing to interleave)")
        if micro_batches % pp:
            raise InputError(f"--schedule interleaved needs --micro-batches a multiple of --pp "
                             f"(Megatron-LM's rule): {micro_batches} is not a multiple of {pp}")
    if layers is not None and layers % (pp * virtual_stages):
        what = f"--pp {pp} x --virtual-stages {virtual_stages} = {pp * virtual_stages}" if virtual_stages > 1 \
            else f"--pp {pp}"
        raise InputError(f"{layers} layers do not divide into {what} stages of equal depth; "
                         f"valid: a stage count that divides {layers}")


def pipeline_order(schedule: str, pp: int, micro_batches: int, virtual_stages: int = 1) -> list[list[Action]]:
    """Each pipeline rank's actions in the order it runs them (module docstring); InputError for bad sizes."""
    check_pipeline_sizes(schedule, pp, micro_batches, virtual_stages)
    if schedule == "gpipe":
        return [[Action("F", i, r) for i in range(micro_batches)] + [Action("B", i, r) for i in range(micro_batches)]
                for r in range(pp)]
    if schedule == "1f1b":
        return [_one_f_one_b(r, pp, micro_batches) for r in range(pp)]
    return [_interleaved(r, pp, micro_batches, virtual_stages) for r in range(pp)]


def _one_f_one_b(r: int, pp: int, m: int) -> list[Action]:
    warmup = min(pp - r - 1, m)
    out = [Action("F", i, r) for i in range(warmup)]
    for i in range(m - warmup):  # steady state: forward i + warmup, then backward i
        out += [Action("F", i + warmup, r), Action("B", i, r)]
    return out + [Action("B", i, r) for i in range(m - warmup, m)]


def _interleaved(r: int, pp: int, m: int, v: int) -> list[Action]:
    total = m * v

    def action(k: int, forward: bool) -> Action:
        # Megatron-LM's get_model_chunk_id / microbatch id: groups of pp consecutive passes share a chunk.
        in_group = k % (pp * v)
        chunk = in_group // pp if forward else v - 1 - in_group // pp
        micro_batch = (k // (pp * v)) * pp + in_group % pp
        return Action("F" if forward else "B", micro_batch, chunk * pp + r)

    warmup = total if m == pp else min((pp - r - 1) * 2 + (v - 1) * pp, total)
    out = [action(k, True) for k in range(warmup)]
    for k in range(total - warmup):
        out += [action(k + warmup, True), action(k, False)]
    return out + [action(k, False) for k in range(total - warmup, total)]

"""Correctness of a run: each output block against a float64 reference, with tolerances per dtype.

Reference: every rank computes the float64 reference of **its own output blocks only**
(``executor.reference.reference_block``), summing each product over chunks of its contracted dimension
(or of M) from blocks of the seeded inputs (``Workload.input_block``): the block itself, its panels
(the inputs every chunk reads again, cut to the block's rows or columns, e.g. X[R, :] for the MLP's
Y[R, C]) and a few chunks of at most 2^20 elements are alive at once, and each input element is
generated once per block; ``executor.reference.peak_bytes`` bounds the memory per block (figures in
``executor.reference``). The arithmetic is torch float64 on the run's device; the comparison is made in
place in the reference block, so the check adds nothing block-sized beyond it. Its results equal
``Workload.reference`` (tests hold them together). The transformer block is not a chain of
products: its reference runs the whole block by token chunks of whole sequences, once per check of a
rank (released when ``check_rank`` returns), and each block is cut from the whole outputs
(``executor.reference``'s docstring says what that holds).

Error measure, as ``simulator.ir.interpret`` defines it: per output tensor, ``max |x - ref| / max |ref|``
over every block the schedule leaves (replicas included, each checked); a non-finite value is an
infinite error, and so is a part of an output tensor that no block covers. Each rank reports the max
absolute error and max |ref| of each of its blocks; ``combine`` divides by the tensor-wide max |ref|.

Tolerances (max-norm relative), with the errors measured on one rank (1d, MLP forward and backward,
m = 16, 256, 1024 with h = 8, 64, 256, seed 0: the dtype's own arithmetic against the reference) and
the margin; tests/executor/test_gloo_runs.py holds each tolerance at least 3x over its dtype's error
and at least 10x under the next coarser dtype's (so a run that silently computed in bfloat16 fails
a float32 check):

=========  ==========  ===================  ==============================================================
dtype      tolerance   measured             margin
=========  ==========  ===================  ==============================================================
float64    1e-12       1.8e-16 .. 7.1e-16   over 1000x: rounding grows about as sqrt(K), K the contraction
float32    1e-5        2.5e-7 .. 7.4e-7     14x at m = 1024 (the weight gradients sum over m); grows slowly
bfloat16   2e-2        5.0e-3 .. 6.4e-3     3x: one bf16 rounding of the output is 2^-9 ~ 2e-3 relative
                                            to the element; the MLP chains four products and a GELU
float16    5e-3        (no generator emits  10x one fp16 rounding (2^-11)
                       float16)
=========  ==========  ===================  ==============================================================

The transformer block (tests/executor/test_transformer_runs.py: b = 4, s = 3, h = 12, a = 6, f = 18, dropout
0.1, every algorithm, seed 3) measures 2e-16 .. 1.7e-15 in float64 and 2.7e-7 .. 8.8e-7 in float32: the
table holds. In bfloat16 it measures 6.7e-3 .. 1.3e-2 (1d on 2 and summa25d [2,2,1], h = 12 .. 256 with
s up to 128, seed 3; float32 2e-7 .. 6.8e-7 on the same runs), flat in the sizes: a longer chain than the
MLP's (two LayerNorms, the softmax, two residuals, three dropouts), so its own entry
``WORKLOAD_TOLERANCES``, 4e-2, 3x over the worst. With its weights scaled by 1/sqrt(fan-in)
(``Workload.input_scale``); unscaled uniform weights measured 0.2 at h = 128, conditioning that no
trained model has.

``tpsim run --tolerance X`` overrides the table for unusual sizes.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from executor import pipeline_check
from executor.reference import graph_outputs, reference_block
from simulator.ir.schedule import Schedule
from simulator.workloads.workload import Workload

__all__ = ["TOLERANCES", "check_rank", "combine", "reference_block", "tolerance_for"]

TOLERANCES = {"float64": 1e-12, "float32": 1e-5, "bfloat16": 2e-2, "float16": 5e-3}
WORKLOAD_TOLERANCES = {("transformer", "bfloat16"): 4e-2}
"""Where a workload's longer chain needs more than its dtype's entry (module doc: measured, 3x margin)."""


def tolerance_for(dtype: str, workload: str | None = None) -> float:
    """The documented tolerance of ``dtype`` (for ``workload``, where it has its own)."""
    return WORKLOAD_TOLERANCES.get((workload, dtype), TOLERANCES[dtype])


def check_rank(schedule: Schedule, rank: int, buffers: dict[str, torch.Tensor], seed: int) -> list[dict]:
    """One record per output block on ``rank``: its max absolute error and the max |ref| of the block."""
    workload = Workload.from_dict(schedule.workload)
    pipelined = pipeline_check.is_pipelined(schedule)
    records = []
    try:
        for block in schedule.outputs:
            if block.rank != rank:
                continue
            value = buffers[block.buffer]
            if pipelined:  # a whole pipelined step: its own reference (executor.pipeline_check)
                cut = pipeline_check.reference_block(schedule, seed, block.tensor, block.rows, block.cols)
                reference = torch.from_numpy(cut.copy()).to(value.device)
            else:
                reference = reference_block(workload, seed, block.tensor, block.rows, block.cols, value.device,
                                            passes=schedule.passes)
            ref_max_abs = _max_abs(reference)
            error = _max_abs(reference.sub_(value))  # in place: no second block-sized float64 array
            records.append({"rank": rank, "tensor": block.tensor, "buffer": block.buffer,
                            "rows": list(block.rows), "cols": list(block.cols),
                            "max_abs_error": error if math.isfinite(error) else math.inf,
                            "ref_max_abs": ref_max_abs})
            del reference
    finally:
        graph_outputs.cache_clear()  # a transformer's whole outputs: not kept while the job's next schedule runs
        pipeline_check.clear()
    return records


def _max_abs(x: torch.Tensor) -> float:
    """max |x| without an |x| temporary; NaN if x has one."""
    return float(torch.maximum(x.max(), -x.min()))


def combine(schedule: Schedule, blocks: list[dict], tolerance: float) -> dict:
    """Per-tensor errors from every rank's block records; adds ``rel_error`` and ``ok`` to each block.

    Returns ``{"errors": {tensor: error}, "max_rel_error": float, "ok": bool, "tolerance": float,
    "uncovered": [tensors no block fully covers]}``.
    """
    expected = (pipeline_check.expected_outputs(schedule) if pipeline_check.is_pipelined(schedule)
                else Workload.from_dict(schedule.workload).output_names(schedule.passes))
    names = list(dict.fromkeys(list(expected) + [b["tensor"] for b in blocks]))
    scale = {name: max((b["ref_max_abs"] for b in blocks if b["tensor"] == name), default=0.0) or 1.0
             for name in names}
    errors = {name: 0.0 for name in names}
    for b in blocks:
        b["rel_error"] = b["max_abs_error"] / scale[b["tensor"]]
        b["ok"] = b["rel_error"] <= tolerance
        errors[b["tensor"]] = max(errors[b["tensor"]], b["rel_error"])
    uncovered = [name for name in names if not _covered(schedule, name)]
    for name in uncovered:
        errors[name] = math.inf
    worst = max(errors.values(), default=0.0)
    return {"errors": errors, "max_rel_error": worst, "ok": worst <= tolerance, "tolerance": tolerance,
            "uncovered": uncovered}


def _covered(schedule: Schedule, tensor: str) -> bool:
    """True when the output blocks of ``tensor`` cover its whole shape (on compressed coordinates)."""
    blocks = [b for b in schedule.outputs if b.tensor == tensor]
    if not blocks or tensor not in schedule.tensors:
        return False
    rows, cols = schedule.tensors[tensor]
    row_cuts = sorted({0, rows, *(r for b in blocks for r in b.rows)})
    col_cuts = sorted({0, cols, *(c for b in blocks for c in b.cols)})
    seen = np.zeros((len(row_cuts) - 1, len(col_cuts) - 1), dtype=bool)
    for b in blocks:
        r0, r1 = row_cuts.index(b.rows[0]), row_cuts.index(b.rows[1])
        c0, c1 = col_cuts.index(b.cols[0]), col_cuts.index(b.cols[1])
        seen[r0:r1, c0:c1] = True
    return bool(seen.all())

"""Correctness of a run: each output block against a float64 reference, with tolerances per dtype.

Reference: every rank computes the float64 reference of **its own output blocks only**, from row and
column panels of the seeded inputs (``Workload.input_block``), never the full matrices: C[R, C'] =
A[R, :] B[:, C'], dA[R, C'] = dC[R, :] B[C', :]^T, dB[R, C'] = A[:, R]^T dC[:, C'], and the MLP's
chain likewise (``reference_block``). The arithmetic is torch float64 on the run's device, so GPU runs
at real sizes check in seconds. Its results equal ``Workload.reference`` (tests hold them together).

Error measure, as ``simulator.interpret`` defines it: per output tensor, ``max |x - ref| / max |ref|``
over every block the schedule leaves (replicas included, each checked); a non-finite value is an
infinite error, and so is a part of an output tensor that no block covers. Each rank reports the max
absolute error and max |ref| of each of its blocks; ``combine`` divides by the tensor-wide max |ref|.

Tolerances (max-norm relative), with the errors seen on these machines (DESIGN.md) and the margin:

=========  ==========  ========================  ========================================================
dtype      tolerance   observed (small sizes)    why this margin
=========  ==========  ========================  ========================================================
float64    1e-12       ~1e-14                    100x: rounding grows ~sqrt(K) with the contraction length
float32    1e-5        ~1e-7                     100x, same reason; K in the tens of thousands stays inside
bfloat16   2e-2        ~4e-3                     5x: one bf16 rounding of the output is 2^-9 ~ 2e-3 relative
                                                 to the element; the MLP chains four products and a GELU
float16    5e-3        (not measured)            10x one fp16 rounding (2^-11)
=========  ==========  ========================  ========================================================

``tpsim run --tolerance X`` overrides the table for unusual sizes.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import torch

from simulator.ir import Schedule
from simulator.workloads import Workload

TOLERANCES = {"float64": 1e-12, "float32": 1e-5, "bfloat16": 2e-2, "float16": 5e-3}
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def tolerance_for(dtype: str) -> float:
    """The documented tolerance of ``dtype``."""
    return TOLERANCES[dtype]


def _gelu(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x**3)))


def _gelu_grad(x: torch.Tensor) -> torch.Tensor:
    t = torch.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x**3))
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * _SQRT_2_OVER_PI * (1.0 + 3 * 0.044715 * x * x)


def reference_block(workload: Workload, seed: int, tensor: str, rows: tuple[int, int], cols: tuple[int, int],
                    device: torch.device | str = "cpu") -> torch.Tensor:
    """Float64 block [rows, cols] of output ``tensor``, computed from input panels only."""
    def get(name: str, r: tuple[int, int], c: tuple[int, int]) -> torch.Tensor:
        return torch.from_numpy(workload.input_block(seed, name, r, c)).to(device)

    m = workload.m
    if workload.name == "gemm":
        k, n = workload.k, workload.n
        rules: dict[str, Callable[[], torch.Tensor]] = {
            "C": lambda: get("A", rows, (0, k)) @ get("B", (0, k), cols),
            "dA": lambda: get("dC", rows, (0, n)) @ get("B", cols, (0, n)).T,
            "dB": lambda: get("A", (0, m), rows).T @ get("dC", (0, m), cols),
        }
    else:
        h, f = workload.hidden, 4 * workload.hidden

        def pre(r: tuple[int, int], c: tuple[int, int]) -> torch.Tensor:  # H[r, c] = X[r, :] W1[:, c]
            return get("X", r, (0, h)) @ get("W1", (0, h), c)

        def dz(r: tuple[int, int], c: tuple[int, int]) -> torch.Tensor:  # dZ[r, c] = dY[r, :] W2[c, :]^T
            return get("dY", r, (0, h)) @ get("W2", c, (0, h)).T

        def dh(r: tuple[int, int], c: tuple[int, int]) -> torch.Tensor:
            return dz(r, c) * _gelu_grad(pre(r, c))

        rules = {
            "H": lambda: pre(rows, cols),
            "Z": lambda: _gelu(pre(rows, cols)),
            "Y": lambda: _gelu(pre(rows, (0, f))) @ get("W2", (0, f), cols),
            "dZ": lambda: dz(rows, cols),
            "dH": lambda: dh(rows, cols),
            "dX": lambda: dh(rows, (0, f)) @ get("W1", cols, (0, f)).T,
            "dW1": lambda: get("X", (0, m), rows).T @ dh((0, m), cols),
            "dW2": lambda: _gelu(pre((0, m), rows)).T @ get("dY", (0, m), cols),
        }
    if tensor not in rules:
        raise ValueError(f"no reference for output tensor {tensor!r} of workload {workload.name}; "
                         f"valid: {', '.join(rules)}")
    return rules[tensor]()


def check_rank(schedule: Schedule, rank: int, buffers: dict[str, torch.Tensor], seed: int) -> list[dict]:
    """One record per output block on ``rank``: its max absolute error and the max |ref| of the block."""
    workload = Workload.from_dict(schedule.workload)
    records = []
    for block in schedule.outputs:
        if block.rank != rank:
            continue
        value = buffers[block.buffer]
        reference = reference_block(workload, seed, block.tensor, block.rows, block.cols, value.device)
        error = float((value.to(torch.float64) - reference).abs().max())
        records.append({"rank": rank, "tensor": block.tensor, "buffer": block.buffer,
                        "rows": list(block.rows), "cols": list(block.cols),
                        "max_abs_error": error if math.isfinite(error) else math.inf,
                        "ref_max_abs": float(reference.abs().max())})
    return records


def combine(schedule: Schedule, blocks: list[dict], tolerance: float) -> dict:
    """Per-tensor errors from every rank's block records; adds ``rel_error`` and ``ok`` to each block.

    Returns ``{"errors": {tensor: error}, "max_rel_error": float, "ok": bool, "tolerance": float,
    "uncovered": [tensors no block fully covers]}``.
    """
    expected = Workload.from_dict(schedule.workload).output_names(schedule.passes)
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

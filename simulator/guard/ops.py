"""How many ops a schedule will have, from its algorithm, grid and workload, before it is built.

Every algorithm lowers each linear's products (forward; backward input and weight gradients) in
*steps*: SUMMA (2d, summa25d) takes q steps of two broadcasts and a gemm, Cannon q/c shifts, and the
1-D and 3-D algorithms a fixed few ops. The counts below were read off built schedules
(``sum(len(p) for p in schedule.programs) / world_size``) on every algorithm at 4 to 512 ranks, gemm,
mlp and transformer, forward and backward:

==============  ================  ==========  =================  ==============================
algorithm       ops per product   gemm (=3p)  mlp (=6 products)  transformer (12 products + rest)
==============  ================  ==========  =================  ==============================
1d              1.5               4           10                 48
1d-sp           2                 6           13                 60
2d [q,q,1]      3q                9q          18q + 2            36q + 52
summa25d        3q (+1 if d > 1)  9q + 1      18q + 4            202 at [4,4,2]
cannon25d       9 q/c + 1         55.5 at     112 at [4,4,2],    248 at [4,4,2], 473.5 at [8,8,2]
                                  [4,4,2]     225 at [8,8,2]
3d              3                 9           20                 96
==============  ================  ==========  =================  ==============================

A transformer block's other layers (norms, attention core, dropout, residuals, their gradients) add
``TRANSFORMER_REST`` ops per rank whatever the grid (20 to 60), fewer with Megatron-LM's fused kernels
(``fused_saving``: each bias-dropout-add is one op where the bias add, dropout and residual add were
three). The estimate is within 1.3x of every count above for forward and backward, within 1.4x for a
forward or backward pass alone
(``tests/simulator/test_guard.py`` holds it to built schedules); a pipelined step (``--pp``) is
the block's ops x layers x micro-batches (``simulator.pipeline.lower`` counts it the same way).
"""

from __future__ import annotations

import math

__all__ = ["TRANSFORMER_REST", "estimated_ops", "fused_saving", "ops_per_product"]

TRANSFORMER_REST = 40
"""Ops per rank of a transformer block's layers other than its four linears, forward and backward."""

_PASS_PRODUCTS = {"fwd": 1, "bwd": 2, "both": 3}
_FUSED_SAVING = {"fwd": (2, 1), "bwd": (1, 0), "both": (3, 1)}
"""Pass -> ops per rank each fused (bias-dropout-add, bias-GeLU) saves: read off built 1-D schedules (the
forward's 3 -> 1 and 2 -> 1; about one in the backward, where the unfused dropout's op goes too)."""


def fused_saving(workload, passes: str = "both") -> int:
    """Ops per rank that ``workload``'s fused bias-dropout-adds and bias-GeLU save against the unfused pieces."""
    from simulator.workloads.layers import BiasDropoutAdd, BiasGelu  # here: the guard stays light to import

    per_add, per_gelu = _FUSED_SAVING.get(passes, _FUSED_SAVING["both"])
    layers = workload.layers()
    return (per_add * sum(isinstance(layer, BiasDropoutAdd) for layer in layers)
            + per_gelu * sum(isinstance(layer, BiasGelu) for layer in layers))
"""Products per linear: the forward one; the input and the weight gradient."""


def ops_per_product(algorithm: str, grid: tuple[int, ...]) -> float:
    """Ops each rank emits for one product of one linear under ``algorithm`` on ``grid`` (module table)."""
    q = grid[0]
    depth = grid[2] if len(grid) == 3 else 1
    if algorithm == "2d":
        return 3.0 * q
    if algorithm == "summa25d":
        return 3.0 * q + (1.0 if depth > 1 else 0.0)
    if algorithm == "cannon25d":
        return 9.0 * q / max(1, depth) + 1.0
    if algorithm == "1d-sp":
        return 2.0
    if algorithm == "3d":
        return 3.0
    return 1.5  # 1d


def estimated_ops(algorithm: str, grid: tuple[int, ...], workload, passes: str = "both") -> tuple[int, int]:
    """(ops in all, ranks) of ``algorithm``'s schedule of ``workload`` (a ``Workload``) on ``grid``."""
    ranks = math.prod(grid)
    factor = _PASS_PRODUCTS.get(passes, 3)
    if algorithm == "3d" and passes != "both":  # its forward gathers and scatters: half its ops, not a third
        factor = 1.5
    per_rank = len(workload.linears()) * factor * ops_per_product(algorithm, grid)
    if workload.name == "transformer":
        per_rank += TRANSFORMER_REST * factor / 3 - fused_saving(workload, passes)
    return int(per_rank * ranks), ranks

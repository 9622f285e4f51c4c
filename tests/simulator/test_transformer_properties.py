"""Property: on any valid shapes, grid, dropout, pass and seed, each algorithm's block matches the reference.

Hypothesis draws the grid first, then sizes its constraints allow: heads and ffn a multiple of what
splits them (P for 1d and 1d-sp, q for the [q, q, d] grids), the batch a multiple of d*q (summa25d)
or q (cannon25d), and for 1d-sp M = b s a multiple of P, through a batch of k P / gcd(P, s), so that
shards often cut sequences. Kept small (15 examples per algorithm) to stay in the fast suite; the
fixed cases of ``test_transformer_proofs`` are the exhaustive part.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.algorithms.registry import build_schedule
from simulator.ir.interpret import interpret
from simulator.ir.validate import validate_schedule
from simulator.workloads.workload import Workload

PASSES = ("fwd", "bwd", "both")
GRIDS = {
    "1d": [(p,) for p in range(1, 7)],
    "1d-sp": [(p,) for p in range(1, 7)],
    "2d": [(q, q, 1) for q in range(1, 4)],
    "summa25d": [(1, 1, 1), (1, 1, 2), (2, 2, 1), (2, 2, 2), (2, 2, 3), (3, 3, 2)],
    "cannon25d": [(1, 1, 1), (2, 2, 1), (2, 2, 2), (3, 3, 1), (3, 3, 3)],
}


@st.composite
def block_on_grid(draw, algorithm: str):
    """(grid keyword arguments, workload) that ``algorithm`` accepts."""
    grid = draw(st.sampled_from(GRIDS[algorithm]))
    split = grid[0]  # P, or q
    seq = draw(st.integers(1, 5))
    k = draw(st.integers(1, 2))
    batch = {"1d": k, "1d-sp": k * split // math.gcd(split, seq),
             "2d": k * split, "summa25d": k * split * grid[-1], "cannon25d": k * split}[algorithm]
    heads = split * draw(st.integers(1, 2))
    head_dim = draw(st.integers(1, 4))
    ffn = split * draw(st.integers(1, 5))
    dropout = draw(st.one_of(st.just(0.0), st.floats(0.01, 0.9)))
    workload = Workload.transformer(batch, seq, heads * head_dim, heads, ffn=ffn, dropout=dropout)
    return ({"gpus": grid[0]} if len(grid) == 1 else {"grid": grid}), workload


@pytest.mark.parametrize("algorithm", list(GRIDS))
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_random_shapes_match_the_reference(algorithm: str, data) -> None:
    grid, workload = data.draw(block_on_grid(algorithm), label="grid, workload")
    passes = data.draw(st.sampled_from(PASSES), label="passes")
    seed = data.draw(st.integers(0, 2**31 - 1), label="seed")
    schedule = build_schedule(algorithm, workload, passes, "float64", **grid)
    validate_schedule(schedule)
    result = interpret(schedule, seed=seed)
    assert result.max_error <= 1e-10, (workload.label(), grid, passes, seed, result.errors)

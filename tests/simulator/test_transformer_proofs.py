"""Every algorithm x pass on the transformer block, proven on numbers by the interpreter.

Sizes are non-square and mostly not powers of two (heads 5, 6, 7 or 12, hidden 14 to 72, sequences of
3 to 7 tokens, ffn often not 4h); each satisfies its algorithm's constraints: 1d and 1d-sp need the
heads and ffn divisible by P (1d-sp also M = b s), summa25d the batch by d*q and the heads and ffn by
q, cannon25d the batch, heads and ffn by q. 1d-sp's P = 4, 7, 8 cases cut sequences across shards
(M/P not a multiple of s). Most cases use dropout, so the masks of split blocks are proven too.
Sizes that do not divide raise NotApplicable naming the constraint.
"""

from __future__ import annotations

import pytest

from simulator.algorithms.registry import build_schedule
from simulator.errors import NotApplicable
from simulator.ir.interpret import interpret
from simulator.ir.validate import validate_schedule
from simulator.workloads.workload import Workload

PASSES = ("fwd", "bwd", "both")
TOLERANCE = 1e-10


def block(batch: int, seq: int, heads: int, head_dim: int, ffn: int, dropout: float) -> Workload:
    return Workload.transformer(batch, seq, heads * head_dim, heads, ffn=ffn, dropout=dropout)


ONE_D = {  # P: (batch, seq, heads, head width, ffn, dropout); M divisible by P for 1d-sp too
    1: (2, 5, 6, 6, 20, 0.2),
    2: (3, 4, 6, 6, 144, 0.0),      # ffn = 4h
    3: (2, 3, 6, 2, 9, 0.2),
    4: (2, 6, 12, 6, 20, 0.2),      # shards of 3 rows: half sequences
    5: (5, 3, 5, 4, 80, 0.1),       # ffn = 4h
    6: (2, 3, 6, 6, 30, 0.0),
    7: (1, 7, 7, 2, 21, 0.2),       # one sequence cut into 7 shards
    8: (4, 6, 8, 3, 40, 0.2),       # shards of 3 rows
}
TWO_D = {  # q: sizes on [q, q, 1]
    1: (3, 5, 6, 6, 20, 0.2),
    2: (2, 5, 6, 6, 144, 0.0),
    3: (3, 3, 6, 4, 33, 0.2),
    4: (4, 3, 12, 6, 20, 0.2),
}
SUMMA = {  # [q, q, d]: sizes, batch divisible by d*q
    (2, 2, 2): (4, 5, 6, 6, 22, 0.2),
    (2, 2, 3): (6, 3, 6, 4, 96, 0.0),
    (3, 3, 2): (6, 3, 6, 6, 42, 0.2),
    (4, 4, 2): (8, 3, 12, 6, 40, 0.2),
}
CANNON = {  # [q, q, c]: sizes, batch divisible by q
    (2, 2, 2): (2, 5, 6, 6, 144, 0.2),
    (4, 4, 2): (4, 3, 12, 6, 20, 0.2),
    (3, 3, 3): (3, 3, 6, 3, 15, 0.0),
}

CASES = ([("1d", {"gpus": p}, sizes) for p, sizes in ONE_D.items()]
         + [("1d-sp", {"gpus": p}, sizes) for p, sizes in ONE_D.items()]
         + [("2d", {"grid": (q, q, 1)}, sizes) for q, sizes in TWO_D.items()]
         + [("summa25d", {"grid": grid}, sizes) for grid, sizes in SUMMA.items()]
         + [("cannon25d", {"grid": grid}, sizes) for grid, sizes in CANNON.items()])


def _id(case) -> str:
    algorithm, grid, sizes = case
    where = f"P={grid['gpus']}" if "gpus" in grid else "[{},{},{}]".format(*grid["grid"])
    return f"{algorithm}-{where}-b{sizes[0]}s{sizes[1]}a{sizes[2]}d{sizes[3]}f{sizes[4]}p{sizes[5]}"


def test_the_cases_cover_what_the_issue_asks() -> None:
    with_dropout = [case for case in CASES if case[2][5] > 0]
    assert 2 * len(with_dropout) >= len(CASES)
    assert any(sizes[4] != 4 * sizes[2] * sizes[3] for _, _, sizes in CASES)
    assert {grid["gpus"] for algorithm, grid, _ in CASES if algorithm == "1d-sp"} == set(range(1, 9))


@pytest.mark.parametrize("passes", PASSES)
@pytest.mark.parametrize("case", CASES, ids=_id)
def test_every_algorithm_and_pass_matches_the_dense_reference(case, passes: str) -> None:
    algorithm, grid, sizes = case
    workload = block(*sizes)
    schedule = build_schedule(algorithm, workload, passes, "float64", **grid)
    validate_schedule(schedule)
    result = interpret(schedule, seed=sum(sizes[:5]))
    assert set(result.errors) == set(workload.output_names(passes))
    assert result.max_error <= TOLERANCE, result.errors


def test_the_seed_reaches_the_masks() -> None:
    """A schedule is proven under any seed: the masks follow it (a different seed, a different answer)."""
    workload = block(*SUMMA[(2, 2, 2)])
    schedule = build_schedule("summa25d", workload, "both", "float64", grid=(2, 2, 2))
    for seed in (0, 1, 2**31 - 1):
        assert interpret(schedule, seed=seed).max_error <= TOLERANCE
    first, second = interpret(schedule, seed=0).outputs, interpret(schedule, seed=1).outputs
    assert abs(first["Y"] - second["Y"]).max() > 1e-3


NOT_APPLICABLE = [  # (algorithm, grid, sizes, the message's pattern)
    ("1d", {"gpus": 4}, (2, 3, 6, 4, 16, 0.0), r"1d on 4 GPUs: heads=6 must be divisible by p = 4"),
    ("1d-sp", {"gpus": 5}, (2, 3, 10, 2, 20, 0.1), r"1d-sp on 5 GPUs: M=6 must be divisible by p = 5"),
    ("1d-sp", {"gpus": 3}, (2, 3, 4, 3, 12, 0.0), r"1d-sp on 3 GPUs: heads=4 must be divisible by p = 3"),
    ("1d", {"gpus": 3}, (2, 3, 6, 2, 10, 0.0), r"1d on 3 GPUs: ffn=10 must be divisible by p = 3"),
    ("2d", {"grid": (2, 2, 1)}, (2, 3, 6, 2, 9, 0.0), r"2d on \[2,2,1\]: ffn=9 must be divisible by q = 2"),
    ("2d", {"grid": (3, 3, 1)}, (3, 3, 4, 3, 12, 0.0), r"2d on \[3,3,1\]: heads=4 must be divisible by q = 3"),
    ("summa25d", {"grid": (2, 2, 2)}, (2, 3, 6, 2, 8, 0.0),
     r"summa25d on \[2,2,2\]: batch=2 must be divisible by d\*q = 4 \(the attention core needs whole sequences"),
    ("summa25d", {"grid": (3, 3, 2)}, (6, 3, 4, 3, 12, 0.2), r"summa25d on \[3,3,2\]: heads=4 must be divisible "
                                                             r"by q = 3"),
    ("cannon25d", {"grid": (2, 2, 2)}, (3, 4, 6, 2, 8, 0.0), r"cannon25d on \[2,2,2\]: batch=3 must be divisible "
                                                             r"by q = 2"),
    ("cannon25d", {"grid": (4, 4, 2)}, (4, 3, 6, 4, 16, 0.0), r"cannon25d on \[4,4,2\]: heads=6 must be divisible "
                                                              r"by q = 4"),
]


def _constraint(case) -> str:
    return f"{case[0]}-{case[3].split(': ')[1].split('=')[0]}"


@pytest.mark.parametrize("algorithm, grid, sizes, message", NOT_APPLICABLE,
                         ids=[_constraint(case) for case in NOT_APPLICABLE])
def test_sizes_that_do_not_divide_name_the_constraint(algorithm, grid, sizes, message) -> None:
    with pytest.raises(NotApplicable, match=message):
        build_schedule(algorithm, block(*sizes), "both", "float64", **grid)

"""3-D tensor parallelism (``simulator.algorithms.tensor3d`` on ``cube``): the cube's lines, proofs on
numbers, the sizes it refuses, the layouts of every linear, and the command line.

Cheapest first. Sizes are non-square and satisfy the constraints of ``Tensor3D.check``: M, and each
linear's K, divisible by q^2; each linear's N by q; the transformer's batch by q^2 and heads by q (its
ffn is not 4h, and every case has dropout, so split masks are proven too).
"""

from __future__ import annotations

import re
from fractions import Fraction

import numpy as np
import pytest

from simulator.algorithms import cube as cube_module
from simulator.algorithms.base import LinearNames
from simulator.algorithms.cube import AXES, ProcessCube
from simulator.algorithms.registry import build_schedule
from simulator.algorithms.tensor3d import Tensor3D
from simulator.errors import NotApplicable
from simulator.ir.interpret import interpret
from simulator.ir.validate import validate_schedule
from simulator.workloads.workload import Workload
from tests.cli_run import run

PASSES = ("fwd", "bwd", "both")
TOLERANCE = 1e-10


# ---- the cube ----------------------------------------------------------------------------------------------------

def test_the_2x2x2_lines_are_the_docstrings_worked_example() -> None:
    example = {name: tuple(int(r) for r in members.split(","))
               for name, members in re.findall(r"([xyz]_[ij]\d_[jk]\d) = \((\d+, \d+)\)", cube_module.__doc__)}
    assert example == {
        "x_j0_k0": (0, 1), "x_j1_k0": (2, 3), "x_j0_k1": (4, 5), "x_j1_k1": (6, 7),
        "y_i0_k0": (0, 2), "y_i1_k0": (1, 3), "y_i0_k1": (4, 6), "y_i1_k1": (5, 7),
        "z_i0_j0": (0, 4), "z_i1_j0": (1, 5), "z_i0_j1": (2, 6), "z_i1_j1": (3, 7)}
    assert ProcessCube(2).groups() == example


LETTER = {"x": "i", "y": "j", "z": "k"}


@pytest.mark.parametrize("q", [1, 2, 3, 4])
def test_every_line_has_q_members_in_coordinate_order_and_each_rank_one_line_per_family(q: int) -> None:
    cube = ProcessCube(q)
    groups = cube.groups()
    assert len(groups) == 3 * q * q
    for name, members in groups.items():
        axis, fixed = name[0], {letter: int(v) for letter, v in re.findall(r"([ijk])(\d+)", name)}
        assert len(members) == q
        for t, rank in enumerate(members):
            c = cube.coords(rank)
            assert c[axis] == t  # group-local rank = the coordinate that varies
            assert {LETTER[a]: c[a] for a in AXES if a != axis} == fixed
    for rank in range(cube.world_size):
        assert cube.rank(**cube.coords(rank)) == rank
        for axis in AXES:
            on = [name for name, members in groups.items() if name[0] == axis and rank in members]
            assert on == [cube.line(axis, rank)]


def test_the_rank_convention_is_the_grids() -> None:
    """r = k q^2 + j q + i with (x, y, z) = (i, j, k), DESIGN.md's [q, q, d] convention at d = q."""
    assert ProcessCube(3).coords(9 * 1 + 3 * 1 + 2) == {"x": 2, "y": 1, "z": 1}
    assert ProcessCube(3).rank(2, 1, 1) == 14
    with pytest.raises(ValueError, match="q >= 1"):
        ProcessCube(0)


# ---- interpreter proofs ------------------------------------------------------------------------------------------

CASES = {  # q -> (gemm, mlp, transformer)
    1: (Workload.gemm(5, 3, 7), Workload.mlp(5, 3), Workload.transformer(2, 3, 6, 2, ffn=10, dropout=0.1)),
    2: (Workload.gemm(12, 8, 6), Workload.mlp(12, 4), Workload.transformer(4, 3, 8, 2, ffn=12, dropout=0.1)),
    3: (Workload.gemm(36, 18, 12), Workload.mlp(18, 9), Workload.transformer(9, 2, 18, 3, ffn=27, dropout=0.1)),
}


@pytest.mark.parametrize("passes", PASSES)
@pytest.mark.parametrize("q, which", [(q, w) for q in CASES for w in range(3)],
                         ids=[f"q{q}-{name}" for q in CASES for name in ("gemm", "mlp", "transformer")])
def test_every_workload_and_pass_matches_the_dense_reference(q: int, which: int, passes: str) -> None:
    workload = CASES[q][which]
    schedule = build_schedule("3d", workload, passes, "float64", grid=(q, q, q))
    assert schedule.algorithm == "3d" and tuple(schedule.grid) == (q, q, q) and schedule.world_size == q ** 3
    validate_schedule(schedule)
    result = interpret(schedule, seed=q + which)
    assert set(result.errors) == set(workload.output_names(passes))
    assert result.max_error <= TOLERANCE, result.errors


def test_the_cases_are_not_square_and_the_transformers_ffn_is_not_4h() -> None:
    for gemm, mlp, block in CASES.values():
        assert len({gemm.m, gemm.k, gemm.n}) == 3 and mlp.m != mlp.hidden
        assert block.ffn != 4 * block.hidden and block.dropout > 0


NOT_APPLICABLE = [  # (q, workload, the message's pattern)
    (2, Workload.gemm(6, 8, 6), r"3d on \[2,2,2\]: M=6 must be divisible by q\^2 = 4"),
    (2, Workload.gemm(12, 6, 6), r"3d on \[2,2,2\]: K=6 must be divisible by q\^2 = 4"),
    (2, Workload.gemm(12, 8, 3), r"3d on \[2,2,2\]: N=3 must be divisible by q = 2"),
    (3, Workload.gemm(36, 18, 10), r"3d on \[3,3,3\]: N=10 must be divisible by q = 3"),
    (2, Workload.mlp(12, 6), r"3d on \[2,2,2\]: hidden=6 must be divisible by q\^2 = 4"),
    (3, Workload.mlp(18, 12), r"3d on \[3,3,3\]: hidden=12 must be divisible by q\^2 = 9"),
    (2, Workload.transformer(2, 3, 8, 2, ffn=12), r"3d on \[2,2,2\]: batch=2 must be divisible by q\^2 = 4 "
                                                   r"\(the attention core needs whole sequences"),
    (3, Workload.transformer(3, 3, 18, 3, ffn=27), r"3d on \[3,3,3\]: batch=3 must be divisible by q\^2 = 9"),
    (2, Workload.transformer(4, 3, 12, 3, ffn=12), r"3d on \[2,2,2\]: heads=3 must be divisible by q = 2"),
    (2, Workload.transformer(4, 3, 6, 2, ffn=12), r"3d on \[2,2,2\]: hidden=6 must be divisible by q\^2 = 4"),
    (2, Workload.transformer(4, 3, 8, 2, ffn=10), r"3d on \[2,2,2\]: ffn=10 must be divisible by q\^2 = 4"),
    (3, Workload.transformer(9, 1, 18, 3, ffn=30), r"3d on \[3,3,3\]: ffn=30 must be divisible by q\^2 = 9"),
]


@pytest.mark.parametrize("q, workload, message", NOT_APPLICABLE,
                         ids=[f"q{q}-{w.name}-{m.split(': ')[1].split('=')[0]}" for q, w, m in NOT_APPLICABLE])
def test_sizes_that_do_not_divide_name_the_constraint(q: int, workload: Workload, message: str) -> None:
    with pytest.raises(NotApplicable, match=message):
        build_schedule("3d", workload, "both", grid=(q, q, q))


# ---- layouts -----------------------------------------------------------------------------------------------------

ROLES = {0: ("x", "z", "y"), 1: ("y", "z", "x")}
"""The docstring's (I, W, O) axes of even and odd linears."""


def _linears(workload: Workload) -> list[LinearNames]:
    return [LinearNames.of(linear, workload.m) for linear in workload.linears()]


def _fractions(blocks, rows: int, cols: int) -> list:
    """``blocks`` with extents as fractions of the tensor: layouts of tensors of different widths compare."""
    return [(rank, tuple(Fraction(r, rows) for r in rs), tuple(Fraction(c, cols) for c in cs))
            for rank, rs, cs in blocks]


def _assert_one_block_per_rank_tiling_once(blocks, rows: int, cols: int, p: int) -> None:
    assert sorted(rank for rank, _, _ in blocks) == list(range(p))
    covered = np.zeros((rows, cols), dtype=int)
    for _, (r0, r1), (c0, c1) in blocks:
        covered[r0:r1, c0:c1] += 1
    assert (covered == 1).all()


@pytest.mark.parametrize("q", [1, 2, 3])
@pytest.mark.parametrize("which", [1, 2], ids=["mlp", "transformer"])
def test_each_linears_output_is_laid_out_as_the_next_ones_input(q: int, which: int) -> None:
    """No re-layout between linears: FC1 -> FC2, and in the block QKV -> (attention) -> proj -> (residual,
    LN2) -> FC1 -> FC2 -> (residual) -> the next block's QKV. Exact where the widths agree, block for
    block where they do not (QKV's 3h columns against the attention output's h)."""
    workload = CASES[q][which]
    alg = Tensor3D(ProcessCube(q))
    alg.check(workload)
    lins = _linears(workload)
    chain = list(zip(lins, lins[1:] + (lins[:1] if workload.name == "transformer" else [])))
    for this, nxt in chain:
        out, inp = alg.output_blocks(this), alg.input_blocks(nxt)
        assert (this.m, this.n) == (nxt.m, nxt.k) or this.y == "QKV"
        if this.n == nxt.k:
            assert out == inp, (this.y, nxt.x)
        assert _fractions(out, this.m, this.n) == _fractions(inp, nxt.m, nxt.k), (this.y, nxt.x)
    if workload.name == "transformer":  # the residual stream X, X2 = X + PD, Y = X2 + FD: one layout
        qkv, proj, fc1, fc2 = lins
        assert alg.input_blocks(qkv) == alg.output_blocks(proj) == alg.input_blocks(fc1) == alg.output_blocks(fc2)


@pytest.mark.parametrize("q", [1, 2, 3])
@pytest.mark.parametrize("which", [0, 1, 2], ids=["gemm", "mlp", "transformer"])
def test_every_rank_holds_one_block_of_each_tensor_and_the_blocks_tile_it_once(q: int, which: int) -> None:
    workload, cube = CASES[q][which], ProcessCube(q)
    alg = Tensor3D(cube)
    for lin in _linears(workload):
        for blocks, rows, cols in ((alg.input_blocks(lin), lin.m, lin.k), (alg.output_blocks(lin), lin.m, lin.n),
                                   (alg.weight_blocks(lin), lin.k, lin.n)):
            _assert_one_block_per_rank_tiling_once(blocks, rows, cols, q ** 3)
            assert {(r1 - r0, c1 - c0) for _, (r0, r1), (c0, c1) in blocks} == {(rows // q ** 2, cols // q)}
        # a vector applied to the output (a bias): one owner per column block, the rank whose two row
        # axes (W and O) are at 0
        _, w, o = ROLES[lin.index % 2]
        owners = alg.vector_blocks(alg.output_blocks(lin))
        covered = np.zeros(lin.n, dtype=int)
        for rank, rows, (c0, c1) in owners:
            covered[c0:c1] += 1
            assert rows == (0, 1) and cube.coords(rank)[w] == cube.coords(rank)[o] == 0
        assert len(owners) == q and (covered == 1).all()


@pytest.mark.parametrize("index", [0, 1, 2, 3])
def test_the_layouts_are_the_docstrings_table(index: int) -> None:
    """X rows (W, I) cols O; W rows (O, W) cols I; Y rows (W, O) cols I, with (I, W, O) = (x, z, y) on even
    linears and (y, z, x) on odd ones; "rows (A, B)" is row block c_A q + c_B of q^2."""
    q, cube = 3, ProcessCube(3)
    lin = LinearNames("X", "W", "Y", 9 * 2, 9 * 3, 3 * 5, index=index)
    alg = Tensor3D(cube)
    i, w, o = ROLES[index % 2]
    for blocks, rows, cols, (ra, rb), col in ((alg.input_blocks(lin), lin.m, lin.k, (w, i), o),
                                              (alg.weight_blocks(lin), lin.k, lin.n, (o, w), i),
                                              (alg.output_blocks(lin), lin.m, lin.n, (w, o), i)):
        for rank, (r0, _), (c0, _) in blocks:
            c = cube.coords(rank)
            assert (r0, c0) == ((c[ra] * q + c[rb]) * rows // q ** 2, c[col] * cols // q)


# ---- the command line --------------------------------------------------------------------------------------------

SIZES = {"gemm": ("--m", "12", "--k", "8", "--n", "6"), "mlp": ("--m", "12", "--hidden", "4"),
         "transformer": ("--batch", "4", "--seq", "3", "--hidden", "8", "--heads", "2", "--ffn", "12",
                         "--dropout", "0.1")}


@pytest.mark.parametrize("workload", list(SIZES))
def test_verify_on_the_2x2x2_cube_passes(capsys, workload: str) -> None:
    status, out, err = run(capsys, "verify", "--algo", "3d", "--grid", "2,2,2", "--workload", workload,
                           *SIZES[workload])
    assert status == 0 and err == "" and "FAIL" not in out and out.strip().endswith("verified")
    assert out.startswith("3d grid [2, 2, 2]")


@pytest.mark.parametrize("grid, message", [(("--grid", "2,2,3"), "3d runs on a cube: --grid Q,Q,Q"),
                                           (("--gpus", "9"), "3d needs P = q^3 GPUs (a [q,q,q] cube), which 9 is not"),
                                           (("--grid", "2,2,2", "--gpus", "9"), "q^3 = 8 ranks but --gpus is 9")])
def test_grids_that_are_not_cubes_are_refused_in_one_line(capsys, grid, message: str) -> None:
    status, out, err = run(capsys, "verify", "--algo", "3d", *grid, "--workload", "gemm", *SIZES["gemm"])
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1 and message in err


def test_gpus_that_are_a_cube_pick_the_cube(capsys) -> None:
    status, out, _ = run(capsys, "verify", "--algo", "3d", "--gpus", "8", "--workload", "gemm", *SIZES["gemm"])
    assert status == 0 and out.startswith("3d grid [2, 2, 2]")
    assert Tensor3D.legal_grids(27) == [(3, 3, 3)] and Tensor3D.legal_grids(9) == []
    assert Tensor3D.legal_grids(1000) == [(10, 10, 10)] and Tensor3D.legal_grids(999) == []


def test_neither_grid_nor_gpus_says_what_is_needed(capsys) -> None:
    status, _, err = run(capsys, "verify", "--algo", "3d", "--workload", "gemm", *SIZES["gemm"])
    assert status == 2 and "None" not in err and "--grid Q,Q,Q" in err

"""Cannon 2.5-D (Solomonik & Demmel 2011): proven on numbers, and its IR held to the closed forms."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.algorithms.cannon25d import Cannon25D
from simulator.algorithms.grid import ProcessGrid
from simulator.algorithms.registry import build_schedule
from simulator.ir.accounting import account
from simulator.ir.interpret import interpret
from simulator.ir.ops import Broadcast, Gemm, Recv, Reduce, Send
from simulator.ir.schedule import DTYPE_BYTES
from simulator.ir.validate import validate_schedule
from simulator.workloads.workload import Workload

PASSES = ("fwd", "bwd", "both")
GRIDS = [(1, 1, 1), (2, 2, 1), (2, 2, 2), (3, 3, 1), (3, 3, 3), (4, 4, 1), (4, 4, 2), (4, 4, 4)]


def sizes_for(q: int) -> tuple[Workload, Workload]:
    """Non-square sizes a [q, q, c] grid divides: gemm M=24, K=16, N=8 at q = 4; mlp M=5q, hidden=3q."""
    return Workload.gemm(6 * q, 4 * q, 2 * q), Workload.mlp(5 * q, 3 * q)


def build(workload: Workload, passes: str, grid: tuple[int, int, int], dtype: str = "float64"):
    return build_schedule("cannon25d", workload, passes, dtype, grid=grid)


@pytest.mark.parametrize("passes", PASSES)
@pytest.mark.parametrize("grid", GRIDS)
def test_matches_dense_float64(grid: tuple[int, int, int], passes: str) -> None:
    for workload in sizes_for(grid[0]):
        schedule = build(workload, passes, grid)
        validate_schedule(schedule)
        result = interpret(schedule, seed=7)
        assert result.ok(1e-10), (workload, result.errors)


@st.composite
def cases(draw):
    q = draw(st.integers(1, 4))
    c = draw(st.sampled_from([d for d in range(1, q + 1) if q % d == 0]))
    m, k, n = (q * draw(st.integers(1, 3)) for _ in range(3))
    workload = Workload.gemm(m, k, n) if draw(st.booleans()) else Workload.mlp(m, k)
    return (q, q, c), workload, draw(st.sampled_from(PASSES))


@settings(max_examples=30, deadline=None)
@given(cases(), st.integers(0, 2**31 - 1))
def test_random_grids_and_shapes(case, seed: int) -> None:
    grid, workload, passes = case
    schedule = build(workload, passes, grid)
    validate_schedule(schedule)
    assert interpret(schedule, seed=seed).ok(1e-10)


# ---- accounting against the closed forms of simulator/algorithms/cannon_steps.py ------------------------------------

def products(workload: Workload, passes: str) -> list[tuple]:
    """(L, R, out block) per product; a factor is (tensor, stored block shape, stored transposed)."""
    def lin(x, w, y, m, k, n):  # the three products of Y = X W, X [m, k], W [k, n]
        dy = (f"d{y}", (m, n), False)
        return {"fwd": ((x, (m, k), False), (w, (k, n), False), (m, n)),
                "dx": (dy, (w, (k, n), True), (m, k)),
                "dw": ((x, (m, k), True), dy, (k, n))}
    if workload.name == "gemm":
        g = lin("A", "B", "C", workload.m, workload.k, workload.n)
        return ([g["fwd"]] if passes != "bwd" else []) + ([g["dx"], g["dw"]] if passes != "fwd" else [])
    m, h = workload.m, workload.hidden
    fc1, fc2 = lin("X", "W1", "H", m, h, 4 * h), lin("Z", "W2", "Y", m, 4 * h, h)
    forward = [fc1["fwd"], fc2["fwd"]] if passes != "bwd" else []
    backward = [fc2["dx"], fc2["dw"], fc1["dx"], fc1["dw"]] if passes != "fwd" else []
    return forward + backward


def expected_account(q: int, c: int, workload: Workload, passes: str, itemsize: int) -> list[tuple]:
    """Per rank (p2p messages, payload bytes, depth broadcasts, depth reduces), from the closed forms."""
    s = q // c
    out = []
    for rank in range(q * q * c):
        k, rest = divmod(rank, q * q)
        j, i = divmod(rest, q)
        messages = payload = broadcasts = reduces = 0
        replicated: set[str] = set()
        for left, right, out_block in products(workload, passes):
            for side, (name, shape, transposed) in (("L", left), ("R", right)):
                if transposed:
                    home = i == j and (i + k * s) % q == 0
                else:
                    home = ((j if side == "L" else i) + k * s) % q == 0
                sent = (0 if home else 2) + 2 * (s - 1)  # skew send + recv, then s-1 shift sends + recvs
                messages += sent
                block = shape[0] // q * (shape[1] // q) * itemsize
                payload += sent * block
                if c > 1 and name not in replicated:
                    replicated.add(name)
                    broadcasts += 1
                    payload += block
            if c > 1:
                reduces += 1
                payload += out_block[0] // q * (out_block[1] // q) * itemsize
        out.append((messages, payload, broadcasts, reduces))
    return out


@pytest.mark.parametrize("passes", PASSES)
@pytest.mark.parametrize("grid", [(1, 1, 1), (2, 2, 1), (2, 2, 2), (3, 3, 1), (3, 3, 3), (4, 4, 2), (4, 4, 4),
                                  (6, 6, 2), (6, 6, 3), (8, 8, 4)])
@pytest.mark.parametrize("name", ["gemm", "mlp"])
def test_per_rank_messages_and_payload_closed_form(name: str, grid: tuple[int, int, int], passes: str) -> None:
    q, _, c = grid
    workload = sizes_for(q)[name == "mlp"]
    schedule = build(workload, passes, grid, "float32")
    got = [(a.p2p_messages, a.payload_bytes, a.collectives_by_kind[f"broadcast/{c}"],
            a.collectives_by_kind[f"reduce/{c}"]) for a in account(schedule)]
    assert got == expected_account(q, c, workload, passes, DTYPE_BYTES["float32"])
    for a in account(schedule):
        assert a.collectives == (sum(a.collectives_by_kind.values()) if c > 1 else 0)
        assert set(a.collectives_by_kind) <= {f"broadcast/{c}", f"reduce/{c}"}


@pytest.mark.parametrize("name, passes, broadcasts, reduces", [
    ("gemm", "fwd", 2, 1), ("gemm", "bwd", 3, 2), ("gemm", "both", 3, 3),
    ("mlp", "fwd", 4, 2), ("mlp", "bwd", 6, 4), ("mlp", "both", 6, 6)])
def test_depth_collective_counts(name: str, passes: str, broadcasts: int, reduces: int) -> None:
    """One depth broadcast per distinct factor tensor (replicas are reused), one depth reduce per product."""
    workload = sizes_for(4)[name == "mlp"]
    for acct in account(build(workload, passes, (4, 4, 2))):
        assert dict(acct.collectives_by_kind) == {"broadcast/2": broadcasts, "reduce/2": reduces}
    for acct in account(build(workload, passes, (4, 4, 1))):
        assert acct.collectives == 0  # c = 1 is plain 2-D Cannon: shifts only


def received_bytes(schedule, rank: int) -> int:
    return sum(schedule.payload_bytes(rank, op) for op in schedule.programs[rank] if isinstance(op, Recv))


@pytest.mark.parametrize("q", [4, 8])
@pytest.mark.parametrize("passes", PASSES)
def test_shift_traffic_falls_by_c(q: int, passes: str) -> None:
    """At fixed q the skew + shift bytes a rank receives fall from q blocks per factor to q/c (the 2.5-D point)."""
    workload = Workload.gemm(6 * q, 4 * q, 2 * q)
    flat = build(workload, passes, (q, q, 1))
    flat_max = max(received_bytes(flat, r) for r in range(flat.world_size))
    for c in [d for d in (1, 2, 4, 8) if q % d == 0]:
        schedule = build(workload, passes, (q, q, c))
        assert max(received_bytes(schedule, r) for r in range(schedule.world_size)) * c == flat_max
        # Rank 0's blocks never need a skew, so its sends are the shifts alone: q/c - 1 per factor per product.
        shift_sends = sum(isinstance(op, Send) for op in schedule.programs[0])
        assert shift_sends == len(products(workload, passes)) * 2 * (q // c - 1)


@pytest.mark.parametrize("grid", [(1, 1, 1), (2, 2, 2), (3, 3, 1), (4, 4, 2), (4, 4, 4)])
def test_gemm_flops_sum_to_2mkn_per_product(grid: tuple[int, int, int]) -> None:
    q = grid[0]
    m, k, n = 6 * q, 4 * q, 2 * q
    schedule = build(Workload.gemm(m, k, n), "both", grid)
    assert sum(a.gemm_flops for a in account(schedule)) == 3 * 2 * m * k * n
    h = 3 * q
    mlp = build(Workload.mlp(m, h), "both", grid)
    assert sum(a.gemm_flops for a in account(mlp)) == 6 * (2 * m * h * 4 * h)
    steps = q // grid[2]  # q/c gemms per product on every rank
    assert all(sum(isinstance(op, Gemm) for op in program) == 3 * steps for program in schedule.programs)


# ---- the shape of the program ---------------------------------------------------------------------------

def test_whole_program_of_one_rank() -> None:
    """[4,4,2] forward, rank (j, i, k) = (1, 2, 1): skew of A only (l0 = 1, B(1, 2) is at home), 2 steps."""
    grid = ProcessGrid(4, 2)
    rank = grid.rank(1, 2, 1)
    program = [op.short() for op in build(Workload.gemm(8, 8, 8), "fwd", (4, 4, 2)).programs[rank]]
    a_home = grid.rank(1, 1, 1)  # A(1, 1) comes from column 1; this rank's A(1, 2) goes to column 3
    assert program == [
        "bc depth_j1_i2@0 A_rep", "bc depth_j1_i2@0 B_rep",
        f"send>{grid.rank(1, 3, 1)} A_rep &A_send", f"recv<{a_home} A_cur0 &A_recv",
        "wait A_send", "wait A_recv",
        f"send>{grid.rank(1, 1, 1)} A_cur0 &A_send", f"recv<{grid.rank(1, 3, 1)} A_cur1 &A_recv",
        f"send>{grid.rank(0, 2, 1)} B_rep &B_send", f"recv<{grid.rank(2, 2, 1)} B_cur0 &B_recv",
        "C_part=A_cur0*B_rep",
        "wait A_send", "wait A_recv", "wait B_send", "wait B_recv",
        "C_part+=A_cur1*B_cur0",
        "rd depth_j1_i2@0 C_part>C",
    ]


def test_shifts_stay_in_rows_and_columns_and_backward_transposes_by_messages() -> None:
    """Forward skew and shifts stay inside a row (A) or column (B); dA's skew sends B(j, i) across the diagonal."""
    q, c = 4, 2
    grid = ProcessGrid(q, c)
    schedule = build(Workload.gemm(8, 8, 8), "both", (q, q, c))
    for rank, program in enumerate(schedule.programs):
        j, i, k = grid.coords(rank)
        first_reduce = next(n for n, op in enumerate(program) if isinstance(op, Reduce))
        for op in program[:first_reduce]:
            if isinstance(op, (Send, Recv)):
                pj, pi, pk = grid.coords(op.peer)
                assert pk == k and (pj == j if op.buf.startswith("A") else pi == i), (rank, op)
        # dA = dC B^T: B(j, i) is block (i, j) of B^T, first needed by row (i - j - k*q/c) of column j.
        first_b = next(op for op in program[first_reduce + 1:] if isinstance(op, Send) and op.buf[0] == "B")
        if i == j and (i + k * q // c) % q == 0:  # already at home: the first send is the shift up
            assert first_b.peer == grid.rank((j - 1) % q, i, k)
        else:
            assert first_b.peer == grid.rank((i - j - k * q // c) % q, j, k), (rank, first_b)


def test_replicas_are_broadcast_once() -> None:
    schedule = build(Workload.gemm(8, 8, 8), "both", (2, 2, 2))
    for program in schedule.programs:
        sent = [op.buf.removesuffix("_rep") for op in program if isinstance(op, Broadcast)]
        assert sent == ["A", "B", "dC"]


def test_depth_one_declares_no_groups() -> None:
    schedule = build(Workload.gemm(8, 8, 8), "both", (2, 2, 1))
    assert schedule.groups == {}
    assert Cannon25D(ProcessGrid(2, 2)).groups() == {
        "depth_j0_i0": (0, 4), "depth_j0_i1": (1, 5), "depth_j1_i0": (2, 6), "depth_j1_i1": (3, 7)}


# ---- bad arguments -------------------------------------------------------------------------------------

@pytest.mark.parametrize("grid, workload, message", [
    ((4, 4, 3), Workload.gemm(8, 8, 8), r"depth c=3 must divide q=4"),
    ((4, 4, 2), Workload.gemm(10, 8, 8), r"cannon25d on \[4,4,2\]: M=10 must be divisible by q = 4"),
    ((4, 4, 2), Workload.gemm(8, 6, 8), r"K=6 must be divisible by q = 4"),
    ((3, 3, 1), Workload.gemm(9, 9, 4), r"N=4 must be divisible by q = 3"),
    ((4, 4, 1), Workload.mlp(8, 6), r"hidden=6 must be divisible by q = 4"),
    ((2, 2, 2), Workload.mlp(3, 4), r"M=3 must be divisible by q = 2"),
])
def test_bad_arguments_name_the_constraint(grid, workload: Workload, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build(workload, "both", grid)


def test_check_validates_the_grid_itself() -> None:
    with pytest.raises(ValueError, match=r"cannon25d on \[6,6,4\]: the depth c=4 must divide q=6"):
        Cannon25D(ProcessGrid(6, 4)).check(Workload.gemm(12, 12, 12))

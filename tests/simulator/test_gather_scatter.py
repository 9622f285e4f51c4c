"""all_gather and reduce_scatter, which no generator emits: the interpreter's rules and the accounting's
payload rule (all_gather counts the output buffer, reduce_scatter the input), without torch.

The schedule computes C = A B (A [6, 3], B [3, 9]) on 3 ranks through group ``ring`` = (2, 0, 1),
declared out of rank order so that group order, not rank order, decides where each block goes. The
rank with ring index g starts with A's row block g and B's column block g, gathers both whole (A
synchronously along rows, B asynchronously along columns), multiplies column g of A by row g of B
into a partial sum P of C, and reduce-scatters P twice: along rows synchronously, along columns
asynchronously.
"""

from __future__ import annotations

import numpy as np

from simulator.ir.accounting import account
from simulator.ir.builder import ScheduleBuilder
from simulator.ir.interpret import interpret, run_schedule
from simulator.ir.ops import AllGather, Gemm, ReduceScatter, Slice, Wait
from simulator.ir.validate import validate_schedule
from simulator.workloads.workload import Workload

RING = (2, 0, 1)
M, K, N = 6, 3, 9


def gather_scatter_schedule():
    b = ScheduleBuilder("gather-scatter", (3,), Workload.gemm(M, K, N), "fwd", "float32", 3, {"ring": RING})
    for rank in range(3):
        g = RING.index(rank)
        b.block("input", rank, "A_blk", "A", (2 * g, 2 * g + 2), (0, K))
        b.block("input", rank, "B_blk", "B", (0, K), (3 * g, 3 * g + 3))
        for name, shape in (("A_full", (M, K)), ("B_full", (K, N)), ("A_col", (M, 1)), ("B_row", (1, N)),
                            ("P", (M, N))):
            b.buffer(rank, name, shape)
        b.emit(rank, AllGather(group="ring", inp="A_blk", out="A_full", axis=0))
        b.emit(rank, AllGather(group="ring", inp="B_blk", out="B_full", axis=1, handle="gather"))
        b.emit(rank, Wait(handle="gather"))
        b.emit(rank, Slice(out="A_col", src="A_full", src_cols=(g, g + 1)))
        b.emit(rank, Slice(out="B_row", src="B_full", src_rows=(g, g + 1)))
        b.emit(rank, Gemm(out="P", a="A_col", b="B_row"))
        b.block("output", rank, "C_rows", "C", (2 * g, 2 * g + 2), (0, N))
        b.emit(rank, ReduceScatter(group="ring", inp="P", out="C_rows", axis=0))
        b.block("output", rank, "C_cols", "C", (0, M), (3 * g, 3 * g + 3))
        b.emit(rank, ReduceScatter(group="ring", inp="P", out="C_cols", axis=1, handle="scatter"))
        b.emit(rank, Wait(handle="scatter"))
    return b.build()


def test_interpreter_gathers_and_scatters_in_group_order() -> None:
    schedule = gather_scatter_schedule()
    validate_schedule(schedule)
    a = np.arange(M * K, dtype=float).reshape(M, K)
    b = np.arange(K * N, dtype=float).reshape(K, N) - 7
    c = a @ b
    memory = run_schedule(schedule, {"A": a, "B": b})
    for rank in range(3):
        g = RING.index(rank)
        assert np.array_equal(memory[rank]["A_full"], a)
        assert np.array_equal(memory[rank]["B_full"], b)
        assert np.array_equal(memory[rank]["P"], np.outer(a[:, g], b[g]))
        assert np.array_equal(memory[rank]["C_rows"], c[2 * g:2 * g + 2])
        assert np.array_equal(memory[rank]["C_cols"], c[:, 3 * g:3 * g + 3])
    result = interpret(schedule, seed=3)
    assert result.ok(1e-12), result.errors
    assert np.allclose(result.outputs["C"], Workload.gemm(M, K, N).reference(3, "fwd")["C"], rtol=1e-12, atol=0)


def test_payload_is_the_gather_output_and_the_scatter_input() -> None:
    accounts = account(gather_scatter_schedule())
    gathered = M * K + K * N  # A_full and B_full, not the blocks sent (6 + 9 elements)
    scattered = 2 * M * N  # P twice, not the blocks kept (18 + 18 elements)
    for acct in accounts:
        assert acct.collectives == 4 and acct.p2p_messages == 0
        assert dict(acct.collectives_by_kind) == {"all_gather/3": 2, "reduce_scatter/3": 2}
        assert acct.payload_bytes == (gathered + scattered) * 4  # float32
        assert acct.gemm_flops == acct.flops == 2 * M * 1 * N

"""Schedules the executor tests run: the issue's small grids, and one hand-made schedule that uses every op
kind the generators do not (all_gather, reduce_scatter, both axes, a group declared out of order).

Multi-process tests fork gloo ranks from the pytest process (``executor.launch.run_local``), which has
imported torch once, so a job of 8 ranks starts in well under a second.
"""

from __future__ import annotations

from simulator.algorithms.registry import build_schedule
from simulator.ir.builder import ScheduleBuilder
from simulator.ir.ops import (AllGather, AllReduce, Broadcast, Gemm, Local, Recv, Reduce, ReduceScatter, Send, Slice,
                              Wait)
from simulator.workloads.workload import Workload

GEMM = Workload.gemm(16, 8, 8)
MLP = Workload.mlp(16, 8)
WORKLOADS = {"gemm": GEMM, "mlp": MLP}
GRIDS = {"1d": {"gpus": 4}, "2d": {"grid": (2, 2, 1)}, "summa25d": {"grid": (2, 2, 2)},
         "cannon25d": {"grid": (2, 2, 2)}}
"""The issue's grids: 1d on 4; 2d [2,2,1]; summa25d [2,2,2]; cannon25d [2,2,2]."""
WORLD = {"1d": 4, "2d": 4, "summa25d": 8, "cannon25d": 8}
OVERLAP = ("2d", "summa25d")


def gpu_count() -> int:
    """CUDA GPUs visible, for skip conditions: counted in a forked probe (``executor.launch.visible_gpus``).

    Skip conditions run in the pytest process, which forks the ranks of every test after them; asking
    torch.cuda whether it is available there would initialise the CUDA driver in the parent of NCCL ranks.
    """
    from executor.launch import visible_gpus

    return visible_gpus()


def make(algo: str, workload: str = "gemm", passes: str = "both", dtype: str = "float32", overlap: bool = False):
    """The schedule of ``algo`` on its test grid."""
    return build_schedule(algo, WORKLOADS[workload], passes, dtype, overlap=overlap, **GRIDS[algo])


def every_variant(algo: str, dtype: str = "float32") -> list:
    """Every workload x pass (x --overlap where the algorithm has it) of ``algo``."""
    overlaps = (False, True) if algo in OVERLAP else (False,)
    return [make(algo, w, p, dtype, o) for w in WORKLOADS for p in ("fwd", "bwd", "both") for o in overlaps]


def mixed_schedule():
    """C = A B on 3 ranks through every collective kind, both axes, and one send/recv pair.

    Group ``ring`` is declared (2, 0, 1): IR index g is global rank ring[g], so torch's sorted group
    order differs from the IR's and every order mapping is exercised. Group ``all`` = (0, 1, 2) takes
    the single-tensor fast paths. Rank with ring index g starts with A's row block g and B's column
    block g; every output block below must equal the matching block of A B.
    """
    w = Workload.gemm(6, 6, 6)
    ring, everyone = (2, 0, 1), (0, 1, 2)
    b = ScheduleBuilder("mixed", (3,), w, "fwd", "float32", 3, {"ring": ring, "all": everyone})
    for rank in range(3):
        g = ring.index(rank)
        rows = (2 * g, 2 * g + 2)
        b.block("input", rank, "A_blk", "A", rows, (0, 6))
        b.block("input", rank, "B_blk", "B", (0, 6), (2 * g, 2 * g + 2))
        for name, shape in (("A_full", (6, 6)), ("B_full", (6, 6)), ("A_cols", (6, 2)), ("B_rows", (2, 6)),
                            ("P", (6, 6)), ("C_red", (6, 6)), ("C_bc", (6, 6)), ("C_own", (2, 6))):
            b.buffer(rank, name, shape)
        b.emit(rank, AllGather(group="ring", inp="A_blk", out="A_full", axis=0))
        b.emit(rank, AllGather(group="ring", inp="B_blk", out="B_full", axis=1, handle="bg"))
        b.emit(rank, Wait(handle="bg"))
        b.emit(rank, Slice(out="A_cols", src="A_full", src_cols=(2 * g, 2 * g + 2)))
        b.emit(rank, Slice(out="B_rows", src="B_full", src_rows=(2 * g, 2 * g + 2)))
        b.emit(rank, Gemm(out="P", a="A_cols", b="B_rows"))  # this rank's partial sum of C
        b.block("output", rank, "C_rows", "C", rows, (0, 6))
        b.emit(rank, ReduceScatter(group="ring", inp="P", out="C_rows", axis=0))
        b.block("output", rank, "C_cols", "C", (0, 6), (2 * g, 2 * g + 2))
        b.emit(rank, ReduceScatter(group="ring", inp="P", out="C_cols", axis=1, handle="rs"))
        b.emit(rank, Wait(handle="rs"))
        b.block("output", rank, "C_rs", "C", (2 * rank, 2 * rank + 2), (0, 6))
        b.emit(rank, ReduceScatter(group="all", inp="P", out="C_rs", axis=0))
        # gloo overwrites a non-root's reduce input; P is read again below, so the executor must protect it
        b.emit(rank, Reduce(group="ring", root=1, buf="P", out="C_red"))
        b.emit(rank, AllReduce(group="ring", buf="P", handle="ar"))
        b.emit(rank, Wait(handle="ar"))
        b.block("output", rank, "P", "C", (0, 6), (0, 6))
        if rank == ring[0]:
            b.emit(rank, Local(fn="copy", out="C_bc", inputs=("P",)))
        b.emit(rank, Broadcast(group="ring", root=0, buf="C_bc"))
        b.block("output", rank, "C_bc", "C", (0, 6), (0, 6))
        b.emit(rank, Slice(out="C_own", src="P", src_rows=(2 * rank, 2 * rank + 2)))
        b.block("output", rank, "C_ag", "C", (0, 6), (0, 6))
        b.emit(rank, AllGather(group="all", inp="C_own", out="C_ag", axis=0))
    b.block("output", ring[1], "C_red", "C", (0, 6), (0, 6))  # the reduce's root: ring index 1 = rank 0
    b.block("output", 1, "C_peer", "C", (0, 2), (0, 6))
    b.emit(0, Send(peer=1, buf="C_ag"))  # rank 0 sends its gathered C; rank 1 keeps rows 0..1 of it
    b.buffer(1, "C_recv", (6, 6))
    b.emit(1, Recv(peer=0, buf="C_recv"))
    b.emit(1, Slice(out="C_peer", src="C_recv", src_rows=(0, 2)))
    return b.build()

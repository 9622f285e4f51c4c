"""Buffer liveness over a rank's program: hand-made programs with exact peaks, then generated schedules."""

from __future__ import annotations

import pytest

from simulator.algorithms.registry import build_schedule
from simulator.ir.ops import Broadcast, Gemm, Wait
from simulator.ir.schedule import BufferSpec, Schedule
from simulator.memory.liveness import live_intervals, peak_live
from simulator.predict import memory_bytes
from simulator.workloads.workload import Workload


def one_rank(programs, shapes, groups=None) -> Schedule:
    """A schedule of float32 [n, 1] buffers: shapes maps name -> n, so a buffer is 4 n bytes."""
    buffers = [{name: BufferSpec((n, 1), "float32") for name, n in shapes.items()} for _ in programs]
    return Schedule("1d", (len(programs),), {"name": "gemm", "m": 1, "k": 1, "n": 1}, "both", "float32",
                    groups or {"world": tuple(range(len(programs)))}, buffers, programs)


def test_a_chain_frees_each_temporary_after_its_last_read():
    # T = A B; U = T B; C = U B: T dies at step 1, U at step 2; A, B inputs live until their last read.
    program = [Gemm("T", "A", "B"), Gemm("U", "T", "B"), Gemm("C", "U", "B")]
    s = one_rank([program], {"A": 1, "B": 2, "T": 10, "U": 20, "C": 40})
    assert sorted(live_intervals(s, 0, set())) == [("A", 0, 0), ("B", 0, 2), ("C", 2, 2), ("T", 0, 1),
                                                   ("U", 1, 2)]
    live = peak_live(s, 0, set())
    assert (live.nbytes, live.step, live.buffers) == (4 * (2 + 20 + 40), 2, ("C", "U", "B"))
    assert peak_live(s, 0, {"B", "C"}).nbytes == 4 * (10 + 20)  # step 1: T and U


def test_a_fresh_write_starts_a_new_life_and_accumulation_continues_one():
    # W is used, dead for two steps, then written afresh: two intervals, not one spanning the gap.
    program = [Gemm("W", "A", "A"), Gemm("C", "W", "A"), Gemm("D", "A", "A"), Gemm("E", "A", "A"),
               Gemm("W", "A", "A"), Gemm("W", "A", "A", accumulate=True), Gemm("F", "W", "A")]
    s = one_rank([program], {"A": 1, "W": 100, "C": 1, "D": 1, "E": 1, "F": 1})
    assert [i for i in live_intervals(s, 0, set()) if i[0] == "W"] == [("W", 0, 1), ("W", 4, 6)]


def test_a_broadcast_overwrites_on_members_and_an_async_op_lives_until_its_wait():
    root = [Broadcast("world", 0, "P", handle="h"), Gemm("X", "A", "A"), Gemm("Y", "A", "A"), Wait("h")]
    member = [Gemm("P", "A", "A"), Broadcast("world", 0, "P", handle="h"), Gemm("X", "A", "A"), Wait("h"),
              Gemm("Z", "P", "A")]
    s = one_rank([root, member], {"A": 1, "P": 8, "X": 1, "Y": 1, "Z": 1})
    assert [i for i in live_intervals(s, 0, set()) if i[0] == "P"] == [("P", 0, 3)]  # the root sends until the wait
    # On the member the broadcast replaces what step 0 wrote: a new life from step 1 to its read at step 4.
    assert [i for i in live_intervals(s, 1, set()) if i[0] == "P"] == [("P", 0, 0), ("P", 1, 4)]


def test_the_sequence_parallel_regather_is_live_twice_not_throughout():
    schedule = build_schedule("1d-sp", Workload.transformer(2, 8, 16, 4), "both", "bfloat16", gpus=2)
    spans = [i for i in live_intervals(schedule, 0, set()) if i[0] == "A1_full"]
    assert len(spans) == 2 and spans[0][2] < spans[1][1]


CASES = [("1d", dict(gpus=4)), ("1d-sp", dict(gpus=4)), ("2d", dict(grid=(2, 2, 1))),
         ("summa25d", dict(grid=(2, 2, 2))), ("cannon25d", dict(grid=(2, 2, 2))), ("3d", dict(grid=(2, 2, 2))),
         ("summa25d-overlap", dict(grid=(2, 2, 2), overlap=True))]


@pytest.mark.parametrize("algo,kw", CASES, ids=[c[0] for c in CASES])
def test_live_workspace_is_positive_and_below_the_sum_of_every_buffer(algo, kw):
    schedule = build_schedule(algo.split("-overlap")[0], Workload.transformer(4, 8, 32, 4, dropout=0.1), "both",
                              "bfloat16", **kw)
    for rank in range(schedule.world_size):
        live = peak_live(schedule, rank, set())
        total = sum(spec.nbytes for spec in schedule.buffers[rank].values())
        assert 0 < live.nbytes < total
        assert live.nbytes == sum(schedule.buffers[rank][name].nbytes for name in live.buffers)
    assert max(peak_live(schedule, r, set()).nbytes for r in range(schedule.world_size)) < memory_bytes(schedule)

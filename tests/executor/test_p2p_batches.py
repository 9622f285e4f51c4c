"""Asynchronous sends and receives go out in batches (``batch_isend_irecv``), so NCCL cannot hang on them.

NCCL's rule (its user guide, "Point-to-point communication"): sends and receives progress together only
inside one group; a send issued alone may not complete until its receive is posted, and a rank's later
calls queue behind it. ``_completes`` plays that worst case: each rank runs its units (a batch, or one op
issued alone) in order, and a unit finishes only once every op in it has its partner posted. Cannon's
programs finish under it when issued as the executor batches them, and hang when each op is issued alone
(the executor's old way) on q = 2 grids, where a rank's two shift partners are one rank. The gloo runs
then prove the batched path correct, also when a batch completes as one Work, as NCCL's does.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
from executor_cases import WORKLOADS  # noqa: E402

from executor.launch import run_local  # noqa: E402
from executor.measure import measured_record, summary  # noqa: E402
from executor.ops_torch import p2p_batches  # noqa: E402
from executor.run_rank import RunOptions  # noqa: E402
from simulator.algorithms.registry import build_schedule  # noqa: E402
from simulator.ir.ops import Gemm, Recv, Send, Wait  # noqa: E402
from simulator.workloads.workload import Workload  # noqa: E402

ONCE = RunOptions(warmup=0, iters=1, timeout_s=60)


def test_a_batch_is_a_run_of_asynchronous_sends_and_receives():
    program = [Send(peer=1, buf="a", handle="a"), Recv(peer=1, buf="b", handle="b"), Gemm(out="c", a="a", b="b"),
               Send(peer=2, buf="c", handle="c"), Wait("a"), Wait("b"), Wait("c"), Recv(peer=2, buf="d"),
               Send(peer=2, buf="d", handle="e"), Recv(peer=3, buf="f", handle="f")]
    assert p2p_batches(program) == [[0, 1], [3], [8, 9]]


def _units(schedule, rank: int, batched: bool) -> list[list[tuple]]:
    """The p2p calls of ``rank`` as NCCL receives them: batches (or one op per unit), in program order.

    An op is (side, src, dst, n): the n-th message from src to dst, seen by its sender or its receiver.
    """
    program = schedule.programs[rank]
    steps = [s for s, op in enumerate(program) if isinstance(op, (Send, Recv))]
    batch_of = {step: tuple(b) for b in p2p_batches(program) for step in b} if batched else {}
    units, seen, counts = [], set(), {}
    for step in steps:
        unit = batch_of.get(step, (step,))
        if unit in seen:
            continue
        seen.add(unit)
        ops = []
        for s in unit:
            op = program[s]
            src, dst = (rank, op.peer) if isinstance(op, Send) else (op.peer, rank)
            side = "send" if isinstance(op, Send) else "recv"
            n = counts[side, src, dst] = counts.get((side, src, dst), -1) + 1
            ops.append((side, src, dst, n))
        units.append(ops)
    return units


def _completes(schedule, batched: bool) -> bool:
    """True when every rank's p2p units finish under NCCL's worst case (see the module docstring)."""
    units = [_units(schedule, rank, batched) for rank in range(schedule.world_size)]
    position = [0] * len(units)
    done: set[tuple] = set()
    while True:
        current = {r: units[r][position[r]] for r in range(len(units)) if position[r] < len(units[r])}
        posted = done | {op for unit in current.values() for op in unit}
        finished = [r for r, unit in current.items()
                    if all(("recv" if side == "send" else "send", *key) in posted for side, *key in unit)]
        if not finished:
            return not current
        for r in finished:
            done.update(current[r])
            position[r] += 1


@pytest.mark.parametrize("grid", [(2, 2, 1), (2, 2, 2), (4, 4, 1), (4, 4, 2), (4, 4, 4)])
def test_cannon_exchanges_cannot_hang_when_batched(grid):
    for passes in ("fwd", "bwd", "both"):
        schedule = build_schedule("cannon25d", Workload.mlp(64, 32), passes, "float32", grid=grid)
        assert _completes(schedule, batched=True), (grid, passes)


@pytest.mark.parametrize("grid", [(2, 2, 1), (2, 2, 2)])
def test_cannon_exchanges_issued_one_op_at_a_time_can_hang_on_q2_grids(grid):
    schedule = build_schedule("cannon25d", Workload.gemm(16, 8, 8), "both", "float32", grid=grid)
    assert not _completes(schedule, batched=False)


def test_cannon_shifts_on_a_q2_grid_are_correct_on_gloo():
    # [2,2,1] runs a multiply-and-shift loop (on [2,2,2] each layer has one step: only the skew exchanges)
    schedules = [build_schedule("cannon25d", WORKLOADS[w], "both", "float32", grid=(2, 2, 1)) for w in WORKLOADS]
    for schedule, result in zip(schedules, run_local(schedules, ONCE, 4)):
        record = measured_record(schedule, result, ONCE)
        assert record["ok"], "\n".join(summary(record))
        assert 0 < record["max_rel_error"] < 1e-5


class _OneWork:
    """One Work for a whole batch, as NCCL returns from a coalesced batch_isend_irecv."""

    def __init__(self, works):
        self.works = works

    def wait(self) -> bool:
        for work in self.works:
            work.wait()
        return True


def test_a_batch_completed_as_one_work_as_on_nccl_is_correct_and_its_ops_share_their_start(monkeypatch, tmp_path):
    real = dist.batch_isend_irecv

    def coalesced(p2p_ops):  # runs in the ranks, which were forked after the patch
        with open(tmp_path / f"batches.{dist.get_rank()}", "a") as handle:
            handle.write(f"{len(p2p_ops)}\n")
        return [_OneWork(real(p2p_ops))]

    monkeypatch.setattr(dist, "batch_isend_irecv", coalesced)
    schedules = [build_schedule("cannon25d", WORKLOADS[w], "both", "float32", grid=(2, 2, 1)) for w in WORKLOADS]
    for schedule, result in zip(schedules, run_local(schedules, ONCE, 4)):
        record = measured_record(schedule, result, ONCE)
        assert record["ok"], "\n".join(summary(record))
        for rank in range(4):
            ops = {op["step"]: op for op in record["ops"] if op["rank"] == rank}
            for batch in p2p_batches(schedule.programs[rank]):
                assert len({ops[step]["start_s"] for step in batch}) == 1, (rank, batch)
                assert all(ops[step]["end_s"] >= ops[step]["start_s"] for step in batch)
    for rank in range(4):
        sizes = [int(n) for n in (tmp_path / f"batches.{rank}").read_text().split()]
        assert sizes == [len(b) for s in schedules for b in p2p_batches(s.programs[rank])], rank

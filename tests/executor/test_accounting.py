"""The collectives the executor really issues (kind, group, bytes, per rank, in order) equal the IR's.

torch.distributed's entry points are wrapped in the pytest process before the ranks fork, so every
rank records each call it makes, with the tensors it really passed, into a file of its own. The
executor's own traffic (the iteration barrier, the max-over-ranks reduction and the result gather on
the default group) is not schedule traffic and is left out; schedule groups are always new groups.
Asynchronous sends and receives are issued through ``batch_isend_irecv`` (``isend`` / ``irecv`` are
not wrapped: an asynchronous send issued outside a batch would be missing from the record), each of
its ops recorded as a send or recv, and each batch as the list of its ops.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
from executor_cases import make, make_transformer  # noqa: E402

from executor.launch import run_local  # noqa: E402
from executor.run_rank import RunOptions  # noqa: E402
from simulator.ir.accounting import account  # noqa: E402
from simulator.ir.ops import CommOp, Recv, Send  # noqa: E402

# torch entry point -> (IR kind, index of the argument holding the IR's payload buffer)
ENTRY_POINTS = {
    "broadcast": ("broadcast", 0), "reduce": ("reduce", 0), "all_reduce": ("all_reduce", 0),
    "all_gather": ("all_gather", 0), "all_gather_single": ("all_gather", 0),
    "all_gather_into_tensor": ("all_gather", 0),
    "reduce_scatter": ("reduce_scatter", 1), "reduce_scatter_single": ("reduce_scatter", 1),
    "reduce_scatter_tensor": ("reduce_scatter", 1),
    "send": ("send", 0), "recv": ("recv", 0),
}


def _nbytes(payload) -> int:
    tensors = payload if isinstance(payload, (list, tuple)) else [payload]
    return sum(t.numel() * t.element_size() for t in tensors)


@pytest.fixture
def issued(monkeypatch, tmp_path):
    """Wrap torch.distributed's entry points; return a reader of what rank r issued."""
    for name, (kind, index) in ENTRY_POINTS.items():
        if not hasattr(dist, name):
            continue

        def recorder(*args, __fn=getattr(dist, name), __kind=kind, __index=index, **kwargs):
            if __kind in ("send", "recv"):
                peer = kwargs.get("dst", kwargs.get("src", args[1] if len(args) > 1 else None))
                where = ["p2p", peer]
            else:
                group = kwargs.get("group")
                if group is None:  # the executor's own bookkeeping on the default group
                    return __fn(*args, **kwargs)
                where = dist.get_process_group_ranks(group)
            with open(tmp_path / f"calls.{dist.get_rank()}", "a") as handle:
                handle.write(json.dumps([__kind, where, _nbytes(args[__index])]) + "\n")
            return __fn(*args, **kwargs)

        monkeypatch.setattr(dist, name, recorder)

    def batch(p2p_ops, __fn=dist.batch_isend_irecv):
        ops = [["send" if op.op is dist.isend else "recv", ["p2p", op.peer], _nbytes(op.tensor)] for op in p2p_ops]
        with open(tmp_path / f"calls.{dist.get_rank()}", "a") as handle:
            handle.writelines(json.dumps(op) + "\n" for op in ops)
        with open(tmp_path / f"order.{dist.get_rank()}", "a") as handle:
            handle.write(json.dumps(["batch", [kind for kind, _, _ in ops]]) + "\n")
        return __fn(p2p_ops)

    def barrier(*args, __fn=dist.barrier, **kwargs):
        if kwargs.get("group") is None and not args:  # the iteration barrier, on the default group
            with open(tmp_path / f"order.{dist.get_rank()}", "a") as handle:
                handle.write(json.dumps(["barrier", []]) + "\n")
        return __fn(*args, **kwargs)

    monkeypatch.setattr(dist, "batch_isend_irecv", batch)
    monkeypatch.setattr(dist, "barrier", barrier)

    def read(rank: int) -> list[tuple]:
        path = tmp_path / f"calls.{rank}"
        lines = path.read_text().splitlines() if path.exists() else []
        return [(kind, tuple(where), nbytes) for kind, where, nbytes in map(json.loads, lines)]

    def order(rank: int) -> list[tuple]:
        """The rank's default-group barriers and p2p batches, in order: ("barrier", ()) or ("batch", kinds)."""
        path = tmp_path / f"order.{rank}"
        lines = path.read_text().splitlines() if path.exists() else []
        return [(what, tuple(kinds)) for what, kinds in map(json.loads, lines)]

    read.order = order
    return read


def _ir_calls(schedule, rank: int) -> list[tuple]:
    calls = []
    for op in schedule.programs[rank]:
        if isinstance(op, CommOp):
            where = ("p2p", op.peer) if hasattr(op, "peer") else tuple(sorted(schedule.groups[op.group]))
            calls.append((op.kind, where, schedule.payload_bytes(rank, op)))
    return calls


def _check(schedules, issued, world: int) -> None:
    for rank in range(world):
        calls = issued(rank)
        assert calls == [c for s in schedules for c in _ir_calls(s, rank)], f"rank {rank}"
        # and the totals equal simulator.ir.accounting's per-rank view
        accounts = [account(s)[rank] for s in schedules]
        assert sum(nbytes for _, _, nbytes in calls) == sum(a.payload_bytes for a in accounts)
        assert sum(1 for kind, _, _ in calls if kind in ("send", "recv")) == sum(a.p2p_messages for a in accounts)
        by_kind = Counter(f"{kind}/{len(where)}" for kind, where, _ in calls if where[0] != "p2p")
        assert by_kind == sum((a.collectives_by_kind for a in accounts), Counter())


def _ir_batches(schedule, rank: int) -> list[tuple]:
    """The IR's runs of consecutive asynchronous sends / recvs of ``rank``, as the kinds of their ops."""
    runs, previous = [], None
    for op in schedule.programs[rank]:
        p2p = isinstance(op, (Send, Recv)) and op.handle is not None
        if p2p and previous:
            runs[-1].append(op.kind)
        elif p2p:
            runs.append([op.kind])
        previous = p2p
    return [("batch", tuple(run)) for run in runs]


def test_issued_collectives_equal_the_ir_on_8_ranks(issued):
    schedules = [make("summa25d", "mlp", "both", overlap=True), make("cannon25d", "gemm", "both")]
    assert any(isinstance(op, Send) for op in schedules[1].programs[1])
    run_local(schedules, RunOptions(warmup=0, iters=1), 8)
    _check(schedules, issued, 8)
    batches = []
    for rank in range(8):
        # Cannon's skew exchanges go out as one batch per run of sends and receives, and the first call
        # on the default group (which the batches use) is the iteration barrier, with every rank in it.
        order = issued.order(rank)
        batches += [o for o in order if o[0] == "batch"]
        assert [o for o in order if o[0] == "batch"] == _ir_batches(schedules[1], rank), f"rank {rank}"
        assert order[0] == ("barrier", ()), f"rank {rank}"
    assert ("batch", ("send", "recv", "send", "recv")) in batches and len(batches) == 18


@pytest.mark.parametrize("cases, world", [(("1d-2", "1d-sp"), 2), (("1d-3",), 3), (("2d",), 4),
                                          (("summa25d", "cannon25d"), 8)], ids=["2", "3", "4", "8"])
def test_issued_collectives_equal_the_ir_for_the_transformer_block(issued, cases, world):
    # its vectors (biases, LayerNorm's gamma and beta) and row moments add collectives of their own
    schedules = [make_transformer(case, "both") for case in cases]
    run_local(schedules, RunOptions(warmup=0, iters=1), world)
    _check(schedules, issued, world)


def test_issued_collectives_equal_the_ir_for_every_kind(issued, mixed):
    run_local([mixed], RunOptions(warmup=0, iters=1), 3)
    _check([mixed], issued, 3)
    kinds = {kind for rank in range(3) for kind, _, _ in issued(rank)}
    assert kinds == {"broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter", "send", "recv"}


def test_every_iteration_issues_the_same_calls(issued):
    schedule = make("1d", "mlp", "both")
    run_local([schedule], RunOptions(warmup=1, iters=2), 4)
    for rank in range(4):
        assert issued(rank) == _ir_calls(schedule, rank) * 3

"""The validator rejects schedules that would hang or mismatch, naming the op, the ranks and the group."""

from __future__ import annotations

import dataclasses

import pytest

from simulator.algorithms.registry import build_schedule
from simulator.ir.ops import AllGather, AllReduce, Broadcast, Gemm, Recv, Reduce, Send, Wait
from simulator.ir.schedule import BufferSpec, Schedule
from simulator.ir.validate import validate_schedule
from simulator.workloads.workload import Workload


def tiny(programs, shapes=None, groups=None) -> Schedule:
    """A schedule of len(programs) ranks, each with buffers x, y (default [2, 2])."""
    shapes = shapes or [{"x": (2, 2), "y": (2, 2)}] * len(programs)
    return Schedule(algorithm="test", grid=(len(programs),), workload={"name": "gemm", "m": 2, "k": 2, "n": 2},
                    passes="fwd", dtype="float32",
                    groups=groups or {"world": tuple(range(len(programs))), "pair": (0, 1)},
                    buffers=[{n: BufferSpec(s, "float32") for n, s in rank.items()} for rank in shapes],
                    programs=programs)


def test_generated_schedules_validate() -> None:
    for algorithm, grid in (("1d", {"gpus": 3}), ("2d", {"grid": (3, 3, 1)}), ("summa25d", {"grid": (2, 2, 3)})):
        validate_schedule(build_schedule(algorithm, Workload.mlp(18, 6), "both", **grid))


def test_reordered_collectives_deadlock() -> None:
    """Rank 0 enters the pair all-reduce first, rank 1 the world one: both wait forever."""
    schedule = tiny([[AllReduce("pair", "x"), AllReduce("world", "x")],
                     [AllReduce("world", "x"), AllReduce("pair", "x")], [AllReduce("world", "x")]])
    with pytest.raises(ValueError, match=r"deadlock: rank 0 step 0 \(ar pair x\) waits in collective #0 on group "
                                         r"pair \[0, 1\]: ranks \[0\] issued it but ranks \[1\] never issue it"):
        validate_schedule(schedule)


def test_mismatched_collective_sequence() -> None:
    schedule = tiny([[Broadcast("pair", 0, "x")], [AllReduce("pair", "x")], []])
    with pytest.raises(ValueError, match=r"mismatch in collective #0 on group pair \[0, 1\]: rank 1 step 0 "
                                         r"\(ar pair x\) has .* but rank 0 step 0 \(bc pair@0 x\) has"):
        validate_schedule(schedule)


def test_mismatched_roots_and_shapes() -> None:
    with pytest.raises(ValueError, match="mismatch in collective #0 on group pair"):
        validate_schedule(tiny([[Broadcast("pair", 0, "x")], [Broadcast("pair", 1, "x")], []]))
    shapes = [{"x": (2, 2), "y": (2, 2)}, {"x": (2, 3), "y": (2, 2)}, {"x": (2, 2), "y": (2, 2)}]
    with pytest.raises(ValueError, match=r"mismatch .* \(2, 3\)"):
        validate_schedule(tiny([[AllReduce("pair", "x")], [AllReduce("pair", "x")], []], shapes))


def test_unmatched_send_and_recv() -> None:
    with pytest.raises(ValueError, match=r"deadlock: rank 0 step 0 \(send>1 x\) waits in send/recv #0 from rank 0 "
                                         r"to rank 1: .*the matching recv is never posted"):
        validate_schedule(tiny([[Send(1, "x")], [], []]))
    with pytest.raises(ValueError, match=r"the matching send is never posted"):
        validate_schedule(tiny([[], [Recv(0, "x")], []]))


def test_blocking_ring_of_sends_deadlocks_but_async_does_not() -> None:
    ring = [[Send((r + 1) % 3, "x"), Recv((r - 1) % 3, "y")] for r in range(3)]
    with pytest.raises(ValueError, match="deadlock"):
        validate_schedule(tiny(ring))
    ring_async = [[Send((r + 1) % 3, "x", handle="s"), Recv((r - 1) % 3, "y", handle="r"), Wait("s"), Wait("r")]
                  for r in range(3)]
    validate_schedule(tiny(ring_async))


def test_p2p_size_mismatch() -> None:
    shapes = [{"x": (2, 2), "y": (2, 2)}, {"x": (2, 2), "y": (4, 1)}, {"x": (2, 2), "y": (2, 2)}]
    with pytest.raises(ValueError, match=r"mismatch in send/recv #0 from rank 0 to rank 1"):
        validate_schedule(tiny([[Send(1, "x")], [Recv(0, "y")], []], shapes))


@pytest.mark.parametrize("programs, message", [
    ([[Gemm("x", "y", "z")], [], []], r"rank 0 step 0 \(x=y\*z\): rank 0: buffer 'z' is not declared"),
    ([[AllReduce("nope", "x")], [], []], r"group 'nope' is not declared"),
    ([[], [], [AllReduce("pair", "x")]], r"rank 2 is not a member of group 'pair'"),
    ([[Broadcast("pair", 2, "x")], [Broadcast("pair", 2, "x")], []], r"root 2 is not a group-local rank"),
    ([[Send(0, "x")], [], []], r"peer 0 must be another rank"),
    ([[Wait("h")], [], []], r"no asynchronous op with handle 'h'"),
    ([[AllReduce("pair", "x", handle="h")], [AllReduce("pair", "x")], []], r"handle 'h' is never waited for"),
    ([[AllReduce("pair", "x", handle="h"), Gemm("x", "y", "y"), Wait("h")], [AllReduce("pair", "x")], []],
     r"uses buffer 'x' while asynchronous step 0 \(ar pair x &h\) is in flight"),
])
def test_static_errors(programs, message) -> None:
    with pytest.raises(ValueError, match=message):
        validate_schedule(tiny(programs))


def test_shape_errors() -> None:
    shapes = [{"x": (2, 3), "y": (2, 2), "o": (2, 2)}] * 3
    with pytest.raises(ValueError, match=r"shapes do not multiply: x\(2, 3\) x y\(2, 2\)"):
        validate_schedule(tiny([[Gemm("o", "x", "y")], [], []], shapes))
    shapes = [{"x": (2, 2), "y": (2, 2)}] * 3
    with pytest.raises(ValueError, match=r"x x 2 along axis 0 is \(4, 2\), but y is \(2, 2\)"):
        validate_schedule(tiny([[AllGather("pair", "x", "y")], [AllGather("pair", "x", "y")], []], shapes))
    shapes = [{"x": (2, 2), "y": (3, 2)}] * 3
    with pytest.raises(ValueError, match="root's out and buf shapes differ"):
        validate_schedule(tiny([[Reduce("pair", 0, "x", "y")], [Reduce("pair", 0, "x", "y")], []], shapes))


def test_output_block_must_fit_its_buffer() -> None:
    schedule = build_schedule("2d", Workload.gemm(4, 2, 2), "fwd", grid=(2, 2, 1))
    block = dataclasses.replace(schedule.outputs[0], rows=(0, 1))
    with pytest.raises(ValueError, match=r"output block C\[\(0, 1\).* buffer 'C' has shape \(2, 1\), block is \(1, 1\)"):
        validate_schedule(dataclasses.replace(schedule, outputs=[block]))

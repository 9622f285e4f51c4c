"""Timing Megatron-LM's asynchronous dX communication: what it hides, what the SMs it shares cost, and that
turning it off restores the blocking schedule's times exactly."""

from __future__ import annotations

import pytest

from simulator.algorithms.registry import build_schedule
from simulator.timing.critical_path import analyze
from simulator.timing.simulation import plan_on_graph, simulate
from simulator.timing.sm_sharing import COLL_CHANNELS, NVLS_CHANNELS, SmSharing
from simulator.workloads.workload import Workload
from topologies import load_topology

GEMM = Workload.gemm(8192, 6144, 6144)  # one column-parallel linear: dX GEMM, dX all-reduce, dW GEMM
BLOCK = Workload.transformer(2, 1024, 2048, 16)


@pytest.fixture(scope="module")
def a100():
    return load_topology("dgx-a100")


def _gemms(result, rank=0):
    """(dX GEMM, dW GEMM) seconds on ``rank`` from a timeline."""
    t = result.timeline
    program = t.schedule.programs[rank]
    return [t.ends[rank][i] - t.starts[rank][i] for i, op in enumerate(program) if op.kind == "gemm"]


@pytest.mark.parametrize("run", [simulate, analyze])
def test_the_gemm_beside_the_all_reduce_pays_the_channels_share_of_the_sms(a100, run):
    """Blocking: dX + all-reduce + dW. Asynchronous: the all-reduce beside dW, which is slowed by
    24 channels / 108 SMs for the time they overlap, min(all-reduce, dW)."""
    blocking = run(build_schedule("1d", GEMM, "bwd", "bfloat16", gpus=8), a100)
    overlapped = run(build_schedule("1d", GEMM, "bwd", "bfloat16", gpus=8, async_dgrad=True), a100)
    dx, dw = _gemms(blocking)
    comm = blocking.per_rank[0].comm_s
    assert blocking.makespan_s == pytest.approx(dx + comm + dw, rel=1e-12)
    f = COLL_CHANNELS["ampere"] / 108
    lost = f * min(comm, dw)
    assert overlapped.makespan_s == pytest.approx(max(dx + dw + lost, dx + comm), rel=1e-12)
    r = overlapped.per_rank[0]
    assert r.compute_s == pytest.approx(dx + dw + lost, rel=1e-12)  # the slowdown is compute time
    assert r.compute_s + r.comm_s + r.wait_s == pytest.approx(r.finish_s, rel=1e-12)
    hidden = blocking.makespan_s - overlapped.makespan_s
    assert 0 < hidden <= min(comm, dw)


@pytest.mark.parametrize("algorithm", ["1d", "1d-sp"])
def test_the_overlap_hides_at_most_min_comm_dw_per_linear(a100, algorithm):
    """A block's backward: the time saved is above 0 and at most both the communication and the GEMMs it can
    hide under (dW; with sequence parallelism also dX, beside the re-gather of X);
    the SM cost is compute (none of it where the collective outlasts the GEMM beside it)."""
    blocking = simulate(build_schedule(algorithm, BLOCK, "bwd", "bfloat16", gpus=8), a100)
    s = build_schedule(algorithm, BLOCK, "bwd", "bfloat16", gpus=8, async_dgrad=True)
    overlapped = simulate(s, a100)
    free_plan = plan_on_graph(s, a100)
    free_plan.sharing = None
    free = simulate(s, a100, plan=free_plan)
    saved = blocking.makespan_s - overlapped.makespan_s
    comm = blocking.per_rank[0].comm_s
    program = blocking.timeline.schedule.programs[0]
    dw = sum(blocking.timeline.ends[0][i] - blocking.timeline.starts[0][i] for i, op in enumerate(program)
             if op.kind == "gemm" and (op.trans_a or algorithm == "1d-sp"))
    assert 0 < saved <= min(comm, dw)
    assert free.makespan_s <= overlapped.makespan_s
    assert overlapped.per_rank[0].compute_s > free.per_rank[0].compute_s == blocking.per_rank[0].compute_s


def test_turning_it_off_is_the_blocking_schedule_with_its_times(a100):
    for algorithm in ("1d", "1d-sp"):
        off = build_schedule(algorithm, BLOCK, "both", "bfloat16", gpus=8, async_dgrad=False)
        plain = build_schedule(algorithm, BLOCK, "both", "bfloat16", gpus=8)
        assert off.programs == plain.programs and off.options == plain.options == {}
        plan = plan_on_graph(off, a100)
        plan.sharing = None  # no asynchronous op: nothing for the sharing to charge
        assert simulate(off, a100).makespan_s == simulate(off, a100, plan=plan).makespan_s


def test_fractions_follow_the_generation_and_nvls():
    """H100 with NVLink SHARP: an all_reduce holds NVLS's 16 channels of 132 SMs, an all_gather 24; A100 24
    of 108; CPU ranks nothing."""
    f = SmSharing.on_graph(load_topology("dgx-h100"), ["gpu0"]).fractions[0]
    assert f["all_gather"] == pytest.approx(COLL_CHANNELS["hopper"] / 132)
    assert f["all_reduce"] == pytest.approx(NVLS_CHANNELS["hopper"] / 132)
    assert SmSharing.on_graph(load_topology("dgx-a100"), ["gpu0"]).fractions[0]["all_reduce"] == pytest.approx(24 / 108)
    cpu = load_topology("loopback:2")
    assert SmSharing.on_graph(cpu, [n for n, d in cpu.nodes(data=True) if "device" in d][:2]) is None

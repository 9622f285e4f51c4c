"""simulator.training's step time: the DP reduction on the topology, and the step's parts adding up."""

from __future__ import annotations

import dataclasses

import pytest

from simulator.algorithms.arrangement import Arrangement
from simulator.collectives.closed_form import predict_collective_s
from simulator.errors import InputError, NotApplicable
from simulator.network.flow_network import FlowNetwork
from simulator.training.arrangement import TrainingArrangement
from simulator.training.dp_reduce import bound_stream, simulate_streams, simulate_waves
from simulator.training.gradients import Bucket, gradient_buckets
from simulator.training.placement import dp_groups
from simulator.training.step import StepOptions, step_time
from simulator.workloads.workload import Workload
from topologies import load_topology

BLOCK = Workload.transformer(2, 128, 256, 4)


def _groups(spec, tp, dp):
    G = load_topology(spec)
    return G, dp_groups(G, TrainingArrangement(Arrangement("1d", (tp,)), dp))


def test_one_bucket_alone_takes_its_collective_s_closed_form():
    G, groups = _groups("dgx-a100:2", 8, 2)
    import simpy
    expect = predict_collective_s(FlowNetwork(simpy.Environment(), G), "all_reduce", groups[0], 64e6)
    got = simulate_waves(G, groups[:1], [[Bucket(64e6, 0.0)]], "all_reduce")
    assert got == pytest.approx(expect, rel=1e-9)


def test_waves_equal_free_streams_for_alike_groups():
    G, groups = _groups("dgx-a100:4", 4, 8)
    streams = [gradient_buckets([30e6, 1e4, 12e6], 20e6, 4, 25e6, 1e-3, 4e-3)] * len(groups)
    for kind in ("all_reduce", "reduce_scatter", "all_gather"):
        waves = simulate_waves(G, groups, streams, kind)
        assert waves == pytest.approx(simulate_streams(G, groups, streams, kind), rel=1e-9)
        assert waves >= bound_stream(G, groups, streams, kind) * (1 - 1e-12)


def test_groups_that_share_nics_are_slower_together_than_alone():
    # 32 DGX servers span two scalable units of 20-port leaves: the 32 DP groups of tp = 32 cross the spine
    # together, which one group alone (and the contention-free bound) does not see. How much slower depends on
    # how ECMP's hash spreads them over the spines: 1.33x with the routes of 2026-12-07 (1.5x or more before).
    G, groups = _groups("dgx-a100:32", 32, 8)
    streams = [[Bucket(200e6, 0.0)]] * len(groups)
    together = simulate_waves(G, groups, streams, "all_reduce")
    alone = simulate_waves(G, groups[:1], streams[:1], "all_reduce")
    assert together > 1.25 * alone
    assert bound_stream(G, groups, streams, "all_reduce") == pytest.approx(alone, rel=1e-6)


def test_buckets_wait_for_their_ready_time_and_run_in_order():
    G, groups = _groups("dgx-a100:2", 8, 2)
    one = simulate_waves(G, groups, [[Bucket(1e6, 0.0)]] * 8, "all_reduce")
    late = simulate_waves(G, groups, [[Bucket(1e6, 0.0), Bucket(1e6, 1.0)]] * 8, "all_reduce")
    assert late == pytest.approx(1.0 + one, rel=1e-9)
    queued = simulate_waves(G, groups, [[Bucket(1e6, 0.0), Bucket(1e6, 0.0)]] * 8, "all_reduce")
    assert queued == pytest.approx(2 * one, rel=1e-9)


def _step(a, options, G=None, bound=False, block=BLOCK):
    return step_time(G or load_topology("dgx-a100:2"), a, block, options, bound=bound)


def test_the_step_adds_up_and_the_bound_is_below_the_simulation():
    a = TrainingArrangement(Arrangement("1d", (4,)), 4)
    options = StepOptions(global_batch=32, layers=3, vocab=1000)
    s = _step(a, options)
    assert s.micro_batches == 32 // (2 * 4)
    assert s.step_s == pytest.approx(s.compute_s + s.tp_comm_s + s.dp_comm_s, rel=1e-9)
    p = s.passes
    micro = 3 * (p["block_fwd"].time_s + p["block_bwd"].time_s) + sum(
        p[k].time_s for k in ("head_fwd", "head_bwd", "embed_fwd", "embed_bwd"))
    assert s.step_s == pytest.approx(s.micro_batches * micro + s.dp_comm_s + s.optimizer_s, rel=1e-9)
    assert s.tokens_per_s == pytest.approx(32 * 128 / s.step_s)
    assert 0 < s.mfu < 1
    assert _step(a, options, bound=True).step_s <= s.step_s * (1 + 1e-9)


def test_recompute_costs_time_and_zero_trades_communication_for_optimizer_time():
    a = TrainingArrangement(Arrangement("1d-sp", (4,)), 4)
    base = StepOptions(global_batch=16, layers=2, vocab=1024)
    unfused = dataclasses.replace(BLOCK, attention="unfused")
    none = _step(a, base, block=unfused)
    selective = _step(a, dataclasses.replace(base, recompute="selective"), block=unfused)
    full = _step(a, dataclasses.replace(base, recompute="full"), block=unfused)
    assert none.step_s < selective.step_s < full.step_s
    assert full.passes["block_bwd"].time_s == pytest.approx(
        none.passes["block_bwd"].time_s + none.passes["block_fwd"].time_s)
    z1 = _step(a, dataclasses.replace(base, zero=1))
    # The distributed optimizer zeroes and scales the whole gradient buffer (12 B of the 50 per parameter)
    # and steps a quarter of the parameters (the other 38 B).
    assert z1.optimizer_s == pytest.approx(none.optimizer_s * (12 + 38 / 4) / 50)
    assert z1.dp_comm_s > none.dp_comm_s  # the parameter all-gather after the update is exposed
    z3 = _step(a, dataclasses.replace(base, zero=3))
    assert z3.dp_comm_s >= none.dp_comm_s


def test_pure_data_parallel_has_no_tp_communication():
    G = load_topology("dgx-a100:2")
    s = step_time(G, TrainingArrangement(Arrangement("1d", (1,)), 16), BLOCK, StepOptions(32, 2, 1000))
    assert s.arrangement.label == "data parallel dp=16" and s.tp_comm_s == 0 and s.micro_batches == 1
    single = step_time(G, TrainingArrangement(Arrangement("1d", (1,)), 1), BLOCK, StepOptions(2, 2, 1000))
    assert single.dp_comm_s == 0


def test_sizes_that_do_not_divide_are_not_applicable():
    a = TrainingArrangement(Arrangement("summa25d", (2, 2, 2)), 2)
    with pytest.raises(NotApplicable, match="batch=2 must be divisible"):
        _step(a, StepOptions(global_batch=16, layers=1, vocab=1000))
    with pytest.raises(NotApplicable, match="not divisible by the micro-batch"):
        _step(TrainingArrangement(Arrangement("1d", (4,)), 4), StepOptions(global_batch=12, layers=1))
    with pytest.raises(InputError, match="--zero 4"):
        StepOptions(global_batch=8, zero=4)


def test_hardware_flops_count_what_recomputation_runs_again():
    from simulator.training.flops import hardware_flops_per_step, model_flops_per_step

    B, L, s, h, V = 8, 24, 2048, 2048, 50257
    model = model_flops_per_step(B, L, s, h, V)
    assert hardware_flops_per_step(B, L, s, h, V, "none") == model
    # Narayanan et al. 2021, equation 3: full recomputation's 96 B L s h^2 (1 + s/6h + V/16hL).
    full = 96 * B * L * s * h * h * (1 + s / (6 * h) + V / (16 * h * L))
    assert hardware_flops_per_step(B, L, s, h, V, "full") == pytest.approx(full, rel=1e-12)
    assert hardware_flops_per_step(B, L, s, h, V, "selective") == pytest.approx(model + 4 * B * L * s * s * h)

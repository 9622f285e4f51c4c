"""The pipelined training step: pp = 1 is today's step, the replay meets the closed form, sends cost their time."""

from __future__ import annotations

import simpy
import pytest

from simulator.algorithms.arrangement import Arrangement
from simulator.collectives.closed_form import predict_collective_s
from simulator.errors import NotApplicable
from simulator.network.flow_network import FlowNetwork
from simulator.pipeline.closed_forms import ideal_step_s
from simulator.pipeline.stage_step import pipeline_step_time
from simulator.training.arrangement import TrainingArrangement
from simulator.training.placement import dp_groups, tp_group_gpus
from simulator.training.step import StepOptions, block_times, step_time
from simulator.workloads.workload import Workload
from topologies import gpu_nodes, load_topology

BLOCK = Workload.transformer(2, 128, 256, 4)
TENSORS = [Arrangement("1d", (4,)), Arrangement("1d-sp", (4,)), Arrangement("2d", (2, 2, 1)),
           Arrangement("summa25d", (2, 2, 2))]


@pytest.fixture(scope="module")
def G():
    return load_topology("dgx-a100:4")


@pytest.mark.parametrize("tensor", TENSORS, ids=lambda t: t.algorithm)
@pytest.mark.parametrize("zero,recompute", [(0, "none"), (1, "selective"), (0, "full")])
@pytest.mark.parametrize("bound", [True, False])
def test_one_stage_is_todays_step(G, tensor, zero, recompute, bound):
    a = TrainingArrangement(tensor, 32 // (4 if tensor.algorithm != "summa25d" else 8))
    block = Workload.transformer(4 if tensor.algorithm == "summa25d" else 2, 128, 256, 4, dropout=0.1)
    options = StepOptions(global_batch=64, layers=4, vocab=1000, zero=zero, recompute=recompute)
    today = step_time(G, a, block, options, bound=bound)
    piped = pipeline_step_time(G, a, block, options, bound=bound)
    assert piped.step_s == pytest.approx(today.step_s, rel=1e-12)
    for name in ("compute_s", "tp_comm_s", "dp_comm_s", "optimizer_s"):
        assert getattr(piped, name) == pytest.approx(getattr(today, name), rel=1e-12, abs=1e-15), name
    assert piped.bubble_s == pytest.approx(0.0, abs=1e-15) and piped.pp_comm_s == 0.0


@pytest.mark.parametrize("schedule,pp,v", [("1f1b", 2, 1), ("1f1b", 4, 1), ("gpipe", 4, 1),
                                           ("interleaved", 2, 2), ("interleaved", 4, 2)])
@pytest.mark.parametrize("dp", [1, 2])
def test_equal_stages_with_free_sends_take_the_ideal_step(G, schedule, pp, v, dp):
    # No vocabulary: every stage is L/pp blocks. Taking out what the sends add leaves the replay of free
    # communication, which must be (m + (p - 1)/v)(t_f + t_b) exactly.
    a = TrainingArrangement(Arrangement("1d", (4,)), dp, pp, schedule, v)
    options = StepOptions(global_batch=8 * dp, layers=8, zero=0)
    s = step_time(G, a, BLOCK, options, bound=True)
    t = block_times(G, a, BLOCK, options, bound=True).passes
    t_f, t_b = 8 / pp * t["block_fwd"].time_s, 8 / pp * t["block_bwd"].time_s
    free = s.step_s - s.optimizer_s - s.dp_comm_s - s.pp_comm_s
    assert s.micro_batches == 4
    assert free == pytest.approx(ideal_step_s(schedule, pp, 4, t_f, t_b, v), rel=1e-12)
    assert s.bubble_s == pytest.approx(free - 4 * (t_f + t_b), rel=1e-9)
    assert s.pp_comm_s > 0 and s.imbalance_s == pytest.approx(0.0, abs=1e-15)


def test_one_micro_batch_crosses_each_boundary_twice(G):
    # tp=8 x pp=2 on two servers: stage 0 on server 0, stage 1 on server 1; one micro-batch's forward crosses
    # once and its gradient once, each 8 sends of [b s, h] over the servers' NICs at once.
    a = TrainingArrangement(Arrangement("1d", (8,)), 1, pp=2)
    block = Workload.transformer(2, 128, 256, 8)
    options = StepOptions(global_batch=2, layers=2)
    gpus0, gpus1 = tp_group_gpus(G, a, 0, 0), tp_group_gpus(G, a, 0, 1)
    assert gpus0[0] != gpus1[0] and G.nodes[gpus0[0]]["server"] != G.nodes[gpus1[0]]["server"]
    one = predict_collective_s(FlowNetwork(simpy.Environment(), G), "send", [gpus0[0], gpus1[0]],
                               block.m * block.hidden * 2)
    bound = step_time(G, a, block, options, bound=True)
    assert bound.pp_comm_s == pytest.approx(2 * one, rel=1e-12)
    simulated = step_time(G, a, block, options)
    assert simulated.pp_comm_s >= bound.pp_comm_s * (1 - 1e-12)


def test_the_last_stage_carries_the_lm_head_and_the_embedding_is_synchronised(G):
    a = TrainingArrangement(Arrangement("1d", (4,)), 2, pp=4)
    plain = step_time(G, a, BLOCK, StepOptions(global_batch=16, layers=8), bound=True)
    vocab = step_time(G, a, BLOCK, StepOptions(global_batch=16, layers=8, vocab=5000), bound=True)
    t = block_times(G, a, BLOCK, StepOptions(global_batch=16, layers=8, vocab=5000), bound=True).passes
    assert vocab.imbalance_s == pytest.approx(vocab.micro_batches * (t["head_fwd"].time_s + t["head_bwd"].time_s))
    # The tied embedding's all-reduce between stage 0 and stage 3 adds to the pipeline communication.
    assert vocab.pp_comm_s > plain.pp_comm_s


def test_megatron_rank_order_puts_stages_on_consecutive_blocks_of_gpus():
    G = load_topology("dgx-a100:2")
    a = TrainingArrangement(Arrangement("1d", (2,)), 4, pp=2)
    names = gpu_nodes(G)
    assert tp_group_gpus(G, a, 2, 1) == [names[12], names[13]]
    assert dp_groups(G, a, 1)[1] == [names[9], names[11], names[13], names[15]]


@pytest.mark.parametrize("a,options,match", [
    (TrainingArrangement(Arrangement("1d", (4,)), 2, pp=2), StepOptions(global_batch=16, layers=6, zero=2), "ZeRO-2"),
    (TrainingArrangement(Arrangement("1d", (4,)), 2, pp=4), StepOptions(global_batch=16, layers=6), "6 layers"),
    (TrainingArrangement(Arrangement("1d", (4,)), 2, 2, "interleaved", 2), StepOptions(global_batch=16, layers=6),
     "pp=2 x v=2"),
    (TrainingArrangement(Arrangement("1d", (4,)), 2, 4, "interleaved", 2), StepOptions(global_batch=12, layers=8),
     r"m=3\) a multiple of pp=4"),
])
def test_what_a_pipeline_cannot_run_is_not_applicable(G, a, options, match):
    with pytest.raises(NotApplicable, match=match):
        step_time(G, a, BLOCK, options, bound=True)


@pytest.mark.parametrize("schedule,pp,v", [("1f1b", 2, 1), ("1f1b", 4, 1), ("gpipe", 2, 1), ("interleaved", 2, 2),
                                           ("interleaved", 4, 2)])
@pytest.mark.parametrize("vocab", [None, 5000])
def test_the_search_floor_never_exceeds_the_bound(G, schedule, pp, v, vocab):
    # The search skips a schedule whose floor is not below the best bound: a floor above its own bound could
    # skip the winner.
    from simulator.pipeline.stage_step import pipeline_floor_s

    a = TrainingArrangement(Arrangement("1d", (4,)), 8 // pp, pp, schedule, v)
    options = StepOptions(global_batch=32, layers=8, vocab=vocab, zero=1)
    floor = pipeline_floor_s(G, a, BLOCK, options)
    bound = step_time(G, a, BLOCK, options, bound=True)
    assert floor <= bound.step_s * (1 + 1e-12)


def test_pruned_search_keeps_what_the_exhaustive_one_keeps(G):
    from simulator.pipeline.search_space import pipelined, schedule_variants
    from simulator.pipeline.stage_step import pipeline_floor_s
    from simulator.training.search import plan_training

    options = StepOptions(global_batch=32, layers=8, vocab=5000)
    base = [TrainingArrangement(Arrangement("1d", (4,)), 8), TrainingArrangement(Arrangement("2d", (2, 2, 1)), 8)]
    candidates = pipelined(base, (1, 2, 4))

    def plan(floor):
        rows = plan_training(G, candidates, lambda b: Workload.transformer(b, 128, 256, 4), options, simulate_top=0,
                             variants=lambda a: schedule_variants(a, 8), floor=floor)
        return [(r.arrangement.label, r.best.micro_batch, r.best.step_s, r.best.bubble_s) for r in rows]

    assert plan(pipeline_floor_s) == plan(None)

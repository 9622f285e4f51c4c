"""simulator.training's pure parts: arrangements and names, micro-batches, placement, buckets, FLOPs, optimizer."""

from __future__ import annotations

import pytest

from simulator.algorithms.arrangement import Arrangement
from simulator.errors import InputError, NotApplicable
from simulator.training.arrangement import TrainingArrangement, tp_sizes_of, training_arrangements
from simulator.training.batching import micro_batches
from simulator.training.flops import mfu, model_flops_per_step
from simulator.training.gradients import gradient_buckets
from simulator.training.lm_head import padded_vocab
from simulator.training.optimizer_step import optimizer_step_s
from simulator.training.placement import dp_groups, tp_group_gpus
from topologies import gpu_nodes, load_topology


def test_every_arrangement_is_tp_times_dp_and_names_read_as_people_write_them():
    rows = training_arrangements(64)
    assert all(a.tp * a.dp == 64 for a in rows)
    labels = [a.label for a in rows]
    for name in ("data parallel dp=64", "megatron tp=8 x dp=8", "megatron-sp tp=8 x dp=8", "optimus [4,4] x dp=4",
                 "tesseract [4,4,4] x dp=1", "tesseract [2,2,2] x dp=8", "cannon [4,4,2] x dp=2", "3d [2,2,2] x dp=8"):
        assert name in labels
    assert len(labels) == len(set(labels))  # 2d [q,q,1] and summa25d [q,q,1] appear once
    assert not any(a.algorithm == "summa25d" and a.tensor.grid[2] == 1 for a in rows)
    assert not any(a.tp > 1 and len(a.tensor.grid) == 3 and a.tensor.grid[0] == 1 for a in rows)
    assert labels.count("data parallel dp=64") == 1 and rows[0].tp == 1


def test_summa25d_depth_one_stays_when_2d_is_not_asked_for():
    labels = [a.label for a in training_arrangements(16, ["summa25d"], tp_sizes=(4,))]
    assert labels == ["tesseract [2,2,1] x dp=4"]


def test_json_keeps_the_registry_key():
    a = TrainingArrangement(Arrangement("summa25d", (4, 4, 4)), 2)
    assert a.label == "tesseract [4,4,4] x dp=2"
    assert a.to_dict() == {"arrangement": "tesseract [4,4,4] x dp=2", "algorithm": "summa25d", "grid": [4, 4, 4],
                           "placement": "linear", "overlap": False, "tp": 64, "pp": 1, "dp": 2, "schedule": None,
                           "virtual_stages": 1}


def test_pipelined_labels_read_as_people_write_them():
    megatron = TrainingArrangement(Arrangement("1d", (8,)), 64).pipelined(16, "interleaved", 3)
    assert (megatron.label, megatron.dp, megatron.gpus) == ("megatron tp=8 x pp=16 x dp=4 (interleaved v=3)", 4, 512)
    tesseract = TrainingArrangement(Arrangement("summa25d", (2, 2, 2)), 8).pipelined(4)
    assert tesseract.label == "tesseract [2,2,2] x pp=4 x dp=2"
    assert TrainingArrangement(Arrangement("1d", (1,)), 16, 4, "gpipe").label == "data parallel pp=4 x dp=16 (gpipe)"
    assert tesseract.to_dict()["schedule"] == "1f1b" and tesseract.to_dict()["pp"] == 4
    with pytest.raises(ValueError, match="need the interleaved schedule"):
        TrainingArrangement(Arrangement("1d", (8,)), 4, 2, "1f1b", 2)


def test_tp_sizes_parse_and_reject_non_divisors():
    assert tp_sizes_of(64) == (1, 2, 4, 8, 16, 32, 64)
    assert tp_sizes_of(64, "8,1,8") == (1, 8)
    with pytest.raises(InputError, match="3 does not divide --gpus 64"):
        tp_sizes_of(64, "8,3")
    with pytest.raises(InputError, match="integers"):
        tp_sizes_of(64, "eight")


def test_micro_batches_and_what_does_not_divide():
    assert micro_batches(256, 4, 8) == 8
    assert micro_batches(1536, 1, 128) == 12
    with pytest.raises(NotApplicable, match="not divisible by dp=3"):
        micro_batches(256, 1, 3)
    with pytest.raises(NotApplicable, match="micro-batch 3"):
        micro_batches(256, 3, 8)
    with pytest.raises(InputError, match="--global-batch"):
        micro_batches(0, 1, 1)


def test_tp_groups_sit_inside_servers_and_dp_groups_stride_by_tp():
    G = load_topology("dgx-a100:4")
    gpus = gpu_nodes(G)
    a = TrainingArrangement(Arrangement("1d", (8,)), 4)
    assert tp_group_gpus(G, a) == gpus[:8]
    assert {G.nodes[g]["server"] for g in tp_group_gpus(G, a, 3)} == {3}
    groups = dp_groups(G, a)
    assert groups[2] == [gpus[2], gpus[10], gpus[18], gpus[26]]
    assert sorted(g for group in groups for g in group) == sorted(gpus)


def test_the_grid_placement_applies_inside_each_group():
    G = load_topology("dgx-a100:2")
    gpus = gpu_nodes(G)
    a = TrainingArrangement(Arrangement("summa25d", (2, 2, 2), "depth-major"), 2)
    # depth-major: rank (k, j, i) on GPU (j*q + i)*d + k; rank 1 = (0, 0, 1) -> GPU 2; rank 4 = (1, 0, 0) -> GPU 1
    assert tp_group_gpus(G, a, 1)[1] == gpus[8 + 2] and tp_group_gpus(G, a, 1)[4] == gpus[8 + 1]
    assert dp_groups(G, a)[4] == [gpus[1], gpus[9]]
    with pytest.raises(InputError, match="needs 32 GPUs"):
        tp_group_gpus(G, TrainingArrangement(Arrangement("1d", (8,)), 4))


def test_buckets_hold_whole_parameters_in_reverse_order_and_are_ready_when_their_last_one_is():
    buckets = gradient_buckets([10.0, 1.0, 20.0], 5.0, 3, 25.0, 0.5, 2.0)
    # per layer, reversed: 20, 1, 10 -> [20 + 1 + 10 = 31] closes; layers are 2 s apart after a 0.5 s head
    assert [(b.nbytes, b.ready_s) for b in buckets] == [(31.0, 2.5), (31.0, 4.5), (31.0, 6.5), (5.0, 6.5)]
    assert sum(b.nbytes for b in buckets) == 3 * 31 + 5
    one = gradient_buckets([10.0], 0.0, 1, 1e9, 0.0, 1.0)
    assert [(b.nbytes, b.ready_s) for b in one] == [(10.0, 1.0)]  # an empty embedding adds no bucket
    with pytest.raises(ValueError):
        gradient_buckets([1.0], 0.0, 1, 0, 0.0, 1.0)


def test_model_flops_follow_korthikanti_and_reduce_to_6_n_tokens():
    B, L, s, h, V = 8, 24, 2048, 2048, 51200
    assert model_flops_per_step(B, L, s, h, V) == 72 * B * L * s * h * h * (1 + s / (6 * h) + V / (12 * h * L))
    # Without attention and logits, 72 B L s h^2 = 6 x (12 L h^2 parameters) x (B s tokens).
    tokens, params = B * s, 12 * L * h * h
    assert model_flops_per_step(B, L, s, h, 0) == pytest.approx(6 * params * tokens * (1 + s / (6 * h)))
    assert mfu(1e15, 1.0, 8, 312e12) == pytest.approx(1e15 / (8 * 312e12))


def test_vocabulary_padding_and_optimizer_pass():
    assert padded_vocab(51200, 8) == 51200 and padded_vocab(50257, 64) == 57344
    a100 = {"mem_bandwidth_GBps": 1555.0}
    # Megatron-LM's passes under bf16, fp32 main gradients: zero 4 + scale 8 + norm 4 + Adam 28 + copy 6.
    assert optimizer_step_s(1e9, "adam", a100) == pytest.approx(50e9 / 1555e9)
    assert optimizer_step_s(1e9, "sgd", a100) < optimizer_step_s(1e9, "adam", a100)
    with pytest.raises(InputError, match="--optimizer 'lamb'"):
        optimizer_step_s(1e9, "lamb", a100)


def test_aligned_buckets_cut_every_rank_at_the_heaviest_ranks_parameters():
    from simulator.training.gradients import aligned_buckets

    alike = aligned_buckets([[10.0, 20.0]] * 2, [5.0, 5.0], 2, 25.0, 0.0, 1.0)
    assert alike[0] == alike[1] == gradient_buckets([10.0, 20.0], 5.0, 2, 25.0, 0.0, 1.0)
    # Cannon-like: rank 1 holds no weights, only the embedding: the same buckets, empty but for the last
    uneven = aligned_buckets([[10.0, 20.0], [0.0, 0.0]], [5.0, 5.0], 2, 25.0, 0.0, 1.0)
    assert [b.ready_s for b in uneven[0]] == [b.ready_s for b in uneven[1]]
    assert [b.nbytes for b in uneven[1]] == [0.0] * (len(uneven[1]) - 1) + [5.0]

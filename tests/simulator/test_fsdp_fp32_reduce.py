"""ZeRO-2/3 with an fp32 gradient reduction (FSDP's reduce_dtype=torch.float32): bytes, time, memory, CLI."""

from __future__ import annotations

import dataclasses
import json

import pytest

from simulator.algorithms.arrangement import Arrangement
from simulator.compute import achievable_memory_bandwidth
from simulator.training import step as step_module
from simulator.training.arrangement import TrainingArrangement
from simulator.training.main_grads import copy_in_bytes, grad_bytes
from simulator.training.memory_fit import memory_of
from simulator.training.step import StepOptions, block_times, step_time
from simulator.workloads.workload import Workload
from tests.cli_run import run
from topologies import load_topology

BLOCK = Workload.transformer(2, 128, 256, 4)
FSDP = TrainingArrangement(Arrangement("1d", (1,)), 16)  # pure data parallelism on two servers
BASE = StepOptions(global_batch=32, layers=3, vocab=1000, zero=3)
REAL_BOUND = step_module.bound_stream


def test_grad_bytes_at_zero_2_and_3_are_the_parameters_unless_fp32_is_asked_for():
    for zero in (2, 3):
        assert [grad_bytes("bfloat16", zero, f) for f in (None, False, True)] == [2, 2, 4]
        assert grad_bytes("float16", zero, True) == 4 and grad_bytes("float32", zero, False) == 4
    # Megatron-LM's ZeRO 0 and 1 keep their defaults: fp32 under bf16 unless --grad-reduce-in-bf16.
    assert [grad_bytes("bfloat16", z, f) for z in (0, 1) for f in (None, False, True)] == [4, 2, 4, 4, 2, 4]
    # The cast copy-in: p read + 4 written per element, only where ZeRO 2/3 reduce wider than the parameters.
    assert copy_in_bytes(100, 2, 4, zero=3) == 600 and copy_in_bytes(100, 2, 2, zero=3) == 0
    assert copy_in_bytes(100, 2, 4, zero=1) == 0  # Megatron-LM's fp32 buffer is accumulated into, not copied


def _reduced_and_gathered(monkeypatch, options):
    seen = {"reduce_scatter": 0.0, "all_gather": 0.0}

    def spy(G, groups, buckets, kind, **kw):  # the first tensor-parallel rank's buckets (tp = 1: the only one)
        seen[kind] += sum(b.nbytes for s in buckets[:1] for b in s)
        return REAL_BOUND(G, groups, buckets, kind, **kw)

    monkeypatch.setattr(step_module, "bound_stream", spy)
    return step_time(load_topology("dgx-a100:2"), FSDP, BLOCK, options, bound=True), seen


def test_the_reduce_scatter_moves_twice_the_bytes_and_the_gathers_do_not_move(monkeypatch):
    bf16, plain = _reduced_and_gathered(monkeypatch, BASE)
    fp32, wide = _reduced_and_gathered(monkeypatch, dataclasses.replace(BASE, grad_reduce_in_fp32=True))
    assert wide["reduce_scatter"] == pytest.approx(2 * plain["reduce_scatter"]) and plain["reduce_scatter"] > 0
    assert wide["all_gather"] == pytest.approx(plain["all_gather"]) and plain["all_gather"] > 0
    assert fp32.hidden["dp"] + fp32.dp_comm_s > bf16.hidden["dp"] + bf16.dp_comm_s
    # The longer hidden reduction holds NCCL's SMs longer: the SM-sharing charge follows.
    assert fp32.terms["dp_overlap_sms"] > bf16.terms["dp_overlap_sms"] > 0
    assert fp32.step_s > bf16.step_s


def test_each_backward_pays_the_cast_into_the_fp32_reduce_scatter_input():
    G = load_topology("dgx-a100:2")
    bf16 = block_times(G, FSDP, BLOCK, BASE)
    fp32 = block_times(G, FSDP, BLOCK, dataclasses.replace(BASE, grad_reduce_in_fp32=True))
    rate = achievable_memory_bandwidth(G.nodes[next(n for n in G if G.nodes[n].get("device"))]["device"])
    layer = sum(bf16.layer_el[0])
    assert fp32.passes["block_bwd"].time_s == pytest.approx(bf16.passes["block_bwd"].time_s + 6 * layer / rate)
    root = bf16.word_el[0] + bf16.positions_el + bf16.final_norm_el  # the root unit, a tied embedding
    assert fp32.passes["embed_bwd"].time_s == pytest.approx(bf16.passes["embed_bwd"].time_s + 6 * root / rate)
    assert fp32.passes["block_fwd"] == bf16.passes["block_fwd"]
    # ZeRO-1 (Megatron-LM's distributed optimizer) is untouched by the flag's FSDP meaning.
    z1 = dataclasses.replace(BASE, zero=1)
    assert block_times(G, FSDP, BLOCK, z1) == block_times(G, FSDP, BLOCK, dataclasses.replace(z1, grad_reduce_in_fp32=True))


def test_the_sharded_gradients_are_fp32_and_the_unit_has_an_fp32_copy():
    bf16 = memory_of(FSDP, BLOCK, BASE).items
    fp32 = memory_of(FSDP, BLOCK, dataclasses.replace(BASE, grad_reduce_in_fp32=True)).items
    grads = [next(i for i in items if i.part == "grads") for items in (bf16, fp32)]
    assert grads[1].nbytes == 2 * grads[0].nbytes > 0 and "x 4 B, ZeRO-3 shard of dp=16" in grads[1].what
    unit = next(i for i in bf16 if "unsharded gradients before their reduce-scatter" in i.what)  # n x 2 B
    copy = [i for i in fp32 if "fp32 reduce-scatter input" in i.what]
    assert [i.nbytes for i in copy] == [2 * unit.nbytes]
    assert not any("fp32 reduce-scatter input" in i.what for i in bf16)
    assert [i for i in fp32 if i.part == "params"] == [i for i in bf16 if i.part == "params"]


def test_the_cli_flag_at_zero_3_reduces_in_fp32_and_the_launch_line_says_so(capsys):
    small = ("predict", "--gpus", "16", "--topology", "dgx-a100:2", "--workload", "transformer", "--seq", "256",
             "--hidden", "512", "--heads", "8", "--layers", "4", "--global-batch", "32", "--tp-sizes", "1",
             "--pp-sizes", "1", "--zero", "3", "--json")
    status, out, err = run(capsys, *small)
    assert status == 0, err
    status, wide, err = run(capsys, *small, "--accumulate-allreduce-grads-in-fp32")
    assert status == 0, err
    plain, fp32 = json.loads(out)[0], json.loads(wide)[0]
    assert fp32["comm"]["dp"]["total_s"] > 1.5 * plain["comm"]["dp"]["total_s"]
    assert fp32["comm"]["zero_gather"]["total_s"] == pytest.approx(plain["comm"]["zero_gather"]["total_s"])
    status, text, err = run(capsys, *small[:-1], "--accumulate-allreduce-grads-in-fp32")
    assert status == 0, err
    assert "--training.mixed_precision_reduce float32" in text
    assert "gradients reduce-scattered in float32" in text
    status, text, err = run(capsys, *small[:-1])
    assert "gradients reduce-scattered in bfloat16" in text and "torchtitan reduces in float32 only" in text
    assert "--training.mixed_precision_reduce" not in text

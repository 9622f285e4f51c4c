"""The work a Megatron-LM step does outside the layers: optimizer passes, embedding and loss, main gradients."""

from __future__ import annotations

import dataclasses

import pytest

from simulator.algorithms.arrangement import Arrangement
from simulator.compute import achievable_memory_bandwidth
from simulator.errors import InputError
from simulator.pipeline.stage_step import stage_passes
from simulator.training.arrangement import TrainingArrangement
from simulator.training.embedding_loss import cross_entropy_bytes, embedding_bytes
from simulator.training.dp_reduce import simulate_waves
from simulator.training.gradients import Bucket
from simulator.training.main_grads import accumulation_bytes, grad_bytes, megatron_flags, reduction_bucket_bytes
from simulator.training.optimizer_step import optimizer_passes, optimizer_terms
from simulator.training.placement import dp_groups
from simulator.training.step import StepOptions, block_times, step_time
from simulator.workloads.workload import Workload
from tests.cli_run import run
from topologies import load_topology

BLOCK = Workload.transformer(2, 128, 256, 4)
DP = TrainingArrangement(Arrangement("1d", (4,)), 4)  # 16 GPUs on two servers: a reduction over the fabric


def test_optimizer_passes_count_megatrons_bytes_per_parameter():
    bf16 = optimizer_passes(1.0, "adam")  # fp32 main gradients: zero 4, scale 8, norm 4, Adam 28, copy 4 + 2
    assert bf16 == {"zero_grad": 4, "grad_scale": 8, "grad_norm": 4, "adam": 28, "param_copy": 6}
    fp16 = optimizer_passes(1.0, "adam", grad_bytes=2, loss_scaling=True)  # fp16 buffer: .float() copy, unscale
    assert fp16 == {"zero_grad": 2, "grad_scale": 4, "main_grad_copy": 6, "unscale": 8, "grad_norm": 4,
                    "adam": 28, "param_copy": 6}
    fp32 = optimizer_passes(1.0, "sgd", grad_bytes=4, param_bytes=4)  # no master copy to keep
    assert fp32 == {"zero_grad": 4, "grad_scale": 8, "grad_norm": 4, "sgd": 20}
    # ZeRO: the buffer is zeroed and scaled whole, the state stepped on the shard.
    z1 = optimizer_passes(250.0, "adam", buffer=1000.0)
    assert sum(z1.values()) == 1000 * 12 + 250 * 38
    a100 = {"mem_bandwidth_GBps": 1555.0}
    terms = optimizer_terms(1e9, 4, "adam", "bfloat16", 4, a100)
    assert sum(terms.values()) == pytest.approx((1e9 * 12 + 0.25e9 * 38) / 1555e9)


def test_cross_entropy_and_embedding_bytes_closed_forms():
    # Forward: cast 2 + 4, max 4, sub 8, exp 8, sum 4, div 8 = 38 per logit; backward: mul 8, cast back 4 + 2.
    assert cross_entropy_bytes(10, 100, 2) == (38 * 1000, 14 * 1000)
    block = Workload.transformer(2, 4, 8, 2)  # T = 8 tokens, h = 8, learned positions, no dropout
    act = 8 * 8 * 2
    fwd, bwd = embedding_bytes(block, 16, 1, 2, 4)
    assert fwd == 2 * act + 3 * act + 2 * act  # gather, position add, transpose (one GPU: no masked rows)
    # dropout-free backward: transpose, sparse rows, the dense [V/t, h] gradient and its add into fp32,
    # the positions' batch reduction and its add.
    assert bwd == 2 * act + 3 * act + 16 * 8 * 2 + 16 * 8 * (2 + 8) + act + 4 * 8 * 2 + 4 * 8 * (2 + 8)
    dropped = dataclasses.replace(block, dropout=0.1)
    f2, b2 = embedding_bytes(dropped, 16, 2, 2, 4)
    assert f2 - fwd == act + 2 * act + 8 * 8 and b2 - bwd == 2 * act + 8 * 8  # masked rows (t = 2), dropout


def test_main_gradients_follow_megatrons_defaults_and_flags():
    assert grad_bytes("bfloat16", 0, None) == 4 and grad_bytes("bfloat16", 1, False) == 2
    assert grad_bytes("float16", 0, None) == 2 and grad_bytes("float16", 0, True) == 4
    assert grad_bytes("bfloat16", 3, None) == 2  # ZeRO-2/3 reduce in the parameters' dtype
    assert reduction_bucket_bytes(25e6, 0, True) == 25e6 and reduction_bucket_bytes(25e6, 1, False) == float("inf")
    assert reduction_bucket_bytes(25e6, 2, False) == 25e6
    assert accumulation_bytes(100, 2, 4, fusion=True) == 0 and accumulation_bytes(100, 2, 4, fusion=False) == 1000
    assert megatron_flags("bfloat16", 0, 1, True, None) == ()  # nothing to overlap with one replica
    assert megatron_flags("float16", 1, 8, False, True, False) == ("--accumulate-allreduce-grads-in-fp32",
                                                                   "--no-gradient-accumulation-fusion")


def test_the_terms_are_in_the_breakdown_and_add_up():
    G = load_topology("dgx-a100:2")
    s = step_time(G, DP, BLOCK, StepOptions(global_batch=32, layers=3, vocab=1000))
    optimizer = {"zero_grad", "grad_scale", "grad_norm", "adam", "param_copy"}
    # dp_overlap_sms appears where some of the reduction hides under the backward (its SM charge).
    assert optimizer | {"embedding_loss"} <= set(s.terms) <= optimizer | {"embedding_loss", "dp_overlap_sms"}
    assert s.optimizer_s == pytest.approx(sum(s.terms[k] for k in optimizer))
    p = s.passes
    embed = p["embed_fwd"].time_s + p["embed_bwd"].time_s
    assert p["embed_fwd"].comm_s > 0 and p["embed_bwd"].compute_s > 0  # the embedding's all-reduce, its passes
    assert s.terms["embedding_loss"] > s.micro_batches * embed > 0
    assert s.to_dict()["terms_s"] == s.terms
    plain = step_time(G, DP, BLOCK, StepOptions(global_batch=32, layers=3))  # no vocabulary: nothing around it
    assert plain.terms["embedding_loss"] == 0 and plain.passes["embed_fwd"].time_s == 0


def test_options_off_give_the_previous_values_and_on_cost_time():
    G = load_topology("dgx-a100:2")
    base = StepOptions(global_batch=32, layers=3, vocab=1000)
    fused = block_times(G, DP, BLOCK, base)
    unfused = block_times(G, DP, BLOCK, dataclasses.replace(base, gradient_accumulation_fusion=False))
    rate = achievable_memory_bandwidth(G.nodes[next(n for n in G if G.nodes[n].get("device"))]["device"])
    added = accumulation_bytes(max(sum(e) for e in fused.layer_el), 2, 4, fusion=False) / rate
    assert unfused.passes["block_bwd"].time_s == pytest.approx(fused.passes["block_bwd"].time_s + added)
    assert unfused.passes["block_fwd"] == fused.passes["block_fwd"]
    # Without --overlap-grad-reduce the whole fp32 buffer is one all-reduce after the backward, all of it
    # exposed; reduced in bf16 it moves half the bytes.
    small = dataclasses.replace(base, bucket_bytes=2e5)  # buckets of about a layer when overlapped
    after = step_time(G, DP, BLOCK, dataclasses.replace(small, overlap_grad_reduce=False))
    elements = [3 * sum(fused.layer_el[r]) + fused.word_el[r] + fused.positions_el + fused.final_norm_el
                for r in range(4)]
    groups = dp_groups(G, DP)
    whole = simulate_waves(G, groups, [[Bucket(4.0 * e, 0.0)] for e in elements], "all_reduce")
    assert after.dp_comm_s == pytest.approx(whole)
    assert step_time(G, DP, BLOCK, small).dp_comm_s != pytest.approx(whole)  # the buckets overlapped instead
    bf16 = step_time(G, DP, BLOCK, dataclasses.replace(small, overlap_grad_reduce=False, grad_reduce_in_fp32=False))
    assert bf16.dp_comm_s < after.dp_comm_s
    assert bf16.dp_comm_s == pytest.approx(
        simulate_waves(G, groups, [[Bucket(2.0 * e, 0.0)] for e in elements], "all_reduce"))


def test_deepspeeds_bf16_optimizer_adds_the_cast_copy_to_every_backward(capsys):
    # BF16_Optimizer.update_hp_grads: hp_grad.add_(lp.grad.to(fp32)): cast 2 + 4 bytes, add 4 + 4 + 4.
    assert accumulation_bytes(100, 2, 4, fusion=True, cast_copy=True) == 1800
    assert accumulation_bytes(100, 2, 4, fusion=False, cast_copy=True) == 1800  # DeepSpeed has no fusion
    G = load_topology("dgx-a100:2")
    base = StepOptions(global_batch=32, layers=3, vocab=1000)
    fused = block_times(G, DP, BLOCK, base)
    ds = block_times(G, DP, BLOCK, dataclasses.replace(base, deepspeed_bf16_optimizer=True))
    rate = achievable_memory_bandwidth(G.nodes[next(n for n in G if G.nodes[n].get("device"))]["device"])
    weights = max(sum(e) for e in fused.layer_el)
    assert ds.passes["block_bwd"].time_s == pytest.approx(fused.passes["block_bwd"].time_s + 18 * weights / rate)
    assert ds.passes["block_fwd"] == fused.passes["block_fwd"]
    unfused = block_times(G, DP, BLOCK, dataclasses.replace(base, gradient_accumulation_fusion=False))
    assert ds.passes["block_bwd"].time_s > unfused.passes["block_bwd"].time_s  # 18 bytes a weight against 10
    with pytest.raises(InputError, match="BF16_Optimizer runs bf16"):
        StepOptions(global_batch=32, layers=3, dtype="float16", deepspeed_bf16_optimizer=True)
    status, out, err = run(capsys, "predict", "--gpus", "8", "--topology", "dgx-a100", "--workload", "transformer",
                           "--seq", "256", "--hidden", "512", "--heads", "8", "--layers", "4", "--global-batch",
                           "32", "--dtype", "float16", "--deepspeed-bf16-optimizer")
    assert status == 2 and "use --dtype bfloat16" in err and "Traceback" not in err


def test_a_pipeline_puts_the_embedding_on_its_first_stage_and_the_loss_on_its_last():
    G = load_topology("dgx-a100:2")
    a = TrainingArrangement(Arrangement("1d", (4,)), 2, pp=2)
    bt = block_times(G, a, BLOCK, StepOptions(global_batch=16, layers=4, vocab=1000))
    passes = stage_passes(bt, a, 4)
    middle = passes["F", False, False].time_s
    assert passes["F", True, False].time_s == pytest.approx(middle + bt.passes["embed_fwd"].time_s)
    assert passes["F", False, True].time_s == pytest.approx(middle + bt.passes["head_fwd"].time_s)
    assert passes["B", True, True].time_s == pytest.approx(
        passes["B", False, False].time_s + bt.passes["embed_bwd"].time_s + bt.passes["head_bwd"].time_s)


def test_the_launch_line_says_how_the_plan_reduces(capsys):
    small = ("predict", "--gpus", "16", "--topology", "dgx-a100:2", "--workload", "transformer", "--seq", "256",
             "--hidden", "512", "--heads", "8", "--layers", "4", "--global-batch", "32", "--tp-sizes", "8",
             "--algos", "1d", "--zero", "0")
    status, out, err = run(capsys, *small)
    assert status == 0, err
    assert "--overlap-grad-reduce" in out
    status, out, err = run(capsys, *small, "--no-overlap-grad-reduce", "--grad-reduce-in-bf16",
                           "--no-gradient-accumulation-fusion")
    assert status == 0, err
    assert "--overlap-grad-reduce" not in out
    assert "--grad-reduce-in-bf16 --no-gradient-accumulation-fusion" in out
    status, out, err = run(capsys, *small, "--grad-reduce-in-bf16", "--accumulate-allreduce-grads-in-fp32")
    assert status == 2 and "not allowed with" in err

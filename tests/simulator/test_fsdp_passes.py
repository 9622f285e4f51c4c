"""ZeRO-2/3's memory passes as PyTorch FSDP1 and FSDP2 run them, against Megatron-LM's at ZeRO 0/1."""

from __future__ import annotations

import dataclasses

import pytest

from simulator.algorithms.arrangement import Arrangement
from simulator.compute import achievable_memory_bandwidth
from simulator.errors import InputError
from simulator.training.arrangement import TrainingArrangement
from simulator.training.fsdp_passes import microbatch_bytes, predivide_factor, step_bytes
from simulator.training.launch import launch_lines
from simulator.training.optimizer_step import optimizer_passes, optimizer_terms
from simulator.training.step import StepOptions, step_time
from simulator.workloads.workload import Workload
from tests.cli_run import run
from topologies import load_topology

BLOCK = Workload.transformer(2, 128, 256, 4)
FSDP = TrainingArrangement(Arrangement("1d", (1,)), 16)  # pure data parallelism on two servers
BASE = StepOptions(global_batch=64, layers=3, vocab=1000, zero=3)  # 2 micro-batches of 2 on each of 16 GPUs
DEVICE = {"mem_bandwidth_GBps": 1000.0}
OPTIMIZER = {"grad_norm", "grad_clip", "adam"}


def test_predivide_factor_is_fsdp1s_power_of_two_below_the_square_root():
    # torch default_hooks: doubled while it divides D and D / factor > factor.
    assert [predivide_factor(d) for d in (1, 2, 4, 8, 16, 32, 64, 128)] == [1, 2, 2, 4, 4, 8, 8, 16]


def test_zero_3_fsdp1_fsdp2_and_zero_1_run_different_passes():
    w, d = 1600.0, 16  # shard 100
    v1 = microbatch_bytes(w, d, 2, 2, zero=3, version=1, first=False)
    assert v1 == {"fsdp_param_cast": 2 * 100 * 6, "fsdp_grad_predivide": 1600 * 4, "fsdp_grad_postdivide": 100 * 4,
                  "fsdp_grad_cast": 100 * 6, "fsdp_grad_accumulate": 100 * 12}
    v2 = microbatch_bytes(w, d, 2, 2, zero=3, version=2, first=False)
    assert v2 == {"fsdp_param_cast": 2 * 100 * 6, "fsdp_gather_copy_in": 2 * 100 * 4,
                  "fsdp_gather_copy_out": 2 * 1600 * 4, "fsdp_grad_copy_in": 1600 * 4, "fsdp_grad_cast": 100 * 6,
                  "fsdp_grad_accumulate": 100 * 12}  # NCCL's AVG divides: no divide kernel
    # An fp32 reduction: no cast back, the widening copy-in is main_grads.copy_in_bytes' (block_bwd), not here.
    wide = microbatch_bytes(w, d, 2, 4, zero=3, version=2, first=True)
    assert "fsdp_grad_cast" not in wide and "fsdp_grad_copy_in" not in wide and "fsdp_grad_accumulate" not in wide
    # ZeRO-2 (SHARD_GRAD_OP / reshard_after_forward=False): one all-gather per micro-batch, not two.
    two = microbatch_bytes(w, d, 2, 2, zero=2, version=2)
    assert two["fsdp_gather_copy_out"] == v2["fsdp_gather_copy_out"] / 2
    assert two["fsdp_param_cast"] == v2["fsdp_param_cast"] / 2
    # fp16: FSDP2 divides around the reduction as FSDP1 does; fp32 training has no parameter cast.
    assert microbatch_bytes(w, d, 2, 2, zero=3, version=2, fp16=True)["fsdp_grad_predivide"] == 1600 * 4
    assert "fsdp_param_cast" not in microbatch_bytes(w, d, 4, 4, zero=3, version=1)
    # FSDP1's D = 2: predivide 2, postdivide 1 (no pass).
    assert "fsdp_grad_postdivide" not in microbatch_bytes(w, 2, 2, 2, zero=3, version=1)
    # ZeRO-1 is Megatron-LM's step: the whole buffer zeroed and scaled, a 28-byte fused Adam.
    assert optimizer_passes(100.0, "adam", 1600.0, 4) == {"zero_grad": 6400, "grad_scale": 12800, "grad_norm": 400,
                                                         "adam": 2800, "param_copy": 600}
    assert step_bytes(100.0, "adam", 2) == {"grad_norm": 400, "grad_clip": 800, "adam": 8000}
    assert step_bytes(100.0, "sgd", 2, loss_scaling=True) == {"unscale": 800, "grad_norm": 400, "grad_clip": 800,
                                                              "sgd": 3200}
    with pytest.raises(InputError, match="--fsdp-version 3"):
        microbatch_bytes(w, d, 2, 2, zero=3, version=3)


def test_optimizer_terms_switch_to_fsdps_step_only_under_pytorch_fsdp():
    rate = achievable_memory_bandwidth(DEVICE)
    for shard in (1, 16):  # Megatron-LM's passes (ZeRO 0 / 1, and Megatron-Core's FSDP), as before FSDP's existed
        terms = optimizer_terms(1600.0, shard, "adam", "bfloat16", 4, DEVICE)
        assert terms == {k: v / rate for k, v in optimizer_passes(1600.0 / shard, "adam", 1600.0, 4).items()}
    assert optimizer_terms(1600.0, 16, "adam", "bfloat16", 2, DEVICE, torch_fsdp=True) == {
        k: v / rate for k, v in step_bytes(100.0, "adam", 2).items()}


@pytest.fixture(scope="module")
def steps():
    G = load_topology("dgx-a100:2")
    return {v: step_time(G, FSDP, BLOCK, dataclasses.replace(BASE, fsdp_version=v), bound=True) for v in (1, 2)}


def test_the_step_charges_fsdps_passes_per_micro_batch(steps):
    one, two = steps[1], steps[2]
    assert one.micro_batches == 2
    assert OPTIMIZER <= set(one.terms) and not {"zero_grad", "grad_scale", "param_copy"} & set(one.terms)
    assert one.optimizer_s == pytest.approx(sum(one.terms[k] for k in OPTIMIZER))
    assert "fsdp_grad_predivide" in one.terms and "fsdp_gather_copy_out" not in one.terms
    assert "fsdp_gather_copy_out" in two.terms and "fsdp_grad_predivide" not in two.terms
    # The accumulation runs on the second micro-batch only, the casts on both: 1 : 2 of one micro-batch's bytes.
    acc, cast = one.terms["fsdp_grad_accumulate"], one.terms["fsdp_grad_cast"]
    assert acc / cast == pytest.approx(12 / 6 / 2)
    fsdp1 = sum(v for k, v in one.terms.items() if k.startswith("fsdp_"))
    fsdp2 = sum(v for k, v in two.terms.items() if k.startswith("fsdp_"))
    assert two.step_s - one.step_s == pytest.approx(fsdp2 - fsdp1) and fsdp2 > fsdp1 > 0


def test_zero_0_and_1_do_not_depend_on_the_fsdp_version():
    G = load_topology("dgx-a100:2")
    for zero in (0, 1):
        options = dataclasses.replace(BASE, zero=zero)
        a, b = (step_time(G, FSDP, BLOCK, dataclasses.replace(options, fsdp_version=v), bound=True) for v in (1, 2))
        assert a.to_dict() == b.to_dict() and not any(k.startswith("fsdp_") for k in a.terms)
        assert {"zero_grad", "grad_scale", "param_copy"} <= set(a.terms)


def test_the_cli_takes_the_version_and_refuses_others(capsys):
    args = ["predict", "--gpus", "8", "--topology", "dgx-a100:1", "--model", "gpt3-1.3b", "--global-batch", "16",
            "--tp-sizes", "1", "--pp-sizes", "1", "--zero", "3", "--simulate-top", "0"]
    status, _, err = run(capsys, *args, "--fsdp-version", "3")
    assert status == 2 and "--fsdp-version" in err and len(err.strip().splitlines()) == 1
    status, _, err = run(capsys, "predict", "--gpus", "8", "--topology", "dgx-a100:1", "--model", "gpt3-1.3b",
                         "--fsdp-version", "1")
    assert status == 2 and "add --global-batch" in err
    with pytest.raises(InputError, match="--fsdp-version 0"):
        StepOptions(global_batch=8, zero=3, fsdp_version=0)


def test_megatron_fsdp_takes_megatrons_passes_and_its_launch_flag(capsys):
    """Megatron-Core's own FSDP (NeMo's and Megatron-Bridge's FSDP rows) steps as Megatron-LM's distributed
    optimizer does and runs none of PyTorch FSDP's casts and copies; ZeRO 0 / 1 cannot take it."""
    G = load_topology("dgx-a100:2")
    mcore = step_time(G, FSDP, BLOCK, dataclasses.replace(BASE, megatron_fsdp=True), bound=True)
    assert {"zero_grad", "grad_scale", "param_copy"} <= set(mcore.terms)
    assert not any(k.startswith("fsdp_") for k in mcore.terms) and "grad_clip" not in mcore.terms
    with pytest.raises(InputError, match="--use-megatron-fsdp .* ZeRO 1"):
        StepOptions(global_batch=8, zero=1, megatron_fsdp=True)
    args = ["predict", "--gpus", "8", "--topology", "dgx-a100:1", "--model", "gpt3-1.3b", "--global-batch", "16",
            "--tp-sizes", "1", "--pp-sizes", "1", "--zero", "3", "--simulate-top", "1", "--use-megatron-fsdp"]
    status, out, _ = run(capsys, *args)
    assert status == 0 and "--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads_params" in out
    assert "Megatron-DeepSpeed" not in out and "torchtitan" not in out


def test_the_launch_lines_say_which_fsdp_timed_zero_2_and_3():
    """A ZeRO-2/3 plan timed with PyTorch FSDP's passes says so beside Megatron-DeepSpeed's line; Megatron-Core's
    FSDP and ZeRO 1 say nothing of it."""
    a = TrainingArrangement(Arrangement("1d", (1,)), 16)
    two = launch_lines(a, 4, StepOptions(global_batch=64, zero=2, fsdp_version=2))
    assert any("PyTorch FSDP2's" in line and "reshard_after_forward=False" in line for line in two)
    one = launch_lines(a, 4, StepOptions(global_batch=64, zero=3, fsdp_version=1))
    assert any("FSDP1's" in line and "FullyShardedDataParallel" in line for line in one)
    for lines in (launch_lines(a, 4, StepOptions(global_batch=64, zero=3, megatron_fsdp=True)),
                  launch_lines(a, 4, StepOptions(global_batch=64, zero=1))):
        assert not any("PyTorch FSDP" in line and "timed with" in line for line in lines)
    # Per-op checkpointing under Megatron-Core's FSDP: no torchtitan line is printed, so none is pointed to.
    mcore = launch_lines(a, 4, StepOptions(global_batch=64, zero=3, megatron_fsdp=True, recompute="selective-op"))
    assert not any("torchtitan (FSDP2)" in line or "the torchtitan line runs it" in line for line in mcore)
    assert any("timed as torchtitan's --activation_checkpoint.mode" in line for line in mcore)

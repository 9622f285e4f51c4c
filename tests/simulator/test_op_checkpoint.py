"""``--recompute selective-op``: torchtitan's per-op selective checkpointing, its time, FLOPs, memory and CLI.

The oracle is torchtitan's policy applied by hand to the block's layer list (``_save_list`` and the
every-second-mm rule of ``torchtitan/parallelisms/parallelize_llama.py`` at 9dec370ad): the Llama block's
seven matmuls in forward order are wq, wk, wv, wo, w1, w3, w2; the odd ones are kept, so wk, wo and w3 run
again, with every norm, the rotary embedding and the SwiGLU product, and the flash attention op is kept.
"""

from __future__ import annotations

import json

import pytest

from simulator.algorithms.arrangement import Arrangement
from simulator.algorithms.registry import build_schedule
from simulator.errors import NotApplicable
from simulator.memory.activations import layer_activations
from simulator.memory.setup import TrainingSetup
from simulator.memory.training import training_memory
from simulator.timing.critical_path import analyze
from simulator.timing.simulation import plan_on_graph
from simulator.training.arrangement import TrainingArrangement
from simulator.training.flops import hardware_flops_per_step, model_flops_per_step
from simulator.training.launch import launch_lines
from simulator.training.placement import tp_group_gpus
from simulator.training.step import StepOptions, block_times, build_block, step_time
from simulator.workloads.layers import Attention, Linear, SwiGLU
from simulator.workloads.op_checkpoint import op_checkpoint
from simulator.workloads.workload import Workload
from tests.cli_run import run
from topologies.presets import build_preset

LLAMA = dict(kv_heads=8, norm="rmsnorm", activation="swiglu", position="rotary", bias=False)


def llama_8b_like(attention: str = "flash", seq: int = 8192, batch: int = 1) -> Workload:
    """Llama 3.1 8B's block: h 4096, 32 heads of 128, 8 key/value heads, SwiGLU of 14336."""
    return Workload.transformer(batch, seq, 4096, 32, 14336, attention=attention, **LLAMA)


def small_llama(attention: str = "flash") -> Workload:
    return Workload.transformer(1, 256, 256, 8, 704, attention=attention, kv_heads=2, norm="rmsnorm",
                                activation="swiglu", position="rotary", bias=False)


def unkept_products(w: Workload) -> list[tuple[str, int, int]]:
    """(part, k, columns) of every matmul the policy does not keep, straight from the layer list: torchtitan's
    modules run QKV as wq, wk, wv and the gate/up GEMM as w1, w3; every second mm, counted from one, is not kept."""
    layers = w.layers()
    core = next(layer for layer in layers if isinstance(layer, Attention))
    products = []
    for layer in layers:
        if not isinstance(layer, Linear):
            continue
        if layer.part == "qkv":
            kv = core.heads // core.group * core.head_dim
            cols = [core.heads * core.head_dim, kv, kv]
        elif any(isinstance(x, SwiGLU) and layer.y in x.inputs for x in layers):
            cols = [layer.n // 2, layer.n // 2]
        else:
            cols = [layer.n]
        products += [(layer.part, layer.k, c) for c in cols]
    return [p for i, p in enumerate(products, 1) if i % 2 == 0]


def test_the_8b_block_recomputes_wk_wo_and_w3_and_the_layers_between() -> None:
    c = op_checkpoint(llama_8b_like())
    assert [(p.name, p.kept) for p in c.products] == [("Q", True), ("K", False), ("V", True), ("P", False),
                                                      ("gate", True), ("up", False), ("F", True)]
    assert dict(c.recomputed) == {"ln1": 1.0, "qkv": 1024 / 6144, "rope": 1.0, "proj": 1.0, "drop1": 1.0,
                                  "res1": 1.0, "ln2": 1.0, "fc1": 0.5, "swiglu": 1.0}
    assert dict(c.kept) == {"QKV": 5120 / 6144, "CTX": 1.0, "H": 0.5, "F": 1.0} and c.attention_kept


def test_a_biased_linear_is_addmm_neither_counted_nor_kept_and_an_unlisted_kernel_is_recomputed() -> None:
    # GPT: biases, GELU, flash; unfused, so every linear adds its own bias (addmm)
    gpt = op_checkpoint(Workload.transformer(1, 512, 256, 8, bias_gelu_fusion=False, bias_dropout_fusion=False))
    assert not any(p.mm or p.kept for p in gpt.products) and dict(gpt.kept) == {"CTX": 1.0}
    # Megatron-LM's fused kernels take the bias of proj, fc1 and fc2 (skip_bias_add): those are plain mm, counted
    fused = op_checkpoint(Workload.transformer(1, 512, 256, 8))
    assert [(p.name, p.mm, p.kept) for p in fused.products] == [("Q", False, False), ("K", False, False),
                                                                ("V", False, False), ("P", True, True),
                                                                ("H", True, False), ("F", True, True)]
    # Nothing reads F in a backward (dropout redraws its mask, the residual reads nothing): fc2 is not rerun.
    assert [part for part, _ in gpt.recomputed] == ["ln1", "qkv", "proj", "drop1", "res1", "ln2", "fc1", "gelu"]
    bare = op_checkpoint(Workload.transformer(1, 512, 256, 8, bias=False, attention="cudnn"))
    assert [p.name for p in bare.products if p.kept] == ["Q", "V", "H"] and not bare.attention_kept
    assert dict(bare.recomputed)["attn"] == 1.0 and "fc2" not in dict(bare.recomputed)


@pytest.mark.parametrize("attention", ["flash", "unfused"])
def test_recomputed_flops_are_the_unkept_products_and_lie_between_selective_and_full(attention) -> None:
    w = llama_8b_like(attention)
    M, s, h = w.m, w.seq, w.hidden
    expected = sum(2.0 * M * k * n for _, k, n in unkept_products(w))
    core = 4.0 * w.batch * s * s * h  # the attention core's two products: recomputed unless its op is kept
    if attention != "flash":
        expected += core
    got = op_checkpoint(w).recomputed_flops
    assert got == pytest.approx(expected, rel=1e-12)
    weights = sum(layer.k * layer.n for layer in w.linears())

    def extra(mode: str) -> float:
        return (hardware_flops_per_step(w.batch, 1, s, h, 0, mode, weights, per_op_flops=got / w.batch)
                - model_flops_per_step(w.batch, 1, s, h, 0, weights))
    selective = extra("selective") if attention == "unfused" else 0.0  # under flash it recomputes nothing
    assert selective < extra("selective-op") < extra("full")
    assert extra("selective-op") == pytest.approx(got, rel=1e-12)


def _bound_passes(w: Workload, recompute: str) -> dict:
    G = build_preset("dgx-h100:1")
    a = TrainingArrangement(Arrangement("1d", (1,)), 1)
    return block_times(G, a, w, StepOptions(global_batch=1, recompute=recompute), bound=True).passes


@pytest.mark.parametrize("attention", ["flash", "unfused"])
def test_the_backward_adds_the_unkept_parts_forward_between_selective_and_full(attention) -> None:
    w = small_llama(attention)
    none, sel, op, full = (_bound_passes(w, r)["block_bwd"].time_s for r in ("none", "selective", "selective-op",
                                                                          "full"))
    fwd = _bound_passes(w, "none")["block_fwd"].time_s
    assert full == pytest.approx(none + fwd)
    assert sel <= op - 1e-9 and op < full - 1e-9
    # The added time is the forward's parts, the split linears at their unkept columns' share.
    G = build_preset("dgx-h100:1")
    a = TrainingArrangement(Arrangement("1d", (1,)), 1)
    gpus = tp_group_gpus(G, a)
    schedule = build_block(a, w, "fwd", "bfloat16")
    parts = analyze(schedule, G, gpus, timeline=False, plan=plan_on_graph(schedule, G, gpus, None)).parts
    unkept = unkept_products(w)
    shares = {"qkv": sum(n for p, _, n in unkept if p == "qkv") / w.layers()[1].n, "fc1": 0.5}
    whole = ["ln1", "rope", "proj", "drop1", "res1", "ln2", "swiglu"] + (["attn"] if attention != "flash" else [])
    added = sum(parts[p].compute_s for p in whole) + sum(parts[p].compute_s * f for p, f in shares.items())
    assert op - none == pytest.approx(added, rel=1e-9)


def test_a_tensor_parallel_arrangement_is_not_applicable() -> None:
    G = build_preset("dgx-h100:1")
    a = TrainingArrangement(Arrangement("1d-sp", (2,)), 1)
    with pytest.raises(NotApplicable, match="selective-op is timed on a tensor-parallel size of 1.*got tp=2"):
        step_time(G, a, small_llama(), StepOptions(global_batch=1, recompute="selective-op"), bound=True)


def test_kept_bytes_are_the_input_the_kept_products_attention_output_and_log_sum_exp() -> None:
    w = small_llama()
    schedule = build_schedule("1d", w, "both", "bfloat16", gpus=1)
    kept = {k.kind: k.nbytes for k in layer_activations(schedule, 0, "selective-op", w)}
    M, h, heads = w.m, w.hidden, w.heads
    d = h // heads
    # X, Q and V (kv_heads x d each), CTX, the gate half of H, F; fp32 log-sum-exp per row and head.
    assert kept == {"input": 2 * M * h, "kept": 2 * M * (heads * d + 2 * d + h + w.ffn + h),
                    "attention": 4 * M * heads}
    totals = {r: sum(k.nbytes for k in layer_activations(schedule, 0, r, w)) for r in ("none", "selective-op", "full")}
    assert totals["full"] < totals["selective-op"] < totals["none"]


def test_memory_lies_between_full_and_none_with_one_layer_recomputed_on_top() -> None:
    w = small_llama()
    schedule = build_schedule("1d", w, "both", "bfloat16", gpus=1)
    modes = ("none", "selective-op", "full")
    peak = {r: training_memory(schedule, TrainingSetup(recompute=r, layers=8)) for r in modes}
    acts = {r: m.activations_bytes for r, m in peak.items()}
    assert acts["full"] < acts["selective-op"] < acts["none"]
    per_layer = {r: sum(k.nbytes for k in layer_activations(schedule, 0, r, w)) for r in ("none", "selective-op")}
    assert acts["selective-op"] == 8 * per_layer["selective-op"] + per_layer["none"] - per_layer["selective-op"]


def test_launch_lines_name_torchtitans_flags_and_that_megatron_lm_has_none() -> None:
    a = TrainingArrangement(Arrangement("1d", (1,)), 8)
    lines = launch_lines(a, 2, StepOptions(global_batch=16, zero=3, recompute="selective-op"))
    assert "--recompute-granularity" not in lines[0]
    assert ("--activation_checkpoint.mode selective --activation_checkpoint.selective_ac_option op" in lines[2])
    # lines[3], not [-1]: the options now carry FSDP2 and its reduce dtype, whose two lines follow (as predict prints)
    assert lines[3] == "  Megatron-LM has no per-op selective checkpointing: the torchtitan line runs it"
    ddp = launch_lines(a, 2, StepOptions(global_batch=16, zero=1, recompute="selective-op"))
    assert ddp[-1].endswith("timed as torchtitan's --activation_checkpoint.mode selective "
                            "--activation_checkpoint.selective_ac_option op")


PLAN = ("predict", "--gpus", "8", "--topology", "dgx-h100:1", "--model", "llama3-8b", "--seq", "1024",
        "--global-batch", "16", "--batch", "2", "--tp-sizes", "1", "--pp-sizes", "1", "--zero", "3",
        "--simulate-top", "0")


def test_predict_accepts_selective_op_and_round_trips_it(capsys) -> None:
    status, out, err = run(capsys, *PLAN, "--recompute", "selective-op", "--json")
    assert status == 0, err
    rows = {r["recompute"]: r for r in json.loads(out)}
    assert list(rows) == ["selective-op"]
    status, out, err = run(capsys, *PLAN, "--recompute", "selective-op")
    assert status == 0, err
    assert "Z3 sel-op" in out and "sel-op: per-op selective" in out


@pytest.mark.parametrize("bad", ["selective_op", "op", "Selective-Op"])
def test_predict_refuses_a_bad_recompute_in_one_line(capsys, bad) -> None:
    status, out, err = run(capsys, *PLAN, "--recompute", bad)
    assert status == 2
    assert err.strip() == (f"tpsim predict: error: --recompute {bad}: recomputation is one of none, selective, "
                           f"selective-op, full")

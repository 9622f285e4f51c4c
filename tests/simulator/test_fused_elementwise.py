"""Megatron-LM's fused bias-GeLU and bias-dropout-add: the same numbers as the unfused pieces, fewer bytes.

The fused local functions against the unfused composition on numbers (the interpreter, every algorithm),
their byte counts against one read per input and one write per output, the memory model's masks, and
the 22B layer's forward faster by exactly the bytes the fused kernels do not move.
"""

from __future__ import annotations

import numpy as np
import pytest

from simulator import api
from simulator.algorithms.registry import build_schedule
from simulator.compute import ComputeConfig, achievable_memory_bandwidth
from simulator.errors import InputError
from simulator.ir.interpret import interpret
from simulator.ir.ops import Local
from simulator.memory.activations import layer_activations
from simulator.training.launch import fusion_flags
from simulator.workloads.functions import FUNCTIONS
from simulator.workloads.layers import BiasDropoutAdd, BiasGelu, Dropout, Elementwise, Residual
from simulator.workloads.work import Work
from simulator.workloads.workload import Workload
from topologies.loader import load_topology

UNFUSED = {"bias_gelu_fusion": False, "bias_dropout_fusion": False}
CASES = [("1d", {"gpus": 3}, (2, 3, 6, 2, 9, 0.2)), ("1d-sp", {"gpus": 4}, (2, 6, 12, 6, 20, 0.2)),
         ("2d", {"grid": (2, 2, 1)}, (2, 5, 6, 6, 144, 0.0)), ("summa25d", {"grid": (2, 2, 2)}, (4, 5, 6, 6, 22, 0.2)),
         ("cannon25d", {"grid": (2, 2, 2)}, (2, 5, 6, 6, 144, 0.2))]


def _block(sizes, **architecture) -> Workload:
    batch, seq, heads, head_dim, ffn, dropout = sizes
    return Workload.transformer(batch, seq, heads * head_dim, heads, ffn=ffn, dropout=dropout, **architecture)


@pytest.mark.parametrize("passes", ("fwd", "bwd", "both"))
@pytest.mark.parametrize("algorithm, grid, sizes", CASES, ids=[case[0] for case in CASES])
def test_fused_and_unfused_schedules_give_the_same_numbers(algorithm, grid, sizes, passes) -> None:
    results = []
    for architecture in ({}, UNFUSED):
        workload = _block(sizes, **architecture)
        schedule = build_schedule(algorithm, workload, passes, "float64", **grid)
        result = interpret(schedule, seed=5)
        assert result.max_error <= 1e-10, result.errors
        results.append(result.outputs)
    fused, unfused = results
    assert set(fused) == set(unfused)
    for name in fused:  # the same arithmetic in the same order: equal to the last bit
        np.testing.assert_array_equal(fused[name], unfused[name], err_msg=name)


def test_each_fused_function_is_its_unfused_composition_to_the_bit() -> None:
    rng = np.random.default_rng(7)
    x, r, dy, b = rng.normal(size=(6, 8)), rng.normal(size=(6, 8)), rng.normal(size=(6, 8)), rng.normal(size=(1, 8))
    drop = {"seed": 3, "p": 0.3, "stream": 1, "row0": 12, "col0": 8, "width": 24}
    f = {name: FUNCTIONS[name].numpy for name in FUNCTIONS}
    np.testing.assert_array_equal(f["bias_gelu"](x, b), f["gelu"](f["bias_add"](x, b)))
    np.testing.assert_array_equal(f["bias_gelu_backward"](dy, x, b), f["gelu_backward"](dy, f["bias_add"](x, b)))
    np.testing.assert_array_equal(f["bias_dropout_add"](x, b, r, **drop),
                                  f["add"](r, f["dropout"](f["bias_add"](x, b), **drop)))
    np.testing.assert_array_equal(f["dropout_backward"](dy, **drop), f["dropout"](dy, **drop))
    kept = f["dropout"](np.ones((6, 8)), **drop) != 0
    assert 0 < kept.mean() < 1  # the mask really drops some and keeps some


def test_the_block_uses_the_fused_layers_only_with_biases() -> None:
    gpt = _block((2, 3, 2, 4, 16, 0.1))
    kinds = [type(layer) for layer in gpt.layers()]
    assert kinds.count(BiasDropoutAdd) == 2 and BiasGelu in kinds
    assert Dropout not in kinds and Residual not in kinds and Elementwise not in kinds
    assert not any(getattr(layer, "bias", None) for layer in gpt.linears()[1:])  # proj, fc1, fc2: skip_bias_add
    assert gpt.linears()[0].bias == "bqkv"  # the QKV bias stays in its linear, as in Megatron-LM
    unfused = _block((2, 3, 2, 4, 16, 0.1), **UNFUSED)
    assert gpt.weights() == unfused.weights()  # the same parameters, in the same order
    assert gpt.saved_activations() == unfused.saved_activations()
    dropout_zero = _block((2, 3, 2, 4, 16, 0.0))  # Megatron-LM runs the fused add with dropout 0 too
    assert sum(isinstance(layer, BiasDropoutAdd) for layer in dropout_zero.layers()) == 2
    llama = Workload.transformer(2, 3, 8, 2, ffn=16, norm="rmsnorm", activation="swiglu", position="rotary",
                                 bias=False)
    assert llama.layers() == Workload.transformer(2, 3, 8, 2, ffn=16, norm="rmsnorm", activation="swiglu",
                                                  position="rotary", bias=False, **UNFUSED).layers()


def test_each_fused_kernel_reads_each_input_once_and_writes_its_output_once() -> None:
    r, c, bias = (6, 8), 8, (1, 8)
    rc = 48
    drop = {"p": 0.1, "stream": 1, "row0": 0, "col0": 0, "width": 8}
    work = {name: FUNCTIONS[name].work(shapes, r, params) for name, shapes, params in (
        ("bias_gelu", [r, bias], {}), ("bias_gelu_backward", [r, r, bias], {}),
        ("bias_dropout_add", [r, bias, r], drop), ("dropout_backward", [r], drop))}
    assert (work["bias_gelu"].elements, work["bias_gelu"].mask_bytes) == (2 * rc + c, 0)
    assert (work["bias_gelu_backward"].elements, work["bias_gelu_backward"].mask_bytes) == (3 * rc + c, 0)
    assert (work["bias_dropout_add"].elements, work["bias_dropout_add"].mask_bytes) == (3 * rc + c, rc)
    assert (work["dropout_backward"].elements, work["dropout_backward"].mask_bytes) == (2 * rc, rc)
    no_drop = FUNCTIONS["bias_dropout_add"].work([r, bias, r], r, {**drop, "p": 0.0})
    assert no_drop.mask_bytes == 0  # PyTorch's dropout with p = 0 returns its input: no mask
    for fn in ("dropout", "dropout_backward"):  # ... and runs no kernel, forward or backward
        assert FUNCTIONS[fn].work([r], r, {**drop, "p": 0.0}) == Work()
    unfused = sum(FUNCTIONS[fn].work(shapes, r, drop).elements for fn, shapes in (
        ("bias_add", [r, bias]), ("dropout", [r]), ("add", [r, r])))
    assert unfused == 7 * rc + c  # what the three unfused passes move ...
    assert 2 * work["bias_dropout_add"].elements + work["bias_dropout_add"].mask_bytes == 7 * rc + 2 * c  # ... halved
    for name in work:  # the arithmetic is the unfused pieces', only the bytes move
        assert work[name].flops >= rc


def _local_bytes(schedule, rank: int = 0) -> int:
    return sum(schedule.memory_bytes(rank, op) for op in schedule.programs[rank] if isinstance(op, Local))


def test_the_22b_layers_forward_is_faster_by_the_bytes_the_fused_kernels_save() -> None:
    """Korthikanti et al.'s 22B layer on 8 A100s (1-D): the makespan falls by the fused passes' saving."""
    options = dict(algo="1d", gpus=8, topology="dgx-a100-80gb", model="megatron-22b", layers=1, batch=4,
                   attention="unfused", **{"pass": "fwd"})
    fused = api.tpsim_json("simulate", **options)["makespan_s"]
    unfused = api.tpsim_json("simulate", no_bias_gelu_fusion=True, no_bias_dropout_fusion=True, **options)["makespan_s"]
    blocks = [Workload.transformer(4, 2048, 6144, 64, dropout=0.1, attention="unfused", **architecture)
              for architecture in (UNFUSED, {})]
    saved = _local_bytes(build_schedule("1d", blocks[0], "fwd", "bfloat16", gpus=8)) \
        - _local_bytes(build_schedule("1d", blocks[1], "fwd", "bfloat16", gpus=8))
    # per element of the [M, h] activation: 2 x (7 - 3.5) passes of 2 B; of the [M, f/8] FC1 output: 2 x 2 B
    m, h, f = 4 * 2048, 6144, 24576 // 8
    assert saved == 2 * (7 * 2 - 3 * 2 - 1) * m * h + 2 * 2 * m * f
    G = load_topology("dgx-a100-80gb")
    device = next(data["device"] for _, data in G.nodes(data=True) if "device" in data)
    config = ComputeConfig.from_sim(G.graph.get("sim"))
    expected = saved / achievable_memory_bandwidth(device, config.memory_efficiency)
    assert unfused - fused == pytest.approx(expected, rel=1e-9)
    assert expected / unfused > 0.05  # the saving is not a rounding error: over 5% of the forward


def test_the_fused_kernel_keeps_the_same_one_byte_masks() -> None:
    sizes = (2, 6, 12, 6, 20, 0.2)
    for recompute in ("none", "selective"):
        fused = layer_activations(build_schedule("1d-sp", _block(sizes), "both", "bfloat16", gpus=4), 0, recompute)
        unfused = layer_activations(build_schedule("1d-sp", _block(sizes, **UNFUSED), "both", "bfloat16", gpus=4), 0,
                                    recompute)
        assert [(k.kind, k.nbytes) for k in fused] == [(k.kind, k.nbytes) for k in unfused]
        mask = next(k for k in fused if k.kind == "mask")
        assert mask.nbytes == 2 * (2 * 6 // 4) * 72  # two sites, a [M/4, h] shard each (M = 12, h = 72), 1 B each


def test_the_options_reach_the_record_the_label_and_the_launch_line() -> None:
    workload = _block((2, 3, 2, 4, 16, 0.1), **UNFUSED)
    record = workload.to_dict()
    assert record["bias_gelu_fusion"] is False and record["bias_dropout_fusion"] is False
    assert Workload.from_dict(record) == workload
    assert "bias_gelu_fusion" not in _block((2, 3, 2, 4, 16, 0.1)).to_dict()  # the default is not stored
    assert workload.label().endswith(" no-bias-gelu-fusion no-bias-dropout-fusion")
    assert fusion_flags(workload) == ("--no-bias-gelu-fusion", "--no-bias-dropout-fusion")
    assert fusion_flags(_block((2, 3, 2, 4, 16, 0.1))) == ()
    with pytest.raises(InputError, match="'bias_gelu_fusion' must be true or false, got 'no'"):
        Workload.from_dict({**record, "bias_gelu_fusion": "no"})


def test_a_fusion_flag_on_a_workload_without_one_is_refused() -> None:
    with pytest.raises(InputError, match="--no-bias-dropout-fusion is a transformer's kernel fusion; --workload mlp"):
        api.tpsim_json("simulate", algo="1d", gpus=2, workload="mlp", m=8, hidden=8, topology="dgx-a100-80gb",
                       no_bias_dropout_fusion=True)


def test_predict_names_the_fusions_it_timed_without_on_the_launch_line(capsys):
    from simulator.cli import main

    argv = ["predict", "--gpus", "8", "--topology", "dgx-a100", "--model", "gpt3-1.3b", "--global-batch", "16",
            "--batch", "2", "--tp-sizes", "2", "--algos", "1d", "--simulate-top", "1"]
    assert main(argv + ["--no-bias-dropout-fusion"]) == 0
    launch = next(line for line in capsys.readouterr().out.splitlines() if "Megatron-LM: " in line)
    assert "--no-bias-dropout-fusion" in launch and "--no-bias-gelu-fusion" not in launch
    assert main(argv) == 0
    launch = next(line for line in capsys.readouterr().out.splitlines() if "Megatron-LM: " in line)
    assert "fusion" not in launch  # Megatron-LM's default: nothing to say


def test_a_saved_unfused_schedule_replays_unfused_and_refuses_the_flag_again(tmp_path):
    from simulator.ir.serialize import save_schedule

    workload = _block((2, 3, 2, 4, 16, 0.1), **UNFUSED)
    path = tmp_path / "unfused.json"
    save_schedule(build_schedule("1d", workload, "fwd", "bfloat16", gpus=2), path)
    options = dict(topology="dgx-a100")
    replayed = api.tpsim_json("simulate", schedule=str(path), **options)
    built = api.tpsim_json("simulate", algo="1d", gpus=2, workload="transformer", batch=2, seq=3, hidden=8, heads=2,
                           ffn=16, dropout=0.1, no_bias_gelu_fusion=True, no_bias_dropout_fusion=True,
                           **{"pass": "fwd"}, **options)
    assert replayed["makespan_s"] == built["makespan_s"] and list(replayed["parts"]) == list(built["parts"])
    assert "drop1" in replayed["parts"]
    with pytest.raises(InputError, match="drop --no-bias-gelu-fusion"):
        api.tpsim_json("simulate", schedule=str(path), no_bias_gelu_fusion=True, **options)

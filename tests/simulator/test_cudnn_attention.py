"""cuDNN's fused attention (``--attention cudnn``): its published rates per pass, time, refusals and values."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from simulator.algorithms.registry import build_schedule
from simulator.compute import ComputeModel
from simulator.errors import InputError
from simulator.ir.interpret import interpret
from simulator.ir.ops import Local
from simulator.ir.validate import validate_schedule
from simulator.memory.activations import layer_activations
from simulator.workloads.attention_cost import attention_work, flash_time_s
from simulator.workloads.workload import Workload
from topologies.attention_rates import FA2_SEQ_LENS, flash_flops
from topologies.cudnn_rates import CUDNN_TFLOPS, cudnn_head_dims, cudnn_tflops
from topologies.devices import DEVICES

H100 = DEVICES["H100-SXM5-80GB"].as_dict()
H200 = DEVICES["H200-SXM-141GB"].as_dict()
A100 = DEVICES["A100-SXM4-80GB"].as_dict()
V100 = DEVICES["V100-SXM2-32GB"].as_dict()

# The cuDNN bar labels of the FlashAttention-3 paper's forward figure, causal panels (b), (d), (f), as read
# off Dao-AILab/flash-attention assets/flash3_fp16_fwd.png: 512, 1k, 2k, 4k, 8k, 16k.
FORWARD = {64: (225, 288, 334, 363, 379, 388), 128: (315, 410, 484, 518, 529, 539),
           256: (308, 391, 450, 483, 497, 509)}
# cudnn-frontend benchmark/benchmark_results.csv (b740542), "cudnn BF16 (TFlops/s bwd)", causal, d 128:
# 4k, 8k, 16k (4 x 16 heads x 4096 ... 1 x 16 x 16384), rounded to one decimal.
BACKWARD = {4096: 443.6, 8192: 463.5, 16384: 497.7}
# cudnn-frontend's Blackwell CSVs (B200 at 0b1577c, pyt_cudnn, 1 decimal; GB200 at b372d39, cudnn_fe): causal,
# 1 x 128 query heads x d 128, (forward, backward) at 512, 1k, 2k, 4k, 8k, 16k.
BLACKWELL = {"B200-180GB": ((84.0, 254.5, 478.9, 855.7, 1171.3, 1332.4), (134.2, 308.5, 371.5, 701.3, 942.5, 1074.8)),
             "GB200-186GB": ((408, 733, 1069, 1386, 1584, 1668), (329, 527, 655, 1054, 1211, 1304))}


@pytest.mark.parametrize("head_dim", sorted(FORWARD))
def test_every_forward_length_reads_its_bar_label(head_dim):
    assert CUDNN_TFLOPS["GH100", "forward", True, head_dim] == FORWARD[head_dim]


@pytest.mark.parametrize("device", sorted(BLACKWELL))
def test_blackwell_reads_its_own_csv_for_each_pass(device):
    for mode, row in zip(("forward", "backward"), BLACKWELL[device]):
        for seq, value in zip(FA2_SEQ_LENS, row):
            assert cudnn_tflops(device, 128, seq, mode) == value


@pytest.mark.parametrize("device", ["H100-SXM5-80GB", "H200-SXM-141GB"])
def test_head_dim_128_reads_both_figures_on_either_hopper(device):
    for seq, label in zip(FA2_SEQ_LENS, FORWARD[128]):
        assert cudnn_tflops(device, 128, seq, "forward") == label
    for seq, label in BACKWARD.items():
        assert cudnn_tflops(device, 128, seq, "backward") == label
    # below 4k the backward is held at its first published figure, above 16k at its last
    assert cudnn_tflops(device, 128, 2048, "backward") == 443.6
    assert cudnn_tflops(device, 128, 65536, "backward") == 497.7
    # halfway in log2 between 4k (518) and 8k (529)
    assert cudnn_tflops(device, 128, int(round(2 ** 12.5)), "forward") == pytest.approx(523.5, abs=0.01)


def test_only_head_dims_with_both_passes_have_a_rate():
    assert cudnn_head_dims("H100-SXM5-80GB") == (128,)
    assert cudnn_tflops("H100-SXM5-80GB", 64, 4096, "forward") is None  # a forward bar, no backward figure
    assert cudnn_tflops("A100-SXM4-80GB", 128, 4096, "forward") is None
    assert cudnn_head_dims("A100-SXM4-80GB") == () and cudnn_head_dims("B200-180GB") == (128,)


@pytest.mark.parametrize("seq", [2048, 4096, 8192])
def test_each_pass_is_timed_at_its_own_figure(seq):
    count, d = 8 * 32, 128
    fwd = flash_time_s(H100, "bfloat16", ("forward", count, seq, d), kernel="cudnn")
    bwd = flash_time_s(H100, "bfloat16", ("backward", count, seq, d), kernel="cudnn")
    assert flash_flops(count, seq, d, mode="forward") / fwd / 1e12 == pytest.approx(
        FORWARD[128][FA2_SEQ_LENS.index(seq)])
    assert flash_flops(count, seq, d, mode="backward") / bwd / 1e12 == pytest.approx(BACKWARD.get(seq, 443.6))
    # unlike flash's one pair rate, the passes run at different rates: the backward is slower per FLOP
    assert bwd > 2.5 * fwd


@pytest.mark.parametrize("seq", [2048, 4096, 8192, 16384])
def test_cudnn_is_faster_than_flash_on_an_h100_with_the_same_work(seq):
    model = ComputeModel()
    shape, params = (2 * seq, 3 * 4096), {"seq": seq, "head_dim": 128, "heads": 32, "p": 0.0}
    flash = attention_work([shape], (2 * seq, 4096), params, flash=True)
    cudnn = attention_work([shape], (2 * seq, 4096), params, flash=True, kernel="cudnn")
    assert cudnn.gemms == flash.gemms and cudnn.elements == flash.elements and cudnn.flops == flash.flops
    for backward in (False, True):
        f = attention_work([shape, shape], (2 * seq, 4096), params, backward, flash=True) if backward else flash
        c = attention_work([shape, shape], (2 * seq, 4096), params, backward, flash=True, kernel="cudnn") \
            if backward else cudnn
        assert model.work_time_s(H100, "bfloat16", c) < model.work_time_s(H100, "bfloat16", f)


@pytest.mark.parametrize("device, dtype, head_dim, message", [
    (A100, "bfloat16", 128, r"--attention cudnn on device A100-SXM4-80GB: cuDNN's fused attention throughput is "
                            r"published for H100-SXM5-80GB, H200-SXM-141GB, B200-180GB, GB200-186GB only, head "
                            r"dimension 128, fp16 or bf16"),
    (V100, "float16", 128, r"--attention cudnn on device V100-SXM2-32GB: .* GB200-186GB only"),
    (H100, "bfloat16", 64, r"--attention cudnn on head dimension 64 on H100-SXM5-80GB: .* head dimension 128"),
    (H200, "float32", 128, r"--attention cudnn with dtype float32: .* fp16 or bf16; use --attention flash or unfused"),
])
def test_no_published_figure_is_refused_not_borrowed(device, dtype, head_dim, message):
    for mode in ("forward", "backward"):
        with pytest.raises(InputError, match=message):
            flash_time_s(device, dtype, (mode, 8, 2048, head_dim), kernel="cudnn")
    with pytest.raises(InputError, match=message):
        ComputeModel().work_time_s(device, dtype, attention_work(
            [(2048, 3 * 8 * head_dim)], (2048, 8 * head_dim), {"seq": 2048, "head_dim": head_dim, "heads": 8, "p": 0.0},
            flash=True, kernel="cudnn"))


def test_the_cli_refuses_an_a100_in_one_line_with_status_2_as_the_docs_show(capsys):
    from simulator.cli import main
    status = main(["simulate", "--algo", "1d", "--gpus", "8", "--topology", "dgx-a100", "--model", "llama3-8b",
                   "--layers", "1", "--batch", "1", "--pass", "fwd", "--attention", "cudnn"])
    err = capsys.readouterr().err.strip()
    assert status == 2 and "\n" not in err and "Traceback" not in err
    # as docs/compute.md shows it
    assert err == ("tpsim simulate: error: --attention cudnn on device A100-SXM4-40GB: cuDNN's fused attention "
                   "throughput is published for H100-SXM5-80GB, H200-SXM-141GB, B200-180GB, GB200-186GB only, head "
                   "dimension 128, fp16 or bf16; use --attention flash or unfused")


@pytest.mark.parametrize("passes", ["fwd", "bwd", "both"])
def test_a_cudnn_schedule_matches_the_dense_reference_and_keeps_what_flash_keeps(passes):
    flash = Workload.transformer(2, 4, 16, 4, dropout=0.1, attention="flash")
    cudnn = dataclasses.replace(flash, attention="cudnn")  # cuDNN's kernel drops probabilities, as flash's does
    fs = build_schedule("1d", flash, passes, "float64", gpus=2)
    cs = build_schedule("1d", cudnn, passes, "float64", gpus=2)
    validate_schedule(cs)
    fns = {op.fn for ops in cs.programs for op in ops if isinstance(op, Local)}
    assert fns & {"cudnn_attention", "cudnn_attention_backward"} and not fns & {"flash_attention",
                                                                                 "flash_attention_backward"}
    result = interpret(cs, seed=5)
    assert set(result.errors) == set(cudnn.output_names(passes)) and result.max_error <= 1e-10, result.errors
    reference = interpret(fs, seed=5)
    for name, value in result.outputs.items():
        assert np.array_equal(value, reference.outputs[name])
    for rank in range(len(fs.programs)):
        assert layer_activations(cs, rank, "none") == layer_activations(fs, rank, "none")

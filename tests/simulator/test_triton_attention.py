"""The Triton FlashAttention kernel (``--attention triton``): its published rates, time, refusals and values."""

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
from topologies.triton_rates import TRITON_TFLOPS, triton_tflops
from topologies.devices import DEVICES

A100 = DEVICES["A100-SXM4-80GB"].as_dict()
A100_40 = DEVICES["A100-SXM4-40GB"].as_dict()
H100 = DEVICES["H100-SXM5-80GB"].as_dict()

# The "FlashAttention Triton" bar labels of Dao 2023 (arXiv 2307.08691) Figure 4, panels (a)-(d), as
# read off assets/flash2_a100_fwd_bwd_benchmark.png: 512, 1k, 2k, 4k, 8k, 16k.
FIGURE_4 = {(False, 64): (90, 102, 98, 98, 100, 100), (False, 128): (78, 85, 90, 93, 95, 95),
            (True, 64): (59, 75, 79, 76, 79, 80), (True, 128): (50, 61, 68, 74, 78, 80)}


@pytest.mark.parametrize("causal, head_dim", sorted(FIGURE_4))
def test_every_published_length_reads_its_bar_label(causal, head_dim):
    assert TRITON_TFLOPS["A100-SXM4-80GB", causal, head_dim] == FIGURE_4[causal, head_dim]
    for seq, label in zip(FA2_SEQ_LENS, FIGURE_4[causal, head_dim]):
        assert triton_tflops("A100-SXM4-80GB", head_dim, seq, causal) == label
        assert triton_tflops("A100-SXM4-40GB", head_dim, seq, causal) == label  # the same chip


def test_between_and_beyond_the_published_lengths():
    # halfway in log2 between 2k (68) and 4k (74); held at the end figures outside 512..16k
    assert triton_tflops("A100-SXM4-80GB", 128, int(round(2 ** 11.5))) == pytest.approx(71.0, abs=0.01)
    assert triton_tflops("A100-SXM4-80GB", 128, 256) == 50.0
    assert triton_tflops("A100-SXM4-80GB", 128, 65536) == 80.0


def test_a_triton_call_is_timed_at_the_figure_and_its_flops_split_as_flash():
    count, seq, d = 4 * 16, 4096, 128  # the benchmark's batch 4 x 16 heads at 4k
    fwd = flash_time_s(A100, "bfloat16", ("forward", count, seq, d), kernel="triton")
    bwd = flash_time_s(A100, "bfloat16", ("backward", count, seq, d), kernel="triton")
    assert flash_flops(count, seq, d, mode="forward_backward") / (fwd + bwd) / 1e12 == pytest.approx(74.0)
    assert bwd == pytest.approx(2.5 * fwd)


@pytest.mark.parametrize("seq", [2048, 4096, 8192, 16384])
def test_triton_is_slower_than_flash_on_an_a100_at_long_sequences(seq):
    model = ComputeModel()
    shape, params = (2 * seq, 3 * 2048), {"seq": seq, "head_dim": 128, "heads": 16, "p": 0.0}
    flash = attention_work([shape], (2 * seq, 2048), params, flash=True)
    triton = attention_work([shape], (2 * seq, 2048), params, flash=True, kernel="triton")
    assert triton.gemms == flash.gemms and triton.elements == flash.elements and triton.flops == flash.flops
    ratio = model.work_time_s(A100, "bfloat16", triton) / model.work_time_s(A100, "bfloat16", flash)
    # FlashAttention-2 over Triton at this length, both causal d 128 rows of Figure 4
    i = FA2_SEQ_LENS.index(seq)
    assert ratio == pytest.approx((155.0, 173.0, 182.0, 189.0)[i - 2] / FIGURE_4[True, 128][i])
    assert ratio > 2.0


@pytest.mark.parametrize("device, dtype, head_dim, message", [
    (H100, "bfloat16", 128, r"--attention triton on device H100-SXM5-80GB: .* published for A100-SXM4-80GB, "
                            r"A100-SXM4-40GB only, head dimensions 64 and 128"),
    (A100, "bfloat16", 96, r"--attention triton on head dimension 96 on A100-SXM4-80GB: .* head dimensions 64 and 128"),
    (A100, "float32", 128, r"--attention triton with dtype float32: .* fp16 or bf16; use --attention flash or unfused"),
])
def test_no_published_figure_is_refused_not_borrowed(device, dtype, head_dim, message):
    with pytest.raises(InputError, match=message):
        flash_time_s(device, dtype, ("forward", 8, 2048, head_dim), kernel="triton")
    with pytest.raises(InputError, match=message):
        ComputeModel().work_time_s(device, dtype, attention_work(
            [(2048, 3 * 8 * head_dim)], (2048, 8 * head_dim), {"seq": 2048, "head_dim": head_dim, "heads": 8, "p": 0.0},
            flash=True, kernel="triton"))


def test_the_cli_refuses_an_h100_in_one_line_with_status_2_as_the_docs_show(capsys):
    from simulator.cli import main
    status = main(["simulate", "--algo", "1d", "--gpus", "8", "--topology", "dgx-h100", "--model", "gpt3-13b",
                   "--layers", "1", "--batch", "1", "--pass", "fwd", "--dropout", "0", "--attention", "triton"])
    err = capsys.readouterr().err.strip()
    assert status == 2 and "\n" not in err and "Traceback" not in err
    # as docs/compute.md shows it
    assert err == ("tpsim simulate: error: --attention triton on device H100-SXM5-80GB: the Triton FlashAttention "
                   "kernel's throughput is published for A100-SXM4-80GB, A100-SXM4-40GB only, head dimensions 64 and "
                   "128, fp16 or bf16; use --attention flash or unfused")


@pytest.mark.parametrize("passes", ["fwd", "bwd", "both"])
def test_a_triton_schedule_matches_the_dense_reference_and_keeps_what_flash_keeps(passes):
    flash = Workload.transformer(2, 4, 16, 4, dropout=0.0, attention="flash")
    triton = dataclasses.replace(flash, attention="triton")
    fs = build_schedule("1d", flash, passes, "float64", gpus=2)
    ts = build_schedule("1d", triton, passes, "float64", gpus=2)
    validate_schedule(ts)
    fns = {op.fn for ops in ts.programs for op in ops if isinstance(op, Local)}
    assert fns & {"triton_attention", "triton_attention_backward"} and not fns & {"flash_attention",
                                                                                   "flash_attention_backward"}
    result = interpret(ts, seed=5)
    assert set(result.errors) == set(triton.output_names(passes)) and result.max_error <= 1e-10, result.errors
    reference = interpret(fs, seed=5)
    for name, value in result.outputs.items():
        assert np.array_equal(value, reference.outputs[name])
    for rank in range(len(fs.programs)):
        assert layer_activations(ts, rank, "none") == layer_activations(fs, rank, "none")


def test_attention_dropout_is_refused_the_kernel_has_none():
    with pytest.raises(InputError, match=r"--attention triton with dropout 0.1: .* no attention dropout; use "
                                         r"--dropout 0, or --attention flash or unfused"):
        Workload.transformer(2, 4, 16, 4, dropout=0.1, attention="triton")

"""--dtype fp8 pays Transformer Engine's quantisation passes: each FP8 GEMM's operand casts, the weights' per step."""

from __future__ import annotations

import doctest
import json

import pytest

from simulator import fp8_cost
from simulator.algorithms.arrangement import Arrangement
from simulator.algorithms.registry import build_schedule
from simulator.compute import FP8, ComputeConfig, ComputeModel, achievable_memory_bandwidth
from simulator.errors import InputError
from simulator.fp8 import fp8_topology
from simulator.fp8_cost import bytes_per_element, default_recipe, gemm_quantise_bytes, gemm_role, quantise_bytes
from simulator.ir.builder import ScheduleBuilder
from simulator.ir.ops import Gemm
from simulator.training.arrangement import TrainingArrangement
from simulator.training.step import StepOptions, block_times, step_time
from simulator.workloads.workload import Workload
from tests.cli_run import run
from topologies import load_topology
from topologies.devices import B200_180GB, H100_SXM5_80GB

H100, B200 = H100_SXM5_80GB.as_dict(), B200_180GB.as_dict()


def test_the_modules_docstring_example_holds() -> None:
    assert doctest.testmod(fp8_cost).failed == 0


def test_bytes_per_element_follow_te_kernels_per_recipe_and_gpu() -> None:
    # Hopper (TN-only FP8 GEMMs): read bf16 2 + FP8 copy 1 + FP8 transpose 1; current scaling reads it once more.
    assert bytes_per_element(H100, "delayed") == 4 and bytes_per_element(H100, "current") == 6
    # Blackwell takes any layout: one FP8 copy; MXFP8 writes row- and column-wise copies plus a scale per 32.
    assert bytes_per_element(B200, "delayed") == 3 and bytes_per_element(B200, "current") == 5
    assert bytes_per_element(B200, "mxfp8") == 2 + 2 * (1 + 1 / 32)
    assert (default_recipe(H100), default_recipe(B200)) == ("delayed", "mxfp8")
    # Fed by the norm kernel, which writes the FP8 copies itself (in place of its 2-byte bf16 output) under
    # delayed scaling and MXFP8; Hopper then transposes (read 1, write 1). Current scaling runs it unfused.
    assert [quantise_bytes(1, H100, r, norm=True) for r in ("delayed", "current")] == [1, 6]
    assert [quantise_bytes(1, B200, r, norm=True) for r in ("delayed", "current", "mxfp8")] == [-1, 5, 1 / 16]
    with pytest.raises(InputError, match="H100-SXM5-80GB has no MXFP8 tensor cores"):
        bytes_per_element(H100, "mxfp8")
    with pytest.raises(InputError, match="fp8_recipe must be one of delayed, current, mxfp8"):
        ComputeConfig(fp8_gemms=True, fp8_recipe="block")


def _linear(m: int, k: int, n: int):
    """One linear on one rank: forward, input gradient and weight gradient, as 1-D Megatron emits them."""
    b = ScheduleBuilder("1d", (1,), Workload.gemm(m, k, n), "both", "bfloat16", 1, {"world": (0,)})
    for name, shape in (("X", (m, k)), ("W", (k, n)), ("Y", (m, n)), ("dY", (m, n)), ("dX", (m, k)),
                        ("dW", (k, n))):
        b.buffer(0, name, shape)
    for op in (Gemm(out="Y", a="X", b="W"), Gemm(out="dX", a="dY", b="W", trans_b=True),
               Gemm(out="dW", a="X", b="dY", trans_a=True)):
        b.emit(0, op)
    return b.build()


@pytest.mark.parametrize("recipe", ["delayed", "current"])
def test_an_fp8_linear_is_its_fp8_gemms_plus_the_casts_of_x_and_dy(recipe: str) -> None:
    m, k, n = 4096, 2048, 6144
    schedule = _linear(m, k, n)
    fprop, dgrad, wgrad = schedule.programs[0]
    assert [gemm_role(op) for op in (fprop, dgrad, wgrad)] == ["fprop", "dgrad", "wgrad"]
    model = ComputeModel(ComputeConfig(fp8_gemms=True, fp8_recipe=recipe))
    rate = achievable_memory_bandwidth(H100)
    per = {"delayed": 4, "current": 6}[recipe]
    assert model.op_time_s(schedule, 0, fprop, H100) == pytest.approx(
        model.gemm_time_s(H100, FP8, m, k, n) + m * k * per / rate, rel=1e-12)  # X [m, k] cast and transposed
    assert model.op_time_s(schedule, 0, dgrad, H100) == pytest.approx(
        model.gemm_time_s(H100, FP8, m, n, k) + m * n * per / rate, rel=1e-12)  # dY [m, n] cast and transposed
    assert model.op_time_s(schedule, 0, wgrad, H100) == model.gemm_time_s(H100, FP8, k, m, n)  # reuses both
    # bf16 is untouched: the GEMMs at the bf16 rate and nothing else.
    plain = ComputeModel()
    assert plain.op_time_s(schedule, 0, fprop, H100) == plain.gemm_time_s(H100, "bfloat16", m, k, n)


@pytest.mark.parametrize("recipe, norm_fed", [("delayed", 1), ("current", 6)])
def test_1d_megatron_casts_each_input_and_output_gradient_once_per_micro_batch(recipe: str, norm_fed: int) -> None:
    p, wl = 2, Workload.transformer(2, 64, 128, 4)
    M = wl.m
    casts = 0
    for passes in ("fwd", "bwd"):
        s = build_schedule("1d", wl, passes, "bfloat16", gpus=p)
        casts += sum(gemm_quantise_bytes(s, 0, op, H100, recipe) for op in s.programs[0] if isinstance(op, Gemm))
    whole = bytes_per_element(H100, recipe)
    # Column-parallel (QKV, FC1): X whole, from the norm (delayed scaling: the norm writes FP8, 1 B in place
    # of 2, then the transpose, 2 B; current scaling: unfused, 6 B), dY split by columns; row-parallel
    # (proj, FC2): X split, dY whole.
    expected = sum(M * lin.k * norm_fed + M * lin.n // p * whole if lin.index % 2 == 0
                   else M * (lin.k // p + lin.n) * whole for lin in wl.linears())
    assert casts == expected


@pytest.mark.parametrize("recipe, cast, transpose, norm_own", [("delayed", 3, 2, -1), ("current", 5, 2, 5)])
def test_sequence_parallel_operands_are_cast_on_the_shard_before_the_gather_and_transposed_after(
        recipe: str, cast: int, transpose: int, norm_own: int) -> None:
    p, wl = 4, Workload.transformer(4, 64, 128, 4)
    M = wl.m
    casts = {}
    for overlap in (False, True):  # the ring of --tp-comm-overlap sends what TE's userbuffers gather
        casts[overlap] = 0.0
        for passes in ("fwd", "bwd"):
            s = build_schedule("1d-sp", wl, passes, "bfloat16", gpus=p, tp_comm_overlap=overlap)
            casts[overlap] += sum(gemm_quantise_bytes(s, 1, op, H100, recipe)
                                  for op in s.programs[1] if isinstance(op, Gemm))
    whole = bytes_per_element(H100, recipe)
    # TE: the 1/p shard cast row-wise (by the norm kernel itself under delayed scaling: -1 B against the
    # bf16 write), FP8 gathered, the gathered FP8 transposed.
    x_gathered, dy_gathered = norm_own / p + transpose, cast / p + transpose
    # Column-parallel: X gathered from the norm, dY [M, n/p] whole; row-parallel: X [M, k/p] whole, dY gathered.
    expected = sum(M * lin.k * x_gathered + M * lin.n // p * whole if lin.index % 2 == 0
                   else M * lin.k // p * whole + M * lin.n * dy_gathered for lin in wl.linears())
    assert casts[False] == pytest.approx(expected, rel=1e-12)
    # The ring quantises the rank's own chunk where it is (fused into the norm under delayed scaling: the
    # same bytes as the gather; current scaling: both copies in one pass, 1 B per element less than the
    # cast and the transpose after it); the received chunks pay the transpose alone.
    own = sum(M // p * lin.k for lin in wl.linears() if lin.index % 2 == 0)
    ring_own = {"delayed": norm_own + transpose, "current": whole}[recipe]
    assert casts[True] == pytest.approx(expected + own * (ring_own - norm_own - transpose), rel=1e-12)


def _step(G, dtype_graph, recipe=None):
    a = TrainingArrangement(Arrangement("1d", (1,)), 1)
    options = StepOptions(global_batch=8, layers=2, vocab=1024)
    block = Workload.transformer(2, 512, 2048, 16)
    return step_time(dtype_graph, a, block, options), block_times(dtype_graph, a, block, options), block


def test_fp8_step_is_slower_than_the_gemms_alone_yet_faster_than_bf16_and_casts_weights_once_per_step() -> None:
    G = load_topology("dgx-h100:1")
    bf16, bf16_blocks, block = _step(G, G)
    fp8, fp8_blocks, _ = _step(G, fp8_topology(G))
    # The block's passes: the FP8 GEMMs plus their casts, against the same ops' FP8 GEMMs alone.
    schedules = [build_schedule("1d", block, passes, "bfloat16", gpus=1) for passes in ("fwd", "bwd")]
    model = ComputeModel(ComputeConfig(fp8_gemms=True))
    gemms = [(s, op) for s in schedules for op in s.programs[0] if isinstance(op, Gemm)]
    cast_s = sum(model.memory_time_s(H100, gemm_quantise_bytes(s, 0, op, H100)) for s, op in gemms)
    before = (sum(model.gemm_time_s(H100, FP8, *s.gemm_shape(0, op)) for s, op in gemms)  # FP8 GEMMs alone
              + sum(model.op_time_s(s, 0, op, H100) for s in schedules for op in s.programs[0]
                    if not isinstance(op, Gemm)))
    fp8_block = fp8_blocks.passes["block_fwd"].time_s + fp8_blocks.passes["block_bwd"].time_s
    bf16_block = bf16_blocks.passes["block_fwd"].time_s + bf16_blocks.passes["block_bwd"].time_s
    assert fp8_block == pytest.approx(before + cast_s, rel=1e-9)
    assert before < fp8_block < bf16_block  # slower than the GEMMs alone; on a GEMM-bound block FP8 still wins
    # The weights: the four linears' matrices (h x 3h, h x h, h x 4h, 4h x h) of each layer, 4 B each, once.
    h = block.hidden
    weights = 2 * (3 * h * h + h * h + 4 * h * h + 4 * h * h)
    assert fp8.terms["fp8_weight_cast"] == pytest.approx(weights * 4 / achievable_memory_bandwidth(H100))
    assert "fp8_weight_cast" not in bf16.terms
    assert fp8.step_s < bf16.step_s
    # Megatron-Core's LM head is not a Transformer Engine module: bf16 under FP8 too.
    assert fp8_blocks.passes["head_fwd"] == bf16_blocks.passes["head_fwd"]
    assert fp8_blocks.passes["head_bwd"] == bf16_blocks.passes["head_bwd"]


def test_current_scaling_costs_more_than_delayed_and_mxfp8_is_blackwells_default() -> None:
    G = load_topology("dgx-h100:1")
    delayed, _, _ = _step(G, fp8_topology(G))
    current, _, _ = _step(G, fp8_topology(G, "current"))
    assert current.step_s > delayed.step_s
    B = load_topology("dgx-b200:1")
    default, _, _ = _step(B, fp8_topology(B))
    mxfp8, _, _ = _step(B, fp8_topology(B, "mxfp8"))
    assert default.step_s == mxfp8.step_s


def _plan(capsys, *flags: str) -> dict:
    status, out, err = run(capsys, "predict", "--gpus", "4", "--topology", "dgx-h100:1", "--model", "llama3-8b",
                           "--global-batch", "8", "--tp-sizes", "4", "--algos", "1d-sp", "--batch", "2",
                           "--simulate-top", "0", "--json", *flags)
    assert status == 0, err
    return json.loads(out)[0]


def test_the_recipe_on_the_command_line(capsys) -> None:
    delayed, current = _plan(capsys, "--dtype", "fp8"), _plan(capsys, "--dtype", "fp8", "--fp8-recipe", "current")
    assert current["step_time_s"] > delayed["step_time_s"]
    assert current["terms_s"]["fp8_weight_cast"] == pytest.approx(1.5 * delayed["terms_s"]["fp8_weight_cast"])
    for flags, message in ((("--fp8-recipe", "current"), "--fp8-recipe current needs --dtype fp8"),
                           (("--dtype", "fp8", "--fp8-recipe", "mxfp8"),
                            "--fp8-recipe mxfp8: H100-SXM5-80GB has no MXFP8 tensor cores")):
        status, out, err = run(capsys, "predict", "--gpus", "4", "--topology", "dgx-h100:1", "--model", "llama3-8b",
                               "--global-batch", "8", *flags)
        assert status == 2 and out == "" and len(err.splitlines()) == 1 and message in err

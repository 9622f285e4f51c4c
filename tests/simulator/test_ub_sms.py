"""Under --tp-comm-overlap the collectives Transformer Engine runs as userbuffers kernels hold that kernel's
num_sm SMs (TE's default 16, or a tuned config's), not NCCL's channels; without it nothing changes."""

from __future__ import annotations

import dataclasses

import pytest

from simulator.algorithms.registry import build_schedule
from simulator.algorithms.ub_configs import TE_DEFAULT, UB_CONFIGS, UbConfig, ub_config
from simulator.errors import InputError
from simulator.ir.serialize import op_from_dict, op_to_dict
from simulator.timing.critical_path import analyze
from simulator.timing.simulation import plan_on_graph, simulate
from simulator.timing.sm_sharing import COLL_CHANNELS
from simulator.workloads.workload import Workload
from topologies import load_topology

GEMM = Workload.gemm(8192, 6144, 6144)  # one column-parallel linear (QKV's place): X gather, dX, dX scatter, dW
BLOCK = Workload.transformer(2, 1024, 2048, 16)
TUNED = "ub_cfg_h100_h12288_tp4_mbs1_seqlen2048"  # bulk 4 / 8 / 2 / 4, forward 24 / 20: every value differs


@pytest.fixture(scope="module")
def a100():
    return load_topology("dgx-a100")


def _held(schedule, rank=0):
    """(kind, handle, sms) of rank's collectives."""
    return [(op.kind, op.handle, op.sms) for op in schedule.programs[rank]
            if op.kind in ("reduce", "all_gather", "reduce_scatter")]


def test_te_default_is_16_sms_for_bulk_and_pipeline():
    """TE's initialize_ub default (module/base.py at d0067d0): num_sm 16 unless ring_exchange."""
    te = ub_config(TE_DEFAULT)
    assert (te.qkv_dgrad, te.qkv_wgrad, te.fc1_dgrad, te.fc1_wgrad, te.proj_fprop, te.fc2_fprop) == (16,) * 6
    with pytest.raises(InputError, match="unknown --tp-comm-overlap-cfg 'nope'; valid: te-default"):
        ub_config("nope")
    with pytest.raises(ValueError, match="qkv_dgrad: num_sm must be at least 1, got 0"):
        UbConfig(0, 1, 1, 1, 1, 1, "")


def test_the_ops_carry_the_configs_sms_and_only_under_the_overlap():
    """QKV's and FC1's backward gather / scatter take their dgrad / wgrad num_sm, proj's and FC2's forward
    reduces their fprop num_sm; without --tp-comm-overlap every collective is NCCL's (sms None)."""
    cfg = UB_CONFIGS[TUNED]
    tuned = build_schedule("1d-sp", BLOCK, "both", "bfloat16", gpus=4, async_dgrad=True, tp_comm_overlap=True,
                           tp_comm_overlap_cfg=TUNED)
    held = _held(tuned)
    assert ("all_gather", "QKV.xgather", cfg.qkv_dgrad) in held and ("all_gather", "H.xgather", cfg.fc1_dgrad) in held
    assert ("reduce_scatter", "QKV.dgrad", cfg.qkv_wgrad) in held and ("reduce_scatter", "H.dgrad", cfg.fc1_wgrad) in held
    assert [s for k, h, s in held if k == "reduce" and h.startswith("P.")] == [cfg.proj_fprop] * 4
    assert [s for k, h, s in held if k == "reduce" and h.startswith("F.")] == [cfg.fc2_fprop] * 4
    assert tuned.options == {"async_dgrad": True, "tp_comm_overlap": True, "tp_comm_overlap_cfg": TUNED}
    default = build_schedule("1d-sp", BLOCK, "both", "bfloat16", gpus=4, async_dgrad=True, tp_comm_overlap=True)
    assert len(_held(default)) == 12 and {s for _, _, s in _held(default)} == {16}  # 8 reduces, 2 gathers, 2 scatters
    assert "tp_comm_overlap_cfg" not in default.options
    plain = build_schedule("1d-sp", BLOCK, "both", "bfloat16", gpus=4, async_dgrad=True)
    assert {s for _, _, s in _held(plain)} == {None}
    assert all("sms" not in op_to_dict(op) for program in plain.programs for op in program)  # files as before
    op = next(op for op in tuned.programs[0] if getattr(op, "sms", None) == cfg.qkv_wgrad)
    assert op_from_dict(op_to_dict(op), "here") == op and op.short().endswith(f" sm{cfg.qkv_wgrad}")


def _lost(run, schedule, G):
    """Seconds rank 0's compute lost to the kernels beside it."""
    plan = plan_on_graph(schedule, G)
    return run(schedule, G, plan=plan).per_rank[0].compute_s - plan.compute_s[0]


def _step(result, kind):
    """Seconds rank 0 spent in its op of ``kind`` (one of it) on a timeline."""
    t = result.timeline
    return [t.ends[0][i] - t.starts[0][i] for i, op in enumerate(t.schedule.programs[0]) if op.kind == kind]


@pytest.mark.parametrize("run", [simulate, analyze])
def test_the_bulk_overlaps_charge_num_sm_not_the_channels(a100, run):
    """One column-parallel linear's backward, X gathered beside dX and dX scattered beside dW: NCCL's 24 of
    108 SMs for min(gather, dX) + min(scatter, dW) without the option; with it, QKV's dgrad SMs for the first
    and wgrad SMs for the second, TE's 16 for both by default."""
    blocking = simulate(build_schedule("1d-sp", GEMM, "bwd", "bfloat16", gpus=8), a100)
    (dx, dw), (gather,), (scatter,) = (_step(blocking, k) for k in ("gemm", "all_gather", "reduce_scatter"))
    under = min(gather, dx), min(scatter, dw)
    nccl = _lost(run, build_schedule("1d-sp", GEMM, "bwd", "bfloat16", gpus=8, async_dgrad=True), a100)
    assert nccl == pytest.approx(COLL_CHANNELS["ampere"] / 108 * sum(under), rel=1e-9)
    te = _lost(run, build_schedule("1d-sp", GEMM, "bwd", "bfloat16", gpus=8, async_dgrad=True,
                                   tp_comm_overlap=True), a100)
    assert te == pytest.approx(16 / 108 * sum(under), rel=1e-9)
    cfg = UB_CONFIGS[TUNED]
    tuned = _lost(run, build_schedule("1d-sp", GEMM, "bwd", "bfloat16", gpus=8, async_dgrad=True,
                                      tp_comm_overlap=True, tp_comm_overlap_cfg=TUNED), a100)
    assert tuned == pytest.approx((cfg.qkv_dgrad * under[0] + cfg.qkv_wgrad * under[1]) / 108, rel=1e-9)


def test_the_forward_reduces_charge_num_sm(a100):
    """The pipelined reduces of proj and FC2: TE's 16 SMs, two thirds of the 24 channels they were charged."""
    s = build_schedule("1d-sp", BLOCK, "fwd", "bfloat16", gpus=8, tp_comm_overlap=True)
    as_nccl = dataclasses.replace(s, programs=[[dataclasses.replace(op, sms=None) if getattr(op, "sms", None)
                                                else op for op in program] for program in s.programs])
    nccl, te = _lost(simulate, as_nccl, a100), _lost(simulate, s, a100)
    assert nccl > 0 and te == pytest.approx(nccl * 16 / COLL_CHANNELS["ampere"], rel=1e-9)

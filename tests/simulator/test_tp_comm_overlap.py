"""--tp-comm-overlap (Transformer Engine's userbuffers under Megatron-LM) on 1d-sp: proven on numbers, the
forward's communication and the row-parallel backward's dY gathers chunked beside chunked GEMMs, faster than
the blocking passes, refused elsewhere."""

from __future__ import annotations

import json

import pytest

from simulator.algorithms.arrangement import Arrangement
from simulator.algorithms.registry import build_schedule
from simulator.errors import InputError
from simulator.ir.interpret import interpret
from simulator.ir.ops import AllGather, Gemm, Recv, Reduce, Send, Slice, Wait
from simulator.ir.serialize import schedule_from_dict, schedule_to_dict
from simulator.ir.validate import validate_schedule
from simulator.timing.simulation import plan_on_graph, simulate
from simulator.training.arrangement import TrainingArrangement
from simulator.training.launch import launch_lines
from simulator.training.step import StepOptions, block_times
from simulator.workloads.workload import Workload
from topologies import load_topology
from topologies.presets import build_preset


@pytest.mark.parametrize("passes", ["fwd", "bwd", "both"])
@pytest.mark.parametrize("p", [1, 2, 3, 4])
def test_chunked_passes_match_the_dense_reference(p, passes) -> None:
    for workload in (Workload.gemm(4 * p, 5, 3 * p), Workload.mlp(3 * p, p),
                     Workload.transformer(2, 3 * p, 4 * p, p, ffn=8 * p, dropout=0.2)):
        for async_dgrad in (False, True):
            s = build_schedule("1d-sp", workload, passes, "float64", gpus=p, tp_comm_overlap=True,
                               async_dgrad=async_dgrad)
            validate_schedule(s)
            assert s.options["tp_comm_overlap"] is True
            result = interpret(s, seed=7)
            assert result.ok(1e-10), result.errors


def test_the_ring_and_the_reduces_run_beside_the_chunk_gemms() -> None:
    """MLP forward on 2 ranks: FC1 (column) as a ring of one send/recv pair beside 2 chunk GEMMs; FC2 (row)
    as 2 chunk GEMMs each followed by a reduce onto the chunk's owner, waited for one chunk later."""
    s = build_schedule("1d-sp", Workload.mlp(4, 2), "fwd", "float64", gpus=2, tp_comm_overlap=True)
    kinds = [type(op) for op in s.programs[0] if type(op).__name__ != "Local"]
    assert kinds == [Send, Recv, Gemm, Slice, Wait, Wait, Gemm, Slice,
                     Slice, Gemm, Reduce, Slice, Gemm, Reduce, Wait, Wait]
    roots = [op.root for op in s.programs[1] if isinstance(op, Reduce)]
    assert roots == [0, 1]


def test_it_hides_forward_communication_and_pays_for_the_sms_of_the_reduces() -> None:
    G = load_topology("dgx-a100-80gb")
    block = Workload.transformer(4, 2048, 6144, 64, dropout=0.1)
    blocking = simulate(build_schedule("1d-sp", block, "fwd", "bfloat16", gpus=8), G, timeline=False)
    s = build_schedule("1d-sp", block, "fwd", "bfloat16", gpus=8, tp_comm_overlap=True)
    chunked = simulate(s, G, timeline=False)
    plan = plan_on_graph(s, G)
    plan.sharing = None
    free = simulate(s, G, timeline=False, plan=plan)
    assert chunked.makespan_s < blocking.makespan_s
    assert chunked.per_rank[0].comm_s < blocking.per_rank[0].comm_s
    # the reduces hold NCCL's channels beside the next chunk's GEMM; the ring's sends (copy engine) nothing
    assert chunked.per_rank[0].compute_s > free.per_rank[0].compute_s == pytest.approx(sum(plan.durations[0]))


def test_the_backward_gathers_dy_by_the_ring_beside_the_dgrad_chunks_and_keeps_it_for_the_wgrad() -> None:
    """MLP backward on 2 ranks: FC2 (row) as TE's proj_dgrad / fc2_dgrad ring, one send/recv pair beside 2
    chunk GEMMs of dZ = dY W2^T, each held chunk of dY also copied into dY_full, which the dW2 GEMM reads;
    FC1 (column) as before: no send, its reduce-scatter and re-gather of X."""
    s = build_schedule("1d-sp", Workload.mlp(4, 2), "bwd", "float64", gpus=2, tp_comm_overlap=True)
    program = [op for op in s.programs[1] if type(op).__name__ != "Local"]
    assert [type(op) for op in program[:11]] == [Send, Recv, Gemm, Slice, Slice, Wait, Wait, Gemm, Slice, Slice,
                                                 Gemm]
    dgrads = [op for op in program[:11] if isinstance(op, Gemm) and op.trans_b]
    assert [op.a for op in dgrads] == ["dY", "dY_ring0"] and program[10] == Gemm("dW2", "Z", "dY_full", trans_a=True)
    kept = [op.out_rows for op in program if isinstance(op, Slice) and op.out == "dY_full"]
    assert kept == [(2, 4), (0, 2)]  # rank 1 holds shard 1 first, then receives shard 0 from rank 0
    assert [type(op).__name__ for op in program[11:]] == ["Gemm", "ReduceScatter", "AllGather", "Gemm"]
    blocking = build_schedule("1d-sp", Workload.mlp(4, 2), "bwd", "float64", gpus=2)
    assert sum(isinstance(op, AllGather) for op in blocking.programs[1]) == 2  # dY's and X's
    assert sum(isinstance(op, AllGather) for op in s.programs[1]) == 1  # X's re-gather only


def test_it_hides_the_row_parallel_dy_gathers_of_a_22b_backward() -> None:
    """Megatron 22B layer (Korthikanti et al. 2022 Table 1 shape), 8 A100s: FC2's dY gather hides whole
    behind its 8 chunk GEMMs; proj's chunks are 4x thinner than FC2's, so its ring steps outlast them: its
    seven sends, each charged NCCL's start-up (module doc of simulator.algorithms.tp_comm_overlap), expose
    more than its one blocking gather did; the thinner chunks and the copy of the own dY shard cost compute."""
    G = load_topology("dgx-a100-80gb")
    block = Workload.transformer(4, 2048, 6144, 64, dropout=0.1)
    runs = [simulate(build_schedule("1d-sp", block, "bwd", "bfloat16", gpus=8, async_dgrad=True,
                                    tp_comm_overlap=tco), G, timeline=False) for tco in (False, True)]
    before, after = runs
    assert after.makespan_s < before.makespan_s
    assert after.per_rank[0].comm_s < 0.6 * before.per_rank[0].comm_s
    assert before.parts["fc2"].comm_s > 0 and after.parts["fc2"].comm_s == 0
    assert after.parts["proj"].comm_s > before.parts["proj"].comm_s > 0
    assert after.parts["fc2"].compute_s > before.parts["fc2"].compute_s
    for part in ("qkv", "fc1", "attn"):  # the column-parallel backward and the rest do not move
        assert after.parts[part] == before.parts[part]


def test_the_chunk_copies_cost_nothing_but_the_own_shard_copy_te_makes_too() -> None:
    """TE's GEMMs address the chunks' rows of Y, dX and X where they lie and its ring receives into the
    kept gather: those slices are in place (interpreted and executed as copies, proven above) and cost no
    memory pass; the one copy left per backward ring is the rank's own dY shard into the gather (TE's
    ``copy_into_buffer(..., local_chunk=True)``)."""
    s = build_schedule("1d-sp", Workload.mlp(4, 2), "both", "float64", gpus=2, tp_comm_overlap=True)
    slices = [op for op in s.programs[1] if isinstance(op, Slice)]
    assert len(slices) == 8 and [op for op in slices if not op.in_place] == [Slice("dY_full", "dY", out_rows=(2, 4))]
    assert [s.memory_bytes(1, op) for op in slices if op.in_place] == [0] * 7
    assert s.memory_bytes(1, Slice("dY_full", "dY", out_rows=(2, 4))) == 2 * (2 * 2) * 8  # read + write of a [2, 2] float64 shard
    assert schedule_from_dict(json.loads(json.dumps(schedule_to_dict(s)))).programs == s.programs
    G = load_topology("dgx-a100-80gb")
    block = Workload.transformer(4, 2048, 6144, 64, dropout=0.1)
    for passes in ("fwd", "bwd"):
        s = build_schedule("1d-sp", block, passes, "bfloat16", gpus=8, async_dgrad=True, tp_comm_overlap=True)
        plan = plan_on_graph(s, G)
        times = [t for op, t in zip(s.programs[0], plan.durations[0]) if isinstance(op, Slice)]
        kept = [op for op in s.programs[0] if isinstance(op, Slice) and not op.in_place]
        assert len(times) == 32  # 8 chunks of qkv, fc1, proj and fc2 forward; of proj and fc2 (dX, kept dY) backward
        assert sum(t > 0 for t in times) == len(kept) == (0 if passes == "fwd" else 2)


def test_it_is_for_sequence_parallelism_only_and_named_in_the_launch_line() -> None:
    with pytest.raises(InputError, match="--tp-comm-overlap applies to 1d-sp"):
        build_schedule("1d", Workload.gemm(8, 4, 4), "fwd", gpus=2, tp_comm_overlap=True)
    a = TrainingArrangement(Arrangement("1d-sp", (8,)), 1)
    line = launch_lines(a, 1, StepOptions(global_batch=8, tp_comm_overlap=True))[0]
    assert "--sequence-parallel --tp-comm-overlap" in line and "--tp-comm-overlap-cfg" not in line  # TE's default
    tuned = launch_lines(a, 1, StepOptions(global_batch=8, tp_comm_overlap=True,
                                            tp_comm_overlap_cfg="ub_cfg_h100_h8192_tp4_mbs1_seqlen4096"))[0]
    assert "--tp-comm-overlap --tp-comm-overlap-cfg ub_cfg_h100_h8192_tp4_mbs1_seqlen4096.yaml" in tuned
    assert "--tp-comm-overlap" not in launch_lines(a, 1, StepOptions(global_batch=8))[0]
    off = launch_lines(TrainingArrangement(Arrangement("1d", (8,)), 1), 1, StepOptions(global_batch=8, async_dgrad=False))[0]
    assert "--no-async-tensor-model-parallel-allreduce" in off


def test_the_training_step_times_its_backward_block_with_the_ring_too() -> None:
    G = build_preset("dgx-a100:1")
    a = TrainingArrangement(Arrangement("1d-sp", (8,)), 1)
    block = Workload.transformer(2, 2048, 6144, 64, dropout=0.1)
    off, on = (block_times(G, a, block, StepOptions(global_batch=8, async_dgrad=True, tp_comm_overlap=tco)).passes
               for tco in (False, True))
    # FC2's dY gather hidden; proj's ring steps (each send charged NCCL's start-up) outlast its chunks and
    # expose more than its blocking gather did, so the block's exposed time falls by less than FC2's gather
    assert on["block_bwd"].comm_s < off["block_bwd"].comm_s
    assert on["block_fwd"].comm_s < off["block_fwd"].comm_s

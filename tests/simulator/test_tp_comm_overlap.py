"""--tp-comm-overlap (Transformer Engine's userbuffers under Megatron-LM) on 1d-sp: proven on numbers, the
forward's communication chunked beside chunked GEMMs, faster than the blocking forward, refused elsewhere."""

from __future__ import annotations

import pytest

from simulator.algorithms.arrangement import Arrangement
from simulator.algorithms.registry import build_schedule
from simulator.errors import InputError
from simulator.ir.interpret import interpret
from simulator.ir.ops import Gemm, Recv, Reduce, Send, Slice, Wait
from simulator.ir.validate import validate_schedule
from simulator.timing.simulation import plan_on_graph, simulate
from simulator.training.arrangement import TrainingArrangement
from simulator.training.launch import launch_lines
from simulator.workloads.workload import Workload
from topologies import load_topology


@pytest.mark.parametrize("passes", ["fwd", "both"])
@pytest.mark.parametrize("p", [1, 2, 3, 4])
def test_chunked_forward_matches_the_dense_reference(p, passes) -> None:
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


def test_it_is_for_sequence_parallelism_only_and_named_in_the_launch_line() -> None:
    with pytest.raises(InputError, match="--tp-comm-overlap applies to 1d-sp"):
        build_schedule("1d", Workload.gemm(8, 4, 4), "fwd", gpus=2, tp_comm_overlap=True)
    a = TrainingArrangement(Arrangement("1d-sp", (8,)), 1)
    line = launch_lines(a, 1, 8, tp_comm_overlap=True)[0]
    assert "--sequence-parallel --tp-comm-overlap" in line
    assert "--tp-comm-overlap" not in launch_lines(a, 1, 8)[0]
    off = launch_lines(TrainingArrangement(Arrangement("1d", (8,)), 1), 1, 8, async_dgrad=False)[0]
    assert "--no-async-tensor-model-parallel-allreduce" in off

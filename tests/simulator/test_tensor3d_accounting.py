"""3-D tensor parallelism's communication held to the closed forms of ``simulator/algorithms/tensor3d.py``,
per rank and exactly; every collective shown needed by deleting it; the simulator never under the
analytic bound.

Per linear Y = X W (X [M, K], W [K, N]) on a [q, q, q] cube, in the IR's payload convention (an
all_gather's output, a reduce_scatter's input; ``simulator.ir.accounting``):

- forward: all_gather X ([M/q, K/q] out), all_gather W ([K/q, N/q] out), reduce_scatter Y ([M/q, N/q]
  in): 3 collectives, (M K + K N + M N)/q^2;
- backward after a forward: all_gather dY, reduce_scatter dX, reduce_scatter dW: 3, (M N + M K + K N)/q^2;
- backward alone: those and the re-gathers of X and W: 5, (M N + 2 M K + 2 K N)/q^2.

The transformer block adds, per the docstring's last two paragraphs, its eight vectors (widths summing
to 9h + f), each broadcast along two lines forward and reduced along them backward, a rank with z = 0
on both lines, any other on one (w = 1 + [z = 0] per vector); a backward alone fetches the two gammas
again; and LayerNorm's moments [M/q^2, 2], all-reduced twice each way. The tests count the linears',
the vectors' and the moments' collectives apart.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Callable

import pytest

from simulator.algorithms.registry import build_schedule
from simulator.ir.accounting import account
from simulator.ir.interpret import interpret
from simulator.ir.ops import AllReduce, Broadcast, CommOp, Op, ReduceScatter
from simulator.ir.schedule import DTYPE_BYTES, Schedule
from simulator.ir.validate import validate_schedule
from simulator.timing.critical_path import analyze
from simulator.timing.simulation import simulate
from simulator.workloads.layers import LayerNorm
from simulator.workloads.workload import Workload
from topologies.builders import nvlink_mesh

PASSES = ("fwd", "bwd", "both")
EXACT, WRONG = 1e-10, 1e-3


def _fwd(passes: str) -> int:
    return passes != "bwd"


def _bwd(passes: str) -> int:
    return passes != "fwd"


def linear_form(q: int, m: int, k: int, n: int, passes: str) -> tuple[Counter, int]:
    """One linear's collectives ("kind/group size") and payload elements on every rank (the docstring)."""
    fwd, bwd, alone = _fwd(passes), _bwd(passes), passes == "bwd"
    kinds = Counter({f"all_gather/{q}": 2 * fwd + bwd + 2 * alone, f"reduce_scatter/{q}": fwd + 2 * bwd})
    payload = (fwd * (m * k + k * n + m * n) + bwd * (m * n + m * k + k * n) + alone * (m * k + k * n))
    assert payload % (q * q) == 0
    return +kinds, payload // (q * q)


def chain_form(workload: Workload, q: int, passes: str) -> tuple[Counter, int]:
    kinds, payload = Counter(), 0
    for linear in workload.linears():
        k, p = linear_form(q, workload.m, linear.k, linear.n, passes)
        kinds, payload = kinds + k, payload + p
    return kinds, payload


@pytest.mark.parametrize("passes", PASSES)
@pytest.mark.parametrize("q, workload", [
    (1, Workload.gemm(5, 3, 7)), (2, Workload.gemm(12, 8, 6)), (3, Workload.gemm(36, 18, 12)),
    (2, Workload.mlp(20, 4)), (3, Workload.mlp(18, 9)), (3, Workload.mlp(27, 18))],
    ids=lambda v: str(v) if isinstance(v, int) else v.label())
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_the_linears_traffic_is_the_closed_form(q: int, workload: Workload, passes: str, dtype: str) -> None:
    schedule = build_schedule("3d", workload, passes, dtype, grid=(q, q, q))
    kinds, payload = chain_form(workload, q, passes)
    per_linear = 3 * _fwd(passes) + {"fwd": 0, "both": 3, "bwd": 5}[passes]
    assert sum(kinds.values()) == per_linear * len(workload.linears())
    products = _fwd(passes) + 2 * _bwd(passes)
    flops = sum(products * 2 * workload.m * linear.k * linear.n for linear in workload.linears())
    for acct in account(schedule):
        assert acct.collectives_by_kind == kinds, acct.rank
        assert acct.payload_bytes == payload * DTYPE_BYTES[dtype]
        assert acct.p2p_messages == 0
        assert acct.gemm_flops * q ** 3 == flops  # each product split q^3 ways, none repeated


@pytest.mark.parametrize("q", [1, 2, 3])
def test_both_passes_move_twice_the_input_weight_and_output_blocks(q: int) -> None:
    """The docstring's sum: 2 (M K + K N + M N)/q^2 per linear for forward + backward."""
    m, k, n = 72, 36, 30
    [acct, *_] = account(build_schedule("3d", Workload.gemm(m, k, n), "both", "float64", grid=(q, q, q)))
    assert acct.payload_bytes == 8 * 2 * (m * k + k * n + m * n) // (q * q)
    assert acct.collectives == 6


# ---- the transformer block: linears, vectors and LayerNorm moments, counted apart --------------------------------

def _vectors(workload: Workload) -> tuple[set[str], set[str]]:
    """The block's [1, n] parameters, and LayerNorm's row moments."""
    return ({name for name, shape in workload.weights().items() if shape[0] == 1},
            {layer.stats for layer in workload.layers() if isinstance(layer, LayerNorm)})


def _role(buffer: str, vectors: set[str], moments: set[str]) -> str:
    for suffix in ("_ws", "_part", "_rows"):
        buffer = buffer.removesuffix(suffix)
    base = buffer[1:] if buffer[:1] == "d" and buffer[1:] in vectors | moments else buffer
    return "vector" if base in vectors else "moments" if base in moments else "linear"


def measured(schedule: Schedule, workload: Workload) -> list[dict[str, tuple[Counter, int]]]:
    """Per rank and role: collectives by "kind/size", and payload elements."""
    vectors, moments = _vectors(workload)
    out = []
    for rank, program in enumerate(schedule.programs):
        roles = {role: (Counter(), 0) for role in ("linear", "vector", "moments")}
        for op in program:
            if isinstance(op, CommOp):
                role = _role(op.payload_buffer(), vectors, moments)
                kinds, payload = roles[role]
                kinds[f"{op.kind}/{len(schedule.groups[op.group])}"] += 1
                roles[role] = (kinds, payload + schedule.spec(rank, op.payload_buffer()).numel)
        out.append(roles)
    return out


def block_form(w: Workload, q: int, passes: str, rank: int) -> dict[str, tuple[Counter, int]]:
    """The module docstring's forms for rank (x, y, z)."""
    m, h, f = w.m, w.hidden, w.ffn
    assert [(lin.k, lin.n) for lin in w.linears()] == [(h, 3 * h), (h, h), (h, f), (f, h)]
    fwd, bwd, alone = _fwd(passes), _bwd(passes), passes == "bwd"
    linear = chain_form(w, q, passes)
    if passes == "both":  # the docstring's sum over the block's four linears
        assert linear[1] * q * q == 2 * (m * (8 * h + 2 * f) + 4 * h * h + 2 * h * f)
    if q == 1:  # every vector and moment is whole on the one rank
        return {"linear": linear, "vector": (Counter(), 0), "moments": (Counter(), 0)}
    z = rank // (q * q)
    ways = 1 + (z == 0)  # broadcasts (reduces) per vector on this rank
    width = 9 * h + f
    assert width % q == 0
    # a backward alone fetches what its backward reads of the vectors: the two LayerNorm gammas, and b1 where
    # the fused bias-GeLU recomputes h + b1
    gelu_bias = int(w.bias_gelu_fusion)
    vector = (+Counter({f"broadcast/{q}": ways * (8 * fwd + (2 + gelu_bias) * alone), f"reduce/{q}": ways * 8 * bwd}),
              ways * (fwd * width + alone * (2 * h + gelu_bias * f) + bwd * width) // q)
    moments = (Counter({f"all_reduce/{q}": 2 * fwd + 2 * bwd}), (fwd + bwd) * 2 * 2 * m // (q * q))
    return {"linear": linear, "vector": vector, "moments": moments}


BLOCKS = [(1, Workload.transformer(2, 3, 6, 2, ffn=10, dropout=0.1)),
          (2, Workload.transformer(4, 3, 8, 2, ffn=12, dropout=0.1)),
          (2, Workload.transformer(8, 1, 12, 4, ffn=20)),
          (3, Workload.transformer(9, 2, 18, 3, ffn=27, dropout=0.1))]


@pytest.mark.parametrize("passes", PASSES)
@pytest.mark.parametrize("q, workload", BLOCKS, ids=lambda v: str(v) if isinstance(v, int) else v.label())
def test_the_transformer_blocks_traffic_is_the_closed_form(q: int, workload: Workload, passes: str) -> None:
    schedule = build_schedule("3d", workload, passes, "float32", grid=(q, q, q))
    got = measured(schedule, workload)
    for rank, roles in enumerate(got):
        assert roles == block_form(workload, q, passes, rank), rank
    totals = account(schedule)
    for rank, acct in enumerate(totals):
        assert acct.payload_bytes == 4 * sum(payload for _, payload in got[rank].values())
        assert acct.collectives == sum(sum(kinds.values()) for kinds, _ in got[rank].values())


# ---- every collective is needed -------------------------------------------------------------------------------------

def without(schedule: Schedule, drop: Callable[[Op], bool]) -> Schedule:
    """``schedule`` with every op ``drop`` matches deleted from every rank (``test_transformer_mutations``)."""
    assert interpret(schedule, seed=3).max_error <= EXACT
    assert sum(drop(op) for program in schedule.programs for op in program), "the mutation matches no op"
    return dataclasses.replace(schedule, programs=[[op for op in program if not drop(op)]
                                                   for program in schedule.programs])


def assert_caught(broken: Schedule, wrong: set[str], only: bool) -> None:
    validate_schedule(broken)
    errors = interpret(broken, seed=3).errors
    assert all(errors[name] > WRONG for name in wrong), errors
    if only:
        assert all(error <= EXACT for name, error in errors.items() if name not in wrong), errors


GEMM, MLP = Workload.gemm(12, 8, 6), Workload.mlp(12, 4)
BLOCK = BLOCKS[1][1]


@pytest.mark.parametrize("workload, passes, out, wrong, only", [
    (GEMM, "fwd", "C", {"C"}, True),
    (GEMM, "both", "dA", {"dA"}, True),
    (GEMM, "bwd", "dB", {"dB"}, True),
    (MLP, "fwd", "H", {"Y"}, True),            # FC1's output
    (MLP, "both", "H", {"Y", "dW2", "dX", "dW1"}, False),  # through Z into FC2 and gelu's backward
    (MLP, "fwd", "Y", {"Y"}, True),
    (MLP, "bwd", "dZ", {"dX", "dW1"}, True),
    (BLOCK, "fwd", "QKV", {"Y"}, True),
    (BLOCK, "fwd", "P", {"Y"}, True),
    (BLOCK, "fwd", "F", {"Y"}, True),
    (BLOCK, "bwd", "dWproj", {"dWproj"}, True),
    (BLOCK, "bwd", "dA2", {"dX", "dln2_g", "dln2_b", "dWqkv", "dbqkv", "dWproj", "dbproj"}, False),
], ids=lambda v: v.name if isinstance(v, Workload) else None)
def test_deleting_a_linears_reduce_scatter_is_caught(workload, passes, out, wrong, only) -> None:
    schedule = build_schedule("3d", workload, passes, "float64", grid=(2, 2, 2))
    broken = without(schedule, lambda op: isinstance(op, ReduceScatter) and op.out == out)
    assert_caught(broken, wrong, only)


@pytest.mark.parametrize("q", [2, 3])
@pytest.mark.parametrize("buf, passes, wrong, only", [("S1", "fwd", {"Y"}, True), ("S2", "fwd", {"Y"}, True),
                                                      ("dS1", "bwd", {"dX"}, True), ("dS2", "bwd", {"dX"}, False)])
def test_deleting_a_layernorm_moments_all_reduce_is_caught(q: int, buf: str, passes: str, wrong, only) -> None:
    schedule = build_schedule("3d", {2: BLOCK, 3: BLOCKS[3][1]}[q], passes, "float64", grid=(q, q, q))
    assert_caught(without(schedule, lambda op: isinstance(op, AllReduce) and op.buf == buf), wrong, only)


@pytest.mark.parametrize("line", ["x", "y", "z"])
def test_deleting_a_vectors_broadcast_along_either_row_axis_is_caught(line: str) -> None:
    """b1 (FC1's output, columns by x) goes along y then z; bproj (columns by y) along x then z."""
    vector = {"x": "bproj", "y": "b1", "z": "b1"}[line]
    schedule = build_schedule("3d", BLOCK, "fwd", "float64", grid=(2, 2, 2))
    broken = without(schedule, lambda op: isinstance(op, Broadcast) and op.group.startswith(line)
                     and op.buf.removesuffix("_ws") == vector)
    assert_caught(broken, {"Y"}, only=True)


# ---- simulated against the analytic bound -------------------------------------------------------------------------

@pytest.mark.parametrize("passes", PASSES)
@pytest.mark.parametrize("workload", [Workload.gemm(64, 32, 16), Workload.mlp(64, 16),
                                      Workload.transformer(4, 8, 16, 4, ffn=48)], ids=lambda w: w.name)
def test_simulated_is_never_faster_than_the_analytic_model(workload: Workload, passes: str) -> None:
    """A full NVLink mesh (``test_transformer_accounting``'s contention-free case)."""
    schedule = build_schedule("3d", workload, passes, "bfloat16", grid=(2, 2, 2))
    G = nvlink_mesh(schedule.world_size, 2)
    sim = simulate(schedule, G, algorithms={"all_reduce": "ring"}, timeline=False)
    bound = analyze(schedule, G, algorithms={"all_reduce": "ring"}, timeline=False)
    assert bound.makespan_s > 0
    assert sim.makespan_s >= bound.makespan_s * (1 - 1e-12)
    assert sim.makespan_s == pytest.approx(bound.makespan_s, rel=1e-9, abs=0)

"""The IR's communication accounting of one transformer block against the closed forms, per rank.

Sizes: M = b s tokens, hidden h, FFN width f (4h in GPT), on the block's four linears QKV [h, 3h],
proj [h, h], FC1 [h, f], FC2 [f, h], so sum K = 3h + f and sum K N = 4h^2 + 2hf. The closed forms
are written out in the docstrings of ``simulator/algorithms/{megatron_1d, megatron_1d_sp, summa25d,
cannon25d}.py``; this file holds the IR to them exactly (integers and fractions, no tolerance),
separately for the forward, the backward alone and both.

Two conventions, both per rank:

- **payload** (``simulator.ir.accounting``): the elements of the rank's own buffer in each op it
  takes part in (all_gather: the output, reduce_scatter: the input), summed.
- **received**: what a bandwidth-optimal implementation must move into the rank: a broadcast of n
  elements over g ranks, n at every non-root; a reduce, (g - 1) n at the root (it takes in every other
  member's buffer); an all_reduce 2(g - 1)/g n (reduce-scatter + all-gather); an all_gather of an n
  output and a reduce_scatter of an n input (g - 1)/g n; a recv its buffer. These are nccl-tests'
  bus-bandwidth factors. The SUMMA form 3(q - 1)(7 b s h/(d q^2) + 12 h^2/q^2) of DESIGN.md and
  1-D's 8(p - 1)/p b s h are in this convention; the payload of the same SUMMA ops is 3q(...).
  Over one q-step SUMMA pass each rank is the root of exactly one of the q broadcasts and of one
  of the q reduces, so a pass moves (q - 1) blocks into every rank whichever way a reduce is counted.
"""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

import pytest

from simulator.algorithms.registry import build_schedule
from simulator.ir.accounting import account
from simulator.ir.ops import CommOp
from simulator.ir.schedule import DTYPE_BYTES
from simulator.timing.critical_path import analyze
from simulator.timing.simulation import simulate
from simulator.workloads.layers import LayerNorm
from simulator.workloads.workload import Workload
from topologies.builders import nvlink_mesh

PASSES = ("fwd", "bwd", "both")


# ---- measured: the IR's ops, classified and counted --------------------------------------------------------------

def _vectors(workload: Workload) -> set[str]:
    """The block's [1, n] parameters (biases, LayerNorm gamma and beta) and LayerNorm's row moments."""
    names = {name for name, shape in workload.weights().items() if shape[0] == 1}
    return names | {layer.stats for layer in workload.layers() if isinstance(layer, LayerNorm)}


def _role(buffer: str, vectors: set[str]) -> str:
    """"vector" for a buffer of a parameter vector or row moments (its gradient, workspace, partial sum),
    else "linear" (a product's operand)."""
    for suffix in ("_ws", "_part"):
        buffer = buffer.removesuffix(suffix)
    return "vector" if buffer in vectors or (buffer[:1] == "d" and buffer[1:] in vectors) else "linear"


def _received(schedule, rank: int, op) -> Fraction:
    """Elements ``op`` moves into ``rank`` (the module docstring's convention)."""
    n = schedule.spec(rank, op.payload_buffer()).numel
    if op.kind in ("send", "recv"):
        return Fraction(n if op.kind == "recv" else 0)
    members = schedule.groups[op.group]
    g, local = len(members), members.index(rank)
    return {"broadcast": Fraction(n if local != getattr(op, "root", None) else 0),
            "reduce": Fraction((g - 1) * n if local == getattr(op, "root", None) else 0),
            "all_reduce": Fraction(2 * (g - 1), g) * n,
            "all_gather": Fraction(g - 1, g) * n,
            "reduce_scatter": Fraction(g - 1, g) * n}[op.kind]


def measured(schedule, workload: Workload) -> list[dict]:
    """Per rank: collectives by "kind/size", p2p messages, payload elements, and received elements by role."""
    vectors, itemsize = _vectors(workload), DTYPE_BYTES[schedule.dtype]
    out = []
    for rank, acct in enumerate(account(schedule)):
        received = {"linear": Fraction(0), "vector": Fraction(0)}
        for op in schedule.programs[rank]:
            if isinstance(op, CommOp):
                received[_role(op.payload_buffer(), vectors)] += _received(schedule, rank, op)
        assert acct.payload_bytes % itemsize == 0
        out.append({"kinds": Counter(acct.collectives_by_kind), "p2p": acct.p2p_messages,
                    "payload": acct.payload_bytes // itemsize, **received})
    return out


# ---- expected: the closed forms of the algorithms' docstrings ----------------------------------------------------

def _sizes(w: Workload) -> tuple[int, int, int]:
    assert [(lin.k, lin.n) for lin in w.linears()] == [(w.hidden, 3 * w.hidden), (w.hidden, w.hidden),
                                                       (w.hidden, w.ffn), (w.ffn, w.hidden)]
    return w.m, w.hidden, w.ffn


def _fwd(passes: str) -> int:
    return passes != "bwd"


def _bwd(passes: str) -> int:
    return passes != "fwd"


def megatron(w: Workload, p: int, passes: str) -> dict:
    """1-D: 2 all-reduces of [M, h] forward (proj, FC2 outputs), 2 backward (QKV, FC1 input grads)."""
    m, h, _ = _sizes(w)
    n = 2 * _fwd(passes) + 2 * _bwd(passes)
    return {"kinds": Counter({f"all_reduce/{p}": n}), "p2p": 0, "payload": n * m * h,
            "linear": Fraction(2 * (p - 1), p) * n * m * h, "vector": Fraction(0)}


def megatron_sp(w: Workload, p: int, passes: str) -> dict:
    """1-D + SP: forward 2 all-gathers + 2 reduce-scatters of [M, h]; backward 2 all-gathers of dY, 2 re-gathers
    of the QKV and FC1 inputs, 2 reduce-scatters; 6 all-reduces of [1, h] vector grads (p > 1)."""
    m, h, _ = _sizes(w)
    fwd, bwd = _fwd(passes), _bwd(passes)
    gathers, scatters, vectors = 2 * fwd + 4 * bwd, 2 * fwd + 2 * bwd, 6 * bwd * (p > 1)
    kinds = Counter({f"all_gather/{p}": gathers, f"reduce_scatter/{p}": scatters, f"all_reduce/{p}": vectors})
    return {"kinds": +kinds, "p2p": 0, "payload": (gathers + scatters) * m * h + vectors * h,
            "linear": Fraction(p - 1, p) * (gathers + scatters) * m * h,
            "vector": Fraction(2 * (p - 1), p) * vectors * h}


def _vector_traffic(m_rows: int, h: int, f: int, q: int, passes: str, row: int,
                    fused_gelu: bool = True) -> tuple[Counter, int, Fraction]:
    """LayerNorm and bias traffic on one layer of a [q, q, .] grid (rows: the rank's activation rows), without
    the depth all-reduce: kinds, payload, received. A backward-only schedule fetches what its backward reads
    of the vectors: the two LayerNorm gammas, and b1 where the fused bias-GeLU recomputes h + b1."""
    fwd, bwd, bwd_only = _fwd(passes), _bwd(passes), passes == "bwd"
    vec = Fraction(9 * h + f, q)  # ln1 g, b + bqkv + bproj + ln2 g, b + b1 + b2 columns on a rank, /q
    if q == 1:
        return Counter(), 0, Fraction(0)
    read_back = Fraction(2 * h + fused_gelu * f, q)
    kinds = Counter({f"broadcast/{q}": 8 * fwd + (2 + fused_gelu) * bwd_only, f"reduce/{q}": 8 * bwd,
                     f"all_reduce/{q}": 2 * fwd + 2 * bwd})
    payload = fwd * vec + bwd_only * read_back + bwd * vec + (fwd + bwd) * 4 * m_rows
    received = ((row != 0) * (fwd * vec + bwd_only * read_back)   # broadcasts from row 0
                + (row == 0) * bwd * (q - 1) * vec                          # reduces into row 0
                + (fwd + bwd) * 2 * Fraction(2 * (q - 1), q) * 2 * m_rows)  # moments [rows, 2], twice each way
    return +kinds, int(payload), received


def summa(w: Workload, q: int, d: int, passes: str, rank: int) -> dict:
    """SUMMA2.5 [q, q, d] (2-D SUMMA at d = 1), rank (j, i, k)."""
    m, h, f = _sizes(w)
    j = rank % (q * q) // q
    fwd, bwd = _fwd(passes), _bwd(passes)
    lin = Fraction(m * (3 * h + f), d * q * q) + Fraction(4 * h * h + 2 * h * f, q * q)  # one block of each, summed
    weights = Fraction(4 * h * h + 2 * h * f, q * q)
    vec = Fraction(9 * h + f, q)
    depth = d > 1
    kinds = Counter({f"broadcast/{q}": 8 * q * (fwd + bwd), f"reduce/{q}": 8 * q * bwd,
                     f"all_reduce/{d}": bwd * depth * (4 + 8 * (j == 0))})
    vkinds, vpayload, vreceived = _vector_traffic(m // (d * q), h, f, q, passes, j, w.bias_gelu_fusion)
    payload = (q * (fwd + 2 * bwd) * lin + bwd * depth * weights + vpayload
               + bwd * depth * (j == 0) * vec)
    return {"kinds": +(kinds + vkinds), "p2p": 0, "payload": payload,
            "linear": (q - 1) * (fwd + 2 * bwd) * lin + bwd * Fraction(2 * (d - 1), d) * weights,
            "vector": vreceived + bwd * (j == 0) * Fraction(2 * (d - 1), d) * vec}


def _products(w: Workload, passes: str) -> list[tuple]:
    """Cannon's products in program order: (L, R, out), a factor (name, stored [rows, cols], transposed)."""
    m = w.m
    linears = [(lin.x, lin.w, lin.y, lin.k, lin.n) for lin in w.linears()]
    fwd = [((x, (m, k), False), (wt, (k, n), False), (m, n)) for x, wt, y, k, n in linears]
    bwd = []
    for x, wt, y, k, n in reversed(linears):
        dy = (f"d{y}", (m, n), False)
        bwd += [(dy, (wt, (k, n), True), (m, k)), ((x, (m, k), True), dy, (k, n))]
    return fwd * _fwd(passes) + bwd * _bwd(passes)


def cannon(w: Workload, q: int, c: int, passes: str, rank: int) -> dict:
    """Cannon 2.5-D [q, q, c], rank (j, i, k): the product traffic of ``cannon_steps`` plus layer 0's vectors."""
    m, h, f = _sizes(w)
    k, rest = divmod(rank, q * q)
    j, i = divmod(rest, q)
    s = q // c
    kinds, messages, payload, received = Counter(), 0, Fraction(0), Fraction(0)
    replicated: set[str] = set()
    for left, right, (orows, ocols) in _products(w, passes):
        for side, (name, (rows, cols), transposed) in (("L", left), ("R", right)):
            block = rows // q * (cols // q)
            if transposed:
                home = i == j and (i + k * s) % q == 0
            else:
                home = ((j if side == "L" else i) + k * s) % q == 0
            sent = (0 if home else 2) + 2 * (s - 1)  # skew send + recv, then s-1 shift sends + recvs
            messages += sent
            payload += sent * block
            received += sent // 2 * block
            if c > 1 and name not in replicated:  # one depth broadcast per distinct factor
                replicated.add(name)
                kinds[f"broadcast/{c}"] += 1
                payload += block
                received += block * (k != 0)
        if c > 1:  # one depth reduce per product onto layer 0
            kinds[f"reduce/{c}"] += 1
            payload += orows // q * (ocols // q)
            received += (c - 1) * (orows // q) * (ocols // q) * (k == 0)
    vector = Fraction(0)
    if k == 0:
        vkinds, vpayload, vector = _vector_traffic(m // q, h, f, q, passes, j, w.bias_gelu_fusion)
        kinds += vkinds
        payload += vpayload
    return {"kinds": +kinds, "p2p": messages, "payload": payload, "linear": received, "vector": vector}


# ---- the tests -----------------------------------------------------------------------------------------------------

def _check(schedule, workload: Workload, expected) -> None:
    got = measured(schedule, workload)
    for rank, acct in enumerate(got):
        assert acct == expected(rank), rank


def _transformer(batch: int, seq: int, hidden: int, heads: int, ffn: int | None = None) -> Workload:
    return Workload.transformer(batch, seq, hidden, heads, ffn=ffn, dropout=0.1)


@pytest.mark.parametrize("passes", PASSES)
@pytest.mark.parametrize("p, workload", [
    (1, _transformer(2, 3, 4, 2)), (2, _transformer(2, 3, 4, 2)), (4, _transformer(1, 4, 8, 4, ffn=12)),
    (8, _transformer(2, 4, 8, 8, ffn=24))], ids=lambda v: str(v) if isinstance(v, int) else v.label)
def test_megatron_1d(p: int, workload: Workload, passes: str) -> None:
    schedule = build_schedule("1d", workload, passes, "bfloat16", gpus=p)
    _check(schedule, workload, lambda rank: megatron(workload, p, passes))


@pytest.mark.parametrize("passes", PASSES)
@pytest.mark.parametrize("p, workload", [
    (1, _transformer(2, 3, 4, 2)), (2, _transformer(2, 3, 4, 2)), (4, _transformer(1, 4, 8, 4, ffn=12)),
    (8, _transformer(2, 4, 8, 8, ffn=24))], ids=lambda v: str(v) if isinstance(v, int) else v.label)
def test_megatron_1d_sp(p: int, workload: Workload, passes: str) -> None:
    schedule = build_schedule("1d-sp", workload, passes, "float32", gpus=p)
    _check(schedule, workload, lambda rank: megatron_sp(workload, p, passes))


@pytest.mark.parametrize("p", [2, 4, 8])
def test_sequence_parallel_moves_what_1d_moves_plus_the_regathers(p: int) -> None:
    """Received per rank: the forward equals 1-D's; the backward exceeds it by the two re-gathers of [M, h]
    and the 6 vector all-reduces. The payload convention differs: an all-reduce of n counts n, its
    reduce-scatter + all-gather 2n."""
    workload = _transformer(2, 4, 8, 8)
    m, h = workload.m, workload.hidden
    for passes in PASSES:
        one = measured(build_schedule("1d", workload, passes, gpus=p), workload)[0]
        sp = measured(build_schedule("1d-sp", workload, passes, gpus=p), workload)[0]
        regathers = Fraction(p - 1, p) * 2 * m * h * _bwd(passes)
        assert sp["linear"] == one["linear"] + regathers
        assert sp["vector"] == Fraction(2 * (p - 1), p) * 6 * h * _bwd(passes)
        assert sp["payload"] == 2 * one["payload"] + 2 * m * h * _bwd(passes) + 6 * h * _bwd(passes)


SUMMA_CASES = [(1, 1, _transformer(1, 3, 4, 2)), (2, 1, _transformer(2, 3, 4, 2)),
               (2, 1, _transformer(2, 2, 6, 2, ffn=10)), (3, 1, _transformer(3, 2, 6, 3, ffn=9)),
               (1, 2, _transformer(2, 3, 4, 2, ffn=6)), (2, 2, _transformer(4, 2, 4, 2)),
               (2, 3, _transformer(6, 1, 8, 2, ffn=6)), (3, 2, _transformer(6, 2, 6, 3, ffn=12)),
               (4, 2, _transformer(8, 1, 8, 4, ffn=20))]


@pytest.mark.parametrize("passes", PASSES)
@pytest.mark.parametrize("q, d, workload", SUMMA_CASES,
                         ids=lambda v: str(v) if isinstance(v, int) else v.label)
def test_summa25d(q: int, d: int, workload: Workload, passes: str) -> None:
    schedule = build_schedule("summa25d", workload, passes, "float32", grid=(q, q, d))
    _check(schedule, workload, lambda rank: summa(workload, q, d, passes, rank))


@pytest.mark.parametrize("q, d", [(2, 1), (3, 1), (2, 2), (4, 2), (3, 3)])
def test_summa_linear_traffic_is_the_design_formula(q: int, d: int) -> None:
    """f = 4h: 3(q-1)(7 b s h/(d q^2) + 12 h^2/q^2) received per rank in the q-step broadcasts and reduces,
    plus 2(d-1)/d 12 h^2/q^2 in the weight gradients' depth all-reduces (not in DESIGN.md's form)."""
    b, s, h = d * q * 2, 3, 4 * q
    workload = _transformer(b, s, h, q)
    design = 3 * (q - 1) * (Fraction(7 * b * s * h, d * q * q) + Fraction(12 * h * h, q * q))
    depth = Fraction(2 * (d - 1), d) * Fraction(12 * h * h, q * q)
    for acct in measured(build_schedule("summa25d", workload, "both", grid=(q, q, d)), workload):
        assert acct["linear"] == design + depth


@pytest.mark.parametrize("q", [1, 2, 3, 4])
@pytest.mark.parametrize("passes", PASSES)
def test_summa25d_on_one_layer_is_2d_op_for_op(q: int, passes: str) -> None:
    workload = _transformer(q * 2, 2, 2 * q, q, ffn=3 * q)
    tesseract = build_schedule("summa25d", workload, passes, grid=(q, q, 1))
    summa2d = build_schedule("2d", workload, passes, grid=(q, q, 1))
    assert (tesseract.algorithm, summa2d.algorithm) == ("summa25d", "2d")
    for field in ("grid", "workload", "passes", "dtype", "groups", "buffers", "programs", "inputs", "outputs",
                  "tensors", "options", "parts"):
        assert getattr(tesseract, field) == getattr(summa2d, field), field
    assert [a.to_dict() for a in account(tesseract)] == [a.to_dict() for a in account(summa2d)]


CANNON_CASES = [(1, 1, _transformer(1, 3, 4, 2)), (2, 1, _transformer(2, 3, 4, 2, ffn=6)),
                (2, 2, _transformer(2, 2, 4, 2)), (3, 3, _transformer(3, 1, 6, 3, ffn=9)),
                (4, 2, _transformer(4, 1, 8, 4, ffn=12)), (4, 4, _transformer(4, 2, 4, 4))]


@pytest.mark.parametrize("passes", PASSES)
@pytest.mark.parametrize("q, c, workload", CANNON_CASES,
                         ids=lambda v: str(v) if isinstance(v, int) else v.label)
def test_cannon25d(q: int, c: int, workload: Workload, passes: str) -> None:
    schedule = build_schedule("cannon25d", workload, passes, "float32", grid=(q, q, c))
    _check(schedule, workload, lambda rank: cannon(workload, q, c, passes, rank))


@pytest.mark.parametrize("q, c, workload", [case for case in CANNON_CASES if case[0] > 1],
                         ids=lambda v: str(v) if isinstance(v, int) else v.label)
def test_cannon_shift_traffic_closed_form(q: int, c: int, workload: Workload) -> None:
    """Rank 0 needs no skew, so what it receives point to point is the shifts alone: (s-1)(A + W) forward
    and (s-1)(A + W + 2Y) backward, A, Y, W the summed input, output and weight blocks."""
    m, h, f = _sizes(workload)
    a, y, w = Fraction(m * (3 * h + f), q * q), Fraction(m * (5 * h + f), q * q), Fraction(4 * h * h + 2 * h * f, q * q)
    for passes in PASSES:
        schedule = build_schedule("cannon25d", workload, passes, grid=(q, q, c))
        got = sum(schedule.spec(0, op.buf).numel for op in schedule.programs[0] if op.kind == "recv")
        assert got == (q // c - 1) * (_fwd(passes) * (a + w) + _bwd(passes) * (a + w + 2 * y))


@pytest.mark.parametrize("passes", PASSES)
@pytest.mark.parametrize("algo, shape", [("1d", {"gpus": 4}), ("1d-sp", {"gpus": 4}), ("2d", {"grid": (2, 2, 1)}),
                                         ("summa25d", {"grid": (2, 2, 2)}), ("cannon25d", {"grid": (2, 2, 2)})],
                         ids=lambda v: str(v))
def test_simulated_block_is_never_faster_than_the_analytic_model(algo: str, shape: dict, passes: str) -> None:
    """On a full NVLink mesh with ring all-reduces (``test_cost_schedule``'s contention-free case) the simulator
    equals the analytic model, except Cannon's backward, whose transposed skew sends two blocks to one peer
    at once and shares that link: slower, never faster."""
    schedule = build_schedule(algo, _transformer(4, 8, 16, 4), passes, "bfloat16", **shape)
    G = nvlink_mesh(schedule.world_size, 2)
    sim = simulate(schedule, G, algorithms={"all_reduce": "ring"}, timeline=False)
    bound = analyze(schedule, G, algorithms={"all_reduce": "ring"}, timeline=False)
    assert bound.makespan_s > 0
    assert sim.makespan_s >= bound.makespan_s * (1 - 1e-12)
    if algo != "cannon25d" or passes == "fwd":
        assert sim.makespan_s == pytest.approx(bound.makespan_s, rel=1e-9, abs=0)

"""The float64 reference of an output block: equal to the dense one, and built from panels and chunks only
(the chain workloads), or from token chunks of whole sequences (the transformer block)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from executor_cases import GEMM, MLP, TRANSFORMER, make_transformer  # noqa: E402

import executor.reference as reference  # noqa: E402
from executor.check import TOLERANCES, check_rank, combine  # noqa: E402
from executor.reference import reference_block  # noqa: E402
from simulator.ir.interpret import run_schedule  # noqa: E402
from simulator.workloads.tensors import random_block  # noqa: E402
from simulator.workloads.functions import gelu, gelu_grad  # noqa: E402
from simulator.workloads.workload import Workload  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _dense(workload: Workload, seed: int) -> dict[str, np.ndarray]:
    """Every output, and for the MLP its hidden H, Z, dZ, dH, from the whole inputs (numpy float64)."""
    dense = workload.reference(seed, "both")
    if workload.name == "mlp":
        full = {name: random_block(seed, name, shape, (0, shape[0]), (0, shape[1]))
                for name, shape in workload.shapes().items()}
        h = full["X"] @ full["W1"]
        dz = full["dY"] @ full["W2"].T
        dense.update(H=h, Z=gelu(h), dZ=dz, dH=dz * gelu_grad(h))
    return dense


@pytest.mark.parametrize("workload", [GEMM, MLP, Workload.gemm(12, 6, 9)], ids=["gemm", "mlp", "gemm-odd"])
@pytest.mark.parametrize("seed", [0, 7])
@pytest.mark.parametrize("piece", [reference.PIECE_ELEMENTS, 7, 1])
def test_reference_blocks_equal_the_dense_reference_whatever_the_chunks(workload, seed, piece):
    for name, full in _dense(workload, seed).items():
        rows, cols = full.shape
        parts = ((0, rows, 0, cols), (1, rows // 2, 0, cols // 3 + 1), (rows // 2, rows, cols // 2, cols))
        for r0, r1, c0, c1 in parts:
            block = reference_block(workload, seed, name, (r0, r1), (c0, c1), piece_elements=piece).numpy()
            np.testing.assert_allclose(block, full[r0:r1, c0:c1], rtol=0, atol=1e-12, err_msg=name)


def test_reference_of_an_unknown_tensor_is_a_clear_error():
    with pytest.raises(ValueError, match="no reference for output tensor 'Q'"):
        reference_block(GEMM, 0, "Q", (0, 1), (0, 1))


MLP_ODD = Workload.mlp(48, 8)  # h = 8, 4h = 32: no block below spans a whole input
R, C = (12, 36), (2, 6)        # rows of M, columns of h
RH, CF = (2, 6), (8, 24)       # rows of h, columns of 4h
PANELS = {
    # tensor: (block rows, block cols, {the inputs larger than a chunk that the block may build whole})
    "Y": (R, C, {("X", R, (0, 8))}),
    "dX": (R, C, {("X", R, (0, 8)), ("dY", R, (0, 8))}),
    "dW1": (RH, CF, {("W1", (0, 8), CF), ("W2", CF, (0, 8))}),
    "dW2": (CF, C, {("W1", (0, 8), CF)}),
    "H": (R, CF, set()),  # summed over chunks of h, like every linear's output: X[R, c] W1[c, F]
    "Z": (R, CF, {("W1", (0, 8), CF)}),
    "dZ": (R, CF, set()),  # summed over chunks of h: dY[R, c] W2[F, c]^T
    "dH": (R, CF, {("W1", (0, 8), CF), ("W2", CF, (0, 8))}),
}
GEMM_ODD = Workload.gemm(24, 12, 18)
GEMM_BLOCKS = {"C": ((4, 16), (2, 7)), "dA": ((4, 16), (3, 9)), "dB": ((2, 10), (5, 14))}


@pytest.mark.parametrize("workload, tensor, rows, cols, panels",
                         [(MLP_ODD, t, r, c, p) for t, (r, c, p) in PANELS.items()]
                         + [(GEMM_ODD, t, r, c, set()) for t, (r, c) in GEMM_BLOCKS.items()],
                         ids=[*PANELS, *GEMM_BLOCKS])
def test_a_reference_builds_chunks_and_its_panels_only_each_input_element_once(monkeypatch, workload, tensor, rows,
                                                                              cols, panels):
    piece = 32  # longer than any row or column below, shorter than every whole input (256 to 384 elements)
    built = []

    def recorded(w, seed, name, r, c, device, piece_elements):
        built.append((name, r, c))
        return real(w, seed, name, r, c, device, piece_elements)

    real = reference.input_block
    monkeypatch.setattr(reference, "input_block", recorded)
    block = reference_block(workload, 3, tensor, rows, cols, piece_elements=piece)
    np.testing.assert_allclose(block.numpy(), _dense(workload, 3)[tensor][rows[0]:rows[1], cols[0]:cols[1]],
                               rtol=0, atol=1e-12)
    largest = max(built, key=lambda b: (b[1][1] - b[1][0]) * (b[2][1] - b[2][0]))
    big = {b for b in built if (b[1][1] - b[1][0]) * (b[2][1] - b[2][0]) > piece}
    assert big == panels, f"largest block built: {largest}"
    seen = {name: np.zeros(shape, dtype=int) for name, shape in workload.shapes().items()}
    for name, r, c in built:
        seen[name][r[0]:r[1], c[0]:c[1]] += 1
    assert all(counts.max() <= 1 for counts in seen.values()), "an input element was built twice"


_MEASURE = r"""
import ctypes, sys
import torch
torch.set_num_threads(1)
from executor.reference import graph_outputs, peak_bytes, reference_block
from simulator.workloads.workload import Workload

# A fixed mmap threshold: every array above 128 KiB gets its own mapping, returned to the system when
# freed, so the peak resident size is what was alive at once (glibc otherwise keeps freed chunks).
ctypes.CDLL("libc.so.6").mallopt(-3, 1 << 17)  # M_MMAP_THRESHOLD

def status(key):
    with open("/proc/self/status") as handle:
        return next(int(line.split()[1]) * 1024 for line in handle if line.startswith(key))

w = Workload.mlp(4096, 1024)  # the blocks of summa25d on [2,2,2]
reference_block(w, 0, "dX", (0, 64), (0, 64))  # loads what the first product needs
for tensor, rows, cols in (("Y", (0, 1024), (0, 512)), ("dX", (0, 1024), (0, 512)),
                           ("dW1", (0, 512), (0, 2048)), ("dW2", (0, 2048), (0, 512))):
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")  # the peak resident size starts again from the current one
    base = status("VmRSS:")
    reference_block(w, 0, tensor, rows, cols)
    print(tensor, status("VmHWM:") - base, peak_bytes(w, tensor, rows, cols))

# The transformer: whole weights and outputs, one chunk of whole sequences (11 of 16 tokens here).
t = Workload.transformer(64, 16, 128, 4, dropout=0.1)
reference_block(Workload.transformer(2, 4, 8, 2, dropout=0.1), 0, "dX", (0, 4), (0, 4))  # loads torch's kernels
for passes, tensor, rows, cols in (("fwd", "Y", (0, 1024), (0, 64)), ("both", "dX", (0, 1024), (0, 64)),
                                   ("bwd", "dW1", (0, 64), (0, 256))):
    graph_outputs.cache_clear()
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")
    base = status("VmRSS:")
    reference_block(t, 0, tensor, rows, cols, passes=passes)
    print(passes + ":" + tensor, status("VmHWM:") - base, peak_bytes(t, tensor, rows, cols, passes=passes))
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="needs Linux's /proc/self/clear_refs")
def test_the_memory_a_reference_holds_stays_under_its_stated_peak():
    # In a fresh interpreter: a pytest process that ran multi-threaded matmuls cannot fork a child that runs one.
    out = subprocess.run([sys.executable, "-c", _MEASURE], capture_output=True, text=True, timeout=120, cwd=ROOT,
                         env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert out.returncode == 0, out.stderr[-2000:]
    for line in out.stdout.splitlines():
        tensor, measured, stated = line.split()
        # whole inputs would be 32 MiB each in float64, and the old dW1 reference held 480 MiB
        assert int(measured) <= int(stated) <= 140 * 2**20, line
    assert len(out.stdout.splitlines()) == 7


# -- the transformer block: token chunks of whole sequences ------------------------------------------
def _rel(value: np.ndarray, expected: np.ndarray) -> float:
    return float(np.abs(value - expected).max() / (np.abs(expected).max() or 1.0))


@pytest.mark.parametrize("sequences", [1, 3, 4], ids=["one-sequence", "uneven", "whole"])
@pytest.mark.parametrize("passes", ["fwd", "bwd", "both"])
def test_the_transformer_reference_equals_the_numpy_one_whatever_the_chunks(sequences, passes):
    seed, per_sequence = 7, reference._chunk_elements(TRANSFORMER, 1)
    piece = sequences * per_sequence + per_sequence // 2
    assert reference.sequences_per_chunk(TRANSFORMER, piece) == sequences
    expected = TRANSFORMER.reference(seed, passes)
    outputs = reference.graph_outputs(TRANSFORMER, seed, passes, torch.device("cpu"), piece)
    assert set(outputs) == set(expected)
    for name, full in expected.items():
        assert _rel(outputs[name].numpy(), full) <= 1e-12, name
        rows, cols = full.shape
        block = reference_block(TRANSFORMER, seed, name, (rows // 2, rows), (0, cols // 2 + 1), piece_elements=piece,
                                passes=passes)
        assert _rel(block.numpy(), full[rows // 2:, :cols // 2 + 1]) <= 1e-12, name


def test_a_transformer_chunk_is_never_less_than_one_sequence():
    assert reference.sequences_per_chunk(TRANSFORMER, 1) == 1
    assert reference.sequences_per_chunk(TRANSFORMER, 10**9) == TRANSFORMER.batch


def test_the_transformer_reference_is_computed_once_per_process(monkeypatch):
    reference.graph_outputs.cache_clear()
    calls = []
    real = reference.values_by_chunks
    monkeypatch.setattr(reference, "values_by_chunks", lambda *args, **kw: calls.append(1) or real(*args, **kw))
    for rows in ((0, 6), (6, 12)):
        reference_block(TRANSFORMER, 2, "dX", rows, (0, 12), passes="both")
        reference_block(TRANSFORMER, 2, "dW1", (0, 12), (0, 9), passes="both")
    assert len(calls) == 1
    block = reference_block(TRANSFORMER, 2, "dX", (0, 6), (0, 12), passes="both")
    block.fill_(0.0)  # a block is a copy: checking in place leaves the cached outputs alone
    assert reference_block(TRANSFORMER, 2, "dX", (0, 6), (0, 12), passes="both").abs().max() > 0


def test_a_transformer_tensor_outside_the_pass_is_a_clear_error():
    with pytest.raises(ValueError, match="no reference for output tensor 'dX' of workload transformer fwd"):
        reference_block(TRANSFORMER, 0, "dX", (0, 1), (0, 1), passes="fwd")


def test_check_rank_passes_the_interpreters_transformer_buffers_and_flags_one_wrong_element():
    schedule = make_transformer("summa25d", "both")
    workload = Workload.from_dict(schedule.workload)
    shapes = workload.shapes()
    inputs = {name: workload.input_block(4, name, (0, shapes[name][0]), (0, shapes[name][1]))
              for name in workload.input_names("both")}
    memory = run_schedule(schedule, inputs, seed=4)
    records = []
    for rank in range(schedule.world_size):
        buffers = {name: torch.from_numpy(value) for name, value in memory[rank].items()}
        records += check_rank(schedule, rank, buffers, seed=4)
    verdict = combine(schedule, records, TOLERANCES["float64"])
    assert verdict["ok"] and set(verdict["errors"]) == set(workload.output_names("both")), verdict
    assert verdict["max_rel_error"] < 1e-13
    block = next(b for b in schedule.outputs if b.rank == 3 and b.tensor == "dWqkv")
    buffers = {name: torch.from_numpy(value.copy()) for name, value in memory[3].items()}
    buffers[block.buffer][0, 0] += 1e-9  # one element of one rank's block
    wrong = [r for r in records if r["rank"] != 3] + check_rank(schedule, 3, buffers, seed=4)
    verdict = combine(schedule, wrong, TOLERANCES["float64"])
    assert not verdict["ok"] and [b["tensor"] for b in wrong if not b["ok"]] == ["dWqkv"]

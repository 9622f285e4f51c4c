"""The float64 reference of an output block: equal to the dense one, and built from panels and chunks only."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from executor_cases import GEMM, MLP  # noqa: E402

import executor.reference as reference  # noqa: E402
from executor.reference import reference_block  # noqa: E402
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
from executor.reference import peak_bytes, reference_block
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

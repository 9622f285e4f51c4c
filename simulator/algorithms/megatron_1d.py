"""1-D tensor parallelism, Megatron-LM style (Shoeybi et al., arXiv 1909.08053), on p ranks.

``gemm``: column-parallel. Rank r holds A whole and column block r of B; C stays split by columns
(no forward communication). Backward: dB_r = A^T dC_r locally; dA = sum_r dC_r B_r^T by one all-reduce.

``mlp``: FC1 column-parallel, FC2 row-parallel, so the [M, 4h] activations never move. X and Y are
replicated. Forward: H_r = X W1_r, Z_r = gelu(H_r), Y = all_reduce(Z_r W2_r). Backward from the
replicated dY: dZ_r = dY W2_r^T, dW2_r = Z_r^T dY, dH_r = dZ_r * gelu'(H_r), dW1_r = X^T dH_r,
dX = all_reduce(dH_r W1_r^T). One [M, h] all-reduce each way, as Megatron.
"""

from __future__ import annotations

from simulator.errors import InputError, NotApplicable
from simulator.ir.builder import ScheduleBuilder
from simulator.ir.ops import AllReduce, Gemm, Local
from simulator.ir.schedule import Schedule
from simulator.workloads.workload import Workload

WORLD = "world"


def _split(extent: int, p: int, r: int) -> tuple[int, int]:
    size = extent // p
    return (r * size, (r + 1) * size)


def megatron_1d(p: int, workload: Workload, passes: str, dtype: str) -> Schedule:
    """The 1-D schedule of ``workload`` on ``p`` ranks."""
    if p < 1:
        raise InputError(f"1d needs --gpus >= 1, got {p}")
    split_label, split = ("N", workload.n) if workload.name == "gemm" else ("4*hidden", 4 * workload.hidden)
    if split % p:
        raise NotApplicable(f"1d on {p} GPUs: {split_label}={split} must be divisible by p = {p}")
    b = ScheduleBuilder("1d", (p,), workload, passes, dtype, p, {WORLD: tuple(range(p))})
    shapes = workload.shapes()

    def whole(role: str, rank: int, tensor: str) -> None:
        rows, cols = shapes[tensor]
        b.block(role, rank, tensor, tensor, (0, rows), (0, cols))

    def columns(role: str, rank: int, tensor: str) -> None:
        rows, cols = shapes[tensor]
        b.block(role, rank, tensor, tensor, (0, rows), _split(cols, p, rank))

    def rows(role: str, rank: int, tensor: str) -> None:
        n_rows, cols = shapes[tensor]
        b.block(role, rank, tensor, tensor, _split(n_rows, p, rank), (0, cols))

    fwd, bwd = passes in ("fwd", "both"), passes in ("bwd", "both")
    for r in range(p):
        if workload.name == "gemm":
            whole("input", r, "A")
            columns("input", r, "B")
            if fwd:
                b.buffer(r, "C", (workload.m, workload.n // p))
                b.emit(r, Gemm(out="C", a="A", b="B"))
                columns("output", r, "C")
            if bwd:
                columns("input", r, "dC")
                b.buffer(r, "dA", shapes["dA"])
                b.buffer(r, "dB", (workload.k, workload.n // p))
                b.emit(r, Gemm(out="dA", a="dC", b="B", trans_b=True))
                b.emit(r, AllReduce(group=WORLD, buf="dA"))
                b.emit(r, Gemm(out="dB", a="A", b="dC", trans_a=True))
                whole("output", r, "dA")
                columns("output", r, "dB")
            continue
        m, h, f = workload.m, workload.hidden, 4 * workload.hidden // p
        whole("input", r, "X")
        columns("input", r, "W1")
        rows("input", r, "W2")
        for name, shape in (("H", (m, f)), ("Z", (m, f)), ("Y", (m, h))):
            b.buffer(r, name, shape)
        if fwd:
            b.emit(r, Gemm(out="H", a="X", b="W1"))
            b.emit(r, Local(fn="gelu", out="Z", inputs=("H",)))
            b.emit(r, Gemm(out="Y", a="Z", b="W2"))
            b.emit(r, AllReduce(group=WORLD, buf="Y"))
            whole("output", r, "Y")
        if passes == "bwd":
            columns("input", r, "H")
            columns("input", r, "Z")
        if bwd:
            whole("input", r, "dY")
            for name, shape in (("dZ", (m, f)), ("dH", (m, f)), ("dX", (m, h))):
                b.buffer(r, name, shape)
            b.emit(r, Gemm(out="dZ", a="dY", b="W2", trans_b=True))
            b.buffer(r, "dW2", (f, h))
            b.emit(r, Gemm(out="dW2", a="Z", b="dY", trans_a=True))
            b.emit(r, Local(fn="gelu_backward", out="dH", inputs=("dZ", "H")))
            b.buffer(r, "dW1", (h, f))
            b.emit(r, Gemm(out="dW1", a="X", b="dH", trans_a=True))
            b.emit(r, Gemm(out="dX", a="dH", b="W1", trans_b=True))
            b.emit(r, AllReduce(group=WORLD, buf="dX"))
            whole("output", r, "dX")
            columns("output", r, "dW1")
            rows("output", r, "dW2")
    return b.build()

"""1-D tensor parallelism, Megatron-LM style (Shoeybi et al., arXiv 1909.08053), on p ranks.

The workload's linears alternate column-parallel (the first, third, ...) and row-parallel (the second,
fourth, ...), so the activation between a pair never moves:

- column-parallel Y = X W: X replicated, W split by columns, Y split by columns (no forward
  communication). Backward: dW_r = X^T dY_r locally; dX = sum_r dY_r W_r^T by one all-reduce.
- row-parallel Y = X W: X split by columns, W split by rows, Y = all_reduce(X_r W_r), replicated.
  Backward from the replicated dY: dX_r = dY W_r^T and dW_r = X_r^T dY, both local.

``gemm`` is one column-parallel linear (C split by columns); ``mlp`` is FC1 column- and FC2
row-parallel, with GELU on each rank's columns: one [M, h] all-reduce each way, as Megatron. In each
backward the input gradient comes first (and its all-reduce), then the weight gradient, in the order
Megatron-LM's ColumnParallelLinear computes them.

The transformer block (Shoeybi et al., Fig. 3): QKV and FC1 column-parallel, the out-projection and
FC2 row-parallel, so each rank holds a/p whole heads and the attention core is local; LayerNorm,
dropout, the residuals and the row-parallel biases run replicated on the whole [b s, h] (every rank
computes the same values, and the same dropout masks); a column-parallel bias is split with its
columns. Every vector gradient is complete on every rank (replicated rows), so none is communicated.

Per layer, per rank, M = b s tokens (the FFN width f does not enter). "Payload" is the rank's own
buffer in each op (``simulator.ir.accounting``); "received" what a ring all-reduce of n elements moves
into each rank, 2(p-1)/p n (nccl-tests' bus factor):

    forward    2 all-reduces over p of [M, h] (proj, FC2 outputs)      payload 2Mh   received 4(p-1)/p Mh
    backward   2 all-reduces over p of [M, h] (QKV, FC1 input grads)   payload 2Mh   received 4(p-1)/p Mh
    both       4 all-reduces of [M, h]                                 payload 4Mh   received 8(p-1)/p Mh

LayerNorm and bias traffic: none, in either pass. At p = 1 the four all-reduces are still emitted (on
a one-rank group). ``tests/simulator/test_transformer_accounting.py`` holds the IR to these forms.

``async_dgrad`` is Megatron-LM's asynchronous tensor-parallel communication in the backward
(``LinearWithGradAccumulationAndAsyncCommunication`` in megatron/core/tensor_parallel/layers.py, on by
default; ``--no-async-tensor-model-parallel-allreduce`` turned it off): a column-parallel linear issues
the all-reduce of dX asynchronously and computes dW while it runs, waiting for it after the dW GEMM
(Megatron-LM relies on CUDA_DEVICE_MAX_CONNECTIONS=1 to start the collective before the GEMM). The ops
and their sizes are the same; only their order and a handle change, so the accounting above holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from simulator.algorithms.base import Algorithm, Blocks, LinearNames
from simulator.errors import InputError
from simulator.ir.builder import ScheduleBuilder
from simulator.ir.ops import AllReduce, Gemm, Wait
from simulator.workloads.workload import Workload

WORLD = "world"


def _split(extent: int, p: int, r: int) -> tuple[int, int]:
    size = extent // p
    return (r * size, (r + 1) * size)


@dataclass(frozen=True)
class Megatron1D(Algorithm):
    """Megatron-LM 1-D on ``p`` ranks: column- then row-parallel linears."""

    p: int
    async_dgrad: bool = False
    """Megatron-LM's asynchronous input-gradient communication beside the dW GEMM (module docstring)."""
    name: ClassVar[str] = "1d"
    aliases: ClassVar[tuple[str, ...]] = ("megatron",)
    summary: ClassVar[str] = "Megatron-LM (Shoeybi et al. 2019): column- then row-parallel linears, --gpus P"
    square_grid: ClassVar[bool] = False
    supports_async_dgrad: ClassVar[bool] = True

    @classmethod
    def legal_grids(cls, gpus: int) -> list[tuple[int, ...]]:
        return [(gpus,)]

    @classmethod
    def resolve_grid(cls, grid: tuple[int, ...] | None, gpus: int | None) -> tuple[int, ...]:
        if grid is not None:
            raise InputError(f"{cls.name} takes --gpus P, not --grid")
        if gpus is None or gpus < 1:
            raise InputError(f"{cls.name} needs --gpus P with P >= 1, got {gpus}")
        return (gpus,)

    @classmethod
    def on_grid(cls, shape: tuple[int, ...], overlap: bool = False) -> "Megatron1D":
        return cls(shape[0])

    @property
    def grid_shape(self) -> tuple[int, ...]:
        return (self.p,)

    @property
    def world_size(self) -> int:
        return self.p

    def groups(self) -> dict[str, tuple[int, ...]]:
        return {WORLD: tuple(range(self.p))}

    def check(self, workload: Workload) -> None:
        """NotApplicable unless p divides every split extent (a column linear's N, a row linear's K) and,
        for the transformer, the heads."""
        split = {}
        for linear in workload.linears():
            label, value = (linear.n_label, linear.n) if _column(linear) else (linear.k_label, linear.k)
            split.setdefault(label, value)
        where = f"{self.name} on {self.p} GPUs"
        self._require_block_split(where, workload, 1, "1", self.p, "p")
        self._require_divisible(where, split, self.p, "p")

    # -- the transformer's vectors: kept wherever used; partial sums all-reduced where rows are split --
    def vector_blocks(self, layout: Blocks) -> Blocks:
        return [(rank, (0, 1), cols) for rank, _, cols in layout]

    def fetch_vector(self, b: ScheduleBuilder, name: str, layout: Blocks) -> dict[int, str]:
        return {rank: name for rank, _, _ in layout}

    def reduce_vector_grad(self, b: ScheduleBuilder, layout: Blocks, out: str, compute) -> None:
        rows_split = len({rows for _, rows, _ in layout}) > 1  # sequence-parallel shards
        for rank, _, cols in layout:
            b.buffer(rank, out, (1, cols[1] - cols[0]))
            compute(rank, out)
            if rows_split:
                b.emit(rank, AllReduce(group=WORLD, buf=out))

    def all_reduce_rows(self, b: ScheduleBuilder, buf: str, layout: Blocks) -> None:
        if len({cols for _, _, cols in layout}) > 1:
            raise AssertionError(f"{self.name}: row statistics of column-split blocks")  # 1-D keeps whole rows

    # -- layouts: whole, or split by columns or rows over the p ranks ------------------------------
    def _whole(self, rows: int, cols: int) -> Blocks:
        return [(r, (0, rows), (0, cols)) for r in range(self.p)]

    def _columns(self, rows: int, cols: int) -> Blocks:
        return [(r, (0, rows), _split(cols, self.p, r)) for r in range(self.p)]

    def _rows(self, rows: int, cols: int) -> Blocks:
        return [(r, _split(rows, self.p, r), (0, cols)) for r in range(self.p)]

    def input_blocks(self, lin: LinearNames) -> Blocks:
        return self._whole(lin.m, lin.k) if _column(lin) else self._columns(lin.m, lin.k)

    def output_blocks(self, lin: LinearNames) -> Blocks:
        return self._columns(lin.m, lin.n) if _column(lin) else self._whole(lin.m, lin.n)

    def weight_blocks(self, lin: LinearNames) -> Blocks:
        return self._columns(lin.k, lin.n) if _column(lin) else self._rows(lin.k, lin.n)

    # -- the three products ------------------------------------------------------------------------
    def forward(self, b: ScheduleBuilder, lin: LinearNames) -> None:
        """Y_r = X W_r (column), or Y = all_reduce(X_r W_r) (row)."""
        for r, rows, cols in self.output_blocks(lin):
            b.buffer(r, lin.y, (lin.m, cols[1] - cols[0]))
            b.emit(r, Gemm(out=lin.y, a=lin.x, b=lin.w))
            if not _column(lin):
                b.emit(r, AllReduce(group=WORLD, buf=lin.y))

    def backward_input(self, b: ScheduleBuilder, lin: LinearNames, dy: str, dx: str) -> None:
        """dX = all_reduce(dY_r W_r^T) (column; asynchronous under ``async_dgrad``), or dX_r = dY W_r^T (row)."""
        for r, rows, cols in self.input_blocks(lin):
            b.buffer(r, dx, (lin.m, cols[1] - cols[0]))
            b.emit(r, Gemm(out=dx, a=dy, b=lin.w, trans_b=True))
            if _column(lin):
                b.emit(r, AllReduce(group=WORLD, buf=dx, handle=self.dgrad_handle(lin)))

    def backward_weight(self, b: ScheduleBuilder, lin: LinearNames, dy: str, dw: str) -> None:
        """dW_r = X^T dY_r (column), or dW_r = X_r^T dY (row): local either way; under ``async_dgrad`` a
        column-parallel linear then waits for its dX all-reduce."""
        for r, rows, cols in self.weight_blocks(lin):
            b.buffer(r, dw, (rows[1] - rows[0], cols[1] - cols[0]))
            b.emit(r, Gemm(out=dw, a=lin.x, b=dy, trans_a=True))
            self.wait_dgrad(b, r, lin)

    @property
    def overlaps_dgrad(self) -> bool:
        """Whether the backward overlaps: ``async_dgrad`` on more than one rank (Megatron-LM's ``allreduce_dgrad``
        needs a tensor-parallel world size > 1; on one rank there is nothing to communicate)."""
        return self.async_dgrad and self.p > 1

    def dgrad_handle(self, lin: LinearNames) -> str | None:
        """The handle of a column-parallel linear's dX communication where it overlaps, else None."""
        return f"{lin.y}.dgrad" if self.overlaps_dgrad and _column(lin) else None

    def wait_dgrad(self, b: ScheduleBuilder, r: int, lin: LinearNames) -> None:
        """Rank r's wait for its dX communication after the dW GEMM, where ``dgrad_handle`` issued one."""
        handle = self.dgrad_handle(lin)
        if handle is not None:
            b.emit(r, Wait(handle))


def _column(linear) -> bool:
    """Whether a linear is column-parallel: the first of each pair."""
    return linear.index % 2 == 0

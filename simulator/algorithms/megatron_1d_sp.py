"""Megatron-LM with sequence parallelism (Korthikanti et al. 2022, arXiv 2205.05198) on p ranks.

As 1-D Megatron (``megatron_1d``), but what 1-D keeps replicated (LayerNorm, dropout, the residuals:
the [M, h] activations between the tensor-parallel linears) is split by rows into p sequence shards
of [M/p, h], each rank computing only its shard. The all-reduce of a row-parallel linear becomes a
reduce-scatter onto the shards, and a column-parallel linear all-gathers its input first (Figure 5 of
the paper: g = all-gather forward / reduce-scatter backward, g-bar its conjugate):

- column-parallel Y_r = all_gather(X) W_r. Backward: dX = reduce_scatter(dY_r W_r^T) onto the shards;
  dW_r = all_gather(X)^T dY_r, gathering X **again** in the backward (Megatron-LM keeps only the shard
  between the passes to save activation memory, and re-gathers it, overlapped with the dX product).
- row-parallel Y = reduce_scatter(X_r W_r), a shard. Backward: dY_full = all_gather(dY), then
  dX_r = dY_full W_r^T and dW_r = X_r^T dY_full (the one gather serves both).

The shards' vector gradients (both LayerNorms' gamma and beta, the row-parallel biases of proj and
FC2) are partial sums over a shard's rows, so each is all-reduced over the p ranks (Megatron-LM's
all-reduce of its sequence-parallel parameters' grads). The column-parallel biases (QKV's, FC1's) are
split with their columns, as in 1-D, and need nothing. Needs M = b s divisible by p besides 1-D's
constraints.

Per layer, per rank, M = b s (f does not enter); payload and received as in ``megatron_1d``, an
all-gather's payload being its [M, h] output and a reduce-scatter's its [M, h] input, each received
(p-1)/p of it:

    forward    2 all-gathers (A1, A2) + 2 reduce-scatters (proj, FC2 partials) over p
                                                          payload 4Mh   received 4(p-1)/p Mh
    backward   2 all-gathers of dY (proj, FC2) + 2 re-gathers (A1, A2) + 2 reduce-scatters
               (QKV, FC1 input-grad partials) over p      payload 6Mh   received 6(p-1)/p Mh
    both       6 all-gathers + 4 reduce-scatters          payload 10Mh  received 10(p-1)/p Mh

Received, the forward equals 1-D's 2 all-reduces (4(p-1)/p Mh) and the backward is 1-D's plus the
re-gathers' 2(p-1)/p Mh (none if the forward's gathered inputs were kept). The payload convention
differs: an all-reduce counts its buffer once, its reduce-scatter + all-gather halves twice.

LayerNorm and bias traffic, backward only, p > 1: 6 all-reduces over p of [1, h] (dln1_g, dln1_b,
dln2_g, dln2_b, dbproj, db2): payload 6h, received 12(p-1)/p h. Nothing in the forward. (At p = 1
the linears' gathers and scatters are still emitted on a one-rank group; the vector all-reduces not.)

Under ``async_dgrad`` (Megatron-LM's default, ``megatron_1d``) a column-parallel linear's backward runs
as ``LinearWithGradAccumulationAndAsyncCommunication`` does with sequence parallelism: the re-gather of
X is issued before the dX GEMM and waited for after it, then the reduce-scatter of dX is issued and runs
beside the dW GEMM, waited for after it. Same ops and sizes, in that order.

``tp_comm_overlap`` (Megatron-LM's ``--tp-comm-overlap``, off by default there too) runs the forward's
gathers and reduce-scatters, and the row-parallel backward's gathers of dY, in chunks beside chunked GEMMs,
as Transformer Engine's userbuffers do (``simulator.algorithms.tp_comm_overlap``); the column-parallel
backward stays as above (asynchronous under ``async_dgrad``: TE's bulk overlaps). Under it the collectives TE
runs as userbuffers kernels (the forward's reduces, the column-parallel backward's gather and reduce-scatter)
carry the SMs those kernels hold (``sms``: ``tp_comm_overlap_cfg``, ``simulator.algorithms.ub_configs``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from simulator.algorithms.base import Blocks, LinearNames
from simulator.algorithms.megatron_1d import WORLD, Megatron1D, _column, _split
from simulator.algorithms.tp_comm_overlap import pipelined_reduce_forward, ring_exchange_dgrad, ring_exchange_forward
from simulator.algorithms.ub_configs import TE_DEFAULT, ub_config
from simulator.ir.builder import ScheduleBuilder
from simulator.ir.ops import AllGather, Gemm, ReduceScatter, Wait
from simulator.workloads.workload import Workload


@dataclass(frozen=True)
class Megatron1DSP(Megatron1D):
    """Megatron-LM 1-D with sequence parallelism on ``p`` ranks: the replicated region split by rows."""

    tp_comm_overlap: bool = False
    """Transformer Engine's userbuffers overlap of the forward's gathers and scatters and of the row-parallel
    backward's dY gathers (``tp_comm_overlap``)."""
    tp_comm_overlap_cfg: str = TE_DEFAULT
    """Under ``tp_comm_overlap``: the userbuffers config whose ``num_sm`` its kernels hold
    (``simulator.algorithms.ub_configs``)."""
    name: ClassVar[str] = "1d-sp"
    aliases: ClassVar[tuple[str, ...]] = ("megatron-sp",)
    summary: ClassVar[str] = ("Megatron-LM with sequence parallelism (Korthikanti et al. 2022): all-gather and "
                              "reduce-scatter around the 1-D linears, --gpus P")
    supports_tp_comm_overlap: ClassVar[bool] = True

    def check(self, workload: Workload) -> None:
        """1-D's constraints, and M divisible by p (the sequence shards)."""
        super().check(workload)
        self._require_divisible(f"{self.name} on {self.p} GPUs", {"M": workload.m}, self.p, "p")

    def _shards(self, rows: int, cols: int) -> Blocks:
        return [(r, _split(rows, self.p, r), (0, cols)) for r in range(self.p)]

    def input_blocks(self, lin: LinearNames) -> Blocks:
        return self._shards(lin.m, lin.k) if _column(lin) else self._columns(lin.m, lin.k)

    def output_blocks(self, lin: LinearNames) -> Blocks:
        return self._columns(lin.m, lin.n) if _column(lin) else self._shards(lin.m, lin.n)

    def _gather(self, b: ScheduleBuilder, r: int, shard: str, rows: int, cols: int, handle: str | None = None,
                sms: int | None = None) -> str:
        """All-gather the shards of ``shard`` into ``<shard>_full`` [rows, cols] on rank r (asynchronously
        with ``handle``; ``sms``: as ``AllGather.sms``)."""
        full = b.buffer(r, f"{shard}_full", (rows, cols))
        b.emit(r, AllGather(group=WORLD, inp=shard, out=full, axis=0, handle=handle, sms=sms))
        return full

    def _ub_backward(self, lin: LinearNames) -> tuple[int | None, int | None]:
        """The SMs of a column-parallel linear's (X gather, dX reduce-scatter) as TE's bulk overlaps under
        ``tp_comm_overlap`` (``qkv_dgrad``, ``qkv_wgrad`` / ``fc1_*``); NCCL's channels (None) otherwise."""
        if not (self.tp_comm_overlap and self.p > 1):
            return None, None
        return ub_config(self.tp_comm_overlap_cfg).backward_sms(lin.index)

    def forward(self, b: ScheduleBuilder, lin: LinearNames) -> None:
        """Y_r = all_gather(X) W_r (column), or Y = reduce_scatter(X_r W_r) (row); chunked beside the GEMMs
        under ``tp_comm_overlap``."""
        for r, rows, cols in self.output_blocks(lin):
            chunked = self.tp_comm_overlap and self.p > 1  # one rank: nothing to overlap (Megatron-LM drops SP)
            if chunked and _column(lin):
                ring_exchange_forward(b, self.p, r, lin, cols[1] - cols[0])
            elif chunked:
                sms = ub_config(self.tp_comm_overlap_cfg).forward_sms(lin.index)
                pipelined_reduce_forward(b, self.p, r, lin, WORLD, sms)
            elif _column(lin):
                x = self._gather(b, r, lin.x, lin.m, lin.k)
                b.buffer(r, lin.y, (lin.m, cols[1] - cols[0]))
                b.emit(r, Gemm(out=lin.y, a=x, b=lin.w))
            else:
                part = b.buffer(r, f"{lin.y}_part", (lin.m, lin.n))
                b.emit(r, Gemm(out=part, a=lin.x, b=lin.w))
                b.buffer(r, lin.y, (rows[1] - rows[0], lin.n))
                b.emit(r, ReduceScatter(group=WORLD, inp=part, out=lin.y, axis=0))

    def backward_input(self, b: ScheduleBuilder, lin: LinearNames, dy: str, dx: str) -> None:
        """dX = reduce_scatter(dY_r W_r^T) (column), or dX_r = all_gather(dY) W_r^T (row; under
        ``tp_comm_overlap`` the gather a ring beside p chunk GEMMs, the gathered dY kept for dW)."""
        for r, rows, cols in self.input_blocks(lin):
            if _column(lin):
                gather_sms, scatter_sms = self._ub_backward(lin)
                if self.overlaps_dgrad:  # Megatron-LM gathers X for dW while the dX GEMM runs
                    self._gather(b, r, lin.x, lin.m, lin.k, f"{lin.y}.xgather", gather_sms)
                part = b.buffer(r, f"{dx}_part", (lin.m, lin.k))
                b.emit(r, Gemm(out=part, a=dy, b=lin.w, trans_b=True))
                if self.overlaps_dgrad:
                    b.emit(r, Wait(f"{lin.y}.xgather"))
                b.buffer(r, dx, (rows[1] - rows[0], lin.k))
                b.emit(r, ReduceScatter(group=WORLD, inp=part, out=dx, axis=0, handle=self.dgrad_handle(lin),
                                        sms=scatter_sms))
            elif self.tp_comm_overlap and self.p > 1:
                ring_exchange_dgrad(b, self.p, r, lin, dy, dx, cols[1] - cols[0])
            else:
                full = self._gather(b, r, dy, lin.m, lin.n)
                b.buffer(r, dx, (lin.m, cols[1] - cols[0]))
                b.emit(r, Gemm(out=dx, a=full, b=lin.w, trans_b=True))

    def backward_weight(self, b: ScheduleBuilder, lin: LinearNames, dy: str, dw: str) -> None:
        """dW_r = all_gather(X)^T dY_r, X gathered again (column), or X_r^T all_gather(dY) (row, the
        gather ``backward_input`` made)."""
        for r, rows, cols in self.weight_blocks(lin):
            b.buffer(r, dw, (rows[1] - rows[0], cols[1] - cols[0]))
            if _column(lin):
                # Overlapped, backward_input gathered X already.
                x = f"{lin.x}_full" if self.overlaps_dgrad else self._gather(b, r, lin.x, lin.m, lin.k)
                b.emit(r, Gemm(out=dw, a=x, b=dy, trans_a=True))
                self.wait_dgrad(b, r, lin)
            else:
                b.emit(r, Gemm(out=dw, a=lin.x, b=f"{dy}_full", trans_a=True))

"""SUMMA steps for one linear layer Y = X W on a [q, q, d] grid, shared by 2-D SUMMA and SUMMA2.5.

Layout (Tesseract, arXiv 2105.14500): X [M, K] is split into d*q row blocks x q column blocks; rank
(j, i, k) holds X block (k*q + j, i) of shape [M/(dq), K/q] (layer k owns row blocks kq .. kq+q-1).
W [K, N] is split q x q; rank (j, i, k) holds W block (j, i), [K/q, N/q], on every layer. Y and every
activation gradient take X's layout; dW takes W's. With d = 1 this is 2-D SUMMA (van de Geijn and
Watts 1997; Optimus, arXiv 2104.05343).

Per rank, per linear: forward q row + q column broadcasts; dX q column broadcasts + q row reduces;
dW q row broadcasts + q column reduces, then (d > 1) one all-reduce of dW over the depth group, since
each layer saw only 1/d of the tokens. Buffer legend: ``<x>_ws`` / ``<w>_ws`` receive a broadcast
block, ``<dx>_part`` / ``<dw>_part`` hold this rank's partial product before a reduce.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.builder import ScheduleBuilder
from simulator.grid import ProcessGrid
from simulator.ops import AllReduce, Broadcast, Gemm, Reduce


@dataclass(frozen=True)
class LinearNames:
    """Buffer names and global sizes of one linear Y = X W: X [m, k], W [k, n]."""

    x: str
    w: str
    y: str
    m: int
    k: int
    n: int

    def blocks(self, grid: ProcessGrid) -> tuple[int, int, int]:
        """(M/(dq), K/q, N/q): rows of an activation block, and the two weight block extents."""
        return self.m // (grid.d * grid.q), self.k // grid.q, self.n // grid.q


def activation_block(grid: ProcessGrid, rank: int, rows: int, cols: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """Global (rows, cols) ranges of the [rows, cols] activation tensor's block held by ``rank``."""
    j, i, k = grid.coords(rank)
    mb, cb = rows // (grid.d * grid.q), cols // grid.q
    r = k * grid.q + j
    return (r * mb, (r + 1) * mb), (i * cb, (i + 1) * cb)


def weight_block(grid: ProcessGrid, rank: int, rows: int, cols: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """Global (rows, cols) ranges of the [rows, cols] weight tensor's block held by ``rank``."""
    j, i, _ = grid.coords(rank)
    rb, cb = rows // grid.q, cols // grid.q
    return (j * rb, (j + 1) * rb), (i * cb, (i + 1) * cb)


def forward(b: ScheduleBuilder, grid: ProcessGrid, lin: LinearNames) -> None:
    """Y = X W: at step t, X(., t) along rows and W(t, .) along columns, then accumulate."""
    mb, kb, nb = lin.blocks(grid)
    for rank in range(grid.world_size):
        j, i, k = grid.coords(rank)
        b.buffer(rank, lin.y, (mb, nb))
        for t in range(grid.q):
            x = lin.x if i == t else b.buffer(rank, f"{lin.x}_ws", (mb, kb))
            w = lin.w if j == t else b.buffer(rank, f"{lin.w}_ws", (kb, nb))
            b.emit(rank, Broadcast(group=grid.row_name(j, k), root=t, buf=x))
            b.emit(rank, Broadcast(group=grid.col_name(i, k), root=t, buf=w))
            b.emit(rank, Gemm(out=lin.y, a=x, b=w, accumulate=t > 0))


def backward_input(b: ScheduleBuilder, grid: ProcessGrid, lin: LinearNames, dy: str, dx: str) -> None:
    """dX = dY W^T: at step t, W(t, .) along columns, then reduce the partials along rows to column t."""
    mb, kb, nb = lin.blocks(grid)
    for rank in range(grid.world_size):
        j, i, k = grid.coords(rank)
        b.buffer(rank, dx, (mb, kb))
        part = b.buffer(rank, f"{dx}_part", (mb, kb))
        for t in range(grid.q):
            w = lin.w if j == t else b.buffer(rank, f"{lin.w}_ws", (kb, nb))
            b.emit(rank, Broadcast(group=grid.col_name(i, k), root=t, buf=w))
            b.emit(rank, Gemm(out=part, a=dy, b=w, trans_b=True))
            b.emit(rank, Reduce(group=grid.row_name(j, k), root=t, buf=part, out=dx))


def backward_weight(b: ScheduleBuilder, grid: ProcessGrid, lin: LinearNames, dy: str, dw: str) -> None:
    """dW = X^T dY: at step t, X(., t) along rows, reduce partials along columns to row t, then over depth."""
    mb, kb, nb = lin.blocks(grid)
    for rank in range(grid.world_size):
        j, i, k = grid.coords(rank)
        b.buffer(rank, dw, (kb, nb))
        part = b.buffer(rank, f"{dw}_part", (kb, nb))
        for t in range(grid.q):
            x = lin.x if i == t else b.buffer(rank, f"{lin.x}_ws", (mb, kb))
            b.emit(rank, Broadcast(group=grid.row_name(j, k), root=t, buf=x))
            b.emit(rank, Gemm(out=part, a=x, b=dy, trans_a=True))
            b.emit(rank, Reduce(group=grid.col_name(i, k), root=t, buf=part, out=dw))
        if grid.d > 1:
            b.emit(rank, AllReduce(group=grid.depth_name(j, i), buf=dw))

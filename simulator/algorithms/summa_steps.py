"""SUMMA steps for one linear layer Y = X W on a [q, q, d] grid, shared by 2-D SUMMA and SUMMA2.5.

Layout (Tesseract, arXiv 2105.14500): X [M, K] is split into d*q row blocks x q column blocks; rank
(j, i, k) holds X block (k*q + j, i) of shape [M/(dq), K/q] (layer k owns row blocks kq .. kq+q-1).
W [K, N] is split q x q; rank (j, i, k) holds W block (j, i), [K/q, N/q], on every layer. Y and every
activation gradient take X's layout; dW takes W's. With d = 1 this is 2-D SUMMA (van de Geijn and
Watts 1997; Optimus, arXiv 2104.05343).

Per rank, per linear: forward q row + q column broadcasts; dX q column broadcasts + q row reduces;
dW q row broadcasts + q column reduces, then (d > 1) one all-reduce of dW over the depth group, since
each layer saw only 1/d of the tokens. Buffer legend: ``<x>_ws`` / ``<w>_ws`` receive a broadcast
block, ``<dx>_part`` / ``<dw>_part`` hold this rank's partial product before a reduce (with
``overlap``, two of each, suffixed 0 and 1, used alternately).
"""

from __future__ import annotations

from simulator.algorithms.base import LinearNames
from simulator.algorithms.grid import ProcessGrid
from simulator.ir.builder import ScheduleBuilder
from simulator.ir.ops import AllReduce, Broadcast, Gemm, Reduce, Wait


def block_sizes(grid: ProcessGrid, lin: LinearNames) -> tuple[int, int, int]:
    """(M/(dq), K/q, N/q): rows of an activation block, and the two weight block extents."""
    return lin.m // (grid.d * grid.q), lin.k // grid.q, lin.n // grid.q


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


def _gemm(out: str, a: str, b: str, trans_a: bool = False, trans_b: bool = False,
          accumulate: bool = False) -> tuple:
    """A ``Gemm``'s fields in order, for ``ScheduleBuilder.emit_fields``."""
    return out, a, b, trans_a, trans_b, accumulate


def _workspace(b: ScheduleBuilder, rank: int, base: str, t: int, shape: tuple[int, int], overlap: bool) -> str:
    """The workspace step t receives into: one buffer, or two used alternately when prefetching."""
    return b.buffer(rank, f"{base}_ws{t % 2}" if overlap else f"{base}_ws", shape)


def forward(b: ScheduleBuilder, grid: ProcessGrid, lin: LinearNames, overlap: bool = False) -> None:
    """Y = X W: at step t, X(., t) along rows and W(t, .) along columns, then accumulate.

    With ``overlap`` the broadcasts of step t+1 are issued before step t's gemm (double-buffered
    workspaces, as Colossal-AI's SUMMA implementations prefetch), so communication hides behind compute.
    """
    mb, kb, nb = block_sizes(grid, lin)
    for rank in range(grid.world_size):
        j, i, k = grid.coords(rank)
        b.buffer(rank, lin.y, (mb, nb))
        x = [lin.x if i == t else _workspace(b, rank, lin.x, t, (mb, kb), overlap) for t in range(grid.q)]
        w = [lin.w if j == t else _workspace(b, rank, lin.w, t, (kb, nb), overlap) for t in range(grid.q)]
        row, col = grid.row_name(j, k), grid.col_name(i, k)

        def issue(t: int) -> None:
            handles = (f"{lin.y}.x{t}", f"{lin.y}.w{t}") if overlap else (None, None)
            b.emit_fields(rank, Broadcast, row, t, x[t], handles[0])  # group, root, buf, handle
            b.emit_fields(rank, Broadcast, col, t, w[t], handles[1])

        if overlap:
            issue(0)
        for t in range(grid.q):
            if overlap:
                if t + 1 < grid.q:
                    issue(t + 1)
                b.emit(rank, Wait(f"{lin.y}.x{t}"))
                b.emit(rank, Wait(f"{lin.y}.w{t}"))
            else:
                issue(t)
            b.emit_fields(rank, Gemm, *_gemm(lin.y, x[t], w[t], accumulate=t > 0))


def _broadcast_multiply_reduce(b: ScheduleBuilder, rank: int, q: int, bcast_group: str, operand: list[str],
                               multiply, reduce_group: str, part_shape: tuple[int, int], dest: str,
                               overlap: bool) -> None:
    """q steps of: broadcast operand[t]; part = multiply(operand[t]); reduce part to group-local root t.

    With ``overlap`` the broadcast of step t+1 is in flight during step t's gemm, and each reduce runs
    asynchronously on one of two partial buffers, waited for before that buffer is overwritten.
    """
    parts = [b.buffer(rank, f"{dest}_part{t % 2}" if overlap else f"{dest}_part", part_shape) for t in range(q)]
    tag = f"{dest}.{rank}"

    def issue(t: int) -> None:
        b.emit_fields(rank, Broadcast, bcast_group, t, operand[t], f"{tag}.b{t}" if overlap else None)

    if overlap:
        issue(0)
    for t in range(q):
        if overlap:
            if t + 1 < q:
                issue(t + 1)
            b.emit(rank, Wait(f"{tag}.b{t}"))
            if t >= 2:
                b.emit(rank, Wait(f"{tag}.r{t - 2}"))  # parts[t] was reduced two steps ago
        else:
            issue(t)
        b.emit_fields(rank, Gemm, *multiply(parts[t], operand[t]))
        b.emit_fields(rank, Reduce, reduce_group, t, parts[t], dest,  # group, root, buf, out, handle, sms
                      f"{tag}.r{t}" if overlap else None, None)
    if overlap:
        for t in range(max(0, q - 2), q):
            b.emit(rank, Wait(f"{tag}.r{t}"))


def backward_input(b: ScheduleBuilder, grid: ProcessGrid, lin: LinearNames, dy: str, dx: str,
                   overlap: bool = False) -> None:
    """dX = dY W^T: at step t, W(t, .) along columns, then reduce the partials along rows to column t."""
    mb, kb, nb = block_sizes(grid, lin)
    for rank in range(grid.world_size):
        j, i, k = grid.coords(rank)
        b.buffer(rank, dx, (mb, kb))
        w = [lin.w if j == t else _workspace(b, rank, lin.w, t, (kb, nb), overlap) for t in range(grid.q)]
        _broadcast_multiply_reduce(
            b, rank, grid.q, grid.col_name(i, k), w,
            lambda part, wt: _gemm(part, dy, wt, trans_b=True),
            grid.row_name(j, k), (mb, kb), dx, overlap)


def backward_weight(b: ScheduleBuilder, grid: ProcessGrid, lin: LinearNames, dy: str, dw: str,
                    overlap: bool = False) -> None:
    """dW = X^T dY: at step t, X(., t) along rows, reduce partials along columns to row t, then over depth."""
    mb, kb, nb = block_sizes(grid, lin)
    for rank in range(grid.world_size):
        j, i, k = grid.coords(rank)
        b.buffer(rank, dw, (kb, nb))
        x = [lin.x if i == t else _workspace(b, rank, lin.x, t, (mb, kb), overlap) for t in range(grid.q)]
        _broadcast_multiply_reduce(
            b, rank, grid.q, grid.row_name(j, k), x,
            lambda part, xt: _gemm(part, xt, dy, trans_a=True),
            grid.col_name(i, k), (kb, nb), dw, overlap)
        if grid.d > 1:
            b.emit(rank, AllReduce(group=grid.depth_name(j, i), buf=dw))

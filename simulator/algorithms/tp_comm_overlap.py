"""Transformer Engine's userbuffers overlap of sequence parallelism's communication (Megatron-LM ``--tp-comm-overlap``).

With sequence parallelism (``megatron_1d_sp``) each column-parallel linear all-gathers its input before the
GEMM and each row-parallel linear reduce-scatters its output after it. Megatron-LM with
``--tp-comm-overlap`` hands both to Transformer Engine's userbuffers (``initialize_ub`` in
transformer_engine/pytorch/module/base.py), which splits the communication into chunks and runs each beside
a GEMM on another chunk. Its default methods for the forward:

- ``qkv_fprop``, ``fc1_fprop`` (all-gather + GEMM): ``ring_exchange``, ``num_splits`` = the tensor-parallel
  size p, copy-engine sends (``use_ce``, one SM). ``ring_exchange_forward``: at step t rank r multiplies the
  sequence shard it holds, r + t (mod p), while it sends that shard to rank r - 1 and receives shard
  r + t + 1 from rank r + 1 (double-buffered); p GEMMs of [M/p, K] x [K, N/p], each result copied into its
  rows of Y. The sends are p2p, which holds no SMs here (``simulator.timing.sm_sharing``): the copy engine
  moves them.
- ``proj_fprop``, ``fc2_fprop`` (GEMM + reduce-scatter): ``pipeline``, 4 splits, 16 SMs.
  ``pipelined_reduce_forward``: the GEMM in p row chunks, chunk j being rank j's sequence shard, each
  reduced onto rank j (a ``reduce`` rooted at j) while the next chunk's GEMM runs; the reduce of a chunk is
  waited for before its buffer is written again. This is TE's pipeline with p splits (one per shard, so
  that each chunk's reduction lands whole on its owner; TE's 4 splits stride the shards instead), and
  each reduce carries the SMs TE's kernel holds (the op's ``sms``: ``num_sm``, 16 by default, a tuned
  config's otherwise, ``simulator.algorithms.ub_configs``), which ``simulator.timing.sm_sharing`` charges
  the GEMM beside it instead of NCCL's channels.

And for the backward (TE ``initialize_ub`` defaults, ``module/base.py`` at d0067d0, the same in NeMo's
``nemo/collections/llm/recipes/tp_overlap_configs/userbuffers.py`` at 8cfedd7 and Megatron-Bridge's
``src/megatron/bridge/training/comm_overlap.py`` at 067f987):

- ``proj_dgrad``, ``fc2_dgrad`` (all-gather of the row-parallel output gradient + GEMM): ``ring_exchange``
  (``RingExchangeOverlapCfg``, one SM, copy engine). dX_r = all_gather(dY) W_r^T has the forward
  column-parallel shape, so ``ring_exchange_dgrad`` is the same ring with the GEMM transposed. TE's
  ``_Linear`` backward (``module/linear.py``) then runs the weight gradient on the gathered dY the ring
  left in the userbuffer ("Userbuffers leaves the gathered tensor in its persistent buffer"; its
  ``proj_wgrad`` / ``fc2_wgrad`` are ``external``: no communication of their own); here each chunk the
  ring holds is also copied into ``<dY>_full``, which the dW GEMM reads.
- ``qkv_dgrad``, ``fc1_dgrad`` (bulk all-gather of X beside the dX GEMM), ``qkv_wgrad``, ``fc1_wgrad``
  (bulk reduce-scatter of dX beside the dW GEMM): ``bulk``, 16 SMs by default (NeMo and Megatron-Bridge
  tune 2-24). Not lowered here: ``megatron_1d_sp``'s asynchronous dX communication (``async_dgrad``) runs
  the same two collectives beside the same two GEMMs; under ``tp_comm_overlap`` they carry TE's ``num_sm``
  (``sms``; ``qkv_dgrad`` / ``fc1_dgrad`` the gather's, ``qkv_wgrad`` / ``fc1_wgrad`` the scatter's), so the
  overlapped time is charged num_sm / SMs (``simulator.timing.sm_sharing``), not NCCL's 24 channels of
  A100 and H100. ``--tp-comm-overlap-cfg`` names the tuned config (``simulator.algorithms.ub_configs``: the
  published ones the ``experiments.repro_nemo`` rows' recipes name); TE's default 16 otherwise.

What tpsim adds that TE does not do: nothing it charges time for. Each chunk's rows are still
moved by ``slice`` ops (into Y or dX, out of X for the row-parallel GEMM, and the backward ring's received
dY chunks into the kept gather), so that the interpreter and the gloo executor prove the ring on numbers,
but they are ``in_place``: TE's GEMMs address those rows where they lie (``get_tensor_chunk`` in
``split_overlap_ag`` / ``split_overlap_rs``, transformer_engine/common/comm_gemm_overlap/comm_gemm_overlap.cpp
at d0067d0) and its ring receives into the userbuffer, so the cost model charges them no memory pass
(``simulator.ir.ops.Slice``). The one copy charged per backward ring is the rank's own dY shard into the
gather, which TE makes too (``fill_userbuffers_buffer_for_all_gather``, module/base.py, ``copy_into_buffer(...,
local_chunk=True)``); TE makes that copy of X in the forward as well, which tpsim does not charge ([M/p, K]
per ring). The ring's sends are timed as NCCL sends (``simulator.collectives``: the base latency, 8 us, and
the pipeline start-up of its first MiB at one channel's 20 GB/s, 52 us, before the bytes), where TE moves
them with the copy engine (``use_ce``), which has no NCCL channel pipeline: on proj's thin chunks those
start-ups are what the ring exposes. The chunked GEMMs are p times thinner, and the shape model times them so.
"""

from __future__ import annotations

from simulator.algorithms.base import LinearNames
from simulator.ir.builder import ScheduleBuilder
from simulator.ir.ops import Gemm, Recv, Reduce, Send, Slice, Wait

__all__ = ["pipelined_reduce_forward", "ring_exchange", "ring_exchange_dgrad", "ring_exchange_forward"]


def ring_exchange(b: ScheduleBuilder, p: int, r: int, shard: str, w: str, out: str, m: int, k: int, cols: int,
                  trans_b: bool = False, keep: str | None = None) -> None:
    """Rank r's ``out`` [m, cols] = all_gather(``shard``) ``w`` (``w``^T with ``trans_b``), the gather as a ring
    of sends beside p chunk GEMMs; ``keep``: also copy each shard into that [m, k] buffer (the gathered
    tensor, for a later GEMM)."""
    rows = m // p
    b.buffer(r, out, (m, cols))
    chunk = b.buffer(r, f"{out}_chunk", (rows, cols))
    if keep is not None:
        b.buffer(r, keep, (m, k))
    held = shard
    for t in range(p):
        own = (r + t) % p
        more = t < p - 1
        if more:
            nxt = b.buffer(r, f"{shard}_ring{t % 2}", (rows, k))
            b.emit(r, Send(peer=(r - 1) % p, buf=held, handle=f"{out}.s{t}"))
            b.emit(r, Recv(peer=(r + 1) % p, buf=nxt, handle=f"{out}.r{t}"))
        b.emit(r, Gemm(out=chunk, a=held, b=w, trans_b=trans_b))
        # TE's GEMM writes its chunk into the rows of the whole output (userbuffers): no pass of its own
        b.emit(r, Slice(out=out, src=chunk, out_rows=(own * rows, (own + 1) * rows), in_place=True))
        if keep is not None:  # TE copies its own shard into the userbuffer; the ring receives the rest there
            b.emit(r, Slice(out=keep, src=held, out_rows=(own * rows, (own + 1) * rows), in_place=t > 0))
        if more:
            b.emit(r, Wait(f"{out}.s{t}"))
            b.emit(r, Wait(f"{out}.r{t}"))
            held = nxt


def ring_exchange_forward(b: ScheduleBuilder, p: int, r: int, lin: LinearNames, cols: int) -> None:
    """Rank r's Y [M, cols] = all_gather(X) W_r (a column-parallel forward, ``qkv_fprop`` / ``fc1_fprop``)."""
    ring_exchange(b, p, r, lin.x, lin.w, lin.y, lin.m, lin.k, cols)


def ring_exchange_dgrad(b: ScheduleBuilder, p: int, r: int, lin: LinearNames, dy: str, dx: str, cols: int) -> None:
    """Rank r's dX [M, cols] = all_gather(dY) W_r^T (a row-parallel backward, ``proj_dgrad`` / ``fc2_dgrad``),
    the gathered dY kept in ``<dy>_full`` for the weight gradient."""
    ring_exchange(b, p, r, dy, lin.w, dx, lin.m, lin.n, cols, trans_b=True, keep=f"{dy}_full")


def pipelined_reduce_forward(b: ScheduleBuilder, p: int, r: int, lin: LinearNames, group: str, sms: int) -> None:
    """Rank r's shard of Y = reduce_scatter(X_r W_r), as p chunk GEMMs each reduced onto its owner beside the
    next chunk's GEMM, each reduce holding ``sms`` SMs (TE's ``num_sm``)."""
    rows = lin.m // p
    b.buffer(r, lin.y, (rows, lin.n))
    x = b.buffer(r, f"{lin.x}_rows", (rows, lin.k // p))
    for j in range(p):
        part = b.buffer(r, f"{lin.y}_part{j % 2}", (rows, lin.n))
        # TE's GEMM reads the chunk's rows of X where they lie (split_overlap_rs): no pass of its own
        b.emit(r, Slice(out=x, src=lin.x, src_rows=(j * rows, (j + 1) * rows), in_place=True))
        b.emit(r, Gemm(out=part, a=x, b=lin.w))
        b.emit(r, Reduce(group=group, root=j, buf=part, out=lin.y, handle=f"{lin.y}.rd{j}", sms=sms))
        if j > 0:  # part{(j+1) % 2} is written next: its reduce (chunk j - 1) must be done
            b.emit(r, Wait(f"{lin.y}.rd{j - 1}"))
    b.emit(r, Wait(f"{lin.y}.rd{p - 1}"))

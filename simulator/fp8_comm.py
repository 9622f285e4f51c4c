"""What Transformer Engine's FP8 linears put on the wire: the gathers of their operands, in FP8.

Under ``--dtype fp8`` (``simulator.fp8``) the schedule stays the bfloat16 plan's, but with sequence
parallelism Transformer Engine (TE) quantises a column-parallel linear's input and a row-parallel linear's
output gradient on the rank's shard and all-gathers the FP8 bytes (``simulator.fp8_cost`` charges those
casts on the shard), where a bf16 plan gathers bf16. Read from TE at the versions the published runs used
(v1.8 for NeMo 24.07, commit 3ec998e; v2.9 for Megatron-Bridge 25.11, 70f5366; v2.15 for 26.04.01, 42b8400):

- forward, the input of QKV and FC1 (``LayerNormLinear``): v1.8 ``module/layernorm_linear.py`` lines
  126 (the norm writes ``torch.uint8``) and 157 (``gather_along_first_dim(ln_out)``, FP8); v2.9 lines
  252-264 and v2.15 lines 273-285: ``quantizer.set_usage(rowwise=True, columnwise=False)``, then
  ``gather_along_first_dim(..., quantizer=quantizer)``: the row-wise FP8 data under delayed and current
  scaling (``_all_gather_fp8``, v2.9 ``distributed.py`` line 935: "we cannot directly gather the transposed
  fp8 tensor"), the row-wise MXFP8 data and its E8M0 scales under MXFP8 (``_all_gather_mxfp8``, line 1524).
- backward, the same input gathered again for the weight gradient: v1.8 line 444 (``ln_out``, kept in FP8);
  v2.9 lines 654-673, v2.15 710-729: row-wise FP8 (transposed after the gather on Hopper), or under MXFP8
  the column-wise copy only ("wgrad GEMM requires input with column-wise usage").
- backward, a row-parallel linear's (proj's, FC2's) output gradient: v1.8 ``module/base.py``
  ``grad_output_preprocess`` lines 677-689 (cast to ``torch.uint8``, then gather); v2.9 ``module/linear.py``
  line 569 (v2.15 line 662) sets both usages and ``grad_output_preprocess`` (v2.9 ``base.py`` line 1188)
  gathers with that quantizer: one FP8 copy under delayed and current scaling (row-wise only, as above),
  both MXFP8 copies (row-wise for the input gradient, column-wise for the weight gradient, each with its
  scales: ``_all_gather_mxfp8`` lines 1524 and 1547). Under ``--tp-comm-overlap`` userbuffers gathers the
  row-wise copy and then the column-wise one in a second gather (v2.9 ``linear.py`` lines 777-803): the
  same bytes.
- ``--tp-comm-overlap``'s rings (``simulator.algorithms.tp_comm_overlap``): TE allocates FP8
  userbuffers for ``qkv_fprop``, ``fc1_fprop``, ``proj_dgrad`` and ``fc2_dgrad`` under an FP8 recipe
  (``layers_all_gather_overlap``, v1.8 ``base.py`` line 88, v2.9 line 289: "AllGather buffers use fp8 when
  using fp8 recipe"), so the chunks sent round the rings are FP8 too. The backward ring sends dY's
  row-wise copy; under MXFP8 the wgrad's column-wise copy follows in a second gather on the ring's streams
  (``bulk_overlap_ag_with_external_gemm``, TE ``module/linear.py`` at d0067d0): here the ring's chunks carry
  both copies, the same bytes.
- the per-tensor scale is not sent: ``_all_gather_fp8`` gives the output the local ``_scale_inv``
  ("Assume scaling factors are identical across ranks", v2.9 ``distributed.py`` line 963; current
  scaling all-reduces the amax over the group first, a few bytes: not counted). The reduce-scatters
  and all-reduces stay bf16 (TE reduces the GEMMs' bf16 outputs).

So the rule, applied to the IR rather than to named layers: an all-gather's output, or a received
block, that the rank reads only as FP8 GEMM operands (the activation of a forward or the output gradient
of an input-gradient GEMM, row-wise; either operand of a weight-gradient GEMM, column-wise) or sends on
(the ring), moves ``FP8_COPY_BYTES`` per element under delayed and current scaling, and ``FP8_COPY_BYTES +
MXFP8_SCALE_BYTES`` per element for each of the copies its readers need under MXFP8; a send carries what
its matching receive decides. A whole buffer copied into rows of another (the backward ring's kept gather of
dY, ``ring_exchange_dgrad``) is read as that buffer's readers read it. A buffer with any other reader (a
weight operand, a norm, any other copy) keeps the schedule's dtype, as do broadcasts (the grid algorithms, which TE does not run) and everything outside
an fp8 plan's compute model (the LM head, ``simulator.training.step``).
"""

from __future__ import annotations

import math

from simulator.fp8_cost import check_recipe, fp8_copy_bytes, gemm_role
from simulator.ir.ops import AllGather, Gemm, Op, Recv, Send, Slice
from simulator.ir.schedule import Schedule

__all__ = ["ROWWISE", "COLUMNWISE", "FORWARDED", "OTHER", "operand_use", "fp8_wire_bytes", "Fp8Wire"]

ROWWISE, COLUMNWISE, FORWARDED, OTHER = 1, 2, 4, 8
"""How a rank reads a received buffer: a row-wise FP8 operand, a column-wise one, sent on, anything else."""


def operand_use(op: Op, buf: str) -> int:
    """How ``op`` reads ``buf`` (``ROWWISE`` ... ``OTHER``): a forward's activation or an input gradient's
    output gradient is read row-wise, a weight gradient's operands column-wise, a weight as ``OTHER``."""
    if isinstance(op, Send):
        return FORWARDED
    if not isinstance(op, Gemm) or (op.accumulate and op.out == buf):
        return OTHER
    if gemm_role(op) == "wgrad":
        return COLUMNWISE
    return ROWWISE if buf == op.a and buf != op.b else OTHER


def fp8_wire_bytes(numel: int, uses: int, recipe: str) -> int | None:
    """Bytes TE moves for a buffer of ``numel`` elements read as ``uses`` (module doc); None: not FP8.

    >>> fp8_wire_bytes(1024, ROWWISE | COLUMNWISE, "delayed"), fp8_wire_bytes(1024, ROWWISE | COLUMNWISE, "mxfp8")
    (1024, 2112)
    """
    if not uses or uses & OTHER:
        return None
    if recipe != "mxfp8":  # one copy on the wire, transposed after the gather where a reader needs it
        return numel * fp8_copy_bytes(recipe)
    copies = max(1, bool(uses & ROWWISE) + bool(uses & COLUMNWISE))
    return math.ceil(numel * copies * fp8_copy_bytes(recipe))


class Fp8Wire:
    """The bytes of ``schedule``'s communication ops that TE runs in FP8 under ``recipe`` (module doc),
    each rank scanned once when first asked."""

    def __init__(self, schedule: Schedule, devices: list[dict], recipe: str | None):
        self.schedule, self.devices, self.recipe = schedule, devices, recipe
        self._scans: dict[int, tuple[dict[int, int], dict[int, list[int | None]]]] = {}
        self._sent: dict[int, dict[int, list[int]]] = {}  # rank -> peer -> the steps of its sends there

    def nbytes(self, rank: int, step: int, default: int) -> int:
        """The wire bytes of ``rank``'s op at ``step``: its FP8 bytes, else ``default`` (the schedule's)."""
        op = self.schedule.programs[rank][step]
        if isinstance(op, Send):
            steps = self._sends(rank).get(op.peer, [])
            received = self._scan(op.peer)[1].get(rank, [])
            n = steps.index(step)
            found = received[n] if n < len(received) else None
        else:
            found = self._scan(rank)[0].get(step)
        return default if found is None else found

    def _sends(self, rank: int) -> dict[int, list[int]]:
        if rank not in self._sent:
            sent: dict[int, list[int]] = {}
            for step, op in enumerate(self.schedule.programs[rank]):
                if isinstance(op, Send):
                    sent.setdefault(op.peer, []).append(step)
            self._sent[rank] = sent
        return self._sent[rank]

    def _scan(self, rank: int) -> tuple[dict[int, int], dict[int, list[int | None]]]:
        """(step -> FP8 bytes of ``rank``'s all-gathers and receives, src -> each receive's FP8 bytes or None
        in issue order): one pass backwards, each buffer's readers gathered until it is written again."""
        if rank in self._scans:
            return self._scans[rank]
        program, buffers = self.schedule.programs[rank], self.schedule.buffers[rank]
        recipe = check_recipe(self.devices[rank], self.recipe)
        uses: dict[str, int] = {}
        own: dict[int, int] = {}
        received: dict[int, list[int | None]] = {}
        for step in range(len(program) - 1, -1, -1):
            op = program[step]
            copy = isinstance(op, Slice) and op.src_rows is None and op.src_cols is None
            into = uses.get(op.out, 0) if isinstance(op, Slice) else 0
            for buf in op.writes():
                found = uses.pop(buf, 0)
                if isinstance(op, (AllGather, Recv)):
                    wire = fp8_wire_bytes(buffers[buf].numel, found, recipe)
                    if wire is not None:
                        own[step] = wire
                    if isinstance(op, Recv):
                        received.setdefault(op.peer, []).append(wire)
            for buf in op.reads():
                use = into if copy and into and buf == op.src else operand_use(op, buf)
                uses[buf] = uses.get(buf, 0) | use
            if isinstance(op, Slice) and (op.out_rows is not None or op.out_cols is not None):
                uses[op.out] = into  # a copy into part of it: its other parts' readers are still to come
        for found in received.values():
            found.reverse()
        self._scans[rank] = (own, received)
        return self._scans[rank]

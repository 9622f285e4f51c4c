"""The test an nccl-tests table is, read off its own columns when nothing in the log names it.

A table copied from a web page, an issue thread or a notebook often keeps the header and the rows and
drops the job's command line, and its file is named after the cluster, not the test. The columns still
say which test printed them (nccl-tests ``src/common.cu`` prints ``size count type redop root``, each
test's ``*GetCollByteCount`` in ``src/*.cu`` sets the count):

- ``size / (count x bytes per element)`` is 1 where every rank holds the whole buffer (all_reduce,
  broadcast, reduce) and the rank count n where the printed count is one rank's share (all_gather and
  reduce_scatter print ``count / n``; so do alltoall, gather and scatter);
- ``root`` is -1 (or absent in older versions) for the rootless tests and the root rank for broadcast
  and reduce;
- ``redop`` is a reduction (``sum``, ``prod``, ``max``, ``min``, ``avg``, ``all``) for all_reduce,
  reduce_scatter and reduce, and ``none`` (or absent) for the others.

Together these tell tpsim's five tests apart; the one pair they cannot is all_gather and alltoall (both
``none``, no root, ``count / n``), so such a table reads as all_gather and says so. Anything else
(sendrecv's one buffer without a reduction, gather's and scatter's root with ``count / n``, rows that
disagree, a type nccl-tests does not print) reads as nothing, and the caller asks for ``--op``.

    >>> row = lambda size, count, redop, root: (size, count, "float", redop, root)
    >>> op_from_columns([row(8388608, 131072, "none", -1), row(16777216, 262144, "none", -1)])
    ('all_gather', 16, "columns: redop none, no root, count = size / 16 ranks (all_gather's layout; alltoall's too)")
    >>> op_from_columns([row(1048576, 262144, "sum", -1)])[:2]
    ('all_reduce', None)
"""

from __future__ import annotations

__all__ = ["op_from_columns", "BYTES_PER_ELEMENT"]

BYTES_PER_ELEMENT = {"int8": 1, "uint8": 1, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8, "half": 2,
                     "float": 4, "double": 8, "bfloat16": 2, "f8e4m3": 1, "f8e5m2": 1}
"""nccl-tests' type names (``test_typenames`` in ``src/common.cu``) and their sizes."""

_WHOLE_BUFFER = {(True, False): "all_reduce", (True, True): "reduce", (False, True): "broadcast"}
_SHARED_BUFFER = {True: "reduce_scatter", False: "all_gather"}


def op_from_columns(rows) -> tuple[str, int | None, str] | None:
    """``(op, ranks, why)`` that the rows' ``(size, count, type, redop, root)`` columns pin down, ranks where
    the count column gives them (None for whole-buffer tests), or None where they pin nothing (module doc)."""
    rows = [row for row in rows if row[0] > 0 and row[1] > 0]
    layouts = {_layout(*row) for row in rows}
    if len(layouts) != 1 or None in layouts:
        return None
    share, reducing, rooted = layouts.pop()
    reduction = f"redop {'/'.join(sorted({row[3] for row in rows}))}" if reducing else "redop none"
    root = "a root" if rooted else "no root"
    if share == 1:
        op = _WHOLE_BUFFER.get((reducing, rooted))  # None: sendrecv's layout (no reduction, no root)
        return None if op is None else (op, None, f"columns: {reduction}, {root}, count = size ({op}'s layout)")
    if rooted:  # gather's or scatter's layout
        return None
    op = _SHARED_BUFFER[reducing]
    also = "" if reducing else "; alltoall's too"
    return op, share, f"columns: {reduction}, {root}, count = size / {share} ranks ({op}'s layout{also})"


def _layout(size: int, count: int, type_: str, redop: str | None, root: int | None):
    """``(size / count / element size, reducing, rooted)`` of one row, None where it fits no whole share."""
    width = BYTES_PER_ELEMENT.get(type_)
    if width is None or size % (count * width):
        return None
    return size // (count * width), redop not in (None, "none"), root is not None and root >= 0

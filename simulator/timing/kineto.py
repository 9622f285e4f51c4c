"""A communication op's trace ``args`` under the PyTorch profiler's (Kineto's) names, so tools read tpsim's traces.

The PyTorch profiler describes every collective it records (``record_param_comms``, and the GPU kernel
it launches) with a fixed set of argument names, which trace-analysis tools (Holistic Trace Analysis,
Chakra's trace linker, torch.profiler's own trace validator) read: the keys of ``KINETO_KEYS`` are
those names, as PyTorch defines them (torch/csrc/profiler/util.h: ``kCommsName`` = "Collective name",
``kDtype``, ``kInMsgNelems``, ``kOutMsgNelems``, ``kGroupSize``, ``kProcessGroupName``, ``kGroupRanks``,
``kRank``, ``kP2pSrc``, ``kP2pDst``). Their values follow PyTorch's too: ``Collective name`` as
ProcessGroupNCCL records it (``allreduce``, ``allgather``, ``reduce_scatter``, ``broadcast``,
``reduce``, ``send``, ``recv``: the names of its list forms; its single-tensor forms record
``_allgather_base`` and ``_reduce_scatter_base``, and tpsim names the operation, whichever call the
executor makes), ``dtype`` as c10 prints a scalar type (``Float``, ``BFloat16``),
element counts per rank, and the group's global ranks as one string (``"[0, 1, 2, 3]"``).

Both tpsim traces use it: the simulator's (``simulator.timing.trace.simulated_trace``) and the
executor's (``executor.measure.chrome_trace``), so a simulated and a measured run carry the same
arguments for the same op. Send and receive use the world as their group, as ``dist.send`` does.

Example::

    >>> from simulator.algorithms.registry import build_schedule
    >>> from simulator.workloads.workload import Workload
    >>> s = build_schedule("1d", Workload.mlp(8, 4), passes="fwd", gpus=2)  # one all-reduce of Y [8, 4]
    >>> [kineto_args(s, 0, op) for op in s.programs[0] if op.kind == "all_reduce"]
    [{'Collective name': 'allreduce', 'dtype': 'Float', 'In msg nelems': 32, 'Out msg nelems': 32, \
'Group size': 2, 'Process Group Name': 'world', 'Process Group Ranks': '[0, 1]', 'Rank': 0}]
"""

from __future__ import annotations

__all__ = ["KINETO_KEYS", "COLLECTIVE_NAMES", "DTYPE_NAMES", "kineto_args"]

KINETO_KEYS = ("Collective name", "dtype", "In msg nelems", "Out msg nelems", "Group size", "Process Group Name",
               "Process Group Ranks", "Rank", "Src Rank", "Dst Rank")
"""Every argument name this module writes (the first five are what torch.profiler's validator requires)."""

COLLECTIVE_NAMES = {"all_reduce": "allreduce", "all_gather": "allgather", "reduce_scatter": "reduce_scatter",
                    "broadcast": "broadcast", "reduce": "reduce", "send": "send", "recv": "recv"}
"""IR op kind -> ``Collective name`` (ProcessGroupNCCL's names for these calls)."""

DTYPE_NAMES = {"float32": "Float", "float64": "Double", "bfloat16": "BFloat16", "float16": "Half"}
"""IR dtype -> c10's name of the scalar type."""




def kineto_args(schedule, rank: int, op) -> dict:
    """The Kineto arguments of ``op``, the op of ``rank`` in ``schedule``; {} for an op that communicates nothing."""
    kind = op.kind
    if kind not in COLLECTIVE_NAMES:
        return {}
    buffers = schedule.buffers[rank]
    name, ranks = ("world", tuple(range(schedule.world_size))) if kind in ("send", "recv") else (
        op.group, tuple(schedule.groups[op.group]))
    inp, out = (op.inp, op.out) if kind in ("all_gather", "reduce_scatter") else (op.buf, op.buf)
    counts = (buffers[inp].numel, buffers[out].numel)
    dtype = buffers[inp].dtype
    args = {"Collective name": COLLECTIVE_NAMES[kind], "dtype": DTYPE_NAMES.get(dtype, dtype),
            "In msg nelems": counts[0], "Out msg nelems": counts[1], "Group size": len(ranks),
            "Process Group Name": name, "Process Group Ranks": "[" + ", ".join(map(str, ranks)) + "]", "Rank": rank}
    if kind == "send":
        args["Src Rank"], args["Dst Rank"] = rank, op.peer
    elif kind == "recv":
        args["Src Rank"], args["Dst Rank"] = op.peer, rank
    return args

"""What a run holds in memory, estimated from the schedule before any rank starts, and the refusal when
it cannot fit.

Each rank holds its declared buffers (``Schedule.buffers``, in their own element type) and, while it
checks its output blocks one at a time, the float64 reference of its largest block
(``executor.reference_memory.peak_bytes``). That sum is a lower bound (collective and gemm temporaries, the
process itself come on top). With gloo every rank lives on this host, so the ranks' sum is compared
with the host's available memory (``simulator.limits.available_memory_bytes``); with NCCL both live
on the rank's GPU, so each rank's need is compared with its GPU's free memory, read in a forked probe
(``executor.launch``: this process must not initialise CUDA before it forks the ranks).

Example: 1d on 2 ranks, gemm M = K = N = 100,000 in float32 declares 2 x 80 GB of buffers; ``tpsim run``
says so in one line instead of a rank's MemoryError or the out-of-memory killer.
"""

from __future__ import annotations

from executor import pipeline_check
from executor.reference_memory import peak_bytes
from simulator.errors import InputError
from simulator.ir.schedule import Schedule
from simulator.limits import binary_size, check_memory
from simulator.workloads.workload import Workload

__all__ = ["rank_bytes", "check_run_memory"]

_HINT = "run smaller sizes on the same grid, or fewer ranks on this host"


def rank_bytes(schedule: Schedule, workload: Workload | None = None) -> list[int]:
    """Per rank, at least what a run holds at once: its declared buffers and its largest block's reference."""
    workload = workload or Workload.from_dict(schedule.workload)
    if pipeline_check.is_pipelined(schedule):  # every rank holds the whole step's reference
        return [sum(spec.nbytes for spec in declared.values()) + pipeline_check.reference_bytes(schedule)
                for declared in schedule.buffers]
    reference = [0] * schedule.world_size
    for block in schedule.outputs:
        if 0 <= block.rank < schedule.world_size:
            need = peak_bytes(workload, block.tensor, block.rows, block.cols, passes=schedule.passes)
            reference[block.rank] = max(reference[block.rank], need)
    return [sum(spec.nbytes for spec in declared.values()) + reference[rank]
            for rank, declared in enumerate(schedule.buffers)]


def _gpu_free_bytes(count: int) -> list[int] | None:
    """Free memory of the first ``count`` CUDA devices, from a forked probe; None where it cannot say."""
    from executor.launch import _in_a_fork  # the fork-safe probe that visible_gpus uses

    def probe() -> str:
        import torch

        return " ".join(str(torch.cuda.mem_get_info(i)[0]) for i in range(count))

    text = _in_a_fork(probe).split()
    return [int(value) for value in text] if len(text) == count else None


def check_run_memory(schedule: Schedule, backend: str) -> None:
    """InputError, naming the need and the memory, for a run of ``schedule`` that cannot fit (module doc)."""
    needs = rank_bytes(schedule)
    what = (f"running {schedule.algorithm} {list(schedule.grid)} {Workload.from_dict(schedule.workload).label()} "
            f"{schedule.dtype}")
    if backend != "nccl":
        check_memory(sum(needs), f"{what} on {len(needs)} local ranks", _HINT,
                     f" (the largest rank {binary_size(max(needs))}: its buffers and its largest output "
                     f"block's float64 reference)")
        return
    free = _gpu_free_bytes(len(needs))
    if free is None:
        return
    for rank, (need, available) in enumerate(zip(needs, free)):
        if need > available:
            raise InputError(f"{what}: rank {rank} needs at least {binary_size(need)} on its GPU (its buffers "
                             f"and its largest output block's float64 reference), more than GPU {rank}'s "
                             f"{binary_size(available)} free; {_HINT}")

"""What `tpsim bench` holds in memory, from its cases' declared buffers, and the refusal when it cannot fit.

Bench cases run one after another, each rank allocating the buffers its case declares (``executor.bench``)
and dropping them before the next, so the need is the largest case's buffers summed over the ranks that
share this host (gloo: all of them). It is a lower bound, checked before torch is imported: ``--gemm-shapes
3000000x3000000x3000000`` (three float32 matrices of 36 TB each) used to end in a rank's allocator
traceback. With NCCL the buffers live on the ranks' GPUs, which ``tpsim bench`` does not probe here.

Example: ``--gemm-shapes 100000x100000x100000`` in float32 holds A, B and C of 40 GB each: 111.8 GiB.
"""

from __future__ import annotations

from simulator.ir.schedule import Schedule
from simulator.limits import binary_size, check_memory

__all__ = ["case_bytes", "describe", "check_bench_memory"]


def case_bytes(case: Schedule) -> int:
    """Bytes of every buffer ``case`` declares, over all its ranks."""
    return sum(spec.nbytes for declared in case.buffers for spec in declared.values())


def describe(case: Schedule) -> str:
    """"gemm 3000000x3000000x3000000 float32 on 1 rank", "all_reduce 1.0 GiB float32 on 8 ranks": what a case
    measures (its ``options["bench"]``, ``executor.bench_cases``)."""
    point = case.options["bench"]
    what = (f"{point['m']}x{point['k']}x{point['n']}" if point["op"] == "gemm"
            else binary_size(point["nbytes"]))
    ranks = sum(1 for declared in case.buffers if declared)
    return f"{point['op']} {what} {point['dtype']} on {ranks} rank{'' if ranks == 1 else 's'}"


def check_bench_memory(cases: list[Schedule], backend: str) -> None:
    """InputError naming the largest case and its need when it cannot fit in this host's available memory
    (gloo); nothing for NCCL (module doc)."""
    if backend == "nccl" or not cases:
        return
    largest = max(cases, key=case_bytes)
    check_memory(case_bytes(largest), f"bench {describe(largest)}", "measure smaller sizes or shapes",
                 " (its buffers, summed over its ranks)")

"""What decides whether `tpsim run` can start, checked before torch is imported (about 4 s of CPU here).

A refusal of bad input should cost what reading the input costs: the flags' values, the schedule
(built or read from ``--schedule``), the rank count against the schedule's, the memory the ranks would
hold on this host (``executor.memory``, gloo) and, for ``--backend nccl``, whether this host has a
GPU per rank at all. ``check_run_flags`` and ``check_world_size`` are what ``executor.run_rank.RunOptions``
and ``executor.launch.check_job`` check again (for callers that build those directly);
``check_nccl_host`` counts the NVIDIA GPUs the driver shows, which needs no torch: a host without
them cannot run NCCL whatever torch is installed. What only torch can tell (a CPU-only torch build on a
GPU host, the free GPU memory, the host's gemm rate for the time estimate) is checked after, still
before any rank starts.
"""

from __future__ import annotations

import argparse
import os
import re
from typing import TYPE_CHECKING

from executor.faults import Fault
from simulator.errors import InputError
from simulator.limits import check_seed, check_timeout, check_tolerance

if TYPE_CHECKING:
    from simulator.ir.schedule import Schedule

__all__ = ["check_run_flags", "check_world_size", "host_nvidia_gpus", "check_nccl_host"]

NVIDIA_GPUS_DIR = "/proc/driver/nvidia/gpus"
"""One entry per GPU the NVIDIA kernel driver has bound (Linux); absent without the driver."""
DEVICES_DIR = "/dev"
"""Where the driver's ``nvidiaN`` device files are, one per GPU."""


def check_run_flags(args: argparse.Namespace) -> Fault | None:
    """InputError for a flag value `tpsim run` cannot start with; the parsed ``--inject-fault``, if any."""
    if args.out is not None and args.out == args.trace:
        raise InputError(f"--out and --trace name the same file {args.out!r}")
    check_seed(args.seed)
    if args.tolerance is not None:
        check_tolerance(args.tolerance)
    check_timeout(args.timeout)
    if args.warmup < 0:
        raise InputError(f"--warmup must be >= 0, got {args.warmup}")
    if args.iters < 1:
        raise InputError(f"--iters must be >= 1, got {args.iters}")
    return Fault.parse(args.inject_fault) if args.inject_fault else None


def check_world_size(schedule: Schedule, nproc: int) -> None:
    """InputError unless ``nproc`` ranks are the schedule's ranks (one process per rank)."""
    if schedule.world_size != nproc:
        raise InputError(f"--nproc {nproc} but the schedule ({schedule.algorithm} on grid {list(schedule.grid)}) "
                         f"has {schedule.world_size} ranks")


def host_nvidia_gpus(folder: str | None = None, devices: str | None = None) -> int:
    """NVIDIA GPUs this process may use by what the driver shows: the GPUs it lists in ``folder``
    (``/proc/driver/nvidia/gpus``) or its ``/dev/nvidiaN`` device files, whichever are more (a container
    may show only the devices), narrowed by ``CUDA_VISIBLE_DEVICES``. An upper bound of what CUDA will
    see: an entry there may name a device that does not exist."""
    present = 0
    for where, counted in ((folder or NVIDIA_GPUS_DIR, lambda name: True),
                           (devices or DEVICES_DIR, lambda name: re.fullmatch(r"nvidia[0-9]+", name) is not None)):
        try:
            present = max(present, sum(1 for name in os.listdir(where) if counted(name)))
        except OSError:  # no driver loaded, or not shown here
            pass
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return present
    listed = [item for item in visible.split(",") if item.strip()]
    return min(present, len(listed))


def check_nccl_host(nproc: int) -> None:
    """InputError when this host cannot give ``nproc`` NCCL ranks a GPU each, by the driver's own lists."""
    gpus = host_nvidia_gpus()
    if gpus < nproc:
        where = "CUDA_VISIBLE_DEVICES, " if "CUDA_VISIBLE_DEVICES" in os.environ else ""
        raise InputError(f"--backend nccl needs one CUDA GPU per rank: {nproc} ranks but {gpus} NVIDIA GPUs on this "
                         f"host (by {where}{NVIDIA_GPUS_DIR} and {DEVICES_DIR}/nvidiaN); use --backend gloo")

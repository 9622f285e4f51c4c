"""Defaults the command line reads off what the user already said: a GPU count from the topology or ``--nproc``.

A topology names its GPUs (``dgx-h100:4`` is 32), so ``--gpus`` need not repeat it; a schedule names
its ranks, so ``tpsim run --nproc`` need not either. Each default applies only where the user left
the flag out, and a default that does not fit (``--algo 2d`` on 8 GPUs: 8 is no square) is one line
saying where the number came from and what to give instead. Given values are never changed: a
contradiction (``--gpus 64`` on a 32-GPU topology, ``--nproc 4`` for an 8-rank schedule) stays the
error the command gives it.

Example::

    >>> from types import SimpleNamespace
    >>> from topologies import load_topology
    >>> args = SimpleNamespace(gpus=None, grid=None, schedule=None, algo="megatron", topology="dgx-a100:2")
    >>> default_schedule_gpus(args, topology_gpu_count(load_topology("dgx-a100:2")), "the topology dgx-a100:2")
    >>> args.gpus
    16
"""

from __future__ import annotations

import argparse

from simulator.errors import InputError

__all__ = ["topology_gpu_count", "default_gpus", "default_schedule_gpus"]


def topology_gpu_count(G) -> int:
    """The number of GPU nodes of a topology graph."""
    return sum(1 for _, kind in G.nodes(data="kind") if kind == "gpu")


def default_gpus(args: argparse.Namespace, G) -> None:
    """``args.gpus`` = every GPU of the topology ``G`` where ``--gpus`` was left out (``tpsim predict``)."""
    if args.gpus is None:
        args.gpus = topology_gpu_count(G)


def default_schedule_gpus(args: argparse.Namespace, count: int, source: str) -> None:
    """Where a schedule is to be generated with neither ``--gpus`` nor ``--grid``, set ``args.gpus`` to
    ``count`` (``source`` says where it came from: "the topology dgx-h100:4", "--nproc"); InputError when
    the algorithm has no single grid on that many ranks, naming the flags that would settle it."""
    if args.schedule is not None or args.algo is None or args.gpus is not None or args.grid is not None or count < 1:
        return
    from simulator.algorithms.registry import algorithm_class

    cls = algorithm_class(args.algo)
    grids = cls.legal_grids(count)
    if len(grids) != 1:
        shown = " or ".join(",".join(map(str, g)) for g in grids)
        fit = (f"{len(grids)} grids fit: give --grid {shown}" if grids else
               f"{cls.name} needs {cls.grid_rule}: give --gpus P or --grid Q,Q,D")
        raise InputError(f"--algo {args.algo} without --gpus or --grid takes {count} ranks from {source}; {fit}")
    args.gpus = count

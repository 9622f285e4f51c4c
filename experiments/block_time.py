"""The simulated time of one transformer block under one arrangement: what every reproduction asks tpsim.

``Block`` names a configuration (algorithm, grid or GPU count, sizes, pass, dtype, topology) and
``block_time`` simulates it exactly as ``tpsim simulate`` does (the same schedule generator, topology
preset and simulator, in this process); ``Block.command`` is that ``tpsim simulate`` command, which a
reproduction's CSV records so every figure can be re-run by hand. ``paper_code=True`` times the
schedule as the paper's own implementation ran it (``experiments.paper_code``); no tpsim command
builds that schedule, so its command is the reproduction script's.

Topologies are built once per name and cached, with their routers, since a reproduction times many
blocks on one machine. ``register_topology`` adds a graph no preset name builds (a variant a
reproduction uses to test a suspected cause, such as fewer NICs per server) under a name of its own.

Example::

    >>> b = Block("1d", 8, batch=8, seq=128, hidden=512, heads=8, topology="dgx-a100")
    >>> b.command()
    'tpsim simulate --algo 1d --gpus 8 --topology dgx-a100 --workload transformer --batch 8 --seq 128 \
--hidden 512 --heads 8 --pass both --dtype bfloat16'
    >>> block_time(b) > 0
    True
"""

from __future__ import annotations

from dataclasses import dataclass

from experiments.paper_code import without_depth_all_reduce
from simulator.algorithms.registry import build_schedule
from simulator.network.routes import default_router
from simulator.timing.simulation import simulate
from simulator.workloads.workload import Workload
from topologies.presets import build_preset

__all__ = ["Block", "block_time", "register_topology", "topology"]


@dataclass(frozen=True)
class Block:
    """One transformer block, arranged one way on one topology."""

    algorithm: str
    layout: int | tuple[int, int, int]
    """GPU count for 1d and 1d-sp, the [q, q, d] grid for the others."""
    batch: int
    seq: int
    hidden: int
    heads: int
    topology: str
    passes: str = "both"
    dtype: str = "bfloat16"
    ffn: int | None = None
    paper_code: bool = False
    placement: str | None = None

    @property
    def gpus(self) -> int:
        """Ranks the arrangement uses."""
        if isinstance(self.layout, int):
            return self.layout
        q1, q2, d = self.layout
        return q1 * q2 * d

    def label(self) -> str:
        """``summa25d [4,4,4]``, ``1d [64]``."""
        grid = [self.layout] if isinstance(self.layout, int) else list(self.layout)
        return f"{self.algorithm} [{','.join(map(str, grid))}]"

    def command(self) -> str:
        """The ``tpsim simulate`` command that times this block (paper-code blocks have none of their own)."""
        where = (f"--gpus {self.layout}" if isinstance(self.layout, int)
                 else f"--grid {','.join(map(str, self.layout))}")
        parts = [f"tpsim simulate --algo {self.algorithm} {where} --topology {self.topology}",
                 f"--workload transformer --batch {self.batch} --seq {self.seq} --hidden {self.hidden}",
                 f"--heads {self.heads}"]
        if self.ffn is not None:
            parts.append(f"--ffn {self.ffn}")
        parts.append(f"--pass {self.passes} --dtype {self.dtype}")
        if self.placement is not None:
            parts.append(f"--placement {self.placement}")
        return " ".join(parts)


_TOPOLOGIES: dict[str, tuple] = {}


def register_topology(name: str, G) -> None:
    """Let blocks name ``G`` as ``name`` (a variant graph; presets need no registering)."""
    if name in _TOPOLOGIES and _TOPOLOGIES[name][0] is not G:
        raise ValueError(f"topology {name!r} is already registered to another graph")
    _TOPOLOGIES[name] = (G, default_router(G))


def topology(name: str):
    """The graph and router of a preset or registered name, built once."""
    if name not in _TOPOLOGIES:
        G = build_preset(name)
        _TOPOLOGIES[name] = (G, default_router(G))
    return _TOPOLOGIES[name]


def block_time(block: Block) -> float:
    """Simulated makespan of ``block`` in seconds (one block: multiply by the layers for a model)."""
    workload = Workload.transformer(block.batch, block.seq, block.hidden, block.heads, block.ffn, 0.0)
    grid = None if isinstance(block.layout, int) else tuple(block.layout)
    gpus = block.layout if isinstance(block.layout, int) else None
    schedule = build_schedule(block.algorithm, workload, block.passes, block.dtype, grid=grid, gpus=gpus)
    if block.paper_code:
        schedule = without_depth_all_reduce(schedule)
    G, router = topology(block.topology)
    result = simulate(schedule, G, block.placement, timeline=False, router=router)
    return result.makespan_s

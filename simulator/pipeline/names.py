"""Renaming one block's buffers for one (micro-batch, layer) of a pipeline, and re-addressing its ops.

A block buffer ``b`` of micro-batch i in layer l becomes ``b.m<i>.l<l>``; a weight (shared by the
micro-batches) ``b.l<l>``, and so does a weight gradient's sum over micro-batches. Block boundaries
are where layers meet: layer l + 1 in the same stage reads layer l's output, so its input ``X`` is
renamed to ``Y.m<i>.l<l>`` (matched block for block, ``BlockPieces.boundary``), and layer l reads its
output gradient ``dY`` from layer l + 1's ``dX.m<i>.l<l+1>``. The first block of a stage reads ``X`` from
its own buffer ``X.m<i>.l<l>`` (received, or the schedule input), the last its ``dY.m<i>.l<l>``.

Example, 1d on 2 ranks, layers 0-1 on one stage, micro-batch 3::

    layer 0: X -> X.m3.l0, Y -> Y.m3.l0, dY -> dX.m3.l1, Wqkv -> Wqkv.l0, H -> H.m3.l0
    layer 1: X -> Y.m3.l0, Y -> Y.m3.l1, dY -> dY.m3.l1, dX -> dX.m3.l1

Process groups become ``pp<r>.<group>`` (pipeline rank r) with every rank shifted by r x T, and a block's
own send/recv peers shift the same way.
"""

from __future__ import annotations

import dataclasses

from simulator.ir.ops import Local, Op, Recv, Send
from simulator.ir.schedule import BufferSpec

__all__ = ["LayerNames", "readdress"]

_BUFFER_FIELDS = ("out", "a", "b", "src", "buf", "inp")


class LayerNames:
    """The renaming of tensor-parallel rank t's block buffers for micro-batch ``mb`` in layer ``layer``."""

    def __init__(self, block, t: int, mb: int, layer: int, first_in_stage: bool, last_in_stage: bool):
        self.block, self.t = block, t
        self.map: dict[str, str] = {name: f"{name}.l{layer}" for name, _ in block.weights[t]}
        for x, y, dx, dy in block.boundary[t]:
            self.map[x] = self.act(x, mb, layer) if first_in_stage else self.act(y, mb, layer - 1)
            self.map[dy] = self.act(dy, mb, layer) if last_in_stage else self.act(dx, mb, layer + 1)
        self.suffix = f".m{mb}.l{layer}"

    @staticmethod
    def act(name: str, mb: int, layer: int) -> str:
        """Block buffer ``name`` of micro-batch ``mb`` in layer ``layer``."""
        return f"{name}.m{mb}.l{layer}"

    @staticmethod
    def weight(name: str, layer: int) -> str:
        """Block buffer ``name`` shared by every micro-batch of layer ``layer`` (a weight, a gradient's sum)."""
        return f"{name}.l{layer}"

    @staticmethod
    def base(name: str) -> str:
        """The block buffer a renamed one comes from (block buffers carry no dot)."""
        return name.partition(".")[0]

    def rename(self, name: str) -> str:
        """The pipeline's name of block buffer ``name``."""
        renamed = self.map.get(name)
        if renamed is None:
            if "." in name:
                raise AssertionError(f"block buffer {name!r} has a dot: renamed buffers would collide")
            renamed = self.map[name] = name + self.suffix
        return renamed

    def declared(self, op: Op) -> list[tuple[str, BufferSpec]]:
        """(pipeline name, spec) of every buffer ``op`` touches."""
        return [(self.rename(name), self.block.spec(self.t, name)) for name in {*op.reads(), *op.writes()}]


def readdress(op: Op, rename, r: int, tp: int) -> Op:
    """``op`` with its buffers renamed, its group moved to pipeline rank r and its peer shifted by r x tp."""
    changes = {}
    for name in _BUFFER_FIELDS:
        value = getattr(op, name, None)
        if isinstance(value, str):
            changes[name] = rename(value)
    if isinstance(op, Local):
        changes["inputs"] = tuple(rename(name) for name in op.inputs)
    group = getattr(op, "group", None)
    if group is not None:
        changes["group"] = f"pp{r}.{group}"
    if isinstance(op, (Send, Recv)):
        changes["peer"] = r * tp + op.peer
    return dataclasses.replace(op, **changes) if changes else op

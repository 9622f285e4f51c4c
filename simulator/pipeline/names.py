"""Renaming one block's buffers for one (micro-batch, layer) of a pipeline.

A block buffer ``b`` of micro-batch i in layer l becomes ``b.m<i>.l<l>``; a weight (shared by the
micro-batches) ``b.l<l>``, and so does a weight gradient's sum over micro-batches. Block boundaries
are where layers meet: layer l + 1 in the same stage reads layer l's output, so its input ``X`` is
renamed to ``Y.m<i>.l<l>`` (matched block for block, ``BlockPieces.boundary``), and layer l reads its
output gradient ``dY`` from layer l + 1's ``dX.m<i>.l<l+1>``. The first block of a stage reads ``X`` from
its own buffer ``X.m<i>.l<l>`` (received, or the schedule input), the last its ``dY.m<i>.l<l>``.

Example, 1d on 2 ranks, layers 0-1 on one stage, micro-batch 3::

    layer 0: X -> X.m3.l0, Y -> Y.m3.l0, dY -> dX.m3.l1, Wqkv -> Wqkv.l0, H -> H.m3.l0
    layer 1: X -> Y.m3.l0, Y -> Y.m3.l1, dY -> dY.m3.l1, dX -> dX.m3.l1
"""

from __future__ import annotations

__all__ = ["act", "base", "layer_names", "weight"]


def act(name: str, mb: int, layer: int) -> str:
    """Block buffer ``name`` of micro-batch ``mb`` in layer ``layer``."""
    return f"{name}.m{mb}.l{layer}"


def weight(name: str, layer: int) -> str:
    """Block buffer ``name`` shared by every micro-batch of layer ``layer`` (a weight, a gradient's sum)."""
    return f"{name}.l{layer}"


def base(name: str) -> str:
    """The block buffer a renamed one comes from (block buffers carry no dot)."""
    return name.partition(".")[0]


def layer_names(block, t: int, mb: int, layer: int, first_in_stage: bool, last_in_stage: bool) -> dict[str, str]:
    """Every block buffer of tensor-parallel rank t -> its name for micro-batch ``mb`` in ``layer``."""
    names = {}
    for name in block.schedule.buffers[t]:
        if "." in name:
            raise AssertionError(f"block buffer {name!r} has a dot: renamed buffers could collide")
        names[name] = act(name, mb, layer)
    names.update({name: weight(name, layer) for name, _ in block.weights[t]})
    for x, y, dx, dy in block.boundary[t]:
        names[x] = act(x, mb, layer) if first_in_stage else act(y, mb, layer - 1)
        names[dy] = act(dy, mb, layer) if last_in_stage else act(dx, mb, layer + 1)
    return names

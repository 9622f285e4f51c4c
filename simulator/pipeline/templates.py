"""One block op as a template, re-addressed for each (micro-batch, layer, pipeline rank) a stage runs it in.

A pipelined step repeats each block op L x M times (``simulator.pipeline.lower``), so the per-op work is
done once here: which fields name buffers (renamed by ``simulator.pipeline.names.layer_names``), the
process group (``pp<r>.<group>``, the block's ranks shifted by r x T), a block send/recv's peer (shifted
the same way). Equal re-addressed ops are one object (the ranks of a stage mostly issue the same ops),
as ``simulator.ir.builder`` shares them, and an op is made without re-running its constructor's checks
(the block's op passed them).
"""

from __future__ import annotations

import dataclasses

from simulator.ir.ops import Local, Op, Recv, Send

__all__ = ["Template", "templates"]

_BUFFER_FIELDS = frozenset(("out", "a", "b", "src", "buf", "inp"))


class Template:
    """One block op: its class, field names and values, and which values are re-addressed."""

    __slots__ = ("cls", "fields", "values", "buffers", "inputs", "group", "peer", "label")

    def __init__(self, op: Op, label: str):
        self.cls = type(op)
        self.fields = tuple(f.name for f in dataclasses.fields(op))
        self.values = tuple(getattr(op, name) for name in self.fields)
        self.buffers = tuple(i for i, name in enumerate(self.fields)
                             if name in _BUFFER_FIELDS and isinstance(self.values[i], str))
        self.inputs = self.fields.index("inputs") if isinstance(op, Local) else None
        self.group = self.fields.index("group") if "group" in self.fields else None
        self.peer = self.fields.index("peer") if isinstance(op, (Send, Recv)) else None
        self.label = label

    def make(self, names: dict[str, str], r: int, tp: int, shared: dict) -> Op:
        """The op for a layer whose buffers are ``names`` on pipeline rank r (of T = ``tp`` ranks each)."""
        values = list(self.values)
        for i in self.buffers:
            values[i] = names[values[i]]
        if self.inputs is not None:
            values[self.inputs] = tuple(names[name] for name in values[self.inputs])
        if self.group is not None:
            values[self.group] = f"pp{r}.{values[self.group]}"
        if self.peer is not None:
            values[self.peer] = r * tp + values[self.peer]
        key = (self.cls, *values)
        op = shared.get(key)
        if op is None:
            op = object.__new__(self.cls)
            for name, value in zip(self.fields, values):
                object.__setattr__(op, name, value)
            shared[key] = op
        return op


def templates(schedule, t: int, ops: tuple[Op, ...], first_step: int) -> list[Template]:
    """The templates of rank t's ``ops``, which start at step ``first_step`` of its block program."""
    return [Template(op, schedule.part_of(t, first_step + i)) for i, op in enumerate(ops)]

"""A small helper that schedule generators use to declare groups and buffers and emit ops per rank."""

from __future__ import annotations

import dataclasses
from operator import attrgetter

from simulator.ir.ops import Op
from simulator.ir.schedule import BufferSpec, Schedule, TensorBlock
from simulator.workloads.workload import Workload


_FIELD_GETTERS: dict[type, object] = {}


def _field_getter(cls: type):
    """A function from an op of class ``cls`` to the tuple of its fields' values (cached)."""
    names = [f.name for f in dataclasses.fields(cls)]
    getter = attrgetter(*names)
    if len(names) == 1:  # an attrgetter of one name gives the value, not a 1-tuple
        one = getter
        getter = lambda op: (one(op),)  # noqa: E731
    _FIELD_GETTERS[cls] = getter
    return getter


class ScheduleBuilder:
    """Accumulates a Schedule rank by rank; ``build()`` returns it.

    Declaring a buffer twice with the same shape is a no-op (generators declare workspaces where they
    use them); with another shape it is a bug and raises. BufferSpec objects are shared across ranks,
    and so are equal ops (``emit``), which keeps schedules for thousands of ranks small in memory.
    """

    def __init__(self, algorithm: str, grid: tuple[int, ...], workload: Workload, passes: str, dtype: str,
                 world_size: int, groups: dict[str, tuple[int, ...]]):
        self.algorithm = algorithm
        self.grid = grid
        self.workload = workload
        self.passes = passes
        self.dtype = dtype
        self.groups = groups
        self.buffers: list[dict[str, BufferSpec]] = [{} for _ in range(world_size)]
        self.programs: list[list[Op]] = [[] for _ in range(world_size)]
        self.inputs: list[TensorBlock] = []
        self.outputs: list[TensorBlock] = []
        self._specs: dict[tuple[int, ...], BufferSpec] = {}
        self._ops: dict[tuple, Op] = {}
        self._part = ""
        self.parts: list[list[tuple[int, str]]] = [[] for _ in range(world_size)]

    def part(self, label: str) -> None:
        """Label the ops emitted from now on as layer part ``label`` (until the next call)."""
        self._part = label

    def buffer(self, rank: int, name: str, shape: tuple[int, ...]) -> str:
        """Declare ``name`` of ``shape`` on ``rank`` (idempotent); return the name."""
        existing = self.buffers[rank].get(name)
        if existing is not None and existing.shape == shape:
            return name  # the common case: a workspace declared again where it is used
        shape = tuple(int(n) for n in shape)
        spec = self._specs.get(shape)
        if spec is None:
            spec = self._specs[shape] = BufferSpec(shape, self.dtype)
        existing = self.buffers[rank].setdefault(name, spec)
        if existing.shape != shape:
            raise AssertionError(f"rank {rank}: buffer {name!r} declared as {existing.shape} and {shape}")
        return name

    def emit(self, rank: int, op: Op) -> None:
        """Append ``op`` to ``rank``'s program (the one object of every op equal to it)."""
        # Ops are immutable and most repeat across ranks (every member of a row issues the same
        # broadcast, every rank the same gemm): sharing one object keeps a schedule of 16,384 ranks
        # and ten million ops to a pointer per op. Keyed by the class and a tuple of the fields (read
        # in C by an attrgetter), not by the op: its dataclass __hash__ and __eq__ run in Python, and
        # took a fifth of `tpsim predict`'s time.
        cls = type(op)
        fields = _FIELD_GETTERS.get(cls) or _field_getter(cls)
        op = self._ops.setdefault((cls, fields(op)), op)
        program, runs = self.programs[rank], self.parts[rank]
        if self._part and (not runs or runs[-1][1] != self._part):
            runs.append((len(program), self._part))
        program.append(op)

    def emit_fields(self, rank: int, cls: type, *values) -> None:
        """``emit(rank, cls(*values))``, ``values`` being every field of ``cls`` in order; the op is made
        only where no equal one exists yet (generators' per-rank loops repeat most ops, and making a
        frozen dataclass costs more than finding it)."""
        op = self._ops.get((cls, values))
        if op is None:
            op = cls(*values)
            if (_FIELD_GETTERS.get(cls) or _field_getter(cls))(op) != values:
                raise AssertionError(f"emit_fields({cls.__name__}, {values!r}): give every field, in order")
            self._ops[cls, values] = op
        program, runs = self.programs[rank], self.parts[rank]
        if self._part and (not runs or runs[-1][1] != self._part):
            runs.append((len(program), self._part))
        program.append(op)

    def block(self, role: str, rank: int, buffer: str, tensor: str, rows: tuple[int, int],
              cols: tuple[int, int]) -> str:
        """Declare ``buffer`` as block [rows, cols] of ``tensor``; role is "input" or "output"."""
        self.buffer(rank, buffer, (rows[1] - rows[0], cols[1] - cols[0]))
        record = TensorBlock(rank, buffer, tensor, tuple(rows), tuple(cols))
        (self.inputs if role == "input" else self.outputs).append(record)
        return buffer

    def build(self) -> Schedule:
        """The finished Schedule (tensors declared from the workload)."""
        shapes = self.workload.shapes()
        used = {b.tensor for b in self.inputs} | {b.tensor for b in self.outputs}
        # Ranks that declared the same buffers (most of a grid) share one table: less memory, and
        # compile_schedule times a compute op once per table it runs over.
        tables: dict[tuple, dict] = {}
        buffers = [tables.setdefault(tuple((name, id(spec)) for name, spec in table.items()), table)
                   for table in self.buffers]
        return Schedule(
            algorithm=self.algorithm, grid=tuple(self.grid), workload=self.workload.to_dict(),
            passes=self.passes, dtype=self.dtype, groups=self.groups, buffers=buffers,
            programs=self.programs, inputs=self.inputs, outputs=self.outputs,
            tensors={name: shapes[name] for name in shapes if name in used},
            parts=self.parts if any(self.parts) else [])

"""The operations of a schedule: immutable records, one per step of one rank's program.

All eleven op records live in this one file (some 350 lines) on purpose: each is a small frozen
dataclass, and together they are the IR's one vocabulary, indexed by ``OP_TYPES`` at the bottom.

An op names buffers of its own rank; it never holds data. Communication ops name a process group
(declared in the Schedule) and address roots by **group-local** rank, as NCCL does. The ranks of one
collective may name different buffers (a broadcast root sends its own block ``A``, the others receive
into a workspace ``A_ws``); the validator checks that the sizes agree.

Any communication op may be asynchronous: give it a ``handle`` and issue ``Wait(handle)`` later on the
same rank. Between the two, the rank runs on (compute overlaps communication); the op's buffers must not
be touched until the wait.

Kinds (the ``kind`` string is the JSON tag):

===============  =================================================================================
``gemm``         ``out (+)= op(a) @ op(b)``, op = transpose where ``trans_a`` / ``trans_b``
``local``        function ``fn`` of ``inputs`` into ``out``, with scalar ``params`` (elementwise, LayerNorm,
                 attention, dropout: ``simulator.workloads.functions``)
``slice``        ``out[out region] = src[src region]`` (a region ``None`` is the whole extent); ``in_place``:
                 rows the kernels address where they lie, copied here but costed as no pass
``broadcast``    root's ``buf`` to every member's ``buf``
``reduce``       sum of every member's ``buf`` into the root's ``out``
``all_reduce``   sum of every member's ``buf``, in place
``all_gather``   concatenation of every member's ``inp`` along ``axis`` into ``out``
``reduce_scatter`` sum of every member's ``inp``, split along ``axis``; member g keeps part g in ``out``
``send``         ``buf`` to global rank ``peer``; matched in order with that peer's ``recv``
``recv``         from global rank ``peer`` into ``buf``
``wait``         completes the asynchronous op issued with ``handle``
===============  =================================================================================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from simulator.errors import InputError
from simulator.workloads.functions import FUNCTIONS

Region = tuple[int, int] | None
"""A half-open index range ``(start, stop)`` along one axis, or None for the whole axis."""
Params = tuple[tuple[str, int | float], ...]
"""A ``local`` op's scalar parameters as (name, value) pairs, sorted by name (a JSON object in files)."""

LOCAL_FUNCTIONS = {name: (f.arity, f.meaning) for name, f in FUNCTIONS.items()}
"""name -> (number of inputs, what it computes), from ``simulator.workloads.functions``."""


@dataclass(frozen=True, slots=True)
class Op:
    """Base of all ops: ``kind`` tags the JSON form; ``short()`` is the cell of the step x rank grid."""

    kind: ClassVar[str] = ""
    is_comm: ClassVar[bool] = False

    def reads(self) -> tuple[str, ...]:
        """Buffers this op reads on its own rank."""
        return ()

    def writes(self) -> tuple[str, ...]:
        """Buffers this op writes on its own rank."""
        return ()

    def short(self) -> str:
        """A compact one-cell description, e.g. ``bc row_j0_k0@1 A``."""
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class Gemm(Op):
    """``out = op(a) @ op(b)``, or ``out += ...`` when ``accumulate``."""

    kind: ClassVar[str] = "gemm"
    out: str
    a: str
    b: str
    trans_a: bool = False
    trans_b: bool = False
    accumulate: bool = False

    def reads(self) -> tuple[str, ...]:
        return (self.a, self.b, self.out) if self.accumulate else (self.a, self.b)

    def writes(self) -> tuple[str, ...]:
        return (self.out,)

    def short(self) -> str:
        a = self.a + ("'" if self.trans_a else "")
        b = self.b + ("'" if self.trans_b else "")
        return f"{self.out}{'+=' if self.accumulate else '='}{a}*{b}"


@dataclass(frozen=True, slots=True)
class Local(Op):
    """A function of ``LOCAL_FUNCTIONS`` over buffers of this rank, with the scalar ``params`` it takes.

    Most are elementwise over same-shaped buffers; the transformer's kernels (LayerNorm pieces,
    attention, dropout) have their own shape rules and parameters (``simulator.workloads.functions``).
    """

    kind: ClassVar[str] = "local"
    fn: str
    out: str
    inputs: tuple[str, ...] = ()
    params: Params = ()

    def __post_init__(self) -> None:
        if self.fn not in LOCAL_FUNCTIONS:
            raise InputError(f"local op: unknown fn {self.fn!r}; valid: {', '.join(LOCAL_FUNCTIONS)}")
        arity = LOCAL_FUNCTIONS[self.fn][0]
        if len(self.inputs) != arity:
            raise InputError(f"local op {self.fn}: takes {arity} inputs, got {len(self.inputs)}")
        params = tuple(sorted((str(name), value) for name, value in dict(self.params).items()))
        expected = sorted(FUNCTIONS[self.fn].params)
        if [name for name, _ in params] != expected:
            raise InputError(f"local op {self.fn}: takes parameters {', '.join(expected) or 'none'}, got "
                             f"{', '.join(name for name, _ in params) or 'none'}")
        for name, value in params:
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise InputError(f"local op {self.fn}: parameter {name} must be a number, got {value!r}")
        object.__setattr__(self, "params", params)

    def param_dict(self) -> dict[str, int | float]:
        """The parameters as keyword arguments of the function."""
        return dict(self.params)

    def reads(self) -> tuple[str, ...]:
        return self.inputs

    def writes(self) -> tuple[str, ...]:
        return (self.out,)

    def short(self) -> str:
        return f"{self.out}={self.fn}({','.join(self.inputs)})"


@dataclass(frozen=True, slots=True)
class Slice(Op):
    """Copy a 2-D sub-block: ``out[out_rows, out_cols] = src[src_rows, src_cols]``.

    ``in_place``: the copy stands for rows its producer or consumer addresses where they lie, as
    Transformer Engine's userbuffers GEMMs write and read row chunks of a whole buffer and its ring
    receives into them (``simulator.algorithms.tp_comm_overlap``). The interpreter and the executor copy
    (the numbers are the same); the cost model charges it no memory pass (``Schedule.memory_bytes`` 0).
    """

    kind: ClassVar[str] = "slice"
    out: str
    src: str
    src_rows: Region = None
    src_cols: Region = None
    out_rows: Region = None
    out_cols: Region = None
    in_place: bool = False

    def reads(self) -> tuple[str, ...]:
        whole_out = self.out_rows is None and self.out_cols is None
        return (self.src,) if whole_out else (self.src, self.out)

    def writes(self) -> tuple[str, ...]:
        return (self.out,)

    def short(self) -> str:
        return f"{self.out}={'in_place' if self.in_place else 'slice'}({self.src})"


@dataclass(frozen=True, slots=True)
class CommOp(Op):
    """A communication op; ``handle`` makes it asynchronous until the matching ``Wait``."""

    is_comm: ClassVar[bool] = True

    def payload_buffer(self) -> str:
        """The buffer whose bytes are this rank's payload (all_gather: the output, reduce_scatter: the input)."""
        raise NotImplementedError

    def _suffix(self) -> str:
        sms = getattr(self, "sms", None)
        return (f" &{self.handle}" if getattr(self, "handle", None) else "") + (f" sm{sms}" if sms is not None else "")


@dataclass(frozen=True, slots=True)
class Broadcast(CommOp):
    """The root's ``buf`` to every member of ``group``; the root's group-local rank is ``root``."""

    kind: ClassVar[str] = "broadcast"
    group: str
    root: int
    buf: str
    handle: str | None = None

    def reads(self) -> tuple[str, ...]:
        return (self.buf,)

    def writes(self) -> tuple[str, ...]:
        return (self.buf,)

    def payload_buffer(self) -> str:
        return self.buf

    def short(self) -> str:
        return f"bc {self.group}@{self.root} {self.buf}{self._suffix()}"


@dataclass(frozen=True, slots=True)
class Reduce(CommOp):
    """Sum of every member's ``buf`` into ``out`` on the root.

    Every member declares ``out`` (the validator checks it like any named buffer), but only the root's
    is written.
    """

    kind: ClassVar[str] = "reduce"
    group: str
    root: int
    buf: str
    out: str
    handle: str | None = None
    sms: int | None = None
    """SMs its kernel holds beside compute: None for NCCL's channels (``simulator.timing.sm_sharing``), a count
    for Transformer Engine's userbuffers kernels (``simulator.algorithms.ub_configs``)."""

    def reads(self) -> tuple[str, ...]:
        return (self.buf,)

    def writes(self) -> tuple[str, ...]:
        return (self.out,)

    def payload_buffer(self) -> str:
        return self.buf

    def short(self) -> str:
        return f"rd {self.group}@{self.root} {self.buf}>{self.out}{self._suffix()}"


@dataclass(frozen=True, slots=True)
class AllReduce(CommOp):
    """Sum of every member's ``buf``, left in every member's ``buf``."""

    kind: ClassVar[str] = "all_reduce"
    group: str
    buf: str
    handle: str | None = None

    def reads(self) -> tuple[str, ...]:
        return (self.buf,)

    def writes(self) -> tuple[str, ...]:
        return (self.buf,)

    def payload_buffer(self) -> str:
        return self.buf

    def short(self) -> str:
        return f"ar {self.group} {self.buf}{self._suffix()}"


@dataclass(frozen=True, slots=True)
class AllGather(CommOp):
    """Every member's ``inp`` concatenated in group order along ``axis`` into every ``out``."""

    kind: ClassVar[str] = "all_gather"
    group: str
    inp: str
    out: str
    axis: int = 0
    handle: str | None = None
    sms: int | None = None
    """SMs its kernel holds beside compute: None for NCCL's channels (``simulator.timing.sm_sharing``), a count
    for Transformer Engine's userbuffers kernels (``simulator.algorithms.ub_configs``)."""

    def reads(self) -> tuple[str, ...]:
        return (self.inp,)

    def writes(self) -> tuple[str, ...]:
        return (self.out,)

    def payload_buffer(self) -> str:
        return self.out

    def short(self) -> str:
        return f"ag {self.group} {self.inp}>{self.out}{self._suffix()}"


@dataclass(frozen=True, slots=True)
class ReduceScatter(CommOp):
    """Sum of every member's ``inp``, split in group order along ``axis``; member g keeps part g."""

    kind: ClassVar[str] = "reduce_scatter"
    group: str
    inp: str
    out: str
    axis: int = 0
    handle: str | None = None
    sms: int | None = None
    """SMs its kernel holds beside compute: None for NCCL's channels (``simulator.timing.sm_sharing``), a count
    for Transformer Engine's userbuffers kernels (``simulator.algorithms.ub_configs``)."""

    def reads(self) -> tuple[str, ...]:
        return (self.inp,)

    def writes(self) -> tuple[str, ...]:
        return (self.out,)

    def payload_buffer(self) -> str:
        return self.inp

    def short(self) -> str:
        return f"rs {self.group} {self.inp}>{self.out}{self._suffix()}"


@dataclass(frozen=True, slots=True)
class Send(CommOp):
    """``buf`` to global rank ``peer``; the n-th send to a peer meets that peer's n-th recv from us."""

    kind: ClassVar[str] = "send"
    peer: int
    buf: str
    handle: str | None = None

    def reads(self) -> tuple[str, ...]:
        return (self.buf,)

    def payload_buffer(self) -> str:
        return self.buf

    def short(self) -> str:
        return f"send>{self.peer} {self.buf}{self._suffix()}"


@dataclass(frozen=True, slots=True)
class Recv(CommOp):
    """From global rank ``peer`` into ``buf``."""

    kind: ClassVar[str] = "recv"
    peer: int
    buf: str
    handle: str | None = None

    def writes(self) -> tuple[str, ...]:
        return (self.buf,)

    def payload_buffer(self) -> str:
        return self.buf

    def short(self) -> str:
        return f"recv<{self.peer} {self.buf}{self._suffix()}"


@dataclass(frozen=True, slots=True)
class Wait(Op):
    """Block until the asynchronous op issued on this rank with ``handle`` has completed."""

    kind: ClassVar[str] = "wait"
    handle: str

    def short(self) -> str:
        return f"wait {self.handle}"


COLLECTIVE_KINDS = ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter")
OP_TYPES: dict[str, type[Op]] = {
    cls.kind: cls
    for cls in (Gemm, Local, Slice, Broadcast, Reduce, AllReduce, AllGather, ReduceScatter, Send, Recv, Wait)
}

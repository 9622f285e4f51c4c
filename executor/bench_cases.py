"""The microbenchmarks of `tpsim bench`, each one a small Schedule whose programs repeat one op.

A microbenchmark is data like any other run: a Schedule with ``world_size = nproc`` whose
participating ranks repeat one op ``warmup + iters`` times (nccl-tests' ``-w`` and ``-n``), the first
``warmup`` untimed. So the launcher, the progress board and the timeout report of ``tpsim run`` serve
it unchanged, and ``executor.ops_torch`` issues exactly the torch calls a schedule's own op issues.
``schedule.options["bench"]`` says what it measures (``BenchPoint`` as a dict).

Groups. A collective on g ranks runs on the disjoint blocks ``[0, g), [g, 2g), ...`` **all at once**
(``groups="all"``, the default: every rank is busy, as a schedule's row groups are), or on the first
block only (``groups="one"``, the other ranks idle). Point-to-point (``send``) pairs ranks (0, 1),
(2, 3), ... and each pair exchanges one message each way per repetition (``isend`` + ``irecv``, one
batch as ``executor.ops_torch`` issues them, + two ``wait``), the shift pattern of Cannon's algorithm;
its time is one exchange. A gemm runs on
ranks ``0 .. concurrent - 1`` at once (declared as group ``gemm``, which the runner synchronises).

Two forms of a collective (or send) measurement, ``options["bench"]["form"]``:

- ``"lock-step"`` (nccl-tests): the op repeated back to back; the members stay in step and no rank
  computes meanwhile.
- ``"interleaved"`` (``between=(m, k, n)``): each repetition is a gemm of that shape, then the op, on
  every rank that takes part: the way a schedule meets its collectives. On a host whose ranks share
  cores the OS runs some ranks before others, so members reach the op apart and a collective shares
  the cores with ranks still computing; the runner times the op from its issue to its completion, as
  ``tpsim run`` times a schedule's op (so the time includes waiting for the last member), and the
  gemm separately (it runs while other ranks communicate, faster than a lock-step gemm phase).

Sizes follow nccl-tests: ``bytes`` is S (the buffer of broadcast / reduce / all_reduce, the output of
all_gather, the input of reduce_scatter, the message of send), rounded down to a whole number of
elements per rank as nccl-tests does (S = g x e x count/g for all_gather and reduce_scatter).
In-place where torch.distributed is (broadcast, reduce, all_reduce: one buffer is send and receive
buffer), out-of-place where it is not (all_gather, reduce_scatter, send/recv).

Example::

    >>> point = BenchPoint("all_reduce", ranks=2, groups=2, nbytes=1024, dtype="float32")
    >>> s = collective_case(point, nproc=4, warmup=1, iters=3)
    >>> s.groups, len(s.programs[0]), s.options["bench"]["nbytes"]
    ({'g0': (0, 1), 'g1': (2, 3)}, 4, 1024)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from simulator.errors import InputError
from simulator.ir.ops import AllGather, AllReduce, Broadcast, Gemm, Op, Recv, Reduce, ReduceScatter, Send, Wait
from simulator.ir.schedule import DTYPE_BYTES, BufferSpec, Schedule

__all__ = ["COLLECTIVES", "BENCH_OPS", "FORMS", "BenchPoint", "collective_case", "gemm_case", "group_blocks",
           "IN_PLACE"]

COLLECTIVES = ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter")
BENCH_OPS = COLLECTIVES + ("send", "gemm")
IN_PLACE = {"broadcast": True, "reduce": True, "all_reduce": True, "all_gather": False,
            "reduce_scatter": False, "send": False, "gemm": False}
"""Whether torch.distributed runs the op with one buffer as both input and output."""
FORMS = ("lock-step", "interleaved")
"""How a collective or send is measured (module doc)."""


@dataclass(frozen=True)
class BenchPoint:
    """One measurement: an op, its group size and count of concurrent groups, and its size or shape."""

    op: str
    """A collective kind, "send" (point-to-point exchange) or "gemm"."""
    ranks: int = 1
    """Ranks in one group (2 for send, 1 for gemm)."""
    groups: int = 1
    """Groups (or pairs, or gemm ranks) running it at once."""
    nbytes: int = 0
    """nccl-tests S, bytes (0 for gemm)."""
    dtype: str = "float32"
    m: int = 0
    k: int = 0
    n: int = 0
    """Gemm shape: out[m, n] = a[m, k] @ b[k, n] (0 for communication)."""

    def __post_init__(self) -> None:
        if self.op not in BENCH_OPS:
            raise InputError(f"bench op {self.op!r} unknown; valid: {', '.join(BENCH_OPS)}")
        if self.dtype not in DTYPE_BYTES:
            raise InputError(f"bench dtype {self.dtype!r} unknown; valid: {', '.join(DTYPE_BYTES)}")
        if self.ranks < 1 or self.groups < 1:
            raise InputError(f"bench {self.op}: ranks and groups must be >= 1, got {self.ranks}, {self.groups}")
        if self.op == "gemm" and min(self.m, self.k, self.n) < 1:
            raise InputError(f"bench gemm shape must be positive, got {self.m}x{self.k}x{self.n}")

    @property
    def count(self) -> int:
        """Elements in S (nccl-tests' count column)."""
        return self.nbytes // DTYPE_BYTES[self.dtype]


def group_blocks(nproc: int, ranks: int, groups: str) -> list[tuple[int, ...]]:
    """Disjoint blocks of ``ranks`` consecutive ranks: all that fit in ``nproc`` ("all") or the first ("one").

    Example: ``group_blocks(8, 2, "all")`` is [(0, 1), (2, 3), (4, 5), (6, 7)]; ``group_blocks(4, 3,
    "all")`` is [(0, 1, 2)] (rank 3 idles).
    """
    if groups not in ("all", "one"):
        raise InputError(f"--groups {groups!r}: valid: all, one")
    if not 1 <= ranks <= nproc:
        raise InputError(f"group size {ranks} must be in 1..{nproc} (--nproc {nproc})")
    count = nproc // ranks if groups == "all" else 1
    return [tuple(range(b * ranks, (b + 1) * ranks)) for b in range(count)]


def _bench_schedule(point: BenchPoint, nproc: int, groups: dict, buffers: list[dict], programs: list[list[Op]],
                    warmup: int, iters: int, steps_per_rep: int, between=None) -> Schedule:
    bench = dict(asdict(point), count=point.count, warmup=warmup, iters=iters, warmup_steps=warmup * steps_per_rep,
                 steps_per_rep=steps_per_rep, in_place=IN_PLACE[point.op],
                 form="interleaved" if between else "lock-step", between=list(between) if between else None)
    return Schedule(algorithm=f"bench-{point.op}", grid=(nproc,), workload={"name": "bench", "op": point.op},
                    passes="fwd", dtype=point.dtype, groups=groups, buffers=buffers, programs=programs,
                    options={"bench": bench})


def _check_reps(warmup: int, iters: int) -> None:
    if warmup < 0:
        raise InputError(f"--warmup must be >= 0, got {warmup}")
    if iters < 1:
        raise InputError(f"--iters must be >= 1, got {iters}")


def _per_rank(point: BenchPoint) -> int:
    """Elements of each rank's own buffer (its part, for all_gather and reduce_scatter)."""
    return point.count // point.ranks if point.op in ("all_gather", "reduce_scatter") else point.count


def collective_case(point: BenchPoint, nproc: int, warmup: int, iters: int,
                    between: tuple[int, int, int] | None = None) -> Schedule:
    """The schedule measuring ``point`` (a collective or send) on ``point.groups`` blocks of ``nproc`` ranks;
    with ``between`` = (m, k, n), in the interleaved form: a gemm of that shape before each op (module doc)."""
    _check_reps(warmup, iters)
    if between is not None and (len(between) != 3 or min(between) < 1):
        raise InputError(f"the gemm between interleaved ops needs a shape MxKxN of positive extents, got {between}")
    e = DTYPE_BYTES[point.dtype]
    g = point.ranks
    if point.op == "send" and g != 2:
        raise InputError(f"send is measured between pairs of ranks, not groups of {g}")
    if point.groups * g > nproc:
        raise InputError(f"{point.groups} groups of {g} ranks need {point.groups * g} ranks, --nproc is {nproc}")
    buffers: list[dict] = [{} for _ in range(nproc)]
    programs: list[list[Op]] = [[] for _ in range(nproc)]
    groups: dict[str, tuple[int, ...]] = {}
    per_rank = _per_rank(point)
    if per_rank < 1:
        raise InputError(f"{point.op} of {point.nbytes} B on {g} ranks: less than one {point.dtype} element "
                         f"per rank")
    reps = warmup + iters
    steps = (4 if point.op == "send" else 1) + (1 if between else 0)
    for index in range(point.groups):
        members = tuple(range(index * g, (index + 1) * g))
        name = f"g{index}"
        if point.op != "send":
            groups[name] = members
        for rank in members:
            buffers[rank], op = _collective_op(point.op, name, rank, members, per_rank, point.dtype)
            if between:
                m, k, n = between
                buffers[rank].update(a=BufferSpec((m, k), point.dtype), b=BufferSpec((k, n), point.dtype),
                                     c=BufferSpec((m, n), point.dtype))
                op = [Gemm(out="c", a="a", b="b"), *op]
            programs[rank] = [o for _ in range(reps) for o in op]
    # Whole elements only, as nccl-tests rounds its count.
    nbytes = per_rank * e * (g if point.op in ("all_gather", "reduce_scatter") else 1)
    point = BenchPoint(point.op, g, point.groups, nbytes, point.dtype)
    return _bench_schedule(point, nproc, groups, buffers, programs, warmup, iters, steps, between)


def _collective_op(op: str, group: str, rank: int, members: tuple[int, ...], per_rank: int,
                   dtype: str) -> tuple[dict[str, BufferSpec], list[Op]]:
    """One rank's buffers and the ops of one repetition."""
    g = len(members)
    one = {"buf": BufferSpec((per_rank,), dtype)}
    if op == "broadcast":
        return one, [Broadcast(group=group, root=0, buf="buf")]
    if op == "reduce":
        return one, [Reduce(group=group, root=0, buf="buf", out="buf")]
    if op == "all_reduce":
        return one, [AllReduce(group=group, buf="buf")]
    if op == "all_gather":
        return ({"inp": BufferSpec((per_rank,), dtype), "out": BufferSpec((per_rank * g,), dtype)},
                [AllGather(group=group, inp="inp", out="out")])
    if op == "reduce_scatter":
        return ({"inp": BufferSpec((per_rank * g,), dtype), "out": BufferSpec((per_rank,), dtype)},
                [ReduceScatter(group=group, inp="inp", out="out")])
    peer = members[1] if rank == members[0] else members[0]
    return ({"send": BufferSpec((per_rank,), dtype), "recv": BufferSpec((per_rank,), dtype)},
            [Send(peer=peer, buf="send", handle="s"), Recv(peer=peer, buf="recv", handle="r"), Wait("s"), Wait("r")])


def gemm_case(point: BenchPoint, nproc: int, warmup: int, iters: int) -> Schedule:
    """The schedule timing ``point``'s gemm on ranks ``0 .. point.groups - 1`` at once."""
    _check_reps(warmup, iters)
    if point.groups > nproc:
        raise InputError(f"gemm on {point.groups} concurrent ranks needs --nproc >= {point.groups}, got {nproc}")
    m, k, n = point.m, point.k, point.n
    spec = {"a": BufferSpec((m, k), point.dtype), "b": BufferSpec((k, n), point.dtype),
            "c": BufferSpec((m, n), point.dtype)}
    buffers: list[dict] = [spec if r < point.groups else {} for r in range(nproc)]
    programs: list[list[Op]] = [[Gemm(out="c", a="a", b="b")] * (warmup + iters) if r < point.groups else []
                                for r in range(nproc)]
    # Concurrent ranks synchronise after each gemm (executor.bench), on a group of their own.
    groups = {"gemm": tuple(range(point.groups))} if point.groups > 1 else {}
    return _bench_schedule(point, nproc, groups, buffers, programs, warmup, iters, 1)


@dataclass(frozen=True)
class BenchSettings:
    """What `tpsim bench` measures; ``cases(nproc)`` turns it into schedules, in the order they run."""

    ops: tuple[str, ...] = BENCH_OPS
    sizes_bytes: tuple[int, ...] = tuple(1024 << k for k in range(17))
    """nccl-tests S values (default 1 KiB .. 64 MiB, factor 2)."""
    group_sizes: tuple[int, ...] | None = None
    """Collective group sizes; None: every divisor of nproc from 2 up."""
    groups: str = "all"
    """"all": every disjoint block of a group size at once; "one": the first block only."""
    gemm_shapes: tuple[tuple[int, int, int], ...] = ((128, 128, 128), (256, 256, 256), (512, 512, 512),
                                                     (1024, 1024, 1024), (1024, 1024, 128), (1024, 128, 1024))
    gemm_concurrency: tuple[int, ...] | None = None
    """Ranks running each gemm at once; None: 1 and nproc."""
    forms: tuple[str, ...] = ("lock-step",)
    """How each collective and send size is measured: "lock-step" (back to back), "interleaved" (after a
    gemm of each of ``gemm_shapes``, one case per shape), or both (module doc)."""
    dtype: str = "float32"
    warmup: int = 5
    """Untimed repetitions before the timed ones (nccl-tests -w)."""
    iters: int = 20
    """Timed repetitions, averaged (nccl-tests -n)."""

    def __post_init__(self) -> None:
        unknown = [op for op in self.ops if op not in BENCH_OPS]
        if unknown or not self.ops:
            raise InputError(f"--ops {','.join(self.ops)}: unknown {', '.join(unknown) or 'nothing given'}; "
                             f"valid: {', '.join(BENCH_OPS)}")
        if not self.sizes_bytes or min(self.sizes_bytes) < 1:
            raise InputError(f"--sizes must give sizes >= 1 byte, got {list(self.sizes_bytes)}")
        _check_reps(self.warmup, self.iters)
        bad = [f for f in self.forms if f not in FORMS]
        if bad or not self.forms:
            raise InputError(f"--form {','.join(self.forms) or 'nothing'}: valid forms are {', '.join(FORMS)}, "
                             f"or both comma-separated")

    def resolved_group_sizes(self, nproc: int) -> tuple[int, ...]:
        """The group sizes measured on ``nproc`` ranks."""
        if self.group_sizes is None:
            return tuple(g for g in range(2, nproc + 1) if nproc % g == 0)
        bad = [g for g in self.group_sizes if not 2 <= g <= nproc]
        if bad:
            raise InputError(f"--group-sizes {bad[0]}: a collective group has 2..{nproc} ranks (--nproc {nproc})")
        return tuple(self.group_sizes)

    def resolved_concurrency(self, nproc: int) -> tuple[int, ...]:
        """How many ranks run each gemm at once."""
        if self.gemm_concurrency is None:
            return (1, nproc) if nproc > 1 else (1,)
        bad = [c for c in self.gemm_concurrency if not 1 <= c <= nproc]
        if bad:
            raise InputError(f"--gemm-concurrency {bad[0]}: must be in 1..{nproc} (--nproc {nproc})")
        return tuple(self.gemm_concurrency)

    def cases(self, nproc: int) -> list[Schedule]:
        """Every microbenchmark, as schedules on ``nproc`` ranks: collectives, then send, then gemm; each
        collective or send size in the lock-step form and then, if asked, once per gemm shape interleaved."""
        out = []
        for op in (o for o in BENCH_OPS if o in self.ops):
            if op == "gemm":
                for m, k, n in self.gemm_shapes:
                    for c in self.resolved_concurrency(nproc):
                        point = BenchPoint("gemm", 1, c, 0, self.dtype, m, k, n)
                        out.append(gemm_case(point, nproc, self.warmup, self.iters))
                continue
            sizes = (2,) if op == "send" else self.resolved_group_sizes(nproc)
            if nproc < 2:
                continue  # nothing to communicate with
            for g in sizes:
                count = len(group_blocks(nproc, g, self.groups))
                for nbytes in self.sizes_bytes:
                    point = BenchPoint(op, g, count, nbytes, self.dtype)
                    if _per_rank(point) < 1:  # below one element per rank nccl-tests skips the size too
                        continue
                    if "lock-step" in self.forms:
                        out.append(collective_case(point, nproc, self.warmup, self.iters))
                    if "interleaved" in self.forms:
                        out += [collective_case(point, nproc, self.warmup, self.iters, shape)
                                for shape in self.gemm_shapes]
        return out

"""Static checks of a Schedule, one rank at a time: declarations, shapes, handles and buffer hazards.

``simulator.ir.validate`` runs these first, then the cross-rank dry run. Each check raises ScheduleError
naming the rank, the step and the op. ``check_workload`` (run on loading a file, and by the
interpreter) holds the metadata to the blocks: the workload, its pass and the global tensors agree.
"""

from __future__ import annotations

from simulator.errors import ScheduleError
from simulator.gcpause import paused_gc
from simulator.ir.ops import (AllGather, Broadcast, CommOp, Gemm, Local, Op, Recv, Reduce, ReduceScatter, Send, Slice,
                              Wait)
from simulator.ir.schedule import DTYPE_BYTES, Schedule
from simulator.pipeline.tensors import check_pipeline_tensors
from simulator.workloads.functions import FUNCTIONS
from simulator.workloads.workload import EXAMPLES, FIELDS, PASSES, Workload


def check_static(schedule: Schedule, ranks=None) -> None:
    """Raise ScheduleError at the first ill-formed declaration or op.

    ``ranks``: check only these ranks' programs (declarations and groups are always checked in full);
    default every rank. ``spread_ranks`` picks the reduced set a generated schedule is checked on.
    """
    if schedule.dtype not in DTYPE_BYTES:
        raise ScheduleError(f"dtype {schedule.dtype!r} unknown; valid: {', '.join(DTYPE_BYTES)}")
    if len(schedule.buffers) != schedule.world_size:
        raise ScheduleError(f"{schedule.world_size} programs but {len(schedule.buffers)} buffer declarations")
    _check_groups(schedule)
    _check_blocks(schedule)
    with paused_gc():
        for rank in range(schedule.world_size) if ranks is None else ranks:
            _check_program(schedule, rank)


def spread_ranks(world_size: int, limit: int = 64) -> list[int]:
    """Up to ``limit`` ranks spread evenly over ``0 .. world_size - 1``, the first and the last included.

    A generator emits the same program shape on every rank of a grid (a rank's coordinates change its
    peers and roots, not its ops' kinds and shapes), and the tests prove each generator's programs on
    every rank of small grids; so an in-process schedule is checked on a spread of ranks (on a 64 x 64
    grid, rank 64 i + j, one in every row and every column), not on all 4,096 or 16,384.
    """
    if world_size <= limit:
        return list(range(world_size))
    return sorted({round(i * (world_size - 1) / (limit - 1)) for i in range(limit)})


def check_workload(schedule: Schedule) -> Workload:
    """The schedule's Workload, after checking that it, the pass and the tensors and blocks agree.

    The interpreter and the executor make inputs and reference outputs from the workload and the pass
    alone, so a schedule whose blocks disagree with them (a hand-edited file) would fail with a missing
    tensor or, worse, compare the wrong numbers. ScheduleError names the disagreement and what would fit.
    """
    workload = Workload.from_dict(schedule.workload)
    pipeline = schedule.options.get("pipeline") if isinstance(schedule.options, dict) else None
    if pipeline is not None:  # a pipelined step names its tensors per micro-batch and layer
        check_pipeline_tensors(schedule, workload, pipeline)
        return workload
    passes = schedule.passes
    if passes not in PASSES:
        raise ScheduleError(f"pass {passes!r} unknown; valid: {', '.join(PASSES)}")
    shapes = workload.shapes()
    for name, shape in schedule.tensors.items():
        if name not in shapes:
            owners = [other for other in FIELDS
                      if set(schedule.tensors) <= set(Workload.from_fields(other, **EXAMPLES[other]).shapes())]
            hint = f"; the tensors are {owners[0]}'s" if owners else ""
            raise ScheduleError(f"tensor {name!r} is not one of workload {workload.name}'s ({', '.join(shapes)}){hint}")
        if tuple(shape) != shapes[name]:
            raise ScheduleError(f"tensor {name} is {list(shape)}, but workload {workload.label()} makes it "
                             f"{list(shapes[name])}")
    named = {role: list(dict.fromkeys(block.tensor for block in blocks))
             for role, blocks in (("input", schedule.inputs), ("output", schedule.outputs))}
    for role, expected in (("input", workload.input_names(passes)), ("output", workload.output_names(passes))):
        if set(named[role]) != set(expected):
            fits = [p for p in PASSES if set(named["input"]) == set(workload.input_names(p))
                    and set(named["output"]) == set(workload.output_names(p))]
            hint = f"; the blocks fit pass {fits[0]}" if fits else ""
            raise ScheduleError(f"pass {passes} of {workload.name} has {role}s {', '.join(expected)}, but the {role} "
                             f"blocks name {', '.join(named[role]) or 'none'}{hint}")
    return workload


def _check_groups(schedule: Schedule) -> None:
    for name, ranks in schedule.groups.items():
        if not ranks:
            raise ScheduleError(f"group {name!r} is empty")
        if len(set(ranks)) != len(ranks):
            raise ScheduleError(f"group {name!r} lists a rank twice: {list(ranks)}")
        bad = [r for r in ranks if not 0 <= r < schedule.world_size]
        if bad:
            raise ScheduleError(f"group {name!r}: rank {bad[0]} outside 0..{schedule.world_size - 1}")


def _check_blocks(schedule: Schedule) -> None:
    for role, blocks in (("input", schedule.inputs), ("output", schedule.outputs)):
        for block in blocks:
            where = f"{role} block {block.tensor}[{block.rows}, {block.cols}] on rank {block.rank}"
            if not 0 <= block.rank < schedule.world_size:
                raise ScheduleError(f"{where}: no such rank")
            if block.tensor not in schedule.tensors:
                raise ScheduleError(f"{where}: tensor {block.tensor!r} is not declared")
            rows, cols = schedule.tensors[block.tensor]
            if not (0 <= block.rows[0] < block.rows[1] <= rows and 0 <= block.cols[0] < block.cols[1] <= cols):
                raise ScheduleError(f"{where}: outside the tensor's shape ({rows}, {cols})")
            spec = schedule.spec(block.rank, block.buffer)
            if tuple(spec.shape) != block.shape:
                raise ScheduleError(f"{where}: buffer {block.buffer!r} has shape {spec.shape}, block is {block.shape}")


def effective_writes(schedule: Schedule, rank: int, op: Op) -> set[str]:
    """The buffers ``op`` really writes on ``rank``: a broadcast root and a reduce non-root write nothing."""
    if isinstance(op, (Broadcast, Reduce)):
        is_root = schedule.groups[op.group][op.root] == rank
        if isinstance(op, Broadcast) == is_root:
            return set()
    return set(op.writes())


def _fail(rank: int, step: int, op: Op, message: str) -> ScheduleError:
    return ScheduleError(f"rank {rank} step {step} ({op.short()}): {message}")


def _check_program(schedule: Schedule, rank: int) -> None:
    # handle -> (step issued, op, buffers it uses (reads and effective writes), its effective writes);
    # the sets are built once, when the op is issued, not again for every op while it is in flight.
    in_flight: dict[str, tuple[int, CommOp, set[str], set[str]]] = {}
    declared = schedule.buffers[rank]
    for step, op in enumerate(schedule.programs[rank]):
        try:
            for name in op.reads() + op.writes():
                if name not in declared:
                    schedule.spec(rank, name)  # raises, naming the buffer
            if isinstance(op, CommOp):
                _check_comm(schedule, rank, op)
            else:
                _check_compute(declared, op)
        except ScheduleError as error:
            raise _fail(rank, step, op, str(error)) from None
        if in_flight:
            op_writes, op_reads = effective_writes(schedule, rank, op), set(op.reads())
            for handle, (issued, pending, pending_uses, pending_writes) in in_flight.items():
                touched = (op_writes & pending_uses) | (op_reads & pending_writes)
                if touched and not (isinstance(op, Wait) and op.handle == handle):
                    raise _fail(rank, step, op, f"uses buffer {sorted(touched)[0]!r} while asynchronous step "
                                                f"{issued} ({pending.short()}) is in flight; wait for {handle!r} first")
        if isinstance(op, Wait):
            if op.handle not in in_flight:
                raise _fail(rank, step, op, f"no asynchronous op with handle {op.handle!r} is in flight")
            del in_flight[op.handle]
        elif isinstance(op, CommOp) and op.handle is not None:
            if op.handle in in_flight:
                raise _fail(rank, step, op, f"handle {op.handle!r} is already in flight")
            writes = effective_writes(schedule, rank, op)
            in_flight[op.handle] = (step, op, set(op.reads()) | writes, writes)
    if in_flight:
        handle, (step, op, _, _) = next(iter(in_flight.items()))
        raise _fail(rank, step, op, f"handle {handle!r} is never waited for")


def _check_compute(declared: dict, op: Op) -> None:
    """Shapes of a compute op whose buffers are all in ``declared`` (checked just before)."""
    if isinstance(op, Gemm):
        a, b, out = declared[op.a].shape, declared[op.b].shape, declared[op.out].shape
        if len(a) != 2 or len(b) != 2 or len(out) != 2:
            raise ScheduleError("gemm operands must be 2-D")
        m, k = (a[1], a[0]) if op.trans_a else a
        k2, n = (b[1], b[0]) if op.trans_b else b
        if k != k2 or out != (m, n):
            raise ScheduleError(f"shapes do not multiply: {op.a}{a} x {op.b}{b} -> {op.out}{out}")
    elif isinstance(op, Local):
        inputs = [tuple(declared[name].shape) for name in op.inputs]
        out = tuple(declared[op.out].shape)
        try:
            expected = FUNCTIONS[op.fn].shape(inputs, op.param_dict()) if inputs else out
        except ValueError as error:
            raise ScheduleError(f"{op.fn}: {error}") from None
        if tuple(expected) != out:
            raise ScheduleError(f"{op.fn} of {', '.join(f'{n}{list(s)}' for n, s in zip(op.inputs, inputs))} makes "
                                f"{list(expected)}, but {op.out} is {list(out)}")
    elif isinstance(op, Slice):
        src, out = declared[op.src].shape, declared[op.out].shape
        if len(src) != 2 or len(out) != 2:
            raise ScheduleError("slice operands must be 2-D")
        extents = []
        for region, whole, label in ((op.src_rows, src[0], "src_rows"), (op.src_cols, src[1], "src_cols"),
                                     (op.out_rows, out[0], "out_rows"), (op.out_cols, out[1], "out_cols")):
            start, stop = (0, whole) if region is None else region
            if not 0 <= start < stop <= whole:
                raise ScheduleError(f"{label} {region} outside 0..{whole}")
            extents.append(stop - start)
        if extents[:2] != extents[2:]:
            raise ScheduleError(f"source region {tuple(extents[:2])} and target region {tuple(extents[2:])} differ")


def _check_comm(schedule: Schedule, rank: int, op: CommOp) -> None:
    if isinstance(op, (Send, Recv)):
        if not 0 <= op.peer < schedule.world_size or op.peer == rank:
            raise ScheduleError(f"peer {op.peer} must be another rank in 0..{schedule.world_size - 1}")
        return
    members = schedule.groups.get(op.group) or schedule.group_ranks(op.group)  # group_ranks raises, naming it
    if rank not in members:
        raise ScheduleError(f"rank {rank} is not a member of group {op.group!r} {list(members)}")
    root = getattr(op, "root", None)
    if root is not None and not 0 <= root < len(members):
        raise ScheduleError(f"root {root} is not a group-local rank of {op.group!r} (0..{len(members) - 1})")
    if isinstance(op, Reduce) and members[root] == rank:
        schedule.spec(rank, op.out)
    if isinstance(op, (AllGather, ReduceScatter)):
        small, big = (op.inp, op.out) if isinstance(op, AllGather) else (op.out, op.inp)
        part, whole = list(schedule.spec(rank, small).shape), list(schedule.spec(rank, big).shape)
        if not 0 <= op.axis < len(whole):
            raise ScheduleError(f"axis {op.axis} out of range for shape {tuple(whole)}")
        part[op.axis] *= len(members)
        if part != whole:
            raise ScheduleError(f"{small} x {len(members)} along axis {op.axis} is {tuple(part)}, "
                             f"but {big} is {tuple(whole)}")

"""The one module that turns IR ops into torch and torch.distributed calls.

Every op of ``simulator.ir.ops`` has one rule here. Semantics follow ``simulator.ir.interpret`` exactly:

- ``gemm``: ``torch.mm(a, b, out=out)``, or ``out.addmm_(a, b)`` when accumulating; transposes are views.
- ``local``: the torch version of its function in ``simulator.workloads.functions`` (gelu and
  gelu_backward by ``aten.gelu`` / ``aten.gelu_backward``, tanh approximation), written into ``out``,
  with the op's ``params`` and, for the seeded functions (dropout masks), the run's seed: the one the
  inputs came from, as the interpreter passes it.
  ``slice``: a sub-block ``copy_``.
- ``broadcast`` / ``reduce``: roots are group-local in the IR and passed to torch as global ranks.
  ``reduce`` sums into the root's ``out``: when ``out`` is not ``buf`` the root first copies ``buf`` into
  ``out`` and reduces ``out`` in place. gloo overwrites non-root inputs of a reduce with partial sums
  (measured with torch 2.13), which the IR does not allow; where the non-root's ``buf`` is read again
  later in its program (or is an output block), the reduce runs on a scratch copy. NCCL leaves
  non-root buffers alone, so no copy is made there.
- ``all_reduce``: in place.
- ``all_gather`` / ``reduce_scatter``: along axis 0 with members declared in ascending order, the
  single-tensor torch calls (``all_gather_single`` / ``reduce_scatter_single``, or their older names);
  otherwise the list forms, with one contiguous tensor per member (gloo has no uneven all_gather, and
  a column block is not contiguous) copied into / out of place, in the IR's member order.
- ``send`` / ``recv``: ``dist.send`` / ``dist.recv`` to global peers when blocking. Asynchronous ones
  are issued in batches: each run of consecutive asynchronous sends and receives of a rank's program
  (``p2p_batches``: nothing else between them, not even a wait) goes to ``dist.batch_isend_irecv`` as
  one list, when the program reaches the first of them. NCCL needs this: its sends and receives
  progress together only inside one group (ncclGroupStart/End, which batch_isend_irecv opens), and
  Cannon's shifts post a send before the matching receive on both sides (on a q = 2 grid a rank's
  left and right neighbours are one rank), which hangs once a message outgrows NCCL's buffers if
  each op is issued alone. The batch goes over the default group, whose first call is always the
  executor's barrier before the iteration (and NCCL's communicator is created eagerly, as
  ``init_distributed`` passes ``device_id``), so a batch between a subset of ranks is allowed (torch's
  rule: a first call on a group must involve all its ranks). gloo issues the batch's ops one by one
  (it has no coalescing) and returns one Work per op; NCCL returns one Work for the whole batch, so
  every op of the batch completes with it. Blocking sends and receives stay alone: the IR's blocking
  send returns only once its receive is posted, so the validator already rejects two ranks that
  block sending to each other.
- Any other communication op with a ``handle`` is issued with ``async_op=True``; its ``wait``
  completes it.

Nothing is emulated: gloo in torch 2.13 supports every collective kind the IR has (checked by the
gloo tests), so the collectives issued equal the IR's, op for op. torch.distributed functions are
looked up on the module at call time (``dist.broadcast(...)``, ``dist.batch_isend_irecv(...)``), so a
test can wrap them to record what was really issued.
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.distributed as dist

from executor.groups import GroupInfo
from simulator.ir.ops import (AllGather, AllReduce, Broadcast, CommOp, Gemm, Local, Op, Recv, Reduce, ReduceScatter,
                              Send, Slice, Wait)
from simulator.ir.schedule import Schedule
from simulator.workloads.functions import FUNCTIONS



class Pending:
    """An asynchronous op in flight: its torch Work and what to do after it completes."""

    def __init__(self, work, finish: Callable[[], None] | None = None):
        self.work = work
        self.finish = finish

    def wait(self) -> None:
        """Block until the op completes (on GPU: until the current stream waits for it), then finish it."""
        if self.work is not None:
            self.work.wait()
        if self.finish is not None:
            self.finish()


class _WaitedOnce:
    """Works that several ops share (a batch's one coalesced Work), waited for once by the first of them.

    Used where a batch returns one Work for all its ops (NCCL coalesces a group into one). Waiting on
    it a second time is not assumed harmless: a gloo send or receive Work standing in for it in a test
    waited for one more completion, which never came.
    """

    def __init__(self, works: list):
        self.works = works
        self.done = False

    def wait(self) -> None:
        if not self.done:
            for work in self.works:
                work.wait()
            self.done = True


def p2p_batches(program: list[Op]) -> list[list[int]]:
    """The steps of each run of consecutive asynchronous sends and receives in ``program``, in order.

    Example: ``send &a, recv &b, gemm, send &c, wait a, wait b, wait c, recv`` (the last one blocking)
    gives ``[[0, 1], [3]]``: the gemm ends the first run, the wait the second; a blocking recv is in none.
    """
    batches: list[list[int]] = []
    previous = -2
    for step, op in enumerate(program):
        if isinstance(op, (Send, Recv)) and op.handle is not None:
            if step == previous + 1:
                batches[-1].append(step)
            else:
                batches.append([step])
            previous = step
    return batches


def _gather_fn():
    return getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor


def _scatter_fn():
    return getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor


class TorchOps:
    """Runs the ops of one rank's program on that rank's tensors."""

    def __init__(self, schedule: Schedule, rank: int, buffers: dict[str, torch.Tensor],
                 groups: dict[str, GroupInfo], reduce_clobbers_input: bool, *, seed: int):
        self.schedule = schedule
        self.seed = seed
        """The run's seed, for the seeded local functions (``RunOptions.seed``: the inputs' seed)."""
        self.rank = rank
        self.mem = buffers
        self.groups = groups
        self.scratch_steps = _live_nonroot_reduces(schedule, rank) if reduce_clobbers_input else set()
        self.program = schedule.programs[rank]
        self.batch_of = {step: steps for steps in p2p_batches(self.program) for step in steps}
        """Each batched send / recv step -> the steps of its batch."""
        self._issued: dict[int, Pending] = {}  # batched steps issued with their batch, not yet run

    def issued_at(self, step: int) -> int:
        """The step whose ``run`` really issues step ``step``: the first of its batch, else itself."""
        batch = self.batch_of.get(step)
        return batch[0] if batch else step

    def run(self, step: int, op: Op) -> Pending | None:
        """Execute ``op`` (step ``step`` of this rank's program); a Pending when it is asynchronous.

        A batched send or receive (``p2p_batches``) is issued with its whole batch when the first of
        the batch runs; running each later one hands out its Pending.
        """
        if step in self.batch_of:
            if op != self.program[step]:
                raise AssertionError(f"step {step} of rank {self.rank} is {self.program[step].short()}, "
                                     f"not {op.short()}")
            if step == self.batch_of[step][0]:
                self._issue_batch(self.batch_of[step])
            return self._issued.pop(step)
        if isinstance(op, CommOp):
            pending = self._communicate(step, op, async_op=op.handle is not None)
            if op.handle is None:
                pending.wait()
                return None
            return pending
        if isinstance(op, Wait):
            raise AssertionError("wait is completed by the caller, which holds the handles")
        self._compute(op)
        return None

    # -- compute ---------------------------------------------------------------------------------
    def _compute(self, op: Op) -> None:
        mem = self.mem
        if isinstance(op, Gemm):
            a = mem[op.a].T if op.trans_a else mem[op.a]
            b = mem[op.b].T if op.trans_b else mem[op.b]
            if op.accumulate:
                mem[op.out].addmm_(a, b)
            else:
                torch.mm(a, b, out=mem[op.out])
        elif isinstance(op, Local):
            function = FUNCTIONS[op.fn]
            function.torch(mem[op.out], *(mem[name] for name in op.inputs), **op.param_dict(),
                           **({"seed": self.seed} if function.seeded else {}))
        elif isinstance(op, Slice):
            src = mem[op.src][_index(op.src_rows), _index(op.src_cols)]
            mem[op.out][_index(op.out_rows), _index(op.out_cols)].copy_(src)
        else:
            raise AssertionError(f"executor has no rule for {op.kind}")

    # -- communication ---------------------------------------------------------------------------
    def _issue_batch(self, steps: list[int]) -> None:
        """Issue the sends and receives of ``steps`` as one ``batch_isend_irecv``."""
        ops = [self.program[step] for step in steps]
        p2p = [dist.P2POp(dist.isend if isinstance(op, Send) else dist.irecv, self.mem[op.buf], op.peer)
               for op in ops]
        works = dist.batch_isend_irecv(p2p)
        # one Work per op (gloo), or one for the whole coalesced batch (NCCL), which completes every op
        shared = None if len(works) == len(ops) else _WaitedOnce(works)
        for i, step in enumerate(steps):
            self._issued[step] = Pending(works[i] if shared is None else shared)

    def _communicate(self, step: int, op: CommOp, async_op: bool) -> Pending:
        mem = self.mem
        if isinstance(op, (Send, Recv)):  # blocking: the asynchronous ones go in batches (run)
            if isinstance(op, Send):
                dist.send(mem[op.buf], dst=op.peer)
            else:
                dist.recv(mem[op.buf], src=op.peer)
            return Pending(None)
        info = self.groups[op.group]
        group = info.handle
        if isinstance(op, Broadcast):
            root = info.members[op.root]
            return Pending(dist.broadcast(mem[op.buf], src=root, group=group, async_op=async_op))
        if isinstance(op, Reduce):
            root = info.members[op.root]
            if root == self.rank:
                target = mem[op.out]
                if op.out != op.buf:
                    target.copy_(mem[op.buf])
            else:
                target = mem[op.buf].clone() if step in self.scratch_steps else mem[op.buf]
            return Pending(dist.reduce(target, dst=root, group=group, async_op=async_op))
        if isinstance(op, AllReduce):
            return Pending(dist.all_reduce(mem[op.buf], group=group, async_op=async_op))
        if isinstance(op, AllGather):
            return self._all_gather(info, op, async_op)
        if isinstance(op, ReduceScatter):
            return self._reduce_scatter(info, op, async_op)
        raise AssertionError(f"executor has no rule for {op.kind}")

    def _all_gather(self, info: GroupInfo, op: AllGather, async_op: bool) -> Pending:
        inp, out = self.mem[op.inp], self.mem[op.out]
        if op.axis == 0 and info.in_torch_order:
            return Pending(_gather_fn()(out, inp, group=info.handle, async_op=async_op))
        parts = out.chunk(len(info.members), dim=op.axis)  # IR order
        if op.axis == 0:
            outputs = [parts[g] for g in info.torch_order]  # contiguous row blocks, written in place
            return Pending(dist.all_gather(outputs, inp, group=info.handle, async_op=async_op))
        outputs = [torch.empty_like(inp) for _ in info.members]

        def finish() -> None:
            for t, g in enumerate(info.torch_order):
                parts[g].copy_(outputs[t])

        return Pending(dist.all_gather(outputs, inp, group=info.handle, async_op=async_op), finish)

    def _reduce_scatter(self, info: GroupInfo, op: ReduceScatter, async_op: bool) -> Pending:
        inp, out = self.mem[op.inp], self.mem[op.out]
        if op.axis == 0 and info.in_torch_order:
            return Pending(_scatter_fn()(out, inp, group=info.handle, async_op=async_op))
        parts = inp.chunk(len(info.members), dim=op.axis)  # IR order
        inputs = [parts[g].contiguous() for g in info.torch_order]
        return Pending(dist.reduce_scatter(out, inputs, group=info.handle, async_op=async_op))


def _index(region: tuple[int, int] | None) -> slice:
    return slice(None) if region is None else slice(region[0], region[1])


def _live_nonroot_reduces(schedule: Schedule, rank: int) -> set[int]:
    """Steps of ``rank``'s non-root reduces whose ``buf`` is read again before being overwritten."""
    program = schedule.programs[rank]
    outputs = {block.buffer for block in schedule.outputs if block.rank == rank}
    steps = set()
    for step, op in enumerate(program):
        if not isinstance(op, Reduce) or schedule.groups[op.group][op.root] == rank:
            continue
        live = op.buf in outputs
        for later in program[step + 1:]:
            if op.buf in later.reads():
                live = True
                break
            if op.buf in later.writes():
                live = False
                break
        if live:
            steps.add(step)
    return steps

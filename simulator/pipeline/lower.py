"""A pipelined training step as one Schedule: pp stages x a tensor-parallel algorithm, micro-batches, an order.

Ranks (DESIGN.md, "Pipeline parallelism (conventions)", data parallel 1): global rank = r * T + t for
pipeline rank r and tensor-parallel rank t, T the algorithm's group size. Worked example, 1d on 2 GPUs
with pp = 3: pipeline rank 0 is ranks 0-1, rank 1 is 2-3, rank 2 is 4-5; tensor-parallel rank 1 of
pipeline rank 2 is global rank 5, and it sends to / receives from ranks 3 (rank 1's t = 1).

The L blocks are cut into S = pp x v virtual stages of L / S consecutive blocks; stage s runs on pipeline
rank s % pp (``simulator.pipeline.order``). Each rank runs its ``pipeline_order`` actions in turn:

- ``F`` (micro-batch i, stage s): the forward ops of each of the stage's blocks, as the algorithm's own
  generator emits one block (``simulator.pipeline.block``), its buffers renamed per (micro-batch,
  layer) (``simulator.pipeline.names``) and its process groups per pipeline rank (``pp<r>.<group>``);
  block l + 1 reads block l's output buffer, so nothing is copied inside a stage;
- ``B`` (i, s): the stage's blocks' backward ops, last block first; after each block, its weight
  gradients of micro-batch i are accumulated (``copy`` for the rank's first micro-batch, ``add`` after).

Between stages, each rank sends its blocks of the activation (after ``F``) and of its gradient (after
``B``) to the rank with the same t on the neighbouring stage, in the layout the algorithm leaves them.
Every receive is posted, asynchronously, at the start of the program, in the order its sender sends
(the n-th send from a to b meets the n-th receive at b from a); it is waited for right before the
action that reads it. A send is asynchronous too, and waited for at the end of the program: sends are
eager, as ``simulator.pipeline.timeline.replay`` models them (a transfer starts when its sender is done
and holds back only its receiver). So the only waits are for data, and the program cannot deadlock
unless the order itself does. (Waiting for each send when the rank's next action starts, as Megatron-LM's
``send_forward_recv_backward`` does, holds the sender for the transfer; receives posted only when needed
deadlock interleaved orders on two ranks, whose two channels carry both directions.)

Inputs are each micro-batch's ``X.m<i>`` (on the first stage) and ``dY.m<i>`` (on the last) and every
layer's weights ``<W>.l<l>``; outputs each micro-batch's ``Y.m<i>`` and ``dX.m<i>`` and every weight
gradient summed over micro-batches, ``d<W>.l<l>``. ``simulator.pipeline.reference`` computes them densely.

With ``vocab``, the last stage also runs the LM head after its last block (``simulator.pipeline.head``:
the algorithm's own linear onto the padded vocabulary); its ``logits.m<i>`` and ``dlogits.m<i>`` take the
place of ``Y.m<i>`` and ``dY.m<i>``, and its weight ``Whead`` and summed gradient ``dWhead`` join the
weights.

Known gaps: the embedding lookup and the loss are not in the IR (the first stage starts from the block
input, the last from the gradient of its output or of the logits), nor the tied embedding's gradient
all-reduce between the first and last stage. Every block and micro-batch draws the same dropout masks
(they are keyed by position, not by layer); the reference draws the same ones, so the proof holds.
"""

from __future__ import annotations

from simulator.errors import InputError
from simulator.ir.ops import Local, Op, Recv, Send, Wait
from simulator.ir.schedule import Schedule, TensorBlock
from simulator.limits import check_ranks
from simulator.pipeline.block import BlockPieces
from simulator.pipeline.head import HeadPieces
from simulator.pipeline.names import act, base, layer_names, weight
from simulator.pipeline.order import Action, check_pipeline_sizes, pipeline_order
from simulator.pipeline.templates import templates
from simulator.pipeline.tensors import tensor_shape
from simulator.workloads.layers import grad
from simulator.workloads.workload import Workload

__all__ = ["MAX_PIPELINE_OPS", "lower_pipeline", "pipeline_options"]

MAX_PIPELINE_OPS = 5_000_000
"""The most ops a lowered step may have: every block op runs once per layer and micro-batch, so a
published model's step (96 layers x 64 micro-batches) would be hundreds of millions of ops, minutes and
gigabytes to build; 2d [4,4,1] x pp 4, 16 layers, 16 micro-batches is 0.8 million ops, built in 5 s."""


def pipeline_options(schedule: Schedule) -> dict | None:
    """The pipeline a schedule lowers (layers, pp, micro_batches, schedule, virtual_stages), or None."""
    return schedule.options.get("pipeline")


def lower_pipeline(algorithm: str, workload: Workload, layers: int, pp: int, micro_batches: int,
                   schedule: str = "1f1b", virtual_stages: int = 1, dtype: str = "float32",
                   grid: tuple[int, ...] | None = None, gpus: int | None = None, overlap: bool = False,
                   vocab: int | None = None, async_dgrad: bool = False) -> Schedule:
    """The pipelined step (module docstring); with ``vocab``, the LM head on the last stage
    (``simulator.pipeline.head``); ``async_dgrad`` as ``build_schedule``'s. InputError for sizes that do not
    fit."""
    if workload.name != "transformer":
        raise InputError(f"--pp pipelines transformer blocks; --workload {workload.name} has none")
    check_pipeline_sizes(schedule, pp, micro_batches, virtual_stages, layers)
    block = BlockPieces.of(algorithm, workload, dtype, grid=grid, gpus=gpus, overlap=overlap, async_dgrad=async_dgrad)
    check_ranks(pp * block.tp, f"--pp {pp} x {block.tp} tensor-parallel ranks")
    ops = sum(map(len, block.schedule.programs)) * layers * micro_batches
    if ops > MAX_PIPELINE_OPS:
        raise InputError(f"a pipelined step of {layers} layers x {micro_batches} micro-batches is {ops:,} ops, more "
                         f"than {MAX_PIPELINE_OPS:,} (about 6 us and 100 bytes each); use fewer layers or "
                         f"micro-batches (the step time of a large model is the planner's: tpsim predict)")
    head = None
    if vocab is not None:
        if not (isinstance(vocab, int) and vocab >= 1):
            raise InputError(f"--vocab must be an integer >= 1, got {vocab!r}")
        head = HeadPieces.of(block, workload, vocab, algorithm, dtype, grid, gpus, overlap, async_dgrad)
    return _Lowering(block, workload, layers, pp, micro_batches, schedule, virtual_stages, head).build()


class _Lowering:
    """The step being built: every rank's buffers, program and part labels, then the Schedule (``build``)."""

    def __init__(self, block: BlockPieces, workload: Workload, layers: int, pp: int, m: int, schedule: str, v: int,
                 head: HeadPieces | None):
        self.block, self.workload, self.layers, self.pp, self.m, self.v = block, workload, layers, pp, m, v
        self.head = head
        self.kind = schedule
        self.stages = pp * v
        self.per_stage = layers // self.stages
        self.order = pipeline_order(schedule, pp, m, v)
        t_count = block.tp
        self.world = pp * t_count
        self.buffers: list[dict] = [{} for _ in range(self.world)]
        self.programs: list[list[Op]] = [[] for _ in range(self.world)]
        self.parts: list[list[tuple[int, str]]] = [[] for _ in range(self.world)]
        self.inputs: list[TensorBlock] = []
        self.outputs: list[TensorBlock] = []
        self.shared: dict = {}
        self.templates = [{"F": templates(block.schedule, t, block.forward[t], 0),
                           "B": templates(block.schedule, t, block.backward[t], len(block.forward[t]))}
                          for t in range(t_count)]

    # -- addressing --------------------------------------------------------------------------------
    def rank(self, stage: int, t: int) -> int:
        """Global rank of tensor-parallel rank t on the pipeline rank holding virtual ``stage``."""
        return (stage % self.pp) * self.block.tp + t

    def stage_layers(self, stage: int) -> range:
        return range(stage * self.per_stage, (stage + 1) * self.per_stage)

    def names(self, mb: int, layer: int, stage: int, t: int) -> dict[str, str]:
        first, last = self.stage_layers(stage)[0], self.stage_layers(stage)[-1]
        return layer_names(self.block, t, mb, layer, first_in_stage=layer == first, last_in_stage=layer == last)

    # -- messages ----------------------------------------------------------------------------------
    def sends(self, a: Action, t: int) -> list[tuple[int, str, str]]:
        """(peer, buffer, handle) of each message ``a`` sends from tensor-parallel rank t, in send order."""
        out = []
        if a.kind == "F" and a.stage < self.stages - 1:
            last = self.stage_layers(a.stage)[-1]
            for k, (_, y, _, _) in enumerate(self.block.boundary[t]):
                out.append((self.rank(a.stage + 1, t), act(y, a.micro_batch, last), f"pp.sx{k}.{a}"))
        if a.kind == "B" and a.stage > 0:
            first = self.stage_layers(a.stage)[0]
            for k, (_, _, dx, _) in enumerate(self.block.boundary[t]):
                out.append((self.rank(a.stage - 1, t), act(dx, a.micro_batch, first), f"pp.sg{k}.{a}"))
        return out

    def recvs(self, a: Action, t: int) -> list[tuple[int, str, str, Action]]:
        """(peer, buffer, handle, the sender's action) of each message ``a`` reads on tensor-parallel rank t,
        in the order the sender sends them."""
        out = []
        if a.kind == "F" and a.stage > 0:
            first = self.stage_layers(a.stage)[0]
            src = Action("F", a.micro_batch, a.stage - 1)
            for k, (x, _, _, _) in enumerate(self.block.boundary[t]):
                out.append((self.rank(a.stage - 1, t), act(x, a.micro_batch, first), f"pp.rx{k}.{a}", src))
        if a.kind == "B" and a.stage < self.stages - 1:
            last = self.stage_layers(a.stage)[-1]
            src = Action("B", a.micro_batch, a.stage + 1)
            for k, (_, _, _, dy) in enumerate(self.block.boundary[t]):
                out.append((self.rank(a.stage + 1, t), act(dy, a.micro_batch, last), f"pp.rg{k}.{a}", src))
        return out

    def posted_recvs(self, r: int, t: int) -> list[Recv]:
        """Every receive of rank (r, t), each peer's in the order that peer sends them."""
        position = {a: step for actions in self.order for step, a in enumerate(actions)}
        wanted = [(peer, position[src], k, buf, handle) for a in self.order[r]
                  for k, (peer, buf, handle, src) in enumerate(self.recvs(a, t))]
        wanted.sort(key=lambda w: w[:3])  # per peer, the sender's action order, then its block order
        return [Recv(peer=peer, buf=buf, handle=handle) for peer, _, _, buf, handle in wanted]

    # -- emission ----------------------------------------------------------------------------------
    def emit(self, rank: int, op: Op, label: str) -> None:
        program, runs = self.programs[rank], self.parts[rank]
        if label and (not runs or runs[-1][1] != label):
            runs.append((len(program), label))
        program.append(op)

    def declare(self, rank: int, name: str, spec) -> None:
        existing = self.buffers[rank].setdefault(name, spec)
        if existing.shape != spec.shape:
            raise AssertionError(f"rank {rank}: buffer {name!r} declared as {existing.shape} and {spec.shape}")

    def build(self) -> Schedule:
        block = self.block
        for r, actions in enumerate(self.order):
            for t in range(block.tp):
                g = r * block.tp + t
                for recv in self.posted_recvs(r, t):
                    self.declare(g, recv.buf, block.spec(t, base(recv.buf)))
                    self.emit(g, recv, "p2p")
                accumulated: set[str] = set()
                pending: list[str] = []
                for a in actions:
                    for _, _, handle, _ in self.recvs(a, t):
                        self.emit(g, Wait(handle), "p2p")
                    self.run_action(g, t, a, accumulated)
                    for peer, buf, handle in self.sends(a, t):
                        self.emit(g, Send(peer=peer, buf=buf, handle=handle), "p2p")
                        pending.append(handle)
                for handle in pending:  # sends are eager: none holds its rank back (timeline.replay's model)
                    self.emit(g, Wait(handle), "p2p")
        self.place_blocks()
        return Schedule(
            algorithm=block.schedule.algorithm, grid=block.schedule.grid, workload=self.workload.to_dict(),
            passes="both", dtype=block.schedule.dtype, groups=self.groups(), buffers=self.buffers,
            programs=self.programs, inputs=self.inputs, outputs=self.outputs, tensors=self.tensors(),
            options={**block.schedule.options, "pipeline": {
                "layers": self.layers, "pp": self.pp, "micro_batches": self.m, "schedule": self.kind,
                "virtual_stages": self.v, "tp": block.tp, "vocab": self.head.vocab if self.head else None}},
            parts=self.parts)

    def run_action(self, g: int, t: int, a: Action, accumulated: set[str]) -> None:
        block, r = self.block, g // self.block.tp
        layers = self.stage_layers(a.stage)
        declared = block.schedule.buffers[t]
        with_head = self.head is not None and a.stage == self.stages - 1
        if with_head and a.kind == "B":  # the head's backward gives the last block its output gradient
            self.run_head(g, t, a, accumulated)
        for layer in (layers if a.kind == "F" else reversed(layers)):
            names = self.names(a.micro_batch, layer, a.stage, t)
            if a.kind == "F":  # every buffer of the layer, once (the backward's too)
                for name, spec in declared.items():
                    self.declare(g, names[name], spec)
            for template in self.templates[t][a.kind]:
                self.emit(g, template.make(names, r, block.tp, self.shared), template.label)
            if a.kind == "B":
                for buf, _ in block.weight_grads[t]:
                    total, part = weight(buf, layer), names[buf]
                    self.declare(g, total, block.spec(t, buf))
                    fn, inputs = ("add", (total, part)) if total in accumulated else ("copy", (part,))
                    accumulated.add(total)
                    self.emit(g, Local(fn=fn, out=total, inputs=inputs), "grad-acc")
        if with_head and a.kind == "F":
            self.run_head(g, t, a, accumulated)

    def run_head(self, g: int, t: int, a: Action, accumulated: set[str]) -> None:
        head, r = self.head, g // self.block.tp
        names = head.names(t, a.micro_batch, self.layers - 1)
        if a.kind == "F":
            for name, spec in head.schedule.buffers[t].items():
                self.declare(g, names[name], spec)
        for template in head.templates[t][a.kind]:
            self.emit(g, template.make(names, r, self.block.tp, self.shared), "lm-head")
        if a.kind == "B":
            for buf in head.weight_grads[t]:
                total = head.accumulator(buf)
                self.declare(g, total, head.schedule.spec(t, buf))
                fn, inputs = ("add", (total, names[buf])) if total in accumulated else ("copy", (names[buf],))
                accumulated.add(total)
                self.emit(g, Local(fn=fn, out=total, inputs=inputs), "grad-acc")

    def groups(self) -> dict[str, tuple[int, ...]]:
        tp = self.block.tp
        return {f"pp{r}.{name}": tuple(r * tp + t for t in ranks)
                for r in range(self.pp) for name, ranks in self.block.schedule.groups.items()}

    def place_blocks(self) -> None:
        """Schedule inputs and outputs: per micro-batch X, dY, Y, dX; per layer weights and their gradients."""
        sched, w = self.block.schedule, self.workload
        x, y = w.input_names("fwd")[0], w.output_names("fwd")[0]
        ends = {x: (0, 0, self.inputs), grad(y): (self.stages - 1, self.layers - 1, self.inputs),
                y: (self.stages - 1, self.layers - 1, self.outputs), grad(x): (0, 0, self.outputs)}
        if self.head is not None:  # the head's logits and their gradient take Y's and dY's place
            inputs, outputs = self.head.blocks(lambda t: self.rank(self.stages - 1, t), self.m)
            self.inputs += inputs
            self.outputs += outputs
        for b in (*sched.inputs, *sched.outputs):
            if self.head is not None and b.tensor in (y, grad(y)):
                continue
            if b.tensor in ends:
                stage, layer, into = ends[b.tensor]
                for mb in range(self.m):
                    into.append(TensorBlock(self.rank(stage, b.rank), act(b.buffer, mb, layer),
                                            f"{b.tensor}.m{mb}", b.rows, b.cols))
                continue
            into = self.inputs if b in sched.inputs else self.outputs
            for layer in range(self.layers):
                stage = layer // self.per_stage
                into.append(TensorBlock(self.rank(stage, b.rank), weight(b.buffer, layer),
                                        f"{b.tensor}.l{layer}", b.rows, b.cols))
        for record in (*self.inputs, *self.outputs):
            if record.buffer not in self.buffers[record.rank]:
                raise AssertionError(f"rank {record.rank}: {record.tensor} lives in undeclared {record.buffer}")

    def tensors(self) -> dict[str, tuple[int, int]]:
        vocab = self.head.vocab if self.head is not None else None
        return {b.tensor: tensor_shape(self.workload, vocab, b.tensor) for b in (*self.inputs, *self.outputs)}

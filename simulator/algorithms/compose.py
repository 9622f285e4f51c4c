"""Lower a workload's layer list onto one algorithm: the only code that strings layers into a schedule.

The workload (``simulator.workloads``) is a list of layer records; the algorithm
(``simulator.algorithms.base.Algorithm``) knows where each linear's input, output and weight blocks live,
how to emit its three products, and (for the transformer block) where a [1, n] parameter vector lives and
how to sum row statistics and vector gradients across ranks. Each layer kind says how it lowers
(``lower_forward``, ``lower_backward``, its layouts; ``simulator.workloads.layers``), given a
``Lowering``: the builder, the algorithm, and where every activation lives. Walking the list:

- inputs: the first layer's input activation and every weight, where the layers read them;
- forward, layer by layer; then the last output;
- backward, last layer first, from the last output's gradient; then the first input's gradient and
  every weight gradient (a gradient has its tensor's layout). A tensor read by two layers (the
  transformer block's input, by LayerNorm and the residual) gets two gradient contributions, which
  ``Lowering.grad_of`` adds before the gradient is first read;
- a backward-only schedule takes the forward's saved activations as inputs, in the forward's layout.

Each activation's layout is the one its producer leaves; compose checks that each layer reads its
input where the previous layer left it.
"""

from __future__ import annotations

from collections import Counter

from simulator.algorithms.base import Algorithm, Blocks, LinearNames
from simulator.gcpause import paused_gc
from simulator.ir.builder import ScheduleBuilder
from simulator.ir.ops import Local
from simulator.ir.schedule import Schedule
from simulator.workloads.layers import Layer, Linear, grad
from simulator.workloads.workload import Workload

__all__ = ["Lowering", "compose"]


class Lowering:
    """What a layer lowers with: the builder ``b``, the algorithm ``alg``, and the activations' ``layout``."""

    def __init__(self, alg: Algorithm, b: ScheduleBuilder, workload: Workload):
        self.alg, self.b, self.m = alg, b, workload.m
        self.layout: dict[str, Blocks] = {}
        self._names: dict[Linear, LinearNames] = {}
        self._vectors: dict[str, dict[int, str]] = {}
        self._readers = Counter(name for layer in workload.layers() for name in layer.inputs)
        self._grads: dict[str, list[str]] = {}

    def names(self, linear: Linear) -> LinearNames:
        """The linear as the algorithm lowers it: its names and global sizes."""
        if linear not in self._names:
            self._names[linear] = LinearNames.of(linear, self.m)
        return self._names[linear]

    def emit(self, rank: int, fn: str, out: str, inputs: tuple[str, ...], params: dict | None = None) -> None:
        """``out = fn(inputs)`` as one ``local`` op on ``rank`` (``out`` declared by the caller)."""
        self.b.emit(rank, Local(fn=fn, out=out, inputs=inputs, params=tuple((params or {}).items())))

    def local(self, fn: str, out: str, inputs: tuple[str, ...], blocks: Blocks) -> None:
        """``out = fn(inputs)`` as a ``local`` op on every block of ``blocks`` (``out`` takes the block's shape)."""
        for rank, rows, cols in blocks:
            self.b.buffer(rank, out, (rows[1] - rows[0], cols[1] - cols[0]))
            self.b.emit(rank, Local(fn=fn, out=out, inputs=inputs))

    def place(self, role: str, tensor: str, blocks: Blocks) -> None:
        """Declare ``tensor``'s blocks as inputs or outputs of the schedule."""
        for rank, rows, cols in blocks:
            self.b.block(role, rank, tensor, tensor, rows, cols)

    def vector(self, name: str, layout: Blocks) -> dict[int, str]:
        """The buffer holding, on each rank of ``layout``, its block of parameter vector ``name`` (fetched
        from where the algorithm keeps it the first time it is asked for)."""
        if name not in self._vectors:
            self._vectors[name] = self.alg.fetch_vector(self.b, name, layout)
        return self._vectors[name]

    # -- gradients: contributions of each reader, summed ---------------------------------------------
    def grad_target(self, tensor: str) -> str:
        """The buffer a layer writes its gradient contribution to ``tensor`` into: ``grad(tensor)`` when it
        is the only one, else one buffer per contribution (``grad_of`` sums them)."""
        if self._readers[tensor] <= 1:
            return grad(tensor)
        return f"{grad(tensor)}_c{len(self._grads.get(tensor, ()))}"

    def grad_written(self, tensor: str) -> None:
        """Record that the buffer ``grad_target(tensor)`` named now holds a contribution."""
        self._grads.setdefault(tensor, []).append(self.grad_target(tensor))

    def grad_alias(self, tensor: str, buffer: str) -> None:
        """Record ``buffer`` (a gradient already computed) as a contribution to ``tensor``'s gradient."""
        self._grads.setdefault(tensor, []).append(buffer)

    def grad_of(self, tensor: str) -> str:
        """The buffer holding ``tensor``'s whole gradient: the schedule's input for the last output, the one
        contribution, or (with two) ``grad(tensor)`` = their sum, added here on every block."""
        parts = self._grads.get(tensor)
        if not parts:
            return grad(tensor)
        if len(parts) == 1:
            return parts[0]
        if len(parts) != 2 or len(parts) != self._readers[tensor]:
            raise AssertionError(f"{tensor}: gradient read with {len(parts)} of {self._readers[tensor]} contributions")
        self.local("add", grad(tensor), tuple(parts), self.layout[tensor])
        self._grads[tensor] = [grad(tensor)]
        return grad(tensor)


def compose(alg: Algorithm, workload: Workload, passes: str, dtype: str) -> Schedule:
    """The schedule of ``workload``'s ``passes`` under ``alg``."""
    with paused_gc():  # a million ops at 4,096 ranks, and no cycles among them
        return _compose(alg, workload, passes, dtype)


def _compose(alg: Algorithm, workload: Workload, passes: str, dtype: str) -> Schedule:
    alg.check(workload)
    groups = alg.groups() if workload.is_chain else {**alg.groups(), **alg.block_groups()}
    b = ScheduleBuilder(alg.name, alg.grid_shape, workload, passes, dtype, alg.world_size, groups)
    low = Lowering(alg, b, workload)
    layers = workload.layers()
    _lay_out(low, layers)
    weights = [(layer, name) for layer in layers for name in layer.weights]
    first, last = layers[0].inputs[0], workload.output_names("fwd")[0]
    low.place("input", first, low.layout[first])
    for layer, name in weights:
        low.place("input", name, layer.weight_layout(low, name))
    if passes in ("fwd", "both"):
        for layer in layers:
            b.part(layer.part)
            layer.lower_forward(low)
        low.place("output", last, low.layout[last])
    if passes == "bwd":
        for name in workload.saved_activations():
            low.place("input", name, low.layout[name])
    if passes in ("bwd", "both"):
        low.place("input", grad(last), low.layout[last])
        for layer in reversed(layers):
            b.part(layer.part)
            layer.lower_backward(low)
        b.part(layers[0].part)
        low.place("output", grad(first), low.layout[first])
        if low.grad_of(first) != grad(first):
            raise AssertionError(f"{alg.name}: the gradient of {first} is left in {low.grad_of(first)}")
        for layer, name in weights:
            low.place("output", grad(name), layer.weight_layout(low, name))
    return b.build()


def _lay_out(low: Lowering, layers: tuple[Layer, ...]) -> None:
    """Where every activation lives: where its producer leaves it, checked against where it is read."""
    reads = [layer.input_layout(low) for layer in layers]
    low.layout[layers[0].inputs[0]] = next(blocks for blocks in reads if blocks is not None)
    for layer, wanted in zip(layers, reads):
        if wanted is not None and sorted(wanted) != sorted(low.layout[layer.inputs[0]]):
            raise AssertionError(f"{low.alg.name}: {layer} reads {layer.inputs[0]} in another layout than the "
                                 f"layer before leaves it")
        low.layout.update(layer.output_layouts(low, [low.layout[name] for name in layer.inputs]))

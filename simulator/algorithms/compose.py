"""Lower a workload's layer list onto one algorithm: the only code that strings layers into a schedule.

The workload (``simulator.workloads``) is a chain of layer records; the algorithm
(``simulator.algorithms.base.Algorithm``) knows where each linear's input, output and weight blocks live
and how to emit its three products. Each layer kind says how it lowers (``lower_forward``,
``lower_backward``, its layouts; ``simulator.workloads.layers``), given a ``Lowering``: the builder, the
algorithm, and where every activation lives. Walking the chain:

- inputs: the chain's input activation and every weight, where the layers read them;
- forward, layer by layer; then the last output;
- backward, last layer first, from the last output's gradient; then the first input's gradient and
  every weight gradient (a gradient has its tensor's layout);
- a backward-only schedule takes the forward's saved activations as inputs, in the forward's layout.

Each activation's layout is the one its producer leaves; compose checks that each layer reads its
input where the previous layer left it.
"""

from __future__ import annotations

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

    def names(self, linear: Linear) -> LinearNames:
        """The linear as the algorithm lowers it: its names and global sizes."""
        if linear not in self._names:
            self._names[linear] = LinearNames.of(linear, self.m)
        return self._names[linear]

    def local(self, fn: str, out: str, inputs: tuple[str, ...], blocks: Blocks) -> None:
        """``out = fn(inputs)`` as a ``local`` op on every block of ``blocks``."""
        for rank, rows, cols in blocks:
            self.b.buffer(rank, out, (rows[1] - rows[0], cols[1] - cols[0]))
            self.b.emit(rank, Local(fn=fn, out=out, inputs=inputs))

    def place(self, role: str, tensor: str, blocks: Blocks) -> None:
        """Declare ``tensor``'s blocks as inputs or outputs of the schedule."""
        for rank, rows, cols in blocks:
            self.b.block(role, rank, tensor, tensor, rows, cols)


def compose(alg: Algorithm, workload: Workload, passes: str, dtype: str) -> Schedule:
    """The schedule of ``workload``'s ``passes`` under ``alg``."""
    with paused_gc():  # a million ops at 4,096 ranks, and no cycles among them
        return _compose(alg, workload, passes, dtype)


def _compose(alg: Algorithm, workload: Workload, passes: str, dtype: str) -> Schedule:
    alg.check(workload)
    b = ScheduleBuilder(alg.name, alg.grid_shape, workload, passes, dtype, alg.world_size, alg.groups())
    low = Lowering(alg, b, workload)
    layers = workload.layers()
    _lay_out(low, layers)
    weights = [(layer, name) for layer in layers for name in layer.weights]
    first, last = layers[0], layers[-1]
    low.place("input", first.x, low.layout[first.x])
    for layer, name in weights:
        low.place("input", name, layer.weight_layout(low, name))
    if passes in ("fwd", "both"):
        for layer in layers:
            layer.lower_forward(low)
        low.place("output", last.y, low.layout[last.y])
    if passes == "bwd":
        for name in workload.saved_activations():
            low.place("input", name, low.layout[name])
    if passes in ("bwd", "both"):
        low.place("input", grad(last.y), low.layout[last.y])
        for layer in reversed(layers):
            layer.lower_backward(low)
        low.place("output", grad(first.x), low.layout[first.x])
        for layer, name in weights:
            low.place("output", grad(name), layer.weight_layout(low, name))
    return b.build()


def _lay_out(low: Lowering, layers: tuple[Layer, ...]) -> None:
    """Where every activation lives: where its producer leaves it, checked against where it is read."""
    reads = [layer.input_layout(low) for layer in layers]
    low.layout[layers[0].x] = next(blocks for blocks in reads if blocks is not None)
    for layer, wanted in zip(layers, reads):
        if wanted is not None and sorted(wanted) != sorted(low.layout[layer.x]):
            raise AssertionError(f"{low.alg.name}: {layer} reads {layer.x} in another layout than the layer "
                                 f"before leaves it")
        low.layout[layer.y] = layer.output_layout(low, low.layout[layer.x])

"""The LM head on the last stage: logits = Y Whead, the output projection as the algorithm's own linear.

``simulator.training.lm_head`` models the head as ``build_schedule(algorithm, gemm(b s, h, V'))`` on the
tensor-parallel grid, V' the vocabulary padded as Megatron-LM pads it; the pipeline runs that very
schedule after the last block of each micro-batch's forward, and its backward before the last block's
backward: its input A is the last block's output Y (every algorithm leaves Y where its gemm reads A,
block for block: checked here), its dA is the last block's output gradient, its weight B is ``Whead``
and its weight gradient is summed over the micro-batches like the blocks'. The loss is not in the IR:
each micro-batch's ``dlogits`` is a schedule input, as the last block's ``dY`` is without the head.
Neither is the embedding lookup on the first stage (a gather; the tied weight's gradient from it, and
its all-reduce between the first and the last stage, are the planner's).
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.algorithms.registry import build_schedule
from simulator.ir.schedule import Schedule, TensorBlock
from simulator.pipeline.block import BlockPieces, check_read_only
from simulator.pipeline.names import act
from simulator.pipeline.tensors import HEAD_WEIGHT, LOGITS
from simulator.pipeline.templates import Template, templates
from simulator.training.lm_head import lm_head_workload
from simulator.workloads.layers import grad
from simulator.workloads.workload import Workload

__all__ = ["HeadPieces"]


@dataclass(frozen=True)
class HeadPieces:
    """The LM head's schedule on T ranks, its templates, and how its buffers meet the last block's."""

    schedule: Schedule
    vocab: int
    """V', the padded vocabulary: the head's output columns."""
    names_of: tuple[str, str, str]
    """The gemm's input, weight and output tensors (A, B, C)."""
    templates: tuple[dict[str, list[Template]], ...]
    """Per tensor-parallel rank, the forward ("F") and backward ("B") templates."""
    joins: tuple[dict[str, str], ...]
    """Per rank, head buffer -> the last block's buffer it is (A -> Y, dA -> dY, block for block)."""
    weights: tuple[tuple[str, ...], ...]
    """Per rank, the buffers of B (the head weight's blocks)."""
    weight_grads: tuple[tuple[str, ...], ...]
    """Per rank, the buffers of dB (the head weight gradient's blocks)."""

    @classmethod
    def of(cls, block: BlockPieces, workload: Workload, vocab: int, algorithm: str, dtype: str,
           grid: tuple[int, ...] | None, gpus: int | None, overlap: bool, async_dgrad: bool = False) -> "HeadPieces":
        """Build the head on the block's grid (``simulator.training.lm_head``) and join it to the block."""
        gemm = lm_head_workload(workload, vocab, block.tp)
        both = build_schedule(algorithm, gemm, "both", dtype, grid=grid, gpus=gpus, overlap=overlap,
                              async_dgrad=async_dgrad)
        fwd = build_schedule(algorithm, gemm, "fwd", dtype, grid=grid, gpus=gpus, overlap=overlap)
        a, w = gemm.input_names("fwd")
        y, dy = workload.output_names("fwd")[0], grad(workload.output_names("fwd")[0])
        block_blocks = block.schedule.inputs + block.schedule.outputs
        parts, joins, weights, weight_grads = [], [], [], []
        for t, program in enumerate(both.programs):
            cut = len(fwd.programs[t])
            if list(program[:cut]) != list(fwd.programs[t]):
                raise AssertionError(f"{both.algorithm}: the LM head's forward is not the head of its program")
            parts.append({"F": templates(both, t, program[:cut], 0), "B": templates(both, t, program[cut:], cut)})
            mine = {(b.tensor, b.rows, b.cols): b.buffer for b in block_blocks if b.rank == t}
            join = {}
            for b in (*both.inputs, *both.outputs):
                if b.rank == t and b.tensor in (a, grad(a)):
                    target = mine.get((y if b.tensor == a else dy, b.rows, b.cols))
                    if target is None:
                        raise AssertionError(f"{both.algorithm}: rank {t}'s LM head reads {b.tensor}{b.rows, b.cols}, "
                                             f"where the last block leaves no block of its output")
                    join[b.buffer] = target
            joins.append(join)
            weights.append(tuple(b.buffer for b in both.inputs if b.rank == t and b.tensor == w))
            weight_grads.append(tuple(b.buffer for b in both.outputs if b.rank == t and b.tensor == grad(w)))
            # what micro-batches or the last block share: its output, the weight, the logits' gradient
            check_read_only(both, t, {b.buffer for b in both.inputs if b.rank == t})
        return cls(both, gemm.n, (a, w, gemm.output_names("fwd")[0]), tuple(parts), tuple(joins), tuple(weights),
                   tuple(weight_grads))

    def names(self, t: int, mb: int, layer: int) -> dict[str, str]:
        """Every head buffer of rank t -> its name for micro-batch ``mb`` after the last layer ``layer``."""
        names = {name: f"{name}.m{mb}.head" for name in self.schedule.buffers[t]}
        names.update({name: f"{name}.head" for name in self.weights[t]})
        names.update({name: act(target, mb, layer) for name, target in self.joins[t].items()})
        return names

    def accumulator(self, buffer: str) -> str:
        """The buffer a head weight-gradient block is summed into over the micro-batches."""
        return f"{buffer}.head"

    def blocks(self, rank_of, micro_batches: int) -> tuple[list[TensorBlock], list[TensorBlock]]:
        """(inputs, outputs) the head adds: ``Whead``, ``dlogits.m<i>``; ``logits.m<i>``, ``dWhead``.
        ``rank_of(t)`` is the global rank of the last stage's tensor-parallel rank t."""
        gemm = self.schedule
        _, w, c = self.names_of
        inputs, outputs = [], []
        for b in gemm.inputs:
            if b.tensor == w:
                inputs.append(TensorBlock(rank_of(b.rank), f"{b.buffer}.head", HEAD_WEIGHT, b.rows, b.cols))
            elif b.tensor == grad(c):
                inputs += [TensorBlock(rank_of(b.rank), f"{b.buffer}.m{mb}.head", f"{grad(LOGITS)}.m{mb}", b.rows,
                                       b.cols) for mb in range(micro_batches)]
        for b in gemm.outputs:
            if b.tensor == c:
                outputs += [TensorBlock(rank_of(b.rank), f"{b.buffer}.m{mb}.head", f"{LOGITS}.m{mb}", b.rows, b.cols)
                            for mb in range(micro_batches)]
            elif b.tensor == grad(w):
                outputs.append(TensorBlock(rank_of(b.rank), self.accumulator(b.buffer), grad(HEAD_WEIGHT), b.rows,
                                           b.cols))
        return inputs, outputs

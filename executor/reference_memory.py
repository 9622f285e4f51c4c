"""How much memory the float64 reference of one output block holds at once, from shapes alone, without torch.

``tpsim run`` checks each rank's buffers and its largest block's reference against the memory
available before it imports torch (``executor.memory``), so the count lives apart from the reference
itself (``executor.reference``, which computes the blocks with torch and documents what is alive at
once). ``peak_bytes`` is that count; ``sequences_per_chunk`` the transformer reference's chunking,
shared by both.
"""

from __future__ import annotations

import math

from simulator.workloads.blocks import BlockEvaluator, ShapeBackend
from simulator.workloads.layers import grad
from simulator.workloads.workload import Workload

__all__ = ["PIECE_ELEMENTS", "CHUNKS_ALIVE", "peak_bytes", "sequences_per_chunk"]

PIECE_ELEMENTS = 1 << 20
"""Most elements in one chunk the reference builds (8 MiB in float64), unless one row or column is longer."""
CHUNKS_ALIVE = 12
"""Chunk-sized arrays alive at once, at most: inputs, hidden activations, GELU temporaries, generator."""
_SCORE_ARRAYS = 8
"""[s, s] arrays per sequence and head the attention kernels hold at once, at most: scores, probabilities,
the mask's indices, hash and values, the dropped probabilities, dP and dS."""


def _dry_run(workload: Workload, tensor: str, rows: tuple[int, int], cols: tuple[int, int]) -> BlockEvaluator:
    """The rules on shapes alone, with chunks one wide: the panels, and elements per unit of width.

    Shapes, not torch's meta device: the first meta ops in a process take 1.6 s here (torch loads its
    meta registrations), which every forked rank paid again; an 8-rank gloo test went from 0.4 to 5.8 s."""
    evaluator = BlockEvaluator(workload, ShapeBackend())
    evaluator.block(tensor, rows, cols, width=1, first_chunk_only=True)
    return evaluator


def sequences_per_chunk(workload: Workload, piece_elements: int = PIECE_ELEMENTS) -> int:
    """Whole sequences in one token chunk of the transformer reference: as many as keep one chunk's
    values within ``piece_elements`` (``_chunk_elements``), and at least one."""
    return max(1, min(workload.batch, piece_elements // _chunk_elements(workload, 1)))


def _chunk_elements(workload: Workload, sequences: int) -> int:
    """Elements of one chunk's values: every activation and activation gradient of its rows, and the
    attention kernel's [s, s] arrays (its weight-gradient contributions are counted with the weights)."""
    shapes, weights = workload.shapes(), _weights_and_grads(workload)
    width = sum(cols for name, (_, cols) in shapes.items() if name not in weights)
    s = workload.seq
    return sequences * (s * width + _SCORE_ARRAYS * workload.heads * s * s)


def _weights_and_grads(workload: Workload) -> set[str]:
    """The weights (vectors included) and their gradients: the tensors without a row per token."""
    return {*workload.weights(), *map(grad, workload.weights())}


def peak_bytes(workload: Workload, tensor: str, rows: tuple[int, int], cols: tuple[int, int],
               piece_elements: int = PIECE_ELEMENTS, passes: str = "both") -> int:
    """The memory ``reference_block`` holds at once for this block, in bytes, as ``executor.reference``'s
    docstring counts it: for a chain, the block, its panels and ``CHUNKS_ALIVE`` chunks; for the
    transformer, three times the weights, twice the whole outputs of ``passes``, one chunk's values, the
    block and a piece for the generator; all float64."""
    nr, nc = rows[1] - rows[0], cols[1] - cols[0]
    if not workload.is_chain:
        shapes, weights = workload.shapes(), _weights_and_grads(workload)
        outputs = [name for name in workload.output_names(passes) if name not in weights]
        chunk = _chunk_elements(workload, sequences_per_chunk(workload, piece_elements))
        return 8 * (3 * sum(math.prod(shape) for shape in workload.weights().values())
                    + 2 * sum(math.prod(shapes[name]) for name in outputs) + chunk + nr * nc + piece_elements)
    panels = sum(math.prod(value.shape) for value in _dry_run(workload, tensor, rows, cols).panels.values())
    longest = max(max(shape) for shape in workload.shapes().values())
    chunk = max(piece_elements, longest)  # a chunk is never narrower than one row or column
    return 8 * (nr * nc + panels + CHUNKS_ALIVE * chunk)

"""The float64 reference of one output block, built from chunks and panels of the seeded inputs.

A rank checks its own output blocks only, and builds each reference from the inputs that block needs
(``Workload.input_block`` generates any block of any input from the seed alone), never a whole input
matrix unless the block itself spans it. The rules are the layers' own, walked by
``simulator.workloads.blocks.BlockEvaluator`` (which the numpy dense reference uses too) on torch float64:
each summed product (a linear's output over K, an input gradient over N, a weight gradient over the M
tokens) is summed over chunks of its contracted dimension; any other block (an elementwise layer's
output or input gradient) goes by chunks of its rows. What is alive at once:

- the block itself in float64 (the accumulator);
- the block's **panels**: what every chunk reads again, i.e. each sub-block whose ranges do not involve
  the chunk, computed once per block (for the MLP's Y[R, C]: X[R, :]; dX: X[R, :] and dY[R, :]; dW1:
  W1[:, C] and W2[C, :]; dW2: W1[:, R]; Z and dH: W1[:, C] (and W2[C, :]); the gemm's C, dA and dB, and
  the MLP's H and dZ have none);
- a few **chunks** of at most ``PIECE_ELEMENTS`` elements (or one row or column of an input, where that
  is longer): input chunks, the hidden activations of one chunk and what the elementwise functions make
  of them, and the seeded generator's temporaries (kept to a fraction of a chunk: ``input_block``).

Every input element is generated once per block: chunks never overlap, and an input block a chunk
needs twice (the MLP's W1[C, F] inside W1[:, F]) is cut from the one already built. The chunk width is
the widest whose every chunk-sized array fits ``piece_elements``, found by a dry run of the same rules on
shapes alone, which also counts the panels for ``peak_bytes``.

Peak memory per rank: ``peak_bytes`` counts the block, its panels and ``CHUNKS_ALIVE`` chunks (float64);
blocks are checked one at a time, so a rank's peak is its largest block's. For the MLP at m = 32768,
h = 8192 that is 1.22 GiB on 2d [4,4,1], summa25d [4,4,4] and cannon25d [4,4,4] (dX blocks 8192 x 2048
with their X and dY panels; summa25d's dW1 2048 x 8192 with its W1 and W2 panels), and 6.1 GiB for 1d
on 8 GPUs, whose blocks are whole matrices (the dX block and its panels X and dY, 2 GiB each).
Measured on CPU (peak resident size, /proc VmHWM, in a forked child per block) at m = 8192, h = 2048
on summa25d [2,2,2]'s blocks: Y 84, dX 149, dW1 257, dW2 143 MiB, against 144, 176, 256 and 192
by ``peak_bytes`` (glibc keeps a few freed chunks: dW1's resident peak is 1 MiB over), where building
whole inputs took 551, 925, 1882 and 1049 MiB; tests/executor/test_reference.py holds the memory alive
at once under ``peak_bytes``.

**The transformer block** (any workload that is not a chain, ``Workload.is_chain``) goes another way:
its LayerNorms, attention and residuals are not sums of products over one dimension, so there are no
panels and chunks of a contracted dimension to walk. Its reference runs the block's layer list forward
and backward through the function table's torch versions (``simulator.workloads.graph.values_by_chunks``,
the very walk whose numpy version is ``Workload.reference``) by **token chunks of whole sequences**
(attention mixes the tokens of one sequence only), with the seeded dropout masks and attention offsets
taken at the chunk's first row, so the chunking changes nothing but rounding. Every output tensor of
the pass is computed whole, once per process (cached by workload, seed, passes and device; the cache
keeps only the last, and ``executor.check.check_rank`` empties it when a rank's blocks are checked, so
that no whole output stays in memory while a job's next schedule runs), and each output block is cut
from it. What is alive at once, all float64 (``peak_bytes``, counted without torch in
``executor.reference_memory``):

- the whole weights (read by every chunk), the weight gradients summed over chunks, and one chunk's
  contribution to them: three times the weights' elements;
- every output tensor whole (Y for the forward, dX for the backward), twice for a moment (the chunks'
  pieces and the joined tensor);
- one chunk's values: every activation and activation gradient of its rows (``run_chunk`` keeps them
  all), and the attention kernel's [s, s] arrays per sequence and head (``_SCORE_ARRAYS``); a chunk
  holds as many whole sequences as keep this within ``piece_elements``, and at least one;
- the block being checked, and the input generator's slabs (a fraction of ``piece_elements``).

So a rank's reference of the transformer holds whole outputs and weights where the chain path holds
one block and its panels: the per-rank bound of the chain path does not hold here. For a backward-only
schedule, the saved activations a rank starts from come from ``Workload.input_block``, which computes
the whole dense block (every activation and gradient) in numpy once per process.
"""

from __future__ import annotations

import functools

import torch

from executor.reference_memory import (PIECE_ELEMENTS, _chunk_elements, _dry_run, _weights_and_grads,  # noqa: F401
                                       peak_bytes, sequences_per_chunk)
from simulator.workloads.blocks import BlockEvaluator, chunks
from simulator.workloads.functions import FUNCTIONS
from simulator.workloads.graph import values_by_chunks
from simulator.workloads.workload import Workload

_SLABS = 8
"""An input chunk is generated in this many slabs of rows (at least one row each)."""


def _width(piece: int, *lengths: int) -> int:
    """Chunk width along a contracted dimension so that a chunk of any of ``lengths`` rows fits ``piece``."""
    return max(1, piece // max(lengths))


def input_block(workload: Workload, seed: int, name: str, rows: tuple[int, int], cols: tuple[int, int],
                device: torch.device | str, piece_elements: int) -> torch.Tensor:
    """Block [rows, cols] of seeded input ``name`` in float64 on ``device``: every input the reference
    reads comes through here. Generated by slabs of rows, so that the generator's temporaries (several
    times what it makes) stay a fraction of one chunk."""
    out = torch.empty(rows[1] - rows[0], cols[1] - cols[0], dtype=torch.float64, device=device)
    for a, b in chunks(rows[1] - rows[0], _width(max(1, piece_elements // _SLABS), cols[1] - cols[0])):
        out[a:b] = torch.from_numpy(workload.input_block(seed, name, (rows[0] + a, rows[0] + b), cols))
    return out


class TorchBackend:
    """float64 torch tensors on ``device``; inputs by slabs."""

    def __init__(self, workload: Workload, seed: int, device: torch.device | str, piece_elements: int):
        self.workload, self.seed, self.device, self.piece = workload, seed, device, piece_elements

    def input(self, name: str, rows: tuple[int, int], cols: tuple[int, int]) -> torch.Tensor:
        return input_block(self.workload, self.seed, name, rows, cols, self.device, self.piece)

    def zeros(self, rows: int, cols: int) -> torch.Tensor:
        return torch.zeros(rows, cols, dtype=torch.float64, device=self.device)

    def function(self, fn: str, rows: int, cols: int, inputs: tuple) -> torch.Tensor:
        out = torch.empty(rows, cols, dtype=torch.float64, device=self.device)
        FUNCTIONS[fn].torch(out, *inputs)
        return out

    @staticmethod
    def addmm(acc: torch.Tensor, left: torch.Tensor, right: torch.Tensor) -> None:
        acc.addmm_(left, right)


def reference_block(workload: Workload, seed: int, tensor: str, rows: tuple[int, int], cols: tuple[int, int],
                    device: torch.device | str = "cpu", piece_elements: int = PIECE_ELEMENTS,
                    passes: str = "both") -> torch.Tensor:
    """Float64 block [rows, cols] of output ``tensor``: for a chain, from panels and chunks of the seeded
    inputs; for the transformer, cut from the whole outputs of ``passes`` (module doc)."""
    if not workload.is_chain:
        outputs = graph_outputs(workload, seed, passes, torch.device(device), piece_elements)
        if tensor not in outputs:
            raise ValueError(f"no reference for output tensor {tensor!r} of workload {workload.name} {passes}; "
                             f"valid: {', '.join(outputs)}")
        return outputs[tensor][rows[0]:rows[1], cols[0]:cols[1]].clone()
    width = _width(piece_elements, _dry_run(workload, tensor, rows, cols).widest)
    evaluator = BlockEvaluator(workload, TorchBackend(workload, seed, device, piece_elements))
    return evaluator.block(tensor, rows, cols, width=width)


@functools.lru_cache(maxsize=1)
def graph_outputs(workload: Workload, seed: int, passes: str, device: torch.device,
                  piece_elements: int = PIECE_ELEMENTS) -> dict[str, torch.Tensor]:
    """Every output tensor of ``passes``, whole, in float64 on ``device``, by token chunks of
    ``sequences_per_chunk`` whole sequences (module doc). Cached, the last outputs only: a rank checks
    one schedule's blocks at a time."""
    def call(fn: str, *arrays: torch.Tensor, **params) -> torch.Tensor:
        function = FUNCTIONS[fn]
        shape = function.shape([tuple(a.shape) for a in arrays], params)
        out = torch.empty(shape, dtype=torch.float64, device=device)
        function.torch(out, *arrays, **params, **({"seed": seed} if function.seeded else {}))
        return out

    def block(name: str, rows: tuple[int, int], cols: tuple[int, int]) -> torch.Tensor:
        return input_block(workload, seed, name, rows, cols, device, piece_elements)

    return values_by_chunks(
        workload, call, block, workload.seq * sequences_per_chunk(workload, piece_elements),
        workload.output_names(passes), backward=passes != "fwd",
        zeros=lambda shape: torch.zeros(shape, dtype=torch.float64, device=device),
        concat=lambda parts: parts[0] if len(parts) == 1 else torch.cat(parts))

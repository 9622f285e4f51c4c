"""The SUMMA2.5 / Tesseract paper's headline claims, published against tpsim's prediction.

What it shows: the seven speedups the paper's abstract reports (Wang, Xu, Bian, You, "Tesseract:
Parallelize the Tensor Parallelism Efficiently", arXiv 2105.14500 v1/v2 abstract; ICPP'22): weak
scaling [4,4,4] over [8,8,1] on 64 GPUs (1.45x); strong scaling over 1-D and 2-D (1.38x, 1.53x); and
in weak scaling, inference (forward) speedups up to 4.0x / 1.7x and training-throughput speedups up
to 3.4x / 1.7x over 1-D / 2-D. Each is predicted as a ratio of simulated transformer-block times on
``a100-4gpu:16`` (A100s four per node, the paper's hardware, NVLink inside, InfiniBand across).

Where each number comes from and what is assumed (the abstract gives the speedups; the layer sizes,
batch and sequence length of each run are not in the text this script was written from):

- hardware: 64 A100s, 4 per node (the paper; the issue that asked for this script): ``a100-4gpu:16``,
  with its own documented link rates (``topologies.presets``).
- model: GPT-style blocks (tpsim's transformer), sequence 512, bfloat16, no dropout, head size 64
  (assumed, as in the paper's ViT/BERT-class layers).
- strong scaling: one fixed block, batch 64, hidden 4096, 64 heads, on 64 GPUs: 1-D [64], 2-D [8,8,1],
  Tesseract [4,4,4] (assumed; the abstract's 1.38x / 1.53x name no GPU count, 64 is the largest run).
- weak scaling: P = 16 and 64 with batch and hidden growing as sqrt(P) (batch 32 / 64, hidden 4096 /
  8192), so that every rank keeps the same weights and activations; 1-D [P], 2-D [sqrt P, sqrt P, 1],
  Tesseract [2,2,4] and [4,4,4] (assumed). "Up to" is the larger of the two points. Inference is the
  forward pass; training throughput at a fixed batch is the inverse of fwd+bwd time.
- ``--paper-code`` times Tesseract as the paper's code ran it, without the depth all-reduce of the
  gradients (``experiments.paper_code``); the default is the correct algorithm. Both figures are in
  every explanation either way.

Deterministic: same output on every machine. About 6 s; ``--quick`` (the CI smoke test) only the
strong-scaling rows, about 2 s.

    python -m experiments.repro_tesseract [--quick] [--paper-code] [--csv FILE] [--png FILE]
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

from experiments.block_time import Block, block_time, register_topology
from experiments.published import Comparison, report, script_arguments
from topologies.cluster import fat_tree_cluster
from topologies.presets import A100_4GPU_SERVER, PRESETS

NAME = "repro_tesseract"
PAPER = "Tesseract (SUMMA2.5)"
SOURCE = "arXiv 2105.14500, abstract"
TOPOLOGY = "a100-4gpu:16"
SEQ = 512
HEAD_DIM = 64
STRONG = (64, 4096)  # batch, hidden on 64 GPUs (assumed)
WEAK = {16: (32, 4096), 64: (64, 8192)}  # P -> batch, hidden: both grow as sqrt(P) (assumed)
TESSERACT_GRID = {16: (2, 2, 4), 64: (4, 4, 4)}


ONE_NIC = "a100-4gpu-1nic:16"
"""The sensitivity check's variant: the same 16 servers with one HDR NIC each instead of four (the paper
does not say how many its nodes had; many 4-GPU clusters have one)."""


@functools.cache
def _register_one_nic() -> None:
    """Build the one-NIC variant once and let blocks name it."""
    server = dataclasses.replace(A100_4GPU_SERVER, nics=1)
    G = fat_tree_cluster(server, 16, PRESETS["a100-4gpu"].fabric, name=ONE_NIC)
    G.graph["sim"] = dict(PRESETS["a100-4gpu"].sim)
    register_topology(ONE_NIC, G)


@functools.cache
def _time(block: Block) -> float:
    """``block_time``, once per block (the rows share many)."""
    if block.topology == ONE_NIC:
        _register_one_nic()
    return block_time(block)


@dataclass(frozen=True)
class Point:
    """One configuration: P GPUs, batch, hidden, pass."""

    gpus: int
    batch: int
    hidden: int
    passes: str

    def block(self, arrangement: str, topology: str = TOPOLOGY, paper_code: bool = False) -> Block:
        """The 1d, 2d or tesseract arrangement of this point."""
        q = math.isqrt(self.gpus)
        common = dict(batch=self.batch, seq=SEQ, hidden=self.hidden, heads=self.hidden // HEAD_DIM,
                      topology=topology, passes=self.passes)
        if arrangement == "1d":
            return Block("1d", self.gpus, **common)
        if arrangement == "2d":
            return Block("2d", (q, q, 1), **common)
        return Block("summa25d", TESSERACT_GRID[self.gpus], **common, paper_code=paper_code)

    def speedup(self, baseline: str, paper_code: bool = False, topology: str = TOPOLOGY) -> float:
        """time(baseline) / time(Tesseract) on ``topology``."""
        return _time(self.block(baseline, topology)) / _time(self.block("tesseract", topology, paper_code))

    def label(self) -> str:
        return f"P={self.gpus}, b={self.batch}, s={SEQ}, h={self.hidden}, {self.passes}"


def _row(claim: str, published: float, points: list[Point], baseline: str, paper_code: bool,
         explanation: str) -> Comparison:
    """One Comparison: the largest speedup over ``points``, with the two checks of suspected causes."""
    best = max(points, key=lambda p: p.speedup(baseline, paper_code))
    faithful, paper = best.speedup(baseline), best.speedup(baseline, True)
    one_nic = best.speedup(baseline, paper_code, ONE_NIC)
    tess, base = best.block("tesseract"), best.block(baseline)
    note = (f"tpsim {faithful:.2f}x with the depth all-reduce, {paper:.2f}x without it as the paper's code ran "
            f"({tess.label()} {_time(tess) * 1e3:.2f} ms, {base.label()} {_time(base) * 1e3:.2f} ms); "
            f"{one_nic:.2f}x with one NIC per server instead of four. ")
    return Comparison(PAPER, claim, best.label() + (" (paper code)" if paper_code else ""), published,
                      paper if paper_code else faithful, "x", SOURCE, note + explanation,
                      (base.command(), tess.command()))


def comparisons(quick: bool = False, paper_code: bool = False) -> list[Comparison]:
    """Every published speedup with tpsim's; ``quick``: the strong-scaling rows only."""
    strong = [Point(64, *STRONG, "both")]
    rows = [
        _row("strong scaling over 1-D", 1.38, strong, "1d", paper_code,
             "1-D's four all-reduces of [bs, h] per block run at the servers' NIC rate; with one NIC per server "
             "the simulated speedup reaches the published one, so the paper's inter-node rate is the likely gap."),
        _row("strong scaling over 2-D", 1.53, strong, "2d", paper_code,
             "[8,8,1]'s rows and columns span two servers, [4,4,4]'s rows one; the missing depth all-reduce "
             "closes a third of the gap, and fewer NICs widen it rather than close it."),
    ]
    if quick:
        return rows
    train = [Point(p, b, h, "both") for p, (b, h) in WEAK.items()]
    forward = [Point(p, b, h, "fwd") for p, (b, h) in WEAK.items()]
    rows += [
        _row("weak scaling [4,4,4] over [8,8,1]", 1.45, train[-1:], "2d", paper_code,
             "At h = 8192 the depth all-reduce of [4,4,4]'s weight gradients costs as much as [8,8,1]'s extra "
             "broadcasts save; the paper's weak-scaling sizes are not published, and the ratio depends on them."),
        _row("weak-scaling inference over 1-D (up to)", 4.0, forward, "1d", paper_code,
             "Forward only, so the paper code changes nothing; one NIC per server brings the 16-GPU point to "
             "3.3x: 1-D's all-reduces across servers set this ratio, and the paper's NICs are not published."),
        _row("weak-scaling inference over 2-D (up to)", 1.7, forward, "2d", paper_code,
             "Forward only: [4,4,1]'s row and column broadcasts against [2,2,4]'s, which carry half the "
             "activation blocks; with one NIC per server the ratio doubles, so the match also rests on the network."),
        _row("weak-scaling training throughput over 1-D (up to)", 3.4, train, "1d", paper_code,
             "Not reproduced: in tpsim 1-D stays within 0.5-1.6x of Tesseract at every size tried, fewer NICs "
             "included; the paper's batch per arrangement is not published (1-D, holding whole activations, "
             "runs out of memory first and may have run smaller batches)."),
        _row("weak-scaling training throughput over 2-D (up to)", 1.7, train, "2d", paper_code,
             "Without the depth all-reduce the 16-GPU point reproduces it; with it, [2,2,4] pays an all-reduce "
             "of each weight gradient over 4 servers."),
    ]
    return rows


def cli(argv: list[str] | None = None) -> None:
    args = script_arguments(__doc__.splitlines()[0], NAME, argv, extra=[
        ("--paper-code", "time Tesseract as the paper's code ran it, without the depth all-reduce")])
    report(comparisons(args.quick, args.paper_code), args,
           f"{PAPER}: published vs tpsim on {TOPOLOGY}" + (" (paper code)" if args.paper_code else ""))


if __name__ == "__main__":
    cli()

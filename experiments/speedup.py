"""A published speedup of one arrangement over another at one configuration, and its sensitivities.

Optimus and the 3-D paper each report "X over Y on 64 GPUs" without the layer sizes in the abstract.
``speedup_row`` predicts such a claim as time(baseline) / time(faster) for the assumed configuration and
records, in the explanation, the same ratio at the other sizes tried (``VARIANTS``), so the reader sees
how much the figure depends on what the paper does not say. Nothing is chosen by how well it matches.

Example::

    >>> cfg = Config(batch=8, seq=64, hidden=256, heads=4, topology="dgx-a100", dtype="float16")
    >>> row = speedup_row("P", "2-D over 1-D", 1.5, cfg, ("2d", (2, 2, 1)), ("1d", 4), "src", "why", ())
    >>> row.unit, row.commands[0].startswith("tpsim simulate --algo 1d --gpus 4")
    ('x', True)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from experiments.block_time import Block, block_time
from experiments.published import Comparison
from simulator.errors import NotApplicable

__all__ = ["Config", "speedup", "speedup_row", "VARIANTS"]

VARIANTS = ((32, 4096), (128, 4096), (64, 8192))
"""(batch, hidden) sizes the sensitivity note tries beside the assumed one; heads = hidden / 64."""


@dataclass(frozen=True)
class Config:
    """The sizes, pass, dtype and machine of one comparison."""

    batch: int
    seq: int
    hidden: int
    heads: int
    topology: str
    dtype: str = "bfloat16"
    passes: str = "both"

    def block(self, algorithm: str, layout) -> Block:
        return Block(algorithm, layout, batch=self.batch, seq=self.seq, hidden=self.hidden, heads=self.heads,
                     topology=self.topology, passes=self.passes, dtype=self.dtype)


def speedup(cfg: Config, faster: tuple, baseline: tuple) -> float:
    """time(baseline) / time(faster) at ``cfg``; ``faster`` and ``baseline`` are (algorithm, layout)."""
    return block_time(cfg.block(*baseline)) / block_time(cfg.block(*faster))


def _variant(cfg: Config, faster: tuple, baseline: tuple, batch: int, hidden: int) -> str:
    other = dataclasses.replace(cfg, batch=batch, hidden=hidden, heads=hidden // 64)
    try:
        return f"b={batch}, h={hidden}: {speedup(other, faster, baseline):.2f}x"
    except NotApplicable as error:  # a size the algorithm cannot split: say so, do not hide it
        return f"b={batch}, h={hidden}: not applicable ({str(error).split(': ')[-1]})"


def speedup_row(paper: str, claim: str, published: float, cfg: Config, faster: tuple, baseline: tuple,
                source: str, explanation: str, variants=VARIANTS) -> Comparison:
    """The Comparison of one published speedup, with the ratio at ``variants`` sizes in the explanation."""
    fast_block, base_block = cfg.block(*faster), cfg.block(*baseline)
    fast_s, base_s = block_time(fast_block), block_time(base_block)
    note = (f"{fast_block.label()} {fast_s * 1e3:.2f} ms, {base_block.label()} {base_s * 1e3:.2f} ms. ")
    if variants:
        note += "Other sizes: " + "; ".join(_variant(cfg, faster, baseline, b, h) for b, h in variants) + ". "
    configuration = (f"{fast_block.gpus} GPUs of {cfg.topology}, b={cfg.batch}, s={cfg.seq}, h={cfg.hidden}, "
                     f"{cfg.passes}")
    return Comparison(paper, claim, configuration, published, base_s / fast_s, "x", source, note + explanation,
                      (base_block.command(), fast_block.command()))

"""The attention core of a GPT block: context = causal softmax(Q K^T / sqrt(d)) V per sequence and head.

Input: the QKV activation [M, 3h], each head's Q, K and V side by side (``kernels.attention``); output:
the context [M, h]. With ``group`` > 1 query heads per key/value head (grouped-query attention) the
input is [M, (a + 2 a/group) d], whole key/value groups side by side (``kernels.attention``). It
needs whole sequences and whole heads (whole groups) in each block, so it lowers as one ``local`` op
on every block of its input, wherever the algorithm left it: an algorithm must split the tokens by
whole sequences and the columns by whole key/value groups (its ``check`` says so as NotApplicable).
The attention dropout's mask is drawn from the seed and the global [b, a, s, s] index, so every
split drops the same probabilities.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.workloads.attention_cost import FUSED_FUNCTIONS

__all__ = ["Attention"]


@dataclass(frozen=True)
class Attention:
    """Causal multi-head attention of ``heads`` heads of width ``head_dim`` on sequences of ``seq`` tokens."""

    qkv: str
    y: str
    heads: int
    head_dim: int
    seq: int
    dropout: float
    stream: int
    part: str = "attn"
    group: int = 1
    """Query heads per key/value head: 1 for multi-head attention, heads for multi-query (``kv_heads`` = 1)."""
    kernel: str = "unfused"
    """``flash`` (FlashAttention-2: nothing of [s, s] kept, the backward recomputes the probabilities),
    ``triton`` (FlashAttention in Triton: the same, timed at its own rate), ``cudnn`` (cuDNN's fused attention:
    the same, timed at its own rates per pass) or ``unfused`` (the probabilities
    and the dropout mask kept); ``simulator.workloads.attention_cost``."""

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.qkv,)

    @property
    def outputs(self) -> dict[str, int]:
        return {self.y: self.heads * self.head_dim}

    @property
    def saved(self) -> tuple[str, ...]:
        """The QKV block; the unfused kernel's probabilities and the flash kernel's row statistics are not
        tensors of the IR (their values are recomputed): ``simulator.memory.activations`` adds them."""
        return (self.qkv,)

    @property
    def weights(self) -> dict[str, tuple[int, int]]:
        return {}

    @property
    def fn(self) -> str:
        """The ``local`` function: ``flash_attention``, ``triton_attention`` or ``cudnn_attention``; unfused,
        ``attention`` or, with
        groups, ``attention_gqa``."""
        if self.kernel in FUSED_FUNCTIONS:
            return FUSED_FUNCTIONS[self.kernel]
        return "attention" if self.group == 1 else "attention_gqa"

    @property
    def width(self) -> int:
        """QKV columns per key/value group: its query heads, its key and its value head."""
        return (self.group + 2) * self.head_dim

    def params(self, rows: tuple[int, int], cols: tuple[int, int]) -> dict:
        """The attention op's parameters for the QKV block [rows, cols] (whole sequences and groups)."""
        width = self.width
        if rows[0] % self.seq or (rows[1] - rows[0]) % self.seq or cols[0] % width or (cols[1] - cols[0]) % width:
            raise AssertionError(f"attention block rows {rows} cols {cols} is not whole sequences of {self.seq} "
                                 f"and whole heads of {width} columns")
        params = {"p": self.dropout, "stream": self.stream, "seq": self.seq,
                  "heads": (cols[1] - cols[0]) // width * self.group, "head_dim": self.head_dim,
                  "batch0": rows[0] // self.seq, "head0": cols[0] // width * self.group, "heads_total": self.heads}
        return params if self.fn == "attention" else {**params, "group": self.group}

    def out_cols(self, cols: tuple[int, int]) -> tuple[int, int]:
        """The context's columns of the QKV block's ``cols``: each group's query heads."""
        return (cols[0] // self.width * self.group * self.head_dim, cols[1] // self.width * self.group * self.head_dim)

    # -- dense values (``simulator.workloads.graph``) -----------------------------------------------
    def forward(self, ctx, values: dict) -> dict:
        qkv = values[self.qkv]
        rows = (ctx.row0, ctx.row0 + qkv.shape[0])
        return {self.y: ctx.call(self.fn, qkv, **self.params(rows, (0, qkv.shape[1])))}

    def backward(self, ctx, values: dict, grads: dict) -> dict:
        qkv = values[self.qkv]
        rows = (ctx.row0, ctx.row0 + qkv.shape[0])
        return {self.qkv: ctx.call(f"{self.fn}_backward", grads[self.y], qkv, **self.params(rows, (0, qkv.shape[1])))}

    # -- lowering onto an algorithm ----------------------------------------------------------------
    def input_layout(self, low):
        return None

    def output_layouts(self, low, input_layouts):
        return {self.y: [(rank, rows, self.out_cols(cols)) for rank, rows, cols in input_layouts[0]]}

    def weight_layout(self, low, name: str):
        raise KeyError(name)

    def lower_forward(self, low) -> None:
        for rank, rows, cols in low.layout[self.qkv]:
            out = self.out_cols(cols)
            low.b.buffer(rank, self.y, (rows[1] - rows[0], out[1] - out[0]))
            low.emit(rank, self.fn, self.y, (self.qkv,), self.params(rows, cols))

    def lower_backward(self, low) -> None:
        dy, target = low.grad_of(self.y), low.grad_target(self.qkv)
        for rank, rows, cols in low.layout[self.qkv]:
            low.b.buffer(rank, target, (rows[1] - rows[0], cols[1] - cols[0]))
            low.emit(rank, f"{self.fn}_backward", target, (dy, self.qkv), self.params(rows, cols))
        low.grad_written(self.qkv)

"""Published FSDP training throughput: MosaicML llm-foundry's MPT tables and torchtitan's Llama 3.1 8B tables.

Two sources, each row as printed; nothing here is derived from tpsim.

- MosaicML llm-foundry, ``scripts/train/benchmarking/README.md`` (github:mosaicml/llm-foundry, read at
  commit 8c8dd48f of 2025-07-21; the rows kept here were added by commit 9fa3ceb9 of 2023-04-04 (A100
  40GB and A100 80GB's two 70B rows, in ``examples/llm/throughput/README.md``, moved unchanged to
  ``scripts/train/benchmarking/`` by 300cc5c5 of 2023-05-03), b2a43a14 of 2023-10-19 (H100 80GB BF16, the
  rest of A100 80GB) and 5e85bd62 of 2024-01-06 (H100 large scale), and not changed since): MPT models
  trained with PyTorch FSDP (Composer) on the MosaicML platform, one row per (model, sequence length,
  GPU count): MFU, micro-batch, gradient accumulation, global batch, throughput in tokens/s per GPU,
  precision and FSDP mixed-precision mode, sharding strategy and activation checkpointing. Kept: every
  bfloat16 row of the 7B, 13B, 30B and 70B models in its four tables ("H100 80GB BF16 (Large Scale)",
  "H100 80GB BF16", "A100 80GB with 1600 Gbps node-node interconnect (RoCE)", "A100 40GB with 1600 Gbps
  node-node interconnect (RoCE)"); the "H100 80GB FP8" table has no model of 7B or more.
  The models' sizes are the yamls of ``scripts/train/yamls/pretrain/mpt-*.yaml`` (``experiments/models``).
  The tables do not name the attention kernel; each row's ``attention`` is what the launcher and the
  sweep committed with it passed (``experiments/README.md``, "Which attention kernel llm-foundry's
  benchmark rows ran"): ``attn_impl: triton`` (``submit_benchmarks.py``'s default) everywhere except the
  large-scale H100 rows of MPT-7B and 70B, whose ``sweep.py`` passes ``--attn_impl flash`` with flash-attn
  2.4.2 installed.
- torchtitan, ``benchmarks/llama3_h100_202412_torchtitan.md`` (github:pytorch/torchtitan, torchtitan
  commit 9dec370 of 2024-12-26, torch 1963fc8 of 2024-12-23): Llama 3.1 8B with FSDP on 8 and 128 H100s
  of Meta's Grand Teton (96 GB HBM2e, 500 W, 400 Gb/s RDMA per GPU), Tables 1 and 3, the rows without
  Float8: ``FSDP`` (eager) and ``FSDP + torch.compile`` (``FsdpRun.compiled``). The rows it also prints that
  tpsim cannot express are ``NOT_EXPRESSED``.

Example::

    >>> r = MOSAICML[0]
    >>> (r.model, r.seq, r.gpus, r.tokens_per_s_per_gpu, r.micro_batch * r.grad_accum * r.gpus == r.global_batch)
    ('70b', 2048, 512, 1007, True)
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FsdpRun", "MOSAICML", "TORCHTITAN", "NOT_EXPRESSED", "MOSAICML_PARAMS"]


@dataclass(frozen=True)
class FsdpRun:
    """One published FSDP training run: its configuration as printed and its measured throughput."""

    framework: str
    """``llm-foundry`` or ``torchtitan``."""
    table: str
    """The table's title as printed."""
    model: str
    """The source's model name: ``7b`` .. ``70b`` (MPT) or ``llama3-8b``."""
    seq: int
    gpus: int
    device: str
    """The source's GPU column: ``h100_80gb``, ``a100_80gb``, ``a100_40gb`` (torchtitan: ``h100_96gb_500w``)."""
    micro_batch: int
    grad_accum: int
    global_batch: int
    tokens_per_s_per_gpu: float
    """Measured throughput, tokens per second per GPU (llm-foundry's ``Throughput (T/s/GPU)``, torchtitan's
    ``TPS/GPU``)."""
    checkpointing: str
    """Activation checkpointing as published: ``none``, ``full`` (every block: llm-foundry's
    ``activation_checkpointing: true``, torchtitan's ``full``) or ``selective-op`` (torchtitan's per-op
    selective checkpointing)."""
    sharding: str = "FULL_SHARD"
    mixed_precision: str = ""
    """llm-foundry's ``Precision / MP Mode`` columns: ``amp_bf16 DEFAULT`` or ``bf16 PURE`` (bfloat16
    parameters, gradient reduction and buffers)."""
    gradient_reduction: str = "bfloat16"
    """The dtype FSDP reduced the gradients in: ``bfloat16``, ``float32``, or ``float32 or bfloat16`` where the
    source does not say (Composer's ``DEFAULT`` reduced in the parameters' bfloat16 until its commit d745fcb1
    of 2023-10-10, released in v0.16.4, and in float32 since; the rows of 2023-10-19 do not name the
    version)."""
    mfu_percent: float | None = None
    """The source's own MFU, where printed (llm-foundry: 6 N + 12 l s h FLOPs per token over the dense bf16
    peak)."""
    source: str = ""
    attention: str = "flash"
    """The attention kernel the run ran: ``triton`` (llm-foundry's ``attn_impl: triton``, FlashAttention in
    Triton) or ``flash`` (FlashAttention-2: llm-foundry's ``attn_impl: flash`` with flash-attn 2;
    torchtitan's ``scaled_dot_product_attention``, whose CUDA backend on an H100 is FlashAttention-2)."""
    compiled: bool = False
    """torchtitan's ``--training.compile``: ``torch.compile(fullgraph=True)`` on each TransformerBlock
    (``apply_compile`` in ``torchtitan/parallelisms/parallelize_llama.py`` at 9dec370ad); its norms, rotary and
    SwiGLU then run as inductor's fused kernels instead of eager PyTorch ops."""

    def __post_init__(self) -> None:
        if self.micro_batch * self.grad_accum * self.gpus != self.global_batch:
            raise ValueError(f"{self.name}: micro-batch {self.micro_batch} x accumulation {self.grad_accum} x "
                             f"{self.gpus} GPUs != global batch {self.global_batch}")

    @property
    def name(self) -> str:
        """A short label: model, sequence, GPUs, device."""
        return f"{self.model} seq {self.seq} on {self.gpus} {self.device}" + (", torch.compile" if self.compiled else "")


_LLMF = ("MosaicML llm-foundry, scripts/train/benchmarking/README.md (github:mosaicml/llm-foundry, rows of "
         "commit {}), table '{}'")
_H100_LARGE = "H100 80GB BF16 (Large Scale, >= 128 GPUs)"
_H100 = "H100 80GB BF16"
_A100_80 = "A100 80GB with 1600 Gbps node-node interconnect (RoCE)"
_A100_40 = "A100 40GB with 1600 Gbps node-node interconnect (RoCE)"
_DEVICE = {_H100_LARGE: "h100_80gb", _H100: "h100_80gb", _A100_80: "a100_80gb", _A100_40: "a100_40gb"}
_COMMIT = {_H100_LARGE: "5e85bd62, 2024-01-06", _H100: "b2a43a14, 2023-10-19", _A100_80: "b2a43a14, 2023-10-19",
           _A100_40: "9fa3ceb9, 2023-04-04, moved by 300cc5c5"}


def _attention(table: str, model: str) -> str:
    # 5e85bd62's sweep.py lines 40-82: 7b and 70b --attn_impl flash, 13b and 30b triton; elsewhere the
    # sweeps pass no --attn_impl and submit_benchmarks.py's default is triton (experiments/README.md).
    return "flash" if table == _H100_LARGE and model in ("7b", "70b") else "triton"


def _reduction(table: str, mode: str) -> str:
    if mode == "PURE":
        return "bfloat16"
    return "float32" if table == _H100_LARGE else "float32 or bfloat16"  # DEFAULT: see gradient_reduction

# (table, model, seq, GPUs, MFU %, micro-batch, accumulation, global batch, tokens/s/GPU, precision, MP mode,
#  activation checkpointing): the columns of the published rows, in the published order; every row is
#  FULL_SHARD and none offloads activations to the CPU.
_ROWS = (
    (_H100_LARGE, "70b", 2048, 512, 41.25, 8, 1, 4096, 1007, "amp_bf16", "DEFAULT", True),
    (_H100_LARGE, "70b", 2048, 256, 42.42, 8, 1, 2048, 1035, "amp_bf16", "DEFAULT", True),
    (_H100_LARGE, "70b", 2048, 128, 43.36, 8, 1, 1024, 1058, "amp_bf16", "DEFAULT", True),
    (_H100_LARGE, "30b", 2048, 512, 40.27, 8, 1, 4096, 2115, "amp_bf16", "DEFAULT", True),
    (_H100_LARGE, "30b", 2048, 256, 40.89, 8, 1, 2048, 2148, "amp_bf16", "DEFAULT", True),
    (_H100_LARGE, "30b", 2048, 128, 41.85, 8, 1, 1024, 2199, "amp_bf16", "DEFAULT", True),
    (_H100_LARGE, "13b", 2048, 512, 41.12, 16, 1, 8192, 4952, "amp_bf16", "DEFAULT", True),
    (_H100_LARGE, "13b", 2048, 256, 41.42, 16, 1, 4096, 4989, "amp_bf16", "DEFAULT", True),
    (_H100_LARGE, "13b", 2048, 128, 42.18, 16, 1, 2048, 5080, "amp_bf16", "DEFAULT", True),
    (_H100_LARGE, "7b", 2048, 512, 42.2, 6, 1, 3072, 9670, "amp_bf16", "DEFAULT", False),
    (_H100_LARGE, "7b", 2048, 256, 44.15, 6, 1, 1536, 10119, "amp_bf16", "DEFAULT", False),
    (_H100_LARGE, "7b", 2048, 128, 45.71, 6, 1, 768, 10475, "amp_bf16", "DEFAULT", False),
    (_H100, "70b", 2048, 64, 42.57, 8, 4, 2048, 1039, "amp_bf16", "DEFAULT", True),
    (_H100, "70b", 2048, 32, 36.15, 2, 16, 1024, 882, "amp_bf16", "DEFAULT", True),
    (_H100, "30b", 8192, 8, 29.92, 1, 21, 168, 1384, "amp_bf16", "DEFAULT", True),
    (_H100, "30b", 4096, 8, 35.86, 1, 21, 168, 1802, "amp_bf16", "DEFAULT", True),
    (_H100, "30b", 2048, 32, 43.92, 14, 3, 1344, 2308, "amp_bf16", "DEFAULT", True),
    (_H100, "30b", 2048, 16, 43.07, 10, 3, 480, 2263, "amp_bf16", "DEFAULT", True),
    (_H100, "30b", 2048, 8, 38.11, 3, 21, 504, 2002, "amp_bf16", "DEFAULT", True),
    (_H100, "30b", 1024, 8, 38.76, 6, 21, 1008, 2084, "amp_bf16", "DEFAULT", True),
    (_H100, "13b", 32768, 8, 31.68, 1, 3, 24, 1976, "amp_bf16", "DEFAULT", True),
    (_H100, "13b", 16384, 8, 35.55, 3, 3, 72, 2985, "amp_bf16", "DEFAULT", True),
    (_H100, "13b", 4096, 8, 41.6, 10, 3, 240, 4717, "amp_bf16", "DEFAULT", True),
    (_H100, "13b", 2048, 64, 39.86, 2, 1, 128, 4800, "amp_bf16", "DEFAULT", False),
    (_H100, "13b", 2048, 32, 39.95, 2, 1, 64, 4811, "amp_bf16", "DEFAULT", False),
    (_H100, "13b", 2048, 16, 39.58, 2, 1, 32, 4767, "amp_bf16", "DEFAULT", False),
    (_H100, "13b", 2048, 8, 39.79, 2, 1, 16, 4792, "amp_bf16", "DEFAULT", False),
    (_H100, "13b", 1024, 8, 44.27, 40, 3, 960, 5502, "amp_bf16", "DEFAULT", True),
    (_H100, "7b", 65536, 8, 28.59, 1, 2, 16, 1956, "amp_bf16", "DEFAULT", True),
    (_H100, "7b", 32768, 8, 30.94, 2, 2, 32, 3318, "amp_bf16", "DEFAULT", True),
    (_H100, "7b", 8192, 8, 37.14, 8, 2, 128, 6935, "amp_bf16", "DEFAULT", True),
    (_H100, "7b", 4096, 8, 40.42, 16, 2, 256, 8611, "amp_bf16", "DEFAULT", True),
    (_H100, "7b", 2048, 8, 46.44, 6, 1, 48, 10643, "amp_bf16", "DEFAULT", False),
    (_H100, "7b", 1024, 8, 42.83, 64, 2, 1024, 10203, "amp_bf16", "DEFAULT", True),
    (_A100_80, "70b", 2048, 64, 53.33, 8, 4, 2048, 410, "bf16", "PURE", True),
    (_A100_80, "70b", 2048, 32, 48.56, 2, 16, 1024, 373, "bf16", "PURE", True),
    (_A100_80, "30b", 8192, 8, 39.38, 1, 21, 168, 574, "amp_bf16", "DEFAULT", True),
    (_A100_80, "30b", 4096, 8, 51.37, 1, 21, 168, 814, "amp_bf16", "DEFAULT", True),
    (_A100_80, "30b", 2048, 8, 55.3, 3, 21, 504, 916, "amp_bf16", "DEFAULT", True),
    (_A100_80, "30b", 1024, 8, 55.82, 6, 21, 1008, 946, "amp_bf16", "DEFAULT", True),
    (_A100_80, "30b", 512, 8, 56.4, 12, 21, 2016, 967, "amp_bf16", "DEFAULT", True),
    (_A100_80, "13b", 32768, 8, 51.69, 1, 3, 24, 1016, "amp_bf16", "DEFAULT", True),
    (_A100_80, "13b", 16384, 8, 54.07, 3, 3, 72, 1431, "amp_bf16", "DEFAULT", True),
    (_A100_80, "13b", 8192, 8, 56.07, 5, 3, 120, 1795, "amp_bf16", "DEFAULT", True),
    (_A100_80, "13b", 4096, 8, 57.62, 10, 3, 240, 2060, "amp_bf16", "DEFAULT", True),
    (_A100_80, "13b", 2048, 8, 59.57, 2, 3, 48, 2262, "amp_bf16", "DEFAULT", False),
    (_A100_80, "13b", 1024, 8, 59.48, 40, 3, 960, 2330, "amp_bf16", "DEFAULT", True),
    (_A100_80, "7b", 65536, 8, 46.97, 1, 2, 16, 1013, "amp_bf16", "DEFAULT", True),
    (_A100_80, "7b", 32768, 8, 49.46, 2, 2, 32, 1672, "amp_bf16", "DEFAULT", True),
    (_A100_80, "7b", 16384, 8, 51.96, 4, 2, 64, 2453, "amp_bf16", "DEFAULT", True),
    (_A100_80, "7b", 8192, 8, 54.47, 8, 2, 128, 3206, "amp_bf16", "DEFAULT", True),
    (_A100_80, "7b", 4096, 8, 54.84, 16, 2, 256, 3684, "amp_bf16", "DEFAULT", True),
    (_A100_80, "7b", 2048, 8, 64.23, 6, 2, 96, 4641, "amp_bf16", "DEFAULT", False),
    (_A100_80, "7b", 1024, 8, 58.01, 64, 2, 1024, 4357, "amp_bf16", "DEFAULT", True),
    (_A100_40, "70b", 2048, 128, 48.91, 4, 1, 512, 376, "bf16", "PURE", True),
    (_A100_40, "70b", 2048, 64, 35.87, 2, 1, 128, 276, "bf16", "PURE", True),
    (_A100_40, "30b", 2048, 128, 52.25, 6, 1, 768, 865, "bf16", "PURE", True),
    (_A100_40, "30b", 2048, 32, 51.74, 4, 1, 128, 857, "bf16", "PURE", True),
    (_A100_40, "13b", 8192, 8, 43.95, 1, 16, 128, 1407, "bf16", "PURE", True),
    (_A100_40, "13b", 4096, 8, 44.85, 2, 16, 256, 1603, "bf16", "PURE", True),
    (_A100_40, "13b", 2048, 128, 51.93, 16, 1, 2048, 1972, "bf16", "PURE", True),
    (_A100_40, "13b", 2048, 64, 52.04, 16, 1, 1024, 1976, "bf16", "PURE", True),
    (_A100_40, "13b", 2048, 32, 52.62, 14, 1, 448, 1998, "bf16", "PURE", True),
    (_A100_40, "13b", 2048, 16, 52.5, 10, 1, 160, 1993, "bf16", "PURE", True),
    (_A100_40, "13b", 2048, 8, 43.94, 4, 16, 512, 1668, "bf16", "PURE", True),
    (_A100_40, "13b", 1024, 8, 44.07, 8, 16, 1024, 1727, "bf16", "PURE", True),
    (_A100_40, "13b", 512, 8, 44.28, 16, 16, 2048, 1763, "bf16", "PURE", True),
    (_A100_40, "7b", 16384, 8, 47.65, 1, 4, 32, 2249, "bf16", "PURE", True),
    (_A100_40, "7b", 8192, 8, 49.04, 3, 4, 96, 2887, "bf16", "PURE", True),
    (_A100_40, "7b", 4096, 8, 50.11, 6, 4, 192, 3366, "bf16", "PURE", True),
    (_A100_40, "7b", 2048, 128, 50.14, 18, 1, 2304, 3623, "bf16", "PURE", True),
    (_A100_40, "7b", 2048, 64, 50.73, 18, 1, 1152, 3665, "bf16", "PURE", True),
    (_A100_40, "7b", 2048, 32, 51.55, 18, 1, 576, 3725, "bf16", "PURE", True),
    (_A100_40, "7b", 2048, 16, 50.44, 16, 1, 256, 3645, "bf16", "PURE", True),
    (_A100_40, "7b", 2048, 8, 50.92, 12, 4, 384, 3679, "bf16", "PURE", True),
    (_A100_40, "7b", 1024, 8, 51.31, 24, 4, 768, 3854, "bf16", "PURE", True),
    (_A100_40, "7b", 512, 8, 50.85, 48, 4, 1536, 3895, "bf16", "PURE", True),
)

MOSAICML = tuple(
    FsdpRun("llm-foundry", table, model, seq, gpus, _DEVICE[table], micro, accum, batch, tps,
            "full" if checkpointing else "none", mixed_precision=f"{precision} {mode}",
            gradient_reduction=_reduction(table, mode), mfu_percent=mfu, source=_LLMF.format(_COMMIT[table], table),
            attention=_attention(table, model))
    for table, model, seq, gpus, mfu, micro, accum, batch, tps, precision, mode, checkpointing in _ROWS
)
"""The 77 bfloat16 rows of MPT 7B to 70B, in the published order."""

MOSAICML_PARAMS = {"7b": 6_658_859_008, "13b": 12_853_954_560, "30b": 29_975_214_080, "70b": 64_862_437_376}
"""The tables' ``NumParams`` at sequence 2048 (learned positions make it grow with the sequence)."""

_TT = ("torchtitan, benchmarks/llama3_h100_202412_torchtitan.md (github:pytorch/torchtitan, torchtitan 9dec370, "
       "2024-12-26), Table {}, row '{}'")
_T1 = "Table 1: 1D Parallelism (FSDP), Llama 3.1 8B, 8 GPUs"
_T3 = "Table 3: 1D Parallelism (FSDP), Llama 3.1 8B, 128 GPUs"
TORCHTITAN = (
    # Table 1: 8 GPUs, local batch 2, global batch 16, selective activation checkpointing; seq 8192 is
    # torchtitan's llama3_8b.toml (training.seq_len) at that commit.
    FsdpRun("torchtitan", _T1, "llama3-8b", 8192, 8, "h100_96gb_500w", 2, 1, 16, 5762, "selective-op",
            gradient_reduction="float32", source=_TT.format(1, "FSDP")),
    # The same with torch.compile on each block (the table's second row).
    FsdpRun("torchtitan", _T1, "llama3-8b", 8192, 8, "h100_96gb_500w", 2, 1, 16, 6667, "selective-op",
            gradient_reduction="float32", source=_TT.format(1, "FSDP + torch.compile"), compiled=True),
    # Table 3: the same on 128 GPUs, global batch 256.
    FsdpRun("torchtitan", _T3, "llama3-8b", 8192, 128, "h100_96gb_500w", 2, 1, 256, 5605, "selective-op",
            gradient_reduction="float32", source=_TT.format(3, "FSDP")),
    FsdpRun("torchtitan", _T3, "llama3-8b", 8192, 128, "h100_96gb_500w", 2, 1, 256, 6514, "selective-op",
            gradient_reduction="float32", source=_TT.format(3, "FSDP + torch.compile"), compiled=True),
)
"""torchtitan's four FSDP rows without Float8 (bfloat16; eager, and with torch.compile), in the published order."""

NOT_EXPRESSED = (
    ("torchtitan 2024-12, Tables 1 and 3, '+ Float8' (8,532 and 8,380 TPS/GPU)",
     "torchao's Float8Linear on every linear but the output, dynamic per-tensor scaling, its amax and casts "
     "compiled by inductor (torchtitan/float8.py at 9dec370ad): the nearest of tpsim's recipes, --dtype fp8 "
     "--fp8-recipe current, charges Transformer Engine's cast kernels and weight copies instead, and the "
     "benchmark does not say whether FSDP2's float8 all-gather (--float8.enable_fsdp_float8_all_gather, off by "
     "default) was on, which halves what FSDP gathers"),
    ("torchtitan 2024-12, Table 2 (FSDP + context parallel, 32K-262K tokens) and Table 6 (4-D, 405B)",
     "context parallelism (ring attention) is not one of tpsim's parallelisms; Float8 too"),
    ("torchtitan 2024-12, Table 4 (Llama 3.1 70B, FSDP 32 x TP 8, 256 GPUs, 829 / 876 TPS/GPU)",
     "Float8 throughout (above); async TP as torchtitan's SymmetricMemory micro-pipelining"),
    ("torchtitan 2024-12, Table 5 (Llama 3.1 405B, FSDP 8 x TP 8 x PP 8, 100 / 128 TPS/GPU)",
     "Float8 and async TP as above"),
    ("torchtitan 2025-06, benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md (70B on 256, 8B on 64 H100s, "
     "vanilla and async TP)",
     "the float8 rows run torchao's tensorwise or rowwise scaling, the async TP rows SymmetricMemory "
     "micro-pipelining; the two vanilla-TP bfloat16 rows (FSDP x TP 8 with torch.compile) are not 1-D FSDP, "
     "this table's kind, and are not taken here"),
    ("llm-foundry, 'H100 80GB FP8' table (MPT 1B and 3B)",
     "Transformer Engine's float8 recipe, and no model of 7B or more"),
    ("llm-foundry, rows of MPT 125M to 3B",
     "outside the 7B-70B range this table holds; they are expressible the same way"),
)
"""Rows the sources print that this table leaves out, each with the reason."""

"""NVIDIA's published Megatron-Core pre-training throughput: NeMo and Megatron-Bridge "performance summary" rows.

Each row is as printed (system, GPUs, precision, batch sizes, sequence length, TP / PP / CP / VP, Megatron
FSDP on or off, tokens per second per GPU, model TFLOP/s per GPU); nothing here is derived from tpsim.
The settings a table does not print (activation recompute, CPU activation offloading, TP communication
overlap, the gradients' reduction dtype) come from the recipes committed beside the table, named in
``recipe``. Three tables, read from the repositories' history:

- NeMo 24.07 (github:NVIDIA/NeMo, ``docs/source/performance/performance_summary.md`` at commit 9c5c5e9709
  of 2024-09-09, "24.07 perf numbers" (#10253), the last version of that file before it became a link),
  table "Pretraining": DGX-H100, FP8. The runs used NeMo 1.0's launcher, whose configs are not in the
  repository; the settings are taken from NeMo 2.0's recipes of the same commit
  (``nemo/collections/llm/recipes/llama3_70b.py``, ``pretrain_recipe_performance``: sequence parallel and
  TP communication overlap on with TP > 1, the distributed optimizer, no recompute) and the model shapes
  from ``nemo/collections/llm/gpt/model/base.py`` (``GPTConfig5B``, ``20B``, ``175B``) at a2aa70a228.
- Megatron-Bridge 25.11 (github:NVIDIA-NeMo/Megatron-Bridge, ``docs/performance-summary.md`` at commit
  1804c076f of 2025-12-09 (#1669, "Update with latest perf for DS-v3, Qwen-3, Llama3 models"; the archive
  page ``docs/performance-summary-archive.md`` at 09ce5f13c prints the same rows), section "25.11 NeMo
  Container", Pre-Training Performance, tables "System: DGX-GB200", "DGX-B200", "DGX-H100"); recipes
  ``scripts/performance/configs/llama/llama3_workload_base_configs.py`` and ``llama3_llm_pretrain.py`` and
  ``src/megatron/bridge/recipes/llama/llama3.py`` at the same commit.
- Megatron-Bridge 26.04.01 (same file at commit 17a381f95 of 2026-05-16, #3818, section "26.04.01 NeMo
  Container", table "Model: LLAMA3_70B"); recipes as above at that commit (the ``_V2`` configs, global
  batch 256).

The FP8 recipes: NeMo 24.07's FP8 is Transformer Engine's delayed scaling (the only recipe of TE then);
"FP8-CS" is current (per-tensor, per-step) scaling (``bf16_with_fp8_current_scaling_mixed``, the perf
scripts' ``fp8_cs``); "FP8" in the 26.04.01 table is run by the perf scripts as ``fp8_cs``; "MXFP8" is
block scaling (32-element blocks, Blackwell). Each runs as ``--dtype fp8`` with its ``--fp8-recipe``
(``NemoRun.fp8_recipe``: ``delayed``, ``current``, ``mxfp8``), whose casts ``simulator.fp8_cost`` times.

Example::

    >>> r = NEMO_2407[4]
    >>> (r.model, r.gpus, r.seq, r.tp, r.tokens_per_s_per_gpu, r.dp, r.grad_accum)
    ('LLAMA2-7B', 8, 4096, 1, 16934, 8, 16)
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["NemoRun", "NEMO_2407", "BRIDGE_2511", "BRIDGE_260401", "ROWS", "NOT_EXPRESSED"]


@dataclass(frozen=True)
class NemoRun:
    """One published Megatron-Core pre-training row and the recipe settings behind it."""

    container: str
    """The NeMo container the table names: ``24.07``, ``25.11``, ``26.04.01``."""
    system: str
    """The table's system: ``DGX-H100``, ``DGX-B200``, ``DGX-GB200``."""
    model: str
    """The model as printed (``LLAMA3_70B``, ``GPT3-175B``)."""
    gpus: int
    precision: str
    """As printed (``FP8``, ``FP8-CS``, ``MXFP8``)."""
    global_batch: int
    micro_batch: int
    seq: int
    tp: int
    pp: int
    vp: int
    """Virtual pipeline stages per pipeline rank (1: no interleaving; the tables print n/a or 1)."""
    tokens_per_s_per_gpu: float
    model_tflops_per_gpu: float
    fsdp: bool = False
    """Megatron FSDP (parameters, gradients and optimizer state sharded: ZeRO-3); else the distributed
    optimizer (ZeRO-1)."""
    tp_comm_overlap: bool = False
    """The recipe overlaps TP's all-gathers and reduce-scatters with the GEMMs (userbuffers)."""
    tp_comm_overlap_cfg: str | None = None
    """The userbuffers config the recipe names (``simulator.algorithms.ub_configs``, whose docstring cites where
    each recipe names it: NeMo-Framework-Launcher 24.07's training YAMLs for NeMo 24.07, the perf scripts'
    ``llama3_llm_pretrain.py`` for Megatron-Bridge); None: Transformer Engine's default."""
    recompute_layers: int = 0
    """Layers per pipeline rank recomputed whole (``recompute_granularity full``, method ``block``)."""
    offload_layers: int = 0
    """Layers whose activations the recipe offloads to host memory (``cpu_offloading_num_layers``)."""
    grad_reduce_bf16: bool = True
    """The perf scripts reduce gradients in bf16 (``grad_reduce_in_fp32 = False``); NeMo 24.07 in fp32."""
    gradient_accumulation_fusion: bool = True
    """Megatron FSDP runs turn it off ("to avoid functional errors", the perf scripts say)."""
    cp: int = 1
    source: str = ""
    recipe: str = ""
    note: str = ""
    """What else the row prints or the recipe sets that tpsim does not express."""

    def __post_init__(self) -> None:
        if self.gpus % (self.tp * self.pp * self.cp) or self.global_batch % (self.micro_batch * self.dp):
            raise ValueError(f"{self.name}: {self.gpus} GPUs, TP {self.tp} x PP {self.pp} x CP {self.cp}, global batch "
                             f"{self.global_batch}, micro-batch {self.micro_batch} do not divide")

    @property
    def dp(self) -> int:
        """Data-parallel degree: GPUs / (TP x PP x CP)."""
        return self.gpus // (self.tp * self.pp * self.cp)

    @property
    def grad_accum(self) -> int:
        """Micro-batches per step on each data-parallel rank."""
        return self.global_batch // (self.micro_batch * self.dp)

    @property
    def table(self) -> str:
        """The table's framework and container: ``NeMo 24.07``, ``Megatron-Bridge 25.11``."""
        return f"{'NeMo' if self.container == '24.07' else 'Megatron-Bridge'} {self.container}"

    @property
    def fp8_recipe(self) -> str:
        """Transformer Engine's scaling recipe the row ran (module doc): ``mxfp8`` for MXFP8, ``delayed`` for
        24.07's FP8, ``current`` for FP8-CS and 26.04.01's FP8 (run as ``fp8_cs``)."""
        if self.precision == "MXFP8":
            return "mxfp8"
        return "delayed" if self.container == "24.07" else "current"

    @property
    def attention(self) -> str:
        """The ``--attention`` kernel the row ran: ``cudnn`` on Megatron-Bridge's rows, ``flash`` on NeMo 24.07's.

        Transformer Engine's ``DotProductAttention`` drops FlashAttention for cuDNN's fused attention on
        compute capability 9.0 and later unless told otherwise ("Disabling FlashAttention to give
        FusedAttention preference on Hopper+", ``topologies.cudnn_rates``; TE 2.x on Blackwell too).
        Megatron-Bridge's recipes and perf scripts at 1804c076f and 17a381f95 leave it alone (no
        ``NVTE_FUSED_ATTN``, ``attention_backend`` left at auto for Llama; TE 2.9 and 2.15 pinned by
        ``uv.lock``), so those rows ran cuDNN's kernel. NeMo 24.07's runs did not: NeMo-Framework-Launcher's
        ``launcher_scripts/conf/config.yaml`` at tag 24.07 sets ``NVTE_FUSED_ATTN: 0`` ("Disable cudnn FA
        until we've tested it more") for every training job, as NeMo's ``scripts/llm/llama3_pretraining.py``
        at 9c5c5e9709 does, so TE ran FlashAttention-2.
        """
        return "flash" if self.container == "24.07" else "cudnn"

    @property
    def name(self) -> str:
        """A short label: container, system, model, GPUs, precision."""
        return f"{self.container} {self.system} {self.model} {self.gpus} GPUs {self.precision}"


_NEMO_SRC = ("NVIDIA NeMo, docs/source/performance/performance_summary.md (github:NVIDIA/NeMo, commit 9c5c5e9709, "
             "2024-09-09), table 'Pretraining' (NeMo 24.07, DGX-H100, FP8)")
_NEMO_RECIPE = ("NeMo 1.0 launcher configs not in the repository; settings of NeMo 2.0's "
                "nemo/collections/llm/recipes/llama3_70b.py pretrain_recipe_performance at 9c5c5e9709 (TP comm "
                "overlap and sequence parallel with TP > 1, distributed optimizer, no recompute)")


def _nemo(model, gpus, gbs, mbs, seq, tp, pp, vp, tokens, tflops, note="", ub=None):
    return NemoRun("24.07", "DGX-H100", model, gpus, "FP8", gbs, mbs, seq, tp, pp, vp, tokens, tflops,
                   tp_comm_overlap=tp > 1, tp_comm_overlap_cfg=ub, grad_reduce_bf16=False, source=_NEMO_SRC,
                   recipe=_NEMO_RECIPE, note=note)


NEMO_2407 = (
    _nemo("GPT3-5B", 64, 2048, 4, 2048, 1, 1, 1, 23406, 765),
    _nemo("GPT3-20B", 64, 256, 2, 2048, 2, 1, 1, 5851, 750, ub="ub_cfg_h100_h6144_tp2_mbs2_seqlen2048"),
    _nemo("GPT3-175B", 128, 256, 1, 2048, 4, 8, 6, 716, 771, ub="ub_cfg_h100_h12288_tp4_mbs1_seqlen2048"),
    _nemo("GPT3-175B", 512, 2048, 2, 2048, 4, 8, 6, 825, 888, note="its TFLOP/s cell links to MLPerf Training",
          ub="ub_cfg_h100_h12288_tp4_mbs1_seqlen2048"),
    _nemo("LLAMA2-7B", 8, 128, 1, 4096, 1, 1, 1, 16934, 780),
    _nemo("LLAMA2-13B", 16, 128, 1, 4096, 1, 4, 10, 8715, 760),
    _nemo("LLAMA2-70B", 64, 128, 1, 4096, 4, 4, 20, 1728, 768, ub="ub_cfg_h100_h8192_tp4_mbs1_seqlen4096"),
)
"""The 24.07 table's dense rows without context parallelism (Nemotron and LLAMA3 rows: ``NOT_EXPRESSED``)."""

_MB = ("NVIDIA-NeMo Megatron-Bridge, docs/performance-summary.md (github:NVIDIA-NeMo/Megatron-Bridge, commit {}), "
       "'{} NeMo Container', Pre-Training Performance, table '{}'")
_MB_RECIPE = ("scripts/performance/configs/llama/llama3_workload_base_configs.py ({}), llama3_llm_pretrain.py "
              "(grad_reduce_in_fp32 False; TP comm overlap as set there) and src/megatron/bridge/recipes/llama/"
              "llama3.py (distributed optimizer, overlapped gradient reduction and parameter gather, no recompute) "
              "at commit {}")
_C2511 = "1804c076f, 2025-12-09"
_C2604 = "17a381f95, 2026-05-16"
_OFFLOAD = ("the recipe offloads 40 layers' activations to the Grace CPU's memory (cpu_offloading_num_layers 40), "
            "which tpsim does not model: timed without recompute, the copies taken as hidden")


def _mb2511(system, model, gpus, gbs, mbs, tp, pp, vp, tokens, tflops, config, **kw):
    return NemoRun("25.11", system, model, gpus, "FP8-CS", gbs, mbs, 8192, tp, pp, vp, tokens, tflops,
                   source=_MB.format(_C2511, "25.11", f"System: {system}"),
                   recipe=_MB_RECIPE.format(config, "1804c076f"), **kw)


BRIDGE_2511 = (
    _mb2511("DGX-GB200", "LLAMA3_8B", 8, 128, 2, 1, 1, 1, 31508, 1622, "LLAMA3_8B_PRETRAIN_CONFIG_GB200_FP8_CS",
            note="FP8-MX figure 29,789; CUDA graphs over the whole iteration"),
    _mb2511("DGX-GB200", "LLAMA3_70B", 64, 256, 2, 1, 1, 1, 4312, 1937, "LLAMA3_70B_PRETRAIN_CONFIG_GB200_FP8_CS",
            fsdp=True, offload_layers=40, gradient_accumulation_fusion=False, note=_OFFLOAD),
    _mb2511("DGX-B200", "LLAMA3_8B", 8, 128, 2, 1, 1, 1, 30624, 1576, "LLAMA3_8B_PRETRAIN_CONFIG_B200_FP8_CS",
            note="FP8-MX figure 29,521; CUDA graphs over the whole iteration"),
    _mb2511("DGX-H100", "LLAMA3_8B", 8, 128, 1, 1, 1, 1, 14451, 744, "LLAMA3_8B_PRETRAIN_CONFIG_H100_FP8_CS",
            fsdp=True, recompute_layers=5, gradient_accumulation_fusion=False,
            note="the recipe recomputes 5 of 32 layers whole (recompute_num_layers 5, method block); tpsim "
                 "recomputes all layers or none"),
    _mb2511("DGX-H100", "LLAMA3_70B", 64, 128, 1, 4, 8, 5, 1602, 719, "LLAMA3_70B_PRETRAIN_CONFIG_H100_FP8_CS",
            tp_comm_overlap=True, tp_comm_overlap_cfg="userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192"),
)
"""The 25.11 tables' dense rows without context parallelism, on the systems tpsim has presets for."""


def _mb2604(system, precision, gbs, mbs, tp, pp, vp, tokens, tflops, config, **kw):
    return NemoRun("26.04.01", system, "LLAMA3_70B", 64, precision, gbs, mbs, 8192, tp, pp, vp, tokens, tflops,
                   source=_MB.format(_C2604, "26.04.01", "Model: LLAMA3_70B"),
                   recipe=_MB_RECIPE.format(config, "17a381f95"), **kw)


BRIDGE_260401 = (
    _mb2604("DGX-GB200", "FP8", 256, 2, 1, 1, 1, 4224, 1892, "LLAMA3_70B_PRETRAIN_CONFIG_GB200_FP8_CS_V2",
            fsdp=True, offload_layers=40, gradient_accumulation_fusion=False, note=_OFFLOAD),
    _mb2604("DGX-GB200", "MXFP8", 256, 1, 2, 4, 5, 3712, 1664, "LLAMA3_70B_PRETRAIN_CONFIG_GB200_FP8_MX_V2",
            tp_comm_overlap=True, tp_comm_overlap_cfg="userbuffers_fp8_b200_h8192_tp2_mbs1_seqlen8192",
            note="MXFP8: 32-element block scaling"),
    _mb2604("DGX-H100", "FP8", 256, 1, 4, 8, 5, 1664, 731, "LLAMA3_70B_PRETRAIN_CONFIG_H100_FP8_CS_V2",
            tp_comm_overlap=True, tp_comm_overlap_cfg="userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192"),
)
"""The 26.04.01 LLAMA3_70B table's rows on GB200 and H100 that tpsim can express (GB300 and NVFP4: left out)."""

ROWS = NEMO_2407 + BRIDGE_2511 + BRIDGE_260401

NOT_EXPRESSED = (
    ("NeMo 24.07: Nemotron-8B, 22B, 340B",
     "Nemotron-4's MLP is squared ReLU without a gate; tpsim's blocks have GELU or SwiGLU MLPs"),
    ("NeMo 24.07: LLAMA3-8B, LLAMA3-70B", "context parallel 2; tpsim has no context parallelism"),
    ("Megatron-Bridge 25.11 and 26.04.01: LLAMA3.1_405B on DGX-H100 and 25.11 on DGX-B200", "context parallel 2"),
    ("Megatron-Bridge 25.11 and 26.04.01: LLAMA3.1_405B on DGX-GB200 (TP 4, PP 16, VP 4, 256 GPUs)",
     "126 layers over 64 virtual stages: the recipe counts the embedding and the loss as a layer each "
     "(account_for_embedding_in_pipeline_split, account_for_loss_in_pipeline_split), giving uneven stages; "
     "tpsim's stages hold equal numbers of layers"),
    ("Megatron-Bridge: every DGX-GB300 and B300 row", "no GB300 or B300 preset in tpsim"),
    ("Megatron-Bridge 26.04.01: NVFP4 rows", "tpsim has no FP4 rate"),
    ("Megatron-Bridge: every MoE row (DeepSeekV3, GPT OSS, Qwen3 MoE, Kimi K2, Nemotron 3)", "tpsim is dense only"),
    ("Megatron-Bridge 25.09, 26.02, 26.02.01, 26.04 LLAMA3 rows",
     "the same configurations in neighbouring containers (25.09 does not print the precision); one container "
     "per configuration kept, the newest of each recipe generation"),
    ("NeMo 24.07 fine-tuning rows (SFT, LoRA)", "pre-training only"),
)
"""What the three tables print that tpsim cannot express, and why."""

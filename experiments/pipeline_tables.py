"""Published whole-step figures of pipelined GPT training on A100 80 GB servers (DGX A100 or alike, 8 x HDR each).

Two tables from Megatron-LM's team, as printed in the papers (sequence 2048, vocabulary 51,200, mixed precision):

- Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM"
  (arXiv 2104.04473), Table 1: weak scaling from 1.7B to 1T parameters; tensor parallel 1-8, pipeline
  parallel 1-64, 32 to 3,072 GPUs; achieved teraFLOP/s per GPU, counted with their formula (section 5.1)
  96 B s l h^2 (1 + s / 6h + V / 16 l h), which includes the recomputed forward (full recompute).
- Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models"
  (arXiv 2205.05198), Table 3 (configurations) and Table 5 (seconds per iteration): full recompute vs
  sequence parallelism + selective recompute ("present work").

And two runs of other teams on Megatron-DeepSpeed (Megatron-LM's tensor parallelism, DeepSpeed's pipeline
engine: 1F1B without interleaving, the gradients reduced after the last micro-batch):

- Smith et al. 2022, "Using DeepSpeed and Megatron to Train Megatron-Turing NLG 530B" (arXiv 2201.11990),
  section 2.4 (system performance, in the text): MT-NLG 530B (the shape of Table 1's 529.6B row) at tensor 8 x
  pipeline 35 on 280, 350 and 420 DGX A100 servers of Selene, batch 1920, sequence 2048: 60.1, 50.2 and
  44.4 s per iteration, 126, 121 and 113 teraFLOP/s per GPU (Narayanan's count: 96 B s l h^2 (1 + s/6h +
  V/16lh) over 2240 GPUs and 60.1 s gives 125.7, so full recompute and vocabulary 51,200 as Table 1).
- Le Scao et al. 2022, "BLOOM" (arXiv 2211.05100), trained as BigScience's ``train/tr11-176B-ml`` in
  github:bigscience-workshop/bigscience: ``tr11-176B-ml.slurm`` at dc8d99ff (TP 4, PP 12, micro-batch 2,
  global batch 2048, bf16, ``--checkpoint-activations``, DeepSpeed's BF16_Optimizer: ZeRO-1 of its own) on
  48 servers of Jean Zay with 8 A100 80 GB and 4 Omni-Path links each (384 GPUs, DP 8), and ``README.md`` at
  39ed8110 (its hardware list, and "Important checkpoints": the
  log line at the end of the first epoch, iteration 85376 at global batch 2048: 104.70 s per iteration,
  149.77 TFLOPs, Narayanan's count as Megatron-DeepSpeed logs it: with l 70, h 14336, V 250,880 it gives
  149.76). Both runs are held to their seconds per iteration, the figure that needs no FLOP count.

Each row keeps what its source gives; nothing here is derived from tpsim. The data-parallel degree is
GPUs / (tp x pp).

Example::

    >>> [r.params_B for r in NARAYANAN_TABLE1][:3]
    [1.7, 3.6, 7.5]
    >>> NARAYANAN_TABLE1[5].dp
    32
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PipelineRun", "NARAYANAN_TABLE1", "KORTHIKANTI_TABLE5", "SMITH_2022", "BLOOM_176B", "SEQ", "VOCAB"]

SEQ = 2048
VOCAB = 51200


@dataclass(frozen=True)
class PipelineRun:
    """One published training configuration and its measured figure."""

    name: str
    params_B: float
    heads: int
    hidden: int
    layers: int
    tp: int
    pp: int
    gpus: int
    global_batch: int
    tflops_per_gpu: float | None = None
    """Achieved teraFLOP/s per GPU (Narayanan's count), where published."""
    step_s: float | None = None
    """Seconds per iteration, where published."""
    micro_batch: int | None = None
    recompute: str = "full"
    sequence_parallel: bool = False
    source: str = ""
    schedule: str | None = None
    """The pipeline schedule the run used (``1f1b``), where known; None: searched (1F1B or interleaved)."""
    zero: int = 0
    """ZeRO stage of the run (BLOOM's BF16_Optimizer shards the optimizer states: 1)."""
    model: str | None = None
    """A model file (``experiments/models``) for a shape the GPT flags cannot say; None: a GPT of these sizes."""
    pipelined_layers: int | None = None
    """Layers tpsim pipelines when the run's do not divide by ``pp`` (BLOOM: see ``BLOOM_176B``)."""
    topology: str | None = None
    """The cluster as ``--topology`` takes it, where the servers are not DGX A100s; None: ``dgx-a100-80gb``."""
    bf16_optimizer: bool = False
    """DeepSpeed's BF16_Optimizer accumulated the gradients (``--deepspeed-bf16-optimizer``): BLOOM's ds_config
    (``"bf16": {"enabled": true}``, ZeRO 0) on DeepSpeed 5ea1c60f8, whose ``update_hp_grads`` casts every
    micro-batch's gradients to fp32 before adding them. Not MT-NLG: bf16 reached DeepSpeed (pipeline engine
    included) only in v0.6.2, April 2022."""

    @property
    def dp(self) -> int:
        """Data-parallel degree: GPUs / (tp x pp)."""
        return self.gpus // (self.tp * self.pp)


_N = "Narayanan et al. 2021, arXiv 2104.04473, Table 1"
NARAYANAN_TABLE1 = (
    PipelineRun("1.7B", 1.7, 24, 2304, 24, 1, 1, 32, 512, tflops_per_gpu=137, source=_N),
    PipelineRun("3.6B", 3.6, 32, 3072, 30, 2, 1, 64, 512, tflops_per_gpu=138, source=_N),
    PipelineRun("7.5B", 7.5, 32, 4096, 36, 4, 1, 128, 512, tflops_per_gpu=142, source=_N),
    PipelineRun("18.4B", 18.4, 48, 6144, 40, 8, 1, 256, 1024, tflops_per_gpu=135, source=_N),
    PipelineRun("39.1B", 39.1, 64, 8192, 48, 8, 2, 512, 1536, tflops_per_gpu=138, source=_N),
    PipelineRun("76.1B", 76.1, 80, 10240, 60, 8, 4, 1024, 1792, tflops_per_gpu=140, source=_N),
    PipelineRun("145.6B", 145.6, 96, 12288, 80, 8, 8, 1536, 2304, tflops_per_gpu=148, source=_N),
    PipelineRun("310.1B", 310.1, 128, 16384, 96, 8, 16, 1920, 2160, tflops_per_gpu=155, source=_N),
    PipelineRun("529.6B", 529.6, 128, 20480, 105, 8, 35, 2520, 2520, tflops_per_gpu=163, source=_N),
    PipelineRun("1008.0B", 1008.0, 160, 25600, 128, 8, 64, 3072, 3072, tflops_per_gpu=163, source=_N),
)
"""All ten rows of the weak-scaling table; per-GPU figures times GPUs give the table's aggregate column."""

_K = "Korthikanti et al. 2022, arXiv 2205.05198, Tables 3 and 5"
KORTHIKANTI_TABLE5 = tuple(
    PipelineRun(f"{name} {label}", params, heads, hidden, layers, 8, pp, gpus, batch, step_s=step, micro_batch=micro,
                recompute=recompute, sequence_parallel=sp, source=_K)
    for name, params, heads, hidden, layers, pp, gpus, batch, micro, full_s, present_s in (
        ("22B", 22.0, 64, 6144, 48, 1, 8, 4, 4, 1.42, 1.10),
        ("175B", 175.0, 96, 12288, 96, 8, 64, 64, 1, 18.13, 13.75),
        ("530B", 530.0, 128, 20480, 105, 35, 280, 280, 1, 49.05, 37.83),
        ("1T", 1000.0, 160, 25600, 128, 64, 512, 512, 1, 94.42, 71.49),
    )
    for label, step, recompute, sp in (("full recompute", full_s, "full", False),
                                       ("sequence parallel + selective", present_s, "selective", True))
)
"""The four models' iteration times, each with full recompute and with the paper's sequence parallelism plus
selective recompute; the configurations are Table 3's."""

_S = "Smith et al. 2022, arXiv 2201.11990, section 2.4"
SMITH_2022 = tuple(
    PipelineRun(f"MT-NLG 530B, {servers} servers", 529.6, 128, 20480, 105, 8, 35, servers * 8, 1920,
                tflops_per_gpu=tflops, step_s=step, schedule="1f1b", source=_S)
    for servers, step, tflops in ((280, 60.1, 126), (350, 50.2, 121), (420, 44.4, 113))
)
"""MT-NLG's three measured scales (data parallel 8, 10, 12); the micro-batch is not published (searched)."""

_B = ("Le Scao et al. 2022, arXiv 2211.05100; bigscience-workshop/bigscience train/tr11-176B-ml/tr11-176B-ml.slurm "
      "at dc8d99ff and README.md at 39ed8110 (iteration 85376)")
BLOOM_176B = (
    PipelineRun("BLOOM 176B", 176.2, 112, 14336, 70, 4, 12, 384, 2048, tflops_per_gpu=149.77, step_s=104.70,
                micro_batch=2, schedule="1f1b", zero=1, model="experiments/models/bloom-176b.yaml",
                pipelined_layers=60, topology="server=dgx-a100-80gb,servers=48,nics=4,nic_Gbps=100",
                bf16_optimizer=True, source=_B),
)
"""BLOOM's steady state at global batch 2048, on Jean Zay's servers: 8 A100 80 GB on NVLink, 4 Omni-Path links of
100 Gb/s each (the README's hardware list), as DGX A100 80 GB servers with 4 NICs of 100 Gb/s (tpsim runs them
at EDR's effective 12 GB/s; Omni-Path's own NCCL rate is not in the presets). Its 70 layers do not divide by
12 stages: BigScience counted each tied embedding as a layer when cutting (``--pp-partition-method
'type:transformer|embedding'``), so stage 0 held the embedding and 5 blocks, stages 1-10 six blocks each,
stage 11 five blocks and the output layer. tpsim cuts only equal stages, each end also holding the embedding
or the output layer; 60 layers (5 a stage) give both end stages exactly BLOOM's, and the last of them, with
its 250,880-word output layer (about one block more), paces the 1F1B steady state in both; the ten middle
stages are one block short, which shortens only the fill and drain (72 layers, the other near cut, gives every
stage a block too many)."""

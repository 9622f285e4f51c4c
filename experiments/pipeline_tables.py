"""Published whole-step figures of pipelined GPT training on A100 80 GB servers (Selene: DGX A100, 8 x HDR each).

Two tables, as printed in the papers (sequence 2048, vocabulary 51,200, mixed precision):

- Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM"
  (arXiv 2104.04473), Table 1: weak scaling from 1.7B to 1T parameters; tensor parallel 1-8, pipeline
  parallel 1-64, 32 to 3,072 GPUs; achieved teraFLOP/s per GPU, counted with their formula (section 5.1)
  96 B s l h^2 (1 + s / 6h + V / 16 l h), which includes the recomputed forward (full recompute).
- Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models"
  (arXiv 2205.05198), Table 3 (configurations) and Table 5 (seconds per iteration): full recompute vs
  sequence parallelism + selective recompute ("present work").

Each row keeps what the paper gives; nothing here is derived from tpsim. The data-parallel degree is
GPUs / (tp x pp).

Example::

    >>> [r.params_B for r in NARAYANAN_TABLE1][:3]
    [1.7, 3.6, 7.5]
    >>> NARAYANAN_TABLE1[5].dp
    32
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PipelineRun", "NARAYANAN_TABLE1", "KORTHIKANTI_TABLE5", "SEQ", "VOCAB"]

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

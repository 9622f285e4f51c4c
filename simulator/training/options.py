"""``StepOptions``: what a training step trains (batch, depth, vocabulary) and how (ZeRO, recompute, the overlaps).

One frozen record per plan, checked once on construction with the same messages memory sizing uses
(``simulator.memory.setup.TrainingSetup``); ``simulator.training.step`` times a step from it and re-exports it.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.algorithms.ub_configs import TE_DEFAULT
from simulator.errors import InputError
from simulator.memory.setup import TrainingSetup
from simulator.training.fsdp_passes import check_fsdp_version
from simulator.training.fsdp_prefetch import check_backward_prefetch
from simulator.training.gradients import DDP_BUCKET_BYTES

__all__ = ["StepOptions"]


@dataclass(frozen=True)
class StepOptions:
    """What a step trains: the global batch, the model's depth and vocabulary, and the training setup."""

    global_batch: int
    """Sequences per step (G)."""
    layers: int = 1
    """Transformer blocks (L)."""
    vocab: int | None = None
    """Vocabulary of the embedding / LM head; None: no embedding layer."""
    tied: bool = True
    """Whether the input embedding is the LM head's weight; False: a second [V, h] weight (its gradients
    reduced and its optimizer step taken like the head's)."""
    zero: int = 0
    """ZeRO stage 0..3 over the data-parallel group."""
    optimizer: str = "adam"
    recompute: str = "none"
    bucket_bytes: float = DDP_BUCKET_BYTES
    dtype: str = "bfloat16"
    overlap_grad_reduce: bool = True
    """Megatron-LM's ``--overlap-grad-reduce``: the DP reduction runs in buckets under the last backward
    (``simulator.training.main_grads``); False: one reduction of everything after it."""
    grad_reduce_in_fp32: bool | None = None
    """Main gradients (accumulated and reduced) in fp32; None: Megatron-LM's default (fp32 under bf16)."""
    gradient_accumulation_fusion: bool = True
    """Megatron-LM's default: the weight-gradient GEMMs accumulate into the main gradients; False: each
    micro-batch's backward adds them in a memory pass (``main_grads.accumulation_bytes``)."""
    deepspeed_bf16_optimizer: bool = False
    """DeepSpeed's BF16_Optimizer accumulates instead: a cast to fp32, then the add, after every micro-batch's
    backward (``main_grads``; bf16, ZeRO 0 or 1 only). Off: Megatron-LM's accumulation."""
    async_dgrad: bool = True
    """1d / 1d-sp: Megatron-LM's asynchronous input-gradient communication beside the dW GEMM (its default;
    ``simulator.algorithms.megatron_1d``)."""
    tp_comm_overlap: bool = False
    """1d-sp: Transformer Engine's chunked overlap of the forward's gathers and reduce-scatters and the backward's
    row-parallel dY gathers (Megatron-LM's
    ``--tp-comm-overlap``, off by default; ``simulator.algorithms.tp_comm_overlap``); other algorithms ignore it."""
    tp_comm_overlap_cfg: str = TE_DEFAULT
    """Under ``tp_comm_overlap``: the userbuffers config whose ``num_sm`` SMs TE's kernels hold beside the GEMMs
    (``--tp-comm-overlap-cfg``, ``simulator.algorithms.ub_configs``; default TE's own, 16)."""
    backward_prefetch: str = "BACKWARD_PRE"
    """ZeRO-3: FSDP's ``BackwardPrefetch`` (``simulator.training.fsdp_prefetch``)."""
    fsdp_version: int = 2
    """ZeRO 2/3: which PyTorch FSDP runs them, 1 (``FullyShardedDataParallel``) or 2 (``fully_shard``, the
    default); they differ in their per-micro-batch memory passes (``simulator.training.fsdp_passes``)."""
    megatron_fsdp: bool = False
    """ZeRO 2/3 as Megatron-Core's own FSDP (Megatron-LM's ``--use-megatron-fsdp``, Megatron-Bridge's
    ``use_megatron_fsdp``) instead of PyTorch's: Megatron-LM's distributed-optimizer passes
    (``simulator.training.optimizer_step``), none of PyTorch FSDP's casts and copies."""
    fp8_recipe: str | None = None
    """``--dtype fp8``: Transformer Engine's recipe, which sizes the linears' kept inputs (``TrainingSetup``);
    the step's times take it from the topology (``simulator.fp8``). None: not FP8."""

    def __post_init__(self) -> None:
        # The same training choices size memory: one set of checks and messages for both.
        TrainingSetup(optimizer=self.optimizer, zero=self.zero, recompute=self.recompute, layers=self.layers,
                      vocab=self.vocab, tied=self.tied, fp8_recipe=self.fp8_recipe)
        if not self.bucket_bytes > 0:
            raise InputError(f"bucket size must be > 0 bytes, got {self.bucket_bytes!r}")
        check_backward_prefetch(self.backward_prefetch)
        check_fsdp_version(self.fsdp_version)
        if self.megatron_fsdp and self.zero < 2:
            raise InputError(f"--use-megatron-fsdp shards gradients (ZeRO 2, its optim_grads) or also parameters "
                             f"(ZeRO 3, optim_grads_params), got ZeRO {self.zero}; use --zero 2 or 3")
        if self.megatron_fsdp and self.grad_reduce_in_fp32 is None:  # Megatron-LM's default, not PyTorch FSDP's
            object.__setattr__(self, "grad_reduce_in_fp32", self.dtype == "bfloat16")
        if self.deepspeed_bf16_optimizer and (self.dtype != "bfloat16" or self.zero > 1):
            raise InputError(f"DeepSpeed's BF16_Optimizer runs bf16 at ZeRO 0 or 1, got dtype {self.dtype} and "
                             f"ZeRO {self.zero}; use --dtype bfloat16 and --zero 0 or 1, or drop the option")

    @property
    def torch_fsdp(self) -> bool:
        """ZeRO 2/3 run by PyTorch's FSDP (its casts, copies and step: ``simulator.training.fsdp_passes``), not
        by Megatron-Core's own (``megatron_fsdp``)."""
        return self.zero >= 2 and not self.megatron_fsdp

"""Whole-model training plans: tensor x data parallel arrangements and the time of one training step.

==================  ================================================================================
module              what it holds
==================  ================================================================================
``arrangement``     ``TrainingArrangement``: a tensor-parallel arrangement x a data-parallel degree,
                    with the names a person reads (``megatron tp=8 x dp=8``), and every one of P GPUs
``batching``        micro-batches per step: G / (B x D), or not applicable
``placement``       tensor-parallel groups inside servers first; each rank's data-parallel group
``gradients``       a rank's gradient bytes and its DDP-style buckets with their ready times
``dp_reduce``       the data-parallel reduction on the topology, all groups at once (and its bound)
``lm_head``         the embedding / LM head as the algorithm's own parallel linear; vocabulary padding
``optimizer_step``  Megatron-LM's optimizer passes (zero, scale, norm, Adam, copy), memory-bound
``embedding_loss``  the embedding's and the vocabulary-parallel cross entropy's passes and collectives
``main_grads``      the main gradients' dtype, ``--overlap-grad-reduce``, and accumulation fusion
``flops``           Korthikanti et al.'s model FLOPs per step, and MFU
``utilisation``     a step's model FLOPs, MFU, HFU and TFLOP/s per GPU as Megatron-LM reports them
``options``         ``StepOptions``: what a step trains and how (ZeRO, recompute, the overlaps), checked once
``step``            ``step_time``: passes x layers x micro-batches + exposed reduction + optimizer
``step_terms``      a step's terms outside the passes: optimizer, FSDP's passes, FP8 cast, DP SM sharing
``comm_breakdown``  a step's communication per kind, exposed (critical path) + hidden (under compute)
``fsdp_prefetch``   ZeRO-3's all-gathers unit by unit, as FSDP prefetches them (``--backward-prefetch``)
``fsdp_passes``     ZeRO-2/3's memory passes as PyTorch FSDP1 / FSDP2 run them, per micro-batch and step
``search``          every arrangement bounded, the leading ones simulated, ranked (fitting first)
``memory_fit``      memory per GPU of an arrangement (``simulator.memory``) and the usable device memory
``launch``          the winner's launch line: Megatron-LM arguments or Colossal-AI's tensor config
``rate_note``       the note under a plan whose GPU's GEMM rate is a best case or an assumption
``settings``        the ZeRO stage and recompute mode each row searches, lightest that fit first
==================  ================================================================================
"""

__all__ = ["arrangement", "batching", "comm_breakdown", "dp_reduce", "embedding_loss", "fsdp_passes", "fsdp_prefetch", "flops", "gradients", "launch", "lm_head", "main_grads", "memory_fit", "settings",
           "optimizer_step", "options", "placement", "rate_note", "search", "step", "step_terms", "utilisation"]

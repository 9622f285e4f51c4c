"""``Work``: what one ``local`` function call costs, for the compute model (``simulator.compute``)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Work"]


@dataclass(frozen=True)
class Work:
    """What one call costs, for the compute model: its products, and its memory-bound passes."""

    gemms: tuple[tuple[int, int, int, int], ...] = ()
    """(count, m, k, n) for each batch of ``count`` (m x k) @ (k x n) products it runs."""
    elements: int = 0
    """Elements its memory-bound passes read plus write (times the dtype's size: bytes)."""
    mask_bytes: int = 0
    """Bytes of 1-byte dropout masks its passes write or read (Megatron-LM's fused bias-dropout-add saves a
    bool mask in the forward and reads it in the backward): one byte per element whatever the dtype."""
    fp32_elements: int = 0
    """Elements of fp32 intermediates its passes read plus write, 4 bytes each whatever the dtype (the upcast
    ``x.float()`` tensors of an eager-PyTorch RMSNorm, ``kernels.norm_variants``)."""
    flops: int = 0
    """Floating-point operations of its elementwise arithmetic (the gemms' 2mkn come on top)."""
    flash: tuple[str, int, int, int] | None = None
    """("forward" or "backward", count, seq, head_dim) of a causal FlashAttention-2 call, which the compute
    model times from the kernel's published throughput (``simulator.workloads.attention_cost``) where
    the device and dtype have one, else from ``gemms`` and ``elements``."""
    flash_kernel: str = "flash"
    """Whose published rate times a ``flash`` call: ``flash`` (FlashAttention-2), ``triton`` (FlashAttention in
    Triton, ``topologies.triton_rates``) or ``cudnn`` (cuDNN's fused attention, ``topologies.cudnn_rates``)."""

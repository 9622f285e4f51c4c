"""How much of a GPU's memory a training job can use: the datasheet size less a documented reserve.

``usable_device_bytes(device)`` takes a GPU node's ``device`` attribute (``topologies.devices``) and
returns ``memory_GB`` x 1e9 less ``RESERVE_BYTES`` and ``RESERVE_FRACTION`` of it:

- ``RESERVE_BYTES`` = 2 GB, for what the process holds outside PyTorch's tensors: the CUDA context with
  its loaded kernels (some 0.3 to 0.6 GB on A100 / H100 with CUDA 11.7+ lazy loading; PyTorch's CUDA
  semantics notes that this memory is not counted by its allocator), cuBLAS workspaces, and NCCL's
  communicator buffers (``NCCL_BUFFSIZE``, 4 MiB by default, per channel and peer of each communicator:
  a few hundred MB for the tensor- and data-parallel groups of one rank; NCCL user guide, environment
  variables);
- ``RESERVE_FRACTION`` = 5 %, for the caching allocator's fragmentation (memory reserved but not
  allocated, ``torch.cuda.memory_reserved() - memory_allocated()``, is typically a few percent in
  steady-state training and grows with varying tensor sizes).

These are chosen figures, not measured here (this project's runs have no multi-GPU NCCL job to
measure); a planner that needs a tighter margin should measure its own. The datasheet's "40 GB" and
"80 GB" are GiB in practice (nvidia-smi reports 40,960 and 81,559 MiB), so counting 1e9 bytes per GB
adds another 7 % of margin.

Example::

    >>> usable_device_bytes({"memory_GB": 80.0}) / 1e9
    74.0
"""

from __future__ import annotations

import math
import numbers

from simulator.errors import InputError

__all__ = ["RESERVE_BYTES", "RESERVE_FRACTION", "usable_device_bytes"]

RESERVE_BYTES = 2_000_000_000
"""CUDA context, library workspaces and NCCL buffers, per GPU."""
RESERVE_FRACTION = 0.05
"""The caching allocator's fragmentation, as a fraction of the device's memory."""


def usable_device_bytes(device: dict) -> int:
    """``memory_GB`` x 1e9 less the reserve, never below 0; InputError when the spec has no memory size."""
    size = device.get("memory_GB") if isinstance(device, dict) else None
    if not isinstance(size, numbers.Real) or isinstance(size, bool) or not math.isfinite(size) or size <= 0:
        raise InputError(f"device {device.get('name', '?') if isinstance(device, dict) else device!r}: "
                         f"memory_GB must be a positive number, got {size!r}")
    total = size * 1e9
    return max(0, int(total - RESERVE_BYTES - RESERVE_FRACTION * total))

"""Whether an nccl-tests log ran on the GPU kind a topology models: one note where it did not.

Comparing or fitting an A100 log on ``dgx-h100`` runs without complaint and means nothing: the fit then
stretches NVSwitch rates and latencies to absorb another generation's. Where the log lists its devices
(the ``# Rank ... device N [bus] NAME`` lines) and the topology's GPUs carry a device spec, their GPU
families (A100, H100, H200, B200, GB200, V100) are compared; a log naming no device, or a topology whose
GPUs have none (a custom file, CPU ranks), gives no note. The A100's 40 and 80 GB parts are one family:
their links are the same.

    >>> gpu_family("NVIDIA H100 80GB HBM3"), gpu_family("A100-SXM4-40GB"), gpu_family("GB200-186GB")
    ('H100', 'A100', 'GB200')
"""

from __future__ import annotations

import re

from topologies import gpu_nodes

__all__ = ["gpu_family", "device_note"]

_FAMILY = re.compile(r"(?<![A-Za-z0-9])(GB|[ABHV])(\d{3})(?![0-9])")


def gpu_family(name: str) -> str | None:
    """The GPU family a device name names ("H100", "GB200"), None where it names none tpsim knows."""
    match = _FAMILY.search(name)
    return match.group(1) + match.group(2) if match else None


def device_note(log_name: str, log_device: str | None, G) -> str | None:
    """A one-line note where the log's GPU family is not the topology's (module doc), else None."""
    if not log_device:
        return None
    names = sorted({(G.nodes[gpu].get("device") or {}).get("name", "") for gpu in gpu_nodes(G)})
    families = {gpu_family(name) for name in names}
    family = gpu_family(log_device)
    if family is None or None in families or family in families:
        return None
    topology = G.graph.get("name", "the topology")
    return (f"note: {log_name} ran on {log_device}; {topology}'s GPUs are {', '.join(names)}, so its times "
            f"are another GPU kind's (pick the preset of the log's GPU: tpsim topology list)")

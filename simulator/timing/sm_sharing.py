"""The cost of overlap: a GEMM that runs beside a collective shares the GPU's SMs with NCCL's kernel.

An NCCL collective is one kernel of one thread block (CTA) per channel, each resident on an SM for the
whole collective; a GEMM issued on another stream while it runs gets the SMs that are left. So a compute
stretch that overlaps an asynchronous collective loses, for the overlapped time, about the collective's
share of the SMs:

    extra_s = (channels / SMs) x overlapped_s,   overlapped_s = min(compute between issue and wait,
                                                                    the collective's time in that window)

charged to the rank when it waits for the collective (``simulator.timing.engine`` and
``simulator.timing.critical_path`` both call ``SmSharing.extra_s`` there). A collective the rank blocks
on costs nothing extra: nothing computes beside it.

Channels (CTAs) of one collective, from NCCL's own init lines on 8-GPU NVLink servers
("N coll channels, M nvls channels"):

- Ampere: 24 ring / tree channels (HGX A100, NVIDIA/nccl-tests issue #100: "Channel 23/24").
- Hopper: 24 ring / tree channels, 16 NVLS channels (p5.48xlarge, 8 H100, NCCL's expected output in
  AWS's EFA test recipe: "24 coll channels, 16 nvls channels"; across servers the same log shows 16 and
  16, and so does NVIDIA/nccl issue #1453 on 24 H100s).
- Blackwell: 32 and 32 (DGX B200, NVIDIA/nccl issue #1646: "32 coll channels, 32 nvls channels").

An all_reduce on GPUs that share an NVLink SHARP switch (``CollectiveParams.nvls``) counts the NVLS
channels, any other collective the ring / tree channels (the one-server figures: tensor-parallel groups
sit inside a server). Send/recv pairs cost nothing here. A collective that Transformer Engine runs as a
userbuffers kernel (``--tp-comm-overlap``) holds that kernel's ``num_sm`` SMs instead of NCCL's channels: its
op says how many (``sms``, ``simulator.algorithms.ub_configs``), and the charge is sms / SMs. SMs come from the device (``sms``,
``topologies.compute_rates``: A100 108, H100 SXM5 and H200 132, B200 148). Where either is unknown (no
``collective_nccl_arch``, CPU ranks) there is no cost.
"""

from __future__ import annotations

import networkx as nx

from simulator.collectives import CollectiveParams

__all__ = ["COLL_CHANNELS", "NVLS_CHANNELS", "SmSharing"]

COLL_CHANNELS = {"ampere": 24, "hopper": 24, "blackwell": 32}
"""NCCL ring / tree channels (one CTA each) of a collective on an 8-GPU server, per GPU generation."""
NVLS_CHANNELS = {"hopper": 16, "blackwell": 32}
"""NCCL NVLS channels of an all_reduce on an NVLink SHARP server, per GPU generation."""


class SmSharing:
    """Per rank, the fraction of its SMs each collective kind's kernel holds; ``extra_s`` the slowdown."""

    __slots__ = ("fractions", "sms")

    def __init__(self, fractions: list[dict[str, float]], sms: list[int | None] | None = None):
        self.fractions = fractions
        """``fractions[rank][kind]``: channels / SMs, at most 1; a kind not listed costs nothing."""
        self.sms = sms if sms is not None else [None] * len(fractions)
        """``sms[rank]``: the device's SMs (None: unknown, and a userbuffers kernel then costs nothing)."""

    @classmethod
    def on_graph(cls, G: nx.DiGraph, gpus: list[str]) -> "SmSharing | None":
        """The sharing of ranks on ``gpus`` of ``G``; None where nothing is known (module docstring)."""
        params = CollectiveParams.from_graph(G)
        coll = COLL_CHANNELS.get(params.nccl_arch)
        if coll is None:
            return None
        reduce = NVLS_CHANNELS.get(params.nccl_arch, coll) if params.nvls else coll
        fractions, seen, counts = [], {}, []
        for gpu in gpus:
            sms = G.nodes[gpu]["device"].get("sms")
            counts.append(sms or None)
            if sms not in seen:
                seen[sms] = {} if not sms else {
                    kind: min(1.0, (reduce if kind == "all_reduce" else coll) / sms)
                    for kind in ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter")}
            fractions.append(seen[sms])
        if not any(fractions):
            return None
        return cls(fractions, counts)

    def extra_s(self, rank: int, kind: str, issued_s: float, busy_s: float, start_s: float, end_s: float,
                now_s: float, held: int | None = None) -> float:
        """Seconds the compute of ``rank`` lost to a collective of ``kind`` that it issued at ``issued_s``
        and ran from ``start_s`` to ``end_s``, the rank having computed ``busy_s`` seconds by ``now_s``,
        when it waits for it; ``held``: the SMs its kernel holds (a userbuffers kernel's), None for NCCL's
        channels."""
        if held is None:
            f = self.fractions[rank].get(kind, 0.0)
        else:
            sms = self.sms[rank]
            f = min(1.0, held / sms) if sms else 0.0
        if f == 0.0:
            return 0.0
        window = min(end_s, now_s) - max(start_s, issued_s)
        return f * min(busy_s, window) if window > 0.0 else 0.0

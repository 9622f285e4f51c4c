"""NCCL protocols (LL, LL128, Simple): what each costs in the model.

What a protocol changes here:

- Wire bytes per payload byte (``wire_factor``): NCCL 2.8-2.12's tuning model (src/graph/tuning.cc,
  ``ncclTopoTuneModel``) rated LL at 1/4 of the link bandwidth for all_reduce and reduce and 1/3 for
  the others (8-byte lines carry 4 data bytes and a flag, and LL runs fewer threads), LL128 at 0.92
  (120 of every 128 bytes are data), Simple at 1; the A100 logs' slopes from 256 KiB to 1 MiB agree
  with LL's 1/4 (current NCCL's model says 1/2). The model sends ``payload / rate_fraction`` bytes, so
  a protocol's overhead also loads shared links. ``plan_wire_factor`` is what a collective's plan
  sends: that, times NCCL's per-chunk cost of single-server NVLS (``nvls_chunks``).
- Start-up delay (``startup_s``): every protocol pays the pipeline start-up of
  ``simulator.collectives.params`` (the first slice carried by one channel: LL too splits its data over
  channels; exempting LL made it 30-50% too fast from 256 KiB to 2 MiB against the A100 logs in
  tests/data/nccl-tests), and LL NCCL's 1.8 us lower base latency (``protocol_latency_s``), so LL wins
  the smallest messages. ``front_s`` is the sum charged before the first phase.

Choice: NCCL's tuning model (``nccl_tuning``, re-exported here as ``choose_protocol`` and
``nccl_model_time_us``) orders the candidates; ``choose.settle`` picks among them by simulated time.
"""

from __future__ import annotations

from simulator.collectives.nccl_tuning import (NCCL_NVLS_LATENCY_US, NCCL_P2P_LL_THRESHOLD_BYTES, choose_protocol,
                                               nccl_model_time_us)
from simulator.collectives.nvls_chunks import nvls_chunk_factor

__all__ = ["wire_factor", "plan_wire_factor", "startup_s", "front_s", "protocol_latency_s", "choose_protocol",
           "nccl_model_time_us", "NCCL_P2P_LL_THRESHOLD_BYTES", "NCCL_NVLS_LATENCY_US"]

_PROTOS = ("ll", "ll128", "simple")


def _rate_fraction(protocol: str, kind: str) -> float:
    if protocol == "simple":
        return 1.0
    if protocol == "ll128":
        return 0.92
    if protocol == "ll":
        return 0.25 if kind in ("all_reduce", "reduce") else 1.0 / 3.0
    raise ValueError(f"unknown protocol {protocol!r}; valid: {', '.join(_PROTOS)}")


def wire_factor(protocol: str, kind: str) -> float:
    """Bytes on the wire per payload byte for ``protocol`` in a collective of ``kind``."""
    return 1.0 / _rate_fraction(protocol, kind)


def plan_wire_factor(kind: str, algorithm: str, protocol: str, nbytes: float, params, gpus_per_server: int) -> float:
    """Wire bytes per payload byte of a collective's plan: ``wire_factor`` times NCCL's per-chunk cost where
    the plan is single-server NVLS on ``gpus_per_server`` heads (``nvls_chunks.nvls_chunk_factor``)."""
    return wire_factor(protocol, kind) * nvls_chunk_factor(algorithm, nbytes, params, gpus_per_server)


# NCCL's current base latencies of a ring (tuning.cc, ncclTunerConstantsDefaults.baseLatencies, Ring row):
# LL 6.6, LL128 14.0, Simple 8.4 us. The base latency (8 us in the presets) stands for Simple's; LL has
# NCCL's 1.8 us less, so it wins the smallest messages. LL128 keeps Simple's: its NCCL latency lies
# between over a few steps (higher base, lower per step: 17.8 vs 15.2 us on 2 ranks, 40.6 vs 56 on 8),
# the start-up term already charges it for its first slice, and NCCL's 5.6 us over Simple's base put
# 1-2 MiB on 2-4 A100s 12-21% over the logs; given LL's instead, it would beat LL on every size.
NCCL_RING_BASE_LATENCY_US = {"ll": 6.6, "ll128": 14.0, "simple": 8.4}


def protocol_latency_s(protocol: str) -> float:
    """A protocol's fixed latency relative to the base latency (Simple's): LL's NCCL base latency less
    Simple's (-1.8 us) for LL, 0 for LL128 and Simple (``NCCL_RING_BASE_LATENCY_US``), seconds."""
    if protocol == "ll":
        return (NCCL_RING_BASE_LATENCY_US["ll"] - NCCL_RING_BASE_LATENCY_US["simple"]) * 1e-6
    return 0.0


def startup_s(protocol: str, nbytes: float, params) -> float:
    """The pipeline start-up of ``params`` for a collective of ``nbytes``, every protocol (module doc)."""
    if nbytes <= 0:
        return 0.0
    return min(float(nbytes), float(params.startup_bytes)) / (params.channel_bandwidth_GBps * 1e9)


def front_s(kind: str, protocol: str, nbytes: float, params, n: int, algorithm: str | None = None) -> float:
    """Everything charged once before a collective's first phase on ``n`` ranks: the base latency, the
    protocol's own latency and the start-up (never below 0; only the base latency when n == 1); NVLS
    and the NVLS tree add NCCL's NVLS latency less Simple's base latency (25 - 8.4 us, ``NCCL_NVLS_LATENCY_US``). A send
    with LL has no start-up: NCCL sends at most NCCL_P2P_LL_THRESHOLD (16 KiB) with LL, one channel's
    LL buffer, so there is no slice pipeline to fill."""
    if n <= 1:
        return params.base_latency_s
    startup = 0.0 if kind == "send" and protocol == "ll" else startup_s(protocol, nbytes, params)
    if algorithm in ("nvls", "nvls_tree"):
        startup += (NCCL_NVLS_LATENCY_US - NCCL_RING_BASE_LATENCY_US["simple"]) * 1e-6
    return max(0.0, params.base_latency_s + protocol_latency_s(protocol) + startup)

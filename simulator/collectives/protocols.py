"""NCCL protocols (LL, LL128, Simple): what each costs in the model, and which one NCCL would pick.

What a protocol changes here:

- Wire bytes per payload byte (``wire_factor``): NCCL's own tuning model (src/graph/tuning.cc,
  ``ncclTopoTuneModel``) rates LL at 1/4 of the link bandwidth for all_reduce and reduce and 1/3 for
  the others (8-byte lines carry 4 data bytes and a flag, and LL runs fewer threads), LL128 at 0.92
  (120 of every 128 bytes are data), Simple at 1. The model sends ``payload / rate_fraction`` bytes, so
  a protocol's overhead also loads shared links.
- Start-up delay (``startup_s``): every protocol pays the pipeline start-up of
  ``simulator.collectives.params`` (the first slice carried by one channel: LL too splits its data over
  channels; exempting LL made it 30-50% too fast from 256 KiB to 2 MiB against the A100 logs in
  tests/data/nccl-tests); LL's lower NCCL base latency (``protocol_latency_s``) lets it win the smallest
  messages. ``front_s`` is the sum charged before the first phase.

Choice (``choose_protocol``): the protocol NCCL's tuning model predicts fastest, with its published
constants (tuning.cc, NCCL 2.8-2.12): time = baseLat + nsteps x hwLat + bytes / algBw, where for a
ring baseLat = {LL 3.6, LL128 10.0, Simple 8.4} us, hwLat on NVLink = {0.47, 1.9, 3.4} us and on the
network = {2.7, 4.0, 9.6} us per step; for a tree baseLat = {4.4, 4.4, 0} us, hwLat NVLink =
{0.52, 1.2, 28} us, network = {5.0, 8.5, 50} us. algBw = busBw x nRanks/nsteps for rings, busBw/2
for trees; busBw is the group's bottleneck bandwidth scaled by the protocol fraction (trees also by
0.9, LL 1/3.8, LL128 7/9), and the tree's by NCCL's ``treeCorrectionFactor`` (0.4-1.0 by size, medium
sizes lowest). Left out: NCCL's per-channel LL128 cap and 235 GB/s A100 cap (they need NCCL's channel
count). The result: LL for small messages, LL128 for
medium ones on NVLink, Simple for large ones; a ring on 8 A100s at 230 GB/s uses LL up to ~1.2 MiB,
LL128 up to ~28 MiB, then Simple.
"""

from __future__ import annotations

import math

__all__ = ["wire_factor", "startup_s", "front_s", "NCCL_NVLS_LATENCY_US", "protocol_latency_s", "choose_protocol", "nccl_model_time_us", "NCCL_P2P_LL_THRESHOLD_BYTES"]

_PROTOS = ("ll", "ll128", "simple")
# tuning.cc: baseLat[algorithm][protocol] and hwLat[hardware][algorithm][protocol], microseconds.
_BASE_LAT_US = {"ring": (3.6, 10.0, 8.4), "tree": (4.4, 4.4, 0.0)}
_HW_LAT_US = {
    ("nvlink", "ring"): (0.47, 1.9, 3.4),
    ("nvlink", "tree"): (0.52, 1.2, 28.0),
    ("net", "ring"): (2.7, 4.0, 9.6),
    ("net", "tree"): (5.0, 8.5, 50.0),
}

# tuning.cc, treeCorrectionFactor[protocol][log2(bytes / 64)]: NCCL's own correction of its tree's
# bandwidth for medium sizes ("Trees are not perfectly sticking to the model for medium sizes").
_TREE_CORRECTION = (
    (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0),
    (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0),
    (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9),
)

NCCL_P2P_LL_THRESHOLD_BYTES = 16384
"""NCCL sends point-to-point messages of up to this many bytes with LL (NCCL_P2P_LL_THRESHOLD)."""


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


# NCCL's current base latencies of a ring (tuning.cc, ncclTunerConstantsDefaults.baseLatencies, Ring row):
# LL 6.6, LL128 14.0, Simple 8.4 us. The base latency (8 us in the presets) stands for Simple's and LL
# gets 1.8 us less. LL128's 5.6 us more is not added: the start-up term already charges LL128 and Simple
# for their first slice, and adding it put 1-2 MiB on 2-4 A100s 12-21% over the logs.
NCCL_RING_BASE_LATENCY_US = {"ll": 6.6, "ll128": 14.0, "simple": 8.4}


def protocol_latency_s(protocol: str) -> float:
    """A protocol's fixed latency relative to the base latency: LL's NCCL base latency less Simple's
    (-1.8 us); 0 for LL128 and Simple (``NCCL_RING_BASE_LATENCY_US``), seconds."""
    if protocol == "ll":
        return (NCCL_RING_BASE_LATENCY_US["ll"] - NCCL_RING_BASE_LATENCY_US["simple"]) * 1e-6
    return 0.0


def startup_s(protocol: str, nbytes: float, params) -> float:
    """The pipeline start-up of ``params`` for a collective of ``nbytes``, every protocol (module doc)."""
    if nbytes <= 0:
        return 0.0
    return min(float(nbytes), float(params.startup_bytes)) / (params.channel_bandwidth_GBps * 1e9)


NCCL_NVLS_LATENCY_US = 25.0
"""NCCL's NVLS latency on NVLink (tuning.cc: hwLatencies[NVLINK][NVLS][Simple] 25 us, its base latency 0)."""


def front_s(kind: str, protocol: str, nbytes: float, params, n: int, algorithm: str | None = None) -> float:
    """Everything charged once before a collective's first phase on ``n`` ranks: the base latency, the
    protocol's own latency and the start-up (never below 0; only the base latency when n == 1); NVLS
    adds NCCL's NVLS latency less Simple's base latency (25 - 8.4 us, ``NCCL_NVLS_LATENCY_US``). A send
    with LL has no start-up: NCCL sends at most NCCL_P2P_LL_THRESHOLD (16 KiB) with LL, one channel's
    LL buffer, so there is no slice pipeline to fill."""
    if n <= 1:
        return params.base_latency_s
    startup = 0.0 if kind == "send" and protocol == "ll" else startup_s(protocol, nbytes, params)
    if algorithm == "nvls":
        startup += (NCCL_NVLS_LATENCY_US - NCCL_RING_BASE_LATENCY_US["simple"]) * 1e-6
    return max(0.0, params.base_latency_s + protocol_latency_s(protocol) + startup)


def _nsteps(kind: str, n: int) -> int:
    # tuning.cc: 2(n-1) for all_reduce, n-1 for all_gather/reduce_scatter, n for broadcast/reduce.
    if kind == "all_reduce":
        return 2 * (n - 1)
    if kind in ("all_gather", "reduce_scatter"):
        return n - 1
    return n


def nccl_model_time_us(kind: str, family: str, protocol: str, n: int, nbytes: float,
                       bandwidth_GBps: float, n_nodes: int = 1) -> float:
    """NCCL's tuning-model time (us) of a ``family`` ("ring", "tree" or "nvls") collective; see module doc."""
    p = _PROTOS.index(protocol)
    nsteps = _nsteps(kind, n)
    if family == "nvls":  # tuning.cc: Simple only; latency 25 us; busBw 2 x 0.85 x link, algBw x n / nsteps
        if protocol != "simple":
            return math.inf
        return NCCL_NVLS_LATENCY_US + nbytes / (1e3 * 2 * 0.85 * bandwidth_GBps * n / nsteps)
    bus = bandwidth_GBps * _rate_fraction(protocol, kind)
    if family == "tree":
        bus *= 0.9
        if protocol == "ll":
            bus = bandwidth_GBps * 0.9 / 3.8
        elif protocol == "ll128":
            bus = bandwidth_GBps * 0.9 * 7.0 / 9.0
        algbw = bus * 0.5
    else:
        algbw = bus * n / nsteps
    if family == "tree" and kind == "all_reduce":
        log_size = int(math.log2(nbytes)) - 6 if nbytes >= 64 else -1  # tuning.cc: log2i(nBytes >> 6)
        if 0 <= log_size < 23:
            algbw *= _TREE_CORRECTION[p][log_size]
    lat = _BASE_LAT_US[family][p]
    intra = _HW_LAT_US[("nvlink", family)][p]
    inter = _HW_LAT_US[("net", family)][p]
    per_node = max(1, n // max(1, n_nodes))
    if family == "ring":
        inter_steps = _nsteps(kind, n_nodes) if n_nodes > 1 else 0
        lat += (nsteps - inter_steps) * intra + inter_steps * inter
    else:
        lat += 2 * ((per_node - 1) * intra + math.floor(math.log2(max(1, n_nodes))) * inter)
    return lat + nbytes / (1e3 * algbw)


def choose_protocol(kind: str, family: str, n: int, nbytes: float, bandwidth_GBps: float,
                    n_nodes: int = 1) -> str:
    """The protocol with the smallest ``nccl_model_time_us`` (ties go to the earlier of LL, LL128, Simple)."""
    if kind == "send":
        return "ll" if nbytes <= NCCL_P2P_LL_THRESHOLD_BYTES else "simple"
    times = [nccl_model_time_us(kind, family, p, n, nbytes, bandwidth_GBps, n_nodes) for p in _PROTOS]
    return _PROTOS[times.index(min(times))]

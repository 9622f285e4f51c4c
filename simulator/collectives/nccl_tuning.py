"""NCCL's own tuning model: the time NCCL predicts for each algorithm and protocol, with its constants.

From NVIDIA/nccl src/graph/tuning.cc (``ncclTopoTuneModel``, ``ncclTopoGetAlgoTime``). NCCL predicts
time = latency + bytes / algBw, where

- latency of a ring: baseLat + (nsteps - nInterSteps) x intraLat + nInterSteps x interLat, with
  nsteps = 2(n-1) for all_reduce, n-1 for all_gather/reduce_scatter, n for broadcast/reduce, and
  nInterSteps = 2(N-1) / N-1 for N servers; broadcast/reduce pay nsteps x the step latency;
- latency of the tree (all_reduce): baseLat + 2 ((n/N - 1) intraLat + log2(N) interLat);
- latency of NVLS: its NVLink latency, 25 us, base 0 (current master); of the NVLS tree (across
  servers): 25 us + 2 log2(N) x its network latency, 20.9 us;
- bandwidth: busBw = the group's bottleneck bandwidth; ring LL x 1/4 (all_reduce, reduce; 1/3 the
  others), LL128 x 0.92; tree x 0.9, then LL / 3.8, LL128 x 7/9; NVLS 2 x 0.85 (Hopper's NVLS
  efficiency); the NVLS tree's busBw is the group's bottleneck (its NICs) x 2 on two servers (their
  trees halve the network's bytes), else x 1; algBw = busBw x n / nsteps for ring, NVLS and the NVLS
  tree, busBw / 2 for the tree; the tree's is
  corrected by ``treeCorrectionFactor`` (0.4-1.0 by size).

The latency and bandwidth constants are NCCL 2.8-2.12's, as this model has used them: baseLat
(LL, LL128, Simple) ring 3.6, 10.0, 8.4, tree 4.4, 4.4, 0 us; per step on NVLink ring 0.47, 1.9, 3.4,
tree 0.52, 1.2, 28; on the network ring 2.7, 4.0, 9.6, tree 5.0, 8.5, 50. NCCL's current master has
ring 6.6, 14.0, 8.4 and tree 6.8, 14.0, 8.4; NVLink ring 0.6, 1.9, 3.4, tree 0.6, 1.25, 4.0; network
ring 2.7, 4.0, 14.0, tree 5.0, 8.5, 14.0; ring LL x 1/2 and tree x 0.92, plus a 1 us network post
overhead per ring step across servers. Only the order of candidates depends on them (``choose``), and
with current master's the order on 2-4 A100s moves LL128/Simple so that the calibration held out in
tests/simulator/test_calibrate_nccl.py misses 4 MiB on 4 GPUs by 11.5% (8.3% with these).
Left out, since they need NCCL's channel count: the per-channel caps (llMaxBw, perChMaxRingLL128Bw,
perChMaxTreeBw) and the ring's 1.4x Simple "plateau" latency across servers.
"""

from __future__ import annotations

import math

__all__ = ["nccl_model_time_us", "choose_protocol", "NCCL_P2P_LL_THRESHOLD_BYTES", "NCCL_NVLS_LATENCY_US",
           "NCCL_NVLS_TREE_NET_LATENCY_US"]

_PROTOS = ("ll", "ll128", "simple")
_BASE_LAT_US = {"ring": (3.6, 10.0, 8.4), "tree": (4.4, 4.4, 0.0)}
_HW_LAT_US = {
    ("nvlink", "ring"): (0.47, 1.9, 3.4),
    ("nvlink", "tree"): (0.52, 1.2, 28.0),
    ("net", "ring"): (2.7, 4.0, 9.6),
    ("net", "tree"): (5.0, 8.5, 50.0),
}
NCCL_NVLS_LATENCY_US = 25.0
"""NCCL's NVLS latency on NVLink (hwLatencies[NVLINK][NVLS][Simple]; its base latency is 0)."""
NCCL_NVLS_TREE_NET_LATENCY_US = 20.9
"""NCCL's latency of one network step of its NVLS tree (hwLatencies[NET][NVLS_TREE][Simple])."""

# treeCorrectionFactor[protocol][log2(bytes / 64)]: NCCL's own correction of its tree's bandwidth for
# medium sizes ("Trees are not perfectly sticking to the model for medium sizes").
_TREE_CORRECTION = (
    (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0),
    (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0),
    (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9),
)

NCCL_P2P_LL_THRESHOLD_BYTES = 16384
"""NCCL sends point-to-point messages of up to this many bytes with LL (NCCL_P2P_LL_THRESHOLD)."""


def _nsteps(kind: str, n: int) -> int:
    if kind == "all_reduce":
        return 2 * (n - 1)
    if kind in ("all_gather", "reduce_scatter"):
        return n - 1
    return n


def _algbw_GBps(kind: str, family: str, p: int, n: int, n_nodes: int, nbytes: float, bw: float) -> float:
    if family == "nvls":
        return 2 * 0.85 * bw * n / _nsteps(kind, n)
    if family == "nvls_tree":
        return bw * (2 if n_nodes <= 2 else 1) * n / _nsteps(kind, n)
    if family == "ring":
        bus = bw * ((0.25 if kind in ("all_reduce", "reduce") else 1 / 3), 0.92, 1.0)[p]
        return bus * n / _nsteps(kind, n)
    bus = bw * 0.9
    if p == 0:
        bus /= 3.8
    elif p == 1:
        bus *= 7.0 / 9.0
    algbw = bus * 0.5
    log_size = int(math.log2(nbytes)) - 6 if nbytes >= 64 else -1  # log2i(nBytes >> 6)
    if 0 <= log_size < 23:
        algbw *= _TREE_CORRECTION[p][log_size]
    return algbw


def _latency_us(kind: str, family: str, p: int, n: int, n_nodes: int) -> float:
    if family == "nvls":
        return NCCL_NVLS_LATENCY_US
    if family == "nvls_tree":
        return NCCL_NVLS_LATENCY_US + 2 * math.floor(math.log2(max(1, n_nodes))) * NCCL_NVLS_TREE_NET_LATENCY_US
    lat = _BASE_LAT_US[family][p]
    intra = _HW_LAT_US[("nvlink", family)][p]
    per_node = max(1, n // max(1, n_nodes))
    inter = _HW_LAT_US[("net", family)][p]
    if family == "tree":
        return lat + 2 * ((per_node - 1) * intra + math.floor(math.log2(max(1, n_nodes))) * inter)
    nsteps = _nsteps(kind, n)
    inter_steps = 0 if n_nodes == 1 else (2 * (n_nodes - 1) if kind == "all_reduce" else n_nodes - 1)
    return lat + (nsteps - inter_steps) * intra + inter_steps * inter


def nccl_model_time_us(kind: str, family: str, protocol: str, n: int, nbytes: float,
                       bandwidth_GBps: float, n_nodes: int = 1) -> float:
    """NCCL's predicted time (us) of a ``family`` ("ring", "tree", "nvls" or "nvls_tree") collective with ``protocol``
    on ``n`` ranks over ``n_nodes`` servers at the group's bottleneck ``bandwidth_GBps`` (module doc);
    inf where NCCL does not run the pair (NVLS other than Simple)."""
    p = _PROTOS.index(protocol)
    if family in ("nvls", "nvls_tree") and protocol != "simple":
        return math.inf
    algbw = _algbw_GBps(kind, family, p, n, n_nodes, nbytes, bandwidth_GBps)
    return _latency_us(kind, family, p, n, n_nodes) + nbytes / (1e3 * algbw)


def choose_protocol(kind: str, family: str, n: int, nbytes: float, bandwidth_GBps: float,
                    n_nodes: int = 1) -> str:
    """The protocol with the smallest ``nccl_model_time_us`` (ties go to the earlier of LL, LL128, Simple);
    a send takes NCCL's P2P rule (LL up to ``NCCL_P2P_LL_THRESHOLD_BYTES``, else Simple)."""
    if kind == "send":
        return "ll" if nbytes <= NCCL_P2P_LL_THRESHOLD_BYTES else "simple"
    times = [nccl_model_time_us(kind, family, p, n, nbytes, bandwidth_GBps, n_nodes) for p in _PROTOS]
    return _PROTOS[times.index(min(times))]

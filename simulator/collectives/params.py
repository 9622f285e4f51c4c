"""CollectiveParams: the simulator's collective-model parameters, read from a topology's ``sim`` dict.

Every field has a documented default and a ``sim`` key (``G.graph["sim"][key]``) that overrides it;
calibration writes fitted values there. Keys this module reads:

================================== ======================== ==========================================
sim key                            default                  meaning
================================== ======================== ==========================================
collective_base_latency_us         8.0                      fixed software latency of one collective
                                                            (NCCL: several us, about 8 us)
collective_step_latency_us         0.0                      software latency per algorithm step, on top
                                                            of the route's hop latencies
collective_inter_step_latency_us   10.0                     extra latency of a step between servers
                                                            (measured on published logs, see below)
collective_net_overhead_us         1.0                      least time of a ring step inside a server when
                                                            the ring crosses the network, LL and LL128;
                                                            Simple 3x (NCCL's netOverhead, see below)
collective_startup_bytes           1048576 (1 MiB)          bytes of the pipeline start-up (see below)
collective_channel_bandwidth_GBps  20.0                     rate of one NCCL channel during start-up
collective_nvls                    false                    the GPUs share an NVLink SHARP switch (NCCL's
                                                            NVLS: Hopper and later NVSwitch systems)
collective_nvls_efficiency         0.85                     NVLS efficiency (NCCL's tuning.cc: Hopper
                                                            0.85; Blackwell presets 0.80, measured)
collective_nvls_chunk_overhead_bytes 0                      per NVLS chunk, a fixed cost worth this many
                                                            bytes (``nvls_chunks``; Hopper presets 5 KiB)
collective_nvls_tree_fill_loops    0                        loops of the NVLS tree's pipeline fill
                                                            (``nvls_tree_fill``; Hopper and Blackwell
                                                            presets 1.5)
collective_pipeline_chunks         8                        chunks a pipelined stream is cut into
collective_pipeline_chunk_max_bytes 524288 (512 KiB)        largest pipeline chunk
collective_protocol                "auto"                   "auto", "simple", "ll128" or "ll"
collective_nccl_arch               "" (none)                GPU generation of NCCL's per-channel tree caps
                                                            ("volta", "ampere", "hopper", "blackwell"; the
                                                            presets set it; ``channel_caps``)
collective_kind_bytes_factors      {} (every factor 1)      per collective kind, bytes of work per byte
                                                            of S (see below)
================================== ======================== ==========================================

Kind factors: a backend implements each collective kind its own way, and what one kind's byte costs
need not follow the algorithm the model decomposes it into (gloo on CPU ranks copies and reduces in
host memory and over sockets: on a 4-rank bench here one set of link rates fitted its all_reduce on 4
ranks and its send/recv 20-45% too fast and its broadcasts on 4 ranks up to 2x too slow).
``{kind: f}`` makes a collective of that kind move and time ``f x S`` bytes wherever the model uses S,
as NCCL's own tuning model corrects its bandwidth per collective and algorithm. ``tpsim calibrate``
fits them where its samples hold several kinds; no preset sets any.

Start-up (LL128 and Simple protocols): NCCL cuts a collective across channels (one thread block
each) and pushes data through per-peer FIFOs in slices; a Simple ring slice is ALLREDUCE_SLICESTEPS
(2) x NCCL_BUFFSIZE (4 MiB) / NCCL_STEPS (8) = 1 MiB (NCCL src/include/collectives.h, device.h).
Before the pipeline streams at the link rate the first slice is carried by one channel, at about
20 GB/s on A100 NVLink (NCCL's per-channel SM80 NVLink figure, src/graph/topo.h). The model charges
that as a fixed delay ``min(S, startup_bytes) / channel_bandwidth`` (52 us from 1 MiB up). It is
what separates NCCL's ~8 us small-message latency from the ~50-70 us intercept of its bandwidth
regime; it is a simplification (NCCL's real ramp also depends on channel and thread counts).

Inter-server steps: NCCL's tuning model (src/graph/tuning.cc, ``hwLatencies``) charges a ring step
0.6 us over NVLink and 2.7 us over the network (LL; the tree's network step 5.0 us, Simple 9.6 and
50 us). A preset's network route (GPU -> NIC -> leaf -> NIC -> GPU, 0.5 + 0.15 + 0.15 + 0.5 us) is
1.3 us, and NCCL's table would add 1.4 us on top of it; the published multi-server logs measure far
more, so the default is read off them: 10 us per step between servers (NIC, proxy thread and network
software). With it the smallest sizes of Azure's all_reduce on 2, 4, 8 and 16 A100 servers
(1-8 KiB: 34-41, 53-58, 77-82, 97-103 us; NCCL's tree, 2 log2(servers) network steps) are predicted
within -8..+13% (one 2 KiB row on 32 GPUs, measured at twice its neighbours, aside), and GCP's H200
all_gather on 2 servers (ring LL, one network step, 28 us) within -10%, where 1.4 us gave -40..-65% on
both (``tpsim collective --compare LOG`` on each log of ``tests/data/nccl-tests``). The LL128/Simple
surcharges of NCCL's table are left to the start-up term above, which the A100 logs fit (their
intercept does not grow with the number of ranks as NCCL's table would have it). NCCL's NVLS tree pays
NCCL's own figure for its network step instead where that is larger (tuning.cc, hwLatencies[NET]
[NVLS_TREE], 20.9 us): the two-server H100 and B200 logs of ``tests/data/nccl-tests`` (nebius-h100,
lambda-b200, gcp-a4-b200) sit
about 20 us above the model's NVLS tree at 1-2 MiB with 10 us, and within -3..+1% (H100) with 20.9.

Network overhead of rings across servers: NCCL's tuning model (tuning.cc, ``getNetOverhead`` and the
ring latency, "Inter-node rings still have to launch nsteps * net overhead") charges every step of an
all_reduce, all_gather or reduce_scatter ring that spans servers at least the proxy's network overhead,
1 us on x86 Intel hosts (2 us AMD), 3x for Simple, instead of the NVLink step (0.6 us): each step's
progress is paced by the network proxy posting the next transfer. The model does the same: a step
inside a server of such a ring costs max(route + step latency, ``net_overhead_us`` x (3 for Simple, else 1)).
On 16 H200s over 2 servers (ring all_gather, Simple, 14 such steps) that is 33.6 us more than the NVLink
steps, which the GCP log's 16-128 MiB rows show (measured 117.6-493.7 us, -23 to -26% without it).

Pipelining (chain broadcast/reduce, double binary tree): a stream of X bytes is cut into chunks of
``min(X / pipeline_chunks, pipeline_chunk_max_bytes)``; the pipeline fill costs one chunk time per
stage after the first. 8 is NCCL_STEPS (slots in flight per peer), 512 KiB one Simple FIFO slot.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from simulator.collectives.channel_caps import NCCL_ARCHS
from simulator.collectives.nccl_tuning import NCCL_NVLS_TREE_NET_LATENCY_US
from simulator.collectives.patterns import KINDS
from simulator.errors import InputError

__all__ = ["CollectiveParams", "PROTOCOLS", "SIM_KEYS"]

PROTOCOLS = ("auto", "simple", "ll128", "ll")


@dataclass(frozen=True)
class CollectiveParams:
    """Parameters of the collective model; units in the names; see the module docstring."""

    base_latency_us: float = 8.0
    """Fixed software latency charged once per collective, microseconds."""
    step_latency_us: float = 0.0
    """Extra software latency per algorithm step (added to the route latency), microseconds."""
    inter_step_latency_us: float = 10.0
    """Further latency of a step between servers (NIC and proxy), microseconds (module doc)."""
    net_overhead_us: float = 1.0
    """Least time of a step inside a server of a ring that crosses the network, LL/LL128; Simple 3x (module doc)."""
    startup_bytes: int = 1 << 20
    """Bytes moved at one channel's rate before a LL128/Simple pipeline streams."""
    channel_bandwidth_GBps: float = 20.0
    """Rate of one channel during the start-up, GB/s (1 GB = 1e9 B)."""
    nvls: bool = False
    """Whether the servers' GPUs share an NVLink SHARP switch (NCCL's NVLS all_reduce is then enabled)."""
    nvls_efficiency: float = 0.85
    """NCCL's NVLS efficiency: the fraction of the link rate NVLS traffic moves at (tuning.cc)."""
    nvls_chunk_overhead_bytes: int = 0
    """Per chunk of an NVLS all_reduce, a fixed cost worth this many bytes at its rate (``nvls_chunks``)."""
    nvls_tree_fill_loops: float = 0.0
    """Loops of NCCL's NVLS tree the pipeline fill costs, at its per-channel cap (``nvls_tree_fill``)."""
    pipeline_chunks: int = 8
    """Number of chunks a pipelined stream is cut into (at most pipeline_chunk_max_bytes each)."""
    pipeline_chunk_max_bytes: int = 512 << 10
    """Largest pipeline chunk, bytes."""
    protocol: str = "auto"
    """NCCL protocol: "auto" (chosen as NCCL's tuning model would), "simple", "ll128" or "ll"."""
    nccl_arch: str = ""
    """GPU generation whose per-channel tree caps apply across servers (``channel_caps``); "" for none."""
    kind_bytes_factors: tuple[tuple[str, float], ...] = ()
    """(kind, factor) pairs, sorted by kind: bytes of work per byte of S for that collective kind
    (module doc); a kind not listed has factor 1. A tuple, so that parameters stay hashable."""

    def __post_init__(self) -> None:
        for name in ("base_latency_us", "step_latency_us", "inter_step_latency_us", "net_overhead_us",
                     "nvls_tree_fill_loops"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and value >= 0):
                raise InputError(f"CollectiveParams.{name} must be a number >= 0, got {value!r}")
        if not (isinstance(self.channel_bandwidth_GBps, (int, float)) and self.channel_bandwidth_GBps > 0):
            raise InputError(
                f"CollectiveParams.channel_bandwidth_GBps must be a number > 0, got {self.channel_bandwidth_GBps!r}"
            )
        for name in ("startup_bytes", "pipeline_chunk_max_bytes", "nvls_chunk_overhead_bytes"):
            value = getattr(self, name)
            if not (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
                raise InputError(f"CollectiveParams.{name} must be an integer >= 0, got {value!r}")
        if self.pipeline_chunk_max_bytes == 0:
            raise InputError("CollectiveParams.pipeline_chunk_max_bytes must be > 0, got 0")
        if not (isinstance(self.pipeline_chunks, int) and not isinstance(self.pipeline_chunks, bool)
                and self.pipeline_chunks >= 1):
            raise InputError(f"CollectiveParams.pipeline_chunks must be an integer >= 1, got {self.pipeline_chunks!r}")
        for pair in self.kind_bytes_factors:
            if not (isinstance(pair, tuple) and len(pair) == 2 and pair[0] in KINDS
                    and isinstance(pair[1], (int, float)) and not isinstance(pair[1], bool)
                    and 0 < pair[1] < math.inf):
                raise InputError(f"collective_kind_bytes_factors: each entry must map a kind ({', '.join(KINDS)}) "
                                 f"to a number > 0, got {pair!r}")
        if not isinstance(self.nvls, bool):
            raise InputError(f"CollectiveParams.nvls must be true or false, got {self.nvls!r}")
        if not (isinstance(self.nvls_efficiency, (int, float)) and 0 < self.nvls_efficiency <= 1):
            raise InputError(f"CollectiveParams.nvls_efficiency must be a number in (0, 1], "
                             f"got {self.nvls_efficiency!r}")
        if self.nccl_arch not in NCCL_ARCHS:
            raise InputError(f"CollectiveParams.nccl_arch must be one of {', '.join(repr(a) for a in NCCL_ARCHS)}, "
                             f"got {self.nccl_arch!r}")
        if self.protocol not in PROTOCOLS:
            raise InputError(f"CollectiveParams.protocol must be one of {', '.join(PROTOCOLS)}, got {self.protocol!r}")

    @property
    def base_latency_s(self) -> float:
        """``base_latency_us`` in seconds."""
        return self.base_latency_us * 1e-6

    @property
    def step_latency_s(self) -> float:
        """``step_latency_us`` in seconds."""
        return self.step_latency_us * 1e-6

    @property
    def inter_step_latency_s(self) -> float:
        """``inter_step_latency_us`` in seconds."""
        return self.inter_step_latency_us * 1e-6

    def inter_step_latency_for_s(self, algorithm: str) -> float:
        """Latency of one step between servers for ``algorithm``, seconds: ``inter_step_latency_us``, and for
        NCCL's NVLS tree no less than NCCL's own figure for its network step (20.9 us, module doc)."""
        if algorithm == "nvls_tree":
            return max(self.inter_step_latency_us, NCCL_NVLS_TREE_NET_LATENCY_US) * 1e-6
        return self.inter_step_latency_s

    def ring_step_floor_s(self, kind: str, algorithm: str, protocol: str, networked: bool) -> float:
        """Least time of a step inside a server for ``algorithm`` (NCCL's net overhead, module doc): for an
        all_reduce, all_gather or reduce_scatter ring whose routes cross the network, ``net_overhead_us``
        (x3 with Simple), in seconds; otherwise 0."""
        if not networked or algorithm != "ring" or kind not in ("all_reduce", "all_gather", "reduce_scatter"):
            return 0.0
        return self.net_overhead_us * (3.0 if protocol == "simple" else 1.0) * 1e-6

    def bytes_factor(self, kind: str) -> float:
        """Bytes of work per byte of S for a collective of ``kind`` (1 unless set)."""
        for name, factor in self.kind_bytes_factors:
            if name == kind:
                return float(factor)
        return 1.0

    def chunk_bytes(self, stream_bytes: float) -> float:
        """Pipeline chunk for a stream of ``stream_bytes``: min(stream / chunks, chunk max)."""
        return min(stream_bytes / self.pipeline_chunks, float(self.pipeline_chunk_max_bytes))

    @classmethod
    def from_sim(cls, sim: dict | None) -> CollectiveParams:
        """Build from a topology's ``sim`` dict (keys in ``SIM_KEYS``; others are ignored)."""
        sim = sim or {}
        if not isinstance(sim, dict):
            raise InputError(f"topology sim must be a dict, got {type(sim).__name__}")
        values = {}
        for field_name, key in SIM_KEYS.items():
            if key in sim:
                value = sim[key]
                if field_name in _INT_FIELDS and isinstance(value, float) and value.is_integer():
                    value = int(value)  # YAML/JSON may write 1048576.0
                if field_name == "kind_bytes_factors":
                    if not isinstance(value, dict):
                        raise InputError(f"sim {key} must be a mapping of collective kind to factor, got {value!r}")
                    value = tuple(sorted(value.items()))
                values[field_name] = value
        return cls(**values)

    @classmethod
    def from_graph(cls, graph) -> CollectiveParams:
        """Build from ``graph.graph["sim"]`` of a topology graph (defaults where a key is absent)."""
        return cls.from_sim(graph.graph.get("sim"))


SIM_KEYS = {f.name: f"collective_{f.name}" for f in fields(CollectiveParams)}
"""Field name -> the ``sim`` key that sets it."""

_INT_FIELDS = {"startup_bytes", "pipeline_chunks", "pipeline_chunk_max_bytes", "nvls_chunk_overhead_bytes"}

"""The NCCL-like choice of algorithm and protocol, kept consistent with what the model simulates.

NCCL implements broadcast, reduce, all_gather and reduce_scatter with rings only (a pipelined chain from
the root for broadcast/reduce), so those algorithms are fixed: chain, chain, ring, ring; a send is one
point-to-point flow (``nccl_algorithms``). For all_reduce NCCL chooses between its ring and its tree
(``nccl_tree``) and NVLS (across servers its NVLS tree, ``nvls_tree``), and for every collective between
its LL, LL128 and Simple protocols, by its tuning model (src/graph/tuning.cc, ``ncclTopoTuneModel`` and
``ncclTopoGetAlgoTime``): ``nccl_tuning.nccl_model_time_us`` with NCCL's published constants. NCCL's model
does not know this model's start-up term or the flow network's contention, and on its own it picks what
the simulation finds up to 7x slower (the tree on 512 H100s at 384 MiB, 17.4 ms against the ring's 4.0 ms,
before the tree was NCCL's; ring/LL at 1 MiB on 8 A100s, 27% slower than LL128 once LL pays the start-up).
So the choice (``settle``) is NCCL's order of preference filtered by the simulation: every candidate is
timed as it will be simulated (``run.plan_time_s``), and the fastest runs, except that NCCL's LL128 stays
within ``CHOICE_TOLERANCE`` of Simple, and NCCL's NVLS tree wherever NCCL's model ranks it first (``settle``).
``choose_algorithm`` alone is NCCL's algorithm pick, for reference and for callers without a network.
"""

from __future__ import annotations

from simulator.collectives.nccl_tuning import choose_protocol, nccl_model_time_us
from simulator.collectives.nvls_tree import nvls_tree_fits
from simulator.collectives.patterns import ALGORITHMS

__all__ = ["candidates", "choose_algorithm", "nccl_algorithms", "settle", "DEFAULT_BANDWIDTH_GBPS",
           "CHOICE_TOLERANCE"]

CHOICE_TOLERANCE = 0.10
"""How much slower than the fastest candidate, by the simulated time, NCCL's preferred candidate may be
and still run: LL128's own wire overhead (1/0.92 = 8.7% over Simple, ``protocols``) fits inside, so
where NCCL's model runs LL128 (4-28 MiB on 8 A100s) the model runs it too, as the A100 logs show NCCL
does: measured 16 MiB all_reduce on 8 A100s 235.6 us, Simple in the model 198 us (-16%), LL128 208 us
(-12%)."""

DEFAULT_BANDWIDTH_GBPS = 230.0
"""Group bandwidth assumed when the caller gives none (A100 NVSwitch, topologies.rates)."""

_PROTOCOLS = ("ll", "ll128", "simple")


def choose_algorithm(kind: str, n: int, nbytes: float, params=None, *, n_nodes: int = 1,
                     bandwidth_GBps: float | None = None) -> str:
    """NCCL's own algorithm pick for ``kind`` on ``n`` ranks (``n_nodes`` servers) and ``nbytes``.

    ``params`` (a ``CollectiveParams``) is accepted for symmetry with ``run_collective``; the rule uses
    NCCL's own constants only. ``bandwidth_GBps`` is the group's bottleneck bandwidth.
    """
    if kind not in ALGORITHMS:
        raise ValueError(f"unknown collective kind {kind!r}; valid: {', '.join(ALGORITHMS)}")
    if kind != "all_reduce" or n <= 2:
        return ALGORITHMS[kind][0]
    bw = DEFAULT_BANDWIDTH_GBPS if bandwidth_GBps is None else bandwidth_GBps

    def best(family: str) -> float:
        return min(nccl_model_time_us(kind, family, p, n, nbytes, bw, n_nodes) for p in _PROTOCOLS)

    return "double_binary_tree" if best("tree") < best("ring") else "ring"


def nccl_algorithms(kind: str, n: int, params=None, n_nodes: int = 1, servers=None) -> tuple[str, ...]:
    """The algorithms NCCL considers for ``kind`` on ``n`` ranks over ``n_nodes`` servers, in order.

    NCCL's tuning model runs broadcast and reduce as rings (our chain), all_gather and reduce_scatter
    as rings (PAT needs one GPU per server and is left out), and all_reduce as ring or tree, and as
    NVLS where the GPUs share an NVLink SHARP switch (``params.nvls``): NCCL enables it for two GPUs or
    more with multicast support (src/transport/nvls.cc, ``ncclNvlsInit``), Simple only, and across
    servers only with CollNet, which is off by default (tuning.cc), so on one server (NVLink domain).
    Across servers of such switches NCCL runs its NVLS tree instead (tuning.cc disables it on one
    server): offered where ``servers`` (each rank's server) puts the same number, two or more, of ranks
    on every server (``nvls_tree.nvls_tree_fits``).
    """
    nvls_on = kind == "all_reduce" and n >= 2 and params is not None and params.nvls
    nvls = ("nvls",) if nvls_on and n_nodes == 1 else ()
    if nvls_on and n_nodes > 1 and servers is not None and nvls_tree_fits(servers):
        nvls = ("nvls_tree",)
    if kind != "all_reduce" or n <= 2:
        return (ALGORITHMS[kind][0],) + nvls
    return ("ring", "double_binary_tree") + nvls


def candidates(kind: str, n: int, nbytes: float, params, *, n_nodes: int, bandwidth_GBps: float,
               algorithm: str | None = None, servers=None) -> list[tuple[str, str]]:
    """The (algorithm, protocol) pairs to time for a collective, in NCCL's order of preference.

    ``algorithm`` fixes the algorithm (else ``nccl_algorithms`` over ``servers``); ``params.protocol`` fixes the
    protocol unless it is "auto" (then LL, LL128 and Simple; a send takes NCCL's P2P threshold rule,
    one rank takes Simple). The order is NCCL's tuning-model time at the group's bottleneck
    ``bandwidth_GBps`` (``nccl_model_time_us``; ties keep LL, LL128, Simple and ring before tree).
    Callers time every pair and ``settle``.
    """
    names = (algorithm,) if algorithm is not None else nccl_algorithms(kind, n, params, n_nodes, servers)
    options = []
    for name in names:
        family = _family(name)
        nvls = name in ("nvls", "nvls_tree")
        if nvls and algorithm is None and params.protocol not in ("auto", "simple"):
            continue  # NCCL runs NVLS with Simple only
        if nvls and params.protocol == "auto":
            protocols = ("simple",)
        elif params.protocol != "auto":
            protocols = (params.protocol,)
        elif n == 1:
            protocols = ("simple",)  # nothing moves; any protocol costs the base latency alone
        elif kind == "send":
            protocols = (choose_protocol(kind, family, n, nbytes, bandwidth_GBps, n_nodes),)
        else:
            protocols = _PROTOCOLS
        options.extend((name, protocol) for protocol in protocols)
    if len(options) == 1 or kind == "send":
        return options

    def nccl_us(option: tuple[str, str]) -> float:
        return nccl_model_time_us(kind, _family(option[0]), option[1], n, nbytes, bandwidth_GBps, n_nodes)

    return sorted(options, key=nccl_us)  # stable: ties keep the order above


def _family(algorithm: str) -> str:
    """The family of NCCL's tuning model an algorithm is timed as."""
    return {"double_binary_tree": "tree", "nvls": "nvls", "nvls_tree": "nvls_tree"}.get(algorithm, "ring")


def settle(times: dict) -> tuple[str, str]:
    """The (algorithm, protocol) to run: the first of ``times`` (NCCL's order of preference, from
    ``candidates``) that is the fastest, or LL128 within ``CHOICE_TOLERANCE`` of the same algorithm
    with Simple when that is the fastest.

    LL128 differs from Simple in this model only by its wire overhead (1/0.92), while NCCL's tuning
    model gives it the lower latency per step (tuning.cc hwLat 1.9 vs 3.4 us on NVLink) that makes NCCL
    run it for medium sizes; keeping NCCL's LL128 there costs at most that overhead. Any other
    disagreement (NCCL's LL around 1 MiB, which in this model pays the start-up; its tree where the
    simulation finds the ring faster) goes to the fastest, so the chosen time is never more than 10%
    over the fastest NCCL-enabled candidate, and a sweep over sizes stays monotone wherever every
    candidate's time is.

    The exception: NCCL's NVLS tree runs wherever NCCL's model puts it first, however fast the
    simulated tree or ring. That is what NCCL runs, and what published runs measure: on two H100 and
    two B200 servers (``tests/data/nccl-tests``: nebius-h100, lambda-b200) the measured time jumps where NCCL's model
    switches to the NVLS tree (512 KiB) and from there follows the simulated NVLS tree (within -3..+19%
    on H100 at 1-8 MiB), while the simulated tree, up to 30% faster at 1-16 MiB, was 18-42% too fast.
    """
    if next(iter(times)) == ("nvls_tree", "simple"):
        return "nvls_tree", "simple"  # NCCL's first choice stands (docstring)
    fastest = min(times, key=times.get)
    for option, time_s in times.items():
        if time_s <= times[fastest] * (1 + 1e-12):
            return option
        if (option[1] == "ll128" and fastest == (option[0], "simple")
                and time_s <= times[fastest] * (1 + CHOICE_TOLERANCE)):
            return option
    return fastest

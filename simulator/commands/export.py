"""`tpsim export --chakra DIR`: any schedule as Chakra execution traces, one per rank, for ASTRA-sim.

    tpsim export --chakra DIR <schedule args> --topology NAME|FILE [--placement P] [--algo-override K=A]
                 [--lower-p2p [--chunks C]] [--prefix NAME] [--force]

Writes ``DIR/PREFIX.RANK.et`` for every rank and ``DIR/comm_group.json`` (``simulator.export.files``)
from the schedule's nodes (``simulator.export.nodes``), whose durations are what ``tpsim simulate``
finds on the topology (``simulator.export.times``). ``--lower-p2p`` writes broadcasts and reduces as
send/recv chains ASTRA-sim simulates (``simulator.export.chains``). The summary names the files, the
nodes per rank and tpsim's makespan, and the ASTRA-sim flags that read them.
"""

from __future__ import annotations

import argparse
from collections import Counter

from simulator.commands.schedule_args import add_schedule_arguments, schedule_from_args
from simulator.guard.schedules import before_build
from simulator.commands.sim_args import add_topology_arguments, check_placement, format_time, load_graph, \
    parse_overrides
from simulator.errors import InputError

DEFAULT_PREFIX = "tpsim"
MAX_CHUNKS = 1024
"""Most ``--chunks``: each is one node per hop, and the tags must fit Chakra's 32-bit field."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `export`."""
    p = subparsers.add_parser("export", help="write a schedule as Chakra execution traces (for ASTRA-sim)",
                              description="Write one Chakra execution trace per rank (DIR/PREFIX.RANK.et) and the "
                                          "communicator-group file (DIR/comm_group.json) of a schedule, with the "
                                          "durations tpsim simulates on the topology.")
    out = p.add_argument_group("output")
    out.add_argument("--chakra", required=True, metavar="DIR", help="folder to write (created; must be new or empty)")
    out.add_argument("--prefix", default=DEFAULT_PREFIX, metavar="NAME",
                     help=f"trace file names NAME.RANK.et (default {DEFAULT_PREFIX})")
    out.add_argument("--force", action="store_true",
                     help="replace DIR if it holds anything, and build the schedule even when its estimate is over "
                          "5 minutes of this machine or over its free memory")
    out.add_argument("--lower-p2p", action="store_true",
                     help="write broadcasts and reduces as chains of sends and receives (ASTRA-sim simulates "
                          "those; it only replays a broadcast's time and refuses a reduce)")
    out.add_argument("--chunks", type=int, default=1, metavar="C",
                     help="with --lower-p2p: messages each chain hop cuts its payload into, pipelined (default 1)")
    add_schedule_arguments(p, force=False)  # its own --force covers the guard too
    add_topology_arguments(p)
    p.set_defaults(func=export_command)


def _check_flags(args: argparse.Namespace) -> None:
    """Mistakes in the export's own flags, before any work."""
    from simulator.export.files import check_target

    if not 1 <= args.chunks <= MAX_CHUNKS:
        raise InputError(f"--chunks {args.chunks}: must be 1..{MAX_CHUNKS}")
    if args.chunks != 1 and not args.lower_p2p:
        raise InputError(f"--chunks {args.chunks} cuts the chains --lower-p2p writes; add --lower-p2p or drop --chunks")
    if not args.prefix or any(c in args.prefix for c in "/\\") or args.prefix.startswith("."):
        raise InputError(f"--prefix {args.prefix!r}: a plain file name part, e.g. {DEFAULT_PREFIX}")
    check_target(args.chakra, args.force)


def export_command(args: argparse.Namespace) -> int:
    from simulator.export.files import chakra_modules, write_traces
    from simulator.export.nodes import build_graphs, group_ids
    from simulator.export.times import simulated_seconds
    from simulator.ir.checks import check_static, spread_ranks

    _check_flags(args)
    chakra_modules()  # a missing package is said before the schedule is simulated
    overrides = parse_overrides(args.algo_override)
    G = load_graph(args.topology, args.calibration)
    check_placement(args.placement, G, None)
    schedule = schedule_from_args(args, before_build("tpsim export", args.force))
    check_placement(args.placement, G, schedule.world_size)
    if args.schedule is None:  # a file was validated as it loaded
        check_static(schedule, spread_ranks(schedule.world_size))
    seconds, makespan = simulated_seconds(schedule, G, args.placement, overrides)
    graphs = build_graphs(schedule, seconds, lower_p2p=args.lower_p2p, chunks=args.chunks)
    ids = group_ids(schedule)
    paths = write_traces(graphs, {ids[name]: ranks for name, ranks in schedule.groups.items()}, args.chakra,
                         args.prefix, args.force)
    for line in summary_lines(args, graphs, paths, len(ids), makespan, G.graph.get("name")):
        print(line)
    return 0


def summary_lines(args, graphs, paths, n_groups: int, makespan: float, topology: str | None) -> list[str]:
    """What was written, the node counts per rank by type, tpsim's makespan and ASTRA-sim's flags."""
    from simulator.export.files import COMM_GROUP_FILE

    counts = [Counter(node.type for node in nodes) for nodes in graphs]

    def spread(values: list[int]) -> str:
        return f"{min(values)}" if min(values) == max(values) else f"{min(values)}..{max(values)}"

    kinds = ", ".join(f"{label} {spread([c[kind] for c in counts])}"
                      for label, kind in (("compute", "COMP_NODE"), ("collective", "COMM_COLL_NODE"),
                                          ("send", "COMM_SEND_NODE"), ("recv", "COMM_RECV_NODE")))
    folder = str(args.chakra).rstrip("/")
    return [f"wrote {len(paths)} Chakra traces {folder}/{args.prefix}.0.et .. {paths[-1].name} and "
            f"{folder}/{COMM_GROUP_FILE} ({n_groups} group{'' if n_groups == 1 else 's'})",
            f"  nodes / rank    {spread([len(nodes) for nodes in graphs])} ({kinds})"
            + ("; broadcasts and reduces as send/recv chains" if args.lower_p2p else ""),
            f"  tpsim makespan  {format_time(makespan)} on {topology} (the durations the nodes carry)",
            f"  ASTRA-sim       --workload-configuration={folder}/{args.prefix} "
            f"--comm-group-configuration={folder}/{COMM_GROUP_FILE}"]

"""`tpsim collective`: simulate one collective (or an nccl-tests-style size sweep) on a topology.

``--group-size N`` ranks (``--ranks N`` is its deprecated old name) go on the topology's first N GPUs,
or where ``--placement`` puts them. Times come from the flow network (``simulator.network.flow_network``)
running the collective's flows (``simulator.collectives``);
``analytic_time_s`` is the closed form (``simulator.collectives.closed_form``) for the same algorithm and protocol.
algbw = S / t and busbw = algbw x factor follow nccl-tests (factor 2(n-1)/n for all_reduce,
(n-1)/n for all_gather and reduce_scatter, 1 for broadcast and reduce); S is the buffer size, the
output size for all_gather, the input size for reduce_scatter.

``--compare LOG`` predicts what nccl-tests prints: the simulated time, or the host's enqueue floor where
the log's thread drove several GPUs and that is longer (``simulator.calibrate.enqueue_floor``); its JSON
rows keep the simulated time as ``simulated_time_s`` and the floor as ``host_floor_s``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys

import simpy

from simulator.calibrate.device_check import device_note
from simulator.calibrate.enqueue_floor import ENQUEUE_S_PER_GPU, enqueue_floor_s, measured_time_s
from simulator.calibrate.nccl_tests import parse_nccl_tests
from simulator.collectives import CollectiveParams, run_collective
from simulator.collectives.closed_form import algbw_GBps, busbw_GBps, predict_collective_s
from simulator.commands.defaults import topology_gpu_count
from simulator.errors import InputError
from simulator.collectives.nvls_support import check_nvls  # noqa: I001
from simulator.limits import check_ranks
from simulator.network.flow_network import FlowNetwork
from simulator.sizes import format_size, parse_size
from simulator.guard import add_force_argument, guard, watch_topologies
from simulator.guard.costs import collective_estimate
from topologies import gpu_nodes, load_topology, resolve_placement

OPS = ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter")
SWEEP_SIZES = tuple(8 << k for k in range(28))  # 8 B .. 1 GiB, factor 2, as nccl-tests -b 8 -e 1G -f 2


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `collective`."""
    p = subparsers.add_parser(
        "collective", help="simulate one collective on a topology (time, algbw, busbw)",
        description="Simulate one NCCL-style collective on a topology with the flow-level network model.")
    p.add_argument("--op", choices=OPS, help="the collective (with --compare: the log's)")
    p.add_argument("--group-size", type=int, metavar="N", help="ranks in the group (default: every GPU of --topology; "
                   "with --compare: the log's; --ranks N is its deprecated name)")
    # The old name, which `tpsim schedule --ranks` (a range of ranks to show) made ambiguous.
    p.add_argument("--ranks", type=int, dest="old_ranks", help=argparse.SUPPRESS)
    p.add_argument("--bytes", metavar="SIZE", help="nccl-tests S: 1048576, 64KB (10^3), 1MiB (2^20), 1GiB ...")
    p.add_argument("--topology", required=True, metavar="T", help="preset (dgx-a100, dgx-a100:16, ...), cluster "
                   "(server=dgx-h100,servers=2,...) or file")
    p.add_argument("--calibration", metavar="FILE",
                   help="a calibration profile (tpsim calibrate --profile, or the topology file it "
                        "wrote) applied to the topology: fitted link rates and latencies carry to any "
                        "topology of the same node kind")
    p.add_argument("--algo", metavar="A", help="algorithm (default: NCCL-like choice): ring, chain, "
                   "binomial_tree, double_binary_tree (NCCL's tree), direct, nvls (NVLink SHARP), "
                   "nvls_tree (NVLS in servers, a tree across)")
    p.add_argument("--protocol", choices=("auto", "simple", "ll128", "ll"), help="NCCL protocol (default auto)")
    p.add_argument("--root", type=int, default=None, help="root rank for broadcast/reduce (default 0)")
    p.add_argument("--placement", metavar="P",
                   help="rank -> GPU: linear (default), depth-major, column-major, or a file of GPU indices")
    p.add_argument("--sweep", action="store_true", help="sizes 8 B .. 1 GiB (factor 2), an nccl-tests-style table")
    p.add_argument("--compare", metavar="LOG", help="predict every size of an nccl-tests log and print the "
                   "error against its out-of-place time (with the host's enqueue floor of the log's nGpus)")
    p.add_argument("--json", action="store_true", help="print JSON (an object, or a list with --sweep/--compare)")
    add_force_argument(p)
    p.set_defaults(func=collective_command)


def _group_size(args) -> str | None:
    """Read the deprecated ``--ranks N`` into ``args.group_size``; the note to print (one line), or None.

    The command prints the note once the input has passed its checks, so that bad input still gets one
    line on stderr, the error.
    """
    if args.old_ranks is None:
        return None
    if args.group_size is not None:
        raise InputError(f"--ranks {args.old_ranks} is the deprecated name of --group-size, given too "
                         f"({args.group_size}); give --group-size N only")
    args.group_size = args.old_ranks
    return f"tpsim collective: note: --ranks is deprecated; use --group-size {args.old_ranks}"


def _members(args, G) -> list:
    gpus = gpu_nodes(G)
    if args.group_size < 1:
        raise InputError(f"--group-size {args.group_size}: a group has at least 1 rank")
    check_ranks(args.group_size, f"--group-size {args.group_size}")
    if args.placement is None:
        if args.group_size > len(gpus):
            raise InputError(f"--group-size {args.group_size}: topology {args.topology} has only {len(gpus)} GPUs")
        return gpus[: args.group_size]
    return resolve_placement(args.placement, G, args.group_size, None)


def collective_command(args: argparse.Namespace) -> int:
    """Run `tpsim collective`; print a summary, a table (--sweep) or JSON."""
    note = _group_size(args)
    measured = None
    if args.compare:
        log = parse_nccl_tests(args.compare)
        if args.op is None and log.op is None:
            raise InputError(f"{args.compare}: cannot tell which test this is (no command line or 'Collective test "
                             f"starting' line naming it, no name in the file name, and its columns fit none of "
                             f"{', '.join(OPS)}); give --op")
        args.op = args.op or log.op
        args.group_size = args.group_size or log.n_ranks
        if log.op and args.op != log.op:
            raise InputError(f"--op {args.op}: {args.compare} is a log of {log.op} (read from its {log.op_source})")
        if args.group_size is None:
            raise InputError(f"{args.compare}: cannot tell how many ranks ran it (no '# Rank' lines, and its "
                             f"busbw / algbw do not pin the count); give --group-size")
        measured = {row.size_bytes: row.time_us * 1e-6 for row in log.rows}
    if args.op is None:
        raise InputError("give --op (or --compare LOG, which names it and the group size)")
    if sum((args.sweep, args.bytes is not None, measured is not None)) != 1:
        raise InputError("give exactly one of --bytes SIZE, --sweep or --compare LOG")
    sizes = SWEEP_SIZES if args.sweep else tuple(measured) if measured else (parse_size(args.bytes),)
    with watch_topologies("tpsim collective", args.force):
        G = load_topology(args.topology, args.calibration)
    if args.group_size is None:
        args.group_size = topology_gpu_count(G)  # every GPU, as nccl-tests on a whole machine
    members = _members(args, G)
    guard(collective_estimate(len(members), topology_gpu_count(G), len(sizes)), "tpsim collective", args.force)
    params = CollectiveParams.from_graph(G)
    check_nvls(args.algo, args.op, params, G.graph.get("name", args.topology))
    if args.protocol:
        params = dataclasses.replace(params, protocol=args.protocol)
    root = args.root if args.op in ("broadcast", "reduce") else None
    env = simpy.Environment()
    net = FlowNetwork(env, G)
    results = []
    for size in sizes:
        start = env.now
        proc = run_collective(env, net, args.op, members, size, root=root, algorithm=args.algo, params=params)
        env.run(until=proc)
        t = env.now - start
        plan = proc.value
        n = len(members)
        results.append({
            "op": args.op, "ranks": n, "bytes": size, "topology": G.graph.get("name", args.topology),
            "algorithm": plan.algorithm, "protocol": plan.protocol, "root": root,
            "time_s": t, "algbw_GBps": algbw_GBps(size, t), "busbw_GBps": busbw_GBps(args.op, n, size, t),
            "analytic_time_s": predict_collective_s(net, args.op, members, size, root, args.algo, params),
        })
    if measured:
        note = "\n".join(filter(None, (note, device_note(os.path.basename(args.compare), log.device, G))))
    if note:
        sys.stderr.write(note + "\n")
    if measured:
        floor = enqueue_floor_s(log.gpus_per_thread)
        for r in results:
            # What nccl-tests would print: the GPUs' time, or the host's enqueue on its nGpus if longer.
            r["simulated_time_s"], r["host_floor_s"] = r["time_s"], floor
            r["time_s"] = measured_time_s(r["time_s"], log.gpus_per_thread)
            r["measured_time_s"] = measured[r["bytes"]]
            r["error"] = r["time_s"] / r["measured_time_s"] - 1
    if args.json:
        print(json.dumps(results if args.sweep or measured else results[0], indent=2))
    elif measured:
        print(_compare_table(results, args.compare, log.op_source if args.op == log.op else ""))
    elif args.sweep:
        print(_table(results, members))
    else:
        r = results[0]
        print(f"{r['op']} of {format_size(r['bytes'])} on {r['ranks']} ranks of {r['topology']} "
              f"({members[0]}..{members[-1]}): {r['algorithm']}/{r['protocol']}")
        print(f"time {r['time_s'] * 1e6:.2f} us  algbw {r['algbw_GBps']:.2f} GB/s  busbw {r['busbw_GBps']:.2f} GB/s"
              f"  (closed form {r['analytic_time_s'] * 1e6:.2f} us)")
    return 0


def _table(results: list[dict], members: list) -> str:
    """nccl-tests-style: size, count (float elements), type, redop, root, time, algbw, busbw + choice."""
    first = results[0]
    lines = [f"# tpsim collective: {first['op']} on {first['ranks']} ranks of {first['topology']}, "
             f"simulated (flow-level network)",
             f"#{'size':>12} {'count':>12} {'type':>6} {'redop':>6} {'root':>5} {'time':>9} {'algbw':>7} "
             f"{'busbw':>7}  algorithm/protocol",
             f"#{'(B)':>12} {'(elements)':>12} {'':>6} {'':>6} {'':>5} {'(us)':>9} {'(GB/s)':>7} {'(GB/s)':>7}"]
    redop = "sum" if first["op"] in ("all_reduce", "reduce", "reduce_scatter") else "none"
    for r in results:
        root = -1 if r["root"] is None else r["root"]
        lines.append(f" {r['bytes']:>12} {r['bytes'] // 4:>12} {'float':>6} {redop:>6} {root:>5} "
                     f"{r['time_s'] * 1e6:>9.2f} {r['algbw_GBps']:>7.2f} {r['busbw_GBps']:>7.2f}  "
                     f"{r['algorithm']}/{r['protocol']}")
    return "\n".join(lines)


def _compare_table(results: list[dict], log_path: str, op_source: str = "") -> str:
    """Measured (out-of-place) vs simulated time per size; where the test was read off the table's own
    columns (nothing in the log named it), a line says how."""
    first = results[0]
    floor_us = first["host_floor_s"] * 1e6
    read_off = [f"# the test, read off the table's {op_source}"] if op_source.startswith("columns") else []
    lines = [f"# {first['op']} on {first['ranks']} ranks of {first['topology']} vs {os.path.basename(log_path)}",
             *read_off,
             f"# predicted: the simulated time, or where it is shorter the host's enqueue floor of {floor_us:.1f} us "
             f"(the log's nGpus x {ENQUEUE_S_PER_GPU * 1e6:.1f} us, marked *)",
             f"#{'size':>12} {'measured':>10} {'predicted':>10} {'error':>7}  algorithm/protocol",
             f"#{'(B)':>12} {'(us)':>10} {'(us)':>10} {'':>7}"]
    for r in results:
        mark = "*" if r["simulated_time_s"] < r["host_floor_s"] else " "
        lines.append(f" {r['bytes']:>12} {r['measured_time_s'] * 1e6:>10.2f} {r['time_s'] * 1e6:>9.2f}{mark} "
                     f"{r['error'] * 100:>+6.1f}%  {r['algorithm']}/{r['protocol']}")
    return "\n".join(lines)

"""`tpsim calibrate`: fit a topology's links, collective model and compute efficiency to measurements.

Inputs: a `tpsim bench` record (``--from-bench``) or nccl-tests logs (``--from-nccl-tests``, any of
all_reduce_perf, all_gather_perf, reduce_scatter_perf, broadcast_perf, reduce_perf), or measured training
steps (``--from-steps``, which fits ``gemm_efficiency`` alone: ``simulator.commands.calibrate_steps``). The samples ran
on the base topology's first N GPUs, as ``tpsim collective`` places them. Output: a topology file
(``-o``, .yaml/.yml/.json, written atomically) that ``--topology`` loads anywhere in tpsim, and the
fit error per size bucket, on the fitted buckets and on held-out ones (``simulator.calibrate``).

The fit also yields a calibration profile (``topologies.profile``): the fitted link-class and protocol
parameters, embedded in the output file and written alone with ``--profile``, which ``--calibration``
applies to any topology of the same node kind (``--topology dgx-a100:16 --calibration OUT``). Logs of
more ranks than a server preset given without its size holds fit that preset at the servers they need.
The report names the parameters the samples could not determine (inter-server links from a
single-server log), which keep the preset's values.

Held out by default: every other size of each (kind, ranks) series among the fitted sizes
(``--holdout-sizes alternate``), so the printed held-out error is out of sample. Fit floor by default:
1 MiB for nccl-tests logs (below it NCCL's small-message regime, one channel and LL, and nccl-tests'
kernel launches dominate, which the collective model does not contain), none for bench records.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os

from simulator.calibrate import holdout as split
from simulator.calibrate.device_check import device_note
from simulator.calibrate.evaluator import ALL_REDUCE_ALGORITHMS
from simulator.calibrate.fit import calibrate
from simulator.calibrate.from_bench import bench_form, load_bench, samples_from_bench
from simulator.calibrate.from_nccl_tests import read_nccl_logs, samples_from_logs
from simulator.errors import InputError
from simulator.progress import Progress
from simulator.sizes import parse_size
from simulator.guard import add_force_argument, guard
from simulator.guard.costs import calibrate_estimate
from topologies import TopologyError, gpu_nodes, load_topology
from topologies.loader import FILE_SUFFIXES
from topologies.profile import node_kind, preset_family

log = logging.getLogger(__name__)

NCCL_TESTS_FIT_MIN = "1MiB"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `calibrate`."""
    p = subparsers.add_parser(
        "calibrate", help="fit a topology to bench or nccl-tests measurements; write the calibrated topology",
        description="Fit link bandwidth and latency per link kind, the collective model's latency and start-up "
                    "regime, and gemm efficiency to measurements; write a topology file and print the fit error "
                    "per size bucket, fitted and held out.")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--from-bench", metavar="BENCH", help="a tpsim bench JSON record")
    source.add_argument("--from-nccl-tests", metavar="LOG", nargs="+", help="nccl-tests logs (one or more)")
    source.add_argument("--from-steps", metavar="STEPS", help="a YAML or JSON file of measured training steps, each "
                        "with its tpsim predict line: fits gemm_efficiency alone, each entry held out in turn "
                        "(docs/calibrate.md); a fit at a bound of [0.05, 1] is written only with --force")
    p.add_argument("--topology", required=True, metavar="BASE", help="base topology: preset or file")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="calibrated topology file (.yaml, .json); "
                   "it embeds the profile: --calibration OUT carries it to any topology of the same node kind")
    p.add_argument("--profile", metavar="FILE", help="also write the calibration profile alone (.yaml, .json)")
    p.add_argument("--calibration", metavar="FILE", help="apply this profile to the base topology before fitting")
    p.add_argument("--holdout-sizes", metavar="LIST", help="sizes to hold out, e.g. 4MiB,64MiB, or 'alternate' "
                   "(every other fitted size of each series; the default when no --holdout-* is given)")
    p.add_argument("--holdout-ranks", metavar="LIST", help="rank counts to hold out, e.g. 4")
    p.add_argument("--no-holdout", action="store_true", help="fit every bucket (no held-out error)")
    p.add_argument("--fit-min-bytes", metavar="SIZE", help=f"do not fit sizes below SIZE (default "
                   f"{NCCL_TESTS_FIT_MIN} for nccl-tests logs, 0 for bench records)")
    p.add_argument("--bench-form", choices=("auto", "lock-step", "interleaved"), default="auto",
                   help="which rows of a bench record to fit: lock-step (back to back, nccl-tests) or "
                        "interleaved (after a gemm on every rank, as in a schedule); default auto: "
                        "interleaved when the record has them")
    p.add_argument("--protocol", choices=("auto", "simple", "ll128", "ll"),
                   help="set collective_protocol before fitting (default: the base topology's)")
    p.add_argument("--algo", choices=ALL_REDUCE_ALGORITHMS,
                   help="fit every all_reduce as this algorithm, the one the measured NCCL ran (NCCL_ALGO=Ring or "
                        "Tree; default: the NCCL-like choice, the fastest simulated, and where an all_reduce crosses "
                        "servers also the ring, keeping the lower rms: on two servers the model's tree sends half "
                        "the ring's bytes through each NIC, so a log NCCL ran as rings, fitted as the tree, puts "
                        "its NICs at half their rate)")
    p.add_argument("--no-kind-factors", action="store_true",
                   help="one set of link rates for every collective kind (default: a bytes factor per kind where "
                        "the samples hold several)")
    p.add_argument("--json", action="store_true", help="print parameters, rows and notes as JSON")
    add_force_argument(p)
    p.set_defaults(func=calibrate_command)


def _list(text: str, parse, option: str) -> list:
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise InputError(f"{option} {text!r}: give a comma-separated list")
    return [parse(item) for item in items]


def _rank_count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise InputError(f"--holdout-ranks: {text!r} is not a rank count (an integer >= 1)")
    return int(text)


def _holdout(args, samples, fit_min: int):
    if args.no_holdout:
        if args.holdout_sizes or args.holdout_ranks:
            raise InputError("--no-holdout contradicts --holdout-sizes/--holdout-ranks; give one or the other")
        return split.nothing
    parts = []
    sizes = args.holdout_sizes if args.holdout_sizes or args.holdout_ranks else "alternate"
    if sizes == "alternate":
        parts.append(split.alternate_sizes(s for s in samples if s.nbytes >= fit_min))
    elif sizes:
        parts.append(split.sizes_in(split.present(_list(sizes, parse_size, "--holdout-sizes"), (
            s.nbytes for s in samples if s.nbytes >= fit_min), "--holdout-sizes", "size")))
    if args.holdout_ranks:
        parts.append(split.ranks_in(split.present(_list(args.holdout_ranks, _rank_count, "--holdout-ranks"),
                                                  (s.ranks for s in samples), "--holdout-ranks", "rank count")))
    return split.holdout_union(*parts)


def _samples(args):
    """Collective and gemm samples, the note on a bench record's form (or None), and the nccl-tests logs
    read (name, parsed log), for ``_device_notes``."""
    if args.from_nccl_tests:
        logs = read_nccl_logs(args.from_nccl_tests)
        return samples_from_logs(logs), [], None, logs
    form = bench_form(load_bench(args.from_bench), args.bench_form, args.from_bench)
    collectives, gemms = samples_from_bench(args.from_bench, form)
    note = f"note: fitted the {form} rows of {args.from_bench} (--bench-form {args.bench_form})."
    return collectives, gemms, note, []


def _device_notes(logs, base) -> list[str]:
    """A note for each nccl-tests log that ran on another GPU kind than ``base`` models (``device_check``)."""
    return [note for name, log in logs if (note := device_note(name, log.device, base))]


def check_output(path: str) -> None:
    """InputError unless ``path`` is a .yaml/.yml/.json file in a folder that exists."""
    if not path.lower().endswith((".yaml", ".yml", ".json")):
        raise InputError(f"-o {path}: the calibrated topology is a .yaml, .yml or .json file "
                         f"(tpsim loads {', '.join(FILE_SUFFIXES)})")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise InputError(f"-o {path}: folder {folder} does not exist")


def _base(args, collectives):
    """The base topology; a server preset given smaller than the logs' rank count is built at the servers
    they need (a log of 16 ranks on ``dgx-a100`` fits ``dgx-a100:2``). The note to print, or None."""
    base = load_topology(args.topology, args.calibration)
    need = max((s.ranks for s in collectives), default=0)
    family = preset_family(base)
    gpus = len(gpu_nodes(base))
    if family is None or need <= gpus or ":" in args.topology or os.path.exists(args.topology):
        return base, None  # a size given (dgx-a100:2) is the user's: the rank check names a mismatch
    per_server = int(node_kind(base).partition("x")[0])
    try:
        grown = load_topology(f"{family}:{-(-need // per_server)}", args.calibration)
    except TopologyError:  # not a server preset (loopback, torus): the rank check names the problem
        return base, None
    if node_kind(grown) != node_kind(base) or len(gpu_nodes(grown)) < need:
        return base, None
    name = grown.graph["name"].removesuffix("+calibration")
    return grown, f"note: the logs hold {need} ranks; fitted on {name} ({args.topology} has {gpus} GPUs)."


def calibrate_command(args: argparse.Namespace) -> int:
    """Run `tpsim calibrate`: load, fit, write atomically, print the report."""
    if args.from_steps:
        from simulator.commands.calibrate_steps import steps_command

        return steps_command(args)
    check_output(args.output)
    if args.profile:
        check_output(args.profile)
    collectives, gemms, form_note, logs = _samples(args)
    base, grown_note = _base(args, collectives)
    default_floor = NCCL_TESTS_FIT_MIN if args.from_nccl_tests else "0"
    fit_min = parse_size(args.fit_min_bytes if args.fit_min_bytes is not None else default_floor)
    holdout = _holdout(args, collectives, fit_min)
    guard(calibrate_estimate([s.ranks for s in collectives], len(gemms)), "tpsim calibrate", args.force)
    with Progress("tpsim calibrate", what=f"fitting {len(collectives):,} collective and {len(gemms):,} gemm samples"):
        result = calibrate(base, collectives, gemms, holdout=holdout, fit_min_bytes=fit_min,
                           protocol=args.protocol, kind_factors=not args.no_kind_factors,
                           all_reduce_algorithm=args.algo)
    result.write(args.output)
    log.info("wrote %s", args.output)
    if args.profile:
        result.write_profile(args.profile)
    if args.json:
        data = _as_json(result, args.output)
        if form_note:
            data["bench_form"] = form_note.split()[3]
        print(json.dumps(data, indent=1))
        return 0
    print("\n".join(result.report_lines()))
    for note in (form_note, grown_note, *_device_notes(logs, base)):
        if note:
            print(note)
    print(f"wrote {args.output} ({result.graph.graph['name']}); simulate with --topology {args.output}")
    profile = args.profile or args.output
    family = result.profile.preset if result.profile else None
    if family:
        print(f"carry it to a larger cluster of the same node kind: --topology {family}:N --calibration {profile}"
              + ("" if args.profile else f" (or --topology {args.output}:N)"))
    return 0


def _as_json(result, path: str) -> dict:
    return {"output": path, "topology": result.graph.graph["name"], "parameters": result.parameters,
            "base_parameters": result.base_parameters, "fit_min_bytes": result.fit_min_bytes,
            "fit_rows": [dataclasses.asdict(r) for r in result.fit_rows],
            "holdout_rows": [dataclasses.asdict(r) for r in result.holdout_rows],
            "below_rows": [dataclasses.asdict(r) for r in result.below_rows],
            "gemm_rows": [dataclasses.asdict(r) for r in result.gemm_rows], "notes": list(result.notes),
            "undetermined": list(result.profile.undetermined) if result.profile else []}

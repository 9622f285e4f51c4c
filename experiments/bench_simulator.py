"""Benchmark of the whole simulator on the largest grids tpsim plans: `tpsim simulate` end to end, and per phase.

Not a test (run it: ``python experiments/bench_simulator.py``). Cases:

- ``1024``: summa25d ``mlp`` forward + backward on [8, 8, 16] (1,024 GPUs) over ``dgx-h100:128``;
- ``4096``: the same on [16, 16, 16] (4,096 GPUs) over ``dgx-h100:512``.

Workload (both cases): a GPT-3-sized MLP, hidden h = 12288 (FC1 h -> 4h, FC2 4h -> h), M = 131072
tokens (batch 64 x sequence 2048; divisible by d*q = 128 and 256), bfloat16.

Each case runs twice, each time in a fresh process:

- end to end: the command a user types, ``tpsim simulate --algo summa25d --grid ... --topology ...``
  (``python -m simulator.cli``), timed from start to exit: wall seconds, CPU seconds (user + system:
  what one core spends, whatever else the machine runs) and peak memory. The targets hold this figure.
- per phase: the same steps in one process (topology load, schedule build, validation, compile, then
  the simpy engine + flow network), timed one by one under one pause of the cyclic collector as the
  command has it, plus the counts: ops, instances, events, flows, and ``records`` (what the network
  kept for them: identical flows of one collective phase run as one weighted record,
  ``simulator.network.flow_groups``). For reference the analytic bound is timed too (``--analytic`` of the
  command; not part of the end-to-end figure). ``--profile`` prints the top of a cProfile of the
  simulation phase.

Targets on one core of the development machine: under 10 s (1,024) and 60 s (4,096) end to end.
Fixed inputs, no randomness: the figures vary only with the machine it runs on and what else runs there.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import resource
import subprocess
import sys
import time

import simpy

from simulator.algorithms.registry import build_schedule
from simulator.ir.validate import validate_schedule
from simulator.progress import Progress
from simulator.timing.critical_path import analyze
from simulator.timing.engine import Engine
from simulator.timing.simulation import NetworkBackend, paused_gc, plan_on_graph
from simulator.workloads.workload import Workload
from topologies import load_topology

CASES = {1024: ((8, 8, 16), "dgx-h100:128", 10.0), 4096: ((16, 16, 16), "dgx-h100:512", 60.0)}
TOKENS, HIDDEN = 131072, 12288


def command(gpus: int) -> list[str]:
    """The `tpsim simulate` command line of a case."""
    grid, topology, _ = CASES[gpus]
    return [sys.executable, "-m", "simulator.cli", "simulate", "--algo", "summa25d",
            "--grid", ",".join(map(str, grid)), "--workload", "mlp", "--m", str(TOKENS), "--hidden", str(HIDDEN),
            "--dtype", "bfloat16", "--topology", topology]


def end_to_end(gpus: int) -> dict:
    """Run the case's `tpsim simulate` in a child process; its wall and CPU seconds and peak memory.

    Call it from a process with no other children: ``RUSAGE_CHILDREN`` then describes this one alone.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    subprocess.run(command(gpus), stdout=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, "peak_rss_MB": after.ru_maxrss / 1024}


def run_case(gpus: int, profile: bool = False, analytic: bool = True) -> dict:
    """Run one case's phases in this process; return its figures."""
    grid, topology, target_s = CASES[gpus]
    wall: dict[str, float] = {}
    cpu: dict[str, float] = {}

    def timed(name, fn, *args, **kwargs):
        began, began_cpu = time.perf_counter(), time.process_time()
        value = fn(*args, **kwargs)
        wall[name] = time.perf_counter() - began
        cpu[name] = time.process_time() - began_cpu
        return value

    with paused_gc():  # as `tpsim simulate` runs (simulator.commands.simulate)
        G = timed("topology", load_topology, topology)
        schedule = timed("build", build_schedule, "summa25d", Workload.mlp(TOKENS, HIDDEN), "both", "bfloat16",
                         grid=grid)
        timed("validate", validate_schedule, schedule)
        plan = timed("compile", plan_on_graph, schedule, G)
        env = simpy.Environment()
        backend = NetworkBackend(env, G)
        engine = Engine(plan, backend, env)
        if profile:
            profiler = cProfile.Profile()
            profiler.enable()
        timed("simulate", engine.run)
        if profile:
            profiler.disable()
            pstats.Stats(profiler, stream=sys.stderr).sort_stats("tottime").print_stats(25)
        makespan = max(engine.finish_s)
        figures = {"gpus": gpus, "grid": list(grid), "topology": topology,
                   "workload": f"mlp m={TOKENS} hidden={HIDDEN}",
                   "ops": sum(len(p) for p in schedule.programs), "instances": len(plan.instances),
                   "events": engine.events_scheduled(), "flows": backend.net.flow_count,
                   "flow_records": backend.net.flow_records,
                   "rate_changes": backend.net.rate_changes, "fills": backend.net.fills, "makespan_s": makespan,
                   "target_s": target_s}
        if analytic:
            bound = timed("analytic", analyze, schedule, G, plan=plan, timeline=False, router=backend.net.router)
            figures["analytic_makespan_s"] = bound.makespan_s
    figures["wall_s"] = wall
    figures["cpu_s"] = cpu
    figures["peak_rss_MB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", type=int, choices=sorted(CASES), action="append",
                        help="run only this case (repeatable); default: all, each in its own processes")
    parser.add_argument("--profile", action="store_true", help="cProfile the simulation phase (stderr)")
    parser.add_argument("--no-analytic", action="store_true", help="skip the analytic bound")
    parser.add_argument("--inline", action="store_true",
                        help="run the phases in this process (for --case) and print JSON, no end-to-end run")
    parser.add_argument("--end-to-end", action="store_true",
                        help="time the `tpsim simulate` command only (for --case); print JSON")
    args = parser.parse_args(argv)
    cases = args.case or sorted(CASES)
    if args.inline:
        for gpus in cases:
            print(json.dumps(run_case(gpus, args.profile, not args.no_analytic)))
        return 0
    if args.end_to_end:
        for gpus in cases:
            print(json.dumps(end_to_end(gpus)))
        return 0
    rows = []
    modes = ("--end-to-end", "--inline")
    with Progress("experiments.bench_simulator", total=len(cases) * len(modes), unit="run") as progress:
        for gpus in cases:
            # Each run in a process of its own: the end-to-end one so that its parent has no other child
            # (whose peak memory RUSAGE_CHILDREN would report), the phases so that their peak is their own.
            runs = {}
            for mode in modes:
                progress.phase(f"{gpus:,} GPUs {mode[2:]}")
                extra = (["--profile"] * args.profile + ["--no-analytic"] * args.no_analytic
                         if mode == "--inline" else [])
                done = subprocess.run([sys.executable, __file__, mode, "--case", str(gpus)] + extra,
                                      stdout=subprocess.PIPE, text=True, check=True)
                runs[mode] = json.loads(done.stdout.strip().splitlines()[-1])
                progress.update()
            row = runs["--inline"]
            row["end_to_end"] = runs["--end-to-end"]
            rows.append(row)
    print(f"summa25d mlp fwd+bwd, M={TOKENS} tokens, hidden={HIDDEN}, bfloat16; tpsim simulate end to end "
          f"(wall / CPU s, peak MB), then its phases (wall s)")
    print(f"{'GPUs':>5} {'grid':>10} {'topology':>13} {'e2e wall':>8} {'e2e CPU':>8} {'target':>6} {'peak MB':>7}"
          f" {'ops':>9} {'instances':>9} {'events':>9} {'flows':>9} {'records':>9} {'build':>7} {'valid.':>7}"
          f" {'compile':>7} {'simul.':>7} {'analyt.':>7} {'makespan':>9} {'bound':>9}")
    for r in rows:
        w, e = r["wall_s"], r["end_to_end"]
        print(f"{r['gpus']:>5} {'x'.join(map(str, r['grid'])):>10} {r['topology']:>13} {e['wall_s']:>7.2f}s "
              f"{e['cpu_s']:>7.2f}s {r['target_s']:>5.0f}s {e['peak_rss_MB']:>7.0f} {r['ops']:>9,} "
              f"{r['instances']:>9,} {r['events']:>9,} {r['flows']:>9,} {r['flow_records']:>9,} "
              f"{w['build']:>6.2f}s {w['validate']:>6.2f}s {w['compile']:>6.2f}s {w['simulate']:>6.2f}s "
              f"{w.get('analytic', float('nan')):>6.2f}s {r['makespan_s'] * 1e3:>7.3f}ms"
              f" {r.get('analytic_makespan_s', float('nan')) * 1e3:>7.3f}ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark of the whole simulator on the largest grids tpsim plans: wall time per phase, events, flows, memory.

Not a test (run it: ``python experiments/bench_simulator.py``). Cases, each in a fresh process so that
peak memory is its own:

- ``1024``: summa25d ``mlp`` forward + backward on [8, 8, 16] (1,024 GPUs) over ``dgx-h100:128``;
- ``4096``: the same on [16, 16, 16] (4,096 GPUs) over ``dgx-h100:512``.

Workload (both cases): a GPT-3-sized MLP, hidden h = 12288 (FC1 h -> 4h, FC2 4h -> h), M = 131072
tokens (batch 64 x sequence 2048; divisible by d*q = 128 and 256), bfloat16. Phases timed separately:
topology load, schedule build, validation (``simulator.validate``), compile (placement, compute model,
instance matching), simulation (simpy engine + flow network), and for reference the analytic bound.
``flows`` counts transfers, ``records`` what the network kept for them (identical flows of one
collective phase run as one weighted record, ``simulator.flow_groups``).
Targets on one core of the development machine: under 10 s (1,024) and 60 s (4,096) of simulation.
``--profile`` prints the top of a cProfile of the simulation phase.

Fixed inputs, no randomness: the figures vary only with the machine it runs on.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

CASES = {1024: ((8, 8, 16), "dgx-h100:128", 10.0), 4096: ((16, 16, 16), "dgx-h100:512", 60.0)}
TOKENS, HIDDEN = 131072, 12288


def run_case(gpus: int, profile: bool = False, analytic: bool = True) -> dict:
    """Run one case in this process; return its figures."""
    import simpy

    from simulator.cost_schedule import analyze
    from simulator.engine import Engine
    from simulator.generators import build_schedule
    from simulator.simulation import NetworkBackend, paused_gc, plan_on_graph
    from simulator.validate import validate_schedule
    from simulator.workloads import Workload
    from topologies import load_topology

    grid, topology, target_s = CASES[gpus]
    wall: dict[str, float] = {}

    def timed(name, fn, *args, **kwargs):
        began = time.perf_counter()
        value = fn(*args, **kwargs)
        wall[name] = time.perf_counter() - began
        return value

    G = timed("topology", load_topology, topology)
    schedule = timed("build", build_schedule, "summa25d", Workload.mlp(TOKENS, HIDDEN), "both", "bfloat16", grid=grid)
    timed("validate", validate_schedule, schedule)
    with paused_gc():
        plan = timed("compile", plan_on_graph, schedule, G)
        env = simpy.Environment()
        backend = NetworkBackend(env, G)
        engine = Engine(plan, backend, env)
        if profile:
            import cProfile
            import pstats

            profiler = cProfile.Profile()
            profiler.enable()
        timed("simulate", engine.run)
        if profile:
            profiler.disable()
            pstats.Stats(profiler, stream=sys.stderr).sort_stats("tottime").print_stats(25)
    makespan = max(engine.finish_s)
    figures = {"gpus": gpus, "grid": list(grid), "topology": topology, "workload": f"mlp m={TOKENS} hidden={HIDDEN}",
               "ops": sum(len(p) for p in schedule.programs), "instances": len(plan.instances),
               "events": engine.events_scheduled(), "flows": backend.net.flow_count,
               "flow_records": backend.net.flow_records,
               "rate_changes": backend.net.rate_changes, "fills": backend.net.fills, "makespan_s": makespan,
               "target_s": target_s}
    if analytic:
        bound = timed("analytic", analyze, schedule, G, plan=plan, timeline=False, router=backend.net.router)
        figures["analytic_makespan_s"] = bound.makespan_s
    figures["wall_s"] = wall
    figures["peak_rss_MB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", type=int, choices=sorted(CASES), action="append",
                        help="run only this case (repeatable); default: all, each in its own process")
    parser.add_argument("--profile", action="store_true", help="cProfile the simulation phase (stderr)")
    parser.add_argument("--no-analytic", action="store_true", help="skip the analytic bound")
    parser.add_argument("--inline", action="store_true", help="run in this process (for --case), print JSON")
    args = parser.parse_args(argv)
    cases = args.case or sorted(CASES)
    if args.inline:
        for gpus in cases:
            print(json.dumps(run_case(gpus, args.profile, not args.no_analytic)))
        return 0
    rows = []
    for gpus in cases:
        command = [sys.executable, __file__, "--inline", "--case", str(gpus)]
        command += ["--profile"] * args.profile + ["--no-analytic"] * args.no_analytic
        done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True)
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(f"summa25d mlp fwd+bwd, M={TOKENS} tokens, hidden={HIDDEN}, bfloat16")
    print(f"{'GPUs':>5} {'grid':>10} {'topology':>13} {'ops':>9} {'instances':>9} {'events':>9} {'flows':>9}"
          f" {'records':>9} {'build':>7} {'valid.':>7} {'compile':>7} {'simul.':>7} {'target':>6} {'analyt.':>7}"
          f" {'peak MB':>7} {'makespan':>9} {'bound':>9}")
    for r in rows:
        w = r["wall_s"]
        print(f"{r['gpus']:>5} {'x'.join(map(str, r['grid'])):>10} {r['topology']:>13} {r['ops']:>9,} "
              f"{r['instances']:>9,} {r['events']:>9,} {r['flows']:>9,} {r['flow_records']:>9,} "
              f"{w['build']:>6.2f}s {w['validate']:>6.2f}s {w['compile']:>6.2f}s {w['simulate']:>6.2f}s "
              f"{r['target_s']:>5.0f}s "
              f"{w.get('analytic', float('nan')):>6.2f}s {r['peak_rss_MB']:>7.0f} {r['makespan_s'] * 1e3:>7.3f}ms"
              f" {r.get('analytic_makespan_s', float('nan')) * 1e3:>7.3f}ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())

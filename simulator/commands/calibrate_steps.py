"""`tpsim calibrate --from-steps STEPS`: fit a device's ``gemm_efficiency`` to training steps measured on it.

    tpsim calibrate --from-steps STEPS --topology BASE -o OUT [--profile FILE] [--calibration FILE]
                    [--no-holdout] [--json] [--force]

STEPS lists measured steps, each with the `tpsim predict` line of its job (``simulator.calibrate.steps_file``);
each is timed on BASE (``step_timing``) and one ``gemm_efficiency`` is fitted to all of them
(``from_steps``), each entry then held out in turn (leave-one-out) unless ``--no-holdout``. OUT is BASE
with the fitted value and its profile embedded (``steps_profile``), written atomically, as ``--profile``
alone; nothing is written when any entry is refused or, without ``--force``, when the fit sits at an
end of its range (0.05 or 1: the time the model misses is not in the GEMMs).
"""

from __future__ import annotations

import argparse
import json

from simulator.calibrate.from_steps import BOUNDS, StepsFit, fit_steps, geomean_error
from simulator.calibrate.step_timing import device_name, timed_entry
from simulator.calibrate.steps_file import read_steps
from simulator.calibrate.steps_profile import base_profile, calibrated_by_steps
from simulator.commands.sim_args import format_time
from simulator.errors import InputError
from simulator.files import replacing
from simulator.progress import Progress
from topologies import load_topology, save_topology
from topologies.profile import write_profile

__all__ = ["steps_command", "report_lines"]

_COLLECTIVE_ONLY = (("--holdout-sizes", "holdout_sizes", None), ("--holdout-ranks", "holdout_ranks", None),
                    ("--fit-min-bytes", "fit_min_bytes", None), ("--bench-form", "bench_form", "auto"),
                    ("--protocol", "protocol", None), ("--algo", "algo", None),
                    ("--no-kind-factors", "no_kind_factors", False))
"""Options of the collective and gemm fits, which mean nothing to a fit on whole steps."""


def _refuse_collective_options(args: argparse.Namespace) -> None:
    given = [flag for flag, name, default in _COLLECTIVE_ONLY if getattr(args, name, default) != default]
    if given:
        raise InputError(f"{' '.join(given)} apply to --from-bench and --from-nccl-tests; --from-steps fits "
                         f"gemm_efficiency alone (--no-holdout skips the leave-one-out check)")


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:+.1f}%"


def report_lines(fit: StepsFit, base_cap: float, device: str, caps_differ: bool) -> list[str]:
    """The tables and summary `tpsim calibrate --from-steps` prints."""
    width = max(12, *(len(r.name) for r in fit.rows))
    lines = [f"# fitted parameters (base -> fitted), {device}",
             f"  {'gemm_efficiency':<36} {base_cap:>12.6g} -> {fit.efficiency:.6g}",
             "", f"# measured steps, predicted before and after the fit (error: predicted / measured step time - 1)",
             f"  {'entry':<{width}}  {'measured':>10}  {'before':>10}  {'error':>7}  {'after':>10}  {'error':>7}  "
             f"arrangement"]
    lines += [f"  {r.name:<{width}}  {format_time(r.measured_s):>10}  {format_time(r.before_s):>10}  "
              f"{_pct(r.error_before):>7}  {format_time(r.after_s):>10}  {_pct(r.error_after):>7}  {r.arrangement}"
              for r in fit.rows]
    before = geomean_error(r.before_s / r.measured_s for r in fit.rows)
    after = geomean_error(r.after_s / r.measured_s for r in fit.rows)
    summary = (f"geomean |error| over {len(fit.rows)} entr{'y' if len(fit.rows) == 1 else 'ies'}: uncalibrated "
               f"{100 * before:.1f}%, fitted {100 * after:.1f}% (rms log error {fit.rms_log_error:.3g})")
    if fit.held_out:
        lines += ["", "# held out: each entry predicted at the gemm_efficiency fitted on the others (leave-one-out)",
                  f"  {'entry':<{width}}  {'fitted on others':>16}  {'predicted':>10}  {'error':>7}  "
                  f"{'uncalibrated':>12}"]
        lines += [f"  {r.name:<{width}}  {r.held_out_efficiency:>16.4g}  {format_time(r.held_out_s):>10}  "
                  f"{_pct(r.error_held_out):>7}  {_pct(r.error_before):>12}" for r in fit.rows]
        held = geomean_error(r.held_out_s / r.measured_s for r in fit.rows)
        worst = max(fit.rows, key=lambda r: abs(r.error_held_out))
        summary += f"; held out {100 * held:.1f}%, largest {_pct(worst.error_held_out)} ({worst.name})"
    lines += ["", summary]
    if len(fit.rows) == 1:
        lines.append("note: one entry: nothing to hold out; a second measured step (another arrangement or size) "
                     "would check that the fitted value carries")
    if caps_differ:
        lines.append("note: the entries' GEMMs had different base caps (dtypes); the base shown is the first "
                     "entry's, and the fitted value replaces every one")
    lines.append(f"note: gemm_efficiency replaces the device's large-GEMM cap for every GEMM (the shape factor and "
                 f"the memory roof stay); searched in [{BOUNDS[0]:g}, {BOUNDS[1]:g}]")
    if fit.at_bound:
        lines.append(f"note: at a bound: {fit.at_bound}")
    return lines


def _as_json(fit: StepsFit, base_cap: float, device: str, output: str, topology: str) -> dict:
    data = {"output": output, "topology": topology, "device": device, "gemm_efficiency": fit.efficiency,
            "base_gemm_efficiency": base_cap, "rms_log_error": fit.rms_log_error, "at_bound": fit.at_bound,
            "entries": [r.to_dict() for r in fit.rows],
            "geomean_error_before": geomean_error(r.before_s / r.measured_s for r in fit.rows),
            "geomean_error_after": geomean_error(r.after_s / r.measured_s for r in fit.rows),
            "geomean_error_held_out": None}
    if fit.held_out:
        data["geomean_error_held_out"] = geomean_error(r.held_out_s / r.measured_s for r in fit.rows)
    return data


def steps_command(args: argparse.Namespace) -> int:
    """Run `tpsim calibrate --from-steps`: read, time, fit, hold out, write atomically, print."""
    from simulator.commands.calibrate import check_output

    _refuse_collective_options(args)
    check_output(args.output)
    if args.profile:
        check_output(args.profile)
    entries = read_steps(args.from_steps)
    base = load_topology(args.topology, args.calibration)
    previous = base_profile(base, args.calibration)
    with Progress("tpsim calibrate", what=f"fitting gemm_efficiency to {len(entries)} measured steps"):
        timed = [timed_entry(e, base, args.topology, args.calibration) for e in entries]
        fit = fit_steps(timed, holdout=not args.no_holdout)
    if fit.at_bound and not args.force:
        raise InputError(f"{args.from_steps}: {fit.at_bound}; nothing written (--force writes the fit at the bound)")
    graph, profile = calibrated_by_steps(base, fit.efficiency, previous, args.from_steps)
    with replacing(args.output) as temporary:
        save_topology(graph, temporary)
    if args.profile:
        with replacing(args.profile) as temporary:
            write_profile(profile, temporary)
    caps = [t.base_cap() for t in timed]
    device = device_name(base)
    if args.json:
        print(json.dumps(_as_json(fit, caps[0], device, args.output, graph.graph["name"]), indent=1))
        return 0
    print("\n".join(report_lines(fit, caps[0], device, len(set(caps)) > 1)))
    print(f"wrote {args.output} ({graph.graph['name']}); predict with --topology {args.output}")
    if profile.preset:
        where = args.profile or args.output
        print(f"carry it to a larger cluster of the same node kind: --topology {profile.preset}:N --calibration "
              f"{where}" + ("" if args.profile else f" (or --topology {args.output}:N)"))
    return 0

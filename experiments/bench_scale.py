"""Scale benchmark (issues 14, 49): every algorithm at 4,096 GPUs, summa25d and 1d at 16,384, predict at 1,024, 4,096.

Not a test (``python -m experiments.bench_scale``; ``--case NAME`` runs one, ``--list`` names them). Each
case is one ``tpsim`` command a user types, run end to end in a fresh process of its own: wall seconds
(from start to exit, imports included), CPU seconds (user + system of that process: what one core
spends, whatever else the machine runs), peak memory (its maximum resident set), and from its output
the events and flows of the simulation (``simulate``) or the rows simulated and left at their bound
(``predict``). Every case runs twice in the same sitting, on the code of this checkout and on the code
of ``--baseline REV`` (default ``BASELINE``, the last commit before the issue's speed-ups of
2026-12-04; checked out with ``git worktree`` into a temporary directory), one right after the other,
so that their ratio is measured under the same load; the two outputs are compared with the lines
that print a run time removed (``same output``: the speed-ups are exact). ``--baseline none`` times
this checkout only.

Workload of every case: the MLP of a GPT-3-sized block, hidden h = 12288, M = 131072 tokens (batch 64
x sequence 2048), bfloat16, forward and backward, on DGX H100 servers (``dgx-h100:P/8``). Targets (the
issue's, for one core of the 2-core development machine): every algorithm at 4,096 GPUs under 60 s;
summa25d and 1d at 16,384 under 300 s and 2 GB; ``predict --gpus 1024`` under 30 s, ``--gpus 4096`` under
120 s. ``--timeout`` (default 1,200 s) stops a run; it is reported as such, not as a time.

Writes ``experiments/out/bench_scale.csv`` (one row per case and code) and prints the table.
``--quick`` runs the same commands at 64 GPUs (a smoke test; no targets) and writes to a temporary folder
unless ``--out`` is given (``experiments.outputs``).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from experiments.outputs import default_folder

__all__ = ["BASELINE", "Case", "cases", "measure", "main"]

BASELINE = "09e2a79"  # main before the route-signature choice, spread validation and the bench itself
ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "experiments" / "out" / "bench_scale.csv"
MLP = ["--workload", "mlp", "--m", "131072", "--hidden", "12288", "--dtype", "bfloat16"]

# Runs one tpsim command in this process and writes its own resource usage where the parent says.
_CHILD = """
import json, os, resource, sys
sys.path.insert(0, os.getcwd())
from simulator.cli import main
rc = main(sys.argv[1:])
u = resource.getrusage(resource.RUSAGE_SELF)
with open(os.environ["BENCH_USAGE"], "w") as f:
    json.dump({"rc": rc, "cpu_s": u.ru_utime + u.ru_stime, "peak_MB": u.ru_maxrss / 1024}, f)
sys.exit(rc)
"""
_TIMING = re.compile(r"\bin [\d.]+ s\b|, \d+ s$|\d+(\.\d+)? s elapsed")


@dataclass(frozen=True)
class Case:
    """One benchmarked command and its targets."""

    name: str
    argv: tuple[str, ...]
    """The tpsim command line, without ``tpsim``."""
    target_s: float | None
    target_MB: float | None = None


def cases(quick: bool = False) -> list[Case]:
    """The issue's cases (``quick``: the same commands at 64 GPUs)."""
    servers = 8 if quick else 512
    big = (4, 4, 4) if quick else (16, 16, 16)
    wide = (8, 8, 1) if quick else (64, 64, 1)
    deep = (4, 4, 4) if quick else (32, 32, 4)
    gpus = servers * 8

    def simulate(algo, layout, on=servers) -> tuple[str, ...]:
        shape = ["--gpus", str(layout)] if isinstance(layout, int) else ["--grid", ",".join(map(str, layout))]
        return ("simulate", "--algo", algo, *shape, *MLP, "--topology", f"dgx-h100:{on}")

    target = None if quick else 60.0
    out = [Case(f"{algo} {gpus}", simulate(algo, layout), target)
           for algo, layout in (("1d", gpus), ("1d-sp", gpus), ("2d", wide), ("cannon25d", deep),
                                ("summa25d", big), ("3d", big))]
    if not quick:  # the 16,384-GPU cases: summa25d and 1d, each under 5 minutes
        out.append(Case("summa25d 16384", simulate("summa25d", (32, 32, 16), 2048),
                        300.0, 2048.0))
        out.append(Case("1d 16384", simulate("1d", 16384, 2048), 300.0, 2048.0))
    for p, limit in ((64, None),) if quick else ((1024, 30.0), (4096, 120.0)):
        out.append(Case(f"predict {p}", ("predict", "--gpus", str(p), *MLP, "--topology", f"dgx-h100:{p // 8}"),
                        limit))
    return out


def measure(argv, code_dir: Path, timeout_s: float) -> dict:
    """Run ``tpsim ARGV`` on the code in ``code_dir`` in a fresh process; its figures and its output."""
    with tempfile.TemporaryDirectory() as scratch:
        usage_path = Path(scratch) / "usage.json"
        env = dict(os.environ, BENCH_USAGE=str(usage_path), PYTHONPATH=str(code_dir))
        began = time.perf_counter()
        try:
            done = subprocess.run([sys.executable, "-c", _CHILD, *argv], cwd=code_dir, env=env, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return {"status": f"over {timeout_s:.0f} s", "wall_s": None, "output": ""}
        wall = time.perf_counter() - began
        usage = json.loads(usage_path.read_text()) if usage_path.exists() else {}
    status = "ok" if done.returncode == 0 else f"exit {done.returncode}"
    return {"status": status, "wall_s": wall, **usage, **_counts(done.stdout), "output": done.stdout}


def _counts(output: str) -> dict:
    """Events and flows of a simulate run, simulated and bound rows of a predict run, from its output."""
    found = {}
    if m := re.search(r"([\d,]+) flows, ([\d,]+) events", output):
        found["flows"], found["events"] = (int(g.replace(",", "")) for g in m.groups())
    if m := re.search(r"not simulated (\d+)", output):
        found["bound_rows"] = int(m.group(1))
    return found


def _comparable(output: str) -> list[str]:
    return [line for line in output.splitlines() if not _TIMING.search(line)]


def _checkout(rev: str) -> Path:
    """A detached worktree of ``rev`` in a temporary directory (removed by ``_remove``)."""
    where = Path(tempfile.mkdtemp(prefix="tpsim-baseline-"))
    try:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(where), rev], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    except (OSError, subprocess.CalledProcessError) as error:
        shutil.rmtree(where, ignore_errors=True)  # the empty directory mkdtemp made, or git's half of one
        detail = getattr(error, "stderr", "") or str(error)
        print(f"bench_scale: cannot check out --baseline {rev}: {detail.strip().splitlines()[-1]}; "
              "give a commit of this repository or --baseline none", file=sys.stderr)
        raise SystemExit(2) from None
    return where


def _remove(where: Path) -> None:
    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(where)], check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _fmt(value, spec: str, unit: str = "") -> str:
    """``value`` in ``spec`` (">W..."), or "-" right-aligned to the same width."""
    if value is None:
        return "-".rjust(int(re.match(r">(\d+)", spec).group(1)) + len(unit))
    return f"{value:{spec}}{unit}"


def _row(case: Case, code: str, r: dict) -> dict:
    return {"case": case.name, "code": code, "status": r["status"], "wall_s": r.get("wall_s"),
            "cpu_s": r.get("cpu_s"), "peak_MB": r.get("peak_MB"), "events": r.get("events"),
            "flows": r.get("flows"), "bound_rows": r.get("bound_rows"), "target_s": case.target_s,
            "target_MB": case.target_MB, "command": "tpsim " + " ".join(case.argv)}


def _met(case: Case, r: dict) -> str:
    if case.target_s is None:
        return "-"
    ok = r["status"] == "ok" and r["cpu_s"] <= case.target_s
    ok = ok and (case.target_MB is None or r["peak_MB"] <= case.target_MB)
    return "yes" if ok else "no"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", metavar="NAME", help="run only this case (repeatable)")
    parser.add_argument("--list", action="store_true", help="print the cases and their commands, then exit")
    parser.add_argument("--baseline", default=BASELINE, metavar="REV",
                        help=f"the previous code to time alongside (default {BASELINE}); none: skip it")
    parser.add_argument("--timeout", type=float, default=1200.0, metavar="S", help="per run (default 1200)")
    parser.add_argument("--quick", action="store_true", help="the same commands at 64 GPUs (smoke test)")
    parser.add_argument("--out", type=Path, help=f"CSV to write (default {OUT.relative_to(ROOT)}; --quick: a "
                                                 f"temporary folder, never over the committed full run)")
    args = parser.parse_args(argv)
    if args.out is None:
        args.out = Path(default_folder("bench_scale", True)) / OUT.name if args.quick else OUT
    chosen = cases(args.quick)
    if args.list:
        for case in chosen:
            print(f"{case.name:>16}  tpsim {' '.join(case.argv)}")
        return 0
    if args.case:
        names = {case.name for case in chosen}
        unknown = [name for name in args.case if name not in names]
        if unknown:
            parser.error(f"unknown case {unknown[0]!r}; valid: {', '.join(sorted(names))}")
        chosen = [case for case in chosen if case.name in args.case]
    if not args.timeout > 0:
        parser.error(f"--timeout must be > 0, got {args.timeout}")
    baseline = None if args.baseline == "none" else _checkout(args.baseline)
    print(_HEADER, flush=True)
    rows = []
    try:
        for case in chosen:
            now = measure(case.argv, ROOT, args.timeout)
            rows.append((case, now, measure(case.argv, baseline, args.timeout) if baseline else None))
            _print_row(*rows[-1])
    finally:
        if baseline:
            _remove(baseline)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(_row(chosen[0], "", {"status": ""})))
        writer.writeheader()
        for case, now, before in rows:
            writer.writerow(_row(case, "this checkout", now))
            if before is not None:
                writer.writerow(_row(case, f"baseline {args.baseline}", before))
    print(f"wrote {args.out}")
    return 0


_HEADER = (f"{'case':>16} {'wall':>8} {'CPU':>8} {'peak MB':>8} {'events':>10} {'flows':>11} {'bound':>5} "
           f"{'target':>6} {'met':>3} | {'before CPU':>10} {'peak MB':>8} {'speed-up':>8} {'output':>9}")


def _print_row(case: Case, now: dict, before: dict | None) -> None:
    cells = [f"{case.name:>16}"]
    if now["status"] != "ok":
        cells.append(f"{now['status']:>37}")
    else:
        cells += [_fmt(now["wall_s"], ">7.1f", "s"), _fmt(now["cpu_s"], ">7.1f", "s"),
                  _fmt(now.get("peak_MB"), ">8.0f"), _fmt(now.get("events"), ">10,"),
                  _fmt(now.get("flows"), ">11,"), _fmt(now.get("bound_rows"), ">5")]
    cells += [_fmt(case.target_s, ">5.0f", "s"), f"{_met(case, now):>3}", "|"]
    if before is None:
        cells.append("(no baseline)")
    elif before["status"] != "ok":
        cells.append(f"{before['status']:>10}")
    else:
        speedup = before["cpu_s"] / now["cpu_s"] if now["status"] == "ok" else None
        same = "same" if _comparable(before["output"]) == _comparable(now["output"]) else "DIFFERS"
        cells += [_fmt(before["cpu_s"], ">9.1f", "s"), _fmt(before.get("peak_MB"), ">8.0f"),
                  _fmt(speedup, ">7.2f", "x"), f"{same:>9}"]
    print(" ".join(cells), flush=True)


if __name__ == "__main__":
    sys.exit(main())

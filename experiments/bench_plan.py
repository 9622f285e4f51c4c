"""Benchmark of whole training steps at scale: `tpsim predict --global-batch` on 1,024 to 16,384 GPUs, end to end.

Not a test (run it: ``python -m experiments.bench_plan``; ``--case NAME`` runs one, ``--list`` names them;
``pytest -m benchmark`` runs the first as one). Each case is the command a user types, run in a fresh process
and timed from start to exit: CPU seconds (user + system of that process: what one core spends, since the
command is single-threaded; wall time grows with whatever else shares the machine), wall seconds and peak
memory (its maximum resident set), and from its JSON rows how many it simulated and the best that fits with
its step time, MFU and model TFLOPs per GPU. Fixed inputs, no randomness: the figures vary only with the
machine and what else runs there.

The cases:

- GPT-3 175B (``--model gpt3-175b``, 96 layers), global batch 1,536 sequences, on 1,024 A100s, every tensor x
  pipeline x data arrangement of the default sizes (tp 1 .. 64, every pp dividing the GPUs and the 96 layers,
  1F1B and interleaved schedules) bounded and the leading 4 that fit simulated, each row's ZeRO stage and
  recompute mode searched: on 40 GB A100s (``dgx-a100:128``) searched and with ZeRO-1 pinned (Megatron-LM's
  distributed optimizer, no recompute), on 80 GB A100s (``dgx-a100-80gb:128``, the servers Narayanan et al.
  2021 trained it on), under 60 s each; the same on 4,096 of them (``dgx-a100-80gb:512``) under 5 minutes.
- Llama 3 405B on 16,384 H100s (``dgx-h100:2048``), pinned to the published configuration: Dubey et al. 2024,
  "The Llama 3 Herd of Models" (arXiv 2407.21783), Table 4, the row of 16,384 GPUs without context
  parallelism: TP 8, CP 1, PP 16, DP 128, sequence 8,192, 16 sequences per data-parallel rank (global batch
  2,048 sequences, 16M tokens), 400 TFLOPs/GPU, 41% BF16 MFU; micro-batch 1 and the interleaved schedule
  (section 3.3.2). The paper balances its 126 layers over 16 stages by giving the first and the last stage
  one layer fewer (they carry the embedding and the output head); tpsim splits stages equally, so the pinned
  case runs 128 layers (``--layers 128``: 1.6% more layer work than the model has). ZeRO-1 stands for its
  FSDP (optimizer state and gradients sharded, parameters not resharded after the forward: section 3.3.2),
  Megatron-LM's tensor parallelism with sequence parallelism (``--algos 1d-sp``); the recompute mode and the
  interleaving depth v are searched. Targets: under 5 minutes of CPU and 4 GB.
- The same model searched (no arrangement pinned; ``--model llama3-405b`` keeps its 126 layers, so pp can only
  be 1 or 2), and searched with ``--layers 128`` (pp up to 128): each under 10 minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CASES", "TARGET_S", "TARGETS_S", "PlanCase", "command", "end_to_end", "main"]

GPT3 = ("--gpus", "1024", "--model", "gpt3-175b", "--global-batch", "1536")
LLAMA3 = ("--gpus", "16384", "--topology", "dgx-h100:2048", "--model", "llama3-405b", "--global-batch", "2048")
PINNED_405B = ("--layers", "128", "--tp-sizes", "8", "--pp-sizes", "16", "--batch", "1", "--schedule",
               "interleaved", "--algos", "1d-sp", "--zero", "1")
"""Dubey et al. 2024, Table 4 (16,384 GPUs, CP 1): TP 8 x PP 16 x DP 128, micro-batch 1, interleaved."""
PUBLISHED_405B = {"tflops_per_gpu": 400.0, "mfu": 0.41}
"""The same row's throughput: 400 TFLOPs per GPU, 41% BF16 MFU (Dubey et al. 2024, Table 4)."""


@dataclass(frozen=True)
class PlanCase:
    """One benchmarked `tpsim predict` command (the words after ``predict``) and its targets."""

    name: str
    argv: tuple[str, ...]
    target_s: float
    """CPU seconds on one core."""
    target_MB: float | None = None


CASES = [
    PlanCase("searched", (*GPT3, "--topology", "dgx-a100:128"), 60.0),
    PlanCase("zero1", (*GPT3, "--topology", "dgx-a100:128", "--zero", "1", "--recompute", "none"), 60.0),
    PlanCase("80gb", (*GPT3, "--topology", "dgx-a100-80gb:128"), 60.0),
    PlanCase("80gb-4096", (*GPT3, "--topology", "dgx-a100-80gb:512", "--gpus", "4096"), 300.0),
    PlanCase("405b-pinned", (*LLAMA3, *PINNED_405B), 300.0, 4096.0),
    PlanCase("405b-search", LLAMA3, 600.0),
    PlanCase("405b-search-128", (*LLAMA3, "--layers", "128"), 600.0),
]
TARGET_S = 60.0
TARGETS_S = {case.name: case.target_s for case in CASES}
"""Each case's CPU target (argparse keeps the last ``--gpus``, so 80gb-4096 runs 4,096 GPUs)."""


def command(extra: tuple[str, ...] = ()) -> list[str]:
    """The `tpsim predict` command line of the 1,024-GPU GPT-3 plan (a ``--topology`` in ``extra`` replaces
    ``dgx-a100:128``)."""
    topology = () if "--topology" in extra else ("--topology", "dgx-a100:128")
    return _argv((*GPT3, *topology, *extra))


# Runs `tpsim` in this process and writes its own CPU time and peak memory where the parent says: the
# parent's RUSAGE_CHILDREN keeps the largest peak of any child so far, not this one's.
_CHILD = """
import json, os, resource, sys
from simulator.cli import main
rc = main(sys.argv[1:])
u = resource.getrusage(resource.RUSAGE_SELF)
with open(os.environ["BENCH_USAGE"], "w") as f:
    json.dump({"cpu_s": u.ru_utime + u.ru_stime, "peak_rss_MB": u.ru_maxrss / 1024}, f)
sys.exit(rc)
"""


def _argv(words: tuple[str, ...]) -> list[str]:
    return [sys.executable, "-m", "simulator.cli", "predict", *words, "--json"]


def end_to_end(extra: tuple[str, ...] = (), argv: list[str] | None = None) -> dict:
    """Run the command (``argv``, or the GPT-3 plan with ``extra``) in a child process: its wall and CPU
    seconds, peak memory, and the best fitting row with its step time and utilisation."""
    argv = argv or command(extra)
    assert argv[1:3] == ["-m", "simulator.cli"], argv
    with tempfile.TemporaryDirectory() as scratch:
        usage_path = Path(scratch) / "usage.json"
        began = time.perf_counter()
        done = subprocess.run([argv[0], "-c", _CHILD, *argv[3:]], capture_output=True, text=True, check=True,
                              env=dict(os.environ, BENCH_USAGE=str(usage_path)))
        wall = time.perf_counter() - began
        usage = json.loads(usage_path.read_text())
    rows = json.loads(done.stdout)
    best = next((r for r in rows if r["fits"]), None)
    return {"wall_s": wall, "cpu_s": usage["cpu_s"], "peak_rss_MB": usage["peak_rss_MB"], "rows": len(rows),
            "simulated": sum(1 for r in rows if r.get("simulated")),
            "best": None if best is None else best["arrangement"],
            "best_row": best}


def _line(case: PlanCase, figures: dict) -> str:
    met = figures["cpu_s"] <= case.target_s and (case.target_MB is None or figures["peak_rss_MB"] <= case.target_MB)
    target = f"{case.target_s:.0f} s" + ("" if case.target_MB is None else f", {case.target_MB / 1024:.0f} GB")
    text = (f"{case.name}: {figures['cpu_s']:.1f} s CPU, {figures['wall_s']:.1f} s wall, "
            f"{figures['peak_rss_MB']:.0f} MB, {figures['rows']} rows, {figures['simulated']} simulated, "
            f"target {target} on one core: {'met' if met else 'MISSED'}")
    row = figures["best_row"]
    if row is None:
        return text + "; nothing fits"
    return (text + f"; best fitting: {row['arrangement']} ZeRO-{row['zero']} recompute {row['recompute']}, "
            f"step {row['step_time_s']:.3f} s ({row['status']}), MFU {row['mfu']:.1%}, "
            f"{row['mfu'] * _peak_tflops(row):.0f} model TFLOPs/GPU")


def _peak_tflops(row: dict) -> float:
    """The device's dense peak in TFLOPs, from the row's own hardware TFLOPs and HFU."""
    return row["tflops_per_gpu"] / row["hfu"]


def published_error(row: dict) -> str:
    """The pinned 405B row against Table 4's figures: relative errors of MFU and of the step time."""
    published_step = row["step_time_s"] * row["mfu"] / PUBLISHED_405B["mfu"]
    return (f"published (Dubey et al. 2024, Table 4): {PUBLISHED_405B['tflops_per_gpu']:.0f} TFLOPs/GPU, "
            f"MFU {PUBLISHED_405B['mfu']:.0%}, so a step of {published_step:.3f} s at tpsim's FLOP count; "
            f"predicted MFU {row['mfu']:.1%} ({row['mfu'] / PUBLISHED_405B['mfu'] - 1:+.1%}), step "
            f"{row['step_time_s']:.3f} s ({row['step_time_s'] / published_step - 1:+.1%})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", metavar="NAME", help="run only this case (repeatable)")
    parser.add_argument("--list", action="store_true", help="print the cases and their commands, then exit")
    args = parser.parse_args(argv)
    chosen = CASES
    if args.case:
        names = [case.name for case in CASES]
        unknown = [name for name in args.case if name not in names]
        if unknown:
            parser.error(f"unknown case {unknown[0]!r}; valid: {', '.join(names)}")
        chosen = [case for case in CASES if case.name in args.case]
    for case in chosen:
        if args.list:
            print(f"{case.name:>16}  tpsim predict {' '.join(case.argv)}")
            continue
        figures = end_to_end(argv=_argv(case.argv))
        print(_line(case, figures), flush=True)
        if case.name == "405b-pinned" and figures["best_row"] is not None:
            print(f"  {published_error(figures['best_row'])}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark of the whole-model training plan at scale: `tpsim predict --global-batch` on 1,024 GPUs, end to end.

Not a test (run it: ``python -m experiments.bench_plan``; ``pytest -m benchmark`` runs it as one). The case
is the issue's: GPT-3 175B (``--model gpt3-175b``, 96 layers), global batch 1,536 sequences, on 1,024 A100s,
every tensor x pipeline x data arrangement of the default sizes (tp 1 .. 64, every pp dividing the GPUs
and the 96 layers, 1F1B and interleaved schedules) bounded and the leading 4 that fit simulated, with
memory per GPU and stage, and each row's ZeRO stage and recompute mode searched (the default): on 40 GB
A100s (``dgx-a100:128``) searched and with ZeRO-1 pinned (Megatron-LM's distributed optimizer, no
recompute), and on 80 GB A100s (``dgx-a100-80gb:128``, the servers Narayanan et al. 2021 trained it on)
searched, the target: under 60 s on one core, and the same on 4,096 of them (``dgx-a100-80gb:512``) under
5 minutes (the command is single-threaded,
so its CPU seconds are its time on one core; wall time grows with whatever else shares the machine). The
command a user types runs in a fresh process, timed from start to exit: wall seconds, CPU seconds (user +
system) and peak memory. Fixed inputs, no randomness: the figures vary only with the machine and what else runs there.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time

__all__ = ["CASES", "TARGET_S", "TARGETS_S", "command", "end_to_end"]

CASES = {"searched": (), "zero1": ("--zero", "1", "--recompute", "none"),
         "80gb": ("--topology", "dgx-a100-80gb:128"),
         "80gb-4096": ("--topology", "dgx-a100-80gb:512", "--gpus", "4096")}
TARGET_S = 60.0
TARGETS_S = {"80gb-4096": 300.0}
"""Cases with a target of their own: 4,096 GPUs in under 5 minutes (argparse keeps the last ``--gpus``)."""


def command(extra: tuple[str, ...] = ()) -> list[str]:
    """The `tpsim predict` command line of the 1,024-GPU plan (a ``--topology`` in ``extra`` replaces
    ``dgx-a100:128``)."""
    topology = () if "--topology" in extra else ("--topology", "dgx-a100:128")
    return [sys.executable, "-m", "simulator.cli", "predict", "--gpus", "1024", "--model", "gpt3-175b",
            *topology, "--global-batch", "1536", "--json", *extra]


def end_to_end(extra: tuple[str, ...] = ()) -> dict:
    """Run the command in a child process; its wall and CPU seconds, peak memory, and the best fitting row."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(command(extra), capture_output=True, text=True, check=True)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    rows = json.loads(done.stdout)
    best = next((r for r in rows if r["fits"]), None)
    return {"wall_s": wall, "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "peak_rss_MB": after.ru_maxrss / 1024, "rows": len(rows),
            "simulated": sum(1 for r in rows if r.get("simulated")),
            "best": None if best is None else best["arrangement"]}


def main() -> None:
    for name, extra in CASES.items():
        figures = end_to_end(extra)
        print(f"{name}: {figures['wall_s']:.1f} s wall, {figures['cpu_s']:.1f} s CPU, "
              f"{figures['peak_rss_MB']:.0f} MB, {figures['rows']} rows, {figures['simulated']} simulated, "
              f"best fitting: {figures['best']} (target {TARGETS_S.get(name, TARGET_S):.0f} s on one core)")


if __name__ == "__main__":
    main()

"""How far the guards' estimates are from what the commands cost here (``simulator.guard.costs``).

Not a test (``python -m experiments.guard_costs``; ``--quick`` runs the small cases only). Each case is
one ``tpsim`` command run end to end in a fresh process of its own, with every estimate the guards make
recorded as it is made (``--force``: none refuses). It prints, per case, the estimate (seconds: the sum
of the estimates, bytes: the largest) beside the child's CPU seconds (user + system, what one core
spends whatever else runs) and peak resident memory, and their ratios. The figures in
``simulator.guard.costs``'s docstring came from these commands; experiments/README.md keeps a run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MLP = ("--workload", "mlp", "--m", "131072", "--hidden", "12288")
SMALL_MLP = ("--workload", "mlp", "--m", "4096", "--hidden", "1024")

CASES = {
    "schedule 2d 1024": ("schedule", "--algo", "2d", "--grid", "32,32,1", *MLP),
    "schedule 2d 4096": ("schedule", "--algo", "2d", "--grid", "64,64,1", *MLP),
    "simulate summa25d 1024": ("simulate", "--algo", "summa25d", "--grid", "8,8,16", *MLP, "--topology", "dgx-h100:128"),
    "simulate 2d 4096": ("simulate", "--algo", "2d", "--grid", "64,64,1", *MLP, "--topology", "dgx-h100:512"),
    "predict 1024": ("predict", "--gpus", "1024", *MLP, "--topology", "dgx-h100:128"),
    "topology show 16384": ("topology", "show", "dgx-h100:2048"),
    "collective 4096": ("collective", "--op", "all_reduce", "--group-size", "4096", "--bytes", "1GiB", "--topology",
                        "dgx-h100:512"),
    "plan gpt3-2.7b 16": ("predict", "--gpus", "16", "--topology", "dgx-a100:2", "--model", "gpt3-2.7b",
                          "--global-batch", "64"),
    "plan gpt3-13b 64": ("predict", "--gpus", "64", "--topology", "dgx-a100:8", "--model", "gpt3-13b",
                         "--global-batch", "256"),
    "plan gpt3-175b 1024": ("predict", "--gpus", "1024", "--topology", "dgx-a100-80gb:128", "--model", "gpt3-175b",
                            "--global-batch", "1536"),
    "plan gpt3-175b zero1": ("predict", "--gpus", "1024", "--topology", "dgx-a100:128", "--model", "gpt3-175b",
                             "--global-batch", "1536", "--zero", "1", "--recompute", "none"),
    "plan llama3-405b 16384": ("predict", "--gpus", "16384", "--topology", "dgx-h100:2048", "--model", "llama3-405b",
                               "--layers", "128", "--global-batch", "2048"),
    "plan llama3-405b 126": ("predict", "--gpus", "16384", "--topology", "dgx-h100:2048", "--model", "llama3-405b",
                             "--global-batch", "2048"),
    "verify 2d 64": ("verify", "--algo", "2d", "--grid", "8,8,1", *SMALL_MLP),
    "verify transformer s=2048": ("verify", "--algo", "1d", "--gpus", "2", "--workload", "transformer", "--batch", "1",
                                  "--seq", "2048", "--hidden", "256", "--heads", "4"),
}
QUICK = ("schedule 2d 1024", "simulate summa25d 1024", "collective 4096", "plan gpt3-2.7b 16",
         "verify transformer s=2048")

# Runs one tpsim command with every guard estimate recorded; writes them and its resource usage to argv[1].
_CHILD = """
import json, resource, sys, time
import simulator.guard as package
import simulator.guard.check as check
seen = []
real = check.guard
def spy(estimate, *args, **kwargs):
    seen.append([estimate.what, estimate.seconds, estimate.bytes])
    return real(estimate, *args, **kwargs)
check.guard = package.guard = spy
from simulator.cli import main
began = time.process_time()
status = main(sys.argv[2:])
usage = resource.getrusage(resource.RUSAGE_SELF)
with open(sys.argv[1], "w") as handle:
    json.dump({"status": status, "cpu_s": time.process_time() - began, "peak_bytes": usage.ru_maxrss * 1024,
               "estimates": seen}, handle)
"""


def measure(argv: tuple[str, ...]) -> dict:
    """Run ``tpsim ARGV --force`` in a fresh process; its estimates, CPU seconds and peak memory."""
    with tempfile.TemporaryDirectory(prefix="tpsim-guard-") as folder:
        record = Path(folder) / "record.json"
        subprocess.run([sys.executable, "-c", _CHILD, str(record), *argv, "--force"], cwd=folder, check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
        return json.loads(record.read_text())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the small cases only")
    parser.add_argument("--case", action="append", choices=list(CASES), help="run this case only (repeatable)")
    args = parser.parse_args(argv)
    print(f"{'case':>26} {'est. s':>8} {'CPU s':>8} {'ratio':>6} {'est. MB':>8} {'peak MB':>8} {'ratio':>6}")
    for name, case in CASES.items():
        if (args.quick and name not in QUICK) or (args.case and name not in args.case):
            continue
        r = measure(case)
        seconds = sum(e[1] for e in r["estimates"])
        nbytes = max((e[2] for e in r["estimates"]), default=0)
        print(f"{name:>26} {seconds:8.2f} {r['cpu_s']:8.2f} {seconds / r['cpu_s']:6.2f} {nbytes / 1e6:8.0f} "
              f"{r['peak_bytes'] / 1e6:8.0f} {nbytes / r['peak_bytes']:6.2f}" + ("" if r["status"] == 0 else
                                                                                  f"  (status {r['status']})"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

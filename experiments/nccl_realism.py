"""The uncalibrated dgx-a100 preset against real nccl-tests all_reduce logs: the error per size.

What it shows: how far the ``dgx-a100`` preset as published (230 GB/s effective NVSwitch rate, 0.3 us
per hop, 8 us base latency, NCCL's 1 MiB slice at 20 GB/s per channel as the start-up term; nothing
fitted to these logs) predicts all_reduce on 2, 4 and 8 A100 SXM4 GPUs of one server
(``tests/data/nccl-tests/azure-ndv4-a100``, nccl-tests' out-of-place times). It prints one row per
size from 1 MiB to 1 GiB, one column per log, and below the table the mean error under 1 MiB per log.
``tests/simulator/test_nccl_realism.py`` holds every cell at 15%.

Every number comes from ``tpsim collective --topology dgx-a100 --compare LOG --json`` (run in this
process through ``simulator.cli.main``). Fixed inputs, no randomness; a few seconds.

    python -m experiments.nccl_realism
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from simulator.cli import main as tpsim
from simulator.progress import Progress

LOGS = Path(__file__).resolve().parents[1] / "tests" / "data" / "nccl-tests" / "azure-ndv4-a100"
GPUS = (2, 4, 8)
MIB = 1 << 20


def compare(n: int) -> list[dict]:
    """`tpsim collective --compare` on the n-GPU log: one row per size."""
    out = io.StringIO()
    args = ["collective", "--topology", "dgx-a100", "--compare", str(LOGS / f"all_reduce_perf_{n}gpu.log"), "--json"]
    with contextlib.redirect_stdout(out):
        status = tpsim(args)
    if status != 0:
        raise SystemExit(f"tpsim {' '.join(args)} exited with status {status}")
    return json.loads(out.getvalue())


def size_name(nbytes: int) -> str:
    return f"{nbytes >> 30} GiB" if nbytes >= 1 << 30 else f"{nbytes >> 20} MiB"


def main() -> None:
    errors = {}
    with Progress("experiments.nccl_realism", total=len(GPUS), unit="log") as progress:
        for n in GPUS:
            errors[n] = {row["bytes"]: row["error"] for row in compare(n)}
            progress.update()
    print("| size | " + " | ".join(f"{n} GPUs" for n in GPUS) + " |")
    print("|---|" + "---|" * len(GPUS))
    for nbytes in sorted(errors[GPUS[0]]):
        if nbytes >= MIB:
            print(f"| {size_name(nbytes)} | " + " | ".join(f"{errors[n][nbytes]:+.1%}" for n in GPUS) + " |")
    print()
    for n in GPUS:
        small = [e for nbytes, e in errors[n].items() if nbytes < MIB]
        print(f"below 1 MiB, {n} GPUs: mean error {sum(small) / len(small):+.1%} over {len(small)} sizes "
              f"(from {min(small):+.1%} to {max(small):+.1%})")


if __name__ == "__main__":
    main()

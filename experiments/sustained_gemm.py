"""One GEMM shape run back to back for some seconds: the rate a GPU sustains, against the rate it starts at.

What it measures: the figure ``topologies.compute_rates`` calls *sustained* (GEMMs back to back on random
operands, as a training step runs them, so the GPU settles at the clock its power limit allows), which is
published for the A100 (258 TFLOP/s at 8192^3, H. He 2024) and for no other preset GPU. The best-case
figures the other presets carry (Bekman's maximum achievable matmul search) rest the tensor cores between
timed GEMMs; this runs them without a pause and reports the rate over the first second apart from the rate
over the rest. ``--fill zeros`` runs the same GEMM on zeros, which switch fewer transistors: the gap between
the two fills is the power limit's share (He measured 257 against 295 TFLOP/s on an A100).

Each window is timed from the host after a device synchronisation (CUDA: ``torch.cuda.synchronize``), so
launch gaps count, as they would in training; on a CPU the same loop runs (the smoke test), meaning nothing
about GPUs. Prints one JSON object: shape, dtype, fill, device, GEMMs run, and TFLOP/s over the first
second and over the rest (``sustained_tflops``).

    python -m experiments.sustained_gemm [--size 8192] [--dtype bfloat16] [--seconds 20] [--fill randn|zeros]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

__all__ = ["measure", "cli"]


def measure(size: int, dtype: str, seconds: float, fill: str, warm_s: float = 1.0) -> dict:
    """Run ``size``^3 GEMMs back to back for ``seconds``; the rate over the first ``warm_s`` and over the rest."""
    import torch  # the executor's dependency; imported here so the module's help needs no torch

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    make = torch.randn if fill == "randn" else torch.zeros
    a = make(size, size, dtype=getattr(torch, dtype), device=device)
    b = make(size, size, dtype=getattr(torch, dtype), device=device)
    out = torch.empty(size, size, dtype=a.dtype, device=device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    flops = 2.0 * size ** 3
    torch.mm(a, b, out=out)  # the first call picks the kernel (cuBLAS heuristics, workspace): not timed
    sync()

    def window(limit_s: float) -> tuple[int, float]:
        count, begin = 0, time.perf_counter()
        while count == 0 or time.perf_counter() - begin < limit_s:
            for _ in range(8):  # a few launches per synchronisation keep the host's checks off the GPU's path
                torch.mm(a, b, out=out)
            count += 8
            sync()
        return count, time.perf_counter() - begin

    start = time.perf_counter()
    first, rest = window(warm_s), window(seconds - warm_s)
    return {"shape": [size, size, size], "dtype": dtype, "fill": fill,
            "device": torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu",
            "gemms": first[0] + rest[0], "seconds": time.perf_counter() - start,
            "first_tflops": first[0] * flops / first[1] / 1e12, "sustained_tflops": rest[0] * flops / rest[1] / 1e12}


def cli(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.sustained_gemm", description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=8192, help="M = K = N (default 8192)")
    parser.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float16", "float32"))
    parser.add_argument("--seconds", type=float, default=20.0, help="how long to run in all (default 20; > 1)")
    parser.add_argument("--fill", default="randn", choices=("randn", "zeros"), help="the operands' values")
    args = parser.parse_args(argv)
    if args.size < 1 or not 1.0 < args.seconds <= 600.0:
        parser.error(f"--size must be >= 1 and --seconds in (1, 600], got {args.size} and {args.seconds:g}")
    print(json.dumps(measure(args.size, args.dtype, args.seconds, args.fill)))
    return 0


if __name__ == "__main__":
    sys.exit(cli())

"""A GPU machine's checks in one short run: GEMM throughput over shapes and the NCCL backend at world size 1.

Issue 17 item 6 (a compute-model calibration for the GPU, and the NCCL path run for real), prepared so
that a session lent a GPU spends its few minutes running it, not writing it. Each step is one ``tpsim``
command, printed before it runs, in a process of its own (NCCL ranks are forked: the parent must never
initialise CUDA), its output kept in ``--out``:

1. ``tpsim bench --ops gemm --nproc 1`` over ``SHAPES`` (squares, and GPT-3-sized MLP and attention
   slices), once in bfloat16 and once in float32: time and TFLOP/s per shape, and the bench record;
2. ``tpsim calibrate --from-bench`` of each record on ``--preset`` (default ``dgx-h200``): the compute
   model's fitted ``gemm_efficiency`` and ``half_efficiency_dim`` per dtype, against the preset's;
3. ``tpsim run --nproc 1`` of a small 1-D schedule on ``--backend`` (NCCL at world size 1 on the one GPU):
   its numbers checked against float64 and timed with CUDA events;
4. ``pytest -m gpu tests/executor/test_gpu.py`` (its world-size-1 tests run on one GPU);
5. ``python -m experiments.sustained_gemm`` twice: 8192^3 bfloat16 GEMMs back to back for 20 s on randn
   operands, then on zeros: the sustained rate ``topologies.compute_rates`` has published only for the
   A100, beside the preset's modelled rate at that shape and the rate of the first second.

Then ``summary.md`` in ``--out``: the date, the device, one row per shape and dtype (time, TFLOP/s, and
the fraction of the preset's peak), the fitted knobs, the run's check, the tests' result and the sustained
rates, ready for the README. ``--backend nccl`` (the default) without a CUDA device stops with one line
(exit 2); ``--backend gloo --quick`` runs the same steps on the CPU with small shapes (the smoke test, under
a minute). About 3 minutes on an H200.

On the lent machine python3 holds a CUDA torch and every other dependency but simpy, which travels as a
wheel. Here, once: ``echo /.whl/ >> .git/info/exclude; python3 -m pip download --no-deps
--only-binary=:all: -d .whl simpy==4.1.2``; then one device call, carrying ``.whl``, from the repository
root::

    python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site &&
    PYTHONUNBUFFERED=1 python3 -m experiments.gpu_check --out $OUT

    python -m experiments.gpu_check [--out DIR] [--preset dgx-h200] [--backend nccl|gloo] [--quick]
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import subprocess
import sys
from pathlib import Path

from simulator.compute import ComputeModel
from simulator.progress import Progress
from topologies import gpu_nodes, load_topology

__all__ = ["SHAPES", "QUICK_SHAPES", "tpsim", "gemm_rows", "main"]

ROOT = Path(__file__).resolve().parents[1]
SHAPES = ("1024x1024x1024", "2048x2048x2048", "4096x4096x4096", "8192x8192x8192", "16384x16384x16384",
          "8192x12288x49152", "8192x49152x12288", "8192x12288x12288", "2048x2048x128")
"""M x K x N: squares; GPT-3's MLP (8,192 tokens, hidden 12,288, 4h) forward and backward; its attention
projection; one head's scores (sequence 2,048, head 128)."""
QUICK_SHAPES = ("128x128x128", "256x256x256", "512x256x128")
DTYPES = ("bfloat16", "float32")
FILLS = ("randn", "zeros")
SUSTAINED = (8192, "bfloat16", 20.0)
"""``experiments.sustained_gemm``'s size, dtype and seconds: the shape of the A100's published sustained figure."""
SUSTAINED_QUICK = (128, "float32", 1.2)


def tpsim(args: list[str], log: Path) -> str:
    """Run ``tpsim ARGS`` in a process of its own (printed first); its stdout, also written to ``log``."""
    print("$ tpsim " + " ".join(args), flush=True)
    done = subprocess.run([sys.executable, "-c", "import sys; from simulator.cli import main; sys.exit(main())",
                           *args], capture_output=True, text=True, cwd=ROOT)
    log.write_text(done.stdout + done.stderr)
    if done.returncode:
        raise RuntimeError(f"tpsim {args[0]} failed (exit {done.returncode}): "
                           f"{(done.stderr or done.stdout).strip().splitlines()[-1:]}")
    return done.stdout


def gemm_rows(record: dict, peak_tflops: float | None) -> list[str]:
    """Markdown rows of a bench record's gemms: shape, dtype, time, TFLOP/s and fraction of the peak."""
    rows = []
    for row in record["rows"]:
        if row["op"] != "gemm":
            continue
        tflops = row["gflops_per_s"] / 1e3
        share = f"{tflops / peak_tflops:.0%}" if peak_tflops else "-"
        rows.append(f"| {row['m']}x{row['k']}x{row['n']} | {row['dtype']} | {row['time_s'] * 1e6:,.1f} | "
                    f"{tflops:,.1f} | {share} |")
    return rows


def _device(preset: str) -> dict:
    """The preset's GPU: its device dict (peaks, achievable rates)."""
    G = load_topology(preset)
    return G.nodes[gpu_nodes(G)[0]]["device"]


@functools.lru_cache(maxsize=1)
def _cuda_device() -> str | None:
    """The first CUDA device's name, asked in a child process (this one must not initialise CUDA); asked once
    per process (the child imports torch: about 4 s of CPU)."""
    done = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.get_device_name(0) "
                           "if torch.cuda.is_available() else '')"], capture_output=True, text=True)
    return done.stdout.strip() or None


def _sustained(quick: bool, fill: str, record: Path) -> dict:
    """``experiments.sustained_gemm`` in a process of its own (printed first); its JSON, also written to ``record``."""
    size, dtype, seconds = SUSTAINED_QUICK if quick else SUSTAINED
    args = ["--size", str(size), "--dtype", dtype, "--seconds", str(seconds), "--fill", fill]
    print("$ python -m experiments.sustained_gemm " + " ".join(args), flush=True)
    done = subprocess.run([sys.executable, "-m", "experiments.sustained_gemm", *args], capture_output=True, text=True,
                          cwd=ROOT)
    if done.returncode:
        raise RuntimeError(f"sustained_gemm failed (exit {done.returncode}): {done.stderr.strip().splitlines()[-1:]}")
    record.write_text(done.stdout)
    return json.loads(done.stdout)


def _sustained_lines(results: list[dict], preset: str) -> list[str]:
    """The summary's lines for the sustained runs, with the preset's modelled rate at that shape."""
    device = _device(preset)
    lines = ["| sustained GEMM | dtype | operands | first second TFLOP/s | after TFLOP/s | GEMMs |", "|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {'x'.join(map(str, r['shape']))} | {r['dtype']} | {r['fill']} | {r['first_tflops']:,.1f} | "
                     f"{r['sustained_tflops']:,.1f} | {r['gemms']:,} |")
    m, k, n = results[0]["shape"]
    modelled = 2.0 * m * k * n / ComputeModel().gemm_time_s(device, results[0]["dtype"], m, k, n) / 1e12
    return lines + [f"{preset}'s compute model at this shape: {modelled:,.1f} TFLOP/s ({device['name']})"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.gpu_check", description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="gpu_check", help="folder for the records and summary.md")
    parser.add_argument("--preset", default="dgx-h200", help="the preset whose compute model is fitted")
    parser.add_argument("--backend", choices=("nccl", "gloo"), default="nccl")
    parser.add_argument("--quick", action="store_true", help="small shapes and few iterations (CPU smoke test)")
    args = parser.parse_args(argv)
    device = _cuda_device()
    if args.backend == "nccl" and device is None:
        print("gpu_check: --backend nccl needs a CUDA GPU and torch built with CUDA, and none is visible; "
              "valid here: --backend gloo --quick (the CPU smoke test)", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    shapes = QUICK_SHAPES if args.quick else SHAPES
    reps = ["--warmup", "1", "--iters", "2"] if args.quick else ["--warmup", "3", "--iters", "10"]
    peaks = _device(args.preset)["peak_tflops"] if args.backend == "nccl" else {}
    lines = [f"# gpu_check {datetime.date.today().isoformat()}: {device or 'CPU'} "
             f"({args.backend}, compute model of {args.preset})", "",
             "| gemm M x K x N | dtype | time (us) | TFLOP/s | of peak |", "|---|---|---|---|---|"]
    fitted = []
    with Progress("gpu_check", total=2 * len(DTYPES) + 2 + len(FILLS), unit="step") as progress:
        for dtype in DTYPES:
            record_file = out / f"gemm_{dtype}.json"
            tpsim(["bench", "--backend", args.backend, "--nproc", "1", "--ops", "gemm", "--gemm-shapes",
                   ",".join(shapes), "--dtype", dtype, *reps, "-o", str(record_file)], out / f"bench_{dtype}.txt")
            progress.update()
            lines += gemm_rows(json.loads(record_file.read_text()), peaks.get(dtype))
            fit = json.loads(tpsim(["calibrate", "--from-bench", str(record_file), "--topology", args.preset,
                                    "-o", str(out / f"calibrated_{dtype}.yaml"), "--json"], out / f"calibrate_{dtype}.txt"))
            progress.update()
            base = fit["base_parameters"]
            fitted += [f"- {dtype}: " + ", ".join(f"{key} {base.get(key, '-'):.4g} -> {value:.4g}"
                                                  for key, value in sorted(fit["parameters"].items()))]
        size = ["--m", "512", "--hidden", "256"] if args.quick else ["--m", "8192", "--hidden", "4096"]
        ran = tpsim(["run", "--backend", args.backend, "--nproc", "1", "--algo", "1d", "--gpus", "1", "--workload",
                     "mlp", *size, "--dtype", "bfloat16", "-o", str(out / "run.json")], out / "run.txt")
        progress.update()
        print("$ pytest -m gpu tests/executor/test_gpu.py", flush=True)
        tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "gpu", "tests/executor/test_gpu.py"],
                               capture_output=True, text=True, cwd=ROOT)
        (out / "pytest_gpu.txt").write_text(tests.stdout + tests.stderr)
        progress.update()
        sustained = []
        for fill in FILLS:
            sustained.append(_sustained(args.quick, fill, out / f"sustained_{fill}.json"))
            progress.update()
    last_test_line = (tests.stdout.strip().splitlines() or ["(no output)"])[-1]
    lines += ["", "Compute model fitted (preset -> fitted):", *fitted, "",
              "Run at world size 1: " + ran.strip().splitlines()[0], "",
              f"pytest -m gpu tests/executor/test_gpu.py: {last_test_line}", "",
              *_sustained_lines(sustained, args.preset)]
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if tests.returncode in (0, 5) else 1  # 5: every test skipped (no GPU in the gloo smoke test)


if __name__ == "__main__":
    sys.exit(main())

"""Every published training table at once with every GEMM capped at a flat fraction of peak.

What it shows: whether one sustained GEMM rate moves all of tpsim's training-step reproductions the same
way (``repro_training``: Korthikanti et al. 2022 Tables 4-5; ``repro_pipeline``: Narayanan et al. 2021
Table 1 and Korthikanti Table 5; ``repro_fsdp``: llm-foundry and torchtitan), which is the test a
compute-model constant has to pass before it is changed: one table alone would be fitting. The presets
cap each GEMM at the device's published large-GEMM rate (A100: 83% of peak sustained, ``docs/compute.md``);
here every preset graph is built with ``sim.gemm_efficiency`` set to the cap instead (what a calibration
sets), the shape factor still applied (``experiments.gemm_cap.presets_capped``).

Usage: ``python -m experiments.gemm_cap_sweep [--cap 0.75] [--tables training,pipeline,fsdp]``;
prints, per table, the geomean and largest error and each row's error. About 2 minutes.
"""

from __future__ import annotations

import argparse
import math

from experiments.gemm_cap import presets_capped

__all__ = ["errors", "cli"]


def errors(table: str) -> list[float]:
    """tpsim / published - 1 for every row of ``table`` ("training", "pipeline" or "fsdp")."""
    if table == "training":
        from experiments.repro_training import comparisons
    elif table == "pipeline":
        from experiments.repro_pipeline import comparisons
    else:
        from experiments.repro_fsdp import comparisons
    return [row.predicted / row.published - 1 for row in comparisons()]


def _summary(errs: list[float]) -> str:
    geomean = math.exp(sum(math.log(1 + abs(e)) for e in errs) / len(errs)) - 1
    return f"geomean {geomean:.1%}, largest {max(errs, key=abs):+.1%}, {len(errs)} rows"


def cli(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cap", type=float, default=0.75, help="the GEMM cap, in (0, 1] (default 0.75)")
    parser.add_argument("--tables", default="training,pipeline,fsdp", help="which reproductions (default all)")
    args = parser.parse_args(argv)
    tables = args.tables.split(",")
    if not 0 < args.cap <= 1 or any(t not in ("training", "pipeline", "fsdp") for t in tables):
        parser.error("--cap: a value in (0, 1]; --tables: training, pipeline, fsdp")
    # The reproductions are imported inside the block (``errors``), so that what they build is capped too.
    with presets_capped(args.cap):
        for table in tables:
            errs = errors(table)
            print(f"cap {args.cap:g} {table}: {_summary(errs)}; " + " ".join(f"{e:+.0%}" for e in errs), flush=True)


if __name__ == "__main__":
    cli()

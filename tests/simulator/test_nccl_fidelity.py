"""Smoke test of experiments/nccl_fidelity.py --quick: one row per quick log, totals, the four targets.

The numbers move whenever the collective algorithms change, so this holds the table's shape, that every
cell is a finite error, and that each calibrated row names a training set other than its own log. How long
the quick mode takes is a benchmark's question, not this test's: a wall-clock bound flakes on a loaded host.
"""

from __future__ import annotations

import contextlib
import io
import re

from experiments import nccl_fidelity


def test_quick_mode_prints_the_table_and_the_targets():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        nccl_fidelity.main(["--quick"])
    lines = out.getvalue().splitlines()
    rows = [line for line in lines if line.startswith("| ") and line.split("|")[1].strip().endswith(".log")]
    assert [row.split("|")[1].strip() for row in rows] == sorted(nccl_fidelity.QUICK)
    for row in rows:
        cells = [cell.strip() for cell in row.split("|")[1:-1]]
        assert all(re.fullmatch(r"\d+\.\d% / \d+\.\d%", cell) for cell in cells[4:6] + cells[7:9]), row
        assert cells[6] in ("2, 4, 8 GPUs", "other run", "other tests"), row
    assert any(line.startswith("| all 3 logs") for line in lines)
    assert [line.rsplit(":", 1)[0] for line in lines if line.startswith("target ")] == \
        [f"target {target}" for target in nccl_fidelity.TARGETS]

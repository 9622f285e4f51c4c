"""experiments.step_calibration: the groups, the entries built from the repro scripts' commands, one quick group."""

from __future__ import annotations

import csv
import math
import shlex

import pytest

from experiments import repro_fsdp, repro_pipeline, step_calibration
from experiments.fsdp_tables import MOSAICML
from experiments.pipeline_tables import KORTHIKANTI_TABLE5, NARAYANAN_TABLE1


def test_each_group_is_one_gpu_kind_in_table_order():
    names = [g.name for g in step_calibration.GROUPS]
    assert names == ["llm-foundry H100 80GB", "llm-foundry A100 80GB", "llm-foundry A100 40GB", "Megatron A100 80GB"]
    fsdp = [r for g in step_calibration.GROUPS[:3] for r in g.runs]
    assert sorted(map(id, fsdp)) == sorted(id(r) for r in MOSAICML)  # every llm-foundry row, once
    assert step_calibration.GROUPS[3].runs == NARAYANAN_TABLE1 + KORTHIKANTI_TABLE5


def test_entries_are_the_repro_scripts_commands_and_the_published_figures():
    fsdp = step_calibration.entries(step_calibration.GROUPS[0])[0]
    run = step_calibration.GROUPS[0].runs[0]
    assert shlex.split(fsdp.predict) == repro_fsdp.command(run)[1:]
    assert (fsdp.measure, fsdp.value) == ("tokens_per_s_per_gpu", run.tokens_per_s_per_gpu)
    megatron = step_calibration.entries(step_calibration.GROUPS[3])
    assert shlex.split(megatron[0].predict) == repro_pipeline.command(NARAYANAN_TABLE1[0])[1:]
    assert megatron[-1].value == KORTHIKANTI_TABLE5[-1].step_s and megatron[-1].measure == "step_s"


def test_a_table_1_step_is_the_papers_flop_count_over_its_rate():
    # 1.7B: 96 B s l h^2 (1 + s/6h + V/16lh) = 96 x 512 x 2048 x 24 x 2304^2 x 1.2944 FLOPs at 137 TFLOP/s x 32.
    run = NARAYANAN_TABLE1[0]
    flops = 96 * 512 * 2048 * 24 * 2304 ** 2 * (1 + 2048 / (6 * 2304) + 51200 / (16 * 24 * 2304))
    assert step_calibration.narayanan_step_s(run) == pytest.approx(flops / (137e12 * 32))


def test_one_quick_group_fits_each_row_and_all(tmp_path):
    group = step_calibration.GROUPS[0]
    rows, summary = step_calibration.group_result(group, quick=True)
    n = step_calibration.QUICK_ROWS
    assert len(rows) == n and summary["rows"] == n and summary["first_row"] == rows[0]["row"]
    # The stated rule: the first row's own fit is a root, so it reproduces that row exactly.
    assert rows[0]["first_fit_s"] == pytest.approx(rows[0]["measured_s"], rel=1e-6)
    assert all(0.05 <= r["own_efficiency"] <= 1.0 for r in rows)
    assert summary["each_min"] <= summary["each_median"] <= summary["each_max"]
    assert summary["first_efficiency"] == rows[0]["own_efficiency"]

    # The fit on all rows minimises the rms log error over them: no one-row fit does better there.
    def rms(ratios):
        return math.sqrt(sum(math.log(r) ** 2 for r in ratios) / len(ratios))

    timed = step_calibration.timed_group(group, quick=True)
    best = rms([r["all_fit_s"] / r["measured_s"] for r in rows])
    assert all(best <= rms([t.step_s(r["own_efficiency"]) / t.measured_s for t in timed]) + 1e-9 for r in rows)
    path = tmp_path / "s.csv"
    step_calibration._write_csv(str(path), rows)
    with open(path) as handle:
        read = list(csv.DictReader(handle))
    assert len(read) == n and tuple(read[0]) == step_calibration.CSV_FIELDS

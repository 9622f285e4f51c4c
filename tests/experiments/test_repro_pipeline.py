"""experiments.repro_pipeline: the --quick form CI runs, the published tables' own consistency, the sensitivity."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from experiments import repro_pipeline
from experiments.pipeline_tables import BLOOM_176B, KORTHIKANTI_TABLE5, NARAYANAN_TABLE1, SMITH_2022, VOCAB
from experiments.published import Comparison
from simulator.workloads.model_file import load_model_file
from simulator.workloads.models import preset

ROOT = Path(__file__).resolve().parents[2]


def _narayanan_tflops(run, vocab: int) -> float:
    """Narayanan et al. 2021's count (section 5.1) of ``run`` at its published step time, teraFLOP/s per GPU."""
    B, s, l, h = run.global_batch, 2048, run.layers, run.hidden
    return 96 * B * s * l * h * h * (1 + s / (6 * h) + vocab / (16 * l * h)) / (run.gpus * run.step_s) / 1e12


def test_the_published_rows_agree_with_their_own_aggregate_column():
    # Table 1's aggregate petaFLOP/s column, as printed, is per-GPU teraFLOP/s times GPUs within rounding.
    aggregate = [4.4, 8.8, 18.2, 34.6, 70.8, 143.8, 227.1, 297.4, 410.2, 502.0]
    for run, published in zip(NARAYANAN_TABLE1, aggregate):
        assert run.tflops_per_gpu * run.gpus / 1000 == pytest.approx(published, rel=0.012), run.name
        assert run.gpus % (run.tp * run.pp) == 0 and run.layers % run.pp == 0
    assert all(run.step_s > 0 and run.micro_batch >= 1 for run in KORTHIKANTI_TABLE5)


def test_quick_run_writes_its_rows_with_the_commands_that_reproduce_them(tmp_path, capsys):
    out_csv, out_png = tmp_path / "r.csv", tmp_path / "r.png"
    repro_pipeline.cli(["--quick", "--csv", str(out_csv), "--png", str(out_png)])
    rows = list(csv.DictReader(out_csv.open()))
    assert out_png.stat().st_size > 0
    assert [r["claim"] for r in rows] == ["1.7B TFLOP/s per GPU", "3.6B TFLOP/s per GPU", "7.5B TFLOP/s per GPU",
                                          "18.4B TFLOP/s per GPU", "22B full recompute s per iteration",
                                          "22B sequence parallel + selective s per iteration"]
    for r in rows:
        assert r["commands"].startswith("tpsim predict ") and "--attention unfused" in r["commands"]
        # tpsim is optimistic on every row (the README and experiments/README say why); within these bounds
        ratio = float(r["ratio"])
        assert (1.0 < ratio < 1.3) if r["unit"] == "TFLOP/s" else (0.8 < ratio < 1.0), r
    assert "geomean error" in capsys.readouterr().out


def test_a_lower_gemm_cap_lowers_every_row_and_070_brings_them_within_5_percent():
    # With the step's work outside the layers counted (optimizer passes, reduction after the backward) and
    # Megatron-LM's fused elementwise kernels, a cap of 0.7 brings all four rows within 5%; 0.75 overshoots
    # the smaller two (before the fusion 0.75 brought them within 8%).
    for name, published, (at_70, at_75) in repro_pipeline.sensitivity((0.7, 0.75)):
        assert at_70 < at_75, name
        assert abs(at_70 / published - 1) < 0.05, (name, at_70, published)


def test_the_megatron_deepspeed_rows_agree_with_their_sources_own_counts():
    # MT-NLG's section 2.4 prints both figures per scale; Narayanan's count of its step time gives its TFLOP/s
    # (50.2 s is rounded: 120.4 against 121), so the rows are full recompute at vocabulary 51,200.
    assert [(r.gpus, r.dp, r.step_s, r.tflops_per_gpu) for r in SMITH_2022] == [
        (2240, 8, 60.1, 126), (2800, 10, 50.2, 121), (3360, 12, 44.4, 113)]
    for run in SMITH_2022:
        assert _narayanan_tflops(run, VOCAB) == pytest.approx(run.tflops_per_gpu, rel=0.006), run.name
        assert run.source.startswith("Smith et al. 2022, arXiv 2201.11990") and run.schedule == "1f1b"
    # BLOOM's log line: 104.70 s and 149.77 TFLOPs, the same count with its 250,880-word vocabulary.
    (bloom,) = BLOOM_176B
    assert (bloom.tp, bloom.pp, bloom.dp, bloom.micro_batch, bloom.zero) == (4, 12, 8, 2, 1)
    assert _narayanan_tflops(bloom, 250880) == pytest.approx(bloom.tflops_per_gpu, rel=0.001)
    assert "tr11-176B-ml.slurm at dc8d99ff" in bloom.source and "README.md at 39ed8110" in bloom.source
    # Its 70 layers do not divide by 12 stages; the stand-in cut does, 5 blocks a stage as BLOOM's end stages.
    assert bloom.layers % bloom.pp and bloom.pipelined_layers // bloom.pp == 5 and not bloom.pipelined_layers % bloom.pp


def test_the_model_files_count_the_published_parameters():
    bloom = load_model_file(str(ROOT / BLOOM_176B[0].model))
    # BLOOM's 176,247,271,424 weights have no position table but an embedding LayerNorm (2h); the stand-in
    # learned positions add seq x h.
    assert bloom.parameter_count() == 176_247_271_424 + 2048 * 14336 - 2 * 14336
    assert bloom.vocab == 250880 and bloom.layers == 70
    # OPT-175B is GPT-3 175B's shape with 15 more embedding rows (50,272 against 50,257).
    opt = load_model_file(str(ROOT / "experiments" / "models" / "opt-175b.yaml"))
    assert opt.parameter_count() == preset("gpt3-175b").parameter_count() + (50272 - 50257) * 12288


def test_a_megatron_deepspeed_row_runs_pinned_as_its_source_says():
    (bloom,) = BLOOM_176B
    assert repro_pipeline.command(bloom) == [
        "predict", "--model", "experiments/models/bloom-176b.yaml", "--layers", "60", "--attention", "unfused",
        "--topology", "server=dgx-a100-80gb,servers=48,nics=4,nic_Gbps=100", "--gpus", "384",
        "--global-batch", "2048", "--recompute", "full",
        "--zero", "1", "--no-overlap-grad-reduce", "--no-gradient-accumulation-fusion",
        "--no-async-tensor-model-parallel-allreduce", "--deepspeed-bf16-optimizer", "--tp-sizes", "4",
        "--pp-sizes", "12", "--algos", "1d", "--simulate-top", "1", "--schedule", "1f1b", "--batch", "2"]
    assert "--schedule 1f1b" in " ".join(repro_pipeline.command(SMITH_2022[0]))
    assert "--deepspeed-bf16-optimizer" not in repro_pipeline.command(SMITH_2022[0])  # before DeepSpeed had bf16
    row = repro_pipeline.predicted_row(bloom)
    assert (row["tp"], row["pp"], row["dp"], row["micro_batch"], row["schedule"]) == (4, 12, 8, 2, "1f1b")
    # tpsim is optimistic on DeepSpeed's pipeline (experiments/README says by how much and what it suggests)
    assert 0.7 < row["step_time_s"] / bloom.step_s < 1.0


def test_the_summary_gives_the_two_families_apart():
    def fake(paper, ratio):
        return Comparison(paper=paper, claim="c", configuration="x", published=1.0, predicted=ratio, unit="s",
                          source="")
    rows = [fake("Narayanan et al. 2021", 1.1), fake("Smith et al. 2022", 0.8), fake("Le Scao et al. 2022", 0.8)]
    lines = repro_pipeline.summary(rows).splitlines()
    assert lines[0].startswith("geomean error") and "over 3 published figures" in lines[0]
    assert "Megatron-LM tables: geomean error 10.0% over 1" in lines[1]
    assert "Megatron-DeepSpeed runs: geomean error 25.0% over 2" in lines[2]
    assert len(repro_pipeline.summary(rows[:1]).splitlines()) == 1

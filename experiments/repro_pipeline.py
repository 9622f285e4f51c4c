"""Pipelined GPT training on A100 80 GB servers, published vs predicted: Narayanan et al. 2021 Table 1,
Korthikanti et al. 2022 Table 5, MT-NLG 530B and BLOOM 176B, and what ``tpsim predict`` itself chooses.

What it shows: how close tpsim's whole training step (tensor x pipeline x data parallelism,
``simulator.pipeline.stage_step``) comes to the published Megatron-LM runs it can express, with each
row's configuration pinned as the paper states it (``experiments.pipeline_tables``: tensor and pipeline
sizes, GPUs, global batch; the micro-batch where the paper gives it, else searched; the schedule
searched between 1F1B and interleaved 1F1B, which the table does not state), on Selene's hardware as the
``dgx-a100-80gb`` preset (8 x A100 80 GB, NVSwitch, 8 x HDR per server), 2021-22 software as the papers
ran it: the unfused attention kernel (FlashAttention came later), no distributed optimizer (ZeRO-0), the
gradients reduced after the backward, not under it (``--no-overlap-grad-reduce``), for Table 1 (April
2021) no gradient accumulation fusion (``--no-gradient-accumulation-fusion``; Megatron-LM added it in
February 2022, before Table 5's runs) and no asynchronous dX all-reduce beside the dW GEMM
(``--no-async-tensor-model-parallel-allreduce``; Megatron-LM added it, on by default, in September 2021), full
activation recomputation for Table 1 (its TFLOP/s count the recomputed forward, section 5.1), dropout 0.1,
vocabulary 51,200.

- Table 1 rows: achieved teraFLOP/s per GPU, published against tpsim's hardware TFLOP/s per GPU (the
  same formula, 96 B s l h^2 (1 + s/6h + V/16lh) over the step time and the GPUs).
- Table 5 rows: seconds per iteration, full recomputation (1-D tensor parallelism) and sequence
  parallelism with selective recomputation (1d-sp), micro-batch as Table 3 gives it.
- MT-NLG 530B (Smith et al. 2022, three scales) and BLOOM 176B (BigScience's run): seconds per iteration on
  Megatron-DeepSpeed, pinned as ``experiments.pipeline_tables`` says: DeepSpeed's pipeline engine (1F1B, no
  interleaving, ``--schedule 1f1b``; the gradients reduced after the last micro-batch), full activation
  checkpointing, bf16 with fp32 gradients, and (both forks predating them) neither gradient accumulation
  fusion nor the asynchronous dX all-reduce; BLOOM with its micro-batch 2, ZeRO-1 (its BF16_Optimizer) and
  its model file. ``variations`` reruns them with the suspected causes varied.
- ``--search`` (off by default: minutes): for each Table 1 model up to 1,024 GPUs, the plan ``predict``
  picks with every dimension free, against the published configuration.
- ``sensitivity``: the suspected cause of the rows' common optimism varied. Table 1's rows without pipelines
  timed again with every GEMM capped at a flat fraction of peak (``gemm_efficiency``, what a calibration
  sets) instead of the published large-GEMM rate the presets carry (``docs/compute.md``).

Each row's command is the ``tpsim predict`` line that produces its figure. Deterministic. ``--quick`` (the
CI smoke test) runs the four Table 1 rows without pipeline parallelism and the 22B rows of Table 5, and
writes to a temporary folder unless ``--csv`` / ``--png`` are given.

    python -m experiments.repro_pipeline [--quick] [--search] [--csv FILE] [--png FILE]
"""

from __future__ import annotations

import sys
from dataclasses import replace

from experiments.block_time import topology
from experiments.gemm_cap import capped_preset
from experiments.gemm_cap import presets_capped
from experiments.pipeline_tables import (BLOOM_176B, KORTHIKANTI_TABLE5, NARAYANAN_TABLE1, SEQ, SMITH_2022, VOCAB,
                                         PipelineRun)
from experiments.published import Comparison, error_summary, report, script_arguments, tpsim_json
from simulator.algorithms.arrangement import Arrangement
from simulator.training.arrangement import TrainingArrangement
from simulator.training.step import StepOptions, step_time
from simulator.workloads.workload import Workload

__all__ = ["command", "predicted_row", "comparisons", "sensitivity", "variations", "summary", "cli"]

NAME = "repro_pipeline"
PRESET = "dgx-a100-80gb"
GPUS_PER_SERVER = 8
DROPOUT = 0.1
ATTENTION = "unfused"
SEARCH_LIMIT_GPUS = 1024
"""``--search`` plans models on at most this many GPUs (the free search of 3,072 takes many minutes)."""


DEEPSPEED_RUNS = SMITH_2022 + BLOOM_176B
"""The Megatron-DeepSpeed runs: their forks took Megatron-LM's code of early 2021 (microsoft/Megatron-DeepSpeed
merged NVIDIA's later commits only in July 2023), so no gradient accumulation fusion, no asynchronous dX."""

_BEFORE_SEPTEMBER_2021 = {r.source for r in NARAYANAN_TABLE1 + DEEPSPEED_RUNS}
"""Sources whose runs had neither gradient accumulation fusion nor the asynchronous dX all-reduce (by source,
so that a variation of a row keeps its software)."""


def _model_flags(run: PipelineRun) -> list[str]:
    if run.model is not None:  # the model file carries sizes, vocabulary, dropout and architecture
        shape = ["--model", run.model] + (["--layers", str(run.pipelined_layers)] if run.pipelined_layers else [])
    else:
        shape = ["--workload", "transformer", "--hidden", str(run.hidden), "--heads", str(run.heads), "--seq", str(SEQ),
                 "--layers", str(run.layers), "--vocab", str(VOCAB), "--dropout", str(DROPOUT)]
    return shape + ["--attention", ATTENTION, "--topology", run.topology or f"{PRESET}:{run.gpus // GPUS_PER_SERVER}",
                    "--gpus", str(run.gpus), "--global-batch", str(run.global_batch)]


def command(run: PipelineRun, pinned: bool = True) -> list[str]:
    """The ``tpsim predict`` arguments of ``run``: its published configuration pinned, or (``pinned`` False)
    only its model, GPUs, batch and recomputation, every parallel dimension left to the search."""
    # No distributed optimizer then, and the gradients reduced after the backward (Megatron-LM's
    # allreduce_gradients of 2021-22; --overlap-grad-reduce came in 2023).
    argv = ["predict", *_model_flags(run), "--recompute", run.recompute, "--zero", str(run.zero),
            "--no-overlap-grad-reduce"]
    if run.source in _BEFORE_SEPTEMBER_2021:  # Megatron-LM of April 2021 (and the Megatron-DeepSpeed forks):
        # gradient accumulation fusion came in February 2022, the asynchronous dX all-reduce beside the dW GEMM
        # in September 2021 (commit 16c90445, made the default by 3f652469, both 2021-09-02): these runs
        # all-reduced dX before the dW GEMM.
        argv += ["--no-gradient-accumulation-fusion", "--no-async-tensor-model-parallel-allreduce"]
    if run.bf16_optimizer:  # DeepSpeed's BF16_Optimizer: a cast to fp32 before each micro-batch's add
        argv.append("--deepspeed-bf16-optimizer")
    if not pinned:
        return argv
    argv += ["--tp-sizes", str(run.tp), "--pp-sizes", str(run.pp), "--algos", "1d-sp" if run.sequence_parallel else "1d",
             "--simulate-top", "1"] + (["--schedule", run.schedule] if run.schedule else [])
    return argv + (["--batch", str(run.micro_batch)] if run.micro_batch is not None else [])


def predicted_row(run: PipelineRun, pinned: bool = True) -> dict:
    """The best fitting row ``predict`` prints for ``run`` (``--json``)."""
    rows = tpsim_json(command(run, pinned))
    fitting = [r for r in rows if r["status"] == "ok" and r["fits"] is not False]
    if not fitting:
        reason = rows[0]["reason"] if rows else "no row"
        raise SystemExit(f"{run.name}: no fitting row ({reason})")
    return fitting[0]


def _split(row: dict) -> str:
    return (f"{row['arrangement']}, micro-batch {row['micro_batch']}: step {row['step_time_s']:.2f} s = compute "
            f"{row['compute_s']:.2f} + TP comm {row['tp_comm_s']:.2f} + bubble {row['bubble_s']:.2f} + PP comm "
            f"{row['pp_comm_s']:.2f} + DP comm {row['dp_comm_s']:.2f} s")


def _table1(run: PipelineRun) -> Comparison:
    row = predicted_row(run)
    return Comparison(paper="Narayanan et al. 2021", claim=f"{run.name} TFLOP/s per GPU",
                      configuration=f"tp {run.tp} x pp {run.pp} x dp {run.dp}, {run.gpus} GPUs, batch {run.global_batch}",
                      published=run.tflops_per_gpu, predicted=row["tflops_per_gpu"], unit="TFLOP/s",
                      source=run.source, explanation=_split(row), commands=("tpsim " + " ".join(command(run)),))


def _table5(run: PipelineRun) -> Comparison:
    row = predicted_row(run)
    return Comparison(paper="Korthikanti et al. 2022", claim=f"{run.name} s per iteration",
                      configuration=f"tp {run.tp} x pp {run.pp} x dp {run.dp}, {run.gpus} GPUs, batch "
                                    f"{run.global_batch}, micro-batch {run.micro_batch}",
                      published=run.step_s, predicted=row["step_time_s"], unit="s", source=run.source,
                      explanation=_split(row), commands=("tpsim " + " ".join(command(run)),))


def _paper(run: PipelineRun) -> str:
    """The authors and year that open ``run.source``, e.g. ``Smith et al. 2022``."""
    return run.source.split(",")[0]


def _deepspeed(run: PipelineRun) -> Comparison:
    row = predicted_row(run)
    micro = f"micro-batch {run.micro_batch}" if run.micro_batch else f"micro-batch searched: {row['micro_batch']}"
    return Comparison(paper=_paper(run), claim=f"{run.name} s per iteration",
                      configuration=f"tp {run.tp} x pp {run.pp} x dp {run.dp}, {run.gpus} GPUs, batch "
                                    f"{run.global_batch}, {micro}, 1F1B, ZeRO-{run.zero}",
                      published=run.step_s, predicted=row["step_time_s"], unit="s", source=run.source,
                      explanation=_split(row) + (_BF16_OPTIMIZER if run.bf16_optimizer else ""),
                      commands=("tpsim " + " ".join(command(run)),))


_BF16_OPTIMIZER = ("; gradients accumulated as DeepSpeed's BF16_Optimizer (--deepspeed-bf16-optimizer: "
                   "update_hp_grads casts each micro-batch's to fp32 before adding, DeepSpeed 5ea1c60f8)")


def _search(run: PipelineRun) -> Comparison:
    published, chosen = predicted_row(run), predicted_row(run, pinned=False)
    return Comparison(paper="Narayanan et al. 2021", claim=f"{run.name}: predict's plan over the published one",
                      configuration=f"{run.gpus} GPUs, batch {run.global_batch}; published tp {run.tp} x pp {run.pp}",
                      published=published["step_time_s"], predicted=chosen["step_time_s"], unit="s",
                      source=run.source, explanation=f"chosen: {_split(chosen)}; published: {_split(published)}",
                      commands=("tpsim " + " ".join(command(run, pinned=False)),))


def comparisons(quick: bool = False, search: bool = False) -> list[Comparison]:
    """Table 1's rows, Table 5's rows, and (``search``) predict's own plans; ``quick`` as the module says."""
    table1 = [r for r in NARAYANAN_TABLE1 if not quick or r.pp == 1]
    table5 = [r for r in KORTHIKANTI_TABLE5 if not quick or r.pp == 1]
    rows = [_table1(r) for r in table1] + [_table5(r) for r in table5]
    if not quick:
        rows += [_deepspeed(r) for r in DEEPSPEED_RUNS]
    if search and not quick:
        rows += [_search(r) for r in NARAYANAN_TABLE1 if r.gpus <= SEARCH_LIMIT_GPUS]
    return rows


def sensitivity(caps: tuple[float, ...] = (0.7, 0.75)) -> list[tuple[str, float, list[float]]]:
    """(row, published TFLOP/s, tpsim's TFLOP/s at each GEMM cap of ``caps``) for Table 1's rows without
    pipelines, each at the micro-batch the pinned plan chose."""
    out = []
    for run in (r for r in NARAYANAN_TABLE1 if r.pp == 1):
        chosen = predicted_row(run)
        block = Workload.transformer(chosen["micro_batch"], SEQ, run.hidden, run.heads, 4 * run.hidden, DROPOUT,
                                     attention=ATTENTION)
        options = StepOptions(global_batch=run.global_batch, layers=run.layers, vocab=VOCAB, recompute=run.recompute,
                              overlap_grad_reduce=False, gradient_accumulation_fusion=False)
        arrangement = TrainingArrangement(Arrangement("1d", (run.tp,)), run.dp)
        rates = []
        for cap in caps:
            G, router = topology(capped_preset(f"{PRESET}:{run.gpus // GPUS_PER_SERVER}", cap))
            rates.append(step_time(G, arrangement, block, options, router=router).tflops_per_gpu)
        out.append((run.name, run.tflops_per_gpu, rates))
    return out


def variations(cap: float = 0.75) -> list[tuple[str, str, float, float]]:
    """(row, variation, published s, tpsim s) for each Megatron-DeepSpeed row: as pinned, with every GEMM capped
    at ``cap`` of peak (the Megatron-LM tables' common optimism), and the row's own doubt varied (MT-NLG's
    unpublished micro-batch at 2, BLOOM's stages cut at 72 layers instead of 60)."""
    out = []
    for run in DEEPSPEED_RUNS:
        out.append((run.name, "as pinned", run.step_s, predicted_row(run)["step_time_s"]))
        with presets_capped(cap):
            out.append((run.name, f"GEMM cap {cap:g}", run.step_s, predicted_row(run)["step_time_s"]))
        if run.model is None:
            other, label = replace(run, micro_batch=2), "micro-batch 2"
        else:
            other, label = replace(run, pipelined_layers=72), "72 layers (6 a stage)"
        out.append((run.name, label, run.step_s, predicted_row(other)["step_time_s"]))
    return out


def summary(rows: list[Comparison]) -> str:
    """Geomean of |error| and the largest error over the published-figure rows (not the search rows), then the
    same over the Megatron-LM tables and over the Megatron-DeepSpeed runs apart, when both are there."""
    figures = [r for r in rows if "predict's plan" not in r.claim]
    lines = [error_summary(figures).replace(", largest", f" over {len(figures)} published figures, largest", 1)]
    deepspeed = [r for r in figures if r.paper in {_paper(run) for run in DEEPSPEED_RUNS}]
    megatron = [r for r in figures if r not in deepspeed]
    if deepspeed and megatron:
        for label, part in (("Megatron-LM tables", megatron), ("Megatron-DeepSpeed runs", deepspeed)):
            lines.append(f"  {label}: " + error_summary(part).replace(", largest", f" over {len(part)}, largest", 1))
    return "\n".join(lines)


def cli(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = script_arguments(__doc__.splitlines()[0], NAME, argv,
                            extra=[("--search", "also plan each model up to 1,024 GPUs with every dimension free")])
    rows = comparisons(args.quick, args.search)
    report(rows, args, "Megatron-LM and Megatron-DeepSpeed on A100 80 GB (Narayanan 2021, Korthikanti 2022, "
                       "MT-NLG 530B, BLOOM 176B): published vs tpsim")
    print(summary(rows))
    if not args.quick:
        caps = (0.7, 0.75)
        print("\nsensitivity: Table 1 without pipelines, TFLOP/s per GPU with every GEMM capped at a flat "
              "fraction of peak")
        print("| model | published | " + " | ".join(f"cap {c:g}" for c in caps) + " |")
        print("|---|---|" + "---|" * len(caps))
        for name, published, rates in sensitivity(caps):
            print(f"| {name} | {published:.0f} | " + " | ".join(f"{r:.1f} ({r / published - 1:+.0%})" for r in rates)
                  + " |")
        print("\nvariations: the Megatron-DeepSpeed runs, seconds per iteration")
        print("| run | variation | published | tpsim |")
        print("|---|---|---|---|")
        for name, label, published, predicted in variations():
            print(f"| {name} | {label} | {published:.1f} | {predicted:.1f} ({predicted / published - 1:+.0%}) |")


if __name__ == "__main__":
    cli()

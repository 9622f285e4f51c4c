"""NVIDIA's published NeMo / Megatron-Bridge pre-training throughput on H100, B200 and GB200, against tpsim.

What it shows: how close tpsim's whole training step comes to Megatron-Core runs on current hardware and
software (Transformer Engine FP8, sequence parallelism, TP communication overlap, the distributed optimizer
or Megatron FSDP, interleaved pipelines), row by row (``experiments.nemo_tables`` holds the rows, their
sources and the recipe settings behind them). Each row pins what the table prints and the recipe sets:
the model (tpsim's Llama presets, ``gpt3-175b`` with NeMo's dropout 0, NeMo's GPT3-5B and 20B as model
files in ``experiments/models``), sequence, GPUs, global and micro-batch, TP (``1d-sp`` when TP > 1: the
recipes run sequence parallel), PP and VP, ZeRO-1 (the distributed optimizer) or ZeRO-3 (Megatron FSDP,
``--use-megatron-fsdp``: Megatron-LM's optimizer passes, not PyTorch FSDP's),
``--tp-comm-overlap`` where the recipe overlaps (``--tp-comm-overlap-cfg``: the userbuffers config the recipe
names, ``NemoRun.tp_comm_overlap_cfg``), ``--grad-reduce-in-bf16`` where it reduces in bf16,
``--no-gradient-accumulation-fusion`` under Megatron FSDP, ``--dtype fp8`` with the row's ``--fp8-recipe``
(``NemoRun.fp8_recipe``: delayed, current or MXFP8 scaling, whose casts tpsim times), the attention kernel
the run ran (``NemoRun.attention``: cuDNN's fused attention on the Megatron-Bridge rows, FlashAttention-2
on NeMo 24.07's), Transformer Engine's norms (``--norm-kernel te``: Megatron-Core's TE layer specs run
TE's LayerNorm / RMSNorm, whose backward is one kernel), no recompute.
The cluster is the system's preset: ``dgx-h100``, ``dgx-b200``, ``gb200-nvl72`` (DGX-GB200: NVL72 racks).

The figure compared is tokens per second per GPU. tpsim's memory verdict is reported, not enforced: a row
tpsim thinks does not fit is timed all the same (the run did fit). What tpsim does not express is named in
the row: CPU activation offloading (GB200 FSDP rows: timed without recompute), recompute of 5 of 32 layers
(the H100 Llama 3 8B row: none, with ``full`` and the pro rata figure between them beside it), CUDA graphs.

For every row the explanation gives tpsim's step split, memory, and the attention core's share of tpsim's
compute. A full run varies every row's suspected causes (not only those over 5% off): the same command in
bf16 (no FP8 GEMM rate), with TP communication overlap flipped (TP > 1), with the FP8 GEMMs discounted from
the preset's best case as the A100's sustained rate is from its own (``SUSTAINED_OVER_BEST``, 258 / 271.2),
and the flat GEMM cap (``gemm_efficiency``, the fraction of each dtype's dense peak; ``experiments.gemm_cap``)
at which tpsim meets the published figure, found by bisection, beside the preset's own FP8 cap (its
best-case rate over the FP8 peak, normalised by the shape it was measured at: 0.73 on H100 (MAMF 1,402.6 of
1,979), 0.78 on B200, 0.76 on GB200). The caps do not touch the attention core; each row's "shows" says
what its variations point to.

Deterministic. The full run takes about 20 seconds; ``--quick`` (the CI smoke test) times four rows
without variations and writes to a temporary folder unless ``--csv`` / ``--png`` are given.

    python -m experiments.repro_nemo [--quick] [--csv FILE] [--png FILE]
"""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
import tempfile

from experiments.gemm_cap import capped_file
from experiments.nemo_tables import NOT_EXPRESSED, ROWS, NemoRun
from experiments.published import Comparison, error_summary, geomean_error, pinned_row, report, script_arguments
from simulator.compute import FP8, ComputeModel
from simulator.workloads.attention_cost import flash_time_s
from simulator.workloads.models import resolve_model
from topologies import gpu_nodes
from topologies.compute_rates import COMPUTE_RATES
from topologies.presets import build_preset

__all__ = ["Result", "model_args", "topology", "command", "predicted_row", "attention_share", "sustained_cap",
           "implied_cap",
           "results", "comparisons", "quick_runs", "summary", "cli"]

NAME = "repro_nemo"
MODELS = os.path.join("experiments", "models")
PRESETS = {"DGX-H100": ("dgx-h100", 8), "DGX-B200": ("dgx-b200", 8), "DGX-GB200": ("gb200-nvl72", 72)}
"""System -> (preset, GPUs per preset server): a DGX-GB200 is NVL72 racks."""
MODEL_ARGS = {"GPT3-5B": ["--model", os.path.join(MODELS, "nemo-gpt3-5b.yaml")],
              "GPT3-20B": ["--model", os.path.join(MODELS, "nemo-gpt3-20b.yaml")],
              "GPT3-175B": ["--model", "gpt3-175b", "--dropout", "0"],  # NeMo's GPTConfig175B: dropout 0.0
              "LLAMA2-7B": ["--model", "llama2-7b"], "LLAMA2-13B": ["--model", "llama2-13b"],
              "LLAMA2-70B": ["--model", "llama2-70b"], "LLAMA3_8B": ["--model", "llama3-8b"],
              "LLAMA3_70B": ["--model", "llama3-70b"]}
QUICK = (("24.07", "LLAMA2-7B", 8), ("25.11", "DGX-GB200", "LLAMA3_8B"), ("25.11", "DGX-B200", "LLAMA3_8B"),
         ("25.11", "DGX-H100", "LLAMA3_8B"))
"""The ``--quick`` rows, one server each: (container, model, GPUs) or (container, system, model)."""


def model_args(run: NemoRun) -> list[str]:
    """The ``--model`` flags of ``run``'s model."""
    return list(MODEL_ARGS[run.model])


def topology(run: NemoRun) -> str:
    """The preset cluster of ``run``'s system, enough servers (or racks) for its GPUs."""
    preset, per_server = PRESETS[run.system]
    return f"{preset}:{-(-run.gpus // per_server)}"


def command(run: NemoRun, topology_spec: str | None = None, dtype: str = "fp8", tp_comm_overlap: bool | None = None,
            recompute: str = "none") -> list[str]:
    """The ``tpsim predict`` arguments of ``run``; the keywords are the variations (module doc)."""
    argv = ["predict", *model_args(run), "--seq", str(run.seq), "--gpus", str(run.gpus),
            "--topology", topology_spec or topology(run), "--global-batch", str(run.global_batch),
            "--batch", str(run.micro_batch), "--tp-sizes", str(run.tp), "--pp-sizes", str(run.pp),
            "--algos", "1d-sp" if run.tp > 1 else "1d", "--zero", "3" if run.fsdp else "1",
            *(["--use-megatron-fsdp"] if run.fsdp else []),
            "--recompute", recompute, "--dtype", dtype, "--attention", run.attention, "--norm-kernel", "te",
            "--simulate-top", "1"]
    if dtype == "fp8":
        argv += ["--fp8-recipe", run.fp8_recipe]
    if run.vp > 1:
        argv += ["--virtual-stages", str(run.vp)]
    if run.tp > 1 and (run.tp_comm_overlap if tp_comm_overlap is None else tp_comm_overlap):
        argv.append("--tp-comm-overlap")
        if run.tp_comm_overlap and run.tp_comm_overlap_cfg:  # the recipe's tuned num_sm (its own overlap only)
            argv += ["--tp-comm-overlap-cfg", run.tp_comm_overlap_cfg]
    if run.grad_reduce_bf16:
        argv.append("--grad-reduce-in-bf16")
    if not run.gradient_accumulation_fusion:
        argv.append("--no-gradient-accumulation-fusion")
    return argv


predicted_row = pinned_row
"""The one row ``predict`` prints for a pinned command (``experiments.published.pinned_row``)."""


def _per_gpu(row: dict, run: NemoRun) -> float:
    return row["tokens_per_s"] / run.gpus


@functools.lru_cache(maxsize=None)
def _device(system: str) -> dict:
    G = build_preset(f"{PRESETS[system][0]}:1")
    return G.nodes[gpu_nodes(G)[0]]["device"]


def attention_share(run: NemoRun, row: dict) -> float:
    """The attention core's forward + backward time (at the rate of the row's kernel, ``NemoRun.attention``,
    as tpsim times it) on one GPU over the step, over tpsim's compute time of the step: how much of the
    prediction rests on that rate."""
    model = resolve_model(model_args(run)[1])
    head_dim = model.hidden // model.heads
    count = run.micro_batch * model.heads // run.tp
    one = sum(flash_time_s(_device(run.system), "bfloat16", (mode, count, run.seq, head_dim), run.attention)
              for mode in ("forward", "backward"))
    return one * model.layers / run.pp * row["micro_batches"] / row["compute_s"]


_A100 = COMPUTE_RATES["A100-SXM4-80GB"]
SUSTAINED_OVER_BEST = _A100.gemm_tflops["bfloat16"] / _A100.best_case_tflops
"""The one GPU with both a sustained and a best-case (MAMF) GEMM rate, the A100: 258 / 271.2 (He 2024 over
Bekman's MAMF table, ``topologies.compute_rates``)."""


def sustained_cap(run: NemoRun) -> float:
    """A flat GEMM cap of ``SUSTAINED_OVER_BEST`` times the preset's own FP8 cap on ``run``'s GPU: its best-case
    FP8 GEMM rate discounted as the A100's sustained rate is discounted from its best case."""
    return ComputeModel().cap(_device(run.system), FP8) * SUSTAINED_OVER_BEST


def _tokens(run: NemoRun, **variation) -> float:
    return _per_gpu(predicted_row(command(run, **variation)), run)


def implied_cap(run: NemoRun, folder: str, low: float = 0.2, high: float = 1.0, steps: int = 9) -> float | None:
    """The flat GEMM cap (fraction of the dense peak) at which tpsim's tokens/s meets ``run``'s, by bisection
    in [``low``, ``high``]; None when even ``high`` falls short (the gap is not the GEMM rate alone)."""
    def at(cap: float) -> float:
        return _tokens(run, topology_spec=capped_file(topology(run), round(cap, 4), folder))

    if at(high) < run.tokens_per_s_per_gpu:
        return None
    for _ in range(steps):
        middle = (low + high) / 2
        low, high = (middle, high) if at(middle) < run.tokens_per_s_per_gpu else (low, middle)
    return (low + high) / 2


@dataclasses.dataclass(frozen=True)
class Result:
    """One row: the published run, its comparison, the attention share, and (full runs) the variations."""

    run: NemoRun
    comparison: Comparison
    attention_share: float
    fits: bool
    bf16_ratio: float | None = None
    overlap_flipped_ratio: float | None = None
    sustained_ratio: float | None = None
    cap: float | None = None


def _split(row: dict) -> str:
    peak, usable = row["memory"]["peak_bytes"] / 1e9, row["device_memory_bytes"] / 1e9
    return (f"tpsim step {row['step_time_s']:.2f} s = compute {row['compute_s']:.2f} + TP comm {row['tp_comm_s']:.2f} "
            f"+ bubble {row['bubble_s']:.2f} + PP comm {row['pp_comm_s']:.2f} + DP comm {row['dp_comm_s']:.2f} s, "
            f"MFU {row['mfu']:.1%}, peak memory {peak:.1f} GB of {usable:.1f} usable"
            + (" (tpsim: does not fit)" if row["fits"] is False else ""))


def _result(run: NemoRun, vary_folder: str | None) -> Result:
    """``run`` predicted and explained; varied (module doc) when ``vary_folder`` is given."""
    argv = command(run)
    row = predicted_row(argv)
    ratio = _per_gpu(row, run) / run.tokens_per_s_per_gpu
    share = attention_share(run, row)
    kernel = {"cudnn": "cuDNN's fused attention", "flash": "FlashAttention-2"}[run.attention]
    notes = [_split(row), f"attention core ({kernel}) {share:.0%} of tpsim's compute"]
    if run.recompute_layers:
        full, none = _tokens(run, recompute="full"), _per_gpu(row, run)
        # block recompute costs each recomputed layer the same: its share of the way from none to full
        part = none + (full - none) * run.recompute_layers * run.pp / _layers(run)
        notes.append(f"every layer recomputed (--recompute full): {full:,.0f} ({full / run.tokens_per_s_per_gpu - 1:+.1%}); "
                     f"{run.recompute_layers * run.pp} of {_layers(run)} layers, pro rata: {part:,.0f} "
                     f"({part / run.tokens_per_s_per_gpu - 1:+.1%})")
    if run.note:
        notes.append(run.note)
    bf16 = flipped = sustained = cap = None
    if vary_folder is not None:  # every row, not only those over 5%: the variations cost seconds
        bf16 = _tokens(run, dtype="bfloat16") / run.tokens_per_s_per_gpu
        varied = [f"in bf16 {bf16 - 1:+.1%}"]
        if run.tp > 1:
            flipped = _tokens(run, tp_comm_overlap=not run.tp_comm_overlap) / run.tokens_per_s_per_gpu
            varied.append(f"TP comm overlap {'off' if run.tp_comm_overlap else 'on'} {flipped - 1:+.1%}")
        spec = capped_file(topology(run), round(sustained_cap(run), 4), vary_folder)
        sustained = _tokens(run, topology_spec=spec) / run.tokens_per_s_per_gpu
        varied.append(f"FP8 GEMMs at {SUSTAINED_OVER_BEST:.3f} of the preset's best-case rate (the A100's sustained "
                      f"share) {sustained - 1:+.1%}")
        cap = implied_cap(run, vary_folder)
        preset = sustained_cap(run) / SUSTAINED_OVER_BEST
        varied.append(f"GEMM cap meeting the published figure {cap:.2f} of peak (the preset's FP8 cap {preset:.2f})"
                      if cap is not None else "no GEMM cap up to 1.0 of peak meets the published figure")
        notes.insert(0, f"{ratio - 1:+.1%}; varied: " + ", ".join(varied) + "; shows: "
                     + _shows(ratio, bf16, flipped, sustained, cap, sustained_cap(run) / SUSTAINED_OVER_BEST))
    config = (f"{run.system} x {run.gpus}, {run.precision}, TP {run.tp} PP {run.pp} VP {run.vp} DP {run.dp}"
              f"{' FSDP' if run.fsdp else ''}, seq {run.seq}, micro-batch {run.micro_batch} x {run.grad_accum}, "
              f"batch {run.global_batch}")
    comparison = Comparison(paper=run.table, claim=f"{run.model} tokens/s/GPU", configuration=config,
                            published=run.tokens_per_s_per_gpu, predicted=_per_gpu(row, run), unit="tokens/s/GPU",
                            source=run.source, explanation="; ".join(notes), commands=("tpsim " + " ".join(argv),))
    return Result(run, comparison, share, row["fits"] is not False, bf16, flipped, sustained, cap)


def _layers(run: NemoRun) -> int:
    return resolve_model(model_args(run)[1]).layers


def _shows(ratio: float, bf16: float, flipped: float | None, sustained: float, cap: float | None,
           preset: float) -> str:
    """One sentence on what a row's variations show (its ratios to the published figure)."""
    where = ("between tpsim's bf16 and FP8 predictions" if bf16 < 1 < ratio
             else "outside tpsim's bf16-FP8 range")
    parts = [f"the published figure lies {where}",
             f"the A100's sustained-clock discount moves it {(sustained - ratio) * 100:+.1f} points"]
    if cap is not None:
        parts.append(f"the GEMMs alone would have to run at {cap / preset:.2f} of the preset's best-case rate")
    if flipped is not None:
        closer = abs(flipped - 1) < abs(ratio - 1)
        parts.append(f"flipping TP overlap moves it {(flipped - ratio) * 100:+.1f} points"
                     + (" (closer)" if closer else ""))
    return ", ".join(parts)


def quick_runs() -> list[NemoRun]:
    """The ``--quick`` rows (``QUICK``), in that order."""
    def matches(run: NemoRun, key: tuple) -> bool:
        if isinstance(key[2], int):
            return (run.container, run.model, run.gpus) == key
        return (run.container, run.system, run.model) == key
    return [next(r for r in ROWS if matches(r, key)) for key in QUICK]


def results(quick: bool = False) -> list[Result]:
    """Every row (``quick``: ``quick_runs()`` without variations)."""
    if quick:
        return [_result(run, None) for run in quick_runs()]
    with tempfile.TemporaryDirectory(prefix="tpsim-repro-nemo-") as folder:
        return [_result(run, folder) for run in ROWS]


def comparisons(quick: bool = False) -> list[Comparison]:
    """The comparisons of ``results(quick)``."""
    return [r.comparison for r in results(quick)]


def summary(rows: list[Result]) -> str:
    """Geomean |error| and the largest, over all rows, per system and per container; the GEMM caps found."""
    lines = [error_summary([r.comparison for r in rows]).replace(", largest", f" over {len(rows)} rows, largest", 1)]
    for key, label in ((lambda r: r.run.system, "system"), (lambda r: r.run.table, "table")):
        for name in dict.fromkeys(key(r) for r in rows):
            group = [r for r in rows if key(r) == name]
            ratios = [r.comparison.ratio for r in group]
            worst = max(group, key=lambda r: abs(r.comparison.ratio - 1))
            caps = [r.cap for r in group if r.cap is not None]
            line = (f"  {label} {name}: {len(group)} rows, tpsim / published {min(ratios):.2f}-{max(ratios):.2f}, "
                    f"geomean error {geomean_error(ratios):.1%}, largest {worst.comparison.ratio - 1:+.1%} "
                    f"({worst.run.model}, {worst.run.gpus} GPUs)")
            if caps:
                line += f"; GEMM cap meeting the rows: {min(caps):.2f}-{max(caps):.2f} of peak"
            lines.append(line)
    return "\n".join(lines)


def cli(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = script_arguments(__doc__.splitlines()[0], NAME, argv)
    rows = results(args.quick)
    report([r.comparison for r in rows], args,
           "NeMo / Megatron-Bridge pre-training on H100, B200, GB200: published vs tpsim tokens/s per GPU")
    print(summary(rows))
    print("\nleft out:")
    for what, why in NOT_EXPRESSED:
        print(f"  {what}: {why}")


if __name__ == "__main__":
    cli()

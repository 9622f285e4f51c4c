"""Published per-layer and per-step training times of Megatron-LM's 22B GPT against tpsim's prediction.

What it shows: how close tpsim's compute model (``simulator.compute``: per-shape GEMM rates from each
GPU's published achievable matmul throughput, memory-bound kernels at achievable bandwidth) and its
tensor-parallel communication come to measured training times, row by row, with the error of each and
what explains any error over 5%, checked by varying the suspected cause.

Where each number comes from (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
Transformer Models", arXiv 2205.05198):

- configuration: the 22B model of Table 3 (48 layers, hidden 6144, 64 heads, sequence 2048, vocabulary
  51200; tpsim's ``megatron-22b``), tensor parallel 8, pipeline 1, 8 GPUs, global batch 4 and
  micro-batch 4, on A100 80GB (section 6: DGX A100 80GB servers; tpsim's ``dgx-a100-80gb``),
  mixed precision (bfloat16 here: the same A100 peak as float16).
- Table 4: the forward and backward time of one transformer layer, in ms, for five setups: no
  recomputation (7.7 / 11.9), sequence parallelism (7.2 / 11.8), full recomputation (7.7 / 19.5),
  selective recomputation (7.7 / 13.2), selective recomputation with sequence parallelism
  (7.2 / 13.1).
- Table 5, 22B row: the whole iteration, 1.42 s with full recomputation and 1.10 s with selective
  recomputation and sequence parallelism ("present work"), and that run's model FLOPs utilisation,
  41.5%.

tpsim times a layer as ``tpsim simulate`` does (the block's forward and backward schedules on the
flow network, ``simulator.training.step``), a recomputed forward added to the backward as
Megatron-LM runs it; the iteration as ``tpsim predict --global-batch`` does (48 layers, the LM head,
the optimizer step). Both run Megatron-LM's overlap of the backward's tensor-parallel communication with
the dW GEMM (the asynchronous dX all-reduce; with sequence parallelism the re-gather of X and the
reduce-scatter of dX), as Megatron-LM does by default, with the SMs the collectives hold charged to the
GEMM beside them (``simulator.timing.sm_sharing``); each backward row's explanation also gives the
prediction without the overlap (``--no-async-tensor-model-parallel-allreduce``), and the tests hold that
one to the per-layer bar too. Both run Megatron-LM's fused bias-GeLU and bias-dropout-add kernels
(``simulator.workloads.layers.bias_gelu``, ``bias_dropout_add``; its default since January 2021, so in the
paper's runs); its fused LayerNorm (apex's, two passes where tpsim's makes three) is not modelled.

Deterministic; a few seconds. ``--quick`` (the CI smoke test) runs the Table 4 rows only and writes to
a temporary folder unless ``--csv`` / ``--png`` are given.

    python -m experiments.repro_training [--quick] [--csv FILE] [--png FILE]
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass

from experiments.block_time import topology
from experiments.published import Comparison, error_summary, report, script_arguments
from simulator.algorithms.arrangement import Arrangement
from simulator.compute import achievable_memory_bandwidth
from simulator.training.arrangement import TrainingArrangement
from simulator.training.step import StepOptions, StepTime, step_time
from simulator.workloads.models import preset
from simulator.workloads.workload import Workload
from topologies import gpu_nodes

__all__ = ["Layer", "LAYER_ROWS", "layer_time", "iteration", "comparisons", "cli"]

NAME = "repro_training"
PAPER = "Korthikanti et al. 2022"
SOURCE = "arXiv 2205.05198"
MODEL = "megatron-22b"
TOPOLOGY = "dgx-a100-80gb"
TP, MICRO_BATCH, GLOBAL_BATCH, DTYPE = 8, 4, 4, "bfloat16"
PER_LAYER_TARGET = 0.08
"""The per-layer rows' bar: within 8% of the published time."""


@dataclass(frozen=True)
class Layer:
    """One setup of Table 4: its name, tpsim's algorithm and recomputation, the published ms."""

    setup: str
    algorithm: str
    recompute: str
    forward_ms: float
    backward_ms: float


LAYER_ROWS = (
    Layer("no recomputation", "1d", "none", 7.7, 11.9),
    Layer("sequence parallelism", "1d-sp", "none", 7.2, 11.8),
    Layer("full recomputation", "1d", "full", 7.7, 19.5),
    Layer("selective recomputation", "1d", "selective", 7.7, 13.2),
    Layer("selective + sequence parallelism", "1d-sp", "selective", 7.2, 13.1),
)
"""Korthikanti et al. 2022, Table 4 (22B model, one layer, ms)."""
ITERATION_ROWS = (("full recomputation", "1d", "full", 1.42), ("selective + sequence parallelism", "1d-sp",
                                                                 "selective", 1.10))
"""Korthikanti et al. 2022, Table 5 (22B row): iteration time in seconds."""
PUBLISHED_MFU = 0.415
"""Korthikanti et al. 2022, Table 5 (22B row, present work): model FLOPs utilisation."""
PUBLISHED_HFU = 0.437
"""Korthikanti et al. 2022, Table 5 (22B row, present work): hardware FLOPs utilisation."""


ATTENTION = "unfused"
"""The paper's attention kernel (2022, before FlashAttention reached Megatron-LM): probabilities kept."""


def _block() -> Workload:
    m = preset(MODEL)
    return Workload.transformer(MICRO_BATCH, m.seq, m.hidden, m.heads, m.ffn, m.dropout, attention=ATTENTION)


@functools.cache
def _step(algorithm: str, recompute: str, layers: int, vocab: int | None, async_dgrad: bool = True) -> StepTime:
    G, router = topology(TOPOLOGY)
    arrangement = TrainingArrangement(Arrangement(algorithm, (TP,)), 1)
    options = StepOptions(global_batch=GLOBAL_BATCH, layers=layers, vocab=vocab, recompute=recompute, dtype=DTYPE,
                          async_dgrad=async_dgrad)
    return step_time(G, arrangement, _block(), options, bound=False, router=router)


def layer_time(algorithm: str, recompute: str, async_dgrad: bool = True) -> tuple[float, float, float, float]:
    """One layer's (forward ms, backward ms, forward exposed comm ms, backward exposed comm ms); ``async_dgrad``
    False: without Megatron-LM's backward overlap."""
    p = _step(algorithm, recompute, 1, None, async_dgrad).passes
    fwd, bwd = p["block_fwd"], p["block_bwd"]
    return fwd.time_s * 1e3, bwd.time_s * 1e3, fwd.comm_s * 1e3, bwd.comm_s * 1e3


def iteration(algorithm: str, recompute: str) -> StepTime:
    """The whole 22B iteration (48 layers, the LM head, the optimizer step)."""
    m = preset(MODEL)
    return _step(algorithm, recompute, m.layers, m.vocab)


def _simulate_command(row: Layer, passes: str) -> str:
    m = preset(MODEL)
    return (f"tpsim simulate --algo {row.algorithm} --gpus {TP} --topology {TOPOLOGY} --model {MODEL} --layers 1 "
            f"--batch {MICRO_BATCH} --pass {passes} --dtype {DTYPE} --attention {ATTENTION}"
            + (f" --recompute {row.recompute}" if row.recompute != "none" else "")) if m else ""


def _predict_command(algorithm: str, recompute: str) -> str:
    return (f"tpsim predict --gpus {TP} --topology {TOPOLOGY} --model {MODEL} --global-batch {GLOBAL_BATCH} "
            f"--batch {MICRO_BATCH} --tp-sizes {TP} --algos {algorithm} --recompute {recompute} --dtype {DTYPE} "
            f"--attention {ATTENTION} --simulate-top 1")


def _error(predicted: float, published: float) -> float:
    return predicted / published - 1.0


def _layernorm_pass_ms() -> float:
    """The pass apex's fused LayerNorm saves against tpsim's three, for the two LayerNorms of one layer on one
    1-D rank, ms: one read of b s h bf16 elements each (tpsim's row moments read the input once more)."""
    m = preset(MODEL)
    G, _ = topology(TOPOLOGY)
    elements = MICRO_BATCH * m.seq * m.hidden
    nbytes = 2 * 2 * elements
    return nbytes / achievable_memory_bandwidth(G.nodes[gpu_nodes(G)[0]]["device"]) * 1e3


def _layer_rows(row: Layer) -> list[Comparison]:
    fwd, bwd, fwd_comm, bwd_comm = layer_time(row.algorithm, row.recompute)
    base_fwd = layer_time("1d", "none")[0]
    config = f"22B, TP 8, micro-batch 4, A100 80GB, {row.setup}"
    out = []
    for which, predicted, published, comm in (("forward", fwd, row.forward_ms, fwd_comm),
                                              ("backward", bwd, row.backward_ms, bwd_comm)):
        error = _error(predicted, published)
        why = (f"tpsim {predicted:.2f} ms ({error:+.1%}): compute {predicted - comm:.2f} ms, tensor-parallel "
               f"communication {comm:.2f} ms exposed.")
        if which == "backward":
            _, blocking, _, blocking_comm = layer_time(row.algorithm, row.recompute, async_dgrad=False)
            why += (f" Without Megatron-LM's overlap of the dX communication with the dW GEMM "
                    f"(--no-async-tensor-model-parallel-allreduce) the backward is {blocking:.2f} ms "
                    f"({_error(blocking, published):+.1%}, {blocking_comm:.2f} ms exposed)"
                    + (": the published time lies between the two." if predicted < published < blocking else
                       ": the published time is above both, so the overlap hides less in the real run than in tpsim "
                       "(an NCCL kernel also takes memory bandwidth and L2 from the GEMM beside it, which the SM "
                       "charge does not count), or tpsim's backward compute is short by about the hidden time."
                       if published >= blocking else "."))
        elif row.algorithm == "1d-sp" and abs(error) > 0.05:
            base_compute = base_fwd - layer_time("1d", "none")[2]
            saved = base_compute - (predicted - comm)
            layernorm = _layernorm_pass_ms()
            why += (f" Sequence parallelism saves tpsim {saved:.2f} ms of compute against its own 1-D forward (its "
                    f"LayerNorm and fused bias-dropout-add passes over all 8,192 tokens cut to 1/8); the paper's "
                    f"saved {7.7 - row.forward_ms:.1f} ms in all. tpsim times each LayerNorm as three passes where "
                    f"apex's fused kernel, which Megatron-LM runs, makes two: {layernorm:.2f} ms per layer at the "
                    f"same bandwidth, so with it sequence parallelism would save {saved - layernorm * 7 / 8:.2f} ms. "
                    f"Both forwards fall short by about the same ~{row.forward_ms - predicted:.1f} ms, a gap in the "
                    f"forward's GEMMs and attention against 2022's kernels (the LayerNorm pass checked by the "
                    f"arithmetic above, not by a run).")
        out.append(Comparison(PAPER, f"one layer, {which}", config, published, predicted, "ms",
                              f"{SOURCE}, Table 4", why, (_simulate_command(row, "fwd" if which == "forward"
                                                                              else "bwd"),)))
    return out


def _iteration_rows() -> list[Comparison]:
    rows = []
    for setup, algorithm, recompute, published in ITERATION_ROWS:
        t = iteration(algorithm, recompute)
        layers = (t.passes["block_fwd"].time_s + t.passes["block_bwd"].time_s) * 48
        row = next(r for r in LAYER_ROWS if (r.algorithm, r.recompute) == (algorithm, recompute))
        published_layers = (row.forward_ms + row.backward_ms) * 48 / 1e3
        rest, published_rest = t.step_s - layers, published - published_layers
        why = (f"tpsim {t.step_s:.3f} s ({_error(t.step_s, published):+.1%}). Its 48 layers take {layers:.3f} s against "
               f"48 x Table 4's {row.forward_ms + row.backward_ms:.1f} ms = {published_layers:.3f} s "
               f"({_error(layers, published_layers):+.1%}); the rest of the iteration is {rest:.3f} s in tpsim "
               f"(LM head and loss {t.passes['head_fwd'].time_s + t.passes['head_bwd'].time_s:.3f} s, embedding "
               f"{t.passes['embed_fwd'].time_s + t.passes['embed_bwd'].time_s:.3f} s, optimizer passes "
               f"{t.optimizer_s:.3f} s) against {published_rest:.3f} s left in the paper's. Not timed: the device "
               f"synchronisations of Megatron-LM's 2022 timers (torch.cuda.synchronize at every start and stop, "
               f"around each pass, the reduction and the optimizer) and the kernel launches they expose, the "
               f"clip's scaling pass on steps whose norm exceeds 1.")
        rows.append(Comparison(PAPER, "iteration time", f"22B, TP 8, batch 4, 8 A100 80GB, {setup}", published * 1e3,
                               t.step_s * 1e3, "ms", f"{SOURCE}, Table 5", why,
                               (_predict_command(algorithm, recompute),)))
    t = iteration("1d-sp", "selective")
    mfu = t.mfu
    rows.append(Comparison(PAPER, "model FLOPs utilisation", "22B, 8 A100 80GB, selective + sequence parallelism",
                           PUBLISHED_MFU * 100, mfu * 100, "%", f"{SOURCE}, Table 5",
                           f"model FLOPs 72 B L s h^2 (1 + s/6h + V/12hL) over the step and 312 TFLOP/s per GPU: "
                           f"tpsim {mfu:.1%}, the inverse of its iteration-time error.",
                           (_predict_command("1d-sp", "selective"),)))
    rows.append(Comparison(PAPER, "hardware FLOPs utilisation", "22B, 8 A100 80GB, selective + sequence parallelism",
                           PUBLISHED_HFU * 100, t.hfu * 100, "%", f"{SOURCE}, Table 5",
                           f"tpsim {t.hfu:.1%}: model FLOPs plus the attention core's recomputed products, 4 B s^2 h "
                           f"per layer, so HFU / MFU = {t.hfu / mfu:.3f} where the paper's is "
                           f"{PUBLISHED_HFU / PUBLISHED_MFU:.3f}: the paper counts more recomputed work than the two "
                           f"products, and the iteration's error carries over.",
                           (_predict_command("1d-sp", "selective"),)))
    return rows


def comparisons(quick: bool = False) -> list[Comparison]:
    """Table 4's ten per-layer figures, then (unless ``quick``) Table 5's 22B iteration times and MFU."""
    rows = [c for row in LAYER_ROWS for c in _layer_rows(row)]
    return rows if quick else rows + _iteration_rows()


def summary(rows: list[Comparison]) -> str:
    """Geomean of |error| (as a ratio) and the largest error, one line."""
    return error_summary(rows)


def cli(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = script_arguments(__doc__.splitlines()[0], NAME, argv)  # --quick: a temporary folder by default
    rows = comparisons(args.quick)
    report(rows, args, f"{PAPER}: 22B GPT on 8 A100 80GB, published vs tpsim")
    print(summary(rows))


if __name__ == "__main__":
    cli()

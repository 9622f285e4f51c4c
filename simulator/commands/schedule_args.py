"""The ``<schedule args>`` shared by `tpsim schedule`, `verify`, `simulate` and `run`.

Either generator arguments ``--algo A (--grid Q,Q,D | --gpus P) --workload {gemm,mlp,transformer}
(--m M --k K --n N | --m M --hidden H | --batch B --seq S --hidden H --heads A [--ffn F] [--dropout P])
[--pass fwd|bwd|both] [--dtype D] [--overlap]`` or ``--schedule FILE.json``; ``--dtype`` defaults to
``DEFAULT_DTYPE`` (bfloat16) in every command.

``--model NAME`` (``tpsim model list``) or ``--model FILE.yaml`` (a model file,
``simulator.workloads.model_file``) fills the transformer's hidden, heads, kv_heads, ffn, sequence
length and dropout (any of them given too overrides the model's) and its architecture (norm,
activation, position, biases), and implies ``--workload transformer``; ``--batch`` is still the
user's. ``--norm-kernel`` picks what runs the norms (``kernels.norm_variants``), ``--pointwise-kernel``
what runs rotary and SwiGLU (``kernels.pointwise_variants``). ``--no-bias-gelu-fusion`` and ``--no-bias-dropout-fusion`` (Megatron-LM's flags) turn the transformer's
fused elementwise kernels off (``simulator.workloads.decoder``). ``--layers L`` says how many identical blocks the model has (a preset's own count by default): a schedule holds one block, and the commands
that time it report the whole model as L times the block, derived rather than simulated L times.
"""

from __future__ import annotations

import argparse
import math
from typing import Callable

from simulator.algorithms.registry import (ALGORITHMS, ALIASES, DTYPES, OVERLAP_ALGORITHMS, SQUARE_GRID_ALGORITHMS,
                                           algorithm_class, build_schedule)
from simulator.algorithms.ub_configs import TE_DEFAULT, UB_CONFIGS, ub_config
from simulator.commands.pipeline_args import add_pipeline_arguments, pipeline_request
from simulator.errors import InputError
from simulator.guard.check import add_force_argument
from simulator.ir.schedule import Schedule
from simulator.ir.serialize import load_schedule
from simulator.limits import check_extent, check_ranks
from simulator.pipeline.lower import lower_pipeline
from simulator.workloads.attention_cost import KERNELS
from simulator.workloads.kernels.norm_variants import KERNELS as NORM_KERNELS
from simulator.workloads.kernels.pointwise_variants import KERNELS as POINTWISE_KERNELS
from simulator.workloads.models import resolve_model
from simulator.workloads.workload import FIELDS, PASSES, Workload

FP8_DTYPE = "fp8"
"""``--dtype fp8``: ``simulator.fp8``'s hybrid recipe, on bfloat16 schedules."""

DEFAULT_ATTENTION = KERNELS[0]
"""FlashAttention-2: what every current training framework runs."""

WORKLOADS = tuple(FIELDS)

DEFAULT_PASS = "both"

DEFAULT_DTYPE = "bfloat16"
"""The element type of every command that builds a schedule or a workload (`schedule`, `verify`,
`simulate`, `run`, `predict`): what users time, so one command's numbers carry over to the next."""

GENERATOR_FLAGS = {"--algo": "algo", "--grid": "grid", "--gpus": "gpus", "--workload": "workload", "--m": "m",
                   "--k": "k", "--n": "n", "--hidden": "hidden", "--batch": "batch", "--seq": "seq",
                   "--heads": "heads", "--kv-heads": "kv_heads", "--ffn": "ffn", "--dropout": "dropout",
                   "--model": "model",
                   "--attention": "attention", "--norm-kernel": "norm_kernel",
                   "--pointwise-kernel": "pointwise_kernel", "--pass": "passes", "--dtype": "dtype",
                   "--overlap": "overlap"}
"""Option -> attribute of every generator argument: what ``--schedule FILE`` replaces."""
FUSION_FLAGS = {"--no-bias-gelu-fusion": "bias_gelu_fusion", "--no-bias-dropout-fusion": "bias_dropout_fusion"}
"""Megatron-LM's flags that turn its fused elementwise kernels off -> the workload field each sets (a saved
schedule's workload record keeps them, so ``--schedule FILE`` replaces them too)."""


def parse_grid(text: str) -> tuple[int, ...]:
    """``"4,4,2"`` -> (4, 4, 2); InputError for anything else."""
    try:
        grid = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise InputError(f"--grid {text!r}: expected Q,Q,D with integers, e.g. 4,4,2") from None
    if len(grid) != 3:
        raise InputError(f"--grid {text!r}: expected three integers Q,Q,D, e.g. 4,4,2")
    return grid


def add_schedule_arguments(parser: argparse.ArgumentParser, dtype_help: str = "", force: bool = True) -> None:
    """Add the generator arguments and ``--schedule FILE`` to ``parser`` (``dtype_help``: what the element
    type means to this command, added to ``--dtype``'s help), and ``--force`` (``simulator.guard``) unless
    ``force`` is False (a command whose own ``--force`` says so too)."""
    group = parser.add_argument_group("schedule (generate one, or load --schedule FILE)")
    group.add_argument("--schedule", metavar="FILE|ORDER",
                       help="a schedule saved by `tpsim schedule --out`; with --pp, the pipeline order instead: "
                            "gpipe, 1f1b (default) or interleaved")
    group.add_argument("--algo", choices=ALGORITHMS + tuple(ALIASES), help="parallel algorithm")
    group.add_argument("--grid", metavar="Q,Q,D", help=f"process grid [q, q, d] ({', '.join(SQUARE_GRID_ALGORITHMS)})")
    group.add_argument("--gpus", type=int, metavar="P",
                       help="number of ranks (1d, 1d-sp; or 2d when P = q*q, 3d when P = q^3)")
    add_workload_arguments(group, dtype_help=dtype_help)
    group.add_argument("--overlap", action="store_true",
                       help=f"{'/'.join(OVERLAP_ALGORITHMS)}: prefetch each SUMMA step's broadcasts during the "
                            "previous gemm")
    add_async_dgrad_argument(group)
    add_pipeline_arguments(parser)
    if force:
        add_force_argument(parser)


def add_async_dgrad_argument(group) -> None:
    """Add Megatron-LM's ``--no-async-tensor-model-parallel-allreduce`` (dest ``async_dgrad``, default on) and
    ``--tp-comm-overlap`` (default off, as in Megatron-LM)."""
    group.add_argument("--no-async-tensor-model-parallel-allreduce", dest="async_dgrad", action="store_false",
                       help="1d/1d-sp: wait for each linear's input-gradient all-reduce (reduce-scatter) before its "
                            "weight-gradient GEMM (default: run them side by side, as Megatron-LM does)")
    group.add_argument("--tp-comm-overlap", action="store_true",
                       help="1d-sp: run the forward's all-gathers and reduce-scatters, and the backward's "
                            "all-gathers of the row-parallel output gradient, in chunks beside chunked GEMMs, as "
                            "Megatron-LM's --tp-comm-overlap does with Transformer Engine (default off)")
    group.add_argument("--tp-comm-overlap-cfg", metavar="NAME",
                       help="with --tp-comm-overlap: the userbuffers config whose num_sm SMs Transformer Engine's "
                            f"kernels hold beside the GEMMs, one of {', '.join(UB_CONFIGS)} (default: "
                            f"{TE_DEFAULT}, TE's 16)")


def tp_comm_overlap_cfg(args: argparse.Namespace) -> str:
    """``--tp-comm-overlap-cfg``'s config name (TE's default when not given); InputError when it is given
    without ``--tp-comm-overlap`` or names no config."""
    name = getattr(args, "tp_comm_overlap_cfg", None)
    if name is None:
        return TE_DEFAULT
    if not getattr(args, "tp_comm_overlap", False):
        raise InputError(f"--tp-comm-overlap-cfg {name} configures --tp-comm-overlap: give both")
    ub_config(name)
    return name


def add_workload_arguments(group: argparse._ArgumentGroup, dtype_help: str = "") -> None:
    """Add the workload's sizes, ``--model --layers --pass --dtype`` (read back by ``workload_from_args``)."""
    group.add_argument("--workload", choices=WORKLOADS, help="one linear (gemm), a transformer MLP (mlp), or one "
                                                            "GPT block (transformer)")
    group.add_argument("--m", type=int, metavar="M", help="gemm/mlp: rows of A / tokens (batch x sequence)")
    group.add_argument("--k", type=int, metavar="K", help="gemm: columns of A, rows of B")
    group.add_argument("--n", type=int, metavar="N", help="gemm: columns of B")
    group.add_argument("--hidden", type=int, metavar="H", help="mlp/transformer: hidden size h")
    group.add_argument("--batch", type=int, metavar="B", help="transformer: sequences per step")
    group.add_argument("--seq", type=int, metavar="S", help="transformer: tokens per sequence")
    group.add_argument("--heads", type=int, metavar="A", help="transformer: attention heads (h divisible by A)")
    group.add_argument("--kv-heads", type=int, metavar="K", help="transformer: key/value heads, dividing the heads "
                                                                 "(grouped-query attention; default: the heads)")
    group.add_argument("--ffn", type=int, metavar="F", help="transformer: MLP width (default 4h)")
    group.add_argument("--dropout", type=float, metavar="P", help="transformer: dropout probability (default 0, or "
                                                                  "the model's)")
    group.add_argument("--attention", choices=KERNELS, help="transformer: the attention kernel, flash "
                       "(FlashAttention-2, default: nothing of [b, a, s, s] kept, the probabilities recomputed in "
                       "the backward), triton (FlashAttention in Triton, llm-foundry's default: the same memory, "
                       "timed at its published A100 rate), cudnn (cuDNN's fused attention, Transformer Engine's "
                       "choice on Hopper and Blackwell: the same memory, each pass timed at its published rate) or "
                       "unfused (Megatron-LM's pre-2023 kernel: probabilities and dropout mask kept)")
    group.add_argument("--norm-kernel", choices=NORM_KERNELS,
                       help="transformer: what runs the norms on ranks holding whole rows, fused (apex's or PyTorch's "
                            "native kernel, default: 2 passes forward, 5 backward), te (Transformer Engine's, "
                            "Megatron-Core's: one backward kernel, 3 passes) or eager (torchtitan's RMSNorm from "
                            "PyTorch ops without torch.compile: fp32 intermediates, 36 B forward and 92 B backward "
                            "per element, more kept); not on algorithms that split the norm's columns")
    group.add_argument("--pointwise-kernel", choices=POINTWISE_KERNELS,
                       help="transformer with rotary or SwiGLU: fused (one pass each, default) or eager (torchtitan's "
                            "PyTorch ops without torch.compile: fp32 rotary, 20 B per Q and K element each way, with "
                            "GQA's key/value copies; silu then mul, 10 B forward and 18 backward per ffn element)")
    group.add_argument("--no-bias-gelu-fusion", dest="bias_gelu_fusion", action="store_false",
                       help="transformer with biases: time FC1's bias add and GELU as two passes (default: one fused "
                            "kernel, as Megatron-LM's default --bias-gelu-fusion runs it)")
    group.add_argument("--no-bias-dropout-fusion", dest="bias_dropout_fusion", action="store_false",
                       help="transformer with biases: time each row-parallel linear's bias add, dropout and residual "
                            "add as three passes (default: one fused kernel, as Megatron-LM's default "
                            "--bias-dropout-fusion runs it)")
    group.add_argument("--model", metavar="NAME|FILE", help="transformer sizes and architecture of a published model "
                                                            "(`tpsim model list`) or of a model file (.yaml, .json)")
    group.add_argument("--layers", type=int, metavar="L", help="transformer: identical blocks in the model (default "
                                                               "1, or the model's); time is L x one block")
    group.add_argument("--vocab", type=int, metavar="V",
                       help=f"transformer: vocabulary of the tied embedding and LM head, counted in a training "
                            f"step's time, memory and MFU (default the model's, else GPT-2's {GPT2_VOCAB:,}; "
                            f"padded to a multiple of 128 x the tensor-parallel size, as Megatron-LM pads it)")
    # Defaults None, filled in by workload_from_args: a value given together with --schedule FILE
    # (which carries its own pass and dtype) must be told apart from a default, and refused.
    group.add_argument("--pass", dest="passes", choices=PASSES, help=f"default: {DEFAULT_PASS}")
    group.add_argument("--dtype", choices=DTYPES + (FP8_DTYPE,),
                       help=f"element type (default {DEFAULT_DTYPE}){dtype_help}; fp8: `tpsim predict` only, "
                            f"Transformer Engine's hybrid recipe (the linears' GEMMs at the FP8 rate)")


_SIZES = {"gemm": ("m", "k", "n"), "mlp": ("m", "hidden"),
          "transformer": ("batch", "seq", "hidden", "heads", "kv_heads", "ffn", "dropout")}
"""The size options each workload takes (the transformer's ffn and dropout are optional)."""
_HINTS = {"gemm": "--m --k --n (A is [M, K], B is [K, N])", "mlp": "--m --hidden (tokens M, hidden size H)",
          "transformer": "--batch --seq --hidden --heads [--kv-heads --ffn --dropout], or --model NAME --batch"}


def workload_from_args(args: argparse.Namespace) -> Workload:
    """The Workload the arguments describe; InputError naming what is missing or extra.

    Also fills ``args.passes`` and ``args.dtype`` with their defaults where they were not given, and
    ``args.layers`` with the model's block count (1 without ``--model``).
    """
    args.passes = args.passes or DEFAULT_PASS
    args.dtype = args.dtype or DEFAULT_DTYPE
    args.fp8 = args.dtype == FP8_DTYPE
    if args.fp8:
        if not getattr(args, "fp8_ok", False):
            raise InputError("--dtype fp8 is a training recipe `tpsim predict` plans with; schedules are built in "
                             f"{', '.join(DTYPES)}")
        args.dtype = DEFAULT_DTYPE  # the hybrid recipe: everything but the linears' GEMMs as in bfloat16
    model = resolve_model(args.model) if args.model is not None else None
    if model is not None:
        if args.workload not in (None, "transformer"):
            raise InputError(f"--model {args.model} is a transformer; drop --workload {args.workload}")
        args.workload = "transformer"
        for name in ("hidden", "heads", "kv_heads", "ffn", "seq", "dropout"):
            if getattr(args, name) is None:
                setattr(args, name, getattr(model, name))
    layers = args.layers if args.layers is not None else (model.layers if model is not None else 1)
    if args.workload is None:
        raise InputError("--workload is required: gemm (with --m --k --n), mlp (with --m --hidden) or transformer "
                         "(with --batch --seq --hidden --heads), or give --model NAME")
    if getattr(args, "attention", None) is not None and args.workload != "transformer":
        raise InputError(f"--attention is a transformer's attention kernel; --workload {args.workload} has none")
    if getattr(args, "norm_kernel", None) is not None and args.workload != "transformer":
        raise InputError(f"--norm-kernel is a transformer's norm kernel; --workload {args.workload} has none")
    if getattr(args, "pointwise_kernel", None) is not None and args.workload != "transformer":
        raise InputError(f"--pointwise-kernel is a transformer's rotary and SwiGLU; --workload {args.workload} "
                         f"has none")
    if args.layers is not None and args.workload != "transformer":
        raise InputError(f"--layers counts transformer blocks; --workload {args.workload} has none")
    for flag, dest in FUSION_FLAGS.items():
        if getattr(args, dest, True) is False and args.workload != "transformer":
            raise InputError(f"{flag} is a transformer's kernel fusion; --workload {args.workload} has none")
    if getattr(args, "vocab", None) is not None and args.workload != "transformer":
        raise InputError(f"--vocab is a transformer's vocabulary; --workload {args.workload} has none")
    if layers < 1:
        raise InputError(f"--layers must be >= 1, got {layers}")
    args.layers = layers
    wanted = _SIZES[args.workload]
    extra = [f"--{name}" for names in _SIZES.values() for name in names
             if name not in wanted and getattr(args, name) is not None]
    if extra:
        raise InputError(f"{' '.join(dict.fromkeys(extra))} not for --workload {args.workload}, which takes "
                         f"{_HINTS[args.workload]}")
    optional = ("ffn", "dropout", "kv_heads")
    missing = [f"--{name}" for name in wanted if getattr(args, name) is None and name not in optional]
    if missing:
        raise InputError(f"--workload {args.workload} needs {' '.join(missing)}: {_HINTS[args.workload]}")
    for name in (*wanted, "layers"):  # by flag, before any size is multiplied (simulator.limits)
        if name != "dropout" and getattr(args, name) is not None:
            check_extent(getattr(args, name), f"--{name} {getattr(args, name)}")
    if args.workload == "gemm":
        return Workload.gemm(args.m, args.k, args.n)
    if args.workload == "mlp":
        return Workload.mlp(args.m, args.hidden)
    architecture = {**(model.architecture() if model is not None else {}), "kv_heads": args.kv_heads,
                    "attention": getattr(args, "attention", None) or DEFAULT_ATTENTION,
                    "norm_kernel": getattr(args, "norm_kernel", None) or NORM_KERNELS[0],
                    "pointwise_kernel": getattr(args, "pointwise_kernel", None) or POINTWISE_KERNELS[0],
                    **{dest: getattr(args, dest, True) for dest in FUSION_FLAGS.values()}}
    return Workload.transformer(args.batch, args.seq, args.hidden, args.heads, args.ffn,
                                0.0 if args.dropout is None else args.dropout, **architecture)


GPT2_VOCAB = 50257
"""GPT-2's BPE vocabulary (Radford et al. 2019), Megatron-LM's GPT default: ``--vocab``'s default without ``--model``."""


def vocab_of(args: argparse.Namespace) -> int:
    """The vocabulary of a transformer's embedding and LM head: ``--vocab``, else ``--model``'s, else GPT-2's;
    InputError for a bad ``--vocab``."""
    vocab = getattr(args, "vocab", None)
    if vocab is not None:
        if vocab < 1:
            raise InputError(f"--vocab {vocab}: a vocabulary has at least 1 token")
        check_extent(vocab, f"--vocab {vocab}")
        return vocab
    model = getattr(args, "model", None)
    return resolve_model(model).vocab if model else GPT2_VOCAB


def layers_of(args: argparse.Namespace, workload: Workload | dict) -> int:
    """How many identical blocks the whole model has: ``--layers``, the model's, or 1 (a workload or a
    schedule's workload record); 1 with ``--pp``, whose schedule holds every block already."""
    if getattr(args, "pp", None) is not None:
        return 1
    name = workload.get("name") if isinstance(workload, dict) else workload.name
    layers = getattr(args, "layers", None)
    return layers if layers is not None and name == "transformer" else 1


def schedule_from_args(args: argparse.Namespace, before_build: Callable[..., None] | None = None) -> Schedule:
    """Load ``--schedule`` or generate from the generator arguments (a pipelined step with ``--pp``:
    ``simulator.commands.pipeline_args``); InputError for bad input.

    ``before_build(algorithm, grid, workload, passes, repeat)`` is called once the grid is known and
    before a generated schedule is built (``repeat``: a pipelined step's layers x micro-batches, else 1),
    so that a command can estimate the work and refuse it (``simulator.guard``)."""
    pipeline = pipeline_request(args)
    if args.schedule is not None:
        # `is`, not `in`: a given 0 (`--m 0`) equals False and must still count as given.
        given = [flag for flag, dest in GENERATOR_FLAGS.items()
                 if getattr(args, dest) is not None and getattr(args, dest) is not False]
        if getattr(args, "async_dgrad", True) is False:
            given.append("--no-async-tensor-model-parallel-allreduce")
        given += [flag for flag, dest in FUSION_FLAGS.items() if getattr(args, dest, True) is False]
        if getattr(args, "tp_comm_overlap", False):
            given.append("--tp-comm-overlap")
        if getattr(args, "tp_comm_overlap_cfg", None) is not None:
            given.append("--tp-comm-overlap-cfg")
        if given:
            raise InputError(f"--schedule FILE replaces the generator arguments; drop {' '.join(given)}")
        schedule = load_schedule(args.schedule)
        layers = getattr(args, "layers", None)
        if layers is not None and (schedule.workload.get("name") != "transformer" or layers < 1):
            raise InputError(f"--layers {layers}: counts the blocks of a transformer schedule (>= 1); "
                             f"{args.schedule} holds {schedule.workload.get('name')}")
        return schedule
    if args.algo is None:
        raise InputError(f"--algo is required ({', '.join(ALGORITHMS)}), or give --schedule FILE")
    workload = workload_from_args(args)
    grid = parse_grid(args.grid) if args.grid is not None else None
    if before_build is not None:
        cls = algorithm_class(args.algo)
        if args.gpus is not None:
            check_ranks(args.gpus, f"--gpus {args.gpus}")
        if grid is not None and min(grid) >= 1:
            check_ranks(math.prod(grid), f"--grid {args.grid}")
        repeat = args.layers * pipeline["micro_batches"] if pipeline is not None else 1
        before_build(cls.name, cls.resolve_grid(grid, args.gpus), workload, args.passes, repeat)
    if pipeline is not None:
        if args.tp_comm_overlap:
            raise InputError("--tp-comm-overlap with --pp: the pipelined schedule is not lowered with it (its ring of "
                             "sends is not remapped onto the stages); `tpsim predict --global-batch` times it "
                             "per stage, or drop --pp")
        return lower_pipeline(args.algo, workload, args.layers, dtype=args.dtype, grid=grid, gpus=args.gpus,
                              overlap=args.overlap, async_dgrad=args.async_dgrad, **pipeline)
    return build_schedule(args.algo, workload, args.passes, args.dtype, grid=grid, gpus=args.gpus,
                          overlap=args.overlap, async_dgrad=args.async_dgrad, tp_comm_overlap=args.tp_comm_overlap,
                          tp_comm_overlap_cfg=tp_comm_overlap_cfg(args))

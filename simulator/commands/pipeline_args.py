"""The pipeline options of `tpsim schedule`, `verify`, `simulate` and `run`: a training step of L blocks.

``--pp P [--micro-batches M] [--schedule gpipe|1f1b|interleaved] [--virtual-stages V]`` with a transformer
(``--layers L``, default 1 or the model's) builds the whole pipelined step (``simulator.pipeline.lower``):
P stages of the algorithm's tensor-parallel grid, L / (P V) blocks per virtual stage, M micro-batches of
``--batch`` sequences each (default M = P), in the order ``--schedule`` names (default 1f1b); ``--vocab V``
(the schedule arguments' flag; default ``--model``'s, none without ``--model``) adds the LM head to the
last stage (``simulator.pipeline.head``). ``--schedule``
also takes a saved schedule FILE, as without ``--pp``; the three order names are never read as files.
"""

from __future__ import annotations

import argparse

from simulator.errors import InputError
from simulator.ir.schedule import Schedule
from simulator.pipeline.lower import pipeline_options
from simulator.pipeline.order import SCHEDULES
from simulator.workloads.models import preset

__all__ = ["DEFAULT_ORDER", "add_pipeline_arguments", "pipeline_request", "pipelined"]

DEFAULT_ORDER = "1f1b"
"""The pipeline order without ``--schedule``: Megatron-LM's default."""


def add_pipeline_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--pp --micro-batches --virtual-stages`` (``--schedule`` is the schedule arguments')."""
    group = parser.add_argument_group("pipeline (a training step of --layers transformer blocks)")
    group.add_argument("--pp", type=int, metavar="P", help="pipeline stages, each on the algorithm's grid "
                                                           "(ranks = P x the grid's; stage-major)")
    group.add_argument("--micro-batches", type=int, metavar="M",
                       help="with --pp: micro-batches of --batch sequences each (default P)")
    group.add_argument("--virtual-stages", type=int, metavar="V",
                       help="with --pp and --schedule interleaved: model chunks per GPU (default 1)")


def pipeline_request(args: argparse.Namespace) -> dict | None:
    """The pipeline the arguments ask for (pp, micro_batches, schedule, virtual_stages, vocab), or None; InputError
    for a pipeline option without ``--pp`` or with what a pipeline cannot take. Takes an order name out of
    ``args.schedule`` (leaving None there: no file)."""
    order = args.schedule if args.schedule in SCHEDULES else None
    if order is not None:
        args.schedule = None
    pp = getattr(args, "pp", None)
    if pp is None:
        given = [flag for flag, value in (("--micro-batches", getattr(args, "micro_batches", None)),
                                          ("--virtual-stages", getattr(args, "virtual_stages", None)),
                                          (f"--schedule {order}", order)) if value is not None]
        if given:
            raise InputError(f"{given[0]} is a pipeline option; add --pp P (pipeline stages) with a transformer "
                             f"and --layers L")
        return None
    if args.schedule is not None:
        raise InputError(f"--pp builds a pipelined step; --schedule {args.schedule} is a saved schedule, which "
                         f"carries its own (drop --pp, or name an order: {', '.join(SCHEDULES)})")
    if args.passes not in (None, "both"):
        raise InputError(f"--pp builds a training step (forward and backward); drop --pass {args.passes}")
    micro_batches = args.micro_batches if args.micro_batches is not None else pp
    vocab = args.vocab if args.vocab is not None else (preset(args.model).vocab if args.model else None)
    return {"pp": pp, "micro_batches": micro_batches, "schedule": order or DEFAULT_ORDER,
            "virtual_stages": args.virtual_stages if args.virtual_stages is not None else 1, "vocab": vocab}


def pipelined(schedule: Schedule) -> dict | None:
    """The pipeline options a schedule carries (``simulator.pipeline.lower``), or None."""
    return pipeline_options(schedule)

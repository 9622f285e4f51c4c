"""tpsim from Python (a notebook): ``plan``, ``simulate`` and ``collective``, each the command of that name.

Each function turns its keyword arguments into the command's flags (``global_batch=64`` is
``--global-batch 64``, ``zero=1`` is ``--zero 1``, ``overlap=True`` is ``--overlap``, a list is joined
by commas), runs the very function ``tpsim`` runs with ``--json``, and returns what it printed as
dataclasses: there is no second implementation to drift from the command line, and every flag of the
command works here (``tpsim predict --help`` lists them). A mistake raises
``simulator.errors.InputError`` with the line the command would print.

A topology is what ``--topology`` takes (a preset, ``NAME:N``, a file, a ``key=value`` cluster) or a
dict of the compact cluster fields (``{"server": "dgx-h100", "servers": 4}``, ``topologies.compact``).

Example (``docs/api.md`` has more; ``tests/test_api.py`` runs it)::

    >>> from simulator import api
    >>> best = api.plan(model="gpt3-1.3b", topology="dgx-h100", global_batch=16)[0]
    >>> best.arrangement, best.tp * best.dp
    ('data parallel dp=8', 8)
"""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import dataclass, field
from typing import Any

from simulator.errors import InputError

__all__ = ["PlanRow", "SimulateResult", "CollectiveResult", "plan", "rank", "simulate", "collective", "tpsim_json"]


@dataclass(frozen=True)
class PlanRow:
    """One row of ``tpsim predict``'s table: an arrangement and its predicted time (the JSON row in ``record``)."""

    rank: int | None
    """Its place in the ranking (None for a skipped arrangement)."""
    arrangement: str
    """The label the table prints: ``megatron tp=8 x dp=8``, ``tesseract [4,4,4] x dp=2``, ``1d [8]``."""
    algorithm: str
    """The registry key (``1d``, ``2d``, ``summa25d``, ...)."""
    grid: tuple[int, ...]
    tp: int | None
    """GPUs per tensor-parallel group (a training plan; None for one block's ranking)."""
    dp: int | None
    """Data-parallel degree (a training plan)."""
    status: str
    """``ok`` (simulated), ``bound``, ``duplicate`` or ``skipped`` (with ``reason``)."""
    time_s: float | None
    """A training plan's step time, or one block's simulated time."""
    reason: str | None
    record: dict = field(repr=False, compare=False)
    """Everything the command's JSON row holds (memory, split of the time, MFU, ...)."""

    @classmethod
    def from_record(cls, record: dict) -> "PlanRow":
        time_s = record.get("step_time_s", record.get("time_s"))
        label = record.get("arrangement")
        if label is None:  # one block's row names no label: the table's, from the same class
            from simulator.algorithms.arrangement import Arrangement

            placement = None if record.get("placement") in (None, "linear") else record["placement"]
            label = Arrangement(record["algorithm"], tuple(record["grid"]), placement,
                                record.get("overlap", False)).label
        return cls(record.get("rank"), label, record["algorithm"], tuple(record.get("grid") or ()),
                   record.get("tp"), record.get("dp"), record.get("status", "ok"), time_s, record.get("reason"),
                   record)


@dataclass(frozen=True)
class SimulateResult:
    """``tpsim simulate``: one schedule's simulated makespan and its critical rank's split."""

    makespan_s: float
    critical_rank: int
    compute_s: float
    comm_s: float
    wait_s: float
    record: dict = field(repr=False, compare=False)
    """The whole JSON object: per rank, busiest links, per-op records, memory, ``model_time_s``."""


@dataclass(frozen=True)
class CollectiveResult:
    """``tpsim collective``: one collective's time and nccl-tests bandwidths."""

    op: str
    ranks: int
    bytes: int
    algorithm: str
    protocol: str
    time_s: float
    algbw_GBps: float
    busbw_GBps: float
    record: dict = field(repr=False, compare=False)


def _flags(options: dict[str, Any]) -> list[str]:
    """Keyword arguments as flags: ``global_batch=64`` -> ``--global-batch 64``; True alone, False/None left out."""
    argv: list[str] = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            argv.append(flag)
        elif isinstance(value, (list, tuple)):
            argv += [flag, ",".join(map(str, value))]
        elif isinstance(value, dict) and key == "topology":
            argv += [flag, ",".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in value.items())]
        else:
            argv += [flag, str(value)]
    return argv


def tpsim_json(command: str, **options) -> Any:
    """Run ``tpsim COMMAND --json`` with ``options`` as flags (see the module doc) and return its JSON.

    The command's own function runs in this process; bad input raises InputError with its one line.
    """
    from simulator.cli import build_parser, _command_parser, _unrecognized

    argv = command.split() + _flags(options) + ["--json"]
    parser = build_parser(only=argv[0])
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said):
            args, extras = parser.parse_known_args(argv)
            if extras:
                sub = _command_parser(parser, args)
                sub.error(_unrecognized(sub, extras))
    except SystemExit:
        raise InputError(said.getvalue().strip().splitlines()[-1]) from None
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        args.func(args)
    return json.loads(printed.getvalue())


def plan(*, topology, global_batch: int, model: str | None = None, gpus: int | None = None,
         **options) -> list[PlanRow]:
    """``tpsim predict --global-batch``: the whole model's training plans, best first (then bounded and
    skipped rows); ``gpus`` defaults to every GPU of ``topology``; ``options`` are predict's other flags
    (``zero=1``, ``recompute="selective"``, ``algos=["megatron", "tesseract"]``, ``batch``, ...)."""
    rows = tpsim_json("predict", topology=topology, model=model, gpus=gpus, global_batch=global_batch, **options)
    return [PlanRow.from_record(row) for row in rows]


def rank(*, topology, gpus: int | None = None, **options) -> list[PlanRow]:
    """``tpsim predict`` without a global batch: every arrangement of one block (a gemm, mlp or
    transformer block: ``workload="gemm", m=..., k=..., n=...``, or ``model=..., batch=...``), best first."""
    return [PlanRow.from_record(row) for row in tpsim_json("predict", topology=topology, gpus=gpus, **options)]


def simulate(*, algo: str | None = None, topology, **options) -> SimulateResult:
    """``tpsim simulate``: one schedule (``algo`` with ``grid``/``gpus`` and the workload's sizes, or
    ``schedule=FILE``) on ``topology``; ``gpus`` defaults to the topology's where one grid fits."""
    data = tpsim_json("simulate", algo=algo, topology=topology, **options)
    return SimulateResult(data["makespan_s"], data["critical_rank"], data["compute_s"], data["comm_s"],
                          data["wait_s"], data)


def collective(*, op: str, group_size: int, topology, bytes: int | str, **options) -> CollectiveResult:
    """``tpsim collective``: one collective of ``bytes`` (``"64MiB"`` or an integer) on ``group_size`` GPUs."""
    data = tpsim_json("collective", op=op, group_size=group_size, topology=topology, bytes=bytes, **options)
    return CollectiveResult(data["op"], data["ranks"], data["bytes"], data["algorithm"], data["protocol"],
                            data["time_s"], data["algbw_GBps"], data["busbw_GBps"], data)

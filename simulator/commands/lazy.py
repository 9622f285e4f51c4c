"""Every ``tpsim`` sub-command by name, module and one-line help, so that ``tpsim`` imports one module, not all.

Importing every sub-command module to build the parser cost about a second of CPU (numpy, networkx,
simpy and the simulator itself) before ``tpsim --version`` could answer. ``simulator.cli.main`` reads
the sub-command's name off the command line (``command_named``), imports and registers that one
module, and lists the others by the name and help below (``add_commands_lazily``): ``tpsim --help``
shows the same list as before and imports nothing heavy. ``tests/test_cli_lazy.py`` holds this table
to what the modules register (names, order, help), so the two cannot drift apart.
"""

from __future__ import annotations

import argparse
from typing import Callable

from simulator.errors import InputError

__all__ = ["COMMANDS", "command_named", "add_commands_lazily"]

COMMANDS = (
    ("predict", "simulator.commands.predict", "rank every arrangement of P GPUs for a workload (the main job)"),
    ("sweep", "simulator.commands.sweep", "run a grid of training plans (predict --global-batch), one row each"),
    ("schedule", "simulator.commands.schedule", "build a schedule; print its accounting, grid or JSON"),
    ("verify", "simulator.commands.schedule", "run a schedule in the numpy interpreter against dense float64"),
    ("model", "simulator.commands.model", "list the transformer model presets, show one or a model file"),
    ("simulate", "simulator.commands.simulate", "simulate one schedule on a topology (flow-level network)"),
    ("collective", "simulator.commands.collective", "simulate one collective on a topology (time, algbw, busbw)"),
    ("export", "simulator.commands.export", "write a schedule as Chakra execution traces (for ASTRA-sim)"),
    ("topology", "topologies.command", "show, list and save interconnect topologies"),
    ("run", "executor.command", "run a schedule with torch.distributed (gloo or NCCL): check it and time it"),
    ("bench", "executor.bench_command",
     "microbenchmark collectives, send/recv and gemm through the executor (nccl-tests style)"),
    ("calibrate", "simulator.commands.calibrate",
     "fit a topology to bench or nccl-tests measurements; write the calibrated topology"),
    ("compare", "simulator.commands.compare", "simulate a measured run's schedule and compare predicted vs measured"),
)
"""(name, module that registers it, its help), in the order `tpsim --help` lists them."""


def command_named(argv: list[str]) -> str:
    """The sub-command ``argv`` runs: its first word that is not an option ("" when there is none).

    The top-level parser's options (``-h``, ``--version``) take no value, so the first other word
    is the sub-command, or a misspelling that argparse then refuses with the valid choices.
    """
    return next((word for word in argv if not word.startswith("-")), "")


def add_commands_lazily(subparsers: argparse._SubParsersAction, only: str,
                        register: Callable[[str, argparse._SubParsersAction], bool]) -> None:
    """Add every sub-command of ``COMMANDS`` to ``subparsers``: those of ``only``'s module in full, by
    ``register(module, subparsers)`` (False when the module is not installed), the rest as a name and
    its help."""
    target = next((module for name, module, _ in COMMANDS if name == only), None)
    for name, module, help_text in COMMANDS:
        if name in subparsers.choices:
            continue  # registered with another command of its module (verify, with schedule)
        if module == target:
            target = None  # registered once
            if register(module, subparsers) and name in subparsers.choices:
                continue
        stub = subparsers.add_parser(name, help=help_text)
        stub.set_defaults(func=_not_installed(name, module))


def _not_installed(name: str, module: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        raise InputError(f"this installation of tpsim lacks the module {module} that `tpsim {name}` runs")
    return run

"""The `tpsim` command line: one sub-command per user job, each registered by the module that owns it.

Every sub-command module exposes ``register(subparsers)``, which adds its parser and sets
``func=<callable(args) -> int>``. Registration must stay cheap: a module imports heavy dependencies
(torch above all) inside its ``func``, so that ``tpsim predict`` never loads torch.

User mistakes (bad arguments, files, logs) surface as ``ValueError`` (``InputError`` is one) or
``OSError``; ``main`` prints them as one line on stderr and exits with status 2. Set ``TPSIM_DEBUG=1`` to
see the traceback instead.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys

# Modules that add sub-commands, in the order `tpsim --help` lists them. A module that is missing
# (a part not built yet) is skipped, so each part of tpsim can be developed and tested on its own.
COMMAND_MODULES = (
    "simulator.commands.predict",
    "simulator.commands.schedule",
    "simulator.commands.simulate",
    "simulator.commands.collective",
    "topologies.command",
    "executor.command",
    "executor.bench_command",
    "simulator.commands.calibrate",
    "simulator.commands.compare",
)


class _ArgumentParser(argparse.ArgumentParser):
    """An argparse parser whose errors are one line and exit status 2 (argparse prints usage too)."""

    def error(self, message: str) -> None:  # noqa: D102 - argparse API
        sys.stderr.write(f"tpsim {self.prog.split(' ', 1)[-1]}: error: {message}\n")
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    """Build the top-level parser with every sub-command that is installed."""
    parser = _ArgumentParser(prog="tpsim", description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_ArgumentParser)
    subparsers.required = True
    for module_name in COMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name != module_name:
                raise
            continue
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``tpsim`` with ``argv``; return the exit status (0 ok, 1 a failed check, 2 bad input)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, OSError, json.JSONDecodeError) as error:
        if os.environ.get("TPSIM_DEBUG"):
            raise
        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        sys.stderr.write(f"tpsim {args.command}: error: {message}\n")
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

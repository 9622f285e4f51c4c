"""The `tpsim` command line: one sub-command per user job, each registered by the module that owns it.

Every sub-command module exposes ``register(subparsers)``, which adds its parser and sets
``func=<callable(args) -> int>``. Registration must stay cheap: a module imports heavy dependencies
(torch above all) inside its ``func``, so that ``tpsim predict`` never loads torch. ``main`` imports
only the module of the sub-command it runs (``simulator.commands.lazy``): ``tpsim --help`` and
``tpsim --version`` import no numpy, networkx or simpy, and start in a tenth of a second.

User mistakes (bad arguments, files, logs) surface as ``simulator.errors.InputError`` or ``OSError``,
and sizes too big for this machine as ``MemoryError``; ``main`` prints them as one line on stderr and
exits with status 2. Set ``TPSIM_DEBUG=1`` to see the traceback instead. Any other exception (a plain
``ValueError`` or ``KeyError`` included) is a bug in tpsim and keeps its traceback (exit status 1).
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import select
import sys

from simulator.commands.lazy import add_commands_lazily, command_named
from simulator.errors import InputError
from simulator.command_files import check_command_files  # noqa: I001 - after errors: kept apart from main's imports

# Modules that add sub-commands, in the order `tpsim --help` lists them. A module that is missing
# (a part not built yet) is skipped, so each part of tpsim can be developed and tested on its own.
# simulator.commands.lazy lists each sub-command's name and help, for `tpsim --help` without importing these.
COMMAND_MODULES = (
    "simulator.commands.predict",
    "simulator.commands.sweep",
    "simulator.commands.schedule",
    "simulator.commands.model",
    "simulator.commands.simulate",
    "simulator.commands.collective",
    "simulator.commands.export",
    "topologies.command",
    "executor.command",
    "executor.bench_command",
    "simulator.commands.calibrate",
    "simulator.commands.compare",
)


class _ArgumentParser(argparse.ArgumentParser):
    """An argparse parser whose errors are one line and exit status 2 (argparse prints usage too).

    The line names the (sub-)command and points at its ``--help``, which lists what is valid:
    ``tpsim schedule: error: unrecognized arguments: --bogus; see `tpsim schedule --help```.
    """

    def error(self, message: str) -> None:  # noqa: D102 - argparse API
        sys.stderr.write(f"{self.prog}: error: {message}; see `{self.prog} --help`\n")
        raise SystemExit(2)


def _command_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The innermost sub-command parser ``args`` went through (`tpsim topology show` -> its own parser)."""
    while True:
        action = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        name = getattr(args, action.dest, None) if action is not None else None
        if name is None:
            return parser
        parser = action.choices[name]


def _unrecognized(parser: argparse.ArgumentParser, extras: list[str]) -> str:
    """argparse's "unrecognized arguments" message, with the closest valid option for each misspelt one."""
    options = [option for action in parser._actions for option in action.option_strings]
    guesses = [match for extra in extras if extra.startswith("--")
               for match in difflib.get_close_matches(extra.split("=", 1)[0], options, n=1, cutoff=0.8)]
    hint = f" (did you mean {' '.join(guesses)}?)" if guesses else ""
    return f"unrecognized arguments: {' '.join(extras)}{hint}"


DISTRIBUTION = "tpsim"
"""The installed distribution whose version ``tpsim --version`` prints (pyproject.toml's name)."""

DESCRIPTION = "Plan, simulate and measure tensor-parallel matrix multiplication on GPU interconnects."


def version() -> str:
    """The installed distribution's version; "unknown" when tpsim runs from a source tree not installed."""
    import importlib.metadata  # 70 ms of imports: only for --version (simulator.commands.lazy)

    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"


class _VersionAction(argparse.Action):
    """argparse's ``version`` action, reading the version only when ``--version`` is given."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):  # noqa: D102 - argparse API
        parser._print_message(f"tpsim {version()}\n", sys.stdout)
        parser.exit()


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Build the top-level parser with every sub-command that is installed; with ``only`` (a
    sub-command's name, or "" for none), import and register that sub-command's module alone, the
    others listed by name and help (``simulator.commands.lazy``)."""
    parser = _ArgumentParser(prog="tpsim", description=DESCRIPTION)
    parser.add_argument("--version", action=_VersionAction, help="print tpsim's version and exit")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_ArgumentParser)
    subparsers.required = True
    if only is not None:
        add_commands_lazily(subparsers, only, _register)
        return parser
    for module_name in COMMAND_MODULES:
        _register(module_name, subparsers)
    return parser


def _register(module_name: str, subparsers: argparse._SubParsersAction) -> bool:
    """Import ``module_name`` and add its sub-commands; False when the module is not there."""
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name != module_name:
            raise
        return False
    module.register(subparsers)
    return True


def main(argv: list[str] | None = None) -> int:
    """Run ``tpsim`` with ``argv``; return the exit status (0 ok, 1 a failed check, 2 bad input)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(only=command_named(argv))
    # Not parse_args: the top-level parser would report a sub-command's unknown options as its own,
    # without saying which sub-command they were given to or what it accepts.
    args, extras = parser.parse_known_args(argv)
    if extras:
        command = _command_parser(parser, args)
        command.error(_unrecognized(command, extras))
    try:
        check_command_files(args)  # every output writable, distinct and not an input, before any work
        return int(args.func(args) or 0)
    except BrokenPipeError as error:
        if not _stdout_closed():
            return _input_error(args, error)
        return 141  # a reader that stopped early (`tpsim predict ... | head`), as the shell's SIGPIPE
    except (InputError, OSError) as error:
        return _input_error(args, error)
    except ImportError as error:  # a torch-free install running an executor command
        if error.name != "torch" or os.environ.get("TPSIM_DEBUG"):
            raise
        sys.stderr.write(f"tpsim {args.command}: error: needs torch, which cannot be imported here (only the "
                         f"simulator commands run without it); install it, e.g. pip install torch==2.13.0\n")
        return 2
    except MemoryError as error:  # numpy names the array it could not allocate
        return _input_error(args, error, prefix="out of memory: ", default="an allocation failed")
    except KeyboardInterrupt:
        return 130


def _input_error(args: argparse.Namespace, error: Exception, prefix: str = "", default: str = "") -> int:
    """Print a user's mistake as one line (the traceback under TPSIM_DEBUG); exit status 2."""
    if os.environ.get("TPSIM_DEBUG"):
        raise error
    message = str(error).strip().splitlines()[0] if str(error).strip() else default or type(error).__name__
    sys.stderr.write(f"tpsim {args.command}: error: {prefix}{message}\n")
    return 2


def _stdout_closed() -> bool:
    """Whether stdout is a pipe whose reader has gone (the write end then polls as an error); if so,
    point stdout at /dev/null, so that the interpreter's final flush does not fail a second time
    (Python's "Note on SIGPIPE")."""
    try:
        fd = sys.stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        closed = any(events & select.POLLERR for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no real file descriptor (a test's capture)
        return False
    if closed:
        os.dup2(os.open(os.devnull, os.O_WRONLY), fd)
    return closed


if __name__ == "__main__":
    sys.exit(main())

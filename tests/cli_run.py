"""Run `tpsim ARGS...` in-process for a test: its exit status and what it printed.

    from tests.cli_run import run
    status, out, err = run(capsys, "schedule", "--algo", "1d", ...)

argparse's own exits (``--help``, ``--version``, a bad option) give their status instead of raising, so a
test reads every outcome the same way. ``pyproject.toml`` puts the repository root on ``sys.path``
(``pythonpath = ["."]``), so every test folder imports this module alike.
"""

from simulator.cli import main

__all__ = ["run"]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``tpsim argv...`` run through ``simulator.cli.main``."""
    try:
        status = main([str(arg) for arg in argv])
    except SystemExit as exit_:  # argparse's --help, --version and its own errors
        status = exit_.code
    out, err = capsys.readouterr()
    return status, out, err

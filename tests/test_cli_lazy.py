"""``tpsim`` imports only the sub-command it runs: the lazy table matches what the modules register, and
``--help`` / ``--version`` load none of the heavy libraries (checked by module, not by the clock)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from simulator.cli import COMMAND_MODULES, build_parser
from simulator.commands.lazy import COMMANDS, add_commands_lazily, command_named
from simulator.errors import InputError

HEAVY = ("numpy", "networkx", "simpy", "matplotlib", "scipy", "torch")


def _subcommands(parser):
    return parser._subparsers._group_actions[0]


def test_the_lazy_table_is_what_the_modules_register():
    action = _subcommands(build_parser())
    assert [(c.dest, c.help) for c in action._choices_actions] == [(name, help_) for name, _, help_ in COMMANDS]
    assert list(dict.fromkeys(module for _, module, _ in COMMANDS)) == list(COMMAND_MODULES)


@pytest.mark.parametrize("name", [name for name, _, _ in COMMANDS])
def test_a_lazily_built_command_parses_as_the_full_one(name):
    full = _subcommands(build_parser()).choices[name]
    lazy = _subcommands(build_parser(only=name)).choices[name]
    assert lazy.format_help() == full.format_help()


def test_top_level_help_lists_the_same_commands_lazily():
    assert build_parser(only="").format_help() == build_parser().format_help()


def test_the_command_is_the_first_word_that_is_not_an_option():
    assert command_named(["--version"]) == ""
    assert command_named([]) == ""
    assert command_named(["-h", "predict", "--gpus", "8"]) == "predict"
    assert command_named(["topology", "show", "dgx-a100"]) == "topology"


def test_a_missing_module_is_one_line():
    import argparse

    parser = argparse.ArgumentParser()
    subparsers = parser.add_subparsers(dest="command")
    add_commands_lazily(subparsers, "bench", lambda module, sub: False)
    args = parser.parse_args(["bench"])
    with pytest.raises(InputError, match="lacks the module executor.bench_command that `tpsim bench` runs"):
        args.func(args)


def _imported(argv: list[str]) -> list[str]:
    code = ("import json, sys\nfrom simulator.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n"
            "    pass\nsys.stdout = sys.__stdout__\n"
            f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n")
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("argv", [["--version"], ["--help"], [], ["bogus"]])
def test_help_and_version_import_no_heavy_library(argv):
    assert _imported(argv) == []


def test_a_simulator_command_imports_what_it_uses_and_not_torch():
    imported = _imported(["model", "list"])
    assert "torch" not in imported and "matplotlib" not in imported

"""docs/frameworks.md names only flags `tpsim predict` takes, with values it accepts: the page cannot outlive a
renamed or removed option."""

from __future__ import annotations

import re
from pathlib import Path

from simulator.cli import build_parser

PAGE = Path(__file__).resolve().parent.parent / "docs" / "frameworks.md"


def _predict_options() -> dict[str, object]:
    """Every option string of ``tpsim predict`` -> its argparse action."""
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction").choices["predict"]
    return {s: action for action in sub._actions for s in action.option_strings}


def test_every_flag_in_the_framework_table_is_a_predict_option_with_a_valid_value():
    options = _predict_options()
    rows = [line for line in PAGE.read_text().splitlines() if line.startswith("| ") and "--" in line]
    assert len(rows) >= 7
    seen = 0
    for row in rows:
        flags = row.split(" | ")[1]
        for flag, value in re.findall(r"(--[a-z0-9-]+)(?: ([a-z0-9_|\\-]+))?", flags):
            assert flag in options, f"{flag} in docs/frameworks.md is not a tpsim predict option"
            choices = options[flag].choices
            if choices and value and not value.startswith("-"):
                for v in value.replace("\\", "").split("|"):
                    assert v in [str(c) for c in choices], f"{flag} {v}: not one of {list(choices)}"
            seen += 1
    assert seen >= 20

"""The refusals that docs/outputs.md shows, run as shown: exit status 2, that one line on stderr, nothing else.

The docs checker (tests/readme_examples.py, where present) runs the examples that succeed; a refusal is
marked there "not checked: a refusal", and this test runs each one from the repository root instead,
through ``simulator.cli.main``: stdout empty, stderr exactly the line the page shows, and no file in the
repository created or changed (every refusal comes before any work).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.cli_run import run

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "outputs.md"
_BLOCK = re.compile(r"<!-- not checked: a refusal[^>]*-->\n```\n\$ (tpsim [^\n]*)\n([^\n]*)\n```")


def _refusals() -> list[tuple[str, str]]:
    return _BLOCK.findall(PAGE.read_text())


def _state() -> dict[str, tuple[int, int]]:
    """Size and time of every file the refusals name or could write, at the top and in the data they read."""
    paths = [*REPO.iterdir(), *(REPO / "tests" / "data" / "nccl-tests" / "azure-ndv4-a100").iterdir()]
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in paths if p.is_file()}


def test_the_page_shows_refusals():
    assert len(_refusals()) >= 8


@pytest.mark.parametrize("command, line", _refusals(), ids=[c.split()[1] + f"-{i}" for i, (c, _) in
                                                             enumerate(_refusals())])
def test_a_refusal_on_the_page_prints_what_it_shows(capsys, monkeypatch, command, line):
    monkeypatch.chdir(REPO)
    before = _state()
    status, out, err = run(capsys, *shlex.split(command)[1:])
    assert (status, out, err) == (2, "", line + "\n")
    assert _state() == before

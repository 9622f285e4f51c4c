"""The `$ tpsim` examples of README.md and docs/*.md: find them, run them, and refresh their output.

Every fenced block of a page holding lines that start with ``$ tpsim`` is a set of examples: each
``$ tpsim ...`` line (continued by a trailing backslash) is a command, and the lines up to the next
``$`` line or the end of the block are what it prints on stdout. Each command runs in-process through
``simulator.cli.main`` with stdout captured, in a temporary folder where ``tests`` leads to the
repository's ``tests`` (so ``tests/data/...`` paths work and written files land in the temporary
folder), and must exit 0 and print exactly the text shown (trailing whitespace aside).

A block whose timings or shortening make it unreproducible is preceded by an HTML comment
``<!-- not checked: REASON -->`` (blank lines between are allowed) and is skipped.

``tests/test_readme_examples.py`` checks every example. When a change to the model moves printed
numbers on purpose, refresh the pages in one command and review the diff::

    python -m tests.readme_examples --update                 # README.md and every docs/*.md
    python -m tests.readme_examples --update docs/predict.md # only these pages
    python -m tests.readme_examples                          # report drifted examples, change nothing

The update reruns each checked example and rewrites its expected output in place; an example whose
output still matches (round-off aside) is left byte for byte, and one whose command fails is reported
and left alone (exit status 1). Blocks marked ``not checked`` are never touched.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shlex
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"
NOT_CHECKED = re.compile(r"<!--\s*not checked:[^>]*-->")


def pages() -> list[Path]:
    """README.md, then every docs/*.md in name order: the pages whose examples are checked."""
    return [README, *sorted(DOCS.glob("*.md"))]


def label(path: Path) -> str:
    """A page's name relative to the repository (``README.md``, ``docs/predict.md``)."""
    try:
        return path.resolve().relative_to(REPO).as_posix()
    except ValueError:
        return str(path)


def blocks(text: str) -> list[tuple[int, list[str], bool]]:
    """Fenced blocks: (first line number, lines, marked not checked)."""
    lines = text.split("\n")
    found, i = [], 0
    while i < len(lines):
        if lines[i].startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            k = i - 1
            while k >= 0 and not lines[k].strip():
                k -= 1
            found.append((i + 2, lines[i + 1:j], k >= 0 and bool(NOT_CHECKED.fullmatch(lines[k].strip()))))
            i = j + 1
        else:
            i += 1
    return found


@dataclass(frozen=True)
class Example:
    """One `$ tpsim` command of a page and where its shown output sits."""

    line_no: int
    """1-based line of the ``$ tpsim`` line."""
    command: str
    """The command, continuation lines joined."""
    expected: str
    """The output shown, trailing blank lines dropped."""
    out_start: int
    """0-based index in the page's lines of the first output line."""
    out_end: int
    """0-based index one past the last non-blank output line."""
    marked: bool
    """Preceded by a ``not checked`` comment."""


def parse(text: str) -> list[Example]:
    """Every `$ tpsim` example of a page, checked or not, in order."""
    found = []
    for start, lines, marked in blocks(text):
        i = 0
        while i < len(lines):
            if not lines[i].startswith("$ tpsim"):
                i += 1
                continue
            line_no, command = start + i, lines[i][2:]
            while command.endswith("\\"):
                i += 1
                command = command[:-1] + " " + lines[i].strip()
            i += 1
            first = i
            while i < len(lines) and not lines[i].startswith("$ "):
                i += 1
            last = i
            while last > first and not lines[last - 1].strip():
                last -= 1
            found.append(Example(line_no, command, "\n".join(lines[first:last]),
                                 start - 1 + first, start - 1 + last, marked))
    return found


def examples(text: str) -> tuple[list[tuple[int, str, str]], list[tuple[int, str]]]:
    """(checked, skipped): checked as (line number, command, expected stdout); skipped as (line, command)."""
    found = parse(text)
    return ([(e.line_no, e.command, e.expected) for e in found if not e.marked],
            [(e.line_no, e.command) for e in found if e.marked])


_ROUND_OFF = re.compile(r"\b(?:\d\.\d\de-(?:1[5-9]|[2-9]\d)|0\.00e\+00)\b")
"""A `tpsim verify` error at float64 round-off: which of these a run prints depends on the numpy and BLAS
build (numpy 2.4 summed a [2,2,2] block's dX to 1.51e-16 where the documented run gave 2.26e-16), so an
example only holds it to being round-off."""


_SIM_SECONDS = re.compile(r"(\bevents in )\d+\.\d+ s\b")
"""How long `tpsim simulate` itself ran (its "simulated ... events in 0.01 s" line): this host's wall clock, not
a figure of the model."""


def normalise(text: str) -> str:
    """The text as examples compare it: round-off errors and the simulator's own run time masked, trailing
    whitespace and lines dropped."""
    text = _ROUND_OFF.sub("<round-off>", text)
    text = _SIM_SECONDS.sub(r"\1<seconds> s", text)
    return "\n".join(line.rstrip() for line in text.rstrip("\n").split("\n"))


def run_example(command: str, workdir: Path) -> tuple[int, str]:
    """Run one `tpsim ...` command in-process in ``workdir``: (exit status, stdout)."""
    from simulator.cli import main  # here, so that `--help` and the parser need no simulator import

    argv = shlex.split(command)
    if argv[0] != "tpsim":
        raise ValueError(f"not a tpsim command: {command!r}")
    link = workdir / "tests"
    if not link.exists():
        link.symlink_to(REPO / "tests")
    printed, before = io.StringIO(), os.getcwd()
    os.chdir(workdir)
    try:
        with contextlib.redirect_stdout(printed):
            status = main(argv[1:])
    finally:
        os.chdir(before)
    return (0 if status is None else status), printed.getvalue()


def refresh(path: Path, write: bool) -> tuple[int, list[str], list[str]]:
    """Rerun a page's checked examples: (how many ran, drifted ones, failed ones); ``write`` rewrites drift."""
    text = path.read_text()
    lines = text.split("\n")
    drifted, failed, ran = [], [], 0
    for example in reversed([e for e in parse(text) if not e.marked]):
        where = f"{label(path)}:{example.line_no}"
        ran += 1
        print(f"{where}: {example.command}", file=sys.stderr, flush=True)
        with tempfile.TemporaryDirectory(prefix="tpsim-example-") as folder:
            try:
                status, printed = run_example(example.command, Path(folder))
            except SystemExit as stop:
                status, printed = stop.code or 1, ""
        if status != 0:
            failed.append(f"{where}: `{example.command}` exited with {status}")
            continue
        if normalise(printed) == normalise(example.expected):
            continue
        drifted.append(f"{where}: `{example.command}`")
        lines[example.out_start:example.out_end] = [line.rstrip() for line in printed.rstrip("\n").split("\n")]
    if write and drifted:
        path.write_text("\n".join(lines))
    return ran, drifted[::-1], failed[::-1]


def main(argv: list[str] | None = None) -> int:
    """Check, or with --update rewrite, the examples of the pages named (default: README and docs/)."""
    parser = argparse.ArgumentParser(prog="python -m tests.readme_examples", description=__doc__.split("\n")[0])
    parser.add_argument("--update", action="store_true",
                        help="rewrite each drifted example's output in place (default: only report)")
    parser.add_argument("files", nargs="*", type=Path, help="pages to process (default: README.md and docs/*.md)")
    args = parser.parse_args(argv)
    for path in args.files:
        if not path.is_file():
            parser.error(f"{path}: no such page; give README.md or docs/NAME.md")
    total, all_drifted, all_failed = 0, [], []
    for path in args.files or pages():
        ran, drifted, failed = refresh(path, args.update)
        total += ran
        all_drifted += drifted
        all_failed += failed
    verb = "rewrote" if args.update else "drifted"
    for line in all_drifted:
        print(f"{verb} {line}")
    for line in all_failed:
        print(f"failed {line}")
    print(f"{total} examples run, {len(all_drifted)} {verb}, {len(all_failed)} failed")
    return 1 if all_failed or (all_drifted and not args.update) else 0


if __name__ == "__main__":
    sys.exit(main())

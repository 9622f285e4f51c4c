"""The table of every published figure against tpsim, built from the reproductions' committed CSVs.

docs/published.md summarises every ``experiments.repro_*`` script in one table, one line per claim
group: a single row, two to four rows joined with " / ", or many rows as ranges ("a-b") with a count of
those reproduced ("n of m"). Which CSV rows form a line, how it is labelled and how its numbers print
are the data in ``LINES`` below, not inferred; every row of a CSV that ``LINES`` names must fall in
exactly one line or in ``LEFT_OUT`` (with the reason), so a row added to a reproduction shows up here
as an error rather than silently missing from the table. The figures come from the CSVs only: nothing
is rerun. The table sits in docs/published.md between two marker comments (``BEGIN``, ``END``).

Usage::

    python -m experiments.published_table                            # print the table
    python -m experiments.published_table --check docs/published.md  # exit 1 naming the first stale line
    python -m experiments.published_table --write docs/published.md  # replace the table between the markers

Example::

    >>> _range(["1.1", "94.42", "18.13"], _seconds)
    '1.10-94.4'
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
from dataclasses import dataclass
from typing import Callable, Mapping

from experiments.outputs import OUT

__all__ = ["BEGIN", "END", "LINES", "LEFT_OUT", "Line", "TableError", "table", "main"]

BEGIN = "<!-- published-table: begin -->"
END = "<!-- published-table: end -->"
HEADER = ("| paper | claim | published | tpsim | ratio | reproduced |", "|---|---|---|---|---|---|")


class TableError(ValueError):
    """The CSVs and ``LINES`` disagree: a row in no line or in two, or a line without its rows."""


# Number formats, each from the CSV's text (so a published figure can print as the paper wrote it).
def _written(text: str) -> str:
    return text  # as the reproduction recorded it: the paper's own precision (1.38, 4.0, 39.0)


def _two(text: str) -> str:
    return f"{float(text):.2f}"


def _one(text: str) -> str:
    return f"{float(text):.1f}"


def _whole(text: str) -> str:
    return f"{float(text):,.0f}"  # tokens/s and TFLOP/s: thousands separated, no decimals


def _percent(text: str) -> str:
    return f"{100 * float(text):.0f}"  # a scaling efficiency (0.77) as a percentage (77)


def _seconds(text: str) -> str:
    value = float(text)
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"  # 1.10 s, 94.4 s, 104.7 s: as the papers' tables give them


@dataclass(frozen=True)
class Line:
    """One line of the table: the CSV rows it summarises and how it prints them."""

    paper: str
    """The paper column, as the table names the source."""
    claim: str
    """The claim column; for "joined" lines it names the rows in their CSV order."""
    csv: str
    """The reproduction's CSV, a file name in the CSV folder."""
    where: Mapping[str, str | tuple[str, ...]]
    """A row belongs to the line when each named CSV field starts with the given text (or one of them)."""
    shape: str = "one"
    """``one`` row; ``joined``: ``rows`` rows as "a / b / c"; ``range``: any number of rows as "min-max"."""
    rows: int = 1
    """How many rows a "one" or "joined" line takes (its claim text names them, so the count is fixed)."""
    published: Callable[[str], str] = _written
    """Formats one published figure from its CSV text."""
    tpsim: Callable[[str], str] = _two
    """Formats one prediction from its CSV text."""
    published_unit: str = ""
    """Printed after the published figure(s), e.g. "x", "%", " s"."""
    tpsim_unit: str = ""
    """Printed after tpsim's figure(s)."""
    counted: bool = False
    """The verdict as "n of m" even when every row or none is reproduced (else "yes" / "no" then)."""
    companion: str = ""
    """A second CSV whose row of the same claim prints in parentheses when it differs (Tesseract's paper code)."""
    companion_name: str = ""
    """What the companion is, e.g. "paper code": named in the table's first parenthesis and in the verdict."""
    note: str = ""
    """Said after a "no" verdict: what the gap is put down to."""

    def __post_init__(self):
        if self.shape not in ("one", "joined", "range"):
            raise ValueError(f"Line shape must be one, joined or range, not {self.shape!r}")
        if self.shape == "one" and self.rows != 1 or self.shape == "joined" and not 2 <= self.rows <= 4:
            raise ValueError(f"a {self.shape} line takes {'1 row' if self.shape == 'one' else '2-4 rows'}, "
                             f"not {self.rows}")


TESSERACT = "repro_tesseract.csv"
PAPER_CODE = "repro_tesseract_paper_code.csv"  # the same claims timed without the depth all-reduce its code omits


def _tesseract(claim: str, prefix: str) -> Line:
    return Line("Tesseract", claim, TESSERACT, {"claim": prefix}, published_unit="x", tpsim_unit="x",
                companion=PAPER_CODE, companion_name="paper code")


def _tokens(paper: str, claim: str, where: Mapping[str, str | tuple[str, ...]]) -> Line:
    """A tokens/s per GPU line over many rows."""
    return Line(paper, claim, "repro_nemo.csv" if "NVIDIA" in paper else "repro_fsdp.csv", where, "range",
                published=_whole, tpsim=_whole, counted=True)


_SPEEDUP = {"published_unit": "x", "tpsim_unit": "x"}
_SECONDS = {"published": _seconds, "tpsim": _seconds, "published_unit": " s", "tpsim_unit": " s"}
_EFFICIENCY = {"published": _percent, "tpsim": _percent, "published_unit": "%", "tpsim_unit": "%"}

LINES: tuple[Line, ...] = (
    _tesseract("strong scaling over 1-D", "strong scaling over 1-D"),
    _tesseract("strong scaling over 2-D", "strong scaling over 2-D"),
    _tesseract("weak scaling [4,4,4] over [8,8,1]", "weak scaling [4,4,4] over [8,8,1]"),
    _tesseract("weak-scaling inference over 1-D", "weak-scaling inference over 1-D"),
    _tesseract("weak-scaling inference over 2-D", "weak-scaling inference over 2-D"),
    _tesseract("weak-scaling throughput over 1-D", "weak-scaling training throughput over 1-D"),
    _tesseract("weak-scaling throughput over 2-D", "weak-scaling training throughput over 2-D"),
    Line("Optimus", "training over 1-D", "repro_optimus.csv", {"claim": "training over"}, **_SPEEDUP),
    Line("Optimus", "inference over 1-D", "repro_optimus.csv", {"claim": "inference over"}, **_SPEEDUP),
    Line("3-D TP", "over 1-D", "repro_3d.csv", {"claim": "over 1-D"}, **_SPEEDUP),
    Line("3-D TP", "over 2-D", "repro_3d.csv", {"claim": "over 2-D"}, **_SPEEDUP),
    Line("Megatron-LM", "1.2B on one V100", "repro_megatron.csv", {"claim": "1.2B on one GPU"},
         published_unit=" TFLOP/s", tpsim=_one, note="compute model"),
    Line("Megatron-LM", "model parallel 2 / 4 / 8 GPUs", "repro_megatron.csv",
         {"claim": "model-parallel weak scaling"}, "joined", 3, **_EFFICIENCY),
    Line("Megatron-LM", "model + data parallel 64 / 128 / 256 / 512", "repro_megatron.csv",
         {"claim": "model + data parallel"}, "joined", 4, **_EFFICIENCY),
    Line("Narayanan et al. 2021", "Table 1, TFLOP/s per GPU, 1.7B to 1T on 32 to 3,072 A100s", "repro_pipeline.csv",
         {"paper": "Narayanan"}, "range", published=_whole, tpsim=_whole, counted=True),
    Line("Korthikanti et al. 2022", "Table 5, s per iteration, 22B to 1T, two recompute modes", "repro_pipeline.csv",
         {"paper": "Korthikanti"}, "range", counted=True, **_SECONDS),
    Line("Korthikanti et al. 2022", "Table 4, ms per layer forward and backward, 22B, tp 8, five recompute and "
         "sequence-parallel modes", "repro_training.csv", {"claim": "one layer"}, "range", published=_one, tpsim=_one,
         published_unit=" ms", tpsim_unit=" ms", counted=True),
    Line("Korthikanti et al. 2022", "Table 5, model / hardware FLOPs utilisation, 22B on 8 A100s",
         "repro_training.csv", {"unit": "%"}, "joined", 2, published=_one, tpsim=_one, published_unit="%",
         tpsim_unit="%"),
    Line("Smith et al. 2022", "MT-NLG 530B, s per iteration, tp 8 x pp 35 on 2,240 / 2,800 / 3,360 A100s, "
         "Megatron-DeepSpeed", "repro_pipeline.csv", {"paper": "Smith"}, "joined", 3, counted=True, **_SECONDS),
    Line("Le Scao et al. 2022", "BLOOM 176B, s per iteration, tp 4 x pp 12 x dp 8 on 384 A100s (4 x 100 Gb/s a "
         "server), Megatron-DeepSpeed", "repro_pipeline.csv", {"paper": "Le Scao"}, **_SECONDS),
    _tokens("MosaicML llm-foundry", "FSDP (ZeRO-3) tokens/s per GPU, MPT 7B to 70B, 8 to 512 A100 40/80GB and H100 "
            "80GB, sequence 512 to 64K", {"paper": "llm-foundry"}),
    Line("torchtitan", "FSDP tokens/s per GPU, Llama 3.1 8B, 8 and 128 H100s (500 W)", "repro_fsdp.csv",
         {"paper": "torchtitan", "claim": "llama3-8b seq 8192 tokens"}, "joined", 2, published=_whole, tpsim=_whole,
         counted=True),
    Line("torchtitan", "the same, FSDP + torch.compile", "repro_fsdp.csv",
         {"paper": "torchtitan", "claim": "llama3-8b seq 8192 torch.compile"}, "joined", 2, published=_whole,
         tpsim=_whole, counted=True),
    _tokens("NVIDIA NeMo 24.07", "Megatron-Core tokens/s per GPU, FP8, GPT3 5B-175B and Llama 2 7B-70B, 8 to 512 "
            "H100s", {"paper": "NeMo 24.07"}),
    _tokens("NVIDIA Megatron-Bridge 25.11, 26.04.01", "Megatron-Core tokens/s per GPU, FP8, Llama 3 8B and 70B, 8 "
            "and 64 H100s", {"paper": "Megatron-Bridge", "configuration": "DGX-H100"}),
    _tokens("NVIDIA Megatron-Bridge 25.11, 26.04.01", "the same, FP8 / MXFP8, 8 B200s and 8 or 64 GB200s",
            {"paper": "Megatron-Bridge", "configuration": ("DGX-B200", "DGX-GB200")}),
)
"""The table, line by line, in its order."""

LEFT_OUT: tuple[tuple[str, Mapping[str, str | tuple[str, ...]], str], ...] = (
    ("repro_training.csv", {"claim": "iteration time"},
     "the same 22B runs as repro_pipeline's first two Korthikanti rows (Table 5), which the table shows"),
)
"""Rows of the CSVs in ``LINES`` deliberately not in the table: (CSV, where, why)."""


def _matches(row: Mapping[str, str], where: Mapping[str, str | tuple[str, ...]]) -> bool:
    return all(row[name].startswith(text) for name, text in where.items())


def _read(folder: str, name: str) -> list[dict[str, str]]:
    path = os.path.join(folder, name)
    try:
        with open(path, newline="") as handle:
            return list(csv.DictReader(handle))
    except OSError as error:
        raise TableError(f"{path}: {error.strerror}") from None


def _assign(folder: str) -> list[list[dict[str, str]]]:
    """Each line's rows, in CSV order; ``TableError`` for a row in no line or in two, or a line short of rows."""
    tables = {name: _read(folder, name) for name in dict.fromkeys(line.csv for line in LINES)}
    taken: dict[tuple[str, int], Line] = {}
    grouped = []
    for line in LINES:
        rows = []
        for index, row in enumerate(tables[line.csv]):
            if _matches(row, line.where):
                if (line.csv, index) in taken:
                    first = taken[(line.csv, index)]
                    raise TableError(f"{line.csv}: row {index + 2} is in two lines, '{first.paper} | {first.claim}' "
                                     f"and '{line.paper} | {line.claim}'")
                taken[(line.csv, index)] = line
                rows.append(row)
        if not rows or (line.shape != "range" and len(rows) != line.rows):
            want = "rows" if line.shape == "range" else f"{line.rows} row(s)"
            raise TableError(f"{line.csv}: {len(rows)} rows for '{line.paper} | {line.claim}', which takes {want}")
        grouped.append(rows)
    for name, rows in tables.items():
        for index, row in enumerate(rows):
            if (name, index) not in taken and not any(f == name and _matches(row, w) for f, w, _ in LEFT_OUT):
                raise TableError(f"{name}: row {index + 2} ({row['paper']} | {row['claim']} | "
                                 f"{row['configuration']}) is in no line of the table; add it to LINES or LEFT_OUT")
    return grouped


def _ratio(row: Mapping[str, str]) -> float:
    return float(row["predicted"]) / float(row["published"])  # from the full-precision figures, not the rounded column


def _range(texts: list[str], fmt: Callable[[str], str]) -> str:
    low, high = fmt(min(texts, key=float)), fmt(max(texts, key=float))
    return low if low == high else f"{low}-{high}"


def _cells(line: Line, rows: list[dict[str, str]], companions: list[dict[str, str]], name: bool) -> list[str]:
    """The line's six cells; ``name``: say what the parenthesised companion figure is (its first in the table)."""
    published = [r["published"] for r in rows]
    predicted = [r["predicted"] for r in rows]
    ratios = [f"{_ratio(r)!r}" for r in rows]
    if line.shape == "range":
        cells = [_range(published, line.published), _range(predicted, line.tpsim), _range(ratios, _two)]
    else:
        cells = [" / ".join(line.published(t) for t in published), " / ".join(line.tpsim(t) for t in predicted),
                 " / ".join(_two(t) for t in ratios)]
    cells[0] += line.published_unit
    cells[1] += line.tpsim_unit
    done = sum(r["reproduced"] == "yes" for r in rows)
    if line.counted or 0 < done < len(rows):
        verdict = f"{done} of {len(rows)}"
    else:
        verdict = "yes" if done else "no"
    if companions:
        (other,) = companions
        other_tpsim = line.tpsim(other["predicted"]) + line.tpsim_unit
        if other_tpsim != cells[1]:
            cells[1] += f" ({line.companion_name + ' ' if name else ''}{other_tpsim})"
            cells[2] += f" ({_two(repr(_ratio(other)))})"
        if verdict == "no" and other["reproduced"] == "yes":
            verdict = f"{line.companion_name} only"
    if verdict == "no" and line.note:
        verdict += f" ({line.note})"
    return [line.paper, line.claim, *cells, verdict]


def table(folder: str = OUT) -> list[str]:
    """The markdown table (header first), one string a line, from the CSVs in ``folder``."""
    lines = list(HEADER)
    named = set()  # companions already named: the first parenthesis says what it is, the rest just give figures
    for line, rows in zip(LINES, _assign(folder)):
        companions = []
        if line.companion:
            claims = {r["claim"] for r in rows}
            companions = [r for r in _read(folder, line.companion) if r["claim"] in claims]
            if len(companions) != 1:
                raise TableError(f"{line.companion}: {len(companions)} rows for '{line.paper} | {line.claim}', not 1")
        cells = _cells(line, rows, companions, line.companion not in named)
        if "(" in cells[3]:
            named.add(line.companion)
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _split(path: str) -> tuple[list[str], int, int]:
    """``path``'s lines and the indices of its begin and end markers; SystemExit(2) when either is missing."""
    try:
        with open(path) as handle:
            text = handle.read().splitlines()
    except OSError as error:
        raise _usage(f"{path}: {error.strerror}") from None
    marks = [next((i for i, t in enumerate(text) if t.strip() == mark), -1) for mark in (BEGIN, END)]
    if -1 in marks or marks[0] > marks[1]:
        raise _usage(f"{path}: needs a '{BEGIN}' line and, after it, a '{END}' line around the table")
    return text, marks[0], marks[1]


def _usage(message: str) -> SystemExit:
    print(f"python -m experiments.published_table: {message}", file=sys.stderr)
    return SystemExit(2)


def check(path: str, folder: str = OUT) -> str:
    """"" when ``path``'s table equals the CSVs' table, else one line naming the first line that differs."""
    text, begin, end = _split(path)
    have = [t.rstrip() for t in text[begin + 1:end] if t.strip()]
    want = table(folder)
    for number, (old, new) in enumerate(zip(have, want), start=1):
        if old != new:
            return f"{path}: table line {number} differs from the CSVs: it has '{old}', the CSVs give '{new}'"
    if len(have) != len(want):
        return f"{path}: the table has {len(have)} lines, the CSVs give {len(want)}"
    return ""


def write(path: str, folder: str = OUT) -> None:
    """Replace the table between ``path``'s markers with the CSVs' table."""
    text, begin, end = _split(path)
    new = table(folder)
    with open(path, "w") as handle:
        handle.write("\n".join(text[:begin + 1] + new + text[end:]) + "\n")


def main(argv: list[str] | None = None) -> int:
    """Print, check or write the table; 0 on success, 1 when ``--check`` finds it stale, 2 on bad input."""
    parser = argparse.ArgumentParser(prog="python -m experiments.published_table", description=__doc__.split("\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", metavar="FILE", help="exit 1 naming the first line where FILE's table is stale")
    mode.add_argument("--write", metavar="FILE", help=f"replace the table between FILE's {BEGIN} and {END} lines")
    parser.add_argument("--csv-dir", default=OUT, metavar="DIR", help=f"where the CSVs are (default {OUT})")
    args = parser.parse_args(argv)
    try:
        if args.check:
            problem = check(args.check, args.csv_dir)
            print(problem or f"{args.check}: the table matches the CSVs in {args.csv_dir}")
            return 1 if problem else 0
        if args.write:
            write(args.write, args.csv_dir)
            print(f"wrote the table into {args.write}")
        else:
            print("\n".join(table(args.csv_dir)))
    except TableError as error:
        print(f"python -m experiments.published_table: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

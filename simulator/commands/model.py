"""``tpsim model``: the published transformer models tpsim knows (``simulator.workloads.models``).

- ``tpsim model list``: one aligned table, a model a row: layers, hidden, heads, ffn, seq, dropout,
  the published parameter count, the count ``ModelPreset.parameter_count()`` computes, and the source.
- ``tpsim model list --json``: the same as a JSON list, one object per model with every
  ``ModelPreset`` field and ``computed_params``.

Example::

    $ tpsim model list --json | python -c "import json,sys; print(json.load(sys.stdin)[6]['hidden'])"
    5120
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from simulator.workloads.models import MODELS, ModelPreset

__all__ = ["register", "format_models", "model_records"]

_COLUMNS = ("name", "layers", "hidden", "heads", "ffn", "seq", "dropout", "published", "computed", "source")
_LEFT = {"name", "source"}  # text columns; the numbers align right


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``model`` sub-command and its ``list`` action."""
    parser = subparsers.add_parser("model", help="list the published transformer model presets",
                                   description="The published transformer models tpsim knows: their sizes "
                                               "fill --model NAME's transformer.")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    listing = actions.add_parser("list", help="every preset: sizes, parameter counts and sources",
                                 description="Every model preset, with its published and computed parameter "
                                             "counts and its source.")
    listing.add_argument("--json", action="store_true", help="print JSON instead of a table")
    listing.set_defaults(func=_list)


def _count(n: float) -> str:
    """A parameter count people read: 125.2M, 12.85B, 1.008T."""
    if n < 1e9:
        return f"{n / 1e6:.1f}M"
    if n < 1e12:
        return f"{n / 1e9:.2f}B"
    return f"{n / 1e12:.3f}T"


def model_records() -> list[dict]:
    """The JSON of ``tpsim model list --json``: each preset's fields and its ``computed_params``."""
    return [{**dataclasses.asdict(m), "computed_params": m.parameter_count()} for m in MODELS.values()]


def format_models(models: list[ModelPreset]) -> str:
    """The presets as one table, a header line and a row per model, columns padded to align."""
    rows = [_COLUMNS] + [(m.name, str(m.layers), str(m.hidden), str(m.heads), str(m.ffn), str(m.seq),
                          f"{m.dropout:g}", _count(m.published_params), _count(m.parameter_count()), m.source)
                         for m in models]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS))]
    lines = ["  ".join(cell.ljust(w) if column in _LEFT else cell.rjust(w)
                       for column, cell, w in zip(_COLUMNS, row, widths)).rstrip() for row in rows]
    return "\n".join(lines)


def _list(args: argparse.Namespace) -> int:
    if args.json:
        json.dump(model_records(), sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    print(format_models(list(MODELS.values())))
    return 0

"""``tpsim model``: the transformer models tpsim knows (``simulator.workloads.models``) and model files.

- ``tpsim model list``: one aligned table, a model a row: layers, hidden, heads, key/value heads, ffn,
  seq, vocab, dropout, the published parameter count, the count ``ModelPreset.parameter_count()``
  computes, and the source.
- ``tpsim model list --json``: the same as a JSON list, one object per model with every
  ``ModelPreset`` field and ``computed_params``.
- ``tpsim model show NAME|FILE``: one model (a preset, or a YAML or JSON model file,
  ``simulator.workloads.model_file``): its sizes and architecture, its parameters by part and its
  training FLOPs per token (``ModelPreset.flops_per_token``).

Example::

    $ tpsim model list --json | python -c "import json,sys; print(json.load(sys.stdin)[6]['hidden'])"
    5120
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from simulator.workloads.models import MODELS, ModelPreset, resolve_model

__all__ = ["register", "format_models", "model_records", "show_lines"]

_COLUMNS = ("name", "layers", "hidden", "heads", "kv", "ffn", "seq", "vocab", "dropout", "published", "computed",
            "source")
_LEFT = {"name", "source"}  # text columns; the numbers align right


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``model`` sub-command and its ``list`` and ``show`` actions."""
    parser = subparsers.add_parser("model", help="list the transformer model presets, show one or a model file",
                                   description="The transformer models tpsim knows: their sizes fill --model "
                                               "NAME's transformer; --model FILE.yaml describes any other.")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    listing = actions.add_parser("list", help="every preset: sizes, parameter counts and sources",
                                 description="Every model preset, with its published and computed parameter "
                                             "counts and its source.")
    listing.add_argument("--json", action="store_true", help="print JSON instead of a table")
    listing.set_defaults(func=_list)
    show = actions.add_parser("show", help="one model: sizes, architecture, parameters, FLOPs per token",
                              description="One preset or model file (.yaml, .json): its sizes and architecture, "
                                          "its parameter count by part and its training FLOPs per token.")
    show.add_argument("model", metavar="NAME|FILE", help="a preset name (`tpsim model list`) or a model file")
    show.add_argument("--json", action="store_true", help="print JSON instead of text")
    show.set_defaults(func=_show)


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
    rows = [_COLUMNS] + [(m.name, str(m.layers), str(m.hidden), str(m.heads), str(m.kv_heads), str(m.ffn),
                          str(m.seq), str(m.vocab), f"{m.dropout:g}",
                          "-" if m.published_params is None else _count(m.published_params),
                          _count(m.parameter_count()), m.source) for m in models]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS))]
    lines = ["  ".join(cell.ljust(w) if column in _LEFT else cell.rjust(w)
                       for column, cell, w in zip(_COLUMNS, row, widths)).rstrip() for row in rows]
    return "\n".join(lines)


def show_lines(m: ModelPreset) -> list[str]:
    """``tpsim model show``'s text: sizes, architecture, parameters by part, FLOPs per token."""
    d = m.hidden // m.heads
    attention = ("multi-head" if m.kv_heads == m.heads else "multi-query" if m.kv_heads == 1 else
                 f"grouped-query, {m.heads // m.kv_heads} query heads per key/value head")
    mlp = (f"SwiGLU: gate and up {m.hidden} -> {m.ffn}, down {m.ffn} -> {m.hidden}" if m.activation == "swiglu"
           else f"GELU: {m.hidden} -> {m.ffn} -> {m.hidden}")
    layer, outside = m.layer_parameters(), m.outside_parameters()
    published = "" if m.published_params is None else f" (published {_count(m.published_params)})"
    lines = [f"{m.name}: {m.source}",
             f"  layers {m.layers}, hidden {m.hidden}, heads {m.heads} of width {d}, kv_heads {m.kv_heads} ({attention})",
             f"  mlp {mlp}",
             f"  seq {m.seq}, vocab {m.vocab}, dropout {m.dropout:g}",
             f"  norm {m.norm}, position {m.position}, embedding {'tied to' if m.tied else 'untied from'} the "
             f"output layer, {'biases' if m.bias else 'no biases'}",
             f"  parameters {m.parameter_count():,} = {_count(m.parameter_count())}{published}",
             f"    per layer {sum(layer.values()):,}: " + ", ".join(f"{k} {v:,}" for k, v in layer.items()),
             "    outside the layers: " + ", ".join(f"{k} {v:,}" for k, v in outside.items() if v),
             f"  training FLOPs per token {m.flops_per_token():.4g}: 3 x the forward's 2 per linear weight "
             f"(output layer included) + 4 s h per layer (attention scores)"]
    return lines


def _list(args: argparse.Namespace) -> int:
    if args.json:
        json.dump(model_records(), sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    print(format_models(list(MODELS.values())))
    return 0


def _show(args: argparse.Namespace) -> int:
    m = resolve_model(args.model)
    if args.json:
        record = {**dataclasses.asdict(m), "computed_params": m.parameter_count(),
                  "layer_params": m.layer_parameters(), "outside_params": m.outside_parameters(),
                  "flops_per_token": m.flops_per_token()}
        json.dump(record, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    print("\n".join(show_lines(m)))
    return 0

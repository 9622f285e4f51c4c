"""One plan run in this process: `tpsim predict ARGS --json` through the command line, reduced to one row.

``run_plan(argv)`` calls ``simulator.cli.main(["predict", *argv, "--json"])`` with stdout and stderr
captured, so a plan runs exactly as the command would (every predict option, its checks and its
messages) and prints nothing of its own. Its ranked rows become the sweep's result fields:

- ``ok``: the plan to launch, the best simulated arrangement that fits (predict's launch line);
- ``bound``: the best fitting arrangement, none of them simulated (``simulate-top: 0``);
- ``no-fit``: no arrangement fits in memory; the fields are the one with the lowest bound, whose
  ``peak_bytes`` says by how much;
- ``none``: no arrangement applies to the model and batch; ``reason`` is the first one's reason;
- ``refused``: predict refused the combination (exit status 2); ``reason`` is its one line;
- ``error``: predict failed otherwise (a bug in tpsim); ``reason`` is the exception.

The function and what it returns are plain data, so any executor (a forked process, a Dask worker)
runs it and sends its row back unchanged.
"""

from __future__ import annotations

import contextlib
import io
import json

from simulator.errors import InputError

__all__ = ["RESULT_FIELDS", "STATUSES", "run_plan"]

STATUSES = ("ok", "bound", "no-fit", "none", "refused", "error")

_RENAMED = {"model": "step_model"}
"""predict's ``model`` field says how a step time was obtained (simulated or bound); in a sweep
``model`` is the input column naming the model."""


def _predict_fields() -> tuple[str, ...]:
    from simulator.commands.predict_training import CSV_FIELDS

    return tuple(_RENAMED.get(f, f) for f in CSV_FIELDS if f not in ("rank", "status", "reason"))


RESULT_FIELDS = ("status", "reason") + _predict_fields()
"""A row's result columns: the status, its reason, then predict's own CSV columns of the chosen row."""


def _one_line(text: str) -> str:
    lines = [line.strip() for line in str(text).strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _fields(record: dict) -> dict:
    out = {}
    for field in _predict_fields():
        source = next((k for k, v in _RENAMED.items() if v == field), field)
        value = record.get(source)
        if source == "grid" and value is not None:
            value = "x".join(map(str, value))
        if source == "peak_bytes":
            value = (record.get("memory") or {}).get("peak_bytes")
        out[field] = value
    return out


def choose(records: list[dict]) -> dict:
    """The result fields of predict's ranked ``records`` (module doc)."""
    ranked = [r for r in records if r.get("status") != "skipped"]
    fit = [r for r in ranked if r.get("fits") is not False]
    winner = next((r for r in fit if r.get("simulated")), None)
    if winner is not None:
        return {"status": "ok", "reason": None, **_fields(winner)}
    if fit:
        return {"status": "bound", "reason": "no fitting arrangement simulated (simulate-top 0)", **_fields(fit[0])}
    if ranked:
        return {"status": "no-fit", "reason": "no arrangement fits in memory", **_fields(ranked[0])}
    skipped = [r.get("reason") for r in records if r.get("reason")]
    reason = f"no arrangement applies: {skipped[0]}" if skipped else "no arrangement applies"
    return {"status": "none", "reason": reason, **{f: None for f in _predict_fields()}}


def run_plan(argv: list[str]) -> dict:
    """The result fields (``RESULT_FIELDS``) of `tpsim predict ARGV --json`, run in this process."""
    from simulator.cli import main

    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(["predict", *argv, "--json"])
    except SystemExit as exit_:  # argparse's own refusal of an argument
        status = exit_.code
    except InputError as error:  # raised rather than printed under TPSIM_DEBUG=1
        return _empty("refused", _one_line(error))
    except Exception as error:  # a bug in predict: the row says so, the other plans go on
        return _empty("error", f"{type(error).__name__}: {_one_line(error) or 'no message'}")
    if status == 130:
        raise KeyboardInterrupt  # predict saw the interrupt meant for the whole sweep
    if status == 2:
        return _empty("refused", _one_line(err.getvalue()).removeprefix("tpsim predict: error: "))
    if status != 0:
        return _empty("error", f"exit status {status}: {_one_line(err.getvalue())}")
    return choose(json.loads(out.getvalue()))


def _empty(status: str, reason: str) -> dict:
    return {"status": status, "reason": reason, **{f: None for f in _predict_fields()}}

"""Before any work: every spec key is a predict option, and every value one predict would take.

A key must be an option of `tpsim predict` (its parser is the one the command line uses, so an option
added to predict is a valid key at once), other than those the sweep owns (its output and processes:
``--json --csv --png --workers``). Each value is checked on its own, in two steps: predict's parser
converts it (types and choices: ``--zero x``, ``--dtype fp8``), then the library check for what it
names, where it has one that needs no other option: a model preset, a topology (built once, which also
gives its GPU count for plans without ``gpus``), a calibration profile, the optimizer, ZeRO stage and
recomputation, algorithm names, positive counts. What predict refuses only in combination (more GPUs
than a topology has, tp sizes that do not divide the GPUs) is a plan's row with status ``refused``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math

from simulator.errors import InputError
from simulator.sweep.spec import check_required, shown

__all__ = ["predict_parser", "argv_of", "check_spec", "OWNED"]

OWNED = ("help", "json", "csv", "png", "workers")
"""predict options a spec may not set: the sweep writes the output and chooses the processes."""


def predict_parser() -> argparse.ArgumentParser:
    """`tpsim predict`'s parser, built by the command line itself (``simulator.cli.build_parser``)."""
    from simulator.cli import build_parser  # here: the command line imports this package's command

    root = build_parser()
    sub = next(a for a in root._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["predict"]


def _action(parser: argparse.ArgumentParser, key: str, where: str) -> argparse.Action:
    import difflib

    option = "--" + key
    action = parser._option_string_actions.get(option)
    if action is None or key in OWNED:
        valid = sorted(o[2:] for o in parser._option_string_actions if o.startswith("--") and o[2:] not in OWNED)
        close = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]}?)" if close else ""
        why = "the sweep sets it" if action is not None else "not a `tpsim predict` option"
        raise InputError(f"{where}: unknown key {key!r}{hint}: {why}; valid: {', '.join(valid)}")
    return action


def _is_flag(action: argparse.Action) -> bool:
    return action.nargs == 0


def argv_of(parser: argparse.ArgumentParser, inputs: dict) -> list[str]:
    """The predict arguments of one plan's inputs (key -> value): ``["--model", "gpt3-125m", ...]``."""
    argv = []
    for key, value in inputs.items():
        action = parser._option_string_actions["--" + key]
        if _is_flag(action):
            argv += ["--" + key] if value else []
        else:
            for one in value if isinstance(value, tuple) else (value,):
                argv += ["--" + key, str(one)]
    return argv


def parse_predict(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """``argv`` parsed by predict's parser; its one-line error (``argument --zero: invalid int value: 'x'``)
    as an InputError instead of an exit."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            return parser.parse_args(argv)
    except SystemExit:
        line = err.getvalue().strip().splitlines()[-1] if err.getvalue().strip() else "refused"
        raise InputError(line.split(": error: ", 1)[-1].split("; see `", 1)[0]) from None


# Where a value has a check of its own, needing no other option: dest -> check(value parsed).
def _model(name):
    from simulator.workloads.models import preset

    preset(name)


def _positive(flag: str, largest: int | None = None):
    def check(value):
        if value < 1 or (largest is not None and value > largest):
            top = f" to {largest:,}" if largest else ""
            raise InputError(f"{flag} {value}: must be an integer from 1{top}")
    return check


def _algos(text):
    from simulator.algorithms.registry import ALGORITHMS, ALIASES

    names = [part.strip() for part in text.split(",") if part.strip()]
    bad = [n for n in names if n not in ALGORITHMS and n not in ALIASES]
    if not names or bad:
        raise InputError(f"--algos {text!r}: unknown algorithm {bad[0] if bad else '(none)'!r}; valid: "
                         f"{', '.join(ALGORITHMS)}")


def _training_setup(dest):
    def check(value):
        from simulator.memory.setup import TrainingSetup

        TrainingSetup(**{dest: value, "dp": 1, "layers": 1, "vocab": None})
    return check


def _non_negative(flag):
    def check(value):
        if value < 0:
            raise InputError(f"{flag} {value}: must be >= 0")
    return check


def _megabytes(value):
    if not (math.isfinite(value) and value > 0):
        raise InputError(f"--bucket-mb {value:g}: a bucket size is a finite number of MB > 0")


def _checks() -> dict:
    from simulator.commands.predict_training import MAX_GLOBAL_BATCH
    from simulator.limits import check_ranks

    def gpus(value):
        _positive("--gpus")(value)
        check_ranks(value, f"--gpus {value}")

    return {"model": _model, "gpus": gpus, "global_batch": _positive("--global-batch", MAX_GLOBAL_BATCH),
            "algos": _algos, "optimizer": _training_setup("optimizer"), "zero": _training_setup("zero"),
            "recompute": _training_setup("recompute"), "simulate_top": _non_negative("--simulate-top"),
            "bucket_mb": _megabytes, "layers": _positive("--layers")}


def check_spec(spec, name: str, parser: argparse.ArgumentParser) -> dict[str, int]:
    """Check every key and value of ``spec`` (file ``name``) as the module doc says; return each
    topology's GPU count, ``{topology: gpus}`` (an InputError naming the first bad key or value)."""
    from topologies import gpu_nodes, load_topology

    checks = _checks()
    actions = {key: _action(parser, key, name) for key in spec.keys}
    check_required(spec, name)
    values = {k: list(v) for k, v in spec.axes} | {k: [v] for k, v in spec.fixed}
    base = ["--gpus", "1", "--topology", "loopback:1", "--global-batch", "1"]  # what the parser requires
    for key, options in values.items():
        action = actions[key]
        for value in options:
            where = f"{name}: {key} {shown(value)}"
            if _is_flag(action) and not isinstance(value, bool):
                raise InputError(f"{where}: --{key} is a flag; give true or false")
            if isinstance(value, tuple) and action.nargs is None and not isinstance(action, argparse._AppendAction):
                raise InputError(f"{where}: --{key} takes one value, not a list")
            if _is_flag(action):
                continue
            try:
                parsed = getattr(parse_predict(parser, base + argv_of(parser, {key: value})), action.dest)
                check = checks.get(action.dest)
                if check is not None:
                    check(parsed)
            except InputError as error:
                raise InputError(f"{where}: {error}") from None
    calibrations = values.get("calibration", [None])
    gpus = {}
    for topology in values["topology"]:
        for calibration in calibrations:
            where = f"{name}: topology {shown(topology)}" + (f" with calibration {shown(calibration)}" if calibration
                                                              else "")
            try:
                gpus[topology] = len(gpu_nodes(load_topology(str(topology), calibration)))
            except InputError as error:
                raise InputError(f"{where}: {error}") from None
    return gpus

"""A checked spec's plans: each one's number, input cells and predict arguments, and the output columns.

``plans_of(spec, parser, gpus)`` expands the Cartesian product (``SweepSpec.combinations``). Without a
``gpus`` key each plan gets every GPU of its topology (``gpus``, from ``checks.check_spec``), and the
``gpus`` column comes right after the axes. ``columns_of`` names the columns: ``plan``, one per input
(the spec's keys with ``_`` for ``-``), the result fields (``plan_run.RESULT_FIELDS``; one whose name is
also an input's gets the prefix ``best_``), and ``spec``, the spec's hash.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.sweep.checks import argv_of
from simulator.sweep.spec import SweepSpec, column_of

__all__ = ["Plan", "plans_of", "input_keys", "columns_of", "result_columns"]


@dataclass(frozen=True)
class Plan:
    """One predict run of a sweep: its number (from 0, in product order), input cells and arguments."""

    index: int
    cells: tuple
    argv: tuple[str, ...]

    def command(self) -> str:
        """The plan as a command line a user can paste: ``tpsim predict --model gpt3-125m ...``."""
        import shlex

        return "tpsim predict " + " ".join(shlex.quote(a) for a in self.argv)


def input_keys(spec: SweepSpec) -> tuple[str, ...]:
    """The input keys in column order: the axes, ``gpus`` when derived from the topology, the fixed options."""
    axes = tuple(k for k, _ in spec.axes)
    derived = () if "gpus" in spec.keys else ("gpus",)
    return axes + derived + tuple(k for k, _ in spec.fixed)


def result_columns(spec: SweepSpec) -> tuple[str, ...]:
    """The result fields' column names for ``spec``: ``best_`` before one that is also an input's."""
    from simulator.sweep.plan_run import RESULT_FIELDS

    inputs = {column_of(k) for k in input_keys(spec)}
    return tuple(f"best_{f}" if f in inputs else f for f in RESULT_FIELDS)


def columns_of(spec: SweepSpec) -> tuple[str, ...]:
    """Every output column, in order (module doc)."""
    return ("plan",) + tuple(column_of(k) for k in input_keys(spec)) + result_columns(spec) + ("spec",)


def _cell(value):
    return " ".join(map(str, value)) if isinstance(value, tuple) else value


def plans_of(spec: SweepSpec, parser, gpus: dict[str, int]) -> list[Plan]:
    """Every plan of ``spec`` in order; ``gpus`` is each topology's GPU count (for plans without ``gpus``)."""
    keys = input_keys(spec)
    plans = []
    for index, inputs in enumerate(spec.combinations()):
        if "gpus" not in inputs:
            inputs = {**inputs, "gpus": gpus[inputs["topology"]]}
        ordered = {k: inputs[k] for k in keys}
        plans.append(Plan(index, tuple(_cell(v) for v in ordered.values()), tuple(argv_of(parser, ordered))))
    return plans

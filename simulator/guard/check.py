"""The decision on an estimate: refuse past this machine's budget (unless ``--force``), note a long one, go on.

An ``Estimate`` (``simulator.guard.costs`` makes them from the sizes, before any work) is held against
two budgets:

- time: more than ``REFUSE_AFTER_S`` (5 minutes of this machine) is refused, more than
  ``NOTE_AFTER_S`` is said on stderr first and run;
- memory: more than ``available_memory_bytes`` (MemAvailable, or what a cgroup leaves) is refused,
  since the kernel grants memory lazily and the job would meet the out-of-memory killer instead of
  a ``MemoryError``.

A refusal is one ``InputError`` line (exit status 2) naming the estimate and ``--force``; with
``--force`` the work starts anyway, with the note on stderr. The estimates are meant to be within 2x
and to err low (``simulator.guard.costs``), so a refused case would really take minutes or gigabytes.

``TPSIM_GUARD_SCALE`` (for tests only) multiplies both budgets and the note's threshold, so that a test
can show a refusal, ``--force`` and the note on a case that takes milliseconds: ``TPSIM_GUARD_SCALE=1e-6``
makes the budgets 0.3 ms and a millionth of the free memory.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from dataclasses import dataclass
from typing import TextIO

from simulator.errors import InputError
from simulator.limits import available_memory_bytes, binary_size

__all__ = ["NOTE_AFTER_S", "REFUSE_AFTER_S", "SCALE_ENV", "Estimate", "add_force_argument", "guard",
           "format_seconds"]

REFUSE_AFTER_S = 300.0
"""Estimated seconds past which a command is refused without ``--force`` (what this machine does in ~5 min)."""

NOTE_AFTER_S = 20.0
"""Estimated seconds past which a command says so on stderr before it starts."""

SCALE_ENV = "TPSIM_GUARD_SCALE"
"""Environment variable, for tests: a factor on both budgets and the note's threshold (module doc)."""


def _scale() -> float:
    text = os.environ.get(SCALE_ENV)
    if not text:
        return 1.0
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"{SCALE_ENV}={text!r}: expected a number > 0 (a test's factor on the guard's "
                         f"budgets); unset it to use the real ones") from None
    if not (math.isfinite(value) and value > 0):
        raise InputError(f"{SCALE_ENV}={text!r}: expected a finite number > 0; unset it to use the real ones")
    return value


def format_seconds(seconds: float) -> str:
    """``0.4 s``, ``38 s``, ``6 min``, ``2.1 h``: a duration as an estimate is said."""
    if seconds < 10:
        return f"{seconds:.2g} s"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:,.1f} h"


@dataclass(frozen=True)
class Estimate:
    """What a command's work will cost here, from its sizes: ``seconds`` of CPU and peak ``bytes``."""

    what: str
    """The work and its size: ``building 2d [256,256,1] mlp ...: 302,120,960 ops (4,610 per rank x 65,536
    ranks)``."""
    seconds: float
    bytes: int

    def about(self) -> str:
        """``about 6 min and 12.3 GiB``."""
        return f"about {format_seconds(self.seconds)} and {binary_size(int(self.bytes))}"

    def plus(self, other: "Estimate") -> "Estimate":
        """Two phases run one after the other: their times add, the larger memory is the peak."""
        return Estimate(f"{self.what}; {other.what}", self.seconds + other.seconds, max(self.bytes, other.bytes))


def add_force_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--force``: run even past the time or memory this machine is estimated to have."""
    parser.add_argument("--force", action="store_true",
                        help=f"run even when the estimate is over {REFUSE_AFTER_S / 60:.0f} minutes of this "
                             f"machine or over its free memory (refused otherwise, before any work)")


def guard(estimate: Estimate, command: str, force: bool = False, stream: TextIO | None = None,
          available: int | None = None) -> None:
    """Refuse ``estimate`` (InputError) when over a budget and not ``force``; else, when it is over
    ``NOTE_AFTER_S`` or over a budget, write one line to ``stream`` (stderr) saying so, and return.

    ``command`` names the command in the note (``"tpsim simulate"``); ``available`` is the free memory
    (default ``available_memory_bytes()``; None there: no memory budget)."""
    scale = _scale()
    available = available_memory_bytes() if available is None else available
    memory_budget = None if available is None else available * scale
    over = []
    if estimate.seconds > REFUSE_AFTER_S * scale:
        over.append(f"past the {format_seconds(REFUSE_AFTER_S * scale)} this machine is given for one command")
    if memory_budget is not None and estimate.bytes > memory_budget:
        over.append(f"more than the {binary_size(int(memory_budget))} of memory available here")
    if over and not force:
        raise InputError(f"{estimate.what}: estimated at {estimate.about()}, {' and '.join(over)}; use smaller "
                         f"sizes, or add --force to run it anyway")
    if over or estimate.seconds > NOTE_AFTER_S * scale:
        forced = " (--force: running anyway)" if over else ""
        stream = stream if stream is not None else sys.stderr
        stream.write(f"{command}: {estimate.what}: estimated at {estimate.about()} here{forced}\n")
        stream.flush()

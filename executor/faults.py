"""The fault-injection test hook: make one rank raise or hang at a chosen point.

``tpsim run ... --inject-fault RANK:WHERE[:ACTION]`` (hidden from ``--help``; it exists for the fault
tests). WHERE is a step number of that rank's program, or ``init`` (before the rendezvous). ACTION is
``raise`` (default: a RuntimeError naming the hook), ``hang`` (sleep until killed: a rank that never
arrives) or ``kill`` (the rank sends itself SIGKILL and dies without a word, as an out-of-memory
kill does). A step fault fires the first time the rank reaches that step, in the first warm-up or timed
iteration; a step beyond the program never fires.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass

from simulator.errors import InputError

ACTIONS = ("raise", "hang", "kill")


@dataclass(frozen=True)
class Fault:
    """Where and how one rank fails."""

    rank: int
    step: int | None
    """Program step, or None for ``init`` (before the rendezvous)."""
    action: str = "raise"

    @classmethod
    def parse(cls, text: str) -> "Fault":
        """Parse ``RANK:WHERE[:ACTION]``; InputError naming the valid forms."""
        parts = text.split(":")
        usage = f"--inject-fault {text!r}: expected RANK:STEP[:ACTION] or RANK:init[:ACTION], ACTION raise|hang|kill"
        if len(parts) not in (2, 3) or not parts[0].isdigit():
            raise InputError(usage)
        where = parts[1]
        if where != "init" and not where.isdigit():
            raise InputError(usage)
        action = parts[2] if len(parts) == 3 else "raise"
        if action not in ACTIONS:
            raise InputError(usage)
        return cls(int(parts[0]), None if where == "init" else int(where), action)

    def hits(self, rank: int, step: int | None) -> bool:
        """True when this fault is ``rank``'s at ``step`` (None = init)."""
        return rank == self.rank and step == self.step

    def fire(self, rank: int, step: int | None) -> None:
        """Raise or hang when this fault is ``rank``'s at ``step`` (None = init); else return."""
        if not self.hits(rank, step):
            return
        where = "before the rendezvous" if step is None else f"at step {step}"
        if self.action == "hang":
            while True:  # a rank that never arrives; the launcher's --timeout kills it
                time.sleep(3600)
        if self.action == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        raise RuntimeError(f"injected fault on rank {rank} {where} (test hook --inject-fault)")

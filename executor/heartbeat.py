"""Each rank's heartbeat, and which ranks stopped beating: a rank stopped by SIGSTOP, or frozen, named at the timeout.

Every rank starts a daemon thread right after the fork that writes ``time.monotonic_ns()`` into its
slot of the ``ProgressBoard`` every ``HEARTBEAT_S``. The thread needs nothing but the interpreter, so it
keeps beating while its rank computes, sleeps or blocks in a collective (gloo and NCCL waits release the
interpreter lock). It stops when the whole process stops: SIGSTOP or SIGTSTP (a user's ``kill -STOP``,
Ctrl-Z on a rank, a debugger), or a hang in code that holds the interpreter lock. At a timeout the
launcher asks ``silent_ranks`` which of the unfinished ranks went quiet: those whose process is in the
stopped state (``/proc/PID/stat`` state T or t) and those whose last beat is older than ``SILENT_AFTER_S``.
Without it such a rank, stopped in the middle of a collective, looked like its peers ("communicating")
and the timeout was reported as "no rank is missing ... a deadlock".
"""

from __future__ import annotations

import threading
import time

from executor.progress import ProgressBoard

__all__ = ["HEARTBEAT_S", "SILENT_AFTER_S", "start_heartbeat", "process_state", "silent_ranks"]

HEARTBEAT_S = 0.1
"""Seconds between two beats of a rank."""

SILENT_AFTER_S = 2.0
"""A rank whose last beat is older than this has stopped beating: 20 beats missed, far more than a thread
that sleeps 0.1 s is delayed by a loaded host or the interpreter lock's 5 ms switch interval."""

_STOPPED = {"T": "stopped (process state T, what SIGSTOP or SIGTSTP leave)",
            "t": "stopped by a debugger (process state t, tracing stop)"}


def start_heartbeat(board: ProgressBoard, rank: int, pid: int) -> threading.Thread:
    """Start ``rank``'s heartbeat thread (in the rank's own process ``pid``, after the fork)."""
    board.pids[rank] = pid
    board.beat(rank)

    def beat() -> None:
        while True:
            board.beat(rank)
            time.sleep(HEARTBEAT_S)

    thread = threading.Thread(target=beat, name=f"heartbeat-rank{rank}", daemon=True)
    thread.start()
    return thread


def process_state(pid: int) -> str | None:
    """The one-letter state of process ``pid`` (R, S, D, T, t, Z, ...) from ``/proc``; None if unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            text = handle.read().decode("ascii", "replace")
    except OSError:
        return None
    after = text.rfind(")")  # the command name may hold spaces and parentheses
    fields = text[after + 2:].split()
    return fields[0] if after >= 0 and fields else None


def silent_ranks(board: ProgressBoard, ranks: list[int], now_ns: int | None = None) -> dict[int, str]:
    """Of ``ranks``, those that stopped beating, each with why in words ("stopped (process state T, ...),
    no heartbeat for 3.2 s"); a rank that never started its heartbeat is not among them (its row says
    where it is: starting)."""
    now_ns = time.monotonic_ns() if now_ns is None else now_ns
    found = {}
    for rank in ranks:
        silence = board.silence_s(rank, now_ns)
        pid = int(board.pids[rank])
        if silence is None or pid < 0:
            continue
        state = _STOPPED.get(process_state(pid) or "")
        if state is not None:
            found[rank] = f"it is {state}, no heartbeat for {silence:.1f} s"
        elif silence > SILENT_AFTER_S:
            found[rank] = (f"no heartbeat for {silence:.1f} s (frozen, or hung in code that holds the "
                           f"interpreter lock)")
    return found

"""Progress of a long command on stderr: a tqdm bar on a terminal, a plain line every 10 s elsewhere.

    with Progress("tpsim predict", total=len(candidates), unit="arrangement") as bar:
        for candidate in candidates:
            ...
            bar.update()

On a terminal this is a tqdm bar (cleared when it closes). When stderr is not a terminal (a log file,
CI, a pipe) it is a line such as ``tpsim predict: 12/40 arrangements, 31 s`` every ``INTERVAL_S``
seconds, the first one only after ``INTERVAL_S``: a command that finishes sooner prints nothing.
Without a ``total`` the line says what is going on and for how long
(``tpsim simulate: simulating 4,096 ranks, 20 s``); ``phase`` changes that text as a command moves on.

Why the non-terminal form is not tqdm's own. A file or pipe has no cursor: tqdm there still draws by
carriage returns, so a log gets one ever-growing line (or, viewed line by line, hundreds of
half-bars), and it draws its first bar the moment it starts, so every command, however short, would
write to stderr. Tests, the README's examples and scripts read stderr for the one-line errors and
warnings tpsim prints; they must find nothing else there. So: whole lines, rare enough to read in a
log (every 10 s), and none at all for a command that is done within that time.

The lines come from a daemon thread (so a single long step still reports), except with
``background=False``: a caller that forks (``tpsim run`` forks its ranks; a thread alive across
``fork`` can leave a lock held in the child) calls ``tick`` from its own polling loop instead. tqdm is
imported only when a bar is drawn: it costs about 50 ms, and every ``tpsim`` start pays for what the
command modules import.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Callable, TextIO

__all__ = ["INTERVAL_S", "Progress"]

INTERVAL_S = 10.0
"""Seconds between two progress lines when stderr is not a terminal (and before the first)."""

_REFRESH_S = 1.0
"""Seconds between two redraws of a terminal bar by the background thread (its elapsed time moves)."""


def _is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if isatty is not None else False
    except ValueError:  # a closed stream
        return False


class Progress:
    """Progress of one long step on ``stream`` (default stderr); a context manager.

    ``command`` names the command in the plain lines (``"tpsim predict"``); ``total`` and ``unit`` (a
    singular noun: ``"arrangement"``) count the work, or ``total=None`` with ``what`` saying what is
    done (``"simulating 4,096 ranks"``); ``note`` is appended to each plain line (``"timeout 300 s"``).
    ``clock`` is for tests.
    """

    def __init__(self, command: str, total: int | None = None, unit: str = "", *, what: str = "", note: str = "",
                 stream: TextIO | None = None, interval_s: float | None = None, background: bool = True,
                 clock: Callable[[], float] = time.monotonic):
        self.command, self.total, self.unit, self.what, self.note = command, total, unit, what, note
        self.stream = stream if stream is not None else sys.stderr
        self.interval_s = INTERVAL_S if interval_s is None else interval_s
        self.n = 0
        self._clock = clock
        self._began = self._last = clock()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._bar = self._tqdm() if _is_terminal(self.stream) else None
        self._thread = None
        if background:
            self._thread = threading.Thread(target=self._beat, name=f"{command} progress", daemon=True)
            self._thread.start()

    def _tqdm(self):
        from tqdm import tqdm as _tqdm  # here: only a terminal gets a bar, and tqdm adds ~50 ms to every start

        class tqdm(_tqdm):
            monitor_interval = 0  # no TMonitor thread: it would be alive across the launcher's fork

        if self.total is None:
            return tqdm(file=self.stream, leave=False, desc=self.what, bar_format="{desc} {elapsed}")
        return tqdm(total=self.total, file=self.stream, unit=self.unit, leave=False)

    def update(self, n: int = 1) -> None:
        """``n`` more units done."""
        self.moveto(self.n + n)

    def moveto(self, n: int) -> None:
        """``n`` units done in all (a poller that reads a position rather than counting)."""
        with self._lock:
            if self._bar is not None and n != self.n:
                self._bar.update(n - self.n)
            self.n = n
        self.tick()

    def phase(self, what: str) -> None:
        """Say what is being done now (``total=None``: the text of the next line)."""
        with self._lock:
            self.what = what
            if self._bar is not None and self.total is None:
                self._bar.set_description_str(what)
        self.tick()

    def tick(self) -> None:
        """Write a plain line if one is due (``INTERVAL_S`` since the last); cheap enough to call often."""
        if self._bar is not None:
            return
        now = self._clock()
        with self._lock:
            if now - self._last < self.interval_s or self._stop.is_set():
                return
            self._last = now
            line = self.line(now - self._began)
        self.stream.write(line + "\n")
        self.stream.flush()

    def line(self, elapsed_s: float) -> str:
        """The plain line for ``elapsed_s`` seconds in: ``tpsim predict: 12/40 arrangements, 31 s``."""
        if self.total is None:
            done = self.what or "working"
        else:
            done = f"{self.n}/{self.total} {self.unit}s" if self.unit else f"{self.n}/{self.total}"
            done += f", {self.what}" if self.what else ""
        return f"{self.command}: {done}, {elapsed_s:.0f} s" + (f" ({self.note})" if self.note else "")

    def _beat(self) -> None:
        wait_s = _REFRESH_S if self._bar is not None else max(0.01, min(self.interval_s, _REFRESH_S))
        while not self._stop.wait(wait_s):
            if self._bar is not None:
                with self._lock:
                    self._bar.refresh()
            else:
                self.tick()

    def close(self) -> None:
        """Stop: clear the bar, stop the thread; no line after this."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

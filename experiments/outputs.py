"""Where an experiment writes by default: experiments/out/ for a full run, a fresh temporary folder for ``--quick``.

experiments/out/ holds the committed results of the full runs that the README and experiments/README.md
quote. A ``--quick`` run (the smoke test) is a reduced form whose figures differ, so by default it never
writes there: it gets a new folder under the system's temporary directory and says where. A path given
explicitly (``--csv``, ``--png``, ``--out``) is always used as given.

Example::

    >>> default_folder("repro_3d", quick=False)
    'experiments/out'
"""

from __future__ import annotations

import os
import tempfile

__all__ = ["OUT", "default_folder"]

OUT = os.path.join("experiments", "out")
"""The committed full-run results, relative to the repository root."""


def default_folder(name: str, quick: bool) -> str:
    """``OUT``, or under ``quick`` a new temporary folder named after the experiment."""
    return tempfile.mkdtemp(prefix=f"tpsim-{name}-quick-") if quick else OUT

"""Unknown keys in tpsim's documents, named with the closest known key instead of being dropped unread.

A calibration profile whose ``sim`` section was spelt ``simm`` used to load, and its fitted constants
were silently not applied. ``check_known_keys`` refuses such a key in one line: "c.yaml: unknown key
'simm' in the calibration profile (did you mean 'sim'?); known: format, version, ...".
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping

from topologies.errors import TopologyError

__all__ = ["PROFILE_KEYS", "check_known_keys"]

PROFILE_KEYS = ("format", "version", "node_kind", "preset", "fitted_on", "links", "sim", "undetermined", "notes")
"""Every top-level key ``topologies.profile.profile_document`` writes."""


def check_known_keys(mapping: Mapping, known: Iterable[str], where: str, what: str) -> None:
    """TopologyError naming the first key of ``mapping`` not in ``known``, with the closest known one."""
    known = tuple(known)
    for key in mapping:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise TopologyError(f"{where}: unknown key {key!r} in the {what}{hint}; known: {', '.join(known)}")

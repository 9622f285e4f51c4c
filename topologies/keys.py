"""Unknown keys in tpsim's documents, named with the closest known key instead of being dropped unread.

A calibration profile whose ``sim`` section was spelt ``simm`` used to load, and its fitted constants
were silently not applied. ``check_known_keys`` refuses such a key in one line: "c.yaml: unknown key
'simm' in the calibration profile (did you mean 'sim'?); known: format, version, ...".

Inside a ``sim`` section (a topology's, in a YAML or JSON file, GraphML's ``sim_json`` or a preset, and
a calibration profile's) the same held: ``collective_base_latncy_us: 5`` left the default 8 us in force
without a word. ``check_sim_keys`` refuses it. The known keys are read from the code that uses them,
so a new parameter is known as soon as it exists (``sim_keys``):

- every ``collective_*`` key of ``simulator.collectives.params`` (``SIM_KEYS``, the collective model);
- every field of ``simulator.compute.ComputeConfig`` (``gemm_efficiency``, ``memory_efficiency``, ...);
- in a topology (not in a profile), ``calibration``: the profile ``tpsim calibrate`` embeds in the
  topology it writes (what ``FILE:N`` rebuilds from).

Nested sections are checked the same way: ``collective_kind_bytes_factors`` maps collective kinds
(``simulator.collectives.patterns.KINDS``) to factors, and an embedded ``calibration`` is a whole
profile document (``topologies.profile.profile_from_document``: its top-level keys, ``links.<kind>``
keys and its own ``sim``).

Example::

    >>> try:
    ...     check_sim_keys({"collective_base_latncy_us": 5.0}, "t.yaml")
    ... except TopologyError as error:
    ...     print(str(error).split(";")[0])
    t.yaml: unknown key 'collective_base_latncy_us' in the sim section (did you mean 'collective_base_latency_us'?)
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Iterable, Mapping

from topologies.errors import TopologyError

__all__ = ["PROFILE_KEYS", "check_known_keys", "sim_keys", "check_sim_keys"]

PROFILE_KEYS = ("format", "version", "node_kind", "preset", "fitted_on", "links", "sim", "undetermined", "notes")
"""Every top-level key ``topologies.profile.profile_document`` writes."""
EMBEDDED_PROFILE_KEY = "calibration"
"""The ``sim`` key of a calibrated topology that holds its profile."""


def check_known_keys(mapping: Mapping, known: Iterable[str], where: str, what: str) -> None:
    """TopologyError naming the first key of ``mapping`` not in ``known``, with the closest known one."""
    known = tuple(known)
    for key in mapping:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            prefix = f"{where}: " if where else ""  # "": the caller (a file's loader) names the file
            raise TopologyError(f"{prefix}unknown key {key!r} in the {what}{hint}; known: {', '.join(known)}")


@functools.lru_cache(maxsize=None)
def sim_keys(in_topology: bool = True) -> tuple[str, ...]:
    """Every key a ``sim`` section may hold, in the order the modules define them; ``calibration`` only
    ``in_topology``."""
    from dataclasses import fields

    # Imported here: the topology package loads without the simulator's models (and they import it).
    from simulator.collectives.params import SIM_KEYS
    from simulator.compute import ComputeConfig

    keys = (*SIM_KEYS.values(), *(f.name for f in fields(ComputeConfig)))
    return (*keys, EMBEDDED_PROFILE_KEY) if in_topology else keys


def check_sim_keys(sim: Mapping, where: str = "", in_topology: bool = True) -> None:
    """TopologyError naming the first unknown key of ``sim`` or of a section nested in it (module doc);
    ``where`` names the file (empty: the caller adds it), ``in_topology`` False for a profile's ``sim``."""
    from simulator.collectives.params import SIM_KEYS
    from simulator.collectives.patterns import KINDS

    section = "sim section" if in_topology else "calibration profile's sim section"
    check_known_keys(sim, sim_keys(in_topology), where, section)
    factors_key = SIM_KEYS["kind_bytes_factors"]
    if isinstance(sim.get(factors_key), Mapping):
        check_known_keys(sim[factors_key], KINDS, where, f"{section}'s {factors_key}")
    if in_topology and EMBEDDED_PROFILE_KEY in sim:
        from topologies.profile import profile_from_document  # it checks its own sim with this function

        profile_from_document(sim[EMBEDDED_PROFILE_KEY], f"{where}: sim.{EMBEDDED_PROFILE_KEY}" if where
                              else f"sim.{EMBEDDED_PROFILE_KEY}")

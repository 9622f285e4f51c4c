"""A sweep spec: axes whose Cartesian product is the plans, and options every plan shares.

A spec is a YAML (or JSON, by a .json name) mapping with two keys, both optional but for what predict requires::

    axes:                      # each a non-empty list; the sweep is their Cartesian product
      model: [gpt3-125m, gpt3-350m]
      topology: [dgx-a100:1, dgx-a100:2]
      global-batch: [64, 256]
    fixed:                     # one value each, the same in every plan
      tp-sizes: "1,2"
      simulate-top: 1

Every key is a `tpsim predict` option without its dashes (``global-batch`` or ``global_batch``);
a flag (``overlap``, ``no-prune``) takes true or false, a repeatable option (``algo-override``) a
string or a list of strings. ``global-batch`` and ``topology`` are required; without ``gpus`` each
plan uses every GPU of its topology. Plans are numbered from 0 in product order, the last axis
fastest. The spec's hash (``SweepSpec.digest``) names the sweep in its output, so a rerun resumes
only the same sweep.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import reprlib
from dataclasses import dataclass

from simulator.errors import InputError
from topologies.fileformat import read_document

__all__ = ["SweepSpec", "parse_spec", "check_required", "column_of", "shown"]

_SHOWN = reprlib.Repr()
"""What a message shows of a YAML value: short, however large the value (a YAML alias bomb included)."""
_SHOWN.maxlevel, _SHOWN.maxlist, _SHOWN.maxdict, _SHOWN.maxstring, _SHOWN.maxother = 2, 4, 4, 60, 60


def shown(value) -> str:
    """``value`` as a message shows it: its repr, shortened (``_SHOWN``)."""
    return _SHOWN.repr(value)


SECTIONS = ("axes", "fixed")
REQUIRED = ("global-batch", "topology")


def column_of(key: str) -> str:
    """The output column of a spec key: ``global-batch`` -> ``global_batch``."""
    return key.replace("-", "_")


@dataclass(frozen=True)
class SweepSpec:
    """A validated spec's shape: the axes (key, values) in spec order and the fixed (key, value) pairs.

    Keys are in option form without dashes (``global-batch``); values are YAML scalars (a list of
    strings for a repeatable option). Whether predict accepts them is ``simulator.sweep.checks``'s job.
    """

    axes: tuple[tuple[str, tuple], ...]
    fixed: tuple[tuple[str, object], ...]

    @property
    def keys(self) -> tuple[str, ...]:
        """Every key, axes first."""
        return tuple(k for k, _ in self.axes) + tuple(k for k, _ in self.fixed)

    @property
    def size(self) -> int:
        """How many plans: the product of the axes' lengths."""
        n = 1
        for _, values in self.axes:
            n *= len(values)
        return n

    @property
    def digest(self) -> str:
        """12 hex digits of SHA-256 over the canonical JSON of the axes and fixed options, in spec order."""
        text = json.dumps({"axes": [[k, list(v)] for k, v in self.axes], "fixed": [[k, v] for k, v in self.fixed]},
                          sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def combinations(self):
        """Each plan's inputs as a dict key -> value (axes, then fixed), in plan order."""
        keys = [k for k, _ in self.axes]
        for values in itertools.product(*(v for _, v in self.axes)):
            yield {**dict(zip(keys, values)), **dict(self.fixed)}


def _key(raw, where: str) -> str:
    if not isinstance(raw, str) or not raw.strip("-_"):
        raise InputError(f"{where}: a key is a predict option name such as global-batch, got {shown(raw)}")
    return raw.strip().lstrip("-").replace("_", "-")


def _value(value, key: str, where: str):
    if isinstance(value, list) and all(isinstance(v, str) for v in value) and value:
        return tuple(value)  # a repeatable option's several values (algo-override)
    if value is None or not isinstance(value, (str, int, float, bool)):
        raise InputError(f"{where} {key}: {shown(value)} is not a single value (a string, number or true/false)")
    return value


def check_required(spec: "SweepSpec", name: str) -> None:
    """An InputError if ``spec`` (of the file ``name``) lacks a key every sweep needs (``REQUIRED``)."""
    missing = [k for k in REQUIRED if k not in spec.keys]
    if missing:
        raise InputError(f"{name}: {missing[0]} is required (under axes or fixed); a sweep runs "
                         f"`tpsim predict --global-batch` plans")


def parse_spec(text: str, name: str) -> SweepSpec:
    """The ``SweepSpec`` in the YAML ``text`` of the file ``name``; an InputError naming the first problem."""
    try:  # the hardened reader topology files use: safe loader, nesting and number sizes bounded
        doc = read_document(name, text)
    except InputError as error:
        raise InputError(f"{name}: {error}") from None
    if not isinstance(doc, dict):
        raise InputError(f"{name}: a sweep spec is a mapping with {' and '.join(SECTIONS)}, got "
                         f"{type(doc).__name__}")
    unknown = [k for k in doc if k not in SECTIONS]
    if unknown:
        raise InputError(f"{name}: unknown key {shown(unknown[0])} at the top; valid: {', '.join(SECTIONS)}")
    axes, fixed, seen = [], [], {}
    for section in SECTIONS:
        body = doc.get(section) or {}
        if not isinstance(body, dict):
            raise InputError(f"{name}: {section} is a mapping of option -> "
                             f"{'list of values' if section == 'axes' else 'value'}, got {type(body).__name__}")
        for raw, values in body.items():
            key = _key(raw, f"{name}: {section}")
            if key in seen:
                raise InputError(f"{name}: {key} is given twice ({seen[key]} and {section}); give it once")
            seen[key] = section
            where = f"{name}: {section}"
            if section == "fixed":
                fixed.append((key, _value(values, key, where)))
                continue
            if not isinstance(values, list):
                raise InputError(f"{where} {key}: an axis is a list of values, e.g. [{shown(values)}]; a "
                                 f"single value goes under fixed")
            if not values:
                raise InputError(f"{where} {key}: the axis is empty; list at least one value")
            values = tuple(_value(v, key, where) for v in values)
            seen_values = set()
            for value in values:
                if (type(value), value) in seen_values:  # the type too: YAML's 1 and true are not one value
                    raise InputError(f"{where} {key}: {value!r} is listed twice")
                seen_values.add((type(value), value))
            axes.append((key, values))
    return SweepSpec(tuple(axes), tuple(fixed))

"""YAML anchors and aliases refused before a YAML document is built: a nine-line file cannot become 10^9 nodes.

An anchor (``&a``) and its aliases (``*a``) let a few lines name one node many times; nine levels of ten
aliases each make 10^9 leaves, which hung every command that walked them and grew ``topology save`` to
2 GB. No tpsim document needs them (``tpsim topology save`` and ``tpsim calibrate`` never write one),
so ``refuse_anchors`` scans the parser's events (libyaml's when built: a pass that builds nothing) and
refuses the first anchor or alias in one line naming it and its line; the document is loaded only after.
"""

from __future__ import annotations

import yaml

from topologies.errors import TopologyError

__all__ = ["refuse_anchors"]

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def refuse_anchors(text: str) -> None:
    """TopologyError at the first anchor or alias in the YAML ``text``; a text that does not parse is left to
    the loader, whose error names the problem."""
    try:
        for event in yaml.parse(text, Loader=_Loader):
            anchor = getattr(event, "anchor", None)
            if anchor is not None:
                mark = event.start_mark
                what = "an alias" if isinstance(event, yaml.AliasEvent) else "an anchor"
                sign = "*" if isinstance(event, yaml.AliasEvent) else "&"
                line = f" at line {mark.line + 1}" if mark is not None else ""
                raise TopologyError(f"bad YAML{line}: {what} ({sign}{anchor}); tpsim reads YAML without anchors "
                                    f"and aliases: write each value out")
    except yaml.YAMLError:
        return

"""Byte sizes as people write them: 1048576, 1MiB, 1GiB, 64KB, 4 KiB.

Units: B; KB, MB, GB, TB are decimal (10^3, 10^6, 10^9, 10^12), as in every rate (1 GB = 1e9 B);
KiB, MiB, GiB, TiB are binary (2^10 ...). Letters are case-insensitive, a space before the unit is
allowed, and a decimal number is accepted when it gives a whole number of bytes ("1.5KiB" = 1536).
A bare "K", "M" or "G" is rejected as ambiguous (decimal or binary?), as is anything else.

Example::

    >>> parse_size("64KB"), parse_size("1MiB"), format_size(1 << 30)
    (64000, 1048576, '1GiB')
"""

from __future__ import annotations

import re
from fractions import Fraction

from simulator.errors import InputError
from simulator.limits import check_bytes

__all__ = ["parse_size", "format_size", "UNITS"]

UNITS = {
    "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}
"""Unit (lower case) -> bytes."""

_SIZE = re.compile(r"^\s*([0-9][0-9_]*(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*$")


def parse_size(text) -> int:
    """Bytes in ``text`` (an int is returned as is); InputError naming the text and the valid forms."""
    if isinstance(text, int) and not isinstance(text, bool):
        if text < 0:
            raise InputError(f"size {text} is negative; sizes are >= 0 bytes")
        check_bytes(text, f"size {text}")
        return text
    match = _SIZE.match(str(text))
    valid = "valid: an integer number of bytes or a number with B, KB, MB, GB (10^3...) or KiB, MiB, GiB (2^10...)"
    if not match:
        raise InputError(f"size {text!r} is not a byte size; {valid}")
    number, unit = match.groups()
    unit = unit.lower() or "b"
    if unit in ("k", "m", "g", "t"):
        raise InputError(f"size {text!r}: unit {match.group(2)!r} is ambiguous; write {unit.upper()}B "
                         f"(10^{ {'k': 3, 'm': 6, 'g': 9, 't': 12}[unit]}) or {unit.upper()}iB (2^"
                         f"{ {'k': 10, 'm': 20, 'g': 30, 't': 40}[unit]})")
    if unit not in UNITS:
        raise InputError(f"size {text!r}: unknown unit {match.group(2)!r}; {valid}")
    if len(number) > 30:  # Fraction() of a long digit string is slow, and any such size is over the limit
        raise InputError(f"size {text[:12]!r}...: a {len(number)}-digit number; sizes are at most 2^50 bytes (1 PiB)")
    value = Fraction(number.replace("_", "")) * UNITS[unit]
    if value.denominator != 1:
        raise InputError(f"size {text!r} is not a whole number of bytes ({float(value)})")
    check_bytes(int(value), f"size {text!r}")
    return int(value)


def format_size(nbytes: int) -> str:
    """The shortest exact binary form: 1GiB, 64KiB, 1000B."""
    for unit in ("TiB", "GiB", "MiB", "KiB"):
        scale = UNITS[unit.lower()]
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale}{unit}"
    return f"{nbytes}B"

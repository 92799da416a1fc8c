"""Event timestamps: one clock for every input format, in milliseconds since the epoch.

``parse_timestamp`` is called once per event by the evaluator (time windows), so
the common case, a number that already is milliseconds, is checked first and
costs two type tests. Strings are the slow path: a numeric string is read as
milliseconds, anything else is tried as ISO-8601.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime

__all__ = ["parse_timestamp"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# Stricter than float(): no "nan"/"inf", no digit-group underscores, so a
# word that happens to be accepted by float() is not silently a timestamp.
_NUMERIC = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def parse_timestamp(value: object) -> float | None:
    """Return ``value`` as milliseconds since 1970-01-01T00:00:00Z, or None.

    * ``int`` / ``float`` (not ``bool``): already milliseconds;
    * numeric strings (``"1714564800000"``, ``"12.5"``): milliseconds;
    * ISO-8601 strings: ``2024-05-01T12:00:00Z``, with a ``+02:00`` offset,
      fractional seconds, or date only; a value without an offset is UTC;
    * anything else (None, bool, NaN/infinite, an integer beyond every float,
      unparseable text): None.
    """
    # Exact type checks first: they are the per-event fast path and they also
    # keep bool (an int subclass) out.
    if type(value) is int:
        try:
            return float(value)
        except OverflowError:  # beyond any float: no time at all, as for infinity
            return None
    if type(value) is float:
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return _parse_string(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    # Subclasses of int/float (e.g. IntEnum, numpy-like scalars registered as such).
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _parse_string(text: str) -> float | None:
    text = text.strip()
    if not text:
        return None
    if _NUMERIC.fullmatch(text):
        number = float(text)
        return number if math.isfinite(number) else None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    # Integer arithmetic on the timedelta: ``moment.timestamp() * 1000`` would
    # introduce float rounding (…123.00000001) into millisecond values.
    delta = moment - _EPOCH
    whole_ms = (delta.days * 86_400 + delta.seconds) * 1000
    return float(whole_ms) + delta.microseconds / 1000

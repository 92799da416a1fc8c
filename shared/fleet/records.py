"""Input record values as events: a JSON object, or why a record is not one.

The coordinator, the workers and the backfill judge records alike, so the same
record lands in a dead-letter topic (or a backfill's bad records) with the same
reason and error whichever of them read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

__all__ = ["Rejected", "decode_event"]


@dataclass(frozen=True, slots=True)
class Rejected:
    reason: str  # the dead-letter reason label
    error: str  # for people: the ``cerfleet-error`` header


def decode_event(value: bytes | None) -> dict[str, Any] | Rejected:
    """The event a record value holds; a null value (tombstone) is not an object."""
    try:
        event = orjson.loads(value) if value is not None else None
    except orjson.JSONDecodeError as exc:
        return Rejected("invalid_json", f"not valid JSON: {exc}")
    if not isinstance(event, dict):
        return Rejected("not_an_object", "not a JSON object")
    return event

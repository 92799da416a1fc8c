"""Input record values as events: a JSON object, or why a record is not one.

The coordinator, the workers and the backfill judge records alike, so the same
record lands in a dead-letter topic (or a backfill's bad records) with the same
reason and error whichever of them read it.

Whoever can write to an input topic feeds every worker, so records are bounded
(``RecordLimits``): a value over ``max_bytes`` is refused unread (``too_large``),
and one nested deeper than ``max_depth`` (``too_deep``) is refused before any
later stage (output records, snapshots) would have to walk or re-serialise it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

__all__ = ["DEFAULT_LIMITS", "RecordLimits", "Rejected", "decode_event"]


@dataclass(frozen=True, slots=True)
class RecordLimits:
    # Under the default message.max.bytes of brokers and clients (about 1 MB), with room
    # for the headers: every record that passes can still be routed and dead-lettered.
    max_bytes: int = 512 * 1024
    # orjson serialises at most 254 levels; an output record wraps events in 3 more.
    max_depth: int = 64


DEFAULT_LIMITS = RecordLimits()


@dataclass(frozen=True, slots=True)
class Rejected:
    reason: str  # the dead-letter reason label
    error: str  # for people: the ``cerfleet-error`` header


def decode_event(
    value: bytes | None, limits: RecordLimits = DEFAULT_LIMITS
) -> dict[str, Any] | Rejected:
    """The event a record value holds; a null value (tombstone) is not an object."""
    if value is not None and len(value) > limits.max_bytes:
        return Rejected(
            "too_large", f"record of {len(value)} bytes is over the limit of {limits.max_bytes}"
        )
    # Counting brackets is cheap and bounds the depth: only records with many of them
    # need the walk (and only those orjson itself accepts, at most 1024 deep).
    deep = value is not None and value.count(b"[") + value.count(b"{") > limits.max_depth
    try:
        event = orjson.loads(value) if value is not None else None
    except orjson.JSONDecodeError as exc:
        if deep and "depth" in str(exc):
            return Rejected("too_deep", f"nested more than {limits.max_depth} levels deep")
        return Rejected("invalid_json", f"not valid JSON: {exc}")
    if not isinstance(event, dict):
        return Rejected("not_an_object", "not a JSON object")
    if deep and _depth_over(event, limits.max_depth):
        return Rejected("too_deep", f"nested more than {limits.max_depth} levels deep")
    return event


def _depth_over(event: dict[str, Any], limit: int) -> bool:
    """Whether ``event`` (depth 1) holds an object or array deeper than ``limit``."""
    stack: list[tuple[Any, int]] = [(event, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return False

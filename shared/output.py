"""Complex events → JSON Lines bytes: the last stage of the pipeline.

One compact object per complex event: ``start``, ``end``, ``positions``, ``key`` (the
PARTITION BY values or null) and ``events``. An event that kept the bytes it was read
as (``events.raw_event.RawEvent``) is written as those bytes, not re-encoded; any other
is encoded as ``cerfleet run`` always has (compact, non-ASCII kept).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from cerfleet.complex_event import ComplexEvent
from cerfleet.events.raw_event import RawEvent

__all__ = ["json_line", "json_lines"]

_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _event(event: Mapping[str, Any]) -> bytes:
    if type(event) is RawEvent:
        return event.raw
    return _encode(dict(event)).encode()


def json_line(ce: ComplexEvent) -> bytes:
    return _line(ce, b",".join(map(_event, ce.events)))


def _line(ce: ComplexEvent, events: bytes) -> bytes:
    positions = ",".join(map(str, ce.positions)).encode()
    key = b"null" if ce.key is None else _encode(list(ce.key)).encode()
    return b'{"start":%d,"end":%d,"positions":[%b],"key":%b,"events":[%b]}\n' % (
        ce.start,
        ce.end,
        positions,
        key,
        events,
    )


def json_lines(complex_events: Iterable[ComplexEvent]) -> bytes:
    # Complex events ending at nearby events share most of their events: each event
    # that must be encoded (one read from CSV, say) is encoded once per call.
    encoded: dict[int, bytes] = {}

    def event(e: Mapping[str, Any]) -> bytes:
        if type(e) is RawEvent:
            return e.raw
        text = encoded.get(id(e))
        if text is None:
            text = encoded[id(e)] = _event(e)
        return text

    return b"".join(_line(ce, b",".join(map(event, ce.events))) for ce in complex_events)

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
    positions = ",".join(map(str, ce.positions)).encode()
    key = b"null" if ce.key is None else _encode(list(ce.key)).encode()
    events = b",".join(map(_event, ce.events))
    return b'{"start":%d,"end":%d,"positions":[%b],"key":%b,"events":[%b]}\n' % (
        ce.start,
        ce.end,
        positions,
        key,
        events,
    )


def json_lines(complex_events: Iterable[ComplexEvent]) -> bytes:
    return b"".join(map(json_line, complex_events))

"""The routing facts of a whole batch of input values at once: which records are not
events, and each group's record key for the others.

The coordinator copies values' bytes as they are, so it needs only a few attributes of each:
the groups' type fields and PARTITION BY attributes. Those are decoded by one typed
decoder call per record (msgspec, into a struct of just those fields); the rest of
the value is skipped, never built into Python objects. The verdicts stay exactly
``decode_event``'s (the workers' and the backfill's): a record the fast decoder
refuses, or might read differently (bytes that are not UTF-8, which it does not check
in the fields it skips; integers beyond 64 bits, which orjson refuses; values over the
size or depth limits), is judged by ``decode_event`` itself.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from functools import partial
from operator import attrgetter
from typing import Any, cast

import msgspec

from cerfleet.evaluation.horizon import DEFAULT_LATENESS
from cerfleet.events.timestamps import parse_timestamp
from cerfleet.fleet.groups import Group
from cerfleet.fleet.keyed import key_of_values, one_string_key, scalar_key
from cerfleet.fleet.records import RecordLimits, Rejected, decode_event, near_limits
from cerfleet.pattern import Window, WindowKind

__all__ = ["Clock", "Extracted", "KeyExtractor", "MissingType", "clock_of", "tolerated_skew"]

_DECODE_ERRORS = (msgspec.MsgspecError, ValueError, RecursionError)
# orjson refuses integers beyond 64 bits and numbers beyond a double's range, anywhere in
# a value; msgspec skips the fields it does not read without looking (``_long_numbers``).
# Digits as 0 and E as e, signs deleted: two substring searches find both patterns.
_NUMBERS = bytes.maketrans(b"123456789E", b"000000000e")


@dataclass(frozen=True, slots=True)
class MissingType:
    """The record lacks a group's type field (or it is not a string)."""

    field: str


# Per group and record: the record key, None (a PARTITION BY value is missing: the group
# skips the record) or the type field it lacks.
Routing = bytes | None | MissingType


@dataclass(slots=True)
class Extracted:
    rejected: dict[int, Rejected]  # records that are not events
    keys: list[list[Routing]]  # per group (in the extractor's order), per record
    # Per record, its clock (``Clock``), None when it has none; None without a clock.
    times: list[float | None] | None = None

    def part(self, start: int, stop: int) -> Extracted:
        """The routing of records ``start`` to ``stop``, numbered from 0."""
        rejected = self.rejected
        return Extracted(
            {i - start: v for i, v in rejected.items() if start <= i < stop} if rejected else {},
            [k[start:stop] for k in self.keys],
            None if self.times is None else self.times[start:stop],
        )


@dataclass(frozen=True, slots=True)
class Clock:
    """What the coordinator orders records by: a field and how its value reads as a
    clock (``parse_timestamp`` for a time window, a number for an attribute window)."""

    field: str
    parse: Callable[[Any], float | None]


def window_clock(window: Window | None, time_field: str) -> Clock | None:
    """The clock ``window`` measures (as ``evaluation.window.clock_of`` reads it), None
    for a count window or none."""
    if window is None or window.kind is WindowKind.EVENTS:
        return None
    if window.kind is WindowKind.TIME:
        return Clock(time_field, parse_timestamp)
    assert window.attr is not None
    return Clock(window.attr, _number)


def clock_of(groups: Sequence[Group]) -> Clock | None:
    """The clock the queries of ``groups`` window by, when they agree on one. None when
    none has a time or attribute window, or they differ: records are then forwarded as
    fetched."""
    clocks = {
        clock
        for group in groups
        for entry in group.queries.values()
        if (clock := window_clock(entry.query.pattern.within, entry.spec.time_field)) is not None
    }
    return clocks.pop() if len(clocks) == 1 else None


def tolerated_skew(groups: Sequence[Group], spread: Collection[str] = ()) -> float:
    """How far behind the newest clock the queries of ``groups`` that window by a clock
    take an event: the smallest over them of a lateness bound (on the time field, the
    clock of a time window), else the lateness horizon of a query with keys whose
    events each come from one input partition, as Kafka's record keys place them (not
    a group whose keyed topic is in ``spread``: ``key_placement``), else 0 (any event
    behind its key's clock is late)."""
    skews = []
    for group in groups:
        placed = group.keyed_topic not in spread
        for entry in group.queries.values():
            window = entry.query.pattern.within
            if window_clock(window, entry.spec.time_field) is None:
                continue
            bound = entry.spec.max_lateness
            if bound is None:
                bound = entry.query.pattern.max_lateness
            if bound is not None:
                on_time = window is not None and window.kind is WindowKind.TIME
                skews.append(bound if on_time else 0.0)  # else another field's unit
            else:
                skews.append(DEFAULT_LATENESS if entry.query.keyed and placed else 0.0)
    return min(skews, default=0.0)


def _number(value: Any) -> float | None:
    """An attribute window's clock: a number (not a boolean), NaN being none."""
    if type(value) is float:
        return value if value == value else None
    if type(value) is int:
        try:
            return float(value)
        except OverflowError:  # beyond every float: no clock (the engine's verdict too)
            return None
    return None


class KeyExtractor:
    """Extracts what routing needs for ``groups`` (the groups of one input topic)."""

    def __init__(
        self, groups: Sequence[Group], limits: RecordLimits, clock: Clock | None = None
    ) -> None:
        self.groups = list(groups)
        self.limits = limits
        self.clock = clock
        read = {n for g in self.groups for n in (*g.type_fields, *g.id.partition_attrs)}
        if clock is not None:
            read.add(clock.field)
        names = sorted(read)
        # Field names are identifiers; the attributes may be any string (renamed).
        field_of = {n: f"f{i}" for i, n in enumerate(names)}
        struct = msgspec.defstruct(
            "Routed",
            [(f, Any, None) for f in field_of.values()],
            rename={f: n for n, f in field_of.items()},
            gc=False,
        )
        self._decode = msgspec.json.Decoder(struct).decode
        self._clock = None if clock is None else (clock.field, field_of[clock.field])
        # Per group: its type fields and PARTITION BY attributes, as (name, struct field).
        self._plans = [
            (
                [(f, field_of[f]) for f in sorted(g.type_fields)],
                [(a, field_of[a]) for a in g.id.partition_attrs],
            )
            for g in self.groups
        ]

    def extract(self, values: Sequence[bytes | None]) -> Extracted:
        rejected: dict[int, Rejected] = {}
        # A record decoded as a struct, a dict when ``decode_event`` had to judge it, or
        # None when it is not an event.
        events: list[Any]
        slow = self._suspects(values)
        try:
            events = list(map(self._decode, cast("list[bytes]", values))) if not slow else []
        except (*_DECODE_ERRORS, TypeError):  # TypeError: a tombstone (None)
            events = []
        if not events and values:
            decode = self._decode
            for i, value in enumerate(values):
                if i in slow or value is None:
                    events.append(self._judged(i, value, rejected))
                    continue
                try:
                    events.append(decode(value))
                except _DECODE_ERRORS:
                    events.append(self._judged(i, value, rejected))
        keys = [self._keys(events, *plan) for plan in self._plans]
        return Extracted(rejected, keys, self._times(events))

    def _times(self, events: list[Any]) -> list[float | None] | None:
        """Every record's clock: at once when all are structs with int or float values."""
        if self._clock is None or self.clock is None:
            return None
        name, attr = self._clock
        parse = self.clock.parse
        if None not in events and dict not in set(map(type, events)):
            values = list(map(attrgetter(attr), events))
            if set(map(type, values)) <= {int, float}:
                return list(map(parse, values))
        times: list[float | None] = []
        for event in events:
            if event is None:
                times.append(None)
            elif type(event) is dict:
                times.append(parse(event.get(name)))
            else:
                times.append(parse(getattr(event, attr)))
        return times

    def _suspects(self, values: Sequence[bytes | None]) -> set[int]:
        """Records ``decode_event`` must judge itself: tombstones, values over the size
        or depth limits, bytes that are not UTF-8 and numbers orjson may refuse."""
        out = set(near_limits(values, self.limits))
        raws = [b"" if v is None else v for v in values] if out else values
        # Joined by a byte no multi-byte character holds, so a bad sequence stays bad.
        joined = b"\n".join(cast("Sequence[bytes]", raws))
        try:
            joined.decode("utf-8")
        except UnicodeDecodeError:
            out |= {i for i, v in enumerate(raws) if v is not None and not _utf8(v)}
        if _long_numbers(joined):
            out |= {i for i, v in enumerate(raws) if v is not None and _long_numbers(v)}
        return out

    @staticmethod
    def _keys(
        events: list[Any], type_fields: list[tuple[str, str]], attrs: list[tuple[str, str]]
    ) -> list[Routing]:
        """One group's routing of ``events``: all at once when every event is a struct
        with string types and PARTITION BY values that are strings or ints."""
        if None not in events and dict not in set(map(type, events)):
            kinds = set().union(*(map(type, map(attrgetter(f), events)) for _, f in type_fields))
            if kinds == {str}:
                if not attrs:
                    return [b"[]"] * len(events)
                columns = [list(map(attrgetter(f), events)) for _, f in attrs]
                found = set().union(*(map(type, c) for c in columns))
                if len(columns) == 1 and found == {str}:
                    return list(map(one_string_key, columns[0]))
                if found <= {str, int}:
                    return list(map(scalar_key, zip(*columns, strict=True)))
        routed: list[Routing] = []
        for event in events:
            if event is None:
                routed.append(None)
                continue
            if type(event) is dict:  # judged by ``decode_event``: read by name
                get, k = event.get, 0
            else:
                get, k = partial(getattr, event), 1
            missing = next((f[0] for f in type_fields if type(get(f[k])) is not str), None)
            if missing is not None:
                routed.append(MissingType(missing))
            elif attrs:
                routed.append(key_of_values([get(a[k]) for a in attrs]))
            else:
                routed.append(b"[]")
        return routed

    def _judged(self, i: int, value: bytes | None, rejected: dict[int, Rejected]) -> Any:
        verdict = decode_event(value, self.limits)
        if isinstance(verdict, Rejected):
            rejected[i] = verdict
            return None
        return verdict


def _utf8(value: bytes) -> bool:
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _long_numbers(text: bytes) -> bool:
    """Whether ``text`` may hold a number orjson refuses: 20 digits in a row (an integer
    beyond 64 bits) or a 3-digit exponent (beyond a double's range). Or part of a string
    or fraction: then ``decode_event`` judges a good record, which costs only time."""
    digits = text.translate(_NUMBERS, b"+-")
    return b"00000000000000000000" in digits or b"e000" in digits

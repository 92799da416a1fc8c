"""The batch extractor routes exactly as judging each record by itself would.

The oracle is the per-record rule the coordinator followed before batches: the
verdict of ``decode_event``, then for each group its type fields (strings) and
``key_of`` over the decoded event.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from cerfleet.coordinator.partition_keys import (
    KeyExtractor,
    MissingType,
    tolerated_skew,
    window_clock,
)
from cerfleet.evaluation.horizon import DEFAULT_LATENESS
from cerfleet.evaluation.window import clock_of as evaluation_clock
from cerfleet.fleet.groups import Group, groups_of
from cerfleet.fleet.keyed import GroupId, key_of
from cerfleet.fleet.records import RecordLimits, Rejected, decode_event
from cerfleet.fleet.registry import QuerySpec, Registered
from cerfleet.pattern import Window, WindowKind

LIMITS = RecordLimits(max_bytes=400, max_depth=6)
GROUPS = [
    Group(GroupId(("in",), ("name",)), "k.name"),
    Group(GroupId(("in",), ("a", "b c")), "k.ab"),
    Group(GroupId(("in",), ()), "k.all"),
]
TYPE_FIELDS = [("type",), ("type", "kind"), ("type",)]


def _group(i: int) -> Any:
    g = GROUPS[i]

    class G:  # a group whose queries use these type fields
        id = g.id
        keyed_topic = g.keyed_topic
        type_fields = frozenset(TYPE_FIELDS[i])

    return G()


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=False),
    st.text(max_size=4),
)
values = st.recursive(scalars, lambda c: st.lists(c, max_size=3), max_leaves=8)
events = st.dictionaries(
    st.sampled_from(["type", "kind", "name", "a", "b c", "x"]), values, max_size=6
)


def _dump(event: dict[str, Any]) -> bytes:
    try:
        return orjson.dumps(event)
    except TypeError:  # an integer beyond 64 bits: written as the standard library does
        return json.dumps(event).encode()


raw_values = st.one_of(
    events.map(_dump),
    st.sampled_from(
        [
            b"",
            b"   ",
            b"{not json",
            b"[1, 2]",
            b'"text"',
            b'{"type": "A", "name": "\xff"}',
            b'{"type": "A", "x": "\xff"}',
            b'{"type": "A", "x": 123456789012345678901234}',
            b'{"type": "A", "x": 1e400}',
            b'{"type": "A", "x": 1' + b"0" * 400 + b"}",  # beyond every float: no clock
            b'{"type": "A", "x": -' + b"9" * 320 + b"}",
            # The least integers float() cannot hold, and the greatest it can.
            b'{"type": "A", "x": %d}' % (2**1024 - 2**970),
            b'{"type": "A", "x": %d}' % (2**1024 - 2**970 - 1),
            b'{"type": "A", "x": "1e400 and 123456789012345678901234"}',
            b'{"type": "A", "name": "n", "x": [[[[[[[1]]]]]]]}',
            b'{"type": "A", "name": "' + b"y" * 500 + b'"}',
            b'\xef\xbb\xbf{"type": "A"}',
            b'{"type": "A", "name": 1.0}',
            b'{"type": "A", "name": true}',
        ]
    ),
    st.none(),
)


def oracle(values: list[bytes | None]) -> tuple[dict[int, str], list[list[Any]]]:
    rejected: dict[int, str] = {}
    keys: list[list[Any]] = [[] for _ in GROUPS]
    for i, value in enumerate(values):
        event = decode_event(value, LIMITS)
        if isinstance(event, Rejected):
            rejected[i] = event.reason
            for routed in keys:
                routed.append(None)
            continue
        for g, group in enumerate(GROUPS):
            missing = [f for f in sorted(TYPE_FIELDS[g]) if not isinstance(event.get(f), str)]
            if missing:
                keys[g].append(("missing", missing[0]))
                continue
            attrs = group.id.partition_attrs
            keys[g].append(key_of(event, attrs) if attrs else b"[]")
    return rejected, keys


@settings(max_examples=300, deadline=None, database=None)
@given(st.lists(raw_values, max_size=12))
def test_a_batch_routes_as_each_record_alone(batch: list[bytes | None]) -> None:
    extractor = KeyExtractor([_group(i) for i in range(len(GROUPS))], LIMITS)
    got = extractor.extract(batch)
    want_rejected, want_keys = oracle(batch)
    assert {i: r.reason for i, r in got.rejected.items()} == want_rejected
    for g in range(len(GROUPS)):
        routed = [("missing", k.field) if isinstance(k, MissingType) else k for k in got.keys[g]]
        assert routed == want_keys[g]


# Events every group can route: string types, and keys mostly of strings and ints, which
# the extractor keys a whole batch at once; a bool, float or null among them sends the
# batch the record-by-record way.
fast_keys = st.one_of(
    st.text(max_size=3),
    st.integers(-(2**63), 2**63 - 1),
    st.sampled_from([0, 1, -1, 2**63 - 1, "1", "0"]),
)
key_values = st.one_of(fast_keys, st.sampled_from([None, True, False, 1.0, 2.5]))
types = {"type": st.sampled_from(["A", "B"]), "kind": st.just("k")}
routable = st.one_of(
    st.fixed_dictionaries({**types, "name": fast_keys, "a": fast_keys, "b c": fast_keys}),
    st.fixed_dictionaries(types, optional={"name": key_values, "a": key_values, "b c": key_values}),
)


@settings(max_examples=500, deadline=None, database=None)
@given(st.lists(routable, max_size=12))
def test_a_batch_of_events_is_keyed_as_each_event_alone(batch: list[dict[str, Any]]) -> None:
    values: list[bytes | None] = [orjson.dumps(e) for e in batch]
    extractor = KeyExtractor([_group(i) for i in range(len(GROUPS))], LIMITS)
    got = extractor.extract(values)
    want_rejected, want_keys = oracle(values)
    assert not got.rejected and not want_rejected
    assert got.keys == want_keys


def test_int_and_mixed_keys_of_a_batch_are_those_of_each_event() -> None:
    batch = [
        {"type": "A", "kind": "k", "name": 7, "a": "x", "b c": 3},
        {"type": "A", "kind": "k", "name": "7", "a": 1, "b c": "y"},
        {"type": "B", "kind": "k", "name": -(2**63), "a": 0, "b c": 0},
    ]
    got = KeyExtractor([_group(i) for i in range(len(GROUPS))], LIMITS).extract(
        [orjson.dumps(e) for e in batch]
    )
    assert got.keys[0] == [b"[7]", b'["7"]', b"[-9223372036854775808]"]
    assert got.keys[1] == [b'["x",3]', b'[1,"y"]', b"[0,0]"]


@settings(max_examples=300, deadline=None, database=None)
@given(st.lists(raw_values, max_size=12), st.sampled_from(["TIME", "ATTRIBUTE"]))
def test_a_batch_reads_each_record_clock_as_the_window_does(
    batch: list[bytes | None], kind: str
) -> None:
    """The clocks the coordinator orders records by are the workers' window clocks."""
    if kind == "TIME":
        window = Window(WindowKind.TIME, 1000, unit="MILLISECONDS")
    else:
        window = Window(WindowKind.ATTRIBUTE, 1000, attr="x")
    reference = evaluation_clock(window, "x")
    assert reference is not None
    groups = [_group(i) for i in range(len(GROUPS))]
    extractor = KeyExtractor(groups, LIMITS, window_clock(window, "x"))
    got = extractor.extract(batch)
    want: list[float | None] = []
    for value in batch:
        event = decode_event(value, LIMITS)
        t = None if isinstance(event, Rejected) else reference(event)
        want.append(None if t is None else float(t))
    assert got.times == want


def _registered(name: str, ceql: str, max_lateness: float | None = None) -> Registered:
    spec = QuerySpec(
        name=name,
        ceql=ceql,
        input_topics=("in",),
        output_topic="out",
        time_field="t",
        max_lateness=max_lateness,
    )
    return Registered(spec, 0, spec.compile())


def test_the_skew_the_queries_of_a_topic_tolerate() -> None:
    """What a partition read to its end lets the others run ahead by (``time_merge``):
    the horizon for keys, a lateness bound where one is declared, nothing for a query
    with one substream; queries without a clock have no say."""
    keyed = _registered("k", "SELECT * FROM S WHERE A ; B PARTITION BY [n] WITHIN 5 seconds")
    single = _registered("s", "SELECT * FROM S WHERE A ; B WITHIN 5 seconds")
    bound = _registered("b", "SELECT * FROM S WHERE A ; B WITHIN 5 seconds", max_lateness=250)
    by_attr = _registered("x", "SELECT * FROM S WHERE A ; B WITHIN 5 [x]", max_lateness=250)
    counted = _registered("c", "SELECT * FROM S WHERE A ; B WITHIN 5 events")

    def skew(*entries: Registered) -> float:
        return tolerated_skew(list(groups_of({e.spec.name: e for e in entries}, "k.").values()))

    assert skew(keyed) == DEFAULT_LATENESS
    assert skew(keyed, counted) == DEFAULT_LATENESS
    assert skew(keyed, single) == 0.0
    assert skew(keyed, bound) == 250.0
    assert skew(by_attr) == 0.0  # a bound in milliseconds, a clock in x
    assert skew(counted) == 0.0


def test_a_group_whose_keys_are_spread_tolerates_no_skew_but_its_bound() -> None:
    """Events of one key in several input partitions (``key_placement``) are ordered
    strictly across them: the horizon no longer applies; a declared bound still does."""
    keyed = _registered("k", "SELECT * FROM S WHERE A ; B PARTITION BY [n] WITHIN 5 seconds")
    bounded = _registered(
        "kb", "SELECT * FROM S WHERE A ; B PARTITION BY [n] WITHIN 5 seconds", max_lateness=250
    )
    for entry, placed in ((keyed, DEFAULT_LATENESS), (bounded, 250.0)):
        (group,) = groups_of({entry.spec.name: entry}, "k.").values()
        assert tolerated_skew([group]) == placed
        assert tolerated_skew([group], {"another.topic"}) == placed
        assert tolerated_skew([group], {group.keyed_topic}) == (0.0 if entry is keyed else 250.0)

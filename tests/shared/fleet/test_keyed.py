"""The keyed-topic contract: record keys, group ids, keyed topic names, the copies' heads
and headers."""

from __future__ import annotations

import math
import re
from typing import Any

import orjson
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from cerfleet.fleet.keyed import (
    GroupId,
    decode_src,
    encode_src,
    frame,
    header,
    header_items,
    key_of,
    unframe,
)
from cerfleet.query import compile_query

TOPIC_NAME = re.compile(r"\A[A-Za-z0-9._-]{1,249}\Z")
PREFIX = "cerfleet.keyed."

scalars = st.one_of(
    st.text(max_size=10),
    st.integers(-(2**63), 2**64 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
)


# ----------------------------------------------------------------- key_of


@pytest.mark.parametrize(
    "event",
    [
        {"b": 1},  # a missing
        {"a": None, "b": 1},
        {"a": math.nan, "b": 1},
        {"a": [1], "b": 1},
        {"a": {"x": 1}, "b": 1},
        {"a": 1, "b": None},  # the second missing
        {"a": 1},
    ],
)
def test_key_of_no_key(event: dict[str, Any]) -> None:
    assert key_of(event, ["a", "b"]) is None


def test_key_of_is_the_values_as_json() -> None:
    event = {"a": "INTC", "b": 3, "c": True, "d": 1.5, "e": [1]}
    # True and 1 (and 1.0) are one PARTITION BY key to the engine, so one record key here.
    assert key_of(event, ["a", "b", "c", "d"]) == b'["INTC",3,1,1.5]'
    assert key_of(event, ["b", "a"]) == b'[3,"INTC"]'  # in the given order
    assert key_of(event, []) == b"[]"


@settings(max_examples=100, deadline=None, database=None)
@given(values=st.lists(scalars, min_size=1, max_size=3), other=st.dictionaries(st.text(), scalars))
def test_key_of_same_values_same_bytes(values: list[Any], other: dict[str, Any]) -> None:
    attrs = [f"k{i}" for i in range(len(values))]
    event = {**other, **dict(zip(attrs, values, strict=True))}
    key = key_of(event, attrs)
    assert key is not None
    # Only the attributes count; after a JSON round trip (what the router reads) too.
    assert key_of(dict(zip(attrs, values, strict=True)), attrs) == key
    assert key_of(orjson.loads(orjson.dumps(event)), attrs) == key
    assert orjson.loads(key) == values


@settings(max_examples=200, deadline=None, database=None)
@given(a=scalars, b=scalars)
def test_key_of_different_json_values_different_bytes(a: Any, b: Any) -> None:
    # Values Python finds equal (1, 1.0, True) are one key to the engine: see below.
    assume(orjson.dumps(a) != orjson.dumps(b) and a != b)
    assert key_of({"k": a}, ["k"]) != key_of({"k": b}, ["k"])


@pytest.mark.parametrize(("a", "b"), [(1, 1.0), (1, True), (0, False), (0, -0.0)])
def test_key_of_agrees_with_the_engine_on_equal_keys(a: Any, b: Any) -> None:
    query = compile_query("SELECT * FROM S WHERE A ; B PARTITION BY [k]")
    events = [{"type": "A", "k": a}, {"type": "B", "k": b}]
    # Whether the embedded engine matches A with B (then to it they have one key) must be
    # whether the coordinator routes them with one record key (so to one keyed partition).
    one_key_for_the_engine = len(query.evaluator().process_batch(events)) == 1
    assert one_key_for_the_engine == (key_of(events[0], ["k"]) == key_of(events[1], ["k"]))


# ----------------------------------------------------------------- GroupId


def test_group_id_is_order_insensitive_and_deduplicated() -> None:
    a = GroupId.of(["t2", "t1"], ["name", "market"])
    b = GroupId.of(("t1", "t2", "t1"), ("market", "name"))
    assert a == b and hash(a) == hash(b)
    assert a.input_topics == ("t1", "t2") and a.partition_attrs == ("market", "name")
    assert a.keyed_topic(PREFIX) == b.keyed_topic(PREFIX)
    assert GroupId.of(["t1"], ["name"]) != GroupId.of(["t1"], [])
    assert GroupId.of(["t1"], ["name"]) != GroupId.of(["t2"], ["name"])


def test_keyed_topic_names_are_stable() -> None:
    # Keyed topics and checkpoints are found by these names: a change orphans them.
    assert GroupId.of(["stock"], ["name"]).keyed_topic(PREFIX) == PREFIX + "name.de7b453892fb"
    assert GroupId.of(["b", "a"], []).keyed_topic(PREFIX) == PREFIX + "all.8c7f21b6fc22"


group_ids = st.builds(
    GroupId.of,
    st.lists(st.text(min_size=1, max_size=30), min_size=1, max_size=3),
    st.lists(st.text(min_size=1, max_size=80), max_size=4),
)


@settings(max_examples=200, deadline=None, database=None)
@given(a=group_ids, b=group_ids)
def test_keyed_topic_names_are_valid_and_distinct(a: GroupId, b: GroupId) -> None:
    name = a.keyed_topic(PREFIX)
    assert TOPIC_NAME.match(name), name
    assert name.startswith(PREFIX)
    assert name == a.keyed_topic(PREFIX)
    assert (name == b.keyed_topic(PREFIX)) == (a == b)


def test_unsafe_attribute_names_are_made_safe() -> None:
    name = GroupId.of(["t"], ["näme", "a b", "x/y"]).keyed_topic(PREFIX)
    assert TOPIC_NAME.match(name)
    assert name.startswith(PREFIX + "a_b-n_me-x_y.")
    long = GroupId.of(["t"], ["a" * 300]).keyed_topic(PREFIX)
    assert TOPIC_NAME.match(long) and len(long) == len(PREFIX) + 60 + 1 + 12


# ----------------------------------------------------------------- headers


@settings(max_examples=100, deadline=None, database=None)
@given(topic=st.text(), partition=st.integers(0, 2**31), offset=st.integers(0, 2**63 - 1))
def test_src_round_trip(topic: str, partition: int, offset: int) -> None:
    assert decode_src(encode_src(topic, partition, offset)) == (topic, partition, offset)


class Headers:
    def __init__(self, headers: Any) -> None:
        self._headers = headers

    def headers(self) -> Any:
        return self._headers


def test_header_items_and_header() -> None:
    msg = Headers([("a", b"1"), ("b", "two"), ("c", None), ("a", b"again")])
    items = header_items(msg)  # type: ignore[arg-type]
    assert items == [("a", b"1"), ("b", b"two"), ("c", None), ("a", b"again")]
    assert header(items, "a") == b"1"  # the first
    assert header(items, "b") == b"two"
    assert header(items, "c") is None
    assert header(items, "missing") is None
    assert header(None, "a") is None
    assert header_items(Headers(None)) == []  # type: ignore[arg-type]
    assert header_items(Headers({"x": "y"})) == [("x", b"y")]  # type: ignore[arg-type]


# ----------------------------------------------------------------- framed values

topics = st.from_regex(r"\A[A-Za-z0-9._-]{1,40}\Z")
framed_records = st.tuples(
    st.integers(0, 2**62),  # registry offset
    topics,
    st.integers(0, 2**31 - 1),
    st.integers(0, 2**63 - 1),
    st.binary(max_size=40) | st.sampled_from([b"", b"]]", b'[1,["t",0,0]]', b'{"a":[[1]]}']),
)


@settings(max_examples=300, deadline=None, database=None)
@given(st.lists(framed_records, min_size=1, max_size=20))
def test_unframe_gives_back_each_value_source_and_registry(
    records: list[tuple[int, str, int, int, bytes]],
) -> None:
    framed = [frame(*r) for r in records]
    assert unframe(framed) == (
        [r[4] for r in records],
        [(r[1], r[2], r[3]) for r in records],
        [r[0] for r in records],
    )
    for value, (registry, topic, partition, offset, original) in zip(framed, records, strict=True):
        assert unframe([value]) == ([original], [(topic, partition, offset)], [registry])


# Heads near the frame's shape: each must be read alone exactly as within any batch,
# or a replay that batches records otherwise would read them otherwise.
crafted_heads = st.sampled_from(
    [
        b'[1,["t",0,0]]',
        b'[1,["t",0]]',
        b'[[1,"t",0,0]]',
        b'[1,"t",[0,0]]',
        b'[1,["t",0,0],',
        b'[1,["t,u",0,0]]',
        b'[1,["t]",0,0]]',
        b'[1,["t",0,1.5]]',
        b'[1,["t",true,0]]',
        b'[18446744073709551616,["t",0,0]]',
        b'[-1,["\\u00e9",0,0]]',
        b'[1,["t",0,0]],',
        b"]]",
        b"[",
        b"",
    ]
)


@settings(max_examples=500, deadline=None, database=None)
@given(
    st.lists(
        st.tuples(crafted_heads, st.sampled_from([b"{}", b'{"a":1}', b"]", b"", b'"x"'])),
        min_size=1,
        max_size=8,
    )
)
def test_a_batch_is_unframed_as_each_value_alone(parts: list[tuple[bytes, bytes]]) -> None:
    values = [head + rest for head, rest in parts]
    alone = [unframe([v]) for v in values]
    together = unframe(values)
    if any(a is None for a in alone):
        assert together is None
    else:
        assert together == tuple(
            [x for a in alone for x in a[k]]  # type: ignore[index]
            for k in range(3)
        )


@pytest.mark.parametrize(
    "value",
    [
        b'{"type":"BUY","price":1}',  # a value as an older coordinator copied it
        b'{"a":[[1]]}',  # a "]]" that ends no head
        b"[1,2]]",  # a head of the wrong shape
        b'[1,["t",0]]{}',  # a source without its offset
        b'["1",["t",0,0]]{}',  # a registry offset that is no integer
        b'[1,["t",0,0],2]]{}',
        b'[1,["t]",0,0]]{}',  # a "]" before the first "]]": a topic holds none
        b'[1,["t",0,0] ]]{}',  # the head's "]]" split: its first "]" is not followed
        b"",
    ],
)
def test_a_value_without_its_head_is_not_unframed(value: bytes) -> None:
    assert unframe([frame(3, "t", 0, 1, b"{}"), value]) is None
    assert unframe([value]) is None

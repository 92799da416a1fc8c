"""The keyed-topic contract between the coordinator and the workers.

A *group* is the set of live queries sharing input topics and PARTITION BY
attributes; each group has one keyed topic. The coordinator copies every
input record onto the keyed topic of each group that reads its topic,
keyed by the record's partition-key values (so one key's events stay in one
partition, in order). Each copy carries what a worker needs to make replays
deterministic:

- the input record's ``topic``, ``partition`` and ``offset`` (its *source*), so
  workers drop copies a restarted coordinator routes twice and outputs can name
  the input records of each match;
- the *registry offset*: how far the coordinator had read the query registry
  when it routed the record, so every worker (and every replay) runs exactly
  the queries that were registered then.

They travel in front of the input record's value, which follows unchanged: the
copy's value is ``[registry,[topic,partition,offset]]`` and then the value's bytes,
e.g. ``[17,["stock",3,1234]]{"type":"BUY",…}`` (``frame``). Headers would do, but a
consumed record's headers cost the client 0.6-1 µs per record to hand out (more than
reading the rest of the record), and a producer about a quarter of a microsecond to
take in; the heads of a whole batch are read with one JSON call (``unframe``). A head
ends one byte after its first ``]`` (the source's): a topic name holds no bracket. A
record without a value (nothing to put a head in front of) carries them as headers
instead, ``cerfleet-src`` (the source as JSON) and ``cerfleet-registry``, as
coordinators before this format wrote every record: a worker reads a record with
headers from its headers (``workers.keyed_batch``), so it reads topics such
coordinators wrote; workers must be upgraded before coordinators.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import msgspec
import orjson
from confluent_kafka import Message

from cerfleet.kept_json import dumps_kept, kept

SRC_HEADER = "cerfleet-src"
REGISTRY_HEADER = "cerfleet-registry"
ERROR_HEADER = "cerfleet-error"
QUERY_HEADER = "cerfleet-query"
STAGE_HEADER = "cerfleet-stage"
ORIGIN_HEADER = "cerfleet-origin"
# The attribute a query with a topic→stream map (``QuerySpec.topic_streams``) reads as
# an event's stream: the worker answers it from the input topic the record came from.
# Not a CEQL identifier, so no event's own attribute can be taken for it.
STREAM_FIELD = "@cerfleet.stream"

_SCALARS = (str, int, float, bool)
# A batch's heads, shapes and types checked in the decoder's one pass: ``unframe`` took
# 400-521 ns a record so, 852-887 reading them with orjson and checking each shape after.
_HEADS = msgspec.json.Decoder(list[tuple[int, tuple[str, int, int]]])
_TOPIC_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


@dataclass(frozen=True, slots=True)
class GroupId:
    """What decides a group: the input topics (sorted) and PARTITION BY attributes (sorted)."""

    input_topics: tuple[str, ...]
    partition_attrs: tuple[str, ...]

    @classmethod
    def of(cls, input_topics: Sequence[str], partition_attrs: Sequence[str]) -> GroupId:
        return cls(tuple(sorted(set(input_topics))), tuple(sorted(set(partition_attrs))))

    def keyed_topic(self, prefix: str) -> str:
        """A stable, readable topic name: the attributes, then a hash of the whole id."""
        digest = hashlib.sha256(
            orjson.dumps([self.input_topics, self.partition_attrs])
        ).hexdigest()[:12]
        attrs = _TOPIC_UNSAFE.sub("_", "-".join(self.partition_attrs))[:60] or "all"
        return f"{prefix}{attrs}.{digest}"


def key_of(event: Mapping[str, Any], attrs: Sequence[str]) -> bytes | None:
    """The keyed record's key for ``event``; None when an attribute is missing or not a
    scalar (the same rule as the engine's PARTITION BY: such events belong to no key)."""
    return key_of_values([event.get(attr) for attr in attrs])


def key_of_values(values: Sequence[Any]) -> bytes | None:
    """``key_of`` given the PARTITION BY attributes' values (None: missing)."""
    if len(values) == 1 and type(values[0]) is str:
        return one_string_key(values[0])
    key = []
    for value in values:
        if value is None or not isinstance(value, _SCALARS):
            return None
        if isinstance(value, float):
            if math.isnan(value):
                return None
            if value.is_integer() and abs(value) < 2**63:
                value = int(value)  # 1.0 == 1 in the engine's keys: one record key too
        elif isinstance(value, bool):
            value = int(value)  # True == 1 likewise
        key.append(value)
    return orjson.dumps(key)


@lru_cache(maxsize=65536)
def scalar_key(values: tuple[str | int, ...]) -> bytes | None:
    """``key_of_values`` of strings and ints (never bools, which hash as ints), cached:
    keys such as a desk number or a (user, region) pair repeat from record to record,
    and building each one cost the coordinator a third of its routing. Each cached key
    is a copy of its own size (``kept_json``)."""
    key = key_of_values(values)
    return None if key is None else kept(key)


@lru_cache(maxsize=65536)
def one_string_key(value: str) -> bytes:
    """The key of a single string value: the common key (a ticker, a user id), which
    repeats from record to record."""
    return dumps_kept([value])  # cached: a bytes object of orjson's own would be 4 KiB


def frame_format(registry: bytes, topic: str, partition: int) -> bytes:
    """The keyed copies' values of ``topic``'s records in ``partition`` routed at
    registry offset ``registry`` (its digits), as ``fmt % (offset, value)``."""
    # A topic name holds none of ``%[]"``; escaped all the same, so no name can break
    # the format or the head.
    name = orjson.dumps(topic).replace(b"%", b"%%")
    rest = b",%d,%%d]]%%b" % partition  # the partition, then the offset and the value
    return b"[" + registry + b",[" + name + rest


def frame(registry: int, topic: str, partition: int, offset: int, value: bytes) -> bytes:
    """The keyed copy's value of an input record (see the module's docstring)."""
    return frame_format(str(registry).encode(), topic, partition) % (offset, value)


def unframe(values: Sequence[bytes]) -> tuple[list[bytes], list[Any], list[int]] | None:
    """The input values, sources (``(topic, partition, offset)`` tuples) and registry
    offsets of framed keyed values; None if one of them is not framed."""
    if not values:
        return [], [], []
    # The source's "]" is the head's first, and the head's own follows it: one split per
    # value gives both the head (less its "]]") and the value (0.38-0.42 -> 0.32 µs a
    # record, 10,000 stock events, against finding the cut and slicing twice).
    parts = [v.partition(b"]]") for v in values]
    joined = b"]],".join([p[0] for p in parts])
    if joined.count(93) != 2 * len(parts) - 2:
        return None  # a "]" before some value's first "]]": not a head
    try:
        heads = _HEADS.decode(b"[" + joined + b"]]]")
    except (ValueError, TypeError):  # msgspec's DecodeError is a ValueError
        return None
    if len(heads) != len(values):
        return None  # heads that split or joined others'
    return [p[2] for p in parts], [h[1] for h in heads], [h[0] for h in heads]


def encode_src(topic: str, partition: int, offset: int) -> bytes:
    return orjson.dumps([topic, partition, offset])


def decode_src(value: bytes) -> tuple[str, int, int]:
    topic, partition, offset = orjson.loads(value)
    return str(topic), int(partition), int(offset)


def coordinates(msg: Message) -> tuple[str, int, int]:
    """A consumed record's topic, partition and offset (never None for data records)."""
    topic, partition, offset = msg.topic(), msg.partition(), msg.offset()
    if topic is None or partition is None or offset is None:
        raise ValueError("record without coordinates")
    return topic, partition, offset


def header_items(msg: Message) -> list[tuple[str, bytes | None]]:
    headers = msg.headers()
    if not headers:
        return []
    items = headers.items() if isinstance(headers, dict) else headers
    return [(k, v.encode() if isinstance(v, str) else v) for k, v in items]


def header(headers: Sequence[tuple[str, bytes | None]] | None, name: str) -> bytes | None:
    if headers:
        for k, v in headers:
            if k == name:
                return v
    return None

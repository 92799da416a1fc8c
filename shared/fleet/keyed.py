"""The keyed-topic contract between the coordinator and the workers.

A *group* is the set of live queries sharing input topics and PARTITION BY
attributes; each group has one keyed topic. The coordinator copies every
input record onto the keyed topic of each group that reads its topic,
keyed by the record's partition-key values (so one key's events stay in one
partition, in order) and unchanged in value. Headers carry what a worker
needs to make replays deterministic:

- ``cerfleet-src``: the input record's ``topic``, ``partition`` and ``offset``,
  so workers drop copies a restarted coordinator routes twice and outputs can
  name the input records of each match;
- ``cerfleet-registry``: how far the coordinator had read the query registry
  when it routed the record, so every worker (and every replay) runs exactly
  the queries that were registered then.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import orjson
from confluent_kafka import Message

from cerfleet.kept_json import dumps_kept

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
def one_string_key(value: str) -> bytes:
    """The key of a single string value: the common key (a ticker, a user id), which
    repeats from record to record."""
    return dumps_kept([value])  # cached: a bytes object of orjson's own would be 4 KiB


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

"""The query registry: a one-partition topic of records query name → spec (null: removed).

The fleet keeps no other record of its queries: the coordinator and every
worker rebuild the registry by reading the topic from its start, keeping the
latest record per name. The offset of the record that registered a query is
its *version*; ``state_at(R)`` is the set of queries registered by the records
below offset ``R``, which is how workers know exactly which queries the
coordinator had seen when it routed a record.

The topic keeps every record for ever (``retention.ms=-1``,
``cleanup.policy=delete``; see :data:`TOPIC_CONFIG`). It must not be compacted:
a checkpoint names the query versions it holds state for, and compaction would
drop a version that a newer record of the same name replaced while a
checkpoint still needs it, so restoring that checkpoint would fail.
"""

from __future__ import annotations

import logging
import time
from bisect import bisect_left
from typing import Any

import orjson
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
)

from cerfleet.errors import CerfleetError
from cerfleet.fleet.keyed import STREAM_FIELD, coordinates
from cerfleet.fleet.topics import ensure_topics
from cerfleet.languages import DEFAULT
from cerfleet.pattern import Consume
from cerfleet.query import CompiledQuery, compile_query

log = logging.getLogger(__name__)

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$"
# Whoever can write to the registry runs its queries on every worker: query texts are
# bounded here, their nesting by the CEQL parser and their automata by the compiler.
MAX_QUERY_CHARS = 65_536
# The languages a registry record may hold. SPAseq and RSEP-QL read RDF graph events (one
# record per event, each input topic a stream: ``cerfleet.rdf.streams``).
FLEET_LANGUAGES = ("ceql", "match_recognize", "spaseq", "rsepql")
RDF_LANGUAGES = ("spaseq", "rsepql")

# Applied when the topic is created here. A broker's defaults would delete the
# queries after a week (log.retention.hours) or once the topic outgrew a
# broker-wide log.retention.bytes; the fleet would then forget them on restart.
TOPIC_CONFIG: dict[str, str] = {
    "cleanup.policy": "delete",
    "retention.ms": "-1",
    "retention.bytes": "-1",
}


class RegistryError(CerfleetError):
    """The registry topic holds something unreadable, or could not be read in time."""


class QuerySpec(BaseModel):
    """One registered query, as stored (JSON) in the registry topic."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=NAME_PATTERN)
    ceql: str = Field(max_length=MAX_QUERY_CHARS)
    input_topics: tuple[str, ...] = Field(min_length=1)
    output_topic: str = Field(min_length=1)
    type_field: str = "type"
    time_field: str = "timestamp"
    # The most complex events one event may make this query emit on any worker. In the
    # record, not in each worker's settings, so that the whole group cuts at the same
    # place: outputs are numbered for exactly-once replay, and a successor cutting
    # elsewhere would number them differently. None (records written before the cap
    # was registered): the workers' own max_outputs_per_event.
    max_outputs_per_event: int | None = Field(None, ge=1)
    # Input topic -> the stream of FROM its records are in (as `--stream-field` names an
    # event's stream in `cerfleet run`). None: every event is in every stream of FROM.
    # A topic left out of the map carries events of no stream the query names.
    topic_streams: dict[str, str] | None = None
    # Milliseconds of the time field by which events may arrive out of time order in a
    # keyed partition (`cerfleet run --max-lateness`; a BOUNDED_TIME quarantine in the
    # query sets it too). None: arrival order.
    max_lateness: float | None = Field(None, ge=0)
    # The language of ``ceql`` (the field keeps its name so that records stay readable
    # across versions): None is CEQL, and every record written before the field existed.
    language: str | None = None

    @model_serializer(mode="wrap")
    def _without_unset_streams(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A record without a map is written as before the map existed, so workers of the
        # previous version (which forbid unknown fields) still read it during an upgrade.
        doc: dict[str, Any] = handler(self)
        for later in ("topic_streams", "max_lateness", "language"):
            if doc.get(later) is None:
                doc.pop(later, None)
        if doc.get("language") == DEFAULT:
            del doc["language"]  # a CEQL record is written as CEQL records always were
        return doc

    @property
    def query_language(self) -> str:
        """The language the query is written in (``cerfleet.languages``)."""
        return (self.language or DEFAULT).lower()

    def compile(self) -> CompiledQuery:
        """Compile the query; raises ``CEQLError`` (with line and column) or ``CerfleetError``
        when the fleet cannot run it."""
        stream_field = None if self.topic_streams is None else STREAM_FIELD
        language = self.query_language
        if language not in FLEET_LANGUAGES:
            raise CerfleetError(
                f"query {self.name!r}: the fleet runs {', '.join(FLEET_LANGUAGES)} "
                f"queries, not {language}"
            )
        if language in RDF_LANGUAGES:
            from cerfleet.fleet.rdf_queries import check_rdf

            check_rdf(self)
        query = compile_query(
            self.ceql,
            type_field=self.type_field,
            time_field=self.time_field,
            language=language,
            stream_field=stream_field,
        )
        for topic, stream in (self.topic_streams or {}).items():
            if topic not in self.input_topics:
                raise CerfleetError(
                    f"query {self.name!r}: topic {topic!r} is mapped to a stream but is not "
                    f"an input topic ({', '.join(self.input_topics)})"
                )
            if stream not in query.pattern.streams:
                raise CerfleetError(
                    f"query {self.name!r}: topic {topic!r} is mapped to stream {stream!r}, "
                    f"which is not in FROM ({', '.join(query.pattern.streams)})"
                )
        if query.partitioned and query.consume is Consume.ANY:
            raise CerfleetError(
                f"query {self.name!r}: CONSUME BY ANY with PARTITION BY needs one global order "
                "of events across all keys, but the fleet evaluates each key on whichever worker "
                "owns it, in parallel. Use CONSUME BY PARTITION (restart only the key that "
                "matched), or drop PARTITION BY."
            )
        declared = query.pattern.max_lateness
        if query.pattern.quarantine is not None and self.max_lateness not in (None, declared):
            raise CerfleetError(
                f"query {self.name!r}: max_lateness {self.max_lateness:g} ms contradicts "
                f"the query's {query.pattern.quarantine.kind.value} quarantine; give one"
            )
        return query


class Registered:
    """A spec with its version (the registry offset that registered it) and compiled form."""

    __slots__ = ("query", "spec", "version")

    def __init__(self, spec: QuerySpec, version: int, query: CompiledQuery) -> None:
        self.spec = spec
        self.version = version
        self.query = query


class RegistryHistory:
    """Every registry record applied so far, in offset order (no Kafka client here)."""

    def __init__(self) -> None:
        self.offset = 0  # the next registry offset to read: records below it are applied
        # (offset, name, Registered | None) in offset order; None: removed
        self._history: list[tuple[int, str, Registered | None]] = []
        self._offsets: list[int] = []
        self.current: dict[str, Registered] = {}
        self._by_version: dict[int, Registered] = {}
        self.errors = 0

    def apply(self, offset: int, key: bytes | None, value: bytes | None) -> None:
        """Apply the registry record at ``offset`` (``value`` None: a removal)."""
        self.offset = offset + 1
        name = (key or b"").decode("utf-8", "replace")
        entry: Registered | None = None
        if value is not None:
            try:
                spec = QuerySpec.model_validate(orjson.loads(value))
                entry = Registered(spec, offset, spec.compile())
            except (orjson.JSONDecodeError, ValidationError, CerfleetError) as exc:
                # Never fatal: a record that no longer compiles (say, after an upgrade)
                # or is over a limit only removes its query, and is reported.
                self.errors += 1
                log.error("registry record %d (%s) ignored: %s", offset, name, exc)
            except Exception:
                # Anyone who can write to the registry can write this record: a bug it
                # triggers in the compiler must not stop every process reading it.
                self.errors += 1
                log.exception("registry record %d (%s) ignored: compiler failure", offset, name)
        if entry is not None:
            self._by_version[offset] = entry
        self._history.append((offset, name, entry))
        self._offsets.append(offset)
        if entry is None:
            self.current.pop(name, None)
        else:
            self.current[name] = entry

    def state_at(self, offset: int) -> dict[str, Registered]:
        """The queries registered by the records below ``offset``."""
        if offset >= self.offset:
            return dict(self.current)
        state: dict[str, Registered] = {}
        for _, name, entry in self._history[: bisect_left(self._offsets, offset)]:
            if entry is None:
                state.pop(name, None)
            else:
                state[name] = entry
        return state

    def entry(self, name: str, version: int) -> Registered | None:
        """The registration of ``name`` made by the record at offset ``version``."""
        entry = self._by_version.get(version)
        return entry if entry is not None and entry.spec.name == name else None

    def entries(self) -> list[Registered]:
        """Every registration ever read, in offset order."""
        return list(self._by_version.values())

    def removed_before(self, name: str, version: int, offset: int) -> bool:
        """Whether the registration ``version`` of ``name`` was replaced or removed by a
        record below ``offset``."""
        hi = bisect_left(self._offsets, offset)
        lo = bisect_left(self._offsets, version + 1)
        return any(n == name for _, n, _ in self._history[lo:hi])


class Registry(RegistryHistory):
    """The registry's history, read from its topic; call ``poll`` to follow it."""

    def __init__(self, client_config: dict[str, str], topic: str) -> None:
        super().__init__()
        self.topic = topic
        config = {
            **client_config,
            "group.id": "cerfleet-registry-reader",  # required by the client; never joined
            "enable.auto.commit": "false",
            "enable.partition.eof": "true",
        }
        # Two clients, as a broker answers one connection's requests in order. The
        # follower long-polls the idle topic with the client's default wait (500 ms):
        # polling every 50 ms, three idle services' followers cost tansu 0.033 cores
        # (0.004 at 500). ``wait_for`` reads with the other, assigned only while it reads:
        # its ListOffsets and fetch would otherwise queue behind the follower's long poll,
        # which a broker holds for the whole wait when nothing arrives (the mock, and
        # tansu at times, even when records do).
        self._consumer = Consumer(config)
        self._consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        self._reader = Consumer({**config, "fetch.wait.max.ms": "10"})
        self._unreported = False  # applied by ``wait_for``, not yet reported by ``poll``

    def close(self) -> None:
        self._consumer.close()
        self._reader.close()

    def poll(self, timeout: float = 0.0) -> bool:
        """Apply whatever is available now; True if anything changed (since the last
        ``poll``, ``wait_for`` included)."""
        changed, self._unreported = self._unreported, False
        deadline = time.monotonic() + timeout
        while True:
            msg = self._consumer.poll(max(0.0, deadline - time.monotonic()))
            if msg is None:
                return changed
            taken = self._take(msg)
            if taken is None:
                return changed
            changed |= taken

    def _take(self, msg: Any) -> bool | None:
        """Apply ``msg`` unless ``wait_for`` already did; whether it changed anything, or
        None at the end of the topic or on an error."""
        err = msg.error()
        if err is not None:
            if err.code() == KafkaError._PARTITION_EOF:
                self.offset = max(self.offset, msg.offset() or 0)
            elif err.code() != KafkaError.UNKNOWN_TOPIC_OR_PART:  # that one: none registered
                log.warning("registry read: %s", err)
            return None
        offset = coordinates(msg)[2]
        if offset < self.offset:
            return False  # the other client read it first
        self.apply(offset, msg.key(), msg.value())
        return True

    def catch_up(self, timeout: float = 30.0) -> None:
        """Read up to the topic's current end."""
        _, high = self._watermarks(timeout)
        self.wait_for(high, timeout)

    def wait_for(self, offset: int, timeout: float) -> None:
        """Read until every record below ``offset`` is applied."""
        if self.offset >= offset:
            return
        deadline = time.monotonic() + timeout
        self._reader.assign([TopicPartition(self.topic, 0, self.offset)])
        try:
            while self.offset < offset:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RegistryError(
                        f"registry topic {self.topic!r} not readable up to offset {offset} "
                        f"within {timeout:.0f}s (read up to {self.offset})"
                    )
                msg = self._reader.poll(min(left, 0.5))
                if msg is not None and self._take(msg):
                    self._unreported = True
        finally:
            self._reader.unassign()

    def _watermarks(self, timeout: float) -> tuple[int, int]:
        try:
            low, high = self._reader.get_watermark_offsets(
                TopicPartition(self.topic, 0), timeout=timeout, cached=False
            )
        except Exception as exc:  # KafkaException: unknown topic means an empty registry
            if "UNKNOWN_TOPIC" in str(exc):
                return 0, 0
            raise RegistryError(f"cannot read registry topic {self.topic!r}: {exc}") from exc
        return int(low), int(high)


def ensure_topic(
    client_config: dict[str, str], topic: str, also: dict[str, int] | None = None
) -> None:
    """Create the registry topic with one partition and :data:`TOPIC_CONFIG` if it is
    missing, and the topics in ``also`` (name → partitions) in the same round trip."""
    ensure_topics(client_config, {**(also or {}), topic: 1}, configs={topic: TOPIC_CONFIG})


def write(client_config: dict[str, str], topic: str, name: str, spec: QuerySpec | None) -> int:
    """Append a registration (or, with ``spec=None``, a removal); return its offset.

    Creates the topic first if it is missing: a producer would otherwise have it
    auto-created with the broker's default partitions and retention."""
    ensure_topic(client_config, topic)
    producer = Producer({**client_config, "enable.idempotence": "true"})
    result: dict[str, Any] = {}

    def delivered(err: KafkaError | None, msg: Any) -> None:
        result["err"] = err
        result["offset"] = None if err else msg.offset()

    value = None if spec is None else spec.model_dump_json().encode()
    producer.produce(topic, key=name.encode(), value=value, partition=0, on_delivery=delivered)
    producer.flush(30)
    if "err" not in result:
        raise RegistryError(f"registry topic {topic!r}: write not acknowledged within 30s")
    if result["err"] is not None:
        raise RegistryError(f"registry topic {topic!r}: {result['err']}")
    return int(result["offset"])

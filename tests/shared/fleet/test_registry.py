"""The query registry: ``QuerySpec`` and ``RegistryHistory`` without Kafka, and who creates
the registry topic, and how, and following it, against the session's broker."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import orjson
import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from cerfleet.coordinator.router import Router
from cerfleet.errors import CEQLError, CerfleetError
from cerfleet.fleet import topics as topics_module
from cerfleet.fleet.registry import (
    TOPIC_CONFIG,
    QuerySpec,
    Registered,
    Registry,
    RegistryHistory,
    write,
)
from cerfleet.fleet.settings import CoordinatorSettings, WorkerSettings
from cerfleet.workers.worker import Worker
from tests.kafka_broker import KafkaBroker

Q1 = "SELECT * FROM S WHERE A ; B"
Q2 = "SELECT * FROM S WHERE A ; B PARTITION BY [k]"


def spec(name: str = "q", ceql: str = Q1, **kw: Any) -> QuerySpec:
    fields: dict[str, Any] = {"input_topics": ("in",), "output_topic": "out", **kw}
    return QuerySpec(name=name, ceql=ceql, **fields)


def value(name: str, ceql: str = Q1) -> bytes:
    return spec(name, ceql).model_dump_json().encode()


# ----------------------------------------------------------------- QuerySpec


@pytest.mark.parametrize("name", ["q", "Q1", "0", "stock.sell-buy_2", "a" * 200, "a" + "-._" * 60])
def test_valid_names(name: str) -> None:
    assert spec(name).name == name


@pytest.mark.parametrize(
    "name",
    ["", "-q", ".q", "_q", "a b", "q\n", "q:1", "q/1", "ä", "a" * 201, "q;", "q*"],
)
def test_invalid_names(name: str) -> None:
    with pytest.raises(ValidationError):
        spec(name)


@pytest.mark.parametrize("missing", ["name", "ceql", "input_topics", "output_topic"])
def test_required_fields(missing: str) -> None:
    doc = orjson.loads(value("q"))
    del doc[missing]
    with pytest.raises(ValidationError, match=missing):
        QuerySpec.model_validate(doc)


def test_no_input_topic_no_empty_output_no_extra_field() -> None:
    with pytest.raises(ValidationError):
        spec(input_topics=())
    with pytest.raises(ValidationError):
        spec(output_topic="")
    with pytest.raises(ValidationError):
        QuerySpec.model_validate({**orjson.loads(value("q")), "surprise": 1})


def test_spec_defaults_and_json_round_trip() -> None:
    s = spec(input_topics=("b", "a"))
    assert (s.type_field, s.time_field) == ("type", "timestamp")
    assert QuerySpec.model_validate_json(s.model_dump_json()) == s


def test_compile_follows_the_field_names() -> None:
    query = spec(ceql=Q1 + " WITHIN 5 SECONDS", type_field="kind", time_field="at").compile()
    assert query.type_field == "kind" and "at" in query.attributes


def test_consume_by_any_with_partition_by_is_rejected() -> None:
    with pytest.raises(CerfleetError, match="CONSUME BY PARTITION") as info:
        spec(ceql=Q2 + " CONSUME BY ANY").compile()
    assert "'q'" in str(info.value)
    assert not isinstance(info.value, CEQLError)
    # Each alone is fine, and so is the combination the message suggests.
    spec(ceql=Q1 + " CONSUME BY ANY").compile()
    assert spec(ceql=Q2 + " CONSUME BY PARTITION").compile().partitioned


def test_a_bounded_time_quarantine_sets_the_lateness_a_contradiction_is_refused() -> None:
    bounded = "CREATE QUARANTINE { BOUNDED_TIME 5 SECONDS { S } } " + Q1
    assert spec(ceql=bounded).compile().pattern.max_lateness == 5000
    spec(ceql=bounded, max_lateness=5000).compile()
    with pytest.raises(CerfleetError, match="contradicts"):
        spec(ceql=bounded, max_lateness=10).compile()
    with pytest.raises(CerfleetError, match="contradicts"):
        spec(ceql="CREATE QUARANTINE { DIRECT { S } } " + Q1, max_lateness=10).compile()
    spec(ceql=Q1, max_lateness=10).compile()


def test_a_syntax_error_has_a_line_and_column() -> None:
    with pytest.raises(CEQLError) as info:
        spec(ceql="SELECT * FROM S\nWHERE A ;; B").compile()
    assert (info.value.line, info.value.column) == (2, 10)
    assert str(info.value).startswith("line 2, column 10:")


# ----------------------------------------------------------------- RegistryHistory


def history_of(*records: tuple[int, str, bytes | None]) -> RegistryHistory:
    h = RegistryHistory()
    for offset, name, v in records:
        h.apply(offset, name.encode(), v)
    return h


def versions(state: dict[str, Registered]) -> dict[str, int]:
    return {name: entry.version for name, entry in state.items()}


def test_state_at() -> None:
    # With offset gaps, as control records leave them.
    h = history_of(
        (0, "q1", value("q1")),
        (2, "q2", value("q2", Q2)),
        (3, "q1", None),
        (7, "q2", value("q2")),
    )
    assert h.offset == 8
    assert versions(h.state_at(0)) == {}
    assert versions(h.state_at(1)) == {"q1": 0}
    assert versions(h.state_at(2)) == {"q1": 0}
    assert versions(h.state_at(3)) == {"q1": 0, "q2": 2}
    assert versions(h.state_at(4)) == {"q2": 2}
    assert versions(h.state_at(7)) == {"q2": 2}
    assert versions(h.state_at(8)) == {"q2": 7}
    assert versions(h.state_at(1000)) == versions(h.current) == {"q2": 7}
    assert h.state_at(3)["q2"].query.partitioned
    assert not h.state_at(8)["q2"].query.partitioned
    # state_at gives a copy: callers cannot change the registry through it.
    h.state_at(100).clear()
    assert versions(h.current) == {"q2": 7}


def test_removed_before() -> None:
    h = history_of(
        (0, "q1", value("q1")),
        (1, "q2", value("q2")),
        (5, "q1", None),
        (8, "q1", value("q1")),
        (9, "q2", value("q2")),
    )
    # q1@0 was removed by the record at 5: seen by offsets above 5.
    assert not h.removed_before("q1", 0, 5)
    assert h.removed_before("q1", 0, 6)
    assert h.removed_before("q1", 0, 100)
    # Below its own version, or before anything touched it: not removed.
    assert not h.removed_before("q1", 8, 3)
    assert not h.removed_before("q1", 8, 9)
    assert not h.removed_before("q1", 8, 100)
    # q2@1 was replaced at 9; other names' records do not count.
    assert not h.removed_before("q2", 1, 9)
    assert h.removed_before("q2", 1, 10)


def test_entry_and_entries() -> None:
    h = history_of((0, "q1", value("q1")), (1, "q2", value("q2")), (2, "q1", None))
    e = h.entry("q1", 0)
    assert e is not None and e.spec.name == "q1" and e.version == 0
    assert h.entry("q2", 0) is None  # version 0 is q1's
    assert h.entry("q1", 2) is None  # a removal registers nothing
    assert h.entry("q1", 99) is None
    assert [(r.spec.name, r.version) for r in h.entries()] == [("q1", 0), ("q2", 1)]


@pytest.mark.parametrize(
    "bad",
    [
        b"{not json",
        b"[1, 2]",
        orjson.dumps({"name": "q", "ceql": Q1}),  # fields missing
        orjson.dumps({"name": "q", "ceql": "SELECT", "input_topics": ["i"], "output_topic": "o"}),
        value("q", Q2 + " CONSUME BY ANY"),
        b"\xff\xfe",
    ],
    ids=["invalid-json", "array", "missing-fields", "syntax-error", "any-partition", "binary"],
)
def test_an_unusable_record_is_counted_and_acts_as_removal(bad: bytes) -> None:
    h = history_of((0, "q", value("q")), (1, "other", value("other")))
    h.apply(2, b"q", bad)  # never raises
    assert h.errors == 1
    assert h.offset == 3
    assert versions(h.current) == {"other": 1}
    assert versions(h.state_at(2)) == {"q": 0, "other": 1}
    assert h.removed_before("q", 0, 3)
    assert h.entry("q", 2) is None
    # A later valid record registers it again.
    h.apply(3, b"q", value("q"))
    assert versions(h.current) == {"other": 1, "q": 3}


# A model: the registry as a list of (name, version or None), replayed up to each offset.
ops = st.lists(
    st.tuples(st.integers(1, 3), st.sampled_from(["a", "b", "c"]), st.booleans()),
    max_size=20,
)


@settings(max_examples=100, deadline=None, database=None)
@given(ops=ops)
def test_history_matches_a_replay(ops: list[tuple[int, str, bool]]) -> None:
    h = RegistryHistory()
    log: list[tuple[int, str, bool]] = []
    offset = -1
    for gap, name, add in ops:
        offset += gap
        h.apply(offset, name.encode(), value(name) if add else None)
        log.append((offset, name, add))
    for at in range(offset + 3):
        model: dict[str, int] = {}
        for o, name, add in log:
            if o < at:
                if add:
                    model[name] = o
                else:
                    model.pop(name, None)
        assert versions(h.state_at(at)) == model
        for name, version in model.items():
            touched_later = any(n == name and version < o < at + 5 for o, n, _ in log)
            assert h.removed_before(name, version, at + 5) == touched_later
            assert not h.removed_before(name, version, at)
    assert [r.version for r in h.entries()] == [o for o, _, add in log if add]
    assert h.errors == 0


# ------------------------------------------------------------- the registry topic


@pytest.fixture
def creations(monkeypatch: pytest.MonkeyPatch) -> dict[str, tuple[int, Mapping[str, str]]]:
    """Topic → (partitions, configs) of every CreateTopics request ``ensure_topics`` makes
    (the mock answers them with an error and the topics are auto-created instead)."""
    seen: dict[str, tuple[int, Mapping[str, str]]] = {}
    real = topics_module._create

    def spy(admin: Any, metadata: Any, missing: Any, configs: Any, timeout: float) -> Any:
        for name, partitions in missing.items():
            seen[name] = (partitions, configs.get(name, {}))
        return real(admin, metadata, missing, configs, timeout)

    monkeypatch.setattr(topics_module, "_create", spy)
    return seen


def _write(kafka: KafkaBroker, topic: str) -> None:
    write(kafka.client_config(), topic, "q", spec())


def _start_and_stop(make: Callable[..., Any], settings: Any) -> None:
    stop = threading.Event()
    stop.set()  # run() still does its startup, then leaves its loop at once
    make(settings).run(stop)


def _coordinator(kafka: KafkaBroker, topic: str) -> None:
    settings = CoordinatorSettings(
        bootstrap_servers=kafka.bootstrap_servers,
        registry_topic=topic,
        dead_letter_topic=topic + "-dead",
    )
    _start_and_stop(Router, settings)


def _worker(kafka: KafkaBroker, topic: str) -> None:
    settings = WorkerSettings(
        bootstrap_servers=kafka.bootstrap_servers,
        registry_topic=topic,
        dead_letter_topic=topic + "-dead",
        keyed_topic_prefix=topic + ".keyed.",
    )
    _start_and_stop(Worker, settings)


@pytest.mark.parametrize(
    "first_user", [_write, _coordinator, _worker], ids=["submit-remove", "coordinator", "worker"]
)
def test_whoever_first_needs_the_registry_topic_creates_it_to_keep_every_record(
    kafka: KafkaBroker,
    topic_name: Callable[[str], str],
    creations: dict[str, tuple[int, Mapping[str, str]]],
    first_user: Callable[[KafkaBroker, str], None],
) -> None:
    # Not compacted either: a checkpoint may need a version a later record replaced.
    assert TOPIC_CONFIG["cleanup.policy"] == "delete"
    assert TOPIC_CONFIG["retention.ms"] == "-1"
    topic = topic_name("registry")
    first_user(kafka, topic)
    assert creations[topic] == (1, TOPIC_CONFIG)


def test_an_existing_registry_topic_is_written_without_a_creation_request(
    kafka: KafkaBroker,
    topic_name: Callable[[str], str],
    creations: dict[str, tuple[int, Mapping[str, str]]],
) -> None:
    topic = topic_name("registry")
    kafka.create_topic(topic, 1)
    # On a broker with the admin API the fixture's own creation went through the spy.
    creations.clear()
    _write(kafka, topic)
    _write(kafka, topic)
    assert creations == {}


@pytest.mark.real_kafka
def test_the_registry_topic_is_created_with_unlimited_retention(
    kafka: KafkaBroker, topic_name: Callable[[str], str]
) -> None:
    topic = topic_name("registry")
    _write(kafka, topic)
    resource = ConfigResource(ResourceType.TOPIC, topic)
    admin = AdminClient(kafka.client_config())
    described = admin.describe_configs([resource])[resource].result(30)
    assert {k: described[k].value for k in TOPIC_CONFIG} == TOPIC_CONFIG


@pytest.fixture
def followed(
    kafka: KafkaBroker, topic_name: Callable[[str], str]
) -> Iterator[tuple[Registry, str, dict[str, str]]]:
    """A registry topic holding query a's record (offset 0), and a Registry following it;
    with the topic and the client config."""
    topic = topic_name("registry")
    config = kafka.client_config()
    write(config, topic, "a", spec("a"))
    registry = Registry(config, topic)
    try:
        yield registry, topic, config
    finally:
        registry.close()


def test_catch_up_reads_past_the_followers_long_poll_and_poll_reports_it_once(
    followed: tuple[Registry, str, dict[str, str]],
) -> None:
    registry, topic, config = followed
    registry.catch_up()
    assert set(registry.current) == {"a"}
    # Not queued behind the follower's long poll (500 ms, which the mock holds whole):
    # reading through a client of its own took 1-2 ms, behind a 50 ms poll 49-63.
    # Four writes at different points of the follower's wait: behind it, each would
    # wait 250 ms on average.
    took = []
    for name in ("b", "c", "d", "e"):
        time.sleep(0.13)
        write(config, topic, name, spec(name))
        started = time.monotonic()
        registry.catch_up()
        took.append(time.monotonic() - started)
    assert max(took) < 0.2, took
    write(config, topic, "a", None)
    registry.catch_up()
    assert set(registry.current) == {"b", "c", "d", "e"} and registry.offset == 6
    # What catch_up applied, the next poll reports, once.
    assert registry.poll(0.0)
    deadline = time.monotonic() + 2.0
    follower = registry._consumer  # its position shows it read the records again
    while follower.position([TopicPartition(topic, 0)])[0].offset < 6:
        assert time.monotonic() < deadline, "the follower did not read the records"
        assert not registry.poll(0.1)
    # ... and not applied again: the removal of a still stands, nothing changed.
    assert not registry.poll(0.0)
    assert set(registry.current) == {"b", "c", "d", "e"}
    assert [e.version for e in registry.entries()] == [0, 1, 2, 3, 4]


def test_wait_for_an_offset_never_written_says_how_far_it_read(
    followed: tuple[Registry, str, dict[str, str]],
) -> None:
    registry = followed[0]
    with pytest.raises(CerfleetError, match=r"up to offset 5 within 1s \(read up to 1\)"):
        registry.wait_for(5, 1.0)
    assert set(registry.current) == {"a"}
    registry.wait_for(1, 1.0)  # already read: returns at once


MR = """SELECT * FROM S MATCH_RECOGNIZE (PARTITION BY k MEASURES COUNT(*) AS n
  PATTERN (A B) DEFINE A AS v > 1)"""


def test_a_ceql_record_is_written_as_before_the_language_field() -> None:
    for language in (None, "ceql"):
        doc = orjson.loads(spec(ceql=Q2, language=language).model_dump_json())
        assert "language" not in doc
        assert QuerySpec.model_validate(doc).query_language == "ceql"


def test_a_match_recognize_record_names_its_language_and_routes_by_partition_by() -> None:
    s = spec(ceql=MR, language="match_recognize")
    doc = orjson.loads(s.model_dump_json())
    assert doc["language"] == "match_recognize"
    assert QuerySpec.model_validate(doc) == s
    assert s.compile().partition_attrs == ("k",)
    # Without the field the text is CEQL, which it is not.
    with pytest.raises(CEQLError):
        spec(ceql=MR).compile()


SPASEQ = """PREFIX p: <http://example/>
SELECT ?c ?a ?b
WITHIN 5 SECONDS
FROM STREAM trades <http://example/trades>
FROM STREAM news <http://example/news>
WHERE {
  SEQ (A ; B)
  DEFINE GPM A ON trades { ?t p:company ?c . ?t p:price ?a . }
  DEFINE GPM B ON news { ?n p:company ?c . ?n p:score ?b . }
}
"""
RSEPQL = """PREFIX p: <http://example/>
SELECT ?a ?b
FROM NAMED <http://example/trades> WIN [RANGE 2] AS p:w
EVENT ON p:w { ?t p:price ?a . } AS E0
EVENT ON p:w { ?u p:volume ?b . } AS E1
WHERE { MATCH { E0 SEQ E1 } }
"""


def test_rdf_queries_are_registered_each_input_topic_a_stream() -> None:
    from cerfleet.fleet.groups import group_id_of

    s = spec(ceql=SPASEQ, language="spaseq", input_topics=("trades", "news"))
    assert QuerySpec.model_validate(orjson.loads(s.model_dump_json())) == s
    entry = Registered(s, 0, s.compile())
    # A group of its own, never keyed by a JSON attribute.
    assert group_id_of(entry).partition_attrs == ("@rdf",)
    # One stream: any topic is it; RSEP-QL also by the stream's local name.
    spec(ceql=RSEPQL, language="rsepql", input_topics=("anything",)).compile()


@pytest.mark.parametrize(
    ("language", "text", "fields", "reason"),
    [
        (
            "spaseq",
            SPASEQ,
            {"input_topics": ("trades", "prices")},
            "input topic 'prices' is no stream",
        ),
        ("spaseq", SPASEQ, {"topic_streams": {"in": "trades"}}, "topic_streams is for CEQL"),
        ("spaseq", SPASEQ, {"max_lateness": 10}, "in time order"),
        ("spaseq", SPASEQ, {"time_field": "t"}, "time_field do not apply"),
        (
            "spaseq",
            SPASEQ.replace(
                "?n p:score ?b . }", "?n p:score ?b . GRAPH <http://bg> { ?c p:x ?b } }"
            ),
            {"input_topics": ("trades", "news")},
            "background graph",
        ),
        ("rsepql", RSEPQL.replace("[RANGE 2]", "[RANGE 2 STEP 1]"), {}, "with a STEP"),
        ("rsepql", RSEPQL.replace("MATCH {", "MATCH CONSUMING {"), {}, "consumes input"),
    ],
)
def test_rdf_queries_the_fleet_cannot_run_are_refused_with_the_reason(
    language: str, text: str, fields: dict[str, Any], reason: str
) -> None:
    with pytest.raises((CerfleetError, CEQLError), match=reason):
        spec(ceql=text, language=language, **{"input_topics": ("trades",), **fields}).compile()

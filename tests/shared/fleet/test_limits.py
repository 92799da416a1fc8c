"""What a client sends is bounded: registry records (query size, nesting, automaton size)
and input records (size, nesting). Over a limit is an error with a reason, never a crash."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cerfleet import CEQLError, CerfleetError, compile_query
from cerfleet.cea.construction import MAX_TRANSITIONS, AutomatonTooLarge
from cerfleet.ceql.parser import MAX_DEPTH
from cerfleet.cli.main import main
from cerfleet.fleet.records import RecordLimits, Rejected, decode_event, near_limits
from cerfleet.fleet.registry import MAX_QUERY_CHARS, QuerySpec, RegistryHistory
from cerfleet.fleet.settings import WorkerSettings
from tests.shared.fleet.test_cli import no_kafka, query_file, submit_args

__all__ = ["no_kafka"]  # the fixture, used by name

SEQ_TOO_DEEP = "SELECT * FROM S WHERE " + " ; ".join(f"A{i}" for i in range(MAX_DEPTH + 5))
NESTED_PLUS = "SELECT * FROM S WHERE " + "(" * 150 + "A" + ")+" * 150 + " WITHIN 5 EVENTS"
FILTER_COPIES = "SELECT * FROM S WHERE A" + "".join(
    f" FILTER (A[x > {i}] OR A[y > {i}])" for i in range(20)
)


@pytest.mark.parametrize(
    "text",
    [
        "SELECT * FROM S WHERE " + "(" * 5000 + "A" + ")" * 5000 + " ; " * 3000,
        SEQ_TOO_DEEP,
        "SELECT * FROM S WHERE A FILTER A[" + "NOT " * 2000 + "x > 1]",
        "SELECT * FROM S WHERE A FILTER A[x" + " + 1" * 3000 + " > 1]",
        "SELECT * FROM S WHERE A" + "".join(f" FILTER A[x > {i}]" for i in range(1000)),
    ],
)
def test_deep_queries_are_refused_with_a_position(text: str) -> None:
    """Each of these overflowed the interpreter's stack (RecursionError) before."""
    with pytest.raises(CEQLError) as info:
        compile_query(text)
    assert info.value.line >= 1 and info.value.column >= 1


def test_a_deep_but_acceptable_query_compiles() -> None:
    depth = MAX_DEPTH // 3
    compile_query("SELECT * FROM S WHERE " + " ; ".join(f"A{i}" for i in range(depth)))


@pytest.mark.parametrize("text", [NESTED_PLUS, FILTER_COPIES])
def test_automata_over_the_bound_are_refused_quickly(text: str) -> None:
    start = time.perf_counter()
    with pytest.raises(AutomatonTooLarge, match=f"more than {MAX_TRANSITIONS} transitions"):
        compile_query(text)
    # Measured 0.2 s and 1.2 s; unbounded, FILTER_COPIES would build 2^20 transitions.
    assert time.perf_counter() - start < 10


def _spec(ceql: str) -> bytes:
    doc = {"name": "q", "ceql": ceql, "input_topics": ["in"], "output_topic": "out"}
    return orjson.dumps(doc)


@pytest.mark.parametrize(
    "ceql", ["SELECT * FROM S WHERE A" + " " * MAX_QUERY_CHARS, SEQ_TOO_DEEP, NESTED_PLUS]
)
def test_a_worker_ignores_a_registry_record_over_a_limit(ceql: str) -> None:
    history = RegistryHistory()
    history.apply(0, b"q", _spec(ceql))
    history.apply(1, b"ok", _spec("SELECT * FROM S WHERE A").replace(b'"q"', b'"ok"'))
    assert history.errors == 1
    assert list(history.current) == ["ok"]


def test_a_compiler_failure_on_a_registry_record_is_not_fatal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(self: QuerySpec) -> Any:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(QuerySpec, "compile", broken)
    history = RegistryHistory()
    history.apply(0, b"q", _spec("SELECT * FROM S WHERE A"))
    assert history.errors == 1 and history.current == {}


@pytest.mark.usefixtures("no_kafka")
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("SELECT * FROM S WHERE A" + " " * MAX_QUERY_CHARS, "at most 65536 characters"),
        (SEQ_TOO_DEEP, "nested too deeply"),
        (NESTED_PLUS, "more than 10000 transitions"),
    ],
)
def test_submit_refuses_what_a_worker_would_ignore(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    assert main(submit_args("q", query_file(tmp_path, text))) == 2
    assert message in capsys.readouterr().err


# ---------------------------------------------------------------- input records

LIMITS = RecordLimits(max_bytes=100_000, max_depth=8)


def nested(depth: int) -> bytes:
    """An event whose attribute x holds ``depth - 1`` nested arrays (the event is level 1)."""
    return b'{"type": "A", "x": ' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (b'{"type": "A", "s": "' + b"x" * 100_000 + b'"}', "too_large"),
        (nested(9), "too_deep"),
        (nested(10_000), "too_deep"),  # beyond orjson's own limit (1024) too
        (b'{"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": {}}}}}}}}}', "too_deep"),
        (b"[" * 10_000, "too_deep"),  # and malformed
        (b"{" * 20, "invalid_json"),
    ],
    ids=["large", "depth-9", "depth-10000", "objects", "unclosed", "malformed"],
)
def test_records_over_a_limit_are_rejected_with_a_reason(value: bytes, reason: str) -> None:
    got = decode_event(value, LIMITS)
    assert isinstance(got, Rejected) and got.reason == reason, got


@pytest.mark.parametrize(
    "value",
    [
        nested(8),
        b'{"type": "A", "s": "' + b"[{" * 100 + b'"}',  # brackets inside a string
        b'{"type": "A", "a": [1, 2], "b": {"c": [3]}, "d": [[4]], "e": [5, [6, [7]]]}',
    ],
    ids=["depth-8", "brackets-in-a-string", "mixed"],
)
def test_records_within_the_limits_pass(value: bytes) -> None:
    assert isinstance(decode_event(value, LIMITS), dict)


def test_the_settings_carry_the_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CERFLEET_MAX_EVENT_BYTES", "2048")
    monkeypatch.setenv("CERFLEET_QUERY_TIME_BUDGET", "0.5")
    s = WorkerSettings(max_event_depth=9)
    assert s.partition_limits() == (10_000, RecordLimits(2048, 9), 0.5)
    assert WorkerSettings().query_time_budget == 0.5
    monkeypatch.delenv("CERFLEET_QUERY_TIME_BUDGET")
    assert WorkerSettings().query_time_budget == 5.0
    with pytest.raises(ValueError, match="greater than or equal to 0"):
        WorkerSettings(query_time_budget=-1)
    with pytest.raises(ValueError, match="less than or equal to 200"):
        WorkerSettings(max_event_depth=500)


def test_errors_are_the_products_own() -> None:
    assert issubclass(AutomatonTooLarge, CerfleetError)


@settings(max_examples=300, deadline=None, database=None)
@given(
    values=st.lists(
        st.none() | st.binary(max_size=40) | st.text("[{}]a,", max_size=40).map(str.encode),
        max_size=80,
    ),
    max_bytes=st.integers(0, 40),
    max_depth=st.integers(0, 12),
)
def test_near_limits_judges_small_and_large_batches_alike(
    values: list[bytes | None], max_bytes: int, max_depth: int
) -> None:
    # A small batch is screened value by value, a large one by one vector pass.
    limits = RecordLimits(max_bytes=max_bytes, max_depth=max_depth)
    expected = [
        i
        for i, v in enumerate(values)
        if v is None or len(v) > max_bytes or v.count(b"[") + v.count(b"{") > max_depth
    ]
    assert near_limits(values, limits) == expected
    assert near_limits(values * 40, limits) == [
        k * len(values) + i for k in range(40) for i in expected
    ]


@settings(max_examples=300, deadline=None, database=None)
@given(
    flat=st.integers(65, 150),
    others=st.lists(st.tuples(st.integers(0, 150), st.integers(0, 12)), max_size=3),
    max_bytes=st.integers(0, 20),
    max_depth=st.integers(0, 8),
)
def test_near_limits_finds_a_deep_value_among_flat_ones(
    flat: int, others: list[tuple[int, int]], max_bytes: int, max_depth: int
) -> None:
    # Mostly values with one bracket (flat events), which the whole text's bracket count
    # clears at once: a deeper one, or a long one, among them is still found.
    depths = [1] * flat
    for at, depth in others:
        depths.insert(at % len(depths), depth)
    values = [b"{" + b"[" * (d - 1) + b"x" * (d % 5) if d else b"7" for d in depths]
    limits = RecordLimits(max_bytes=max_bytes, max_depth=max_depth)
    expected = [
        i
        for i, v in enumerate(values)
        if len(v) > max_bytes or v.count(b"[") + v.count(b"{") > max_depth
    ]
    assert near_limits(values, limits) == expected


def test_near_limits_clears_flat_events_by_their_count_and_finds_one_too_deep() -> None:
    flat = [b'{"type":"BUY","price":%d}' % i for i in range(1_000)]
    limits = RecordLimits(max_bytes=100, max_depth=3)
    assert near_limits(flat, limits) == []
    deep = b'{"a":[[{"b":1}]]}'  # four brackets
    assert near_limits([*flat[:500], deep, *flat[500:]], limits) == [500]
    assert near_limits([*flat, b'{"a":"%b"}' % (b"x" * 100)], limits) == [1_000]

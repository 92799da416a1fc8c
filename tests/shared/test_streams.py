"""The columnar ingestion path (``streams.steps``: bytes → columns → complex events)
against the row path it replaced (``EventReader`` → one dict per line →
``QueryEvaluator.process``): same complex events, same reports, same positions, on
random queries over random streams with random malformed lines, cut into batches at
random sizes."""

from __future__ import annotations

import contextlib
import io
import json
import os
from collections.abc import Iterator
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cerfleet import pattern
from cerfleet.ceql.printer import to_ceql
from cerfleet.events import prefetch
from cerfleet.events.jsonl import loads
from cerfleet.events.reader import EventReader
from cerfleet.events.records import MalformedEvent
from cerfleet.output import json_lines
from cerfleet.query import CompiledQuery, compile_query
from cerfleet.streams import LATE, steps
from tests.shared.strategies import TIME_FIELD, queries, streams

MAX_EXAMPLES = int(os.environ.get("CERFLEET_DIFF_EXAMPLES", "2500")) // 2

# Lines that are not events, and lines that are but that a fast decoder could misread.
ODD_LINES = (
    b"not json",
    b"[1, 2]",
    b'"A"',
    b'{"x": 1}',
    b'{"type": ""}',
    b'{"type": 3}',
    b'{"type": null}',
    b"",
    b"   ",
    b'{"type": "A", "x": 1',
    b'{"type": "A", "z": "\xff"}',
    b'{"type": "A"} {"type": "B"}',
    b'{"type": "A", "x": NaN}',
    b'{"type": "A", "x": 123456789012345678901234567890}',
    b'{"type": "B", "x": -18446744073709551616, "y": 18446744073709551615}',
    b'{"type": "A", "x": [1, 2], "k": {"a": 1}}',
    b'{"type": "A", "type": "C", "x": 2}',
    b'{"type": "A", "x": "\\ud800"}',
    b'{"type": "C", "y": 1.5e400}',
    b'  {"type": "B", "x": 1}  \r',
)


def _encode(event: dict[str, Any], style: int) -> bytes:
    if style == 0:
        return json.dumps(event, separators=(",", ":")).encode()
    if style == 1:
        return json.dumps(event).encode()
    return json.dumps(dict(reversed(list(event.items()))), ensure_ascii=True).encode() + b"\r"


@st.composite
def inputs(draw: st.DrawFn) -> bytes:
    events = draw(streams(max_size=12))
    lines: list[bytes] = []
    for event in events:
        while draw(st.integers(0, 4)) == 0:
            lines.append(draw(st.sampled_from(ODD_LINES)))
        lines.append(_encode(event, draw(st.integers(0, 2))))
    data = b"\n".join(lines)
    if draw(st.booleans()):
        data += b"\n"
    if draw(st.integers(0, 9)) == 0:
        data = b"\xef\xbb\xbf" + data
    return data


def _row_path(query: CompiledQuery, data: bytes) -> tuple[list[dict[str, Any]], list[Any]]:
    reports: list[tuple[int, str]] = []
    out: list[dict[str, Any]] = []
    evaluator = query.evaluator()
    reader = EventReader(
        io.BytesIO(data),
        type_field=query.type_field,
        on_malformed=lambda n, r: reports.append((n, r)),
    )
    for line, event in reader:
        problem = query.check_event(event)
        if problem is not None:
            reports.append((line, problem))
            continue
        for ce in evaluator.process(event):
            out.append(ce.to_dict())
        if evaluator.last_late:
            reports.append((line, LATE))
    return out, reports


def _columnar_path(
    query: CompiledQuery, data: bytes, max_bytes: int
) -> tuple[list[dict[str, Any]], list[Any], bytes]:
    reports: list[tuple[int, str]] = []
    found = []
    for step in steps(query, query.evaluator(), io.BytesIO(data), max_bytes=max_bytes):
        found += step.complex_events
        reports += step.reports
    return [ce.to_dict() for ce in found], reports, json_lines(found)


@settings(max_examples=MAX_EXAMPLES, deadline=None, database=None)
@given(
    query=queries(strategies=tuple(pattern.Strategy), consumes=tuple(pattern.Consume), limits=True),
    data=inputs(),
    max_bytes=st.one_of(st.integers(1, 64), st.just(1 << 20)),
)
def test_columnar_ingestion_equals_the_row_path(
    query: pattern.Pattern, data: bytes, max_bytes: int
) -> None:
    compiled = compile_query(to_ceql(query), time_field=TIME_FIELD)
    want, want_reports = _row_path(compiled, data)
    got, got_reports, written = _columnar_path(compiled, data, max_bytes)
    assert got_reports == want_reports
    if query.limit is None:
        assert got == want
    else:
        # LIMIT n keeps any n of an event's complex events: compare the counts per end.
        assert [ce["end"] for ce in got] == [ce["end"] for ce in want]
    # Written from the events' own bytes, the output reads back (as every reader of
    # cerfleet reads JSON) as the same objects.
    assert [loads(line) for line in written.splitlines()] == got


def test_a_kafka_batch_of_records_evaluates_as_its_lines() -> None:
    query = compile_query("SELECT * FROM S WHERE A ; B FILTER A[x > 1] PARTITION BY [k]")
    records = [b'{"type":"A","x":2,"k":1}', b"oops", b'{"type":"B","k":1,"note":"\xc3\xa9"}']
    bad: list[tuple[int, str]] = []
    found = query.evaluator().process_records(records, on_malformed=lambda n, r: bad.append((n, r)))
    assert bad == [(2, "not valid JSON: Expecting value (column 1)")]
    (ce,) = found
    assert (ce.start, ce.end, ce.positions, ce.key) == (0, 1, (0, 1), (1,))
    assert ce.events[1] == {"type": "B", "k": 1, "note": "é"}
    # The output holds the record's bytes as they came, not a re-encoding.
    assert json_lines(found).endswith(b'{"type":"B","k":1,"note":"\xc3\xa9"}]}\n')


def test_a_record_cut_short_is_reported_where_it_breaks_off() -> None:
    # Followed by another line: the row reader used to say "column 1" (of the next line).
    data = b'{"type": "SELL", "name": "MSFT", "price": 1\n{"type": "BUY"}\n'
    query = compile_query("SELECT * FROM S WHERE SELL")
    _, row_reports = _row_path(query, data)
    _, columnar_reports, _ = _columnar_path(query, data, 1 << 20)
    want = [(1, "not valid JSON: Expecting ',' delimiter (column 44)")]
    assert row_reports == columnar_reports == want


@settings(max_examples=min(MAX_EXAMPLES, 100), deadline=None, database=None)
@given(
    query=queries(strategies=tuple(pattern.Strategy), consumes=tuple(pattern.Consume)),
    data=inputs(),
    max_bytes=st.integers(1, 64),
    strict=st.booleans(),
    processes=st.integers(1, 3),
)
def test_a_file_decoded_in_other_processes_gives_what_inline_decoding_gives(
    query: pattern.Pattern,
    data: bytes,
    max_bytes: int,
    strict: bool,
    processes: int,
    tmp_path_factory: Any,
) -> None:
    # A file of more than four batches is decoded in forked children (events.prefetch),
    # each taking every processes-th chunk; an in-memory stream inline.
    compiled = compile_query(to_ceql(query), time_field=TIME_FIELD)
    path = tmp_path_factory.mktemp("prefetch") / "events.jsonl"
    path.write_bytes(data)

    def run(source: Any) -> tuple[list[Any], list[Any], Any]:
        found: list[Any] = []
        reports: list[Any] = []
        try:
            for step in steps(
                compiled, compiled.evaluator(), source, max_bytes=max_bytes, strict=strict
            ):
                found += step.complex_events
                reports += step.reports
        except MalformedEvent as err:
            return found, reports, (err.line, err.reason)
        return found, reports, None

    with open(path, "rb") as f, _environ(prefetch.ENV, str(processes)):
        got = run(f)
    want = run(io.BytesIO(data))
    assert got[1:] == want[1:]
    assert json_lines(got[0]) == json_lines(want[0])


@contextlib.contextmanager
def _environ(name: str, value: str) -> Iterator[None]:
    # Not monkeypatch: a function-scoped fixture is not reset between hypothesis cases.
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            del os.environ[name]
        else:
            os.environ[name] = old

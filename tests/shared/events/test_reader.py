"""The event reader: JSON Lines and CSV, files and stdin, malformed records, laziness."""

from __future__ import annotations

import io
import json
import os
import queue
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cerfleet.errors import EventError
from cerfleet.events import jsonl
from cerfleet.events.csv_reader import convert_value
from cerfleet.events.reader import EventReader, MalformedEvent, detect_format, read_events

Problems = list[tuple[int, str]]


@pytest.fixture(params=["orjson-if-installed", "stdlib-json"])
def loader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run JSON tests with and without the optional orjson fast path: same verdicts."""
    if request.param == "stdlib-json":
        monkeypatch.setattr(jsonl, "_fast_loads", None)
    return str(request.param)


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)
    return path


def collect(source: Any, **options: Any) -> tuple[list[tuple[int, dict[str, Any]]], Problems]:
    problems: Problems = []
    events = list(
        read_events(source, on_malformed=lambda n, why: problems.append((n, why)), **options)
    )
    return events, problems


# ------------------------------------------------------------------------ JSON Lines


def test_jsonl_yields_line_numbers_and_events(tmp_path: Path, loader: str) -> None:
    path = write(
        tmp_path,
        "e.jsonl",
        '{"type": "SELL", "price": 101.5}\n\n   \n{"type": "BUY", "name": "INTC", "ok": true}\n',
    )
    events, problems = collect(path)
    assert events == [
        (1, {"type": "SELL", "price": 101.5}),
        (4, {"type": "BUY", "name": "INTC", "ok": True}),
    ]
    assert problems == []


def test_jsonl_last_line_without_newline_and_crlf(tmp_path: Path, loader: str) -> None:
    path = write(tmp_path, "e.jsonl", b'{"type":"A"}\r\n{"type":"B"}')
    events, _ = collect(path)
    assert [e for _, e in events] == [{"type": "A"}, {"type": "B"}]


def test_jsonl_byte_order_mark_is_ignored(tmp_path: Path, loader: str) -> None:
    path = write(tmp_path, "e.jsonl", b'\xef\xbb\xbf{"type":"A"}\n')
    assert collect(path) == ([(1, {"type": "A"})], [])


def test_jsonl_malformed_records_are_reported_with_line_numbers(
    tmp_path: Path, loader: str
) -> None:
    lines = [
        '{"type": "A", "i": 0}',  # 1 ok
        "not json",  # 2
        "[1, 2]",  # 3
        "42",  # 4
        '{"name": "x"}',  # 5 no type
        '{"type": ""}',  # 6 empty type
        '{"type": 7}',  # 7 type not a string
        '{"type": null}',  # 8
        '{"type": "B", "x": NaN}',  # 9 NaN is not JSON
        '{"type": "C"',  # 10 truncated
        '{"type": "D", "i": 1}',  # 11 ok
    ]
    events, problems = collect(write(tmp_path, "e.jsonl", "\n".join(lines) + "\n"))
    assert events == [(1, {"type": "A", "i": 0}), (11, {"type": "D", "i": 1})]
    assert [n for n, _ in problems] == [2, 3, 4, 5, 6, 7, 8, 9, 10]
    reasons = dict(problems)
    assert reasons[2].startswith("not valid JSON")
    assert reasons[3] == "not a JSON object (got array)"
    assert reasons[4] == "not a JSON object (got number)"
    assert reasons[5] == "missing type field 'type'"
    assert reasons[6] == "empty type field 'type'"
    assert reasons[7] == "type field 'type' is not a string (got number)"
    assert reasons[8] == "type field 'type' is not a string (got null)"
    assert reasons[9].startswith("not valid JSON")
    assert reasons[10].startswith("not valid JSON")


def test_jsonl_invalid_utf8_line_is_malformed_not_fatal(tmp_path: Path, loader: str) -> None:
    path = write(tmp_path, "e.jsonl", b'{"type":"A"}\n{"type":"\xff"}\n{"type":"B"}\n')
    events, problems = collect(path)
    assert [n for n, _ in events] == [1, 3]
    assert [n for n, _ in problems] == [2]
    assert "UTF-8" in problems[0][1] or "JSON" in problems[0][1]


def test_jsonl_non_ascii_text(tmp_path: Path, loader: str) -> None:
    path = write(tmp_path, "e.jsonl", '{"type":"Café","city":"Zürich"}\n')
    assert collect(path)[0] == [(1, {"type": "Café", "city": "Zürich"})]


def test_type_field_is_configurable(tmp_path: Path, loader: str) -> None:
    path = write(tmp_path, "e.jsonl", '{"kind":"A"}\n{"type":"B"}\n')
    events, problems = collect(path, type_field="kind")
    assert events == [(1, {"kind": "A"})]
    assert problems == [(2, "missing type field 'kind'")]


def test_strict_raises_event_error_with_line_number(tmp_path: Path, loader: str) -> None:
    path = write(tmp_path, "e.jsonl", '{"type":"A"}\n\n{"oops": 1}\n{"type":"B"}\n')
    seen: list[int] = []
    with pytest.raises(MalformedEvent) as info:
        for line, _ in read_events(path, strict=True):
            seen.append(line)
    assert seen == [1]
    err = info.value
    assert isinstance(err, EventError)
    assert err.line == 3
    assert err.reason == "missing type field 'type'"
    assert str(err) == f"{path}:3: missing type field 'type'"


def test_malformed_without_callback_is_counted(tmp_path: Path) -> None:
    path = write(tmp_path, "e.jsonl", '{"type":"A"}\nxx\n[]\n')
    with EventReader(path) as reader:
        assert [n for n, _ in reader] == [1]
    assert reader.malformed_count == 2


# ------------------------------------------------------------------------------ CSV


def test_csv_header_and_value_conversion(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "trades.csv",
        "type,name,price,volume,ok,note\n"
        "SELL,MSFT,101.5,300,true,\n"
        'BUY,INTC,33,-5,FALSE,"a, quoted ""note"""\n'
        "\n"
        "SELL,AMZN,1.5e3,007,maybe, spaced \n",
    )
    events, problems = collect(path)
    assert problems == []
    assert events == [
        (2, {"type": "SELL", "name": "MSFT", "price": 101.5, "volume": 300, "ok": True}),
        (
            3,
            {
                "type": "BUY",
                "name": "INTC",
                "price": 33,
                "volume": -5,
                "ok": False,
                "note": 'a, quoted "note"',
            },
        ),
        (
            5,
            {
                "type": "SELL",
                "name": "AMZN",
                "price": 1500.0,
                "volume": 7,
                "ok": "maybe",
                "note": " spaced ",
            },
        ),
    ]


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("12", 12),
        ("-3", -3),
        ("+4", 4),
        ("1.5", 1.5),
        (".5", 0.5),
        ("2.", 2.0),
        ("1e3", 1000.0),
        ("true", True),
        ("False", False),
        ("nan", "nan"),
        ("inf", "inf"),
        ("1_000", "1_000"),
        ("12abc", "12abc"),
        ("2024-05-01T12:00:00Z", "2024-05-01T12:00:00Z"),
    ],
)
def test_csv_convert_value(cell: str, expected: object) -> None:
    result = convert_value(cell)
    assert result == expected
    assert type(result) is type(expected)


def test_csv_type_cell_stays_text(tmp_path: Path) -> None:
    path = write(tmp_path, "e.csv", "type,x\n1,1\ntrue,2\n")
    assert [e for _, e in collect(path)[0]] == [{"type": "1", "x": 1}, {"type": "true", "x": 2}]


def test_csv_malformed_rows(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "e.csv",
        "type,a,b\n"  # 1
        "A,1,2\n"  # 2 ok
        "A,1\n"  # 3 too few
        "A,1,2,3\n"  # 4 too many
        ",1,2\n"  # 5 empty type
        "B,3,4\n",  # 6 ok
    )
    events, problems = collect(path)
    assert [n for n, _ in events] == [2, 6]
    assert problems == [
        (3, "expected 3 fields, got 2"),
        (4, "expected 3 fields, got 4"),
        (5, "missing type field 'type'"),
    ]


def test_csv_multiline_quoted_cell_keeps_line_numbers(tmp_path: Path) -> None:
    path = write(tmp_path, "e.csv", 'type,text\nA,"two\nlines"\nB,x\nC\n')
    events, problems = collect(path)
    assert events == [(2, {"type": "A", "text": "two\nlines"}), (4, {"type": "B", "text": "x"})]
    assert problems == [(5, "expected 2 fields, got 1")]


def test_csv_invalid_utf8_row_is_malformed(tmp_path: Path) -> None:
    path = write(tmp_path, "e.csv", b"type,x\nA,\xff\nB,2\n")
    events, problems = collect(path)
    assert events == [(3, {"type": "B", "x": 2})]
    assert problems == [(2, "not valid UTF-8")]


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("name,price\n", "CSV header has no type column 'type'"),
        ("type,x,x\n", "CSV header: column 'x' appears twice"),
        ("type,,x\n", "CSV header: column 2 has no name"),
    ],
)
def test_csv_unusable_header_is_an_error_even_when_lenient(
    tmp_path: Path, header: str, message: str
) -> None:
    path = write(tmp_path, "e.csv", header + "A,1,2\n")
    with pytest.raises(MalformedEvent) as info:
        collect(path)
    assert info.value.line == 1
    assert str(info.value) == f"{path}:1: {message}"


def test_csv_empty_file_has_no_events(tmp_path: Path) -> None:
    assert collect(write(tmp_path, "e.csv", "")) == ([], [])


def test_csv_strict(tmp_path: Path) -> None:
    path = write(tmp_path, "e.csv", "type,a\nA,1\nA,1,2\n")
    with pytest.raises(MalformedEvent, match=r":3: expected 2 fields, got 3$"):
        list(read_events(path, strict=True))


def test_format_detection(tmp_path: Path) -> None:
    assert detect_format("x.csv") == "csv"
    assert detect_format(Path("DATA.CSV")) == "csv"
    assert detect_format("x.jsonl") == "jsonl"
    assert detect_format("-") == "jsonl"
    assert detect_format("x.csv", "jsonl") == "jsonl"
    assert detect_format("x.txt", "csv") == "csv"
    with pytest.raises(ValueError, match="unknown event format"):
        detect_format("x", "xml")
    # Explicit format wins over the extension when reading.
    path = write(tmp_path, "events.txt", "type,a\nA,1\n")
    assert collect(path, format="csv")[0] == [(2, {"type": "A", "a": 1})]


# ------------------------------------------------------------------ stdin & streams


def test_stdin_binary(monkeypatch: pytest.MonkeyPatch, loader: str) -> None:
    data = b'{"type":"A"}\nnope\n{"type":"B"}\n'
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
    with EventReader("-", on_malformed=lambda n, why: None) as reader:
        assert reader.name == "<stdin>"
        assert [(n, e["type"]) for n, e in reader] == [(1, "A"), (3, "B")]
        assert reader.malformed_count == 1


def test_stdin_text_only(monkeypatch: pytest.MonkeyPatch) -> None:
    # A plain text stream without .buffer (e.g. a test double) works too.
    monkeypatch.setattr(sys, "stdin", io.StringIO('{"type":"A"}\n\n{"type":"B"}\n'))
    assert [n for n, _ in read_events("-")] == [1, 3]


def test_stdin_csv(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("type,v\nA,1.5\n"))
    assert list(read_events("-", format="csv")) == [(2, {"type": "A", "v": 1.5})]


def test_open_file_object(tmp_path: Path) -> None:
    path = write(tmp_path, "e.jsonl", '{"type":"A"}\n')
    with path.open("rb") as handle:
        assert list(read_events(handle)) == [(1, {"type": "A"})]
        assert not handle.closed  # not ours to close


def test_missing_file_fails_on_construction(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        EventReader(tmp_path / "absent.jsonl")


class _Tripwire:
    """Serves lines one by one and records how many were requested."""

    def __init__(self, lines: list[bytes]) -> None:
        self.lines = lines
        self.served = 0

    def __iter__(self) -> Iterator[bytes]:
        for line in self.lines:
            self.served += 1
            yield line


def test_lines_from_any_iterable() -> None:
    assert list(read_events(['{"type":"A"}\n', "\n", '{"type":"B"}'])) == [
        (1, {"type": "A"}),
        (3, {"type": "B"}),
    ]
    assert list(read_events(["type\n", "A\n"], format="csv")) == [(2, {"type": "A"})]


def test_reading_is_lazy() -> None:
    stream = _Tripwire([b'{"type":"A"}\n', b'{"type":"B"}\n', b'{"type":"C"}\n'])
    events = read_events(stream)
    assert next(events) == (1, {"type": "A"})
    assert stream.served == 1


def test_events_arrive_while_the_pipe_is_still_open() -> None:
    read_fd, write_fd = os.pipe()
    results: queue.Queue[tuple[int, dict[str, Any]] | None] = queue.Queue()

    def consume() -> None:
        with os.fdopen(read_fd, "rb") as pipe:
            for item in read_events(pipe):
                results.put(item)
        results.put(None)

    worker = threading.Thread(target=consume, daemon=True)
    worker.start()
    with os.fdopen(write_fd, "wb", buffering=0) as pipe:
        pipe.write(json.dumps({"type": "A"}).encode() + b"\n")
        # The writer is still open: the event must already be available.
        assert results.get(timeout=10) == (1, {"type": "A"})
        pipe.write(b'{"type": "B"}\n')
        assert results.get(timeout=10) == (2, {"type": "B"})
    assert results.get(timeout=10) is None
    worker.join(timeout=10)

"""CSV straight into columns (``events.csv_columns``) against the row reader
(``csv_reader.parse_csv``, one dict per row): the same events, line numbers and
reports, and columns equal to those built from the row reader's dicts, on random CSV
texts (quotes, blank lines, CRLF, ragged rows, empty cells, every kind of cell) cut
into batches at random sizes."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cerfleet.events.columns import columns_of
from cerfleet.events.csv_columns import csv_batches
from cerfleet.events.csv_reader import parse_csv
from cerfleet.events.records import Malformed, MalformedEvent

CELLS = st.sampled_from(
    [
        "",
        "A",
        "B",
        "1",
        "-7",
        "007",
        "1.5",
        "2e3",
        ".5",
        " 3 ",
        "true",
        "FALSE",
        "x y",
        "1_000",
        "nan",
        "inf",
        "١٢",
        "é",
        '"q,uoted"',
        "9" * 25,
        "+5",
        "9" * 15,
        "-" + "9" * 16,
    ]
)
HEADERS = st.sampled_from(["type,x,y", "x,type", "type", " type , x ", "x,y"])


@st.composite
def csv_texts(draw: st.DrawFn) -> bytes:
    header = draw(HEADERS)
    width = header.count(",") + 1
    lines = [""] * draw(st.integers(0, 2)) + [header]
    for _ in range(draw(st.integers(0, 30))):
        kind = draw(st.integers(0, 19))
        if kind == 0:
            lines.append(draw(st.sampled_from(["", "  ", "a,b,c,d", "x"])))
            continue
        n = width if kind > 1 else draw(st.integers(1, width + 1))
        lines.append(",".join(draw(CELLS) for _ in range(n)))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    data = newline.join(lines).encode()
    if draw(st.booleans()):
        data += newline.encode()
    if draw(st.integers(0, 9)) == 0:
        data = data.replace(b"\xc3\xa9", b"\xff")  # not UTF-8
    if draw(st.integers(0, 9)) == 0:
        data = b"\xef\xbb\xbf" + data
    return data


def _schema(event: Any) -> str | None:
    y = event.get("y")
    return None if y is None or isinstance(y, int) else f"y is {type(y).__name__}"


def _rows(data: bytes, check: Any) -> tuple[list[Any], list[Any], list[Any]]:
    events, lines, problems = [], [], []
    for line, item in parse_csv(io.BytesIO(data), "type"):
        reason = item.reason if isinstance(item, Malformed) else check and check(item)
        if reason:
            problems.append((line, reason))
        else:
            events.append(item)
            lines.append(line)
    return events, lines, problems


def _columnar(data: bytes, check: Any, max_bytes: int) -> tuple[list[Any], list[Any], list[Any]]:
    events, lines, problems = [], [], []
    source = io.BytesIO(data)
    for batch, _ in csv_batches(
        source.read,
        ["x", "y", "z"],
        "type",
        check=check,
        check_attributes=["y"],
        max_bytes=max_bytes,
    ):
        got = [batch.events[i] for i in range(len(batch))]
        want = columns_of(got, ["x", "y", "z", "type"])
        assert sorted(batch.columns) == sorted(want)
        for name, col in want.items():
            assert batch.columns[name].dtype == col.dtype, name
            np.testing.assert_array_equal(batch.columns[name], col)
        events += got
        lines += batch.lines
        problems += batch.problems
    return events, lines, problems


@settings(max_examples=400, deadline=None, database=None)
@given(
    data=csv_texts(),
    max_bytes=st.one_of(st.integers(1, 40), st.just(1 << 20)),
    schema=st.booleans(),
)
def test_csv_columns_equal_the_row_reader(data: bytes, max_bytes: int, schema: bool) -> None:
    check = _schema if schema else None
    try:
        want = _rows(data, check)
    except MalformedEvent as err:
        with pytest.raises(MalformedEvent) as info:
            _columnar(data, check, max_bytes)
        assert (info.value.line, info.value.reason) == (err.line, err.reason)
        return
    got = _columnar(data, check, max_bytes)
    assert got[1:] == want[1:]
    assert [sorted(e.items()) for e in got[0]] == [sorted(e.items()) for e in want[0]]
    # Same values, same types (1 is not 1.0 nor True).
    assert [[type(v) for _, v in sorted(e.items())] for e in got[0]] == [
        [type(v) for _, v in sorted(e.items())] for e in want[0]
    ]

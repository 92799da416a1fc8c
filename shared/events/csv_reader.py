"""CSV with a header row: one event per row, values typed from their text."""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Iterator
from typing import Any

from cerfleet.events.records import Malformed, MalformedEvent, Parsed, type_problem

__all__ = ["convert_value", "parse_csv"]

# Strict forms: int()/float() alone would also take "1_000", "nan" or "inf",
# which in a CSV cell are far more likely to be text.
_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(?:\d+\.\d*|\.\d+|\d+(?:\.\d*)?[eE][+-]?\d+|\.\d+[eE][+-]?\d+)")


def convert_value(text: str) -> Any:
    """Type one non-empty cell: int, float, ``true``/``false`` (any case), else the text as is."""
    stripped = text.strip()
    if _INT.fullmatch(stripped):
        return int(stripped)
    if _FLOAT.fullmatch(stripped):
        return float(stripped)
    lowered = stripped.lower()
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    return text


class _Decoder:
    """Decode byte lines for the csv module, remembering which lines were not UTF-8.

    A quoted cell may span lines, so a bad line is only known to belong to a row
    once the csv module has finished that row; the row is then reported.
    """

    def __init__(self, lines: Iterable[bytes | str]) -> None:
        self._lines = lines
        self.bad_lines: set[int] = set()

    def __iter__(self) -> Iterator[str]:
        for number, raw in enumerate(self._lines, 1):
            if isinstance(raw, str):
                yield raw.removeprefix("\ufeff") if number == 1 else raw
                continue
            if number == 1:
                raw = raw.removeprefix(b"\xef\xbb\xbf")
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError:
                self.bad_lines.add(number)
                yield raw.decode("utf-8", errors="replace")


def _is_blank(row: list[str]) -> bool:
    return not row or (len(row) == 1 and not row[0].strip())


def _header(row: list[str], line: int, type_field: str) -> list[str]:
    names = [name.strip() for name in row]
    for column, name in enumerate(names, 1):
        if not name:
            raise MalformedEvent(line, f"CSV header: column {column} has no name")
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise MalformedEvent(line, f"CSV header: column {name!r} appears twice")
        seen.add(name)
    if type_field not in seen:
        raise MalformedEvent(line, f"CSV header has no type column {type_field!r}")
    return names


def parse_csv(lines: Iterable[bytes | str], type_field: str) -> Iterator[tuple[int, Parsed]]:
    """Yield ``(line_number, event_or_Malformed)`` for each data row of a CSV stream.

    The first non-blank row is the header; it must name ``type_field`` (else
    ``MalformedEvent`` is raised: no row could be an event). Empty cells are
    absent attributes, the type cell is kept as text, other cells go through
    ``convert_value``. ``line_number`` is the physical line a row starts on.
    """
    decoder = _Decoder(lines)
    rows = csv.reader(decoder)
    header: list[str] | None = None
    consumed = 0  # physical lines the csv module has read so far
    while True:
        start = consumed + 1
        try:
            row = next(rows)
        except StopIteration:
            return
        except csv.Error as err:
            consumed = rows.line_num
            if header is None:
                raise MalformedEvent(start, f"CSV header: {err}") from None
            yield start, Malformed(f"not valid CSV: {err}")
            continue
        consumed = rows.line_num
        if _is_blank(row):
            continue
        if decoder.bad_lines and any(n in decoder.bad_lines for n in range(start, consumed + 1)):
            if header is None:
                raise MalformedEvent(start, "CSV header: not valid UTF-8")
            yield start, Malformed("not valid UTF-8")
            continue
        if header is None:
            header = _header(row, start, type_field)
            continue
        if len(row) != len(header):
            yield start, Malformed(f"expected {len(header)} fields, got {len(row)}")
            continue
        event: dict[str, Any] = {}
        for name, cell in zip(header, row, strict=True):
            if cell == "":
                continue
            # The type is a name, never a number: "1" stays the event type "1".
            event[name] = cell if name == type_field else convert_value(cell)
        problem = type_problem(event, type_field)
        yield start, event if problem is None else Malformed(problem)

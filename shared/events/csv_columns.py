"""CSV → columns: batches of a CSV file straight into the columns a query reads.

The row reader (``csv_reader.parse_csv``) builds a dict per row and types every cell
one by one. Here a batch of rows is cut into cells by ``str.split`` and only the
attributes the query reads are typed, a whole column at a time: one regular-expression
pass over the column's cells joined by line breaks says whether every cell is an int
(then numpy's text parser makes the int64 column at once when no cell has over 15
ASCII digits, else ``int`` over them), every cell a float, or no cell a number or boolean (the text
is kept); any other column is typed cell by cell exactly as the row reader does. The
rows' dicts are made only for the few events the automaton looks at one by one.

The fast cut is exact only for plain rows: a batch holding a quote, a carriage return
not ending its line, a NUL or bytes that are not UTF-8 — and with them every later
one, since a quoted cell may span lines — goes through the row reader instead, with
the same line numbers. Verdicts and messages are the row reader's.

Why ``str.split`` and these passes rather than pyarrow's CSV reader: on the
benchmark's 1M-row stock CSV, ... (see the commit that added this module).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import chain
from typing import Any, overload

import numpy as np

from cerfleet.events.columns import column
from cerfleet.events.csv_reader import _FLOAT, _INT, _header, convert_value, parse_csv
from cerfleet.events.ingest import Batch
from cerfleet.events.line_batches import whole_line_chunks
from cerfleet.events.records import Malformed

__all__ = ["CsvEvents", "csv_batches"]

SchemaCheck = Callable[[Mapping[str, Any]], str | None]

_INTS = re.compile(rf"(?:{_INT.pattern}\n)*{_INT.pattern}")
# Ints of at most 15 digits are below 2**53 (an int64 column, as ``column`` makes it)
# and within what numpy's text parser reads exactly.
_SHORT_INT = r"[+-]?[0-9]{1,15}"  # ASCII digits: int() reads others too, numpy not
_SHORT_INTS = re.compile(rf"(?:{_SHORT_INT}\n)*{_SHORT_INT}")
_FLOATS = re.compile(rf"(?:{_FLOAT.pattern}\n)*{_FLOAT.pattern}")
# A cell the row reader would type (it strips the cell first). Leading whitespace may
# run over a line break here: that finds more cells, never fewer, and more only sends
# the column through the cell-by-cell path.
_TYPED = re.compile(rf"(?mi)^\s*(?:{_INT.pattern}|{_FLOAT.pattern}|true|false)\s*$")
_DIGIT = re.compile(r"\d")
_NEWLINE, _COMMA = ord("\n"), ord(",")


class CsvEvents(Sequence[dict[str, Any]]):
    """The events of a batch's rows, each made (as the row reader makes it) on access:
    row ``i`` is the line ``text[starts[i]:ends[i]]``."""

    __slots__ = ("_ends", "_header", "_starts", "_text", "_type_field")

    def __init__(
        self,
        header: list[str],
        text: bytes,
        starts: Sequence[int] | np.ndarray,
        ends: Sequence[int] | np.ndarray,
        type_field: str,
    ) -> None:
        self._header = header
        self._text = text
        self._starts = starts
        self._ends = ends
        self._type_field = type_field

    def __len__(self) -> int:
        return len(self._starts)

    @overload
    def __getitem__(self, i: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[dict[str, Any]]: ...

    def __getitem__(self, i: int | slice) -> dict[str, Any] | Sequence[dict[str, Any]]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        line = self._text[self._starts[i] : self._ends[i]]
        cells = line.decode("utf-8").removesuffix("\r").split(",")
        type_field = self._type_field
        return {
            name: cell if name == type_field else convert_value(cell)
            for name, cell in zip(self._header, cells, strict=True)
            if cell != ""
        }


def csv_batches(
    read: Callable[[int], bytes],
    attributes: Iterable[str],
    type_field: str,
    *,
    check: SchemaCheck | None = None,
    check_attributes: Iterable[str] = (),
    max_bytes: int = 1 << 20,
) -> Iterator[tuple[Batch, int | None]]:
    """The batches of a CSV input read through ``read`` (see ``line_batches``) and the
    bytes read after each (None past a switch to the row reader). ``attributes``: the
    columns wanted (the type field's always comes); ``check``: the schema check,
    reading ``check_attributes`` and the type.
    ``MalformedEvent`` for an unusable header, as from the row reader."""
    wanted = sorted({*attributes, type_field})
    names = sorted({*wanted, *check_attributes})
    chunks = whole_line_chunks(read, max_bytes)
    header: list[str] | None = None
    header_line = b""
    next_number = 1
    for text, bytes_read in chunks:
        if b'"' in text or b"\0" in text or _lone_returns(text):
            break
        try:
            decoded = text.decode("utf-8")
        except UnicodeDecodeError:
            break
        first = next_number
        next_number += text.count(b"\n") + 1
        if header is None:
            offset = 0
            for line in text.split(b"\n"):
                offset += len(line) + 1
                row = line.decode("utf-8").removesuffix("\r").split(",")
                if not _blank(row):
                    header = _header(row, first, type_field)
                    header_line = line
                    first += 1
                    break
                first += 1
            if header is None or offset > len(text):
                continue  # no line after the header in this batch
            text = text[offset:]
            decoded = text.decode("utf-8")
        batch = _batch(header, text, decoded, first, type_field, wanted, names, check)
        yield batch, bytes_read
    else:
        return
    # The rest through the row reader: the header first, then every line from the one
    # this batch starts on, numbered as in the file.
    rest = chain(_with_breaks(text), _rest_lines(chunks))
    first = next_number
    if header is None:
        rows = ((first + n - 1, item) for n, item in parse_csv(rest, type_field))
    else:
        with_header = parse_csv(chain([header_line], rest), type_field)
        rows = ((first + n - 2, item) for n, item in with_header)
    yield from _row_batches(rows, type_field, wanted, names, check)


def _batch(
    header: list[str],
    text: bytes,
    decoded: str,
    first: int,
    type_field: str,
    wanted: list[str],
    names: list[str],
    check: SchemaCheck | None,
) -> Batch:
    """The batch of ``text``'s lines (plain: no quote, every CR before a line break),
    the first of them line ``first``."""
    width = len(header)
    raw = np.frombuffer(text, dtype=np.uint8)
    breaks = np.flatnonzero(raw == _NEWLINE)
    starts = np.concatenate(([0], breaks + 1))
    ends = np.concatenate((breaks, [len(raw)]))
    n = len(starts)
    problems: list[tuple[int, str]] = []
    needed = [name for name in names if name in header]
    at = {name: header.index(name) for name in needed}
    if width > 1 and _regular(raw, n, width):
        # Every line a row of ``width`` cells: cut them all in one pass, a column is
        # then every width-th cell.
        plain = decoded
        if b"\r" in text:  # CRLF lines; the last line's break was cut off after its CR
            plain = decoded.replace("\r\n", "\n").removesuffix("\r")
        flat = plain.replace("\n", ",").split(",")
        by_column = {name: flat[at[name] :: width] for name in needed}
        keep = None
    else:
        rows: list[list[str]] = []
        kept: list[int] = []
        for k, line in enumerate(decoded.split("\n")):
            row = line.removesuffix("\r").split(",")
            if _blank(row):
                continue
            if len(row) == width:
                rows.append(row)
                kept.append(k)
            else:
                problems.append((first + k, f"expected {width} fields, got {len(row)}"))
        by_column = {name: [row[at[name]] for row in rows] for name in needed}
        keep = kept
        n = len(kept)
    values: dict[str, list[Any] | np.ndarray] = {}
    for name in names:
        if name not in at:
            values[name] = [None] * n
        elif name == type_field:
            types = by_column[name]
            values[name] = [c if c != "" else None for c in types] if "" in types else types
        else:
            values[name] = _typed(by_column[name])
    bad = _judge(values, type_field, names, check)
    if keep is None and not bad:
        # Every line an event (the usual batch): no index arrays to build or apply.
        columns = {name: _column(values[name]) for name in wanted}
        events = CsvEvents(header, text, starts, ends, type_field)
        return Batch(columns, events, range(first, first + n), problems)
    rows_at = np.arange(len(starts)) if keep is None else np.array(keep, dtype=np.int64)
    if bad:
        problems += [(first + int(rows_at[k]), reason) for k, reason in bad.items()]
        problems.sort()
        good = [k for k in range(n) if k not in bad]
        values = {name: _pick(col, good) for name, col in values.items()}
        rows_at = rows_at[good]
    columns = {name: _column(values[name]) for name in wanted}
    events = CsvEvents(header, text, starts[rows_at], ends[rows_at], type_field)
    return Batch(columns, events, (rows_at + first).tolist(), problems)


def _column(values: list[Any] | np.ndarray) -> np.ndarray:
    return values if isinstance(values, np.ndarray) else column(values)


def _pick(values: list[Any] | np.ndarray, rows: list[int]) -> list[Any] | np.ndarray:
    if not isinstance(values, np.ndarray):
        return [values[k] for k in rows]
    # No value left at all: ``column`` makes NaNs of that, not an empty int column.
    return values[np.array(rows, dtype=np.int64)] if rows else []


def _typed(cells: Sequence[str]) -> list[Any] | np.ndarray:
    """The cells of one column as the row reader types them (None: an empty cell), or
    straight away the int64 column ``column`` would make of them."""
    joined = "\n".join(cells)
    if _SHORT_INTS.fullmatch(joined):
        # One C pass instead of an int object per cell and ``column``'s checks of them.
        return np.fromstring(joined, dtype=np.int64, sep="\n")
    if _INTS.fullmatch(joined):
        return list(map(int, cells))
    if _FLOATS.fullmatch(joined):
        return list(map(float, cells))
    if "" not in cells:
        # Every int or float holds a digit; "true"/"false" are found as the row reader
        # finds them (lower-cased). Text without either is text: no slower search.
        lowered = joined.lower()
        if not _DIGIT.search(joined) and "true" not in lowered and "false" not in lowered:
            return list(cells)
        if not _TYPED.search(joined):
            return list(cells)
    return [None if c == "" else convert_value(c) for c in cells]


def _values(values: list[Any] | np.ndarray) -> list[Any]:
    return values.tolist() if isinstance(values, np.ndarray) else values


def _judge(
    values: dict[str, list[Any] | np.ndarray],
    type_field: str,
    names: list[str],
    check: SchemaCheck | None,
) -> dict[int, str]:
    """Rows that are no events: no type, or (``check``) a schema violation."""
    types = values[type_field]
    bad = {}
    if None in types:
        bad = {k: f"missing type field {type_field!r}" for k, t in enumerate(types) if t is None}
    if check is not None:
        # Python values, as the row reader hands them to the check.
        rows = {name: _values(values[name]) for name in names}
        for k in range(len(types)):
            if k not in bad:
                problem = check({name: rows[name][k] for name in names})
                if problem is not None:
                    bad[k] = problem
    return bad


def _row_batches(
    rows: Iterator[tuple[int, Any]],
    type_field: str,
    wanted: list[str],
    names: list[str],
    check: SchemaCheck | None,
    size: int = 8192,
) -> Iterator[tuple[Batch, int | None]]:
    """Batches of what the row reader yields (the input's rest, after a plain start)."""
    events: list[dict[str, Any]] = []
    numbers: list[int] = []
    problems: list[tuple[int, str]] = []
    for number, item in rows:
        reason = item.reason if isinstance(item, Malformed) else None
        if reason is None and check is not None:
            reason = check(item)
        if reason is not None:
            problems.append((number, reason))
            continue
        events.append(item)
        numbers.append(number)
        if len(events) >= size:
            yield _of_events(events, numbers, problems, wanted), None
            events, numbers, problems = [], [], []
    yield _of_events(events, numbers, problems, wanted), None


def _of_events(
    events: list[dict[str, Any]],
    numbers: list[int],
    problems: list[tuple[int, str]],
    wanted: list[str],
) -> Batch:
    columns = {name: column([e.get(name) for e in events]) for name in wanted}
    return Batch(columns, events, numbers, problems)


def _regular(raw: np.ndarray, lines: int, width: int) -> bool:
    """Whether each of the ``lines`` lines of ``raw`` has ``width - 1`` commas: the
    separators (commas and line breaks) then run ``width - 1`` commas, a break, and so
    on, so every ``width``-th separator is a break."""
    separators = np.flatnonzero((raw == _COMMA) | (raw == _NEWLINE))
    if len(separators) != lines * width - 1:
        return False
    return bool((raw[separators[width - 1 :: width]] == _NEWLINE).all())


def _lone_returns(text: bytes) -> bool:
    """Whether a carriage return ends no line (the last line's break was cut off)."""
    returns = text.count(b"\r")
    return bool(returns) and returns - text.count(b"\r\n") - text.endswith(b"\r") > 0


def _blank(row: list[str]) -> bool:
    return len(row) == 1 and not row[0].strip()


def _with_breaks(text: bytes) -> list[bytes]:
    lines = text.split(b"\n")
    return [line + b"\n" for line in lines]


def _rest_lines(chunks: Iterator[tuple[bytes, int]]) -> Iterator[bytes]:
    for text, _ in chunks:
        yield from _with_breaks(text)

"""Read events from a file or stdin, lazily, one record at a time.

Formats: JSON Lines (default) and CSV with a header (``*.csv`` or
``format="csv"``). Good records are yielded as ``(line_number, event)``;
malformed ones are not events (they get no stream position): they go to the
``on_malformed(line_number, reason)`` callback, or raise ``MalformedEvent``
under ``strict=True``. Nothing is read ahead beyond the current line, so an
endless pipe on stdin yields each event as soon as its line arrives.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator
from types import TracebackType
from typing import IO, Any, Literal

from cerfleet.events.csv_reader import parse_csv
from cerfleet.events.jsonl import parse_jsonl
from cerfleet.events.records import Malformed, MalformedEvent

__all__ = [
    "FORMATS",
    "EventReader",
    "MalformedEvent",
    "OnMalformed",
    "detect_format",
    "read_events",
]

Format = Literal["jsonl", "csv"]
FORMATS: tuple[str, ...] = ("auto", "jsonl", "csv")
STDIN = "-"
STDIN_NAME = "<stdin>"

OnMalformed = Callable[[int, str], None]
# A path, "-" for stdin, or anything yielding lines (an open file, a list, ...).
Source = str | os.PathLike[str] | IO[Any] | Iterable[bytes] | Iterable[str]


def detect_format(source: Source, format: str = "auto") -> Format:
    """Resolve ``format`` ("auto", "jsonl" or "csv"): auto means CSV for ``*.csv``, else JSONL."""
    if format == "jsonl":
        return "jsonl"
    if format == "csv":
        return "csv"
    if format != "auto":
        raise ValueError(f"unknown event format {format!r} (expected one of {', '.join(FORMATS)})")
    name = getattr(source, "name", source)  # open files know their path
    if isinstance(name, os.PathLike):
        name = os.fspath(name)
    if isinstance(name, str) and name.lower().endswith(".csv"):
        return "csv"
    return "jsonl"


class EventReader:
    """An iterable of ``(line_number, event)`` over one input; also a context manager.

    The file is opened here, not on first iteration, so a missing file is
    reported before any work starts. ``name`` is the display name used in
    messages ("<stdin>" for ``-``). Sources that are already open (including
    stdin) are not closed by ``close()``.
    """

    def __init__(
        self,
        source: Source,
        *,
        format: str = "auto",
        type_field: str = "type",
        strict: bool = False,
        on_malformed: OnMalformed | None = None,
    ) -> None:
        self.format: Format = detect_format(source, format)
        self.type_field = type_field
        self.strict = strict
        self.on_malformed = on_malformed
        self.malformed_count = 0
        self._stream: Iterable[bytes | str]
        self._owned: IO[Any] | None = None
        if isinstance(source, str | os.PathLike):
            path = os.fspath(source)
            if path == STDIN:
                self.name = STDIN_NAME
                # Bytes, so each line is decoded (and a bad one reported) on its
                # own; a monkeypatched text stdin (tests) has no buffer.
                self._stream = getattr(sys.stdin, "buffer", sys.stdin)
            else:
                self.name = path
                self._owned = open(path, "rb")  # noqa: SIM115 - closed by close()
                self._stream = self._owned
        else:
            self.name = str(getattr(source, "name", "<stream>"))
            self._stream = source

    def __iter__(self) -> Iterator[tuple[int, dict[str, Any]]]:
        parse = parse_csv if self.format == "csv" else parse_jsonl
        try:
            # Python 3 file iteration hands out each line as soon as it is
            # complete (read1 under the hood), so this also streams from pipes.
            for line_number, item in parse(self._stream, self.type_field):
                if isinstance(item, Malformed):
                    self._malformed(line_number, item.reason)
                else:
                    yield line_number, item
        except MalformedEvent as err:
            # Raised by a parser (unusable CSV header): add our display name.
            if err.source is None:
                raise MalformedEvent(err.line, err.reason, self.name) from None
            raise

    def _malformed(self, line_number: int, reason: str) -> None:
        self.malformed_count += 1
        if self.strict:
            raise MalformedEvent(line_number, reason, self.name)
        if self.on_malformed is not None:
            self.on_malformed(line_number, reason)

    def close(self) -> None:
        if self._owned is not None:
            self._owned.close()
            self._owned = None

    def __enter__(self) -> EventReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def read_events(
    source: Source,
    *,
    format: str = "auto",
    type_field: str = "type",
    strict: bool = False,
    on_malformed: OnMalformed | None = None,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, event)`` from ``source`` (a path, ``"-"`` for stdin, or lines).

    See ``EventReader``; this generator opens the input on first use and closes
    it when exhausted or closed.
    """
    with EventReader(
        source, format=format, type_field=type_field, strict=strict, on_malformed=on_malformed
    ) as reader:
        yield from reader

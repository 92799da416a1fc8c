"""A query over a whole input: bytes in, complex events out, batch by batch.

What ``cerfleet run`` and ``CompiledQuery.stream`` run: JSON Lines go through the
columnar ingestion layer (``events.line_batches`` → ``events.ingest`` →
``QueryEvaluator.process_columns``), so no event becomes a Python dict unless the
automaton needs to look at it; CSV goes through its row reader, batched. Each step
hands back the complex events the batch ended, and the batch's reports in line order:
records that are not events (they take no position) and late events.
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO

from cerfleet.clock_check import ClockCheck
from cerfleet.complex_event import ComplexEvent
from cerfleet.events import prefetch
from cerfleet.events.columns import columns_of
from cerfleet.events.csv_columns import csv_batches
from cerfleet.events.csv_reader import parse_csv
from cerfleet.events.ingest import Batch
from cerfleet.events.line_batches import DEFAULT_MAX_BYTES, line_batches
from cerfleet.events.reader import detect_format
from cerfleet.events.records import Malformed, MalformedEvent
from cerfleet.events.reorder import Reorder
from cerfleet.events.timestamps import parse_timestamp
from cerfleet.plan import QueryPlan

if TYPE_CHECKING:
    from cerfleet.query import Evaluator

__all__ = ["LATE", "Step", "steps"]

LATE = (
    "late event: its time is earlier than one already seen in its partition; "
    "it takes part in no complex event"
)


def truncated(cap: int | None) -> str:
    """The report of an event whose complex events were cut at ``max_outputs``."""
    return f"more than {cap} complex events end at this event; the rest are not printed"


# CSV rows per batch from a file (a pipe goes row by row: it must stay live).
CSV_BATCH = 8192


@dataclass
class Step:
    """One batch evaluated: its complex events, its reports ``(line, reason)`` in line
    order (``LATE`` for a late event), how many of its records were events and how
    many were not, and the input's bytes read so far (None when unknown)."""

    complex_events: list[ComplexEvent]
    reports: list[tuple[int, str]] = field(default_factory=list)
    events: int = 0
    malformed: int = 0
    bytes_read: int | None = None
    # The input's clocks so far (a time window over a field no event has finds nothing).
    clocks: ClockCheck | None = None


def steps(
    query: QueryPlan,
    evaluator: Evaluator,
    source: BinaryIO,
    *,
    format: str = "auto",
    strict: bool = False,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_lateness: float | None = None,
) -> Iterator[Step]:
    """Evaluate ``source`` (a binary file, a pipe, stdin's buffer) batch by batch.

    ``strict``: the first record that is not an event ends the input with
    ``MalformedEvent`` (its line and reason), after the events before it were
    evaluated and their step handed out. ``max_bytes`` bounds what one JSON Lines
    batch reads (memory stays bounded whatever the input's size). ``max_lateness``
    (milliseconds of the time field): events are evaluated in time order within that
    bound (``events.reorder``); positions then number them in that order.
    """
    if max_lateness is not None:
        yield from _reordered_steps(
            query, evaluator, source, format, strict, max_bytes, max_lateness
        )
        return
    count = prefetch.processes() if _large_file(source, max_bytes) else 0
    decode: Callable[[int, int], Iterator[_Decoded]]
    if detect_format(source, format) == "csv":
        if strict or not _is_file(source):
            yield from _csv_steps(query, evaluator, source, strict)
            return
        decode = functools.partial(_csv_batches, query, source, max_bytes)
        count = min(count, 1)  # a quoted field may hold line breaks: one reader
    else:
        decode = functools.partial(_json_batches, query, source, strict, max_bytes)
    batches = prefetch.prefetched(decode, count) if count else decode(0, 1)
    clocks = ClockCheck(query)
    for batch, bytes_read, stop in batches:
        base = evaluator.position
        found = evaluator.process_columns(batch.columns, events=batch.events)
        reports = [*batch.problems, *((batch.lines[r], LATE) for r in evaluator.late_rows)]
        reports += _cuts(evaluator, batch.lines, base)
        reports += clocks.batch(batch.columns, batch.lines)
        reports.sort(key=lambda report: report[0])
        yield Step(found, reports, len(batch), len(batch.problems), bytes_read, clocks)
        if stop is not None:
            raise MalformedEvent(*stop)


# A decoded batch, the input's bytes read after it (None: unknown), and under strict
# the record that ends the input.
_Decoded = tuple[Batch, int | None, tuple[int, str] | None]


def _csv_batches(
    query: QueryPlan, source: BinaryIO, max_bytes: int, part: int, parts: int
) -> Iterator[_Decoded]:
    assert (part, parts) == (0, 1)
    decoder = query.json_decoder
    for batch, bytes_read in csv_batches(
        _reader(source),
        decoder.attributes,
        query.type_field,
        check=decoder.check,
        check_attributes=decoder.names,
        max_bytes=max_bytes,
    ):
        yield batch, bytes_read, None


def _json_batches(
    query: QueryPlan, source: BinaryIO, strict: bool, max_bytes: int, part: int, parts: int
) -> Iterator[_Decoded]:
    """The decoded batches of a JSON Lines input, the bytes read after each, and under
    ``strict`` the first record that is not an event (the batch then ends before it,
    and the input with it). Of ``parts`` decoding processes, this is number ``part``:
    it decodes batches ``part``, ``part + parts``, … of the input's whole-line chunks,
    and only counts the lines of the others (each process reads the whole file)."""
    decoder = query.json_decoder
    read = _reader(source) if parts == 1 else _own_reader(source)
    for lines in line_batches(read, max_bytes=max_bytes, part=part, parts=parts):
        # One check of the block spares a check of its records joined again (5-9% of
        # decoding, measured on the benchmark's stock events).
        batch = decoder.decode(lines.lines, lines.numbers, ascii=lines.ascii)
        if strict and batch.problems:
            stop = batch.problems[0]
            keep = [i for i, n in enumerate(lines.numbers) if n < stop[0]]
            batch = decoder.decode([lines.lines[i] for i in keep], [lines.numbers[i] for i in keep])
            yield batch.compact(), lines.bytes_read, stop
            return
        yield batch.compact(), lines.bytes_read, None


def _own_reader(source: BinaryIO) -> Callable[[int], bytes]:
    """Reads of a regular file from the current offset to its size now, at an offset
    of this reader's own (processes sharing the descriptor share its offset): every
    decoding process cuts the same chunks."""
    fd = source.fileno()
    offset = os.lseek(fd, 0, os.SEEK_CUR)
    end = os.fstat(fd).st_size

    def read(n: int) -> bytes:
        nonlocal offset
        data = os.pread(fd, min(n, end - offset), offset) if offset < end else b""
        offset += len(data)
        return data

    return read


def _large_file(source: BinaryIO, max_bytes: int) -> bool:
    """Whether ``source`` is a regular file of more than a few batches from the current
    offset: worth decoding processes (``events.prefetch``)."""
    try:
        info = os.fstat(source.fileno())
        left = info.st_size - os.lseek(source.fileno(), 0, os.SEEK_CUR)
    except (OSError, ValueError, AttributeError):
        return False
    return stat.S_ISREG(info.st_mode) and left > 4 * max_bytes


def _csv_steps(
    query: QueryPlan, evaluator: Evaluator, source: BinaryIO, strict: bool
) -> Iterator[Step]:
    live = not _is_file(source)
    rows: list[dict[str, Any]] = []
    numbers: list[int] = []
    problems: list[tuple[int, str]] = []

    clocks = ClockCheck(query)

    def flush() -> Step:
        columns = columns_of(rows, query.attributes)
        base = evaluator.position
        found = evaluator.process_columns(columns, events=rows)
        reports = [*problems, *((numbers[r], LATE) for r in evaluator.late_rows)]
        reports += _cuts(evaluator, numbers, base)
        reports += clocks.batch(columns, numbers)
        reports.sort(key=lambda report: report[0])
        step = Step(found, reports, len(rows), len(problems), None, clocks)
        rows.clear()
        numbers.clear()
        problems.clear()
        return step

    for line, item in parse_csv(source, query.type_field):
        reason = item.reason if isinstance(item, Malformed) else query.check_event(item)
        if reason is not None:
            problems.append((line, reason))
            if strict:
                yield flush()
                raise MalformedEvent(line, reason)
            if live:
                yield flush()
            continue
        assert not isinstance(item, Malformed)
        rows.append(item)
        numbers.append(line)
        if live or len(rows) >= CSV_BATCH:
            yield flush()
    yield flush()


_Rows = tuple[list[Mapping[str, Any]], Sequence[int], list[tuple[int, str]], int | None]


def _decoded(query: QueryPlan, source: BinaryIO, format: str, max_bytes: int) -> Iterator[_Rows]:
    """Batches of ``(events, their lines, records that are not events, bytes read)``."""
    if detect_format(source, format) == "csv":
        live = not _is_file(source)
        rows: list[Mapping[str, Any]] = []
        numbers: list[int] = []
        problems: list[tuple[int, str]] = []
        for line, item in parse_csv(source, query.type_field):
            reason = item.reason if isinstance(item, Malformed) else query.check_event(item)
            if reason is None:
                assert not isinstance(item, Malformed)
                rows.append(item)
                numbers.append(line)
            else:
                problems.append((line, reason))
            if live or reason is not None or len(rows) >= CSV_BATCH:
                yield rows, numbers, problems, None
                rows, numbers, problems = [], [], []
        yield rows, numbers, problems, None
        return
    for lines in line_batches(_reader(source), max_bytes=max_bytes):
        batch = query.json_decoder.decode(lines.lines, lines.numbers, ascii=lines.ascii)
        yield list(batch.events), batch.lines, batch.problems, lines.bytes_read


def _reordered_steps(
    query: QueryPlan,
    evaluator: Evaluator,
    source: BinaryIO,
    format: str,
    strict: bool,
    max_bytes: int,
    max_lateness: float,
) -> Iterator[Step]:
    """Events in time order within ``max_lateness``; one beyond it is late: reported,
    its position taken (the next one when it arrives), in no complex event."""
    buffer: Reorder[tuple[Mapping[str, Any], int]] = Reorder(max_lateness)
    clocks = ClockCheck(query)
    time_field = query.time_field
    next_position = evaluator.position
    for events, lines, problems, bytes_read in _decoded(query, source, format, max_bytes):
        stop = problems[0] if strict and problems else None
        released: list[tuple[Mapping[str, Any], int, int]] = []
        late: list[tuple[int, str]] = []
        read = 0
        for event, line in zip(events, lines, strict=True):
            if stop is not None and line > stop[0]:
                break
            read += 1
            time = parse_timestamp(event.get(time_field))
            if buffer.beyond(time):
                late.append((line, LATE))
                next_position += 1
                continue
            for out_event, out_line in buffer.push(time, (event, line)):
                released.append((out_event, out_line, next_position))
                next_position += 1
        if stop is not None:
            problems = [stop]
            for out_event, out_line in buffer.flush():  # the input ends at the bad record
                released.append((out_event, out_line, next_position))
                next_position += 1
        evaluator.late += len(late)
        yield _evaluated(query, evaluator, clocks, released, problems + late, read, bytes_read)
        if stop is not None:
            raise MalformedEvent(*stop)
    rest = [(event, line, next_position + k) for k, (event, line) in enumerate(buffer.flush())]
    yield _evaluated(query, evaluator, clocks, rest, [], 0, None)


def _evaluated(
    query: QueryPlan,
    evaluator: Evaluator,
    clocks: ClockCheck,
    released: list[tuple[Mapping[str, Any], int, int]],
    reports: list[tuple[int, str]],
    read: int,
    bytes_read: int | None,
) -> Step:
    """One step of re-ordered events: ``released`` (event, line, position) in evaluation
    order; ``reports`` the step's own (records that are not events, late events)."""
    rows = [event for event, _, _ in released]
    numbers = [line for _, line, _ in released]
    columns = columns_of(rows, query.attributes)
    positions = [position for _, _, position in released]
    found = evaluator.process_columns(columns, events=rows, positions=positions)
    malformed = sum(1 for _, reason in reports if reason != LATE)
    reports = [*reports, *((numbers[r], LATE) for r in evaluator.late_rows)]
    line_at = dict(zip(positions, numbers, strict=True))
    cap = evaluator.max_outputs
    reports += [(line_at[end], truncated(cap)) for end in evaluator.truncated_ends]
    evaluator.truncated_ends.clear()
    reports += clocks.batch(columns, numbers)
    reports.sort(key=lambda report: report[0])
    return Step(found, reports, read, malformed, bytes_read, clocks)


def _cuts(evaluator: Evaluator, lines: Sequence[int], base: int) -> list[tuple[int, str]]:
    """The batch's events whose output ``max_outputs`` cut, as reports (and forgotten);
    ``base``: the position of the batch's first row."""
    cap = evaluator.max_outputs
    cuts = [(lines[end - base], truncated(cap)) for end in evaluator.truncated_ends]
    evaluator.truncated_ends.clear()
    return cuts


def _reader(source: BinaryIO) -> Callable[[int], bytes]:
    """A read that returns what is there: the descriptor itself when there is one (no
    second buffer), else the stream's ``read1``."""
    try:
        return functools.partial(os.read, source.fileno())
    except (OSError, ValueError, AttributeError):
        read1: Callable[[int], bytes] | None = getattr(source, "read1", None)
        return read1 if read1 is not None else source.read


def _is_file(source: BinaryIO) -> bool:
    try:
        return stat.S_ISREG(os.fstat(source.fileno()).st_mode)
    except (OSError, ValueError, AttributeError):
        return True  # an in-memory stream: all there already

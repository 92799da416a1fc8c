"""Bytes → columns: the ingestion layer of ``cerfleet run``, the Python API and the fleet.

Raw records (lines of a JSON Lines file, or the values of a Kafka batch) become the
numpy columns ``QueryEvaluator.process_columns`` takes, batch by batch, with no Python
dict per event:

* only the attributes the query reads are decoded, each record by one call of a
  typed decoder (msgspec, into a struct naming just those attributes), then gathered
  into one array per attribute (``columns.column``);
* every record keeps its bytes: the batch's ``events`` are ``RawEvent``s made on first
  access, so complex events are written from the bytes their events arrived as;
* the verdict on each record is the one ``jsonl.parse_line`` gives, with its message:
  a record the fast decoder rejects, or might read differently (values it decodes as
  containers, integers beyond 64 bits, bytes that are not UTF-8), is judged by that
  function itself. Malformed records take no row (and so no stream position).

Why msgspec: on the benchmark's 1M-event stock file, decoding the three attributes
S3 reads took 0.6-1.4 s where one orjson dict per line took 1.3-3 s and gathering
columns from the dicts another 0.6 s (both measured in one run; the machine was
shared). pyarrow's JSON reader is faster on two threads but fails a whole block on
one bad line and infers one type per column, both against the semantics above.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

import msgspec
import numpy as np

from cerfleet.events.columns import column
from cerfleet.events.jsonl import parse_line
from cerfleet.events.raw_event import RawEvents
from cerfleet.events.records import Malformed, type_problem

__all__ = ["Batch", "JsonDecoder"]

BLANK = "blank"  # the verdict on a blank record, by identity: dropped without a report

# orjson (what ``jsonl.loads`` tries first) reads integers outside this range as floats.
_INT_LOW = -(2**63)
_INT_HIGH = 2**64 - 1
_SCALARS = frozenset({str, float, bool, type(None)})

# Checks an event (its decoded attributes) against a declared schema: why it violates
# it, or None.
SchemaCheck = Callable[[Mapping[str, Any]], str | None]
# What the fast decoder raises on a record it does not take (invalid UTF-8 in a string
# it decodes is a UnicodeDecodeError, a ValueError).
_DECODE_ERRORS = (msgspec.MsgspecError, ValueError, RecursionError)
# An attribute's value types, and its least and greatest int when all are ints.
_Shape = tuple[set[type], tuple[int, int] | None]


@dataclass
class Batch:
    """A batch of records read: the rows that are events, and why the others are not.

    ``columns`` has one array per attribute asked for; ``events`` the events of the rows
    (mappings, made on access); ``lines`` the line (or record number) of each row;
    ``problems`` the records that are not events, ``(line, reason)`` in order.
    """

    columns: dict[str, np.ndarray]
    events: Sequence[Mapping[str, Any]]
    lines: Sequence[int]
    problems: list[tuple[int, str]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.lines)

    def compact(self) -> Batch:
        """This batch with ``lines`` a ``range`` where they follow one another (the
        usual case): it pickles as three numbers, where a list unpickled as one int
        per row (a fifth of what unpickling a batch cost the evaluating process)."""
        lines = self.lines
        if type(lines) is list and lines and lines[-1] - lines[0] == len(lines) - 1:
            self.lines = range(lines[0], lines[-1] + 1)  # increasing: no gap
        return self


class JsonDecoder:
    """Decodes JSON records into a ``Batch`` of the attributes a query reads.

    ``attributes``: what the columns hold (the type field is always decoded);
    ``check``: the query's schema check, reading ``check_attributes`` (the declared
    attributes) besides the type field.
    """

    def __init__(
        self,
        attributes: Iterable[str],
        type_field: str,
        *,
        check: SchemaCheck | None = None,
        check_attributes: Iterable[str] = (),
    ) -> None:
        self.type_field = type_field
        self.attributes = tuple(sorted(set(attributes) | {type_field}))
        self.check = check
        names = tuple(sorted({*self.attributes, *check_attributes}))
        self._names = names
        # Field names are identifiers; the attributes may be any string (renamed).
        fields = [
            (f"f{i}", Any, msgspec.UNSET if name == type_field else None)
            for i, name in enumerate(names)
        ]
        # gc=False: the structs hold JSON values only, which cannot form cycles, and
        # untracked objects are cheaper to make (a third less decoding time).
        struct = msgspec.defstruct(
            "Event", fields, rename={f"f{i}": name for i, name in enumerate(names)}, gc=False
        )
        self._decode_one = msgspec.json.Decoder(struct).decode
        self._getters = {name: attrgetter(f"f{i}") for i, name in enumerate(names)}

    @property
    def names(self) -> tuple[str, ...]:
        """Every attribute decoded: the columns' and those the schema check reads."""
        return self._names

    def decode(
        self,
        records: Sequence[bytes],
        lines: Sequence[int] | None = None,
        *,
        ascii: bool = False,
        columns: bool = True,
    ) -> Batch:
        """The batch of ``records`` (non-blank JSON texts, each one record); ``lines``
        numbers them for messages (default 1, 2, …). ``ascii``: the caller knows every
        record is ASCII (a file's block checked at once), so none is checked for UTF-8.
        ``columns``: False when the caller evaluates the events row by row (no columns:
        ``Batch.columns`` is empty)."""
        numbers = list(range(1, len(records) + 1)) if lines is None else list(lines)
        values, verdicts, shapes = self._values(records, ascii)
        self._judge(values, verdicts, shapes.get(self.type_field))
        problems = sorted((numbers[i], r) for i, r in verdicts.items() if r is not BLANK)
        if verdicts:
            rows = [i for i in range(len(records)) if i not in verdicts]
            records = [records[i] for i in rows]
            numbers = [numbers[i] for i in rows]
            values = {name: [col[i] for i in rows] for name, col in values.items()}
            shapes = {}
        arrays: dict[str, np.ndarray] = {}
        if columns:
            for name in self.attributes:
                arrays[name] = column(values[name], *shapes.get(name, (None, None)))
        return Batch(arrays, RawEvents(records, values), numbers, problems)

    def _values(
        self, records: Sequence[bytes], ascii: bool
    ) -> tuple[dict[str, list[Any]], dict[int, str], dict[str, _Shape]]:
        """Per attribute, its value in every record (None: missing or null; the type
        field's missing value is ``UNSET``), the records found malformed, and per
        attribute the value types and int bounds (``columns.column`` reuses them) when
        no record had to be judged again."""
        failed: set[int] = set()
        try:
            structs: list[Any] = list(map(self._decode_one, records))
        except _DECODE_ERRORS:
            structs = []
            for i, raw in enumerate(records):
                try:
                    structs.append(self._decode_one(raw))
                except _DECODE_ERRORS:
                    structs.append(None)
                    failed.add(i)
        if failed:
            values = {
                name: [None if s is None else get(s) for s in structs]
                for name, get in self._getters.items()
            }
        else:
            values = {name: list(map(get, structs)) for name, get in self._getters.items()}
        # Records the reference decoder judges itself: those msgspec refused, those whose
        # skipped strings may not be UTF-8 (msgspec does not check them), and those with
        # a value it may read otherwise.
        suspects = set(failed)
        blank = {i for i in failed if not records[i].strip()}
        if not ascii and not _utf8(records):
            suspects |= {i for i, raw in enumerate(records) if not _utf8((raw,))}
        shapes: dict[str, _Shape] = {}
        for name, col in values.items():
            kinds = set(map(type, col))
            shapes[name] = (kinds, None)
            others = kinds - _SCALARS
            if not others:
                continue
            if others == {int}:
                ints: list[Any] = col if kinds == {int} else [v for v in col if type(v) is int]
                bounds = (min(ints), max(ints))
                if kinds == {int}:
                    shapes[name] = (kinds, bounds)
                if bounds[0] >= _INT_LOW and bounds[1] <= _INT_HIGH:
                    continue
            suspects |= {i for i, v in enumerate(col) if _differs(v)}
        # Blank records are no records: no row and no report (``BLANK``).
        verdicts: dict[int, str] = dict.fromkeys(blank, BLANK)
        if suspects:
            shapes = {}  # values change below
        for i in sorted(suspects - blank):
            parsed = parse_line(records[i], self.type_field)
            if isinstance(parsed, Malformed):
                verdicts[i] = parsed.reason
                continue
            for name, col in values.items():
                col[i] = parsed.get(name)
        return values, verdicts, shapes

    def _judge(
        self, values: dict[str, list[Any]], verdicts: dict[int, str], shape: _Shape | None
    ) -> None:
        """Adds to ``verdicts`` the records whose type is not a non-empty string (a
        missing one is judged already: UNSET reads as a value the reference rereads) and
        those violating the schema."""
        types = values[self.type_field]
        kinds = set(map(type, types)) if shape is None else shape[0]
        if kinds != {str} or "" in types:
            for i, value in enumerate(types):
                if i not in verdicts:
                    problem = type_problem({self.type_field: value}, self.type_field)
                    if problem is not None:
                        verdicts[i] = problem
        if self.check is not None:
            names = self._names
            for i in range(len(types)):
                if i not in verdicts:
                    problem = self.check({name: values[name][i] for name in names})
                    if problem is not None:
                        verdicts[i] = problem


def _utf8(records: Sequence[bytes]) -> bool:
    try:
        b"\n".join(records).decode("utf-8")  # one pass in C; ASCII is checked fastest
    except UnicodeDecodeError:
        return False
    return True


def _differs(value: object) -> bool:
    """Whether the reference decoder may read this value otherwise: containers (their
    nested numbers) and integers beyond what orjson keeps as integers."""
    if type(value) is int:
        return not _INT_LOW <= value <= _INT_HIGH
    return type(value) not in _SCALARS

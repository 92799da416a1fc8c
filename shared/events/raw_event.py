"""An event as it was read: its bytes, with only what the query reads decoded.

The ingestion layer (``ingest``) decodes the attributes a query reads straight into
columns and keeps each event's bytes. Evaluation touches few events one by one (those
that change an automaton state); for them a ``RawEvent`` answers the query's attributes
from the values already decoded, decodes the rest of the event only if asked, and lets
the output be written from the bytes the event arrived as, never re-encoded.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, overload

import numpy as np

from cerfleet.events.jsonl import loads

__all__ = ["RawEvent", "RawEvents", "Records"]


class RawEvent(Mapping[str, Any]):
    """A read-only mapping equal to the event ``raw`` decodes to.

    ``known`` holds the decoded values of some attributes, None where the attribute is
    missing or null: ``get`` answers from it (both read as None), while ``[]`` and the
    rest of the mapping, which must tell the two apart, decode ``raw`` once.

    ``get`` of an attribute ``known`` lacks decodes ``raw`` without keeping the result:
    such an event is usually held by a partial match for its whole window after one
    ``get`` (its PARTITION BY key, from a batch that crossed a process boundary without
    its values), and its decoded dict cost more than all the rest of a key's state.
    """

    __slots__ = ("_doc", "_known", "raw")

    def __init__(self, raw: bytes, known: dict[str, Any]) -> None:
        self.raw = raw
        self._known = known
        self._doc: dict[str, Any] | None = None

    @property
    def known(self) -> Mapping[str, Any]:
        """The attributes decoded with the batch (None: missing or null)."""
        return self._known

    def _decoded(self) -> dict[str, Any]:
        doc = self._doc
        if doc is None:
            # The line was judged an event when it was read: it decodes.
            doc = self._doc = loads(self.raw)
        return doc

    def get(self, key: str, default: Any = None) -> Any:
        known = self._known
        if key in known:
            value = known[key]
            if value is not None or default is None:
                return value
        doc = self._doc
        return (loads(self.raw) if doc is None else doc).get(key, default)

    def __getitem__(self, key: str) -> Any:
        value = self._known.get(key)
        if value is not None:
            return value
        return self._decoded()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._decoded())

    def __len__(self) -> int:
        return len(self._decoded())

    def __repr__(self) -> str:
        return f"RawEvent({self.raw!r})"


# Shared by the events of batches without decoded values; a RawEvent never writes to it.
_NOTHING_KNOWN: dict[str, Any] = {}


class RawEvents(Sequence[RawEvent]):
    """The events of a batch, made on first access: most rows are never looked at one
    by one, so most never become Python objects.

    Pickled (a batch sent from the decoding process, ``events.prefetch``), the records
    travel as one bytes object and the decoded values stay behind: the few events
    looked at one by one decode their bytes again, to the same values.
    """

    __slots__ = ("_names", "_raws", "_values")

    def __init__(self, raws: Sequence[bytes], values: Mapping[str, Sequence[Any]]) -> None:
        self._raws = raws
        self._names = tuple(values)
        self._values = tuple(values[name] for name in self._names)

    def __len__(self) -> int:
        return len(self._raws)

    @overload
    def __getitem__(self, i: int) -> RawEvent: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[RawEvent]: ...

    def __getitem__(self, i: int | slice) -> RawEvent | Sequence[RawEvent]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        return RawEvent(self._raws[i], self.known(i))

    def __iter__(self) -> Iterator[RawEvent]:
        # Not Sequence's, which indexes until IndexError: the row path iterates every
        # batch it takes, one event at a time.
        return map(RawEvent, self._raws, self.knowns())

    def raw(self, i: int) -> bytes:
        """Event ``i``'s bytes."""
        return self._raws[i]

    def known(self, i: int) -> dict[str, Any]:
        """Event ``i``'s decoded values (``RawEvent.known``): a copy of the row's, so a
        held event never keeps its whole batch alive."""
        if not self._names:
            return _NOTHING_KNOWN  # one dict fewer per held event
        return {name: column[i] for name, column in zip(self._names, self._values, strict=True)}

    def raws(self) -> Sequence[bytes]:
        """Every event's bytes, in order."""
        return self._raws

    def knowns(self) -> Iterator[dict[str, Any]]:
        """Every event's ``known`` (see ``known``), in order."""
        if not self._names:
            return itertools.repeat(_NOTHING_KNOWN, len(self._raws))
        names = self._names
        return (dict(zip(names, row, strict=True)) for row in zip(*self._values, strict=True))

    def __reduce__(self) -> tuple[Any, ...]:
        raws = self._raws
        if type(raws) is not Records:
            lengths = np.fromiter(map(len, raws), dtype=np.int64, count=len(raws))
            raws = Records(b"".join(raws), lengths.cumsum())
        return (RawEvents, (raws, {}))


class Records(Sequence[bytes]):
    """Records stored end to end in one bytes object; ``ends[i]``: where record ``i``
    ends. Pickles as those two, not as one object per record (``ends`` as a numpy
    array: its pickle is one bytes object too, where a list of ints took half of what
    unpickling a batch cost the evaluating process)."""

    __slots__ = ("_data", "_ends")

    def __init__(self, data: bytes, ends: Sequence[int] | np.ndarray) -> None:
        self._data = data
        self._ends = ends

    def __len__(self) -> int:
        return len(self._ends)

    @overload
    def __getitem__(self, i: int) -> bytes: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[bytes]: ...

    def __getitem__(self, i: int | slice) -> bytes | Sequence[bytes]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        ends = self._ends
        if i < 0:
            i += len(ends)
        return self._data[ends[i - 1] if i else 0 : ends[i]]

    def __reduce__(self) -> tuple[Any, ...]:
        return (Records, (self._data, self._ends))

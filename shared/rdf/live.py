"""A SPAseq or RSEP-QL query evaluated as its events arrive: the one evaluation of
``cerfleet run``, the backfill and the fleet.

Events come in time order, one at a time, each with the stream it is in. An instant
(``rdf.instants``: every stream's graph at one timestamp) is only complete when an
event with a later timestamp arrives, or at ``flush`` (the end of the input): only
then is it evaluated and are its rows returned. Rows ending at one instant are
distinct and sorted, as the batch evaluation printed them.

Only the instants a future result may still read are held: those inside the window
before the last instant closed, and, without a window, those from the earliest position
any live tECS node refers to (the output stage reads a result's instants and those
between them). ``snapshot`` holds the automaton (``evaluation.snapshot``, its
nodes' events written as instant numbers) and the held instants as their events'
record bytes, decoded again by ``restore``: a graph is not JSON, a record is.

Refused here (``Unsupported``): RSEP-QL queries that choose among an evaluation's
matches or consume input, and STEP windows; both report at evaluation times that
depend on the last instant of the whole input (``rsepql.closes``,
``rsepql.evaluation``), which a stream never has.
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from cerfleet.errors import CerfleetError, EventError, SnapshotError
from cerfleet.rdf.instants import GRAPHS, KEY, TIME, add_graph, new_instant
from cerfleet.rdf.records import decode_record
from cerfleet.rdf.terms import Graph
from cerfleet.rdf.trig import RdfEvent

if TYPE_CHECKING:
    from cerfleet.evaluation.query_evaluator import QueryEvaluator
    from cerfleet.evaluation.tecs import Node
    from cerfleet.query import CompiledQuery
    from cerfleet.spaseq.syntax import Query

__all__ = ["LiveRdf", "Unsupported", "unsupported"]

_FORMAT = 1
# Held instants are pruned when this many were closed since the last pruning: finding
# the earliest live position walks the live tECS nodes.
_PRUNE_EVERY = 32

Raw = tuple[bytes, str | None]  # a record's value and content type


class Unsupported(CerfleetError):
    """A query mode this evaluation cannot run as its events arrive."""


class _Held(Sequence[Mapping[str, Any]]):
    """The instants by number, as the output stages index them; only held ones exist."""

    def __init__(self) -> None:
        self.by_index: dict[int, dict[str, Any]] = {}
        self.size = 0  # instants numbered so far

    def __getitem__(self, i: Any) -> Any:
        return self.by_index[i]

    def __len__(self) -> int:
        return self.size


class LiveRdf:
    """One query's incremental evaluation: ``push`` events, ``flush`` at the end."""

    def __init__(
        self,
        language: str,
        text: str,
        background: Mapping[str, Graph] | None = None,
        *,
        correlate: bool = False,
        partition: bool = True,
    ) -> None:
        from cerfleet.query import CompiledQuery

        self.language = language
        self.text = text
        self._background = dict(background or {})
        self._keys: _Keys | None = None
        self.uses_background = False  # a GPM reads a background graph
        if language == "spaseq":
            from cerfleet.spaseq.check import parse
            from cerfleet.spaseq.output import Rows
            from cerfleet.spaseq.translate import to_pattern

            query = parse(text)
            form = to_pattern(query, correlate=correlate, partition=partition)
            self._keys = _Keys(query) if form.partition_by else None
            self._rows: Any = Rows(query)
            self.streams = [name for name, _ in query.streams]
            self.uses_background = any(g.background for g in query.gpms.values())
        elif language == "rsepql":
            from cerfleet.rsepql.output import Rows as RsepqlRows
            from cerfleet.rsepql.parser import parse as parse_rsepql
            from cerfleet.rsepql.translate import to_pattern as rsepql_pattern

            rquery = parse_rsepql(text)
            unsupported(rquery)
            form = rsepql_pattern(rquery)
            self._rows = RsepqlRows(rquery)
            self.streams = sorted({w.stream for w in rquery.windows.values()})
        else:
            raise CerfleetError(f"{language} is not an RDF query language")
        self.query: CompiledQuery = CompiledQuery.from_pattern(form, text=text, language=language)
        self.evaluator: QueryEvaluator = self.query.evaluator()  # type: ignore[assignment]
        self._held = _Held()
        self._raws: dict[int, list[tuple[str, Raw]]] = {}  # instant → its records
        self._owner: dict[int, int] = {}  # evaluator position → instant number
        self._position = 0  # the next evaluator position
        self._open: dict[str, Any] | None = None  # the instant still taking events
        self._open_raws: list[tuple[str, Raw]] = []
        self._closed = 0  # instants closed since the last pruning
        self.closed_at = 0  # the timestamp (ms) of the instant closed last

    # -- evaluation ----------------------------------------------------------------

    @property
    def time(self) -> int | None:
        """The timestamp (ms) of the instant still open: an event before it is late."""
        return None if self._open is None else int(self._open["timestamp"])

    def push(self, stream: str, event: RdfEvent, raw: Raw | None = None) -> list[dict[str, Any]]:
        """Add ``event`` of ``stream``; the rows of the instant it closes, if it does.
        ``raw``: the record it was decoded from, which a snapshot needs. ``EventError``
        for an event before the open instant (late: the instants before are closed)."""
        out: list[dict[str, Any]] = []
        current = self._open
        if current is not None and event.ms < current["timestamp"]:
            raise EventError(
                f"event {event.name} at {event.time} is late: events up to "
                f"{current[TIME]} were read (the input is not in time order)"
            )
        if current is None or event.ms > current["timestamp"]:
            out = self._close()
            current = self._open = self._instant(event)
        self._merge(current, stream, event)
        if raw is not None:
            self._open_raws.append((stream, raw))
        return out

    def flush(self) -> list[dict[str, Any]]:
        """The rows of the open instant, closing it (the end of the input)."""
        return self._close()

    def results(self, events: Iterator[tuple[str, RdfEvent]]) -> Iterator[dict[str, Any]]:
        """Every row of ``events`` (in time order), then of the last instant."""
        for stream, event in events:
            yield from self.push(stream, event)
        yield from self.flush()

    def _instant(self, event: RdfEvent) -> dict[str, Any]:
        return new_instant(event, self._background)

    @staticmethod
    def _merge(instant: dict[str, Any], stream: str, event: RdfEvent) -> None:
        add_graph(instant, stream, event)

    def _close(self) -> list[dict[str, Any]]:
        instant = self._open
        if instant is None:
            return []
        self._open = None
        self.closed_at = int(instant["timestamp"])
        held = self._held
        i = held.size
        held.size += 1
        held.by_index[i] = instant
        self._raws[i] = self._open_raws
        self._open_raws = []
        found: dict[bytes, dict[str, Any]] = {}
        owner = self._owner
        copies = [instant] if self._keys is None else self._keys.copies(instant)
        for event in copies:
            j = self._position
            self._position += 1
            owner[j] = i
            for ce in self.evaluator.process(event, j):
                at = [owner[p] for p in ce.positions]
                for row in self._rows.rows(at, held):
                    found.setdefault(orjson.dumps(row, option=orjson.OPT_SORT_KEYS), row)
        self._closed += 1
        if self._closed >= _PRUNE_EVERY:
            self.prune()
        return [found[key] for key in sorted(found)]

    def prune(self) -> None:
        """Drop the instants no live tECS node reaches back to."""
        self._closed = 0
        first = self._position
        seen: set[int] = set()
        stack: list[Node | None] = [
            n for sub in self.evaluator.substreams.values() for n in sub.roots()
        ]
        while stack:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            if node.event is not None and node.pos < first:
                first = node.pos
            stack.append(node.left)
            stack.append(node.right)
        # (The node's own instant may be gone already, dropped with the window.)
        keep = min((i for j, i in self._owner.items() if j >= first), default=self._held.size)
        # A node may still reach runs whose start left the window; their complex
        # events are never enumerated, so neither are instants before the window.
        epsilon = self.query.epsilon
        if epsilon != float("inf"):
            since = self.closed_at - epsilon
            for i in sorted(self._held.by_index):
                if self._held.by_index[i]["timestamp"] >= since:
                    break
                keep = max(keep, i + 1)
        for j in [j for j, i in self._owner.items() if i < keep]:
            del self._owner[j]
        for i in [i for i in self._held.by_index if i < keep]:
            del self._held.by_index[i]
            del self._raws[i]

    @property
    def substreams(self) -> Mapping[Any, Any]:
        """The automaton's substreams (one per partition key), as the fleet counts keys."""
        return self.evaluator.substreams

    @property
    def held(self) -> int:
        """Instants held for results still to come (the open one included)."""
        return len(self._held.by_index) + (self._open is not None)

    # -- snapshots -----------------------------------------------------------------

    def snapshot(self) -> bytes:
        """The whole state as bytes (zlib-compressed JSON); ``restore`` reverses it.
        ``SnapshotError`` if an event held was pushed without its record."""
        self.prune()
        from cerfleet.evaluation.snapshot import dump_counted

        index = {id(instant): i for i, instant in self._held.by_index.items()}
        by_graphs = {id(instant[GRAPHS]): i for i, instant in self._held.by_index.items()}

        def encode(event: Mapping[str, Any]) -> Any:
            i = index.get(id(event))
            if i is None:  # a copy of an instant under one partition key (its graphs)
                # -1: gone. A node whose runs left the window may stay reachable; its
                # complex events are never enumerated, so its event is never read.
                i = by_graphs.get(id(event[GRAPHS]), -1)
            return [i, event.get(KEY)]

        automaton, _ = dump_counted(self.evaluator, encode)
        held = [[i, _raws(self._raws[i])] for i in sorted(self._held.by_index)]
        doc = {
            "format": _FORMAT,
            "query": self.query.fingerprint,
            "count": self._held.size,
            "position": self._position,
            "owner": sorted(self._owner.items()),
            "held": held,
            "open": None if self._open is None else _raws(self._open_raws),
            "automaton": base64.b64encode(automaton).decode(),
        }
        return zlib.compress(json.dumps(doc, separators=(",", ":")).encode(), 1)

    def restore(self, data: bytes) -> None:
        """Continue from ``data``, a snapshot of an evaluation of the same query (this
        one fresh)."""
        from cerfleet.evaluation.snapshot import load_into, opened

        doc = opened(data, _FORMAT, self.query.fingerprint, "RDF evaluation snapshot")
        held = self._held
        for i, raws in doc["held"]:
            records = _unraws(raws)
            instant: dict[str, Any] | None = None
            for stream, raw in records:
                event = decode_record(*raw)
                if instant is None:
                    instant = self._instant(event)
                self._merge(instant, stream, event)
            assert instant is not None
            held.by_index[i] = instant
            self._raws[i] = records
        held.size = doc["count"]
        self._position = doc["position"]
        self._owner = {int(j): int(i) for j, i in doc["owner"]}
        if doc["open"] is not None:
            for stream, raw in _unraws(doc["open"]):
                self.push(stream, decode_record(*raw), raw)

        gone = self._instant(RdfEvent(0, 0, "", {}))

        def decode(ref: Any) -> Mapping[str, Any]:
            i, key = ref
            instant = gone if i < 0 else held.by_index[i]
            return instant if key is None else {**instant, KEY: key}

        load_into(self.evaluator, base64.b64decode(doc["automaton"]), decode)


def _raws(records: list[tuple[str, Raw]]) -> list[list[Any]]:
    if any(raw is None for _, raw in records):
        raise SnapshotError("an event held was pushed without its record")
    return [[stream, base64.b64encode(value).decode(), kind] for stream, (value, kind) in records]


def _unraws(rows: list[list[Any]]) -> list[tuple[str, Raw]]:
    return [(stream, (base64.b64decode(value), kind)) for stream, value, kind in rows]


def unsupported(query: Any) -> None:
    """``Unsupported`` naming the mode, for an RSEP-QL query this evaluation cannot run
    as its events arrive."""
    if query.per_evaluation():
        raise Unsupported(
            "an RSEP-QL query that selects among an evaluation's matches or consumes "
            "input is evaluated per evaluation time over the whole input; it cannot run "
            "as its events arrive (cerfleet run and cerfleet backfill run it)"
        )
    if query.stepped():
        raise Unsupported(
            "an RSEP-QL window with a STEP reports at closes bounded by the input's last "
            "instant; it cannot run as its events arrive (cerfleet run and cerfleet "
            "backfill run it)"
        )


class _Keys:
    """The instants routed by the values of the variable every GPM binds: an instant
    whose GPMs bind it to several values goes to each of those keys (its copies share
    the solutions; a result is found under its own value, and rows are deduplicated),
    one that binds it to none matches no GPM and goes nowhere."""

    def __init__(self, query: Query) -> None:
        from cerfleet.cea.graph_match import compile_graph_match
        from cerfleet.cea.predicates import compile_predicate
        from cerfleet.spaseq.correlations import partition_variable
        from cerfleet.spaseq.syntax import refs
        from cerfleet.spaseq.translate import gpm_pred

        var = partition_variable(query)
        assert var is not None
        self.var = var
        names = {n for e in query.elements for n in refs(e.bop)}
        self.matches = [
            compile_graph_match(gpm_pred(query.gpms[n]), compile_predicate) for n in sorted(names)
        ]

    def copies(self, instant: dict[str, Any]) -> list[dict[str, Any]]:
        values: dict[tuple[str, Any], Any] = {}
        for match in self.matches:
            for solution in match(instant):  # also writes the exports into the instant
                value = solution[self.var]
                values.setdefault((type(value).__name__, value), value)
        if len(values) == 1:
            instant[KEY] = next(iter(values.values()))
            return [instant]
        return [{**instant, KEY: value} for value in values.values()]

"""``cerfleet run QUERY.rq --stream NAME=FILE ...``: a SPAseq or RSEP-QL query over
TriG files.

The files are bound to the query's ``FROM STREAM NAME`` streams and merged in time
order (ties: the order of the ``--stream`` options, then file order) into instants;
each result is one JSON object per line on stdout: the SELECT variables without ``?``
and ``time``, the timestamp of the result's last event.
"""

from __future__ import annotations

import argparse
import heapq
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from cerfleet.errors import CEQLError, EventError
from cerfleet.kept_json import kept
from cerfleet.rdf.instants import KEY, instants
from cerfleet.rdf.terms import Graph, index
from cerfleet.rdf.trig import RdfEvent, read_trig

if TYPE_CHECKING:
    from cerfleet.spaseq.syntax import Query

__all__ = ["results", "rsepql_evaluations", "rsepql_results", "run_rdf"]

EXIT_OK = 0
_NAMES = {"spaseq": "SPAseq", "rsepql": "RSEP-QL"}
EXIT_USAGE = 2


def _pairs(options: Sequence[str], what: str) -> list[tuple[str, str]]:
    out = []
    for option in options:
        name, sep, path = option.partition("=")
        if not sep or not name or not path:
            raise ValueError(f"--{what} {option!r}: expected NAME=FILE")
        out.append((name, path))
    return out


def _background(path: str) -> Graph:
    import pyoxigraph as ox

    from cerfleet.rdf.terms import term_of

    fmt = ox.RdfFormat.TRIG if path.endswith(".trig") else ox.RdfFormat.TURTLE
    try:
        quads = ox.parse(Path(path).read_bytes(), format=fmt)
        return index((term_of(q.subject), term_of(q.predicate), term_of(q.object)) for q in quads)
    except SyntaxError as err:
        raise EventError(f"{path}: not {fmt}: {err}") from None


def results(
    text: str,
    streams: Sequence[tuple[str, Sequence[RdfEvent]]],
    background: dict[str, Graph] | None = None,
    *,
    correlate: bool = False,
    partition: bool = True,
) -> Iterator[dict[str, Any]]:
    """The result rows of the SPAseq query ``text`` over named event lists, in time
    order (rows ending at one instant: distinct, sorted). ``partition``: route the
    instants by a variable every GPM binds, when the query allows it; ``correlate``:
    the engine also checks shared variables and stateful filters as correlations (off
    by default: measured slower than the output stage alone, README). Either way the
    output stage checks them exactly."""
    from cerfleet.query import CompiledQuery
    from cerfleet.spaseq.check import parse
    from cerfleet.spaseq.output import Rows
    from cerfleet.spaseq.translate import to_pattern

    query = parse(text)
    declared = dict(query.streams)
    for name, _ in streams:
        if name not in declared:
            raise ValueError(
                f"stream {name} is not declared by FROM STREAM (declared: {', '.join(declared)})"
            )
    form = to_pattern(query, correlate=correlate, partition=partition)
    compiled = CompiledQuery.from_pattern(form, text=text, language="spaseq")
    evaluator = compiled.evaluator()
    rows = Rows(query)
    keys = _Keys(query) if form.partition_by else None
    merged, _ = instants(streams, background)
    owner: list[int] = []  # evaluator position -> index of its instant in ``merged``
    for i, instant in enumerate(merged):
        found: dict[bytes, dict[str, Any]] = {}
        for event in [instant] if keys is None else keys.copies(instant):
            owner.append(i)
            for complex_event in evaluator.process(event, len(owner) - 1):
                at = [owner[p] for p in complex_event.positions]
                for row in rows.rows(at, merged):
                    found.setdefault(orjson.dumps(row, option=orjson.OPT_SORT_KEYS), row)
        for key in sorted(found):
            yield found[key]


def rsepql_results(
    text: str,
    streams: Sequence[tuple[str, Sequence[RdfEvent]]],
) -> Iterator[dict[str, Any]]:
    """The result rows of the RSEP-QL query ``text``, pushed at each evaluation (rows
    reported at one evaluation: distinct, sorted). A ``--stream`` name is the stream's
    IRI as declared by ``FROM NAMED`` or its local name (after the last ``/``, ``#`` or
    ``:``)."""
    for _, row in rsepql_evaluations(text, streams):
        yield row


def rsepql_evaluations(
    text: str,
    streams: Sequence[tuple[str, Sequence[RdfEvent]]],
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``rsepql_results`` with the evaluation time (ms) that reported each row: for a
    query the automata run, the row's last instant, or with a STEP window the close
    that reports it (``rsepql.closes``); else ``rsepql.evaluation``'s."""
    from cerfleet.query import CompiledQuery
    from cerfleet.rsepql.closes import Closes
    from cerfleet.rsepql.output import Rows as RsepqlRows
    from cerfleet.rsepql.parser import parse as parse_rsepql
    from cerfleet.rsepql.translate import to_pattern as rsepql_pattern

    query = parse_rsepql(text)
    declared = {w.stream for w in query.windows.values()}
    by_name: dict[str, str] = {}
    for iri in declared:
        by_name[iri] = iri
        by_name.setdefault(re.split(r"[/#:]", iri)[-1], iri)
    named: list[tuple[str, Sequence[RdfEvent]]] = []
    for name, events in streams:
        if name not in by_name:
            raise ValueError(
                f"stream {name} is not declared by FROM NAMED (declared: "
                f"{', '.join(sorted(declared))})"
            )
        named.append((by_name[name], events))
    merged, _ = instants(named)
    if query.per_evaluation():
        from cerfleet.rsepql.evaluation import Evaluator

        yield from Evaluator(query).rows(merged)
        return
    form = rsepql_pattern(query)
    evaluator = CompiledQuery.from_pattern(form, text=text, language="rsepql").evaluator()
    rows = RsepqlRows(query)
    closes = Closes(query, [i["timestamp"] for i in merged]) if query.stepped() else None
    # Rows waiting for the close that reports them: (close, row key), and the rows.
    waiting: list[tuple[int, bytes]] = []
    held: dict[bytes, dict[str, Any]] = {}
    seen: set[bytes] = set()

    def due(before: int | None) -> Iterator[tuple[int, dict[str, Any]]]:
        while waiting and (before is None or waiting[0][0] < before):
            at, key = heapq.heappop(waiting)
            if key not in seen:
                seen.add(key)
                yield at, held.pop(key)

    for i, instant in enumerate(merged):
        yield from due(instant["timestamp"])
        found: dict[bytes, dict[str, Any]] = {}
        for complex_event in evaluator.process(instant, i):
            at = instant["timestamp"]
            if closes is not None:
                items = [merged[p]["timestamp"] for p in complex_event.positions]
                close = closes.report_time(items)
                if close is None:
                    continue
                at = close
            for row in rows.rows(complex_event.positions, merged):
                key = orjson.dumps(row, option=orjson.OPT_SORT_KEYS)
                if closes is None:
                    found.setdefault(key, row)  # an instant's: dropped with it
                elif key not in seen:
                    key = kept(key)  # held, then remembered in seen for good
                    held.setdefault(key, row)
                    heapq.heappush(waiting, (at, key))
        for key in sorted(found):
            yield instant["timestamp"], found[key]
    yield from due(None)


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


def run_rdf(args: argparse.Namespace, text: str, language: str = "spaseq") -> int:
    """``cerfleet run`` for a SPAseq or RSEP-QL query; returns the exit code."""
    try:
        pairs = _pairs(args.stream or [], "stream")
        bg_pairs = _pairs(args.background or [], "background")
    except ValueError as err:
        print(err, file=sys.stderr)
        return EXIT_USAGE
    if not pairs:
        print(f"a {_NAMES[language]} query reads --stream NAME=FILE options", file=sys.stderr)
        return EXIT_USAGE
    streams: list[tuple[str, Sequence[RdfEvent]]] = []
    try:
        for name, path in pairs:
            events, reports = read_trig(Path(path))
            for report in reports:
                print(f"{path}: {report}", file=sys.stderr)
            streams.append((name, events))
        background = {iri: _background(path) for iri, path in bg_pairs}
    except (OSError, EventError) as err:
        print(f"cannot read input: {err}", file=sys.stderr)
        return EXIT_USAGE
    out = sys.stdout.buffer
    count = 0
    try:
        found = (
            rsepql_results(text, streams)
            if language == "rsepql"
            else results(text, streams, background)
        )
        for row in found:
            out.write(orjson.dumps(row) + b"\n")
            count += 1
    except CEQLError as err:
        print(f"{args.query}: {err}", file=sys.stderr)
        return EXIT_USAGE
    except ValueError as err:
        print(err, file=sys.stderr)
        return EXIT_USAGE
    out.flush()
    if not args.quiet:
        print(f"{count} results", file=sys.stderr)
    return EXIT_OK

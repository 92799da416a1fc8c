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
from typing import Any

import orjson

from cerfleet.errors import CEQLError, EventError
from cerfleet.kept_json import kept
from cerfleet.rdf.instants import in_time_order, instants
from cerfleet.rdf.live import LiveRdf
from cerfleet.rdf.terms import Graph, index
from cerfleet.rdf.trig import RdfEvent, read_trig

__all__ = ["in_time_order", "results", "rsepql_evaluations", "rsepql_results", "run_rdf"]

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
    from cerfleet.spaseq.check import parse

    query = parse(text)
    declared = dict(query.streams)
    for name, _ in streams:
        if name not in declared:
            raise ValueError(
                f"stream {name} is not declared by FROM STREAM (declared: {', '.join(declared)})"
            )
    live = LiveRdf("spaseq", text, background, correlate=correlate, partition=partition)
    yield from live.results(in_time_order(streams))


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
    if not query.per_evaluation() and not query.stepped():
        live = LiveRdf("rsepql", text)
        for stream, event in in_time_order(named):
            for row in live.push(stream, event):
                yield live.closed_at, row
        for row in live.flush():
            yield live.closed_at, row
        return
    merged, _ = instants(named)
    if query.per_evaluation():
        from cerfleet.rsepql.evaluation import Evaluator

        yield from Evaluator(query).rows(merged)
        return
    # A STEP window: reported at closes bounded by the last instant (not incremental).
    form = rsepql_pattern(query)
    evaluator = CompiledQuery.from_pattern(form, text=text, language="rsepql").evaluator()
    rows = RsepqlRows(query)
    closes = Closes(query, [i["timestamp"] for i in merged])
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
        for complex_event in evaluator.process(instant, i):
            items = [merged[p]["timestamp"] for p in complex_event.positions]
            close = closes.report_time(items)
            if close is None:
                continue
            for row in rows.rows(complex_event.positions, merged):
                key = orjson.dumps(row, option=orjson.OPT_SORT_KEYS)
                if key not in seen:
                    key = kept(key)  # held, then remembered in seen for good
                    held.setdefault(key, row)
                    heapq.heappush(waiting, (close, key))
    yield from due(None)


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

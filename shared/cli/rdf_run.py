"""``cerfleet run QUERY.rq --stream NAME=FILE ...``: a SPAseq query over TriG files.

The files are bound to the query's ``FROM STREAM NAME`` streams and merged in time
order (ties: the order of the ``--stream`` options, then file order) into instants;
each result is one JSON object per line on stdout: the SELECT variables without ``?``
and ``time``, the timestamp of the result's last event.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

from cerfleet.errors import CEQLError, EventError
from cerfleet.rdf.instants import instants
from cerfleet.rdf.terms import Graph, index
from cerfleet.rdf.trig import RdfEvent, read_trig

__all__ = ["results", "run_rdf"]

EXIT_OK = 0
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
) -> Iterator[dict[str, Any]]:
    """The result rows of the SPAseq query ``text`` over named event lists, in time
    order (rows ending at one instant: distinct, sorted)."""
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
    compiled = CompiledQuery.from_pattern(to_pattern(query), text=text, language="spaseq")
    evaluator = compiled.evaluator()
    rows = Rows(query)
    merged, _ = instants(streams, background)
    for i, instant in enumerate(merged):
        found: dict[bytes, dict[str, Any]] = {}
        for complex_event in evaluator.process(instant, i):
            for row in rows.rows(complex_event.positions, merged):
                found.setdefault(orjson.dumps(row, option=orjson.OPT_SORT_KEYS), row)
        for key in sorted(found):
            yield found[key]


def run_rdf(args: argparse.Namespace, text: str) -> int:
    """``cerfleet run`` for a SPAseq query; returns the exit code."""
    try:
        pairs = _pairs(args.stream or [], "stream")
        bg_pairs = _pairs(args.background or [], "background")
    except ValueError as err:
        print(err, file=sys.stderr)
        return EXIT_USAGE
    if not pairs:
        print("a SPAseq query reads --stream NAME=FILE options", file=sys.stderr)
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
        for row in results(text, streams, background):
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

"""TriG files as RDF graph events: each named graph is one event, its timestamp the
object of ``GRAPH_IRI <https://cerfleet.dev/ns#time> T`` in the default graph (an
integer number of seconds, or an ``xsd:dateTime``).

Parsing is pyoxigraph's (a Rust TriG parser): on 20,000 six-triple events it read about
15 times faster than rdflib (commit message of this module's first version).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pyoxigraph as ox

from cerfleet.errors import EventError
from cerfleet.events.timestamps import parse_timestamp
from cerfleet.rdf.terms import Graph, Term, index, term_of

__all__ = ["TIME", "RdfEvent", "graph_events", "graph_key", "read_trig"]

TIME = "https://cerfleet.dev/ns#time"
_DATETIME = "http://www.w3.org/2001/XMLSchema#dateTime"


@dataclass(frozen=True)
class RdfEvent:
    """One named graph of a TriG file: ``ms`` orders events, ``time`` is the timestamp
    as written (seconds, or the dateTime's lexical form) for the output."""

    ms: int
    time: int | float | str
    name: str
    graph: Graph


def _timestamp(node: object) -> tuple[int, int | float | str] | None:
    if not isinstance(node, ox.Literal):
        return None
    datatype = node.datatype.value
    if datatype == _DATETIME:
        ms = parse_timestamp(node.value)
        return None if ms is None else (int(ms), node.value)
    value = term_of(node)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return round(value * 1000), value
    return None


def read_trig(data: bytes | str | Path) -> tuple[list[RdfEvent], list[str]]:
    """The events of a TriG document in time order (ties: file order), and a report per
    named graph that is not an event (no time, or a time that is not a number of
    seconds or an xsd:dateTime) and for a syntax error (the events before it are
    kept). ``EventError`` if nothing before the first error is TriG."""
    raw = data.read_bytes() if isinstance(data, Path) else data
    graphs: dict[str, list[tuple[Term, Term, Term]]] = defaultdict(list)
    times: dict[str, list[object]] = defaultdict(list)
    reports: list[str] = []
    current: str | None = None
    try:
        for quad in ox.parse(raw, format=ox.RdfFormat.TRIG):
            g = quad.graph_name
            if isinstance(g, ox.DefaultGraph):
                current = None
                if isinstance(quad.predicate, ox.NamedNode) and quad.predicate.value == TIME:
                    times[graph_key(quad.subject)].append(quad.object)
                continue
            current = graph_key(g)
            graphs[current].append(
                (term_of(quad.subject), term_of(quad.predicate), term_of(quad.object))
            )
    except SyntaxError as err:
        if not graphs and not times:
            raise EventError(f"not TriG: {err}") from None
        # What came before the error stays; the graph being read may be cut short.
        reports.append(f"not TriG: {err}; the rest of the file is skipped")
        if current is not None:
            del graphs[current]
            reports.append(f"graph {current}: cut by the error; skipped")
    events = graph_events(graphs, times, reports)
    events.sort(key=lambda e: e.ms)  # stable: ties stay in file order
    return events, reports


def graph_events(
    graphs: Mapping[str, list[tuple[Term, Term, Term]]],
    times: Mapping[str, list[object]],
    reports: list[str],
) -> list[RdfEvent]:
    """The events of parsed named graphs (name → triples) given the time objects of the
    default graph (graph name → objects), in the graphs' order; a report appended to
    ``reports`` per graph that is not an event."""
    events: list[RdfEvent] = []
    for name, triples in graphs.items():
        stamps = times.get(name, [])
        if len(stamps) != 1:
            what = "no" if not stamps else "more than one"
            reports.append(f"graph {name}: {what} <{TIME}> timestamp; skipped")
            continue
        stamp = _timestamp(stamps[0])
        if stamp is None:
            reports.append(
                f"graph {name}: timestamp {stamps[0]} is neither an integer number of "
                "seconds nor an xsd:dateTime; skipped"
            )
            continue
        events.append(RdfEvent(stamp[0], stamp[1], name, index(triples)))
    return events


def graph_key(node: object) -> str:
    if isinstance(node, ox.NamedNode):
        return node.value
    if isinstance(node, ox.BlankNode):
        return "_:" + node.value
    return str(node)

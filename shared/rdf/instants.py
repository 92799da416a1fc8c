"""Named RDF streams merged into instants: the events the automaton reads.

SPAseq's operators are defined on timestamps (Definitions 8–12 of its paper): ``&``
joins events with the same timestamp, ``,`` ``;`` ``:`` need a strictly later one, and
``,`` forbids any event of any stream strictly between. So the automaton reads one
event per distinct timestamp of the whole streamset, carrying each stream's graph at
that time: contiguity over the streamset is then plain contiguity of positions, and a
conjunction is a predicate on one position.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from cerfleet.rdf.terms import Graph
from cerfleet.rdf.trig import RdfEvent

__all__ = [
    "BACKGROUND",
    "GRAPHS",
    "KEY",
    "SOLUTIONS",
    "TIME",
    "TYPE",
    "add_graph",
    "in_time_order",
    "instants",
    "new_instant",
]

TYPE = "I"  # the one event type of instants
GRAPHS = "@graphs"  # stream name → its graph at this instant
BACKGROUND = "@background"  # background graph IRI → graph (the same for every instant)
SOLUTIONS = "@solutions"  # GraphMatch → its solutions here, computed on first use
TIME = "@time"  # the timestamp as written in the input
KEY = "@key"  # the partition key, when a query's shared variable partitions the instants


def _keyed(
    i: int, name: str, events: Sequence[RdfEvent]
) -> Iterator[tuple[int, int, int, str, RdfEvent]]:
    for k, e in enumerate(events):
        yield e.ms, i, k, name, e


def in_time_order(
    streams: Sequence[tuple[str, Sequence[RdfEvent]]],
) -> Iterator[tuple[str, RdfEvent]]:
    """The events of ``streams`` (each in time order) merged in time order; ties in
    the order of ``streams``, then each stream's."""
    keyed = [_keyed(i, name, events) for i, (name, events) in enumerate(streams)]
    for _, _, _, name, event in heapq.merge(*keyed):
        yield name, event


def new_instant(event: RdfEvent, background: Mapping[str, Graph]) -> dict[str, Any]:
    """The instant at ``event``'s timestamp, no graph in it yet."""
    return {
        "type": TYPE,
        "timestamp": event.ms,
        TIME: event.time,
        GRAPHS: {},
        BACKGROUND: background,
        SOLUTIONS: {},
    }


def add_graph(instant: dict[str, Any], stream: str, event: RdfEvent) -> bool:
    """Put ``event``'s graph into ``instant`` as ``stream``'s; a second graph of the
    stream at this timestamp has its triples merged into the first (returns True)."""
    graphs: dict[str, Graph] = instant[GRAPHS]
    if stream not in graphs:
        graphs[stream] = event.graph
        return False
    target = graphs[stream] = {p: list(pairs) for p, pairs in graphs[stream].items()}
    for p, pairs in event.graph.items():
        have = target.setdefault(p, [])
        have.extend(pair for pair in pairs if pair not in have)
    return True


def instants(
    streams: Sequence[tuple[str, Sequence[RdfEvent]]],
    background: Mapping[str, Graph] | None = None,
) -> tuple[list[dict[str, Any]], list[str]]:
    """The instants of ``streams`` (each in time order) in time order, and a report per
    graph merged into another of its stream at the same timestamp (a stream has at
    most one graph per timestamp, SPAseq's Definition 2)."""
    out: list[dict[str, Any]] = []
    reports: list[str] = []
    bg = dict(background or {})
    for name, event in in_time_order(streams):
        if not out or out[-1]["timestamp"] != event.ms:
            out.append(new_instant(event, bg))
        if add_graph(out[-1], name, event):
            reports.append(
                f"stream {name}: graph {event.name} has the timestamp of an earlier graph; "
                "their triples are merged into one event"
            )
    return out, reports

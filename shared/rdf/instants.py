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

__all__ = ["BACKGROUND", "GRAPHS", "KEY", "SOLUTIONS", "TIME", "TYPE", "instants"]

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


def instants(
    streams: Sequence[tuple[str, Sequence[RdfEvent]]],
    background: Mapping[str, Graph] | None = None,
) -> tuple[list[dict[str, Any]], list[str]]:
    """The instants of ``streams`` (each in time order) in time order, and a report per
    graph merged into another of its stream at the same timestamp (a stream has at
    most one graph per timestamp, SPAseq's Definition 2)."""
    merged = heapq.merge(*(_keyed(i, name, events) for i, (name, events) in enumerate(streams)))
    out: list[dict[str, Any]] = []
    reports: list[str] = []
    bg = dict(background or {})
    for ms, _, _, name, event in merged:
        if not out or out[-1]["timestamp"] != ms:
            out.append(
                {
                    "type": TYPE,
                    "timestamp": ms,
                    TIME: event.time,
                    GRAPHS: {},
                    BACKGROUND: bg,
                    SOLUTIONS: {},
                }
            )
        graphs: dict[str, Graph] = out[-1][GRAPHS]
        if name in graphs:
            reports.append(
                f"stream {name}: graph {event.name} has the timestamp of an earlier graph; "
                "their triples are merged into one event"
            )
            target = graphs[name] = {p: list(pairs) for p, pairs in graphs[name].items()}
            for p, pairs in event.graph.items():
                have = target.setdefault(p, [])
                have.extend(pair for pair in pairs if pair not in have)
        else:
            graphs[name] = event.graph
    return out, reports

"""A SPAseq or RSEP-QL query's run in its keyed partition (``fleet.rdf_queries``).

Each keyed record is one RDF graph event (TriG or JSON-LD, told by its first byte), of
the stream its input topic is; the coordinator forwarded them in time order. They feed
the query's incremental evaluation (``cerfleet.rdf.live``), the one ``cerfleet run``
prints with: each row it returns is one output record, the JSON object ``cerfleet run``
prints, numbered as every output is (``query_run``) for exactly-once replay. An
instant's rows come when a record with a later timestamp arrives.

The evaluation's snapshot (its automaton and the records of the instants it holds) is
the query's part of the partition checkpoint: a successor restores it and replays the
records after it, numbering the same rows the same way.
"""

from __future__ import annotations

from collections.abc import Sequence

import orjson

from cerfleet.complex_event import ComplexEvent
from cerfleet.errors import EventError
from cerfleet.fleet.registry import RDF_LANGUAGES, Registered
from cerfleet.query import Evaluator
from cerfleet.rdf.live import LiveRdf
from cerfleet.rdf.records import decode_record
from cerfleet.rdf.streams import declared_streams, stream_of
from cerfleet.workers.catalog import Catalog
from cerfleet.workers.keyed_batch import KeyedBatch
from cerfleet.workers.query_run import Output, QueryRun

__all__ = ["NOT_RDF", "evaluate_rdf", "new_evaluator", "rdf_group", "restored_evaluator"]

NOT_RDF = "not_rdf"  # a record that is not one RDF graph event of a stream of the query
_LATE = "late"  # an event before the instant being read (the merge's idle timeout)


def rdf_group(catalog: Catalog, keyed_topic: str, registry_offset: int) -> bool:
    """Whether ``keyed_topic`` carries RDF records: its group's queries are RDF queries
    (they have groups of their own), whose records JSON limits do not judge (a TriG
    record's blank nodes are brackets, not nesting)."""
    queries = catalog.queries_at(keyed_topic, registry_offset).values()
    return any(e.spec.query_language in RDF_LANGUAGES for e in queries)


def new_evaluator(entry: Registered) -> Evaluator | LiveRdf:
    """A fresh evaluator of ``entry``'s query."""
    if entry.spec.query_language in RDF_LANGUAGES:
        return LiveRdf(entry.spec.query_language, entry.spec.ceql)
    return entry.query.evaluator()


def restored_evaluator(entry: Registered, snapshot: bytes) -> Evaluator | LiveRdf:
    """The evaluator of ``entry``'s query that made ``snapshot``, continued."""
    if entry.spec.query_language in RDF_LANGUAGES:
        live = LiveRdf(entry.spec.query_language, entry.spec.ceql)
        live.restore(snapshot)
        return live
    return entry.query.restore(snapshot)


def evaluate_rdf(
    run: QueryRun, live: LiveRdf, batch: KeyedBatch, rows: Sequence[int]
) -> tuple[list[Output], int, list[tuple[int, str, str]]]:
    """The new outputs of ``rows`` of ``batch`` (in offset order), how many were
    suppressed as published, and each bad record's row, reason and error."""
    spec = run.entry.spec
    declared = declared_streams(spec.query_language, spec.ceql)
    outputs: list[Output] = []
    suppressed = 0
    problems: list[tuple[int, str, str]] = []
    for i in rows:
        value, src = batch.values[i], batch.sources[i]
        try:
            stream = stream_of(str(src[0]) if src is not None else "", declared)
            event = decode_record(value)
        except EventError as err:
            problems.append((i, NOT_RDF, str(err)))
            continue
        assert value is not None  # decode_record refuses an empty record
        try:
            found = live.push(stream, event, (value, None))
        except EventError as err:
            problems.append((i, _LATE, str(err)))
            continue
        offset = batch.offsets[i]
        ce = ComplexEvent(offset, offset, (offset,), None, ())
        for row in found:
            if (seq := run.number()) is None:
                suppressed += 1
            else:
                outputs.append(Output(run, seq, ce, False, orjson.dumps(row)))
    return outputs, suppressed, problems

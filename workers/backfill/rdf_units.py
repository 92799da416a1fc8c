"""A SPAseq or RSEP-QL backfill: archived RDF graph event records (``cerfleet.rdf.records``)
through ``cerfleet run``'s own evaluation, so the rows written are the rows it prints.

Records are decoded in parallel by the input tasks (bad ones reported with the reason
there, as the ``PREPARED`` rows of a JSON backfill); one task then evaluates the whole
streamset: SPAseq's instants join every stream at a timestamp, so the streams cannot be
split by time or key without the instants the split would cut. That task reads each
record again (decoded events are not Arrow values) in ``(t, topic, partition, offset)``
order.

Within a stream, events of one timestamp are in partition then offset order (a file's
order, for a topic of one partition); across streams a timestamp's graphs make one
instant whatever their order. Which stream a topic is: ``cerfleet.rdf.streams``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from typing import Any

import orjson
import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from cerfleet.errors import EventError
from cerfleet.rdf.records import CONTENT_TYPE_HEADER, decode_record
from cerfleet.rdf.streams import declared_streams, stream_of
from cerfleet.rdf.trig import RdfEvent
from cerfleet.workers.backfill.job_query import JobQuery
from cerfleet.workers.backfill.schemas import BAD, GOOD, MATCH, PREPARED, RESULT, STATS
from cerfleet.workers.backfill.spark_session import spark_schema

__all__ = ["evaluate_rdf", "evaluate_rdf_batches", "prepare_rdf_batches"]

_PREPARED_WITH_HEADERS = pa.schema([*PREPARED, ("content_type", pa.binary())])


def _content_type(headers: Any) -> bytes | None:
    for header in headers or ():
        if header["key"].lower() == CONTENT_TYPE_HEADER:
            value: bytes | None = header["value"]
            return value
    return None


def prepare_rdf_batches(
    job: JobQuery, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body of the decoding pass: archive rows in, ``PREPARED`` rows (and
    the content type) out; ``t`` is the event's time (ms), null for a bad record."""
    declared = declared_streams(job.language, job.ceql)
    for batch in batches:
        rows = batch.to_pylist()
        status: list[int] = []
        error: list[str | None] = []
        t: list[float | None] = []
        types: list[bytes | None] = []
        for row in rows:
            kind = _content_type(row["headers"])
            try:
                stream_of(row["topic"], declared)
                event = decode_record(row["value"], kind)
            except EventError as err:
                status.append(BAD)
                error.append(str(err))
                t.append(None)
            else:
                status.append(GOOD)
                error.append(None)
                t.append(float(event.ms))
            types.append(kind)
        yield pa.RecordBatch.from_pydict(
            {
                "topic": [r["topic"] for r in rows],
                "partition": [r["partition"] for r in rows],
                "offset": [r["offset"] for r in rows],
                "value": [r["value"] for r in rows],
                "status": status,
                "error": error,
                "unit": [""] * len(rows),
                "t": t,
                "content_type": types,
            },
            schema=_PREPARED_WITH_HEADERS,
        )


def _rows(job: JobQuery, streams: Sequence[tuple[str, Sequence[RdfEvent]]]) -> Iterator[Any]:
    from cerfleet.cli.rdf_run import results, rsepql_results

    if job.language == "rsepql":
        return rsepql_results(job.ceql, streams)
    return results(job.ceql, streams)


def evaluate_rdf_batches(
    job: JobQuery, counters: Mapping[str, Any] | None, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body of the one evaluation task: the sorted good rows in, the rows
    of ``cerfleet run`` (``RESULT`` matches, numbered from 0 in order) and a stats row
    out."""
    declared = declared_streams(job.language, job.ceql)
    by_stream: dict[str, list[RdfEvent]] = {}
    for batch in batches:
        for row in batch.to_pylist():
            event = decode_record(row["value"], row["content_type"])
            by_stream.setdefault(stream_of(row["topic"], declared), []).append(event)
    # The streams in the query's order: its declaration is the --stream options' order.
    order = dict.fromkeys(declared.values())
    streams = [(name, by_stream[name]) for name in order if name in by_stream]
    events = sum(len(e) for _, e in streams)
    names = list(RESULT.names)
    out: dict[str, list[Any]] = {name: [] for name in names}
    n = 0
    for row in _rows(job, streams):
        for name in names:
            out[name].append(None)
        out["kind"][-1] = MATCH
        out["query"][-1] = job.name
        out["start"][-1] = out["end"][-1] = n
        out["value"][-1] = orjson.dumps(row)
        n += 1
        if n % 1_000 == 0:
            yield pa.RecordBatch.from_pydict(out, schema=RESULT)
            out = {name: [] for name in names}
    stats = {"kind": STATS, "query": job.name, "events": events, "keys": 1, "unkeyed": 0}
    stats.update(matches=n, bad=0)
    for name in names:
        out[name].append(stats.get(name))
    if counters is not None:
        for name in ("events", "keys", "matches"):
            counters[name].add(stats[name])
    yield pa.RecordBatch.from_pydict(out, schema=RESULT)


def evaluate_rdf(
    job: JobQuery, source: DataFrame, counters: dict[str, Any] | None
) -> tuple[DataFrame, DataFrame]:
    """The evaluation's rows (``RESULT``) and the prepared rows (where the bad records
    are; their count goes to ``counters["bad"]`` when the rows are evaluated)."""
    needed = source.select("topic", "partition", "offset", "value", "headers")
    # Kept: decoded once for the bad records' count, read again by the evaluation.
    prepared = needed.mapInArrow(
        partial(prepare_rdf_batches, job), spark_schema(_PREPARED_WITH_HEADERS)
    ).persist(StorageLevel.MEMORY_AND_DISK)
    good = (
        prepared.where(F.col("status") == GOOD)
        .repartition(1)
        .sortWithinPartitions("t", "topic", "partition", "offset")
    )
    rows = good.mapInArrow(partial(evaluate_rdf_batches, job, counters), spark_schema(RESULT))
    if counters is not None:
        counters["bad"].add(prepared.where(F.col("status") == BAD).count())
    return rows, prepared.drop("content_type")

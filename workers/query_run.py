"""One query's run in a keyed partition, and its outputs, numbered for exactly-once replay.

Each output record a query publishes from a keyed partition gets the next number
(``seq``): a successor replaying the partition numbers the same records the same way
and skips those below ``suppress`` (already published). A record is a complex event,
or, for a language whose output is rows (``row_outputs``), one row of one: then every
complex event goes through the language's output stage, replayed ones included, since
its state (MATCH_NUMBER) carries over to the next.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass

from cerfleet.complex_event import ComplexEvent
from cerfleet.fleet.keyed import ORIGIN_HEADER
from cerfleet.fleet.registry import Registered
from cerfleet.query import Evaluator
from cerfleet.rdf.live import LiveRdf
from cerfleet.workers.lateness import Lateness
from cerfleet.workers.outputs import RecordFormat, output_key
from cerfleet.workers.row_outputs import OMITTED_HEADER, TRUNCATED_HEADER, RowOutputs

__all__ = ["Output", "QueryRun", "numbered", "output_record", "output_records"]

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Output:
    run: QueryRun
    seq: int
    ce: ComplexEvent
    truncated: bool = False  # the last output kept of a record whose outputs were cut
    # A row of the query's language (``row_outputs``): the record's value, and the
    # fields it left out to fit. None: the record is the complex event (``outputs``).
    value: bytes | None = None
    omitted: Sequence[str] = ()


@dataclass(slots=True)
class QueryRun:
    entry: Registered
    evaluator: Evaluator | LiveRdf  # LiveRdf: an RDF query's (``rdf_runs``)
    emitted: int = 0  # outputs numbered so far
    suppress: int = 0  # outputs numbered below this were already published
    lateness: Lateness | None = None  # the reorder stage of a query with a bound
    rows: RowOutputs | None = None  # the output stage of a language whose output is rows

    @property
    def name(self) -> str:
        return self.entry.spec.name

    @property
    def max_outputs(self) -> int | None:
        """The cap registered with the query (None: the worker's setting)."""
        return self.entry.spec.max_outputs_per_event

    def number(self) -> int | None:
        """The number of the run's next output; None when a predecessor published it
        (below ``suppress``): that output is not returned again."""
        seq = self.emitted
        self.emitted = seq + 1
        return None if seq < self.suppress else seq

    @property
    def late(self) -> int:
        """Events dropped as late so far: by the evaluator, or by the reorder stage."""
        dropped: int = getattr(self.evaluator, "late", 0)
        return dropped + (0 if self.lateness is None else self.lateness.late)


def warn_truncated(where: str, run: QueryRun, default_cap: int | None) -> None:
    log.warning(
        "%s: query %r made one event emit more than %d complex events; the rest were "
        'dropped (outputs flagged "truncated", metric cerfleet_worker_truncated_events_total)',
        where,
        run.name,
        run.max_outputs or default_cap,
    )


def numbered(
    run: QueryRun, ces: Sequence[ComplexEvent], cut: Collection[int]
) -> tuple[list[Output], int]:
    """The outputs of ``ces`` (one batch's, in order) not published before, and how many
    were suppressed as published; ``cut`` holds the ends of the records whose complex
    events were cut, whose last output is flagged."""
    outputs: list[Output] = []
    suppressed = 0
    rows = run.rows
    for i, ce in enumerate(ces):
        last = ce.end in cut and (i + 1 == len(ces) or ces[i + 1].end != ce.end)
        if rows is None:
            if (seq := run.number()) is None:
                suppressed += 1
            else:
                outputs.append(Output(run, seq, ce, last))
            continue
        values = rows.values(ce)
        for k, (value, omitted) in enumerate(values):
            if (seq := run.number()) is None:
                suppressed += 1
            else:
                flag = last and k + 1 == len(values)
                outputs.append(Output(run, seq, ce, flag, value, omitted))
    return outputs, suppressed


def output_records(
    keyed: tuple[str, int], outs: Iterable[Output]
) -> Iterator[tuple[bytes, bytes | None, list[tuple[str, str | bytes | None]]]]:
    """The value, key and headers of each of ``outs``' records, published from the keyed
    partition ``keyed``: the origin header numbers it (``outputs``). One batch's outputs
    come query after query, and a Kleene burst is thousands of outputs of one key in a
    row: the fields they share are formatted once per query, the key once per key.
    One at a time: a batch's records kept together until all were made would be young
    objects enough to set off collections of the garbage collector."""
    topic, partition = keyed
    run: QueryRun | None = None
    fmt = RecordFormat("", topic, partition)
    last_key: object = _UNSEEN
    key: bytes | None = None
    for out in outs:
        if out.run is not run:
            run = out.run
            fmt = RecordFormat(run.entry.spec.name, topic, partition, run.entry.version)
        ce = out.ce
        if ce.key is not last_key:
            last_key = ce.key
            key = output_key(ce)
        headers: list[tuple[str, str | bytes | None]] = [(ORIGIN_HEADER, fmt.origin(out.seq))]
        if out.value is None:
            yield fmt.value(ce, out.truncated, key), key, headers
            continue
        if out.truncated:
            headers.append((TRUNCATED_HEADER, b"true"))
        if out.omitted:
            headers.append((OMITTED_HEADER, ",".join(out.omitted).encode()))
        yield out.value, key, headers


_UNSEEN = object()


def output_record(
    keyed: tuple[str, int], out: Output
) -> tuple[bytes, list[tuple[str, str | bytes | None]]]:
    """The value and headers of ``out``'s record (``output_records``)."""
    value, _, headers = next(output_records(keyed, [out]))
    return value, headers

"""The fleet benchmark's workload: its queries over the stock events, the desks that
balance keys over keyed partitions, input partitions, and the embedded engine's answer."""

from __future__ import annotations

import math
from typing import Any

from cerfleet.fleet.settings import WorkerSettings
from cerfleet.query import compile_query

# Shared with the fleet tests (tests/workers/test_fleet.py), which check their answers.
# With PARTITION BY, Kleene +, a time window and CONSUME BY PARTITION.
PARTITIONED = """SELECT * FROM S WHERE SELL as s ; BUY+ as b ; SELL as c
FILTER s[volume >= 2000] AND b[volume >= 2000] AND c[volume >= 2000]
PARTITION BY [name] WITHIN 60000 [stock_time] CONSUME BY PARTITION"""
# Without PARTITION BY: one key, one keyed partition.
GLOBAL = """SELECT * FROM S WHERE SELL as a ; BUY as b ; SELL as c
FILTER a[name = 'INTC'] AND b[name = 'MSFT'] AND c[name = 'INTC']
WITHIN 3000 [stock_time]"""
# PARTITION BY [desk]: the same sub-stream of the stock events for every desk, with desks
# chosen so that every keyed partition gets the same share (``balanced_desks``):
# scale-out measured without the one ticker that holds 53% of the stock stream.
BALANCED = """SELECT * FROM S WHERE SELL as s ; BUY+ as b ; SELL as c
FILTER s[volume >= 2000] AND b[volume >= 2000] AND c[volume >= 2000]
PARTITION BY [desk] WITHIN 60000 [stock_time] CONSUME BY PARTITION"""
QUERIES = {"partitioned": PARTITIONED, "global": GLOBAL}  # ``--query both``
# Every query ``--query`` names: the stock events' two, and the one that adds a field.
CHOICES = {**QUERIES, "balanced": BALANCED}
DESKS_PER_PARTITION = 2
TIME_FIELD = "stock_time"
KEY_FIELD = "name"  # input record key: one ticker stays in one input partition

BYTES_PER_EVENT = 80  # a stock event as JSON, about 77 bytes
PARTITION_BUDGET = 4 * 2**20  # below the mock's 5 MiB retained per partition


KEYED_PARTITIONS = 8  # the coordinator's default for new keyed topics


def input_partitions(query: str, events: int) -> int:
    """Input partitions for ``events``: enough to stay below the mock's retention cap for a
    PARTITION BY query; one for a query without it, whose answer depends on the order of all
    events (spreading them would interleave the partitions differently on every run)."""
    if not compile_query(query, time_field=TIME_FIELD).partitioned:
        return 1
    return max(1, math.ceil(events * BYTES_PER_EVENT / PARTITION_BUDGET))


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 hash of a record key (the default partitioner of the Java
    clients, and librdkafka's ``murmur2_random``, which the coordinator uses)."""
    m, mask = 0x5BD1E995, 0xFFFFFFFF
    h = (0x9747B28C ^ len(data)) & mask
    tail = len(data) & ~3
    for i in range(0, tail, 4):
        k = (int.from_bytes(data[i : i + 4], "little") * m) & mask
        k = ((k ^ (k >> 24)) * m) & mask
        h = ((h * m) & mask) ^ k
    rest = len(data) & 3
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest:
        h = ((h ^ data[tail]) * m) & mask
    h = ((h ^ (h >> 13)) * m) & mask
    return h ^ (h >> 15)


def balanced_desks(keyed_partitions: int) -> list[int]:
    """Desk numbers, ``DESKS_PER_PARTITION`` of them on each keyed partition (the record
    key of desk d is ``[d]``, as ``cerfleet.fleet.keyed.key_of`` writes it)."""
    chosen: dict[int, list[int]] = {p: [] for p in range(keyed_partitions)}
    desk = 0
    while any(len(d) < DESKS_PER_PARTITION for d in chosen.values()):
        p = (murmur2(b"[%d]" % desk) & 0x7FFFFFFF) % keyed_partitions
        if len(chosen[p]) < DESKS_PER_PARTITION:
            chosen[p].append(desk)
        desk += 1
    return sorted(d for ds in chosen.values() for d in ds)


def with_desks(events: list[dict[str, Any]], keyed_partitions: int) -> list[dict[str, Any]]:
    """As many events as ``events``: every k-th of them (k the number of balanced desks),
    each copied once for every desk in turn, so that every desk reads the same sub-stream
    of the whole stream's span, and every keyed partition does the same work. Desks
    given a share of the events each (by a hash of their index) read the same number of
    events but not the same work: of the 1M-event stream's 177,005 complex events, the
    desks on odd keyed partitions ended 96,610, those on even ones 80,395 (one desk's
    20,471 hold a burst of 10,000 that one event ends), and of two workers the one with
    the odd ones finished 0.4 s after the other, in a run of 3.4 s."""
    desks = balanced_desks(keyed_partitions)
    return [{**e, "desk": d} for e in events[:: len(desks)] for d in desks][: len(events)]


def events_for(
    query: str, events: list[dict[str, Any]], keyed_partitions: int
) -> list[dict[str, Any]]:
    """The stock ``events`` as ``query`` reads them: with desks for ``BALANCED``."""
    return with_desks(events, keyed_partitions) if query == BALANCED else events


def embedded_evaluator(query: str) -> Any:
    """The embedded engine's evaluator of ``query``, bounded as a worker's is: a worker
    publishes at most ``max_outputs_per_event`` complex events of one event (the 400k-event
    stock stream has a Kleene burst of 16,383 and one of 10,235)."""
    evaluator = compile_query(query, time_field=TIME_FIELD).evaluator()
    evaluator.max_outputs = WorkerSettings().max_outputs_per_event
    return evaluator


def embedded_count(query: str, events: list[dict[str, Any]]) -> int:
    """Complex events of the embedded engine over ``events`` in order."""
    return len(embedded_evaluator(query).process_batch(events))

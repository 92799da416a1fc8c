"""A keyed partition's checkpoint, and the topic it is kept in.

A checkpoint is everything a worker needs to continue a keyed partition as if
it had never stopped: the next keyed offset, the last input offset seen per
input partition (to drop records a coordinator routed twice), and per query
its registry version, output count and engine snapshot (union-lists and the
tECS nodes they reach, see ``cerfleet.evaluation.snapshot``), and the queries
suspended there for going over their time budget (``cerfleet.workers.budget``:
a suspension is recorded here and nowhere else). It also keeps,
per output topic, an offset below which none of the partition's later
outputs can lie, so a successor scans only the tail of the output topic.

Binary layout (no pickle: checkpoints are read back from a topic): ``MAGIC``,
a 4-byte big-endian header length, the header as JSON, then the query
snapshots back to back (their lengths are in the header). One checkpoint is
written as one record, or as several chunks when it is larger than a record
may be; chunks carry ``id:index:count`` in a header, and a reader takes the
latest checkpoint whose chunks are all present.
"""

from __future__ import annotations

import logging
import struct
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson
from confluent_kafka import Consumer, Producer, TopicPartition

from cerfleet.errors import SnapshotError
from cerfleet.fleet.keyed import header_items
from cerfleet.workers.budget import Suspension
from cerfleet.workers.scans import Scan, scan, scan_many

log = logging.getLogger(__name__)

MAGIC = b"CFCK1"
CHUNK_HEADER = "cerfleet-chunk"
# Below the default message.max.bytes (1 MB) with room for headers and batching.
CHUNK_SIZE = 900_000


@dataclass
class QueryCheckpoint:
    version: int
    fingerprint: str
    emitted: int
    snapshot: bytes
    # A query with a lateness bound: its reorder stage (``workers.lateness``), held
    # events included; None without a bound.
    lateness: dict[str, Any] | None = None
    # A language whose output is rows: its output stage's state (``workers.row_outputs``,
    # MATCH_RECOGNIZE's MATCH_NUMBER per key); None for complex-event outputs.
    output: Any = None


@dataclass
class Checkpoint:
    keyed_topic: str
    partition: int
    next_offset: int
    # Per input partition, named ``topic:partition``, the highest input offset processed.
    sources: dict[str, int] = field(default_factory=dict)
    queries: dict[str, QueryCheckpoint] = field(default_factory=dict)
    retired: list[tuple[str, int]] = field(default_factory=list)
    output_bounds: dict[str, int] = field(default_factory=dict)
    registry_seen: int = 0
    # Queries suspended on the partition (``cerfleet.workers.budget``), by name.
    suspended: dict[str, Suspension] = field(default_factory=dict)

    @staticmethod
    def named(sources: dict[tuple[str, int], int]) -> dict[str, int]:
        """``sources`` (per input partition) keyed as a checkpoint names them."""
        return {f"{topic}:{partition}": offset for (topic, partition), offset in sources.items()}

    def input_sources(self) -> dict[tuple[str, int], int]:
        """``sources`` per input partition (topic, number)."""
        split = (name.rpartition(":") for name in self.sources)
        return {(t, int(p)): o for (t, _, p), o in zip(split, self.sources.values(), strict=True)}

    def encode(self) -> bytes:
        names = sorted(self.queries)
        header = {
            "keyed_topic": self.keyed_topic,
            "partition": self.partition,
            "next_offset": self.next_offset,
            "sources": self.sources,
            "retired": self.retired,
            "output_bounds": self.output_bounds,
            "registry_seen": self.registry_seen,
            "suspended": {n: s.to_json() for n, s in sorted(self.suspended.items())},
            "queries": [
                {
                    "name": n,
                    "version": self.queries[n].version,
                    "fingerprint": self.queries[n].fingerprint,
                    "emitted": self.queries[n].emitted,
                    "size": len(self.queries[n].snapshot),
                    **_lateness(self.queries[n]),
                    **_output(self.queries[n]),
                }
                for n in names
            ],
        }
        head = orjson.dumps(header)
        return b"".join(
            [MAGIC, struct.pack(">I", len(head)), head, *(self.queries[n].snapshot for n in names)]
        )

    @classmethod
    def decode(cls, data: bytes) -> Checkpoint:
        try:
            return cls._decode(data)
        except (ValueError, KeyError, TypeError, struct.error) as exc:  # JSONDecodeError too
            raise SnapshotError(f"corrupt cerfleet checkpoint: {exc!r}") from exc

    @classmethod
    def _decode(cls, data: bytes) -> Checkpoint:
        if not data.startswith(MAGIC) or len(data) < len(MAGIC) + 4:
            raise SnapshotError("not a cerfleet checkpoint")
        at = len(MAGIC)
        (size,) = struct.unpack_from(">I", data, at)
        at += 4
        header: dict[str, Any] = orjson.loads(data[at : at + size])
        at += size
        queries = {}
        for q in header["queries"]:
            queries[q["name"]] = QueryCheckpoint(
                q["version"],
                q["fingerprint"],
                q["emitted"],
                data[at : at + q["size"]],
                q.get("lateness"),
                q.get("output"),
            )
            at += q["size"]
        if at != len(data):
            raise SnapshotError("truncated cerfleet checkpoint")
        return cls(
            header["keyed_topic"],
            header["partition"],
            header["next_offset"],
            header["sources"],
            queries,
            [(str(n), int(v)) for n, v in header["retired"]],
            header["output_bounds"],
            int(header.get("registry_seen", 0)),
            {n: Suspension.from_json(d) for n, d in header.get("suspended", {}).items()},
        )


def _lateness(query: QueryCheckpoint) -> dict[str, Any]:
    # Absent without a bound: checkpoints stay as before for such queries.
    return {} if query.lateness is None else {"lateness": query.lateness}


def _output(query: QueryCheckpoint) -> dict[str, Any]:
    # Absent for complex-event outputs: their checkpoints stay as before.
    return {} if query.output is None else {"output": query.output}


def checkpoint_key(keyed_topic: str, partition: int) -> bytes:
    return f"{keyed_topic}:{partition}".encode()


def write_checkpoint(
    producer: Producer, topic: str, partitions: int, ckpt: Checkpoint, on_delivery: Any
) -> int:
    """Produce ``ckpt`` (in chunks if needed) to its partition of ``topic``; returns its size."""
    data = ckpt.encode()
    key = checkpoint_key(ckpt.keyed_topic, ckpt.partition)
    cid = uuid.uuid4().hex[:12]
    chunks = [data[i : i + CHUNK_SIZE] for i in range(0, len(data), CHUNK_SIZE)] or [b""]
    for i, chunk in enumerate(chunks):
        header = f"{cid}:{i}:{len(chunks)}".encode()
        producer.produce(
            topic,
            key=key,
            value=chunk,
            partition=ckpt.partition % partitions,
            headers=[(CHUNK_HEADER, header)],
            on_delivery=on_delivery,
        )
    return len(data)


def read_checkpoint(
    scanner: Consumer,
    topic: str,
    partitions: int,
    keyed_topic: str,
    partition: int,
    timeout: float = 30.0,
) -> Checkpoint | None:
    """The latest complete checkpoint of ``keyed_topic``'s ``partition``, or None (see
    ``read_checkpoints``)."""
    return read_checkpoints(scanner, topic, partitions, keyed_topic, [partition], timeout)[
        partition
    ]


def read_checkpoints(
    scanner: Consumer,
    topic: str,
    partitions: int,
    keyed_topic: str,
    wanted: Iterable[int],
    timeout: float = 30.0,
) -> dict[int, Checkpoint | None]:
    """The latest complete checkpoint of each ``wanted`` partition of ``keyed_topic``, or
    None.

    Reads each checkpoint partition from near its end to the partition's end
    (partition EOF), all of them together, then, for a partition whose checkpoint was
    not there, widens backwards until a complete checkpoint of it is found
    (co-partitioned topics find it in the last record). Where the end is comes from the
    log itself: a ListOffsets answer only says where to start reading, and a wrong one
    costs a longer read, never a missed checkpoint (some brokers answer LATEST with less
    than the end, or with 0 while a transaction is open)."""
    lows: dict[int, int] = {}
    ranges: dict[tuple[str, int], tuple[int, int | None]] = {}
    for partition in wanted:
        tp = TopicPartition(topic, partition % partitions)
        low, hint = scanner.get_watermark_offsets(tp, timeout=timeout, cached=False)
        lows[partition] = max(0, low)
        ranges[(topic, tp.partition)] = (max(lows[partition], hint - 16), None)
    tails = scan_many(scanner, ranges, timeout)
    found: dict[int, Checkpoint | None] = {}
    for partition, low in lows.items():
        where = (topic, partition % partitions)
        key = checkpoint_key(keyed_topic, partition)
        latest = _latest_complete(_checkpoint_records(tails[where]), key)
        window = 64
        end = ranges[where][0]
        while latest is None and end > low:
            start = max(low, end - window)
            older = scan(scanner, TopicPartition(*where), start, end, timeout)
            latest = _latest_complete(_checkpoint_records(older), key)
            end = start
            window *= 4
        found[partition] = None if latest is None else Checkpoint.decode(latest)
    return found


def _latest_complete(records: list[tuple[bytes | None, bytes, bytes]], key: bytes) -> bytes | None:
    """The newest checkpoint in ``records`` (key, chunk header, value) whose chunks are all
    there; chunks of one checkpoint are contiguous among its key's records."""
    parts: dict[str, dict[int, bytes]] = {}
    counts: dict[str, int] = {}
    newest: bytes | None = None
    for rkey, header, value in records:
        if rkey != key:
            continue
        cid, index, count = header.decode().split(":")
        parts.setdefault(cid, {})[int(index)] = value
        counts[cid] = int(count)
        if len(parts[cid]) == counts[cid]:
            newest = b"".join(parts[cid][i] for i in range(counts[cid]))
    return newest


def _checkpoint_records(scanned: Scan) -> list[tuple[bytes | None, bytes, bytes]]:
    """The checkpoint chunks among scanned records, as (key, chunk header, value)."""
    out: list[tuple[bytes | None, bytes, bytes]] = []
    for msg in scanned.records:
        header = None
        for k, v in header_items(msg):
            if k == CHUNK_HEADER:
                header = v
        if header is not None:  # not a checkpoint otherwise
            out.append((msg.key(), header, msg.value() or b""))
    return out

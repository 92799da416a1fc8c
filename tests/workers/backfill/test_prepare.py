"""The columnar first pass gives every record the verdict, unit and order time that
judging it alone by the fleet's rules gives (an oracle written here, record by
record, from ``decode_event``, ``key_of`` and ``parse_timestamp``)."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from cerfleet.events.timestamps import parse_timestamp
from cerfleet.fleet.keyed import key_of
from cerfleet.fleet.records import Rejected, decode_event
from cerfleet.workers.backfill.job_query import JobQuery
from cerfleet.workers.backfill.prepare import _plain_units, ascii_only, prepare
from cerfleet.workers.backfill.schemas import ARCHIVE, BAD, GOOD, UNKEYED

KEYED = JobQuery("q", "SELECT * FROM S WHERE A ; B PARTITION BY [k, j]", "type", "t")
TYPED = JobQuery(
    "q",
    "DECLARE STREAM S { EVENT A { x: int, k: int }, EVENT B { k: string } }\n"
    "SELECT * FROM S WHERE A ; B PARTITION BY [k]",
    "type",
    "t",
)
WHOLE = JobQuery("q", "SELECT * FROM S WHERE A ; B", "type", "t")

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.integers(-(2**70), 2**70),
    st.sampled_from([1.0, 2.0, -0.0, 1.5, 1e300, 2.0**60]),
    st.sampled_from(["a", "1", "", "é", 'a"b', "2024-05-01T12:00:00Z", "12.5", "x\x00"]),
)
values = st.one_of(scalars, st.lists(scalars, max_size=2), st.dictionaries(st.just("z"), scalars))
events = st.fixed_dictionaries(
    {},
    optional={
        "type": st.one_of(st.sampled_from(["A", "B", ""]), scalars),
        "k": values,
        "j": values,
        "x": values,
        "t": st.one_of(
            values, st.sampled_from(["2024-05-01", "2024-05-01T12:00:00+02:00", "nope"])
        ),
    },
)
raw = st.one_of(
    # The standard library writes integers of any size (orjson refuses those beyond 64 bits).
    events.map(lambda e: json.dumps(e, ensure_ascii=False).encode()),
    events.map(lambda e: json.dumps(e, indent=2).encode()),
    st.sampled_from(
        [b"{not json", b"[1, 2]", b"null", b"", b"  ", b'{"type": "A", "k": 1, "j": 1} x']
    ),
    st.sampled_from([b'{"type":"A","k":1,"j":' + b"[" * 70 + b"]" * 70 + b"}", None]),
)


def _oracle(job: JobQuery, value: bytes | None, stamp: int | None) -> tuple[int, Any, Any]:
    query = job.compiled()
    event = Rejected("tombstone", "") if value is None else decode_event(value)
    if (
        isinstance(event, Rejected)
        or not isinstance(event.get("type"), str)
        or query.check_event(event) is not None
    ):
        return BAD, None, None
    t = parse_timestamp(event.get("t"))
    if t is None and stamp is not None:
        t = float(stamp)
    if not query.partitioned:
        return GOOD, "", t
    key = key_of(event, query.partition_attrs)
    return (UNKEYED, None, t) if key is None else (GOOD, key.decode(), t)


@settings(max_examples=300, deadline=None)
@given(
    job=st.sampled_from([KEYED, TYPED, WHOLE]),
    records=st.lists(st.tuples(raw, st.one_of(st.none(), st.integers(0, 2**41))), max_size=25),
)
def test_each_record_gets_the_fleets_verdict_unit_and_time(
    job: JobQuery, records: list[tuple[bytes | None, int | None]]
) -> None:
    n = len(records)
    batch = pa.RecordBatch.from_pydict(
        {
            "topic": ["in"] * n,
            "partition": [0] * n,
            "offset": list(range(n)),
            "timestamp": [s for _, s in records],
            "key": [None] * n,
            "value": [v for v, _ in records],
            "headers": [None] * n,
            "date": ["unknown"] * n,
        },
        schema=ARCHIVE,
    )
    got = prepare(job, batch).to_pylist()
    for (value, stamp), row in zip(records, got, strict=True):
        status, unit, t = _oracle(job, value, stamp)
        assert (row["status"], row["unit"]) == (status, unit), value
        if status == BAD:
            assert row["error"] and row["t"] is None
        else:
            assert row["error"] is None
            assert row["t"] == t or (row["t"] is None and t is None) or math.isclose(row["t"], t)


@given(
    st.lists(st.one_of(st.none(), st.binary(max_size=12), st.text(max_size=6).map(str.encode))),
    st.integers(0, 5),
    st.booleans(),
)
def test_ascii_only_reads_the_rows_own_bytes(
    records: list[bytes | None], cut: int, large: bool
) -> None:
    # Views of Arrow's buffers must see a slice's own rows only, in either offset width.
    values = pa.array(records, pa.large_binary() if large else pa.binary()).slice(cut)
    kept = [v for v in values.to_pylist() if v is not None]
    # Never "ASCII" when a record is not; a null slot's bytes may only make it say no.
    assert ascii_only(values) <= all(v.isascii() for v in kept)
    if not values.null_count:
        assert ascii_only(values) == all(v.isascii() for v in kept)


@given(st.lists(st.one_of(st.integers(-(2**53) + 1, 2**53 - 1), st.text(max_size=4)), max_size=20))
def test_one_attributes_units_are_written_as_key_of_writes_them(keys: list[int | str]) -> None:
    column = np.array(keys) if keys else np.array([], dtype=np.int64)
    units = _plain_units([column])
    if units is None:  # a mixed column: not plain, judged by key_of itself
        return
    want = [key_of({"k": v}, ("k",)) for v in column.tolist()]
    assert [u.encode() for u in units.tolist()] == want

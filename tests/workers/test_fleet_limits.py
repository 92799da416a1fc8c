"""Untrusted queries and records against real coordinator and worker processes: a
flooding query is cut without starving its neighbours."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from cerfleet.query import compile_query
from tests.fleet import Fleet
from tests.kafka_broker import KafkaBroker

FLOOD = "SELECT * FROM S WHERE A+"  # 2^(n-1) complex events end at the n-th A
NORMAL = "SELECT * FROM S WHERE A ; B WITHIN 4 EVENTS"
CAP = 20


@pytest.fixture
def fleet(kafka: KafkaBroker, tmp_path: Path) -> Iterator[Fleet]:
    f = Fleet(kafka, tmp_path)
    yield f
    f.close()


def _submit(fleet: Fleet, name: str, ceql: str, source: str, *extra: str) -> str:
    out = fleet.topic(f"out-{name}")
    path = fleet.log_dir / f"{name}.ceql"
    path.write_text(ceql)
    done = fleet.cli("submit", name, str(path), "-i", source, "-o", out, *extra)
    assert done.returncode == 0, done.stderr
    return out


def test_a_flooding_query_is_cut_its_neighbour_is_whole(fleet: Fleet) -> None:
    source = fleet.topic("in")
    flood_out = _submit(fleet, "flood", FLOOD, source, "--allow-unbounded")
    normal_out = _submit(fleet, "normal", NORMAL, source)
    fleet.coordinator()
    worker = fleet.worker("--max-outputs-per-event", str(CAP))
    events = [{"type": "A", "i": i} for i in range(12)] + [{"type": "B", "i": 12}] * 2
    fleet.produce(source, [orjson.dumps(e) for e in events])

    want = compile_query(NORMAL).evaluator().process_batch(events)
    normal = fleet.reader(normal_out)
    normal.wait_for(len(want), 60, settle=0.5)
    got = Counter(tuple(s["offset"] for s in v["sources"]) for v in normal.values())
    assert got == Counter(ce.positions for ce in want)
    assert not any("truncated" in v for v in normal.values())

    # The i-th A ends 2^i complex events: 1 + 2 + 4 + 8 + 16 whole, then CAP each.
    per_event = [min(2**i, CAP) for i in range(12)]
    flood = fleet.reader(flood_out)
    flood.wait_for(sum(per_event), 60, settle=0.5)
    values = flood.values()
    ends = Counter(v["sources"][-1]["offset"] for v in values)
    assert [ends[i] for i in range(12)] == per_event
    flagged = sorted(v["sources"][-1]["offset"] for v in values if v.get("truncated"))
    assert flagged == list(range(5, 12))  # one flag per cut event
    assert worker.metric("cerfleet_worker_truncated_events_total") == 7
    assert "query 'flood' made one event emit more than 20" in worker.tail(20_000)
    assert worker.alive()

"""MATCH_RECOGNIZE in the fleet, end to end: coordinator and worker processes publish
exactly the rows ``cerfleet run`` prints over the same events, through a worker's SIGKILL
(of a query whose matches the standard selects, those its input's end did not decide).

Rows are compared per PARTITION BY key, in order (a key's rows come from one keyed
partition, published in order), so a lost, repeated or misnumbered row (MATCH_NUMBER
per key) fails the test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from benchmarks.datasets import stock, to_dicts
from cerfleet.languages import row_writer
from cerfleet.query import compile_query
from tests.fleet import Fleet, TopicReader

N_EVENTS = 20_000
MR = "match_recognize"

QUERIES = {
    # PREV in two DEFINEs, SKIP PAST LAST ROW, one row per match.
    "rising": """SELECT * FROM Stock MATCH_RECOGNIZE (PARTITION BY name
  MEASURES MATCH_NUMBER() AS mn, FIRST(A.price) AS first_price, LAST(C.price) AS last_price
  ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
  PATTERN (A B C) DEFINE B AS B.price > PREV(B.price), C AS C.price > PREV(C.price))""",
    # A correlation (B reads A's row), a record per row of each match.
    "dip": """SELECT * FROM Stock MATCH_RECOGNIZE (PARTITION BY name
  MEASURES MATCH_NUMBER() AS mn, CLASSIFIER() AS var
  ALL ROWS PER MATCH AFTER MATCH SKIP TO NEXT ROW
  PATTERN (A B) DEFINE A AS A.volume > 900, B AS B.price < A.price)""",
    # A skip mode over a variable-length pattern: the standard's selection (a match is
    # final only at the row that ends its greedy fall, so many are pending at a checkpoint).
    "climb": """SELECT * FROM Stock MATCH_RECOGNIZE (PARTITION BY name
  MEASURES MATCH_NUMBER() AS mn, FIRST(A.price) AS low, LAST(B.price) AS high,
    COUNT(B.*) AS ups, COUNT(C.*) AS downs
  ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
  PATTERN (A B+ C+) DEFINE B AS B.price > PREV(B.price), C AS C.price < PREV(C.price))""",
}


@pytest.fixture(scope="module")
def events() -> list[dict[str, Any]]:
    return to_dicts(stock(N_EVENTS, seed=7))


def by_key(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        out.setdefault(row["name"], []).append(row)
    return out


def run_rows(fleet: Fleet, name: str, events_file: Path) -> list[dict[str, Any]]:
    """What ``cerfleet run`` prints for the query over the file."""
    done = fleet.cli("run", str(fleet.log_dir / f"{name}.sql"), str(events_file), "--quiet")
    assert done.returncode == 0, done.stderr
    return [orjson.loads(line) for line in done.stdout.splitlines()]


def unfinished(
    text: str, events: list[dict[str, Any]], printed: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """``cerfleet run``'s rows without those only the end of its input made final: a
    stream has no end, so the fleet holds those matches back (pending, checkpointed).
    What the Python API returns before ``finish`` must be a prefix of run's rows per key."""
    query = compile_query(text, language=MR)
    write = row_writer(MR, text)
    assert write is not None
    ces = query.evaluator().process_batch(events)
    rows = [orjson.loads(line) for line in write(ces).splitlines()]
    if not query.selecting:
        return printed
    held = by_key(printed)
    for key, kept in by_key(rows).items():
        assert held[key][: len(kept)] == kept, key
    assert 0 < len(printed) - len(rows) <= len(held)  # at most one pending match per key
    return rows


def setup(
    fleet: Fleet, events: list[dict[str, Any]]
) -> tuple[str, dict[str, TopicReader], dict[str, list[dict[str, Any]]]]:
    source = fleet.topic("stock")
    events_file = fleet.log_dir / "events.jsonl"
    events_file.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    readers, want = {}, {}
    for name, text in QUERIES.items():
        out = fleet.topic(f"out-{name}", 4)
        (fleet.log_dir / f"{name}.sql").write_text(text)
        done = fleet.cli(
            "submit", name, str(fleet.log_dir / f"{name}.sql"), "-i", source, "-o", out
        )
        assert done.returncode == 0, done.stderr
        readers[name] = fleet.reader(out, 4)
        want[name] = unfinished(text, events, run_rows(fleet, name, events_file))
    return source, readers, want


def check(readers: dict[str, TopicReader], want: dict[str, list[dict[str, Any]]]) -> None:
    for name, rows in want.items():
        reader = readers[name]
        reader.wait_for(len(rows), 180)
        got = reader.values()
        assert len(got) == len(rows), f"{name}: {len(got)} rows published, run printed {len(rows)}"
        assert by_key(got) == by_key(rows), name
        # Keyed by the PARTITION BY values, as complex-event records are.
        assert all(
            orjson.loads(m.key()) == [orjson.loads(m.value())["name"]] for m in reader.records
        )


def test_the_fleet_publishes_run_s_rows(fleet: Fleet, events: list[dict[str, Any]]) -> None:
    source, readers, want = setup(fleet, events)
    assert len(want["rising"]) > 1000 and len(want["dip"]) > 1000 and len(want["climb"]) > 1000
    fleet.coordinator()
    fleet.worker()
    fleet.worker()
    fleet.produce(source, [orjson.dumps(e) for e in events])
    check(readers, want)


def test_a_sigkilled_worker_loses_and_repeats_no_row(
    fleet: Fleet, events: list[dict[str, Any]]
) -> None:
    """The worker dies mid-stream; its successor restores the checkpoint (MATCH_NUMBER per
    key included), skips the rows already published and goes on numbering."""
    source, readers, want = setup(fleet, events)
    fleet.coordinator()
    victim = fleet.worker()
    lines = [orjson.dumps(e) for e in events]
    half = len(lines) // 2
    fleet.produce(source, lines[:half])
    # Some rows out and a checkpoint or two behind, then SIGKILL between checkpoints.
    readers["rising"].wait_for(1, 60, settle=0.3)
    victim.kill()
    successor = fleet.worker()
    fleet.produce(source, lines[half:])
    check(readers, want)
    assert successor.metric("cerfleet_worker_recoveries_total") > 0


def test_partitions_moved_by_rebalances_number_matches_on(
    fleet: Fleet, events: list[dict[str, Any]]
) -> None:
    """A second worker joins after the first half (taking some keyed partitions over
    from the first's checkpoints), then the first leaves (SIGTERM: a last checkpoint, and
    the rest move): every key's MATCH_NUMBER goes on from where it was."""
    source, readers, want = setup(fleet, events)
    fleet.coordinator()
    first = fleet.worker()
    lines = [orjson.dumps(e) for e in events]
    half = len(lines) // 2
    fleet.produce(source, lines[:half])
    readers["rising"].wait_for(1, 60, settle=1.0)
    second = fleet.worker()
    readers["dip"].poll(3.0)
    assert first.terminate() == 0
    fleet.produce(source, lines[half:])
    check(readers, want)
    assert second.alive()
    assert second.metric("cerfleet_worker_recoveries_total") > 0

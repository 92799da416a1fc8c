"""``cerfleet dev``: ``--example`` finds its example files in the installed package (a
wheel, say in a container image), not next to it in a source checkout; the fleet it
starts goes down with it, whichever signal ends it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import tomllib
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import orjson
import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient

from cerfleet.fleet.dev import EXAMPLE_FILES, EXAMPLE_PACKAGE, example_files
from cerfleet.fleet.settings import FleetSettings

REPO = Path(__file__).resolve().parents[3]


def test_the_bundled_examples_are_the_repository_examples() -> None:
    with example_files() as paths:
        assert sorted(paths) == sorted(EXAMPLE_FILES)
        for name, path in paths.items():
            # examples/ is what the README runs; the package holds copies for wheels.
            assert path.read_bytes() == (REPO / "examples" / name).read_bytes(), (
                f"{EXAMPLE_PACKAGE}/examples/{name} differs from examples/{name}: copy it over"
            )


def test_the_bundled_examples_are_package_data() -> None:
    # A file no glob matches is there in a source checkout but missing from a wheel.
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    globs = config["tool"]["setuptools"]["package-data"].get(EXAMPLE_PACKAGE, [])
    for name in EXAMPLE_FILES:
        assert any(fnmatch(f"examples/{name}", glob) for glob in globs), name


def children_of(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found.update(int(c) for c in (task / "children").read_text().split())
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"  # a zombie has exited; only its parent's wait is missing


@pytest.mark.skipif(
    not any(Path("/proc/self/task").glob("*/children")), reason="reads children from /proc"
)
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP])
def test_dev_takes_its_fleet_down_on_sigterm_and_sighup(stop: signal.Signals) -> None:
    # A session of its own: signals sent to the dev process reach it alone (not a
    # process group, as Ctrl-C would), and the cleanup below can end every process left.
    dev = subprocess.Popen(
        [sys.executable, "-m", "cerfleet.cli", "dev", "--workers", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    fleet: set[int] = set()
    try:
        assert dev.stdout is not None
        for line in dev.stdout:
            if "stops everything" in line:
                break
        fleet = children_of(dev.pid)
        assert len(fleet) == 2, "a coordinator and a worker"
        dev.send_signal(stop)
        assert dev.wait(30) == 0
        deadline = time.monotonic() + 5
        while any(alive(pid) for pid in fleet) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [pid for pid in fleet if alive(pid)], "orphaned fleet processes"
    finally:
        for pid in fleet | {dev.pid}:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        dev.wait()


def run_output(query: Path, events: Path) -> list[dict[str, Any]]:
    result = subprocess.run(
        [sys.executable, "-m", "cerfleet.cli", "run", str(query), str(events), "--quiet"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return [orjson.loads(line) for line in result.stdout.splitlines()]


def by_positions(complex_event: dict[str, Any]) -> list[int]:
    return list(complex_event["positions"])


def read_records(bootstrap: str, topic: str, count: int, timeout: float) -> list[dict[str, Any]]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "test-dev", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    records: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    try:
        while len(records) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                records.append(orjson.loads(msg.value()))
    finally:
        consumer.close()
    return records


def test_dev_example_creates_its_topics_as_asked_and_warns_of_nothing(tmp_path: Path) -> None:
    log = tmp_path / "dev.log"
    with log.open("wb") as stderr:
        dev = subprocess.Popen(
            [sys.executable, "-m", "cerfleet.cli", "dev", "--example", "--workers", "1"],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            start_new_session=True,
        )
    printed: list[str] = []
    try:
        assert dev.stdout is not None
        for line in dev.stdout:
            printed.append(line)
            if "stops everything" in line:
                break
        bootstrap = next(
            line.split("=", 1)[1].strip() for line in printed if "export CERFLEET_" in line
        )
        records = read_records(bootstrap, "stock-matches", 5, timeout=60)
        topics = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics
        counts = {name: len(t.partitions) for name, t in topics.items()}
    finally:
        dev.send_signal(signal.SIGTERM)
        dev.wait(30)
    output = "".join(printed) + dev.stdout.read() + log.read_text()
    assert "WARNING" not in output and "Traceback" not in output, output
    keyed = [name for name in counts if name.startswith("cerfleet.keyed.")]
    checkpoints = [name for name in counts if name.startswith("cerfleet.checkpoints.")]
    assert len(keyed) == len(checkpoints) == 1, counts
    default = FleetSettings.model_fields["output_partitions"].default
    # Coordinator, worker and submit asked for their defaults: 8 partitions each.
    assert counts[keyed[0]] == counts[checkpoints[0]] == counts["stock-matches"] == default
    assert counts["cerfleet.queries"] == counts["stock"] == 1
    # What `cerfleet run` prints of each complex event is in the fleet's record, equal:
    # the example has no PARTITION BY, so its one keyed partition numbers the events
    # as the input file does.
    with example_files() as paths:
        expected = run_output(paths["stock.ceql"], paths["stock.jsonl"])
    assert len(records) == len(expected) == 5
    for record in records:
        assert {"query", "keyed", "sources"} <= set(record)
    fields = set(expected[0])
    got = [{k: record[k] for k in fields} for record in records]
    # Sorted by position, not by str: a dict's str follows its key order, and `fields`
    # iterates in an order that changes with the hash seed.
    assert sorted(got, key=by_positions) == sorted(expected, key=by_positions)

"""The fleet's subcommands through ``cerfleet``'s entry point: ``submit`` validation (no
broker involved), ``--help``, and a registry round trip over the Kafka protocol."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from confluent_kafka import Producer

from cerfleet.cli.main import main
from cerfleet.fleet import registry as registry_module
from cerfleet.fleet import topics as topics_module
from cerfleet.fleet.cli import DEFAULT_IDLE_TIMEOUT
from cerfleet.fleet.topics import partition_count
from tests.kafka_broker import KafkaBroker

GOOD = "SELECT * FROM S WHERE SELL ; BUY PARTITION BY [name]"
# Nothing listens on port 1: a client would hang in retries, not fail at once.
NO_BROKER = "127.0.0.1:1"


@pytest.fixture
def no_kafka(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if ``submit`` gets as far as touching Kafka."""

    def forbidden(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("submit contacted Kafka before validating the query")

    monkeypatch.setattr(topics_module, "ensure_topics", forbidden)
    monkeypatch.setattr(registry_module, "write", forbidden)


def submit_args(name: str, path: Path, *extra: str) -> list[str]:
    return ["submit", name, str(path), "-i", "in", "-o", "out", "-b", NO_BROKER, *extra]


def query_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "query.ceql"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.usefixtures("no_kafka")
def test_submit_rejects_a_broken_query_before_any_kafka_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = query_file(tmp_path, "SELECT * FROM S\nWHERE SELL ;; BUY\n")
    assert main(submit_args("q", path)) == 2
    err = capsys.readouterr().err
    assert err.startswith("cerfleet: line 2, column 13:")
    assert "WHERE SELL ;; BUY" in err and "^" in err


@pytest.mark.usefixtures("no_kafka")
def test_the_guard_sees_a_valid_submit_reach_kafka(tmp_path: Path) -> None:
    # So the tests around it prove that rejected queries never got that far.
    with pytest.raises(AssertionError, match="contacted Kafka"):
        main(submit_args("q", query_file(tmp_path, GOOD)))


@pytest.mark.usefixtures("no_kafka")
def test_submit_rejects_consume_by_any_with_partition_by(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = query_file(tmp_path, GOOD + " CONSUME BY ANY")
    assert main(submit_args("q", path)) == 2
    err = capsys.readouterr().err
    assert "CONSUME BY ANY" in err and "CONSUME BY PARTITION" in err


@pytest.mark.usefixtures("no_kafka")
def test_submit_rejects_an_unknown_attribute(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = query_file(tmp_path, "DECLARE STREAM S { EVENT SELL { price: double } }\n" + GOOD)
    assert main(submit_args("q", path)) == 2
    assert "line 2" in capsys.readouterr().err


@pytest.mark.usefixtures("no_kafka")
@pytest.mark.parametrize(
    "args",
    [("bad name",), ("q", "-o", "")],
    ids=["bad-name", "empty-output-topic"],
)
def test_submit_rejects_invalid_fields_cleanly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...]
) -> None:
    path = query_file(tmp_path, GOOD)
    name, *extra = args
    assert main(submit_args(name, path, *extra)) == 2
    assert capsys.readouterr().err.startswith("cerfleet: ")


@pytest.mark.usefixtures("no_kafka")
def test_submit_reports_a_missing_query_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(submit_args("q", tmp_path / "missing.ceql")) == 2
    assert "missing.ceql" in capsys.readouterr().err


def test_help_lists_the_fleet_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in (
        "coordinator",
        "worker",
        "submit",
        "remove",
        "queries",
        "produce",
        "consume",
        "dev",
    ):
        assert f"\n    {command}" in out, command


@pytest.mark.parametrize("command", ["submit", "remove", "queries", "produce", "consume"])
def test_fleet_commands_take_the_kafka_options(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    for option in ("--bootstrap-servers", "-X KEY=VALUE", "--config", "--registry-topic"):
        assert option in out


def test_submit_help_gives_the_default_output_partitions(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["submit", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "--output-partitions N" in out
    assert "(default 8," in out and "CERFLEET_OUTPUT_PARTITIONS" in out


# ------------------------------------------------------------ through a broker


def test_submit_creates_a_missing_output_topic(
    kafka: KafkaBroker,
    topic_name: Callable[[str], str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Without it, every worker exits on the query's first output ("topic ... does not
    # exist"), and so does each one taking over after it.
    out = topic_name("cli-out")
    fleet = ["-b", kafka.bootstrap_servers, "--registry-topic", topic_name("cli-registry")]
    path = query_file(tmp_path, GOOD)
    args = ["submit", "q", str(path), "-i", "in", "-o", out, "--output-partitions", "3", *fleet]
    assert main(args) == 0
    assert "registered q (version 0)" in capsys.readouterr().err
    # The mock cannot create topics for clients: its auto-creation gives 4 partitions.
    assert partition_count(kafka.client_config(), out) == (4 if kafka.kind == "mock" else 3)


def test_submit_reports_another_partition_count_only_when_one_was_asked_for(
    kafka: KafkaBroker,
    topic_name: Callable[[str], str],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    out = topic_name("cli-out")
    kafka.create_topic(out, 2)
    fleet = ["-b", kafka.bootstrap_servers, "--registry-topic", topic_name("cli-registry")]
    args = ["submit", "q", str(query_file(tmp_path, GOOD)), "-i", "in", "-o", out, *fleet]
    with caplog.at_level(logging.WARNING, logger="cerfleet.fleet.topics"):
        assert main(args) == 0
        assert f"topic '{out}'" not in caplog.text  # the default is no request
        assert main([*args, "--output-partitions", "5"]) == 0
    assert f"topic '{out}' has 2 partitions, 5 wanted" in caplog.text
    assert partition_count(kafka.client_config(), out) == 2


def test_submit_queries_remove_round_trip(
    kafka: KafkaBroker,
    topic_name: Callable[[str], str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    registry = topic_name("cli-registry")
    kafka.create_topic(registry, 1)
    fleet = ["-b", kafka.bootstrap_servers, "--registry-topic", registry]

    def queries() -> list[dict[str, Any]]:
        capsys.readouterr()
        assert main(["queries", *fleet]) == 0
        out, err = capsys.readouterr()
        docs = [orjson.loads(line) for line in out.splitlines()]
        assert err.strip().endswith(f"{len(docs)} queries")
        return docs

    assert queries() == []
    path = query_file(tmp_path, GOOD)
    assert (
        main(
            [
                "submit",
                "q1",
                str(path),
                "-i",
                "in-a",
                "-i",
                "in-b",
                "-o",
                "out",
                "--time-field",
                "at",
                *fleet,
            ]
        )
        == 0
    )
    assert "registered q1 (version 0)" in capsys.readouterr().err
    assert main(["submit", "q2", str(path), "-i", "in-a", "-o", "out", *fleet]) == 0
    assert queries() == [
        {
            "version": 0,
            "name": "q1",
            "ceql": GOOD,
            "input_topics": ["in-a", "in-b"],
            "output_topic": "out",
            "type_field": "type",
            "time_field": "at",
            "max_outputs_per_event": 10_000,
        },
        {
            "version": 1,
            "name": "q2",
            "ceql": GOOD,
            "input_topics": ["in-a"],
            "output_topic": "out",
            "type_field": "type",
            "time_field": "timestamp",
            "max_outputs_per_event": 10_000,
        },
    ]

    assert main(["remove", "q1", *fleet]) == 0
    assert "removed q1 (registry offset 2)" in capsys.readouterr().err
    assert [(d["name"], d["version"]) for d in queries()] == [("q2", 1)]
    # Removing what is not registered is an error, and writes nothing.
    assert main(["remove", "q1", *fleet]) == 2
    assert "no query named 'q1'" in capsys.readouterr().err
    # Submitting again registers a new version.
    assert main(["submit", "q1", str(path), "-i", "in-a", "-o", "out", *fleet]) == 0
    assert [(d["name"], d["version"]) for d in queries()] == [("q1", 3), ("q2", 1)]


def test_consume_as_the_readme_runs_it_ends_by_itself(
    kafka: KafkaBroker, topic_name: Callable[[str], str]
) -> None:
    # `cerfleet consume TOPIC` with no flag, in a process of its own: it prints what the
    # topic holds and gives the prompt back once the topic has been quiet a while.
    topic = topic_name("cli-consume")
    kafka.create_topic(topic, 2)
    producer = Producer(kafka.client_config())
    for i in range(3):
        producer.produce(topic, value=orjson.dumps({"type": "A", "i": i}), partition=i % 2)
    assert producer.flush(10) == 0
    env = {**os.environ, "CERFLEET_BOOTSTRAP_SERVERS": kafka.bootstrap_servers}
    began = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "cerfleet.cli", "consume", topic],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,  # today's default would wait for records forever
        check=False,
    )
    elapsed = time.monotonic() - began
    assert result.returncode == 0, result.stderr
    assert sorted(orjson.loads(line)["i"] for line in result.stdout.splitlines()) == [0, 1, 2]
    assert f"consumed 3 records from {topic}" in result.stderr
    assert elapsed < DEFAULT_IDLE_TIMEOUT + 10


def test_consume_unique_prints_each_complex_event_once(
    kafka: KafkaBroker, topic_name: Callable[[str], str]
) -> None:
    # An output topic where a stalled worker's copy of seq 1 arrived after its successor's
    # (README, "Rebalances never stall"), beside another origin's outputs and a record
    # with no origin at all.
    topic = topic_name("cli-unique")
    kafka.create_topic(topic, 1)
    producer = Producer(kafka.client_config())
    records = [("k.0:2:q:1", 0), ("k.0:2:q:1", 1), ("k.0:5:q:1", 0), ("k.0:2:q:1", 1)]
    records += [("k.0:2:q:1", 2), (None, 0), ("k.0:2:q:1", 0)]
    for i, (origin, seq) in enumerate(records):
        headers = None if origin is None else [("cerfleet-origin", f"{origin}:{seq}")]
        producer.produce(topic, value=orjson.dumps({"i": i}), headers=headers)
    assert producer.flush(10) == 0
    env = {**os.environ, "CERFLEET_BOOTSTRAP_SERVERS": kafka.bootstrap_servers}
    command = [sys.executable, "-m", "cerfleet.cli", "consume", topic, "--unique"]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert [orjson.loads(line)["i"] for line in result.stdout.splitlines()] == [0, 1, 2, 4, 5]
    assert f"consumed 5 records from {topic}, skipped 2 repeated" in result.stderr


def test_consume_follow_keeps_waiting(kafka: KafkaBroker, topic_name: Callable[[str], str]) -> None:
    topic = topic_name("cli-follow")
    kafka.create_topic(topic, 1)
    command = [sys.executable, "-m", "cerfleet.cli", "consume", topic, "--follow"]
    env = {**os.environ, "CERFLEET_BOOTSTRAP_SERVERS": kafka.bootstrap_servers}
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as p:
        try:
            with pytest.raises(subprocess.TimeoutExpired):
                p.wait(DEFAULT_IDLE_TIMEOUT + 2)
        finally:
            p.send_signal(signal.SIGINT)  # Ctrl-C: the way out of --follow
            p.wait(10)
    assert p.returncode == 0


MR = (
    "SELECT * FROM S MATCH_RECOGNIZE (\n  PARTITION BY name\n  PATTERN (A B+)\n"
    "  DEFINE B AS B.v < A.v\n)"
)
# Refused by the MATCH_RECOGNIZE compiler: C is no variable of the pattern.
MR_BAD = MR.replace("DEFINE B AS B.v", "DEFINE C AS C.v")


@pytest.mark.usefixtures("no_kafka")
def test_submit_compiles_match_recognize_as_such_before_any_kafka_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Detected from the text: the MR compiler's own message, with line and column.
    path = query_file(tmp_path, MR_BAD)
    assert main(submit_args("q", path)) == 2
    err = capsys.readouterr().err
    assert err.startswith("cerfleet: line 4, column 10: DEFINE C: C is not a variable")
    # Told: as CEQL the same text fails in the CEQL parser instead.
    assert main(submit_args("q", path, "--language", "ceql")) == 2
    assert "DEFINE C" not in capsys.readouterr().err
    # As SPAseq (which the fleet runs too): the SPAseq parser's error, with its position.
    assert main(submit_args("q", path, "--language", "spaseq")) == 2
    err = capsys.readouterr().err
    assert err.startswith("cerfleet: line 1, column 15: unexpected 'S'")
    assert "expected STREAM" in err


def test_submit_registers_match_recognize_with_its_language(
    kafka: KafkaBroker,
    topic_name: Callable[[str], str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    registry = topic_name("cli-registry-mr")
    kafka.create_topic(registry, 1)
    fleet = ["-b", kafka.bootstrap_servers, "--registry-topic", registry]
    text = MR.replace("B+", "B")
    path = query_file(tmp_path, text)
    assert main(["submit", "mr", str(path), "-i", "in", "-o", topic_name("mr-out"), *fleet]) == 0
    capsys.readouterr()
    assert main(["queries", *fleet]) == 0
    [doc] = [orjson.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert (doc["ceql"], doc["language"]) == (text, "match_recognize")

"""Settings: flags > ``CERFLEET_…`` environment > TOML file (``--config``) > defaults."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from cerfleet.errors import CerfleetError
from cerfleet.fleet.service import add_fleet_options, add_service_options, settings_from_args
from cerfleet.fleet.settings import (
    CoordinatorSettings,
    FleetSettings,
    WorkerSettings,
    load_settings,
)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No ``CERFLEET_…`` variable of the caller's environment leaks into these tests."""
    for name in list(os.environ):
        if name.upper().startswith("CERFLEET_"):
            monkeypatch.delenv(name)
    yield


def toml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cerfleet.toml"
    path.write_text(text, encoding="utf-8")
    return path


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_fleet_options(parser)
    add_service_options(parser)
    return parser.parse_args(list(argv))


def test_defaults() -> None:
    s = load_settings(WorkerSettings, None, {})
    assert s.bootstrap_servers == "localhost:9092"
    assert s.kafka == s.consumer == s.producer == {}
    assert s.registry_topic == "cerfleet.queries"
    assert s.keyed_topic_prefix == "cerfleet.keyed."
    assert s.dead_letter_topic == "cerfleet.dead-letters"
    assert s.metrics_port is None
    assert (s.group_id, s.batch_size, s.transactions) == ("cerfleet-workers", 2_000, False)
    assert s.checkpoint_interval == 1.0 and s.registry_wait == 30.0
    c = load_settings(CoordinatorSettings, None, {})
    assert (c.group_id, c.keyed_partitions, c.batch_size) == ("cerfleet-coordinator", 8, 10_000)


def test_priority_flags_env_file_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = toml(
        tmp_path,
        'bootstrap_servers = "file:9092"\n'
        'group_id = "file-group"\n'
        "batch_size = 5\n"
        'registry_topic = "file.queries"\n',
    )
    monkeypatch.setenv("CERFLEET_BOOTSTRAP_SERVERS", "env:9092")
    monkeypatch.setenv("CERFLEET_GROUP_ID", "env-group")
    monkeypatch.setenv("CERFLEET_CHECKPOINT_INTERVAL", "2.5")
    s = load_settings(
        WorkerSettings,
        path,
        {"bootstrap_servers": "flag:9092", "registry_topic": None, "transactions": None},
    )
    assert s.bootstrap_servers == "flag:9092"  # flag over env and file
    assert s.group_id == "env-group"  # env over file
    assert s.checkpoint_interval == 2.5  # env over default
    assert s.batch_size == 5  # file over default
    assert s.registry_topic == "file.queries"  # an unset flag (None) does not count
    assert s.transactions is False  # default


def test_the_file_is_read_only_when_given(tmp_path: Path) -> None:
    path = toml(tmp_path, 'bootstrap_servers = "file:9092"\n')
    assert load_settings(WorkerSettings, str(path), {}).bootstrap_servers == "file:9092"
    assert load_settings(WorkerSettings, None, {}).bootstrap_servers == "localhost:9092"


def test_dict_settings_from_env_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CERFLEET_KAFKA", '{"security.protocol": "SASL_SSL"}')
    monkeypatch.setenv("CERFLEET_CONSUMER", '{"fetch.max.bytes": 1048576, "check.crcs": true}')
    monkeypatch.setenv("CERFLEET_METRICS_PORT", "9100")
    s = load_settings(WorkerSettings, None, {})
    assert s.kafka == {"security.protocol": "SASL_SSL"}
    assert s.consumer == {"fetch.max.bytes": "1048576", "check.crcs": "true"}
    assert s.metrics_port == 9100


def test_toml_kafka_tables_are_stringified(tmp_path: Path) -> None:
    path = toml(
        tmp_path,
        "[kafka]\n"
        '"socket.timeout.ms" = 100\n'
        '"enable.ssl.certificate.verification" = false\n'
        '"sasl.mechanism" = "PLAIN"\n'
        "[producer]\n"
        '"enable.idempotence" = true\n'
        '"linger.ms" = 2.5\n',
    )
    s = load_settings(WorkerSettings, path, {})
    assert s.kafka == {
        "socket.timeout.ms": "100",
        "enable.ssl.certificate.verification": "false",
        "sasl.mechanism": "PLAIN",
    }
    assert s.producer == {"enable.idempotence": "true", "linger.ms": "2.5"}


def test_dict_settings_merge_env_over_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = toml(tmp_path, '[kafka]\n"a" = "file"\n"b" = "file"\n')
    monkeypatch.setenv("CERFLEET_KAFKA", '{"b": "env", "c": "env"}')
    s = load_settings(WorkerSettings, path, {})
    assert s.kafka == {"a": "file", "b": "env", "c": "env"}


def test_x_properties_add_to_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CERFLEET_KAFKA", '{"security.protocol": "SASL_SSL", "b": "env"}')
    monkeypatch.setenv("CERFLEET_BOOTSTRAP_SERVERS", "env:9092")
    s = settings_from_args(
        WorkerSettings,
        parse("-X", "sasl.mechanism=PLAIN", "-X", " b = flag ", "-X", "empty=", "-b", "flag:1"),
        group_id="g",
        batch_size=None,
    )
    assert s.kafka == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "b": "flag",
        "empty": "",
    }
    assert s.bootstrap_servers == "flag:1"
    assert s.group_id == "g" and s.batch_size == 2_000
    assert s.client_config() == {"bootstrap.servers": "flag:1", **s.kafka}


def test_x_values_may_hold_equals_signs() -> None:
    s = settings_from_args(FleetSettings, parse("-X", "sasl.jaas.config=a=b c=d"))
    assert s.kafka == {"sasl.jaas.config": "a=b c=d"}


@pytest.mark.parametrize("item", ["novalue", "=value"])
def test_x_needs_key_equals_value(item: str) -> None:
    with pytest.raises(CerfleetError, match="KEY=VALUE"):
        settings_from_args(FleetSettings, parse("-X", item))


def test_flags_of_every_fleet_option(tmp_path: Path) -> None:
    s = settings_from_args(
        WorkerSettings,
        parse(
            "--registry-topic",
            "r",
            "--keyed-topic-prefix",
            "k.",
            "--dead-letter-topic",
            "d",
            "--metrics-port",
            "0",
            "--log-level",
            "DEBUG",
        ),
    )
    assert (s.registry_topic, s.keyed_topic_prefix, s.dead_letter_topic) == ("r", "k.", "d")
    assert s.metrics_port == 0 and s.log_level == "DEBUG"


def test_an_unknown_key_in_the_file_is_rejected(tmp_path: Path) -> None:
    path = toml(tmp_path, 'bootstrap_servers = "file:9092"\nbootstrap_server = "typo:9092"\n')
    with pytest.raises(ValidationError, match="bootstrap_server"):
        load_settings(WorkerSettings, path, {})
    with pytest.raises(
        CerfleetError,
        match=r"invalid settings(.|\n)*bootstrap_server(.|\n)*"
        r"Extra inputs are not permitted",
    ):
        settings_from_args(WorkerSettings, parse("--config", str(path)))


def test_a_key_of_another_process_kind_is_rejected(tmp_path: Path) -> None:
    # Worker-only settings are unknown to the coordinator (and to submit, remove, …).
    path = toml(tmp_path, "checkpoint_interval = 2.0\n")
    assert load_settings(WorkerSettings, path, {}).checkpoint_interval == 2.0
    with pytest.raises(ValidationError, match="checkpoint_interval"):
        load_settings(CoordinatorSettings, path, {})


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("batch_size = 0\n", "batch_size"),
        ("checkpoint_interval = 0\n", "checkpoint_interval"),
        ('metrics_port = "http"\n', "metrics_port"),
        ('kafka = "not a table"\n', "kafka"),
    ],
)
def test_invalid_values_are_rejected(tmp_path: Path, text: str, field: str) -> None:
    with pytest.raises(CerfleetError, match=field):
        settings_from_args(WorkerSettings, parse("--config", str(toml(tmp_path, text))))


def test_a_missing_config_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(CerfleetError, match=r"missing\.toml"):
        settings_from_args(FleetSettings, parse("--config", str(tmp_path / "missing.toml")))


def test_a_broken_config_file_is_a_cerfleet_error(tmp_path: Path) -> None:
    path = toml(tmp_path, "bootstrap_servers = \n")
    with pytest.raises(CerfleetError):
        settings_from_args(FleetSettings, parse("--config", str(path)))


def test_invalid_json_in_the_environment_is_a_cerfleet_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CERFLEET_KAFKA", "security.protocol=SASL_SSL")
    with pytest.raises(CerfleetError, match=r"CERFLEET_KAFKA|kafka"):
        settings_from_args(FleetSettings, parse())


def test_client_consumer_and_producer_configs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CERFLEET_KAFKA", '{"security.protocol": "SSL", "client.id": "all"}')
    monkeypatch.setenv("CERFLEET_CONSUMER", '{"client.id": "consumer", "fetch.wait.max.ms": 5}')
    monkeypatch.setenv("CERFLEET_PRODUCER", '{"linger.ms": "20"}')
    s = load_settings(FleetSettings, None, {"bootstrap_servers": "b:1"})
    client = {"bootstrap.servers": "b:1", "security.protocol": "SSL", "client.id": "all"}
    assert s.client_config() == client
    # The code's own settings override the common ones; the user's per-kind ones win.
    assert s.consumer_config(**{"group.id": "g", "fetch.wait.max.ms": "100"}) == {
        **client,
        "fetch.queue.backoff.ms": "10",  # every consumer's (``FETCHING_CONSUMER``)
        "group.id": "g",
        "client.id": "consumer",
        "fetch.wait.max.ms": "5",
    }
    # ... which the code and the user can still set.
    assert s.consumer_config(**{"fetch.queue.backoff.ms": "50"})["fetch.queue.backoff.ms"] == "50"
    monkeypatch.setenv("CERFLEET_CONSUMER", '{"fetch.queue.backoff.ms": "1000"}')
    user = load_settings(FleetSettings, None, {"bootstrap_servers": "b:1"})
    assert (
        user.consumer_config(**{"fetch.queue.backoff.ms": "50"})["fetch.queue.backoff.ms"] == "1000"
    )
    assert s.producer_config(**{"linger.ms": "5", "acks": "all"}) == {
        **client,
        "linger.ms": "20",
        "acks": "all",
    }
    # Building configs leaves the settings as they were.
    assert s.kafka == {"security.protocol": "SSL", "client.id": "all"}
    assert s.consumer == {"client.id": "consumer", "fetch.wait.max.ms": "5"}

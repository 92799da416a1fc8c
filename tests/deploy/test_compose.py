"""docker-compose.yml and its Prometheus and Grafana configuration, checked against the
CLI, the settings classes and each other."""

from __future__ import annotations

import re
import shlex
from typing import Any
from urllib.parse import urlparse

import pytest

from cerfleet.fleet.registry import QuerySpec
from cerfleet.fleet.settings import FleetSettings
from tests.deploy.artefacts import (
    COMPOSE,
    DASHBOARD,
    GRAFANA_PROVISIONING,
    PROMETHEUS_CONFIG,
    REPO,
    SETTINGS_BY_COMMAND,
    cerfleet_lines,
    dockerfile_stages,
    load_compose,
    load_settings_from_env,
    load_yaml,
    parse_cli,
    settings_env_vars,
)

FLEET_SERVICES = ("coordinator", "worker")


@pytest.fixture(scope="module")
def services() -> dict[str, Any]:
    result = load_compose()["services"]
    assert isinstance(result, dict)
    return result


def cerfleet_services(services: dict[str, Any]) -> dict[str, Any]:
    return {n: s for n, s in services.items() if str(s.get("image", "")).startswith("cerfleet")}


def invocations(service: dict[str, Any]) -> list[list[str]]:
    """The cerfleet command lines a service runs (argv without the program name)."""
    command = service.get("command", [])
    if isinstance(command, str):
        command = shlex.split(command)
    entrypoint = service.get("entrypoint")
    if entrypoint is None:  # the image's: cerfleet
        return [list(command)]
    assert entrypoint[0] in ("/bin/sh", "sh"), f"unexpected entrypoint {entrypoint}"
    return [argv for script in command for argv in cerfleet_lines(script)]


def metrics_port(service: dict[str, Any]) -> int:
    return int(service["environment"]["CERFLEET_METRICS_PORT"])


def env(service: dict[str, Any]) -> dict[str, str]:
    return {k: str(v) for k, v in service.get("environment", {}).items()}


def test_the_compose_file_is_yaml_with_the_fleet_broker_and_monitoring(
    services: dict[str, Any],
) -> None:
    assert {"broker", "coordinator", "worker", "setup", "prometheus", "grafana"} <= set(services)


def test_every_cerfleet_command_line_in_compose_parses_with_the_real_cli(
    services: dict[str, Any],
) -> None:
    seen = []
    for name, service in cerfleet_services(services).items():
        for argv in invocations(service):
            parse_cli(argv)
            seen.append((name, argv[0]))
    assert ("coordinator", "coordinator") in seen and ("worker", "worker") in seen
    assert ("setup", "submit") in seen and ("setup", "produce") in seen


def test_every_cerfleet_variable_in_compose_is_a_field_of_the_settings_the_command_reads(
    services: dict[str, Any],
) -> None:
    for name, service in cerfleet_services(services).items():
        variables = {k for k in env(service) if k.startswith("CERFLEET_")}
        for argv in invocations(service):
            cls = SETTINGS_BY_COMMAND.get(argv[0], FleetSettings)
            unknown = variables - settings_env_vars(cls)
            assert not unknown, f"{name} ({argv[0]}): {unknown} are not {cls.__name__} fields"


def test_the_compose_environment_loads_into_the_settings_classes(
    services: dict[str, Any],
) -> None:
    # JSON-valued variables (CERFLEET_CONSUMER) fail here when they do not parse.
    for name, service in cerfleet_services(services).items():
        for argv in invocations(service):
            cls = SETTINGS_BY_COMMAND.get(argv[0], FleetSettings)
            settings = load_settings_from_env(cls, env(service))
            assert settings.bootstrap_servers == "broker:19092", name


def test_fleet_services_build_the_slim_target_of_the_dockerfile(services: dict[str, Any]) -> None:
    stages = {stage.name for stage in dockerfile_stages()}
    for name, service in cerfleet_services(services).items():
        assert service["build"]["context"] == "."
        assert service["build"]["target"] == "runtime" in stages, name


def test_the_broker_runs_kraft_with_a_host_and_an_internal_listener(
    services: dict[str, Any],
) -> None:
    broker = services["broker"]
    assert broker["image"].startswith("apache/kafka:")
    e = env(broker)
    assert set(e["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
    advertised = dict(
        (listener.split("://")[0], listener.split("://")[1])
        for listener in e["KAFKA_ADVERTISED_LISTENERS"].split(",")
    )
    assert "localhost:9092" in advertised.values()
    assert "9092:9092" in broker["ports"]
    # Containers use the internal listener, advertised under the broker's service name.
    bootstrap = env(services["coordinator"])["CERFLEET_BOOTSTRAP_SERVERS"]
    assert bootstrap in advertised.values() and bootstrap.startswith("broker:")
    assert e["KAFKA_CONTROLLER_QUORUM_VOTERS"].startswith(f"{e['KAFKA_NODE_ID']}@broker:")
    assert "healthcheck" in broker


def test_everything_using_kafka_waits_for_a_healthy_broker(services: dict[str, Any]) -> None:
    for name, service in cerfleet_services(services).items():
        assert service["depends_on"]["broker"]["condition"] == "service_healthy", name


def test_submit_and_the_workers_create_output_topics_with_one_partition_count(
    services: dict[str, Any],
) -> None:
    """Either may create the example's output topic first: it gets the same partitions
    whichever does, as many as the coordinator's keyed topics have."""

    def settings(name: str, command: str) -> Any:
        return load_settings_from_env(
            SETTINGS_BY_COMMAND.get(command, FleetSettings), env(services[name])
        )

    submit = parse_cli(next(a for a in invocations(services["setup"]) if a[0] == "submit"))
    by_submit = submit.output_partitions or settings("setup", "submit").output_partitions
    by_workers = settings("worker", "worker").output_partitions
    assert by_submit == by_workers == settings("coordinator", "coordinator").keyed_partitions


def test_the_setup_service_registers_a_query_that_compiles_and_produces_to_its_input(
    services: dict[str, Any],
) -> None:
    argvs = invocations(services["setup"])
    submit = parse_cli(next(a for a in argvs if a[0] == "submit"))
    produce = parse_cli(next(a for a in argvs if a[0] == "produce"))
    # The image's working directory holds examples/, as the repository root does.
    text = (REPO / submit.query).read_text(encoding="utf-8")
    QuerySpec(
        name=submit.name,
        ceql=text,
        input_topics=tuple(submit.input_topic),
        output_topic=submit.output_topic,
        type_field=submit.type_field,
        time_field=submit.time_field,
    ).compile()
    assert (REPO / produce.file).is_file()
    assert produce.topic in submit.input_topic
    assert [a[0] for a in argvs] == ["submit", "produce"], "register before producing"


def test_workers_run_two_scalable_replicas(services: dict[str, Any]) -> None:
    worker = services["worker"]
    assert worker["deploy"]["replicas"] == 2
    # Either would make `docker compose up --scale worker=N` fail for N > 1.
    assert "container_name" not in worker
    assert "ports" not in worker


def test_fleet_processes_get_more_stop_time_than_dockers_default(
    services: dict[str, Any],
) -> None:
    for name in FLEET_SERVICES:
        grace = services[name]["stop_grace_period"]
        assert re.fullmatch(r"\d+s", grace) and int(grace[:-1]) > 10, name
    # The worker's last checkpoint may take two producer flushes of 60 s each.
    assert int(services["worker"]["stop_grace_period"][:-1]) > 120


def test_healthchecks_probe_healthz_on_the_metrics_port(services: dict[str, Any]) -> None:
    for name in FLEET_SERVICES:
        test = " ".join(services[name]["healthcheck"]["test"])
        match = re.search(r"http://localhost:(\d+)/healthz", test)
        assert match, name
        assert int(match.group(1)) == metrics_port(services[name])


def test_prometheus_finds_the_coordinator_and_every_worker_replica_on_the_metrics_port(
    services: dict[str, Any],
) -> None:
    config = load_yaml(PROMETHEUS_CONFIG)
    mount = f"./{PROMETHEUS_CONFIG.relative_to(REPO)}:/etc/prometheus/prometheus.yml:ro"
    assert mount in services["prometheus"]["volumes"]
    found: dict[str, int] = {}
    for job in config["scrape_configs"]:
        for sd in job.get("dns_sd_configs", []):
            # Type A: one record per replica, so `--scale worker=N` needs no change here.
            assert sd["type"] == "A"
            for name in sd["names"]:
                found[name] = sd["port"]
    assert found == {name: metrics_port(services[name]) for name in FLEET_SERVICES}


def test_grafana_provisions_prometheus_and_mounts_the_charts_dashboard(
    services: dict[str, Any],
) -> None:
    grafana = services["grafana"]
    volumes = {v.split(":")[0]: v.split(":")[1] for v in grafana["volumes"]}
    assert volumes[f"./{GRAFANA_PROVISIONING.relative_to(REPO)}"] == "/etc/grafana/provisioning"
    dashboard_in_container = volumes[f"./{DASHBOARD.relative_to(REPO)}"]

    providers = load_yaml(GRAFANA_PROVISIONING / "dashboards" / "cerfleet.yml")["providers"]
    paths = {p["options"]["path"] for p in providers}
    assert any(dashboard_in_container.startswith(path.rstrip("/") + "/") for path in paths)
    home = grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert home == dashboard_in_container

    datasources = load_yaml(GRAFANA_PROVISIONING / "datasources" / "prometheus.yml")
    (source,) = datasources["datasources"]
    assert source["type"] == "prometheus" and source["isDefault"]
    url = urlparse(source["url"])
    assert url.hostname in services and url.hostname == "prometheus"
    assert f"{url.port}:{url.port}" in services["prometheus"]["ports"]


def test_the_compose_file_mentions_only_commands_and_flags_the_cli_has() -> None:
    # The usage comments at the top are what people copy.
    checked = 0
    for line in COMPOSE.read_text(encoding="utf-8").splitlines():
        match = re.search(r"\bcerfleet (\w[\w-]*.*)$", line)
        if match and line.lstrip().startswith("#") and "compose" in line:
            parse_cli(shlex.split(match.group(1)))
            checked += 1
    assert checked

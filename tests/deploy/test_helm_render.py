"""The chart rendered by ``helm template`` with its default values and each override in
``ci/``: valid manifests whose commands, settings, ports, probes and security contexts
agree with the CLI, the settings classes and each other.

Skipped when no ``helm`` is on PATH, unless ``CERFLEET_REQUIRE_HELM=1`` (as in CI), which
turns a missing binary into a failure.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from cerfleet.bounds import DEFAULT_MAX_OUTPUTS_PER_EVENT
from cerfleet.fleet.registry import QuerySpec
from cerfleet.fleet.settings import CoordinatorSettings, FleetSettings
from tests.deploy.artefacts import (
    CHART,
    CI_VALUES,
    DASHBOARD,
    SETTINGS_BY_COMMAND,
    cerfleet_lines,
    load_settings_from_env,
    load_values,
    parse_cli,
    settings_env_vars,
)

HELM = shutil.which("helm")
if HELM is None and os.environ.get("CERFLEET_REQUIRE_HELM") != "1":
    pytest.skip("no helm binary on PATH", allow_module_level=True)

RELEASE = "rel"
API_VERSIONS = {
    "ConfigMap": "v1",
    "CronJob": "batch/v1",
    "Deployment": "apps/v1",
    "Job": "batch/v1",
    "PodDisruptionBudget": "policy/v1",
    "ScaledObject": "keda.sh/v1alpha1",
    "Service": "v1",
    "ServiceAccount": "v1",
    "ServiceMonitor": "monitoring.coreos.com/v1",
    "TriggerAuthentication": "keda.sh/v1alpha1",
}
# The worker's worst case after SIGTERM (workers/worker.py): a last checkpoint of two
# producer flushes of 60 s, with transactions 30 s to send offsets and 60 s to commit,
# then a 10 s flush while leaving the group.
WORKER_STOP_BUDGET_S = 60 + 60 + 30 + 60 + 10
VALUE_FILES = [None, *CI_VALUES]


def helm(*args: str) -> subprocess.CompletedProcess[str]:
    assert HELM is not None, "CERFLEET_REQUIRE_HELM=1 but no helm binary on PATH"
    return subprocess.run([HELM, *args], capture_output=True, text=True, timeout=60, check=False)


def render(values: Path | None, *extra: str) -> list[dict[str, Any]]:
    args = ["template", RELEASE, str(CHART), "--namespace", "fleet"]
    if values is not None:
        args += ["--values", str(values)]
    result = helm(*args, *extra)
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


@pytest.fixture(
    scope="module", params=VALUE_FILES, ids=lambda p: "default" if p is None else p.stem
)
def rendered(request: pytest.FixtureRequest) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    values_file: Path | None = request.param
    values = load_values(values_file) if values_file is not None else load_values()
    return values, render(values_file)


def by_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def named(docs: list[dict[str, Any]], kind: str, suffix: str) -> dict[str, Any]:
    (doc,) = [d for d in by_kind(docs, kind) if d["metadata"]["name"].endswith(suffix)]
    return doc


def pod_specs(docs: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    for doc in docs:
        if doc["kind"] in ("Deployment", "Job"):
            yield doc["metadata"]["name"], doc["spec"]["template"]["spec"]
        elif doc["kind"] == "CronJob":
            yield doc["metadata"]["name"], doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]


def container_env(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}


def expand(arg: str, container: dict[str, Any]) -> str:
    """Kubernetes' $(VAR) expansion in args, with secrets standing in as placeholders."""
    names = {e["name"] for e in container.get("env", [])}

    def sub(match: re.Match[str]) -> str:
        assert match.group(1) in names, f"$({match.group(1)}) is not in the container's env"
        return f"<{match.group(1)}>"

    return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", sub, arg)


def invocations(container: dict[str, Any]) -> list[list[str]]:
    """cerfleet command lines a container runs (argv without the program name)."""
    if "command" not in container:  # the image's entry point: cerfleet
        return [[expand(a, container) for a in container["args"]]]
    assert container["command"][:2] == ["/bin/sh", "-ec"]
    return [argv for script in container["args"] for argv in cerfleet_lines(script)]


# -- helm itself ----------------------------------------------------------------------


@pytest.mark.parametrize("values", VALUE_FILES, ids=lambda p: "default" if p is None else p.stem)
def test_helm_lint_strict_passes(values: Path | None) -> None:
    args = ["lint", "--strict", str(CHART)]
    if values is not None:
        args += ["--values", str(values)]
    result = helm(*args)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("setting", "named"),
    [
        ("worker.replicas=3", "replicas"),
        ("metrics.port=80", "port"),
        ("kafka.securityProtocol=SASL_SSL", "existingSecret"),
    ],
)
def test_helm_enforces_the_schema(setting: str, named: str) -> None:
    result = helm("template", RELEASE, str(CHART), "--set", setting)
    assert result.returncode != 0
    assert "schema" in result.stderr and named in result.stderr, result.stderr


def test_helm_rejects_sasl_without_a_user_name() -> None:
    sasl = ["--set", "kafka.securityProtocol=SASL_SSL", "--set", "kafka.existingSecret=kafka"]
    result = helm("template", RELEASE, str(CHART), *sasl)
    assert result.returncode != 0
    assert "kafka.sasl.username or kafka.secretKeys.saslUsername" in result.stderr


def test_helm_rejects_a_query_listed_twice(tmp_path: Path) -> None:
    query = "{name: q, query: 'SELECT * FROM S WHERE A', inputTopics: [i], outputTopic: o}"
    values = tmp_path / "twice.yaml"
    values.write_text(f"queries: [{query}, {query}]\n", encoding="utf-8")
    result = helm("template", RELEASE, str(CHART), "--values", str(values))
    assert result.returncode != 0
    assert '"q" is listed twice' in result.stderr


# -- rendered manifests --------------------------------------------------------------


def test_every_document_has_a_known_kind_and_its_api_version(
    rendered: tuple[dict[str, Any], list[dict[str, Any]]],
) -> None:
    _, docs = rendered
    for doc in docs:
        assert doc["apiVersion"] == API_VERSIONS[doc["kind"]], doc["kind"]
        assert doc["metadata"]["name"].startswith(f"{RELEASE}-cerfleet")
        assert len(doc["metadata"]["name"]) <= 63


def test_optional_resources_follow_their_switches(
    rendered: tuple[dict[str, Any], list[dict[str, Any]]],
) -> None:
    values, docs = rendered
    kinds = {d["kind"] for d in docs}
    assert ("ServiceMonitor" in kinds) == values["serviceMonitor"]["enabled"]
    assert ("ScaledObject" in kinds) == values["keda"]["enabled"]
    assert ("PodDisruptionBudget" in kinds) == values["worker"]["pdb"]["enabled"]
    jobs = {d["metadata"]["name"] for d in docs if d["kind"] in ("Job", "CronJob")}
    submit = bool(values["submitJob"]["enabled"] and values["queries"])
    assert (f"{RELEASE}-cerfleet-submit" in jobs) == submit
    assert (f"{RELEASE}-cerfleet-backfill" in jobs) == values["backfill"]["enabled"]
    assert len(by_kind(docs, "Deployment")) == 2
    assert len(by_kind(docs, "Service")) == 2


def test_pods_run_non_root_read_only_without_capabilities(
    rendered: tuple[dict[str, Any], list[dict[str, Any]]],
) -> None:
    _, docs = rendered
    for name, spec in pod_specs(docs):
        pod = spec["securityContext"]
        assert pod["runAsNonRoot"] is True and pod["runAsUser"] == 10001, name
        assert pod["seccompProfile"]["type"] == "RuntimeDefault", name
        assert spec["automountServiceAccountToken"] is False, name
        for container in spec["containers"]:
            ctx = container["securityContext"]
            assert ctx["readOnlyRootFilesystem"] is True, name
            assert ctx["allowPrivilegeEscalation"] is False, name
            assert ctx["capabilities"]["drop"] == ["ALL"], name
            assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"], name


def test_deployments_probe_healthz_on_the_port_the_process_serves_metrics_on(
    rendered: tuple[dict[str, Any], list[dict[str, Any]]],
) -> None:
    values, docs = rendered
    for deployment in by_kind(docs, "Deployment"):
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        (argv,) = invocations(container)
        cls = SETTINGS_BY_COMMAND[argv[0]]
        settings = load_settings_from_env(cls, container_env(container))
        assert ports == {"metrics": values["metrics"]["port"]}
        assert settings.metrics_port == values["metrics"]["port"]
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            get = container[probe]["httpGet"]
            assert get["path"] == "/healthz" and get["port"] == "metrics", probe


def test_metrics_services_select_their_pods_on_the_metrics_port(
    rendered: tuple[dict[str, Any], list[dict[str, Any]]],
) -> None:
    values, docs = rendered
    for component in ("coordinator", "worker"):
        service = named(docs, "Service", f"-{component}")
        deployment = named(docs, "Deployment", f"-{component}")
        pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert service["spec"]["selector"].items() <= pod_labels.items()
        (port,) = service["spec"]["ports"]
        assert port["name"] == "metrics" and port["targetPort"] == "metrics"
        assert port["port"] == values["metrics"]["port"]


def test_containers_run_commands_the_cli_accepts_with_settings_it_reads(
    rendered: tuple[dict[str, Any], list[dict[str, Any]]],
) -> None:
    _, docs = rendered
    commands = set()
    for name, spec in pod_specs(docs):
        for container in spec["containers"]:
            env = container_env(container)
            for argv in invocations(container):
                parse_cli(argv)
                commands.add(argv[0])
                cls = SETTINGS_BY_COMMAND.get(argv[0], FleetSettings)
                variables = {k for k in env if k.startswith("CERFLEET_")}
                assert variables <= settings_env_vars(cls), (
                    name,
                    variables - settings_env_vars(cls),
                )
                # Loads: JSON-valued variables parse, numbers are numbers.
                load_settings_from_env(cls, env)
    assert {"coordinator", "worker"} <= commands


def test_settings_reach_the_processes_as_values_say(
    rendered: tuple[dict[str, Any], list[dict[str, Any]]],
) -> None:
    values, docs = rendered
    for component in ("coordinator", "worker"):
        (container,) = named(docs, "Deployment", f"-{component}")["spec"]["template"]["spec"][
            "containers"
        ]
        (argv,) = invocations(container)
        settings = load_settings_from_env(SETTINGS_BY_COMMAND[argv[0]], container_env(container))
        assert settings.bootstrap_servers == values["kafka"]["bootstrapServers"]
        assert settings.group_id == values[component]["groupId"]
        assert settings.kafka["security.protocol"] == values["kafka"]["securityProtocol"]
        assert settings.registry_topic == values["fleet"]["registryTopic"]
        for key, value in values["kafka"]["properties"].items():
            assert settings.kafka[key] == (
                str(value).lower() if isinstance(value, bool) else str(value)
            )
        for key in values["kafka"]["consumer"]:
            assert key in settings.consumer
    worker = named(docs, "Deployment", "-worker")
    (container,) = worker["spec"]["template"]["spec"]["containers"]
    settings = load_settings_from_env(SETTINGS_BY_COMMAND["worker"], container_env(container))
    assert settings.transactions == values["worker"]["transactions"]
    assert settings.query_time_budget == values["worker"]["queryTimeBudget"]
    assert settings.output_partitions == values["fleet"]["outputPartitions"]


def test_counts_over_a_million_reach_the_processes_as_integers(tmp_path: Path) -> None:
    # Not the defaults: a value the chart dropped would read as the setting's own default.
    # From a values file helm reads numbers as floats, which print as 2e+06 unless made
    # integers.
    values = tmp_path / "values.yaml"
    values.write_text(
        "coordinator:\n  mergeBuffer: 2000000\n  batchSize: 3000000\n"
        "worker:\n  batchSize: 4000000\n  maxOutputsPerEvent: 5000000\n"
        "fleet:\n  outputPartitions: 6000000\n",
        encoding="utf-8",
    )
    docs = render(values)
    (container,) = named(docs, "Deployment", "-coordinator")["spec"]["template"]["spec"][
        "containers"
    ]
    coordinator = load_settings_from_env(CoordinatorSettings, container_env(container))
    assert (coordinator.merge_buffer, coordinator.batch_size) == (2_000_000, 3_000_000)
    (container,) = named(docs, "Deployment", "-worker")["spec"]["template"]["spec"]["containers"]
    worker = load_settings_from_env(SETTINGS_BY_COMMAND["worker"], container_env(container))
    assert (worker.batch_size, worker.max_outputs_per_event) == (4_000_000, 5_000_000)
    assert worker.output_partitions == 6_000_000


def test_sasl_credentials_come_from_the_existing_secret_never_from_values(
    rendered: tuple[dict[str, Any], list[dict[str, Any]]],
) -> None:
    values, docs = rendered
    kafka = values["kafka"]
    for name, spec in pod_specs(docs):
        for container in spec["containers"]:
            env = {e["name"]: e for e in container["env"]}
            text = json.dumps(container)
            assert "sasl.password" not in container_env(container).get("CERFLEET_KAFKA", "")
            if not kafka["securityProtocol"].startswith("SASL_"):
                assert "KAFKA_SASL_PASSWORD" not in env and "sasl." not in text, name
                continue
            ref = env["KAFKA_SASL_PASSWORD"]["valueFrom"]["secretKeyRef"]
            assert ref == {
                "name": kafka["existingSecret"],
                "key": kafka["secretKeys"]["saslPassword"],
            }
            # The password reaches cerfleet through -X, expanded from that variable.
            flattened = " ".join(" ".join(argv) for argv in invocations(container))
            assert "-X sasl.password=" in flattened, name


def test_tls_files_are_mounted_where_the_kafka_properties_point(
    rendered: tuple[dict[str, Any], list[dict[str, Any]]],
) -> None:
    values, docs = rendered
    keys = values["kafka"]["secretKeys"]
    files = {
        "ca.crt": keys["caCert"],
        "client.crt": keys["clientCert"],
        "client.key": keys["clientKey"],
    }
    for name, spec in pod_specs(docs):
        volumes = {v["name"]: v for v in spec["volumes"]}
        for container in spec["containers"]:
            props = json.loads(container_env(container)["CERFLEET_KAFKA"])
            locations = {k: v for k, v in props.items() if k.endswith(".location")}
            if not any(files.values()):
                assert not locations and "kafka-tls" not in volumes, name
                continue
            (mount,) = [m for m in container["volumeMounts"] if m["name"] == "kafka-tls"]
            items = {i["path"]: i["key"] for i in volumes["kafka-tls"]["secret"]["items"]}
            assert items == {path: key for path, key in files.items() if key}
            assert volumes["kafka-tls"]["secret"]["secretName"] == values["kafka"]["existingSecret"]
            for location in locations.values():
                directory, _, file = location.rpartition("/")
                assert directory == mount["mountPath"] and file in items, (name, location)


def test_workers_get_more_stop_time_than_their_last_checkpoint_can_take(
    rendered: tuple[dict[str, Any], list[dict[str, Any]]],
) -> None:
    _, docs = rendered
    spec = named(docs, "Deployment", "-worker")["spec"]["template"]["spec"]
    assert spec["terminationGracePeriodSeconds"] > WORKER_STOP_BUDGET_S


def test_worker_replicas_belong_to_keda_when_it_scales_them(
    rendered: tuple[dict[str, Any], list[dict[str, Any]]],
) -> None:
    values, docs = rendered
    worker = named(docs, "Deployment", "-worker")
    if not values["keda"]["enabled"]:
        assert worker["spec"]["replicas"] == values["worker"]["replicaCount"]
        return
    # A replicas field would make every `helm upgrade` fight the autoscaler.
    assert "replicas" not in worker["spec"]
    scaled = by_kind(docs, "ScaledObject")[0]["spec"]
    assert scaled["scaleTargetRef"]["name"] == worker["metadata"]["name"]
    (trigger,) = scaled["triggers"]
    (container,) = worker["spec"]["template"]["spec"]["containers"]
    settings = load_settings_from_env(SETTINGS_BY_COMMAND["worker"], container_env(container))
    assert trigger["type"] == "kafka"
    assert trigger["metadata"]["consumerGroup"] == settings.group_id == "cerfleet-workers"
    assert trigger["metadata"]["bootstrapServers"] == settings.bootstrap_servers
    auth = by_kind(docs, "TriggerAuthentication")
    if "authenticationRef" in trigger:
        (ta,) = auth
        assert trigger["authenticationRef"]["name"] == ta["metadata"]["name"]
        for ref in ta["spec"].get("env", []):
            assert ref["containerName"] == container["name"]
            assert ref["name"] in {e["name"] for e in container["env"]}
    else:
        assert not auth


def test_the_pdb_covers_the_worker_pods(
    rendered: tuple[dict[str, Any], list[dict[str, Any]]],
) -> None:
    values, docs = rendered
    if not values["worker"]["pdb"]["enabled"]:
        return
    pdb = by_kind(docs, "PodDisruptionBudget")[0]
    labels = named(docs, "Deployment", "-worker")["spec"]["template"]["metadata"]["labels"]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    coordinator = named(docs, "Deployment", "-coordinator")["spec"]["template"]["metadata"]
    assert not pdb["spec"]["selector"]["matchLabels"].items() <= coordinator["labels"].items()


def test_the_servicemonitor_scrapes_both_metrics_services(
    rendered: tuple[dict[str, Any], list[dict[str, Any]]],
) -> None:
    values, docs = rendered
    if not values["serviceMonitor"]["enabled"]:
        return
    (monitor,) = by_kind(docs, "ServiceMonitor")
    selector = monitor["spec"]["selector"]["matchLabels"]
    selected = [
        s for s in by_kind(docs, "Service") if selector.items() <= s["metadata"]["labels"].items()
    ]
    assert len(selected) == 2
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] == "metrics" and endpoint["path"] == "/metrics"
    for label, value in values["serviceMonitor"]["labels"].items():
        assert monitor["metadata"]["labels"][label] == value


def test_the_submit_job_registers_every_query_from_the_configmap_after_install_and_upgrade(
    rendered: tuple[dict[str, Any], list[dict[str, Any]]],
) -> None:
    values, docs = rendered
    if not values["queries"]:
        return
    job = named(docs, "Job", "-submit")
    hooks = set(job["metadata"]["annotations"]["helm.sh/hook"].split(","))
    assert hooks == {"post-install", "post-upgrade"}
    spec = job["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == "queries"]
    (volume,) = [v for v in spec["volumes"] if v["name"] == "queries"]
    configmap = named(docs, "ConfigMap", "-queries")
    assert volume["configMap"]["name"] == configmap["metadata"]["name"]

    argvs = invocations(container)
    submits = {a.name: a for a in (parse_cli(argv) for argv in argvs if argv[0] == "submit")}
    # Submit creates missing output topics itself: no other command is needed for them.
    assert {argv[0] for argv in argvs} <= {"queries", "submit"}
    assert set(submits) == {q["name"] for q in values["queries"]}
    settings = load_settings_from_env(FleetSettings, container_env(container))
    assert settings.output_partitions == values["fleet"]["outputPartitions"]
    for query in values["queries"]:
        args = submits[query["name"]]
        path = Path(args.query)
        assert str(path.parent) == mount["mountPath"]
        assert configmap["data"][path.name].strip() == query["query"].strip()
        assert args.input_topic == query["inputTopics"]
        assert args.output_topic == query["outputTopic"]
        assert args.type_field == query.get("typeField", "type")
        assert args.time_field == query.get("timeField", "timestamp")
        # Without the flag, submit takes CERFLEET_OUTPUT_PARTITIONS, as the workers do.
        assert args.output_partitions == query.get("outputPartitions")


def test_the_dashboard_configmap_carries_the_dashboard_file_for_the_sidecar(
    rendered: tuple[dict[str, Any], list[dict[str, Any]]],
) -> None:
    values, docs = rendered
    configmap = named(docs, "ConfigMap", "-dashboard")
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(configmap["data"]["cerfleet.json"]) == json.loads(
        DASHBOARD.read_text(encoding="utf-8")
    )
    namespace = values["grafanaDashboard"]["namespace"]
    assert configmap["metadata"].get("namespace", "") == namespace


def job_script(docs: list[dict[str, Any]]) -> str:
    (job,) = by_kind(docs, "Job")
    (container,) = job["spec"]["template"]["spec"]["containers"]
    (script,) = container["args"]
    assert isinstance(script, str)
    return script


def test_the_submit_job_compares_with_what_it_would_submit() -> None:
    values_file = CHART / "ci" / "queries-values.yaml"
    docs = render(values_file)
    script = job_script(docs)
    checks = [
        shlex.split(m.group(1)) for m in re.finditer(r"^if unchanged (.*); then$", script, re.M)
    ]
    submits = {
        a.name: a
        for a in (parse_cli(argv) for argv in cerfleet_lines(script) if argv[0] == "submit")
    }
    assert len(checks) == len(submits) == len(load_values(values_file)["queries"])
    for name, path, output, type_field, time_field, cap, *inputs in checks:
        args = submits[name]
        assert (path, output, type_field, time_field, int(cap), inputs) == (
            args.query,
            args.output_topic,
            args.type_field,
            args.time_field,
            args.max_outputs_per_event,
            args.input_topic,
        )


def test_the_submit_job_leaves_a_query_registered_as_values_say_alone(tmp_path: Path) -> None:
    """Runs the Job's comparison against what `cerfleet queries` prints for a registered
    spec: equal means no resubmission (which would restart the query's evaluators)."""
    docs = render(CHART / "ci" / "queries-values.yaml")
    script = job_script(docs)
    match = re.search(r"python3 -c '\n(.*?)\n' \"\$@\"", script, re.DOTALL)
    assert match, "the Job's comparison is not where this test looks for it"
    registered = tmp_path / "registered.jsonl"
    code = match.group(1).replace("/tmp/registered.jsonl", str(registered))
    query = tmp_path / "q.ceql"
    text = "SELECT * FROM S WHERE SELL ; BUY PARTITION BY [name]"
    query.write_text(text, encoding="utf-8")
    # As `cerfleet submit` registers it: with the output cap (its default here).
    spec = QuerySpec(
        name="q",
        ceql=text,
        input_topics=("a", "b"),
        output_topic="o",
        type_field="kind",
        max_outputs_per_event=DEFAULT_MAX_OUTPUTS_PER_EVENT,
    )
    # The line format of `cerfleet queries` (coordinator/cli.py).
    registered.write_bytes(orjson.dumps({"version": 7, **spec.model_dump()}) + b"\n")

    def unchanged(*argv: str) -> bool:
        run = subprocess.run(
            [sys.executable, "-c", code, *argv], capture_output=True, text=True, check=False
        )
        assert run.returncode in (0, 1), run.stderr
        return run.returncode == 0

    cap = str(DEFAULT_MAX_OUTPUTS_PER_EVENT)
    assert unchanged("q", str(query), "o", "kind", "timestamp", cap, "a", "b")
    assert not unchanged("q", str(query), "o", "kind", "timestamp", cap, "a")  # inputs differ
    assert not unchanged("q", str(query), "o", "type", "timestamp", cap, "a", "b")  # type field
    assert not unchanged("r", str(query), "o", "kind", "timestamp", cap, "a", "b")  # name
    assert not unchanged("q", str(query), "o", "kind", "timestamp", "20", "a", "b")  # output cap
    query.write_text(text + " WITHIN 10 [ts]", encoding="utf-8")
    assert not unchanged("q", str(query), "o", "kind", "timestamp", cap, "a", "b")  # new text


# -- the backfill Job -----------------------------------------------------------------

BACKFILL = [
    "--set",
    "backfill.enabled=true",
    "--set",
    "backfill.query=fraud-alerts",
    "--set",
    "backfill.output=s3a://backfills/fraud",
    "--set",
    "backfill.since=2024-05-01",
    "--set",
    "backfill.sparkConf.spark\\.executor\\.instances=4",
]


def _backfill_container(doc: dict[str, Any]) -> dict[str, Any]:
    spec = doc["spec"]
    if doc["kind"] == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    (container,) = spec["template"]["spec"]["containers"]
    return dict(container)


def test_the_backfill_job_runs_cerfleet_backfill_with_the_spark_image_as_values_say() -> None:
    docs = render(None, *BACKFILL)
    job = named(docs, "Job", "-backfill")
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    container = _backfill_container(job)
    assert container["image"] == f"cerfleet:{_app_version()}-spark"
    (argv,) = invocations(container)
    args = parse_cli(argv)
    assert argv[0] == "backfill" and args.query == "fraud-alerts"
    # No archive in values: the query's own topics, read from Kafka.
    assert args.from_kafka and args.archive is None
    assert args.since == "2024-05-01" and args.output == "s3a://backfills/fraud"
    assert args.mode == "error" and args.output_topic is None
    assert args.master == "local[*]" and args.driver_memory == "2g"
    assert args.spark_conf == ["spark.executor.instances=4"]
    env = container_env(container)
    settings = load_settings_from_env(FleetSettings, env)
    assert settings.bootstrap_servers == load_values()["kafka"]["bootstrapServers"]
    assert env["SPARK_LOCAL_DIRS"] == "/var/spark-local"
    assert {"name": "spark-local", "mountPath": "/var/spark-local"} in container["volumeMounts"]
    # The default switch renders nothing of it.
    assert not [d for d in render(None) if d["metadata"]["name"].endswith("-backfill")]


def test_a_scheduled_backfill_is_a_cronjob_that_never_overlaps_itself() -> None:
    docs = render(
        None, *BACKFILL, "--set", "backfill.schedule=30 2 * * *", "--set", "backfill.archive=/a"
    )
    assert not [d for d in by_kind(docs, "Job") if d["metadata"]["name"].endswith("-backfill")]
    cron = named(docs, "CronJob", "-backfill")
    assert cron["spec"]["schedule"] == "30 2 * * *"
    assert cron["spec"]["concurrencyPolicy"] == "Forbid"
    (argv,) = invocations(_backfill_container(cron))
    args = parse_cli(argv)
    assert args.archive == "/a" and not args.from_kafka


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--set", "backfill.query="], "backfill.query"),
        (["--set", "backfill.output="], "backfill.output"),
        (["--set", "backfill.master=local(2)"], "backfill.master"),
        (["--set", "backfill.mode=replace"], "backfill.mode"),
        (["--set", "backfill.schedule=nightly"], "backfill.schedule"),
        (["--set", "backfill.sparkConf.executor=4"], "backfill.sparkConf"),
    ],
)
def test_helm_rejects_backfill_values_that_cannot_run(extra: list[str], message: str) -> None:
    result = helm("template", RELEASE, str(CHART), *BACKFILL, *extra)
    assert result.returncode != 0
    assert message in result.stderr, result.stderr


def _app_version() -> str:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text(encoding="utf-8"))
    return str(chart["appVersion"])

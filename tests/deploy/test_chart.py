"""The Helm chart without Helm: its plain YAML files, values against values.schema.json,
the documentation of values, and the template sources checked against the CLI and the
settings classes. test_helm_render.py checks the rendered manifests."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from cerfleet.fleet.registry import NAME_PATTERN, QuerySpec
from cerfleet.fleet.settings import CoordinatorSettings, FleetSettings, WorkerSettings
from tests.deploy.artefacts import (
    CHART,
    CI_VALUES,
    TEMPLATES,
    cerfleet_env_vars,
    cerfleet_lines,
    cli_commands,
    deep_merge,
    load_schema,
    load_values,
    load_yaml,
    parse_cli,
    settings_env_vars,
    strip_template_actions,
)

PLAIN_YAML = [CHART / "Chart.yaml", CHART / "values.yaml", *CI_VALUES]
TEMPLATE_FILES = sorted(p for p in TEMPLATES.iterdir() if p.is_file())

# Which settings class reads the variables each template sets.
TEMPLATE_SETTINGS: dict[str, type[FleetSettings]] = {
    "coordinator-deployment.yaml": CoordinatorSettings,
    "worker-deployment.yaml": WorkerSettings,
    "_helpers.tpl": FleetSettings,  # cerfleet.fleetEnv: shared by every container
    "submit-job.yaml": FleetSettings,
    "NOTES.txt": FleetSettings,
}
DEPLOYMENT_COMMANDS = {
    "coordinator-deployment.yaml": "coordinator",
    "worker-deployment.yaml": "worker",
}


def validator() -> jsonschema.Draft7Validator:
    schema = load_schema()
    return jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker())


def errors(values: dict[str, Any]) -> list[str]:
    return [e.message for e in validator().iter_errors(values)]


# -- plain files ---------------------------------------------------------------------


@pytest.mark.parametrize("path", PLAIN_YAML, ids=lambda p: p.relative_to(CHART).as_posix())
def test_plain_chart_files_are_yaml_mappings(path: Path) -> None:
    assert isinstance(load_yaml(path), dict)


def test_chart_yaml_is_an_api_v2_application_chart_with_semver_versions() -> None:
    chart = load_yaml(CHART / "Chart.yaml")
    assert chart["apiVersion"] == "v2"
    assert chart["name"] == CHART.name == "cerfleet"
    assert chart["type"] == "application"
    assert re.fullmatch(r"\d+\.\d+\.\d+", chart["version"])
    assert isinstance(chart["appVersion"], str), "quoted, or YAML may read 1.10 as 1.1"


def test_the_ci_directory_holds_override_examples() -> None:
    names = {p.stem for p in CI_VALUES}
    assert {"sasl-values", "keda-values", "servicemonitor-values", "queries-values"} <= names


@pytest.mark.parametrize("path", TEMPLATE_FILES, ids=lambda p: p.name)
def test_templates_are_non_empty_with_balanced_actions(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.strip()
    assert text.count("{{") == text.count("}}")
    # Every block action closes: if/range/with/define each need an end.
    opened = len(re.findall(r"\{\{-?\s*(?:if|range|with|define)\b", text))
    closed = len(re.findall(r"\{\{-?\s*end\s*-?\}\}", text))
    assert opened == closed, f"{opened} blocks opened, {closed} closed"


@pytest.mark.parametrize(
    "path", [p for p in TEMPLATE_FILES if p.suffix == ".yaml"], ids=lambda p: p.name
)
def test_manifest_templates_declare_api_version_kind_and_a_release_scoped_name(
    path: Path,
) -> None:
    text = path.read_text(encoding="utf-8")
    assert re.search(r"^apiVersion: \S+$", text, re.MULTILINE)
    assert re.search(r"^kind: \S+$", text, re.MULTILINE)
    # Two releases in one namespace must not collide.
    assert re.search(
        r'^  name: \{\{ include "cerfleet\.(fullname|serviceAccountName)" \. \}\}',
        text,
        re.MULTILINE,
    )


# -- values and the schema -----------------------------------------------------------


def test_the_schema_is_valid_draft_7() -> None:
    # Draft 7: what Helm's validator understands in every Helm 3 release.
    schema = load_schema()
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    jsonschema.Draft7Validator.check_schema(schema)


def test_default_values_satisfy_the_schema() -> None:
    assert errors(load_values()) == []


@pytest.mark.parametrize("path", CI_VALUES, ids=lambda p: p.name)
def test_ci_overrides_satisfy_the_schema(path: Path) -> None:
    assert errors(load_values(path)) == []


@pytest.mark.parametrize(
    ("override", "why"),
    [
        ({"workers": {"replicaCount": 3}}, "top-level typo"),
        ({"worker": {"replicas": 3}}, "nested typo"),
        ({"kafka": {"bootstrapServer": "k:9092"}}, "typo in kafka"),
        ({"metrics": {"port": "9464"}}, "port as a string"),
        ({"metrics": {"port": 80}}, "privileged port for a non-root process"),
        ({"worker": {"replicaCount": -1}}, "negative replicas"),
        ({"worker": {"transactions": "yes"}}, "boolean as a string"),
        ({"kafka": {"securityProtocol": "SASL_TLS"}}, "unknown security protocol"),
        ({"kafka": {"securityProtocol": "SASL_SSL"}}, "SASL without the Secret"),
        ({"kafka": {"properties": {"sasl.password": "hunter2"}}}, "password in values"),
        ({"kafka": {"consumer": {"group.id": "x"}}}, "group id outside its setting"),
        ({"fleet": {"logLevel": "VERBOSE"}}, "unknown log level"),
        ({"queries": [{"name": "q", "query": "x", "inputTopics": ["in"]}]}, "no output"),
        (
            {"queries": [{"name": "q", "query": "x", "inputTopics": [], "outputTopic": "o"}]},
            "no input topic",
        ),
        (
            {
                "queries": [
                    {"name": "bad name", "query": "x", "inputTopics": ["i"], "outputTopic": "o"}
                ]
            },
            "query name cerfleet submit rejects",
        ),
        (
            {
                "queries": [
                    {
                        "name": "q",
                        "query": "x",
                        "inputTopics": ["i"],
                        "outputTopic": "o",
                        "typefield": "kind",
                    }
                ]
            },
            "typo in a query",
        ),
        (
            {
                "queries": [
                    {
                        "name": "q",
                        "query": "x",
                        "inputTopics": ["i"],
                        "outputTopic": "o",
                        "createOutputTopic": False,
                    }
                ]
            },
            "gone: submit and the workers create missing output topics",
        ),
        (
            {
                "queries": [
                    {
                        "name": "q",
                        "query": "x",
                        "inputTopics": ["i"],
                        "outputTopic": "o",
                        "outputPartitions": 0,
                    }
                ]
            },
            "an output topic without partitions",
        ),
        ({"fleet": {"outputPartitions": "8"}}, "partitions as a string"),
        ({"keda": {"enabled": True, "lagTreshold": 10}}, "typo in keda"),
        ({"serviceMonitor": {"interval": "30 seconds"}}, "malformed duration"),
        ({"image": {"digest": "latest"}}, "digest that is not one"),
    ],
)
def test_the_schema_rejects(override: dict[str, Any], why: str) -> None:
    assert errors(deep_merge(load_values(), override)), why


def test_output_topics_get_the_fleets_default_partitions_one_per_keyed_partition() -> None:
    # The chart sets CERFLEET_OUTPUT_PARTITIONS in every pod that creates output topics;
    # its default must not differ from what the processes would use without it.
    values = load_values()
    default = FleetSettings.model_fields["output_partitions"].default
    assert values["fleet"]["outputPartitions"] == default
    assert values["coordinator"]["keyedPartitions"] == default


def test_the_schemas_query_name_pattern_is_the_registrys() -> None:
    assert load_schema()["definitions"]["queryName"]["pattern"] == NAME_PATTERN


@pytest.mark.parametrize("path", CI_VALUES, ids=lambda p: p.name)
def test_queries_in_the_override_examples_compile(path: Path) -> None:
    for query in load_values(path)["queries"]:
        QuerySpec(
            name=query["name"],
            ceql=query["query"],
            input_topics=tuple(query["inputTopics"]),
            output_topic=query["outputTopic"],
            type_field=query.get("typeField", "type"),
            time_field=query.get("timeField", "timestamp"),
        ).compile()


# -- documentation of values ----------------------------------------------------------


def documented_params() -> set[str]:
    text = (CHART / "values.yaml").read_text(encoding="utf-8")
    return set(re.findall(r"^\s*## @param (\S+)", text, re.MULTILINE))


def value_paths(values: Any, prefix: str = "") -> set[str]:
    """Every key path of values, maps and lists included, down to the leaves."""
    paths = set()
    if isinstance(values, dict):
        for key, value in values.items():
            path = f"{prefix}{key}"
            paths.add(path)
            paths |= value_paths(value, path + ".")
    return paths


def test_every_documented_parameter_exists_in_values() -> None:
    paths = value_paths(load_values())
    assert documented_params() - paths == set()


def test_every_value_is_documented_itself_or_by_an_ancestor() -> None:
    params = documented_params()
    undocumented = []
    for path in value_paths(load_values()):
        parts = path.split(".")
        ancestors = {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
        intermediate = any(p.startswith(path + ".") for p in params)
        if not ancestors & params and not intermediate:
            undocumented.append(path)
    assert undocumented == []


def test_every_value_is_in_the_schema() -> None:
    schema = load_schema()

    def walk(node: dict[str, Any], values: dict[str, Any], prefix: str) -> None:
        if "$ref" in node:
            node = schema["definitions"][node["$ref"].rsplit("/", 1)[1]]
        properties = node.get("properties")
        if properties is None:
            return  # a free-form map (labels, resources, librdkafka properties)
        for key, value in values.items():
            assert key in properties, f"{prefix}{key} is missing from values.schema.json"
            if isinstance(value, dict):
                walk(properties[key], value, f"{prefix}{key}.")

    walk(schema, load_values(), "")


def test_every_documented_parameter_is_read_by_a_template() -> None:
    sources = "\n".join(p.read_text(encoding="utf-8") for p in TEMPLATE_FILES)
    unread = []
    for param in documented_params():
        leaf = param.rsplit(".", 1)[-1]
        # Templates reach nested values through variables ($k.secretKeys.caCert), so the
        # leaf name is what appears; an unused value is an unread promise.
        if not re.search(rf"\.{re.escape(leaf)}\b", sources):
            unread.append(param)
    assert unread == []


# -- template sources against the CLI and settings ------------------------------------


@pytest.mark.parametrize("name", sorted(TEMPLATE_SETTINGS))
def test_cerfleet_variables_in_templates_are_settings_fields(name: str) -> None:
    text = (TEMPLATES / name).read_text(encoding="utf-8")
    unknown = cerfleet_env_vars(text) - settings_env_vars(TEMPLATE_SETTINGS[name])
    assert not unknown, f"{name}: {unknown} are not {TEMPLATE_SETTINGS[name].__name__} fields"


def test_cerfleet_variables_named_in_values_comments_are_settings_fields() -> None:
    text = (CHART / "values.yaml").read_text(encoding="utf-8")
    known = settings_env_vars(CoordinatorSettings) | settings_env_vars(WorkerSettings)
    assert cerfleet_env_vars(text) - known == set()


@pytest.mark.parametrize("name", sorted(DEPLOYMENT_COMMANDS))
def test_deployments_run_their_command_with_options_it_has(name: str) -> None:
    text = (TEMPLATES / name).read_text(encoding="utf-8")
    command = DEPLOYMENT_COMMANDS[name]
    assert re.search(rf"args:\n\s+- {command}\n", text), f"{name} does not run {command}"
    helpers = (TEMPLATES / "_helpers.tpl").read_text(encoding="utf-8")
    kafka_args = re.search(r'define "cerfleet.kafkaArgs".*?\{\{- end -\}\}', helpers, re.DOTALL)
    assert kafka_args is not None
    flags = set(re.findall(r"^- (-\S+)$", kafka_args.group(0), re.MULTILINE))
    assert flags and flags <= cli_commands()[command]


@pytest.mark.parametrize("name", ["submit-job.yaml", "NOTES.txt"])
def test_cerfleet_command_lines_in_templates_parse_with_the_real_cli(name: str) -> None:
    text = strip_template_actions((TEMPLATES / name).read_text(encoding="utf-8"))
    commands = cerfleet_lines(text)
    assert commands
    for argv in commands:
        parse_cli(argv)


def test_the_metrics_port_value_feeds_the_variable_the_container_port_and_the_service() -> None:
    for name in ("coordinator", "worker"):
        deployment = (TEMPLATES / f"{name}-deployment.yaml").read_text(encoding="utf-8")
        assert re.search(
            r"- name: CERFLEET_METRICS_PORT\n\s+value: \{\{ \.Values\.metrics\.port \| quote \}\}",
            deployment,
        )
        assert re.search(
            r"- name: metrics\n\s+containerPort: \{\{ \.Values\.metrics\.port \}\}", deployment
        )
        assert 'include "cerfleet.probes"' in deployment
        service = (TEMPLATES / f"{name}-service.yaml").read_text(encoding="utf-8")
        assert re.search(
            r"port: \{\{ \.Values\.metrics\.port \}\}\n\s+targetPort: metrics", service
        )
    probes = (TEMPLATES / "_helpers.tpl").read_text(encoding="utf-8")
    probes = probes[probes.index('define "cerfleet.probes"') :]
    assert probes.count("path: /healthz") == 3
    assert probes.count("port: metrics") == 3

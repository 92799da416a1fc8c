"""Readers of the deployment artefacts and of what the code really accepts and exports.

The tests compare the two sides: every ``cerfleet`` command line, ``CERFLEET_*``
variable, port and metric name written in the Dockerfile, the compose file and the
chart against the argparse parser, the settings classes and the metric registries.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import json
import os
import re
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from prometheus_client import CollectorRegistry

from cerfleet.cli.main import build_parser
from cerfleet.coordinator.metrics import RouterMetrics
from cerfleet.fleet.settings import CoordinatorSettings, FleetSettings, WorkerSettings
from cerfleet.workers.metrics import WorkerMetrics
from cerfleet.workers.suspended import SuspendedQueries

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "Dockerfile"
DOCKERIGNORE = REPO / ".dockerignore"
COMPOSE = REPO / "docker-compose.yml"
DEPLOY = REPO / "deploy"
PROMETHEUS_CONFIG = DEPLOY / "prometheus" / "prometheus.yml"
GRAFANA_PROVISIONING = DEPLOY / "grafana" / "provisioning"
CHART = REPO / "helm" / "cerfleet"
TEMPLATES = CHART / "templates"
DASHBOARD = CHART / "dashboards" / "cerfleet.json"
CI_VALUES = sorted((CHART / "ci").glob("*.yaml"))

# The settings class each long-running command builds; every other command reads
# FleetSettings only.
SETTINGS_BY_COMMAND: dict[str, type[FleetSettings]] = {
    "coordinator": CoordinatorSettings,
    "worker": WorkerSettings,
}

_SHELL_OPERATORS = {">", ">>", "<", "|", "||", "&", "&&", ";", ";;"}
_CERFLEET_CALL = re.compile(r"(?:^|\s)(?P<quote>['\"]?)cerfleet (?P<argv>[a-z][a-z-]*\b)")
_TEMPLATE_ACTION = re.compile(r"\{\{-?.*?-?\}\}", re.DOTALL)
# What a template action becomes in a command line checked without Helm: a number,
# which string options and counts (--output-partitions) alike accept, and which no
# subcommand name starts with.
TEMPLATE_PLACEHOLDER = "1"


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def load_compose() -> dict[str, Any]:
    doc = load_yaml(COMPOSE)
    assert isinstance(doc, dict)
    return doc


def load_values(*overrides: Path) -> dict[str, Any]:
    """values.yaml with each override merged in, as Helm merges ``-f`` files."""
    values = load_yaml(CHART / "values.yaml")
    for path in overrides:
        values = deep_merge(values, load_yaml(path) or {})
    assert isinstance(values, dict)
    return values


def deep_merge(base: Any, override: Any) -> Any:
    if isinstance(base, dict) and isinstance(override, dict):
        merged = dict(base)
        for key, value in override.items():
            merged[key] = deep_merge(base.get(key), value) if key in base else value
        return merged
    return override


def load_schema() -> dict[str, Any]:
    schema = json.loads((CHART / "values.schema.json").read_text(encoding="utf-8"))
    assert isinstance(schema, dict)
    return schema


# -- the CLI -------------------------------------------------------------------------


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    # argparse has no public way to list subcommands; its actions are the only record.
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("cerfleet has no subcommands")


def cli_commands() -> dict[str, set[str]]:
    """Each ``cerfleet`` subcommand and the option strings it accepts."""
    return {
        name: set(sub._option_string_actions) for name, sub in _subparsers(build_parser()).items()
    }


def parse_cli(argv: list[str]) -> argparse.Namespace:
    """Parse ``argv`` (without the program name) as ``cerfleet`` would, or fail the test
    with argparse's own message."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            args = build_parser().parse_args(argv)
    except SystemExit as exc:
        raise AssertionError(f"cerfleet rejects {shlex.join(argv)}: {err.getvalue()}") from exc
    # argparse also takes unambiguous prefixes (--idle for --idle-timeout), which a new
    # option could make ambiguous later: artefacts must spell options out.
    options = cli_commands()[argv[0]] if argv and argv[0] in cli_commands() else set()
    for word in argv[1:]:
        if word.startswith("-") and len(word) > 1:
            assert word.split("=", 1)[0] in options, f"{argv[0]}: {word} is not an option"
    return args


def cerfleet_lines(script: str) -> list[list[str]]:
    """The ``cerfleet ...`` command lines of a shell script, as argv lists without the
    program name (backslash continuations joined, ``"$@"`` replaced by the words of the
    script's last ``set --``)."""
    joined = re.sub(r"\\\n\s*", " ", script)
    commands = []
    positional: list[str] = []
    for line in joined.splitlines():
        if line.strip().startswith("set --"):
            positional = shlex.split(line.strip(), comments=True)[2:]
            continue
        # At the start of a line or after `--`/a quote, as in `kubectl exec ... -- cerfleet`.
        for match in _CERFLEET_CALL.finditer(line):
            before = line[: match.start()].split()
            if before and before[-1].startswith("-") and before[-1] != "--":
                continue  # an option's value (`-n cerfleet`), not a command
            rest = line[match.start("argv") :]
            quote = match.group("quote")
            if quote:
                rest = rest.split(quote, 1)[0]
            argv = list(itertools.takewhile(lambda w: w not in _SHELL_OPERATORS, _words(rest)))
            commands.append([w for arg in argv for w in (positional if arg == "$@" else [arg])])
    return commands


def _words(line: str) -> list[str]:
    """Shell words, with operators (``>``, ``|``, ``;``, ...) as words of their own."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    return list(lexer)


def strip_template_actions(text: str) -> str:
    """Template text with lines holding only Go template actions removed and the
    remaining actions replaced by a placeholder word."""
    lines = [
        line
        for line in text.splitlines()
        if line.strip() == "" or _TEMPLATE_ACTION.sub("", line).strip() != ""
    ]
    return _TEMPLATE_ACTION.sub(TEMPLATE_PLACEHOLDER, "\n".join(lines))


# -- settings ------------------------------------------------------------------------


def env_name(field: str) -> str:
    return "CERFLEET_" + field.upper()


def settings_env_vars(cls: type[FleetSettings]) -> set[str]:
    return {env_name(field) for field in cls.model_fields}


def cerfleet_env_vars(text: str) -> set[str]:
    return set(re.findall(r"\bCERFLEET_[A-Z][A-Z0-9_]*\b", text))


@contextlib.contextmanager
def environment(env: Mapping[str, str]) -> Iterator[None]:
    """``os.environ`` without any ``CERFLEET_*`` variable of the test run, plus ``env``."""
    saved = dict(os.environ)
    try:
        for key in [k for k in os.environ if k.startswith("CERFLEET_")]:
            del os.environ[key]
        os.environ.update(env)
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def load_settings_from_env(cls: type[FleetSettings], env: Mapping[str, str]) -> FleetSettings:
    with environment(env):
        return cls()


# -- metrics -------------------------------------------------------------------------


def exported_metric_names() -> set[str]:
    """Every sample name the coordinator and the workers can expose on ``/metrics``."""
    names: set[str] = set()
    for make in (WorkerMetrics, RouterMetrics):
        registry = CollectorRegistry()
        make(registry)
        if make is WorkerMetrics:  # the worker registers it, with its partitions' states
            registry.register(SuspendedQueries({}))
        for family in registry.collect():
            # Family names drop the suffixes the exposition format adds to samples.
            suffixes = {
                "counter": ("_total", "_created"),
                "histogram": ("_bucket", "_sum", "_count", "_created"),
                "summary": ("", "_sum", "_count", "_created"),
                "gauge": ("",),
            }[family.type]
            names.update(family.name + suffix for suffix in suffixes)
    return names


# -- the Dockerfile ------------------------------------------------------------------


@dataclass
class Stage:
    name: str
    base: str
    instructions: list[tuple[str, str]]

    def values(self, keyword: str) -> list[str]:
        return [arg for kw, arg in self.instructions if kw == keyword]


def dockerfile_stages() -> list[Stage]:
    text = DOCKERFILE.read_text(encoding="utf-8")
    text = re.sub(r"\\\n", " ", text)  # continuation lines
    stages: list[Stage] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        keyword, _, arg = line.partition(" ")
        keyword = keyword.upper()
        arg = " ".join(arg.split())
        if keyword == "FROM":
            match = re.fullmatch(r"(\S+)(?: AS (\S+))?", arg, re.IGNORECASE)
            assert match, f"cannot read FROM {arg}"
            stages.append(Stage(match.group(2) or str(len(stages)), match.group(1), []))
        elif stages:
            stages[-1].instructions.append((keyword, arg))
    return stages


def dockerfile_args() -> dict[str, str]:
    """Global ARG defaults (those before the first FROM)."""
    args = {}
    for raw in DOCKERFILE.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if line.upper().startswith("FROM "):
            break
        if line.upper().startswith("ARG "):
            name, _, default = line[4:].partition("=")
            args[name.strip()] = default.strip()
    return args

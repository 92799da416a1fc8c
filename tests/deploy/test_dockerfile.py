"""The Dockerfile: multi-stage, slim, non-root, one ``cerfleet`` entry point, Java only in
the Spark target, and a build context that holds everything the stages copy."""

from __future__ import annotations

import fnmatch
import json
import re
import tomllib

import pytest

from cerfleet.cli.main import main
from tests.deploy.artefacts import (
    DOCKERIGNORE,
    REPO,
    Stage,
    dockerfile_args,
    dockerfile_stages,
    load_compose,
)

BUILD_TOOLS = ("gcc", "build-essential", "g++", "make ", "apt-get", "openjdk", "default-jre")


def stage(name: str) -> Stage:
    return next(s for s in dockerfile_stages() if s.name == name)


def copy_sources(copy: str) -> list[str]:
    """The build-context paths a COPY reads (none when it copies from another stage)."""
    words = copy.split()
    if any(w.startswith("--from") for w in words):
        return []
    return [w.rstrip("/") for w in words if not w.startswith("--")][:-1]


def base_image(s: Stage) -> str:
    return s.base.replace("${PYTHON_IMAGE}", dockerfile_args().get("PYTHON_IMAGE", ""))


def test_the_dockerfile_has_builder_spark_and_runtime_stages_with_runtime_the_default() -> None:
    names = [s.name for s in dockerfile_stages()]
    assert {"builder", "spark", "runtime"} <= set(names)
    # `docker build .` builds the last stage: it must be the slim one.
    assert names[-1] == "runtime"


def test_every_stage_starts_from_python_3_11_slim_or_another_stage() -> None:
    stages = dockerfile_stages()
    names = {s.name for s in stages}
    for s in stages:
        image = base_image(s)
        assert image in names or re.fullmatch(r"python:3\.11-slim(-\w+)?", image), (s.name, image)


def test_the_builder_builds_wheels_and_the_runtime_installs_only_those() -> None:
    builder = " ".join(stage("builder").values("RUN"))
    assert "pip wheel" in builder and "--wheel-dir /wheels" in builder
    install = " ".join(stage("runtime").values("RUN"))
    assert "from=builder" in install
    assert "--no-index" in install, "the runtime stage must not fetch from PyPI"


def test_the_runtime_stage_and_its_bases_hold_no_build_tools_and_no_java() -> None:
    stages = {s.name: s for s in dockerfile_stages()}
    chain, current = [], stages["runtime"]
    while True:  # the runtime stage and every stage it is built FROM
        chain.append(current)
        parent = base_image(current)
        if parent not in stages:
            break
        current = stages[parent]
    for s in chain:
        runs = " ".join(s.values("RUN"))
        for tool in BUILD_TOOLS:
            assert tool not in runs, f"{tool!r} in stage {s.name}"


def test_the_spark_target_adds_java_17_and_installs_the_spark_extra() -> None:
    runs = " ".join(stage("spark").values("RUN"))
    assert "openjdk-17-jre-headless" in runs
    assert "'cerfleet[spark]'" in runs and "--no-index" in runs
    assert "from=spark-builder" in runs
    assert "'.[spark]'" in " ".join(stage("spark-builder").values("RUN"))
    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    assert "spark" in extras, "the Dockerfile installs an extra pyproject.toml does not define"


def test_both_runtime_targets_run_as_uid_10001_with_cerfleet_as_entry_point(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name in ("runtime", "spark"):
        s = stage(name)
        # Numeric, so Kubernetes can check runAsNonRoot without reading /etc/passwd.
        assert s.values("USER")[-1] == "10001:10001"
        assert json.loads(s.values("ENTRYPOINT")[-1]) == ["cerfleet"]
        # The default command (`docker run cerfleet`) must be one cerfleet accepts.
        assert main(json.loads(s.values("CMD")[-1])) == 0
    capsys.readouterr()


def test_the_user_the_image_creates_has_the_uid_it_runs_as() -> None:
    runs = " ".join(stage("base").values("RUN"))
    assert "--uid 10001" in runs and "--gid 10001" in runs


def test_the_examples_the_compose_setup_uses_are_copied_to_the_working_directory() -> None:
    base = stage("base")
    assert base.values("WORKDIR") == ["/app"]
    assert any(re.search(r"\bexamples \./examples$", c) for c in base.values("COPY"))
    setup = " ".join(load_compose()["services"]["setup"]["command"])
    for path in re.findall(r"\bexamples/\S+", setup):
        assert (REPO / path).is_file(), path


def test_the_exposed_port_is_the_metrics_port_compose_configures() -> None:
    exposed = {int(p) for p in stage("base").values("EXPOSE")}
    services = load_compose()["services"]
    ports = {
        int(services[n]["environment"]["CERFLEET_METRICS_PORT"]) for n in ("coordinator", "worker")
    }
    assert exposed == ports


def test_the_builder_copies_every_package_pyproject_installs() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    # The source folders pyproject.toml maps onto the cerfleet namespace.
    packages = set(pyproject["tool"]["setuptools"]["package-dir"].values())
    copied = {source for copy in stage("builder").values("COPY") for source in copy_sources(copy)}
    # A package left out would install an image whose `cerfleet` lacks its commands.
    assert packages <= copied
    assert {"pyproject.toml", "README.md"} <= copied


def test_the_package_data_the_wheel_ships_is_in_the_build_context() -> None:
    """`cerfleet dev --example` in the image reads the examples shipped in the wheel,
    not /app/examples: the wheel can only ship what the context lets through."""
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    excluded = [
        line.strip().rstrip("/")
        for line in DOCKERIGNORE.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith(("#", "!")) and line.strip() != "*"
    ]
    copied = {source for copy in stage("builder").values("COPY") for source in copy_sources(copy)}
    package_dir = pyproject["tool"]["setuptools"]["package-dir"]
    shipped = []
    for package, patterns in pyproject["tool"]["setuptools"]["package-data"].items():
        # The longest mapped prefix names the source folder (package-dir semantics).
        root = max((p for p in package_dir if package == p or package.startswith(p + ".")), key=len)
        rest = package.removeprefix(root).lstrip(".")
        folder = REPO.joinpath(package_dir[root], *filter(None, rest.split(".")))
        for pattern in patterns:
            shipped += [f.relative_to(REPO).as_posix() for f in folder.glob(pattern)]
    assert any(path.startswith("shared/fleet/examples/") for path in shipped)
    for path in shipped:
        assert path.split("/")[0] in copied, path
        parts = path.split("/")
        prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
        for pattern in excluded:
            assert not any(fnmatch.fnmatch(p, pattern) for p in prefixes), (path, pattern)


def test_the_dockerignore_allowlist_admits_everything_the_stages_copy() -> None:
    lines = [
        line.strip()
        for line in DOCKERIGNORE.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert lines[0] == "*", "an allowlist: everything is excluded first"
    allowed = {line[1:].rstrip("/") for line in lines if line.startswith("!")}
    for s in dockerfile_stages():
        for copy in s.values("COPY"):
            for source in copy_sources(copy):
                assert source in allowed, f"COPY {source} is excluded by .dockerignore"

"""The driver JVM's class-data archive: when a job writes one, reads one, or goes
without, and a real job through spark-submit writing it then starting from it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pyarrow.parquet as pq
import pytest

from cerfleet.workers.backfill.class_archive import ENV, class_archive

ROOT = Path(__file__).resolve().parents[3]
QUERY = ROOT / "examples" / "stock.ceql"
EVENTS = ROOT / "examples" / "stock.jsonl"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv(ENV, raising=False)
    return tmp_path / "cerfleet"


def test_a_first_local_run_writes_under_a_temporary_name(cache: Path) -> None:
    archive = class_archive("backfill", "local[2]", [])
    assert archive is not None and archive.writing is not None
    assert archive.writing.parent == cache and archive.path.parent == cache
    assert f"-XX:ArchiveClassesAtExit={archive.writing}" in archive.java_options
    archive.writing.write_bytes(b"classes")
    archive.finish(succeeded=True)
    assert archive.path.read_bytes() == b"classes" and not archive.writing.exists()
    again = class_archive("backfill", "local[*]", [])
    assert again is not None and again.writing is None
    assert f"-XX:SharedArchiveFile={archive.path}" in again.java_options
    other = class_archive("compact", "local[2]", [])
    assert other is not None and other.writing is not None  # one archive per job


def test_a_failed_run_leaves_no_archive(cache: Path) -> None:
    archive = class_archive("backfill", "local[1]", [])
    assert archive is not None and archive.writing is not None
    archive.writing.write_bytes(b"half")
    archive.finish(succeeded=False)
    assert list(cache.iterdir()) == []


@pytest.mark.parametrize(
    ("master", "conf", "env"),
    [
        ("spark://host:7077", [], None),  # executors' JVMs start elsewhere
        ("k8s://https://api:6443", [], None),
        ("local[2]", ["spark.driver.extraJavaOptions=-Xss4m"], None),  # the user's own
        ("local[2]", [], "0"),
    ],
)
def test_no_archive(
    cache: Path, monkeypatch: pytest.MonkeyPatch, master: str, conf: list[str], env: str | None
) -> None:
    if env is not None:
        monkeypatch.setenv(ENV, env)
    assert class_archive("backfill", master, conf) is None


def test_no_archive_where_the_cache_cannot_be_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))  # a file, not a folder
    monkeypatch.delenv(ENV, raising=False)
    assert class_archive("backfill", "local[1]", []) is None


def _backfill(out: Path, cache_home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            *("-m", "cerfleet.cli", "backfill", "--ceql", str(QUERY)),
            *("--time-field", "stock_time", "--jsonl", str(EVENTS), "--output", str(out)),
            *("--master", "local[1]", "--spark-conf", "spark.ui.enabled=false"),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        env={**_environ(), "XDG_CACHE_HOME": str(cache_home)},
    )


def _environ() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != ENV}


def test_a_job_writes_the_archive_and_the_next_starts_from_it(tmp_path: Path) -> None:
    outputs = []
    for run in ("first", "second"):
        done = _backfill(tmp_path / run, tmp_path / "cache")
        assert done.returncode == 0, done.stderr[-3000:]
        [archive] = (tmp_path / "cache" / "cerfleet").iterdir()  # no temporary file left
        assert archive.suffix == ".jsa" and archive.stat().st_size > 10 * 2**20
        docs = pq.read_table(tmp_path / run).column("value").to_pylist()
        outputs.append(sorted(orjson.loads(v)["sources"][0]["offset"] for v in docs))
    assert outputs[0] == outputs[1] and len(outputs[0]) == 5

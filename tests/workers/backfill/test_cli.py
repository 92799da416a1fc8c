"""``cerfleet compact`` / ``cerfleet backfill``: the spark-submit command they build, the
mistakes they catch before Spark starts, and one real run through spark-submit."""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from pathlib import Path

import orjson
import pyarrow.parquet as pq
import pytest

from cerfleet.cli.main import main
from cerfleet.workers.backfill.options import add_backfill_arguments, add_compact_arguments

ROOT = Path(__file__).resolve().parents[3]
QUERY = ROOT / "examples" / "stock.ceql"
EVENTS = ROOT / "examples" / "stock.jsonl"


def _dry_run(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    assert main([*argv, "--dry-run"]) == 0
    return shlex.split(capsys.readouterr().out)


def test_backfill_builds_a_spark_submit_command_the_job_understands(
    capsys: pytest.CaptureFixture[str],
) -> None:
    cmd = _dry_run(
        capsys,
        "backfill",
        "--ceql",
        str(QUERY),
        "--time-field",
        "stock_time",
        "--archive",
        "arch",
        "-o",
        "out",
        "--mode",
        "overwrite",
        "--topic",
        "a",
        "--topic",
        "b",
        "--master",
        "local[2]",
        "--spark-conf",
        "spark.executor.cores=2",
        "-X",
        "acks=all",
    )
    assert Path(cmd[0]).name == "spark-submit"
    assert cmd[1:3] == ["--master", "local[2]"]
    assert cmd[cmd.index("--conf") + 1] == "spark.executor.cores=2"
    script = next(i for i, word in enumerate(cmd) if word.endswith("backfill_job.py"))
    assert Path(cmd[script]).is_file()
    job = argparse.ArgumentParser()
    add_backfill_arguments(job)
    args = job.parse_args(cmd[script + 1 :])
    assert (args.ceql, args.time_field, args.archive, args.output) == (
        str(QUERY),
        "stock_time",
        "arch",
        "out",
    )
    assert (args.mode, args.topics, args.kafka_props) == ("overwrite", ["a", "b"], ["acks=all"])


def test_compact_builds_its_command_too(capsys: pytest.CaptureFixture[str]) -> None:
    cmd = _dry_run(capsys, "compact", "--archive", "arch", "-t", "stock", "--since", "2024-05-01")
    script = next(i for i, word in enumerate(cmd) if word.endswith("compact_job.py"))
    job = argparse.ArgumentParser()
    add_compact_arguments(job)
    args = job.parse_args(cmd[script + 1 :])
    assert (args.archive, args.topics, args.since) == ("arch", ["stock"], "2024-05-01")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--archive", "a", "-o", "o"], "exactly one of --query NAME and --ceql FILE"),
        (["--ceql", str(QUERY), "-o", "o"], "exactly one of --archive DIR"),
        (["--ceql", str(QUERY), "--archive", "a"], "nowhere to write"),
        (["--ceql", "missing.ceql", "--archive", "a", "-o", "o"], "no such file"),
    ],
)
def test_backfill_mistakes_are_reported_before_spark_starts(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["backfill", *argv]) == 2
    assert message in capsys.readouterr().err


def test_a_query_error_names_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.ceql"
    bad.write_text("SELECT * FROM S\nWHERE A ;; B")
    assert main(["backfill", "--ceql", str(bad), "--archive", "a", "-o", "o"]) == 2
    assert "line 2, column" in capsys.readouterr().err
    anyq = tmp_path / "any.ceql"
    anyq.write_text("SELECT * FROM S WHERE A ; B PARTITION BY [k] CONSUME BY ANY")
    assert main(["backfill", "--ceql", str(anyq), "--archive", "a", "-o", "o"]) == 2
    assert "CONSUME BY PARTITION" in capsys.readouterr().err


def test_backfill_through_spark_submit_prints_progress_and_a_summary(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "cerfleet.cli",
            "backfill",
            "--ceql",
            str(QUERY),
            "--time-field",
            "stock_time",
            "--jsonl",
            str(EVENTS),
            "--output",
            str(out),
            "--master",
            "local[2]",
            "--spark-conf",
            "spark.ui.enabled=false",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    [line] = [x for x in done.stdout.splitlines() if x.startswith("backfill stock:")]
    assert "40 events read (0 bad, 0 without key)" in line and "5 complex events" in line
    summary = json.loads(done.stdout.splitlines()[-1])["summary"]
    assert summary["complex_events"] == 5 and summary["mode"] == "slices"
    embedded = subprocess.run(
        [sys.executable, "-m", "cerfleet.cli", "run", str(QUERY), str(EVENTS), "--quiet"],
        capture_output=True,
        check=True,
    )
    want = sorted(tuple(orjson.loads(x)["positions"]) for x in embedded.stdout.splitlines())
    docs = [orjson.loads(v) for v in pq.read_table(out).column("value").to_pylist()]
    assert sorted(tuple(s["offset"] for s in d["sources"]) for d in docs) == want

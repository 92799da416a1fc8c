"""Smoke test of the fleet CPU benchmark: a tiny run gives the embedded engine's answer,
and what making its output records cost."""

from __future__ import annotations

from pathlib import Path

import orjson

from benchmarks import fleet_cpu
from cerfleet.fleet.settings import WorkerSettings


def test_a_tiny_run_counts_the_embedded_answer_and_keeps_other_labels(tmp_path: Path) -> None:
    args = ["--events", "3000", "--runs", "1", "--out", str(tmp_path)]
    assert fleet_cpu.main([*args, "--label", "one"]) == 0
    assert fleet_cpu.main([*args, "--label", "two", "--batch", "7"]) == 0
    rows = orjson.loads((tmp_path / "fleet-cpu.json").read_bytes())
    assert sorted((r["label"], r["query"]) for r in rows) == [
        ("one", "global"),
        ("one", "partitioned"),
        ("two", "global"),
        ("two", "partitioned"),
    ]
    for row in rows:
        assert row["equal"] and row["embedded_complex_events"] > 0
        assert row["worker_cpu_us_per_event"] > 0 and row["coordinator_cpu_us_per_event"] > 0
        # Making the output records is part of the worker's work, per complex event.
        per_output = row["output_cpu_us_per_complex_event"]
        per_event = row["worker_cpu_us_per_event"]
        share = per_output * row["complex_events"][0] / (per_event * row["events"])
        assert per_output > 0 and 0 < share < 1
    default = WorkerSettings.model_fields["batch_size"].default  # not the environment's
    assert {r["label"]: r["batch"] for r in rows} == {"one": default, "two": 7}
    table = (tmp_path / "fleet-cpu.md").read_text()
    assert "| two | global | 3,000 | 7 |" in table and "| output record µs |" in table


def test_the_balanced_query_is_measured_beside_the_others_of_its_label(tmp_path: Path) -> None:
    args = ["--events", "3000", "--runs", "1", "--out", str(tmp_path), "--label", "one"]
    assert fleet_cpu.main(args) == 0
    assert fleet_cpu.main([*args, "--query", "balanced"]) == 0
    rows = orjson.loads((tmp_path / "fleet-cpu.json").read_bytes())
    assert sorted(r["query"] for r in rows) == ["balanced", "global", "partitioned"]
    (balanced,) = [r for r in rows if r["query"] == "balanced"]
    assert balanced["equal"] and balanced["embedded_complex_events"] > 0
    assert balanced["coordinator_cpu_us_per_event"] > 0

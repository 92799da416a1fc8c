"""Smoke test of the broker-batches benchmark: a tiny case on the mock, and its report."""

from __future__ import annotations

from pathlib import Path

import orjson

from benchmarks import broker_batches


def test_a_tail_read_after_many_batches_is_measured_and_reported() -> None:
    case = broker_batches.run_case("mock", 300, 300, 200.0, 1.5)

    assert (case.broker, case.records, case.batches) == ("mock", 300, 300)
    # Every record produced at the tail is read and timed, and the broker did some work.
    assert case.produced >= 250 and case.read >= case.produced - 20
    assert case.p50_ms is not None and case.p99_ms is not None and 0 < case.p50_ms <= case.p99_ms
    assert case.broker_cores > 0


def test_the_command_writes_every_case(tmp_path: Path) -> None:
    argv = ["--broker", "mock", "--records", "100", "--batches", "1", "100"]
    assert (
        broker_batches.main([*argv, "--seconds", "0.5", "--runs", "1", "--out", str(tmp_path)]) == 0
    )

    doc = orjson.loads((tmp_path / "broker-batches.json").read_bytes())
    assert [(c["broker"], c["batches"]) for c in doc["cases"]] == [("mock", 1), ("mock", 100)]
    text = (tmp_path / "broker-batches.md").read_text(encoding="utf-8")
    assert "| mock | 100 | 100 |" in text and "mock after 100 batches" in text

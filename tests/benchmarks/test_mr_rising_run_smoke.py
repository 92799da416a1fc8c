"""The rising-run benchmark runs end to end on a tiny stream and writes its results."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import mr_rising_run


def test_a_tiny_run_writes_results(tmp_path: Path) -> None:
    out = tmp_path / "results"
    mr_rising_run.main(
        ["--events", "3000", "--runs", "1", "--data", str(tmp_path), "--out", str(out)]
    )
    found = json.loads((out / "mr_rising_run.json").read_text())
    assert found["events"] == 3000
    assert found["output_rows"] > 0  # prices do rise now and then
    assert found["engine_events_per_s"] > 0
    assert "PATTERN (A B+)" in (out / "mr_rising_run.md").read_text()

"""A second compaction of an archive that one is compacting fails clearly and writes
nothing; once the first ends, the archive is free again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq
import pytest

from cerfleet.workers.backfill import compact_job
from cerfleet.workers.backfill.archive_lock import LOCK_NAME, ArchiveLocked, archive_lock


def _events(path: Path, n: int) -> Path:
    lines = [orjson.dumps({"type": "A", "t": 1_700_000_000_000 + i}) for i in range(n)]
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _compact(archive: Path, events: Path) -> int:
    args = ["--archive", str(archive), "--jsonl", str(events), "--topic", "t"]
    return compact_job.main([*args, "--time-field", "t"])


def test_a_second_compaction_fails_while_the_first_holds_the_archive(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = tmp_path / "archive"
    events = _events(tmp_path / "events.jsonl", 50)
    with archive_lock(spark, str(archive)):
        assert (archive / LOCK_NAME).exists()
        assert _compact(archive, events) == 2
        err = capsys.readouterr().err
        assert "is being compacted by process" in err
        assert LOCK_NAME in err and "delete the lock file" in err
        # Nothing written, and the holder's lock is left alone.
        assert not list(archive.glob("date=*"))
        assert (archive / LOCK_NAME).exists()
        with pytest.raises(ArchiveLocked), archive_lock(spark, str(archive)):
            pass
    assert not (archive / LOCK_NAME).exists()
    assert _compact(archive, events) == 0
    assert not (archive / LOCK_NAME).exists()
    assert pq.read_table(archive).num_rows == 50


def test_the_lock_is_released_when_the_compaction_fails(spark: Any, tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    with pytest.raises(RuntimeError, match="boom"), archive_lock(spark, str(archive)):
        raise RuntimeError("boom")
    assert not (archive / LOCK_NAME).exists()

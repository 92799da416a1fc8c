"""One compaction at a time per archive: a lock file inside the archive directory.

Two compactions appending the same archive at once could both find a record
missing and both write it. The first to create ``_cerfleet_compact.lock`` (Spark's
readers skip names starting with ``_``) holds the archive until it ends; a second
fails at once with a message naming the holder and what to do. Creation is
atomic on local paths (``O_CREAT | O_EXCL``) and on HDFS (create without
overwrite); object stores (s3a://, gs://) have no atomic create, so there two
compactions started within the same moment may both go ahead.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlparse

import orjson
from pyspark.sql import SparkSession

from cerfleet.errors import CerfleetError

__all__ = ["LOCK_NAME", "ArchiveLocked", "archive_lock"]

LOCK_NAME = "_cerfleet_compact.lock"


class ArchiveLocked(CerfleetError):
    pass


def _local(path: str) -> str | None:
    parsed = urlparse(path)
    if parsed.scheme in ("", "file"):
        return parsed.path if parsed.scheme else path
    return None


def _holder() -> bytes:
    return orjson.dumps(
        {"host": socket.gethostname(), "pid": os.getpid(), "since": int(time.time())}
    )


def _refuse(archive: str, lock: str, holder: bytes) -> ArchiveLocked:
    try:
        who = orjson.loads(holder)
        by = f"process {who['pid']} on {who['host']} since {time.ctime(who['since'])}"
    except (orjson.JSONDecodeError, KeyError, TypeError):
        by = "another job"
    return ArchiveLocked(
        f"archive {archive!r} is being compacted by {by} (lock file {lock}); wait for it to "
        "finish and run again, or delete the lock file if that compaction is gone"
    )


@contextmanager
def archive_lock(spark: SparkSession, archive: str) -> Iterator[None]:
    """Hold ``archive`` for one compaction, or raise ``ArchiveLocked``."""
    local = _local(archive)
    if local is not None:
        os.makedirs(local, exist_ok=True)
        lock = os.path.join(local, LOCK_NAME)
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            with open(lock, "rb") as fh:
                raise _refuse(archive, lock, fh.read()) from None
        with os.fdopen(fd, "wb") as fh:
            fh.write(_holder())
        try:
            yield
        finally:
            os.unlink(lock)
        return
    fs, path = _hadoop(spark, archive.rstrip("/") + "/" + LOCK_NAME)
    try:
        out = fs.create(path, False)
    except Exception as exc:  # py4j wraps the FileAlreadyExistsException
        if not fs.exists(path):
            raise
        raise _refuse(archive, str(path), b"") from exc
    out.write(bytearray(_holder()))
    out.close()
    try:
        yield
    finally:
        fs.delete(path, False)


def _hadoop(spark: SparkSession, path: str) -> tuple[Any, Any]:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    return hpath.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), hpath

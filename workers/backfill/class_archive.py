"""A class-data archive for the driver JVM of local-mode jobs: Spark's start, halved.

Most of a small backfill's fixed cost is the JVM loading and verifying Spark's classes:
``SparkSession.builder.getOrCreate()`` took 6.4 s here, and reading an archive's first
Parquet files 3.8 s more. A JDK (13 and later) can write the classes a run loaded to an
archive at exit (``-XX:ArchiveClassesAtExit``) and map it at the next start
(``-XX:SharedArchiveFile``): 3.5-4.2 s and 1.5-2.0 s with it. In local mode the driver's
JVM is also the executor, so one archive covers the whole job.

The archive is made by the first run of each job on a machine (the run pays for
writing it, about as much again as its start) and kept in the user's cache directory
under a name holding Spark's version and the Java binary, so a new Spark or a new JDK
makes a new one. It is written under a temporary name and renamed once the run has
succeeded, so concurrent first runs never leave a partial archive; a JVM that cannot use
an archive (another build, other class paths) starts without it. Clusters are left alone:
their executors' JVMs are not started here. ``CERFLEET_SPARK_CLASS_ARCHIVE=0`` turns it
off; a user's own ``spark.driver.extraJavaOptions`` or ``--driver-java-options`` wins.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ENV", "ClassArchive", "class_archive"]

ENV = "CERFLEET_SPARK_CLASS_ARCHIVE"
# Quiet: a missing or unusable archive is not the user's concern.
_QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


@dataclass(frozen=True)
class ClassArchive:
    """The archive of one job: ``java_options`` for spark-submit's driver, and what to
    do once the run has ended."""

    path: Path
    writing: Path | None  # the temporary file this run writes, None if it reads ``path``

    @property
    def java_options(self) -> str:
        if self.writing is None:
            return f"-XX:SharedArchiveFile={self.path} {_QUIET}"
        return f"-XX:ArchiveClassesAtExit={self.writing} {_QUIET}"

    def finish(self, succeeded: bool) -> None:
        """Keep the archive this run wrote if it succeeded; drop a partial one."""
        if self.writing is None:
            return
        with contextlib.suppress(OSError):
            if succeeded and self.writing.exists():
                os.replace(self.writing, self.path)
            else:
                self.writing.unlink(missing_ok=True)


def class_archive(job: str, master: str, spark_conf: list[str]) -> ClassArchive | None:
    """The archive for ``job`` run on ``master``, or None: not local mode, turned off, the
    user's own driver options, or nowhere to keep it."""
    if os.environ.get(ENV, "1") == "0" or not master.startswith("local"):
        return None
    if any(item.startswith("spark.driver.extraJavaOptions=") for item in spark_conf):
        return None
    java = _java()
    if java is None:
        return None
    try:
        import pyspark
    except ImportError:
        return None
    key = hashlib.sha256(f"{pyspark.__version__}\0{java}".encode()).hexdigest()[:16]
    folder = _cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    path = folder / f"spark-{job}-{key}.jsa"
    if path.exists():
        return ClassArchive(path, None)
    return ClassArchive(path, folder / f"{path.name}.{os.getpid()}.tmp")


def _java() -> str | None:
    """The Java binary spark-submit will run (as its launcher finds it), with its
    modification time: a JDK updated in place makes a new archive."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if found is None:
        return None
    try:
        real = os.path.realpath(found)
        return f"{real}\0{os.stat(real).st_mtime_ns}"
    except OSError:
        return None


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "cerfleet"

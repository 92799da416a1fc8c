"""``cerfleet compact`` / ``cerfleet backfill``: build the ``spark-submit`` command and run it.

The jobs themselves are plain PySpark scripts (``compact_job.py``,
``backfill_job.py``); these commands only add the Spark options and this
Python, so ``--dry-run`` prints exactly what one would type by hand.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from cerfleet.errors import CerfleetError

if TYPE_CHECKING:
    from cerfleet.workers.backfill.class_archive import ClassArchive

__all__ = ["add_spark_options", "job_argv", "spark_submit_command", "submit"]

JOBS = {
    "compact": Path(__file__).with_name("compact_job.py"),
    "backfill": Path(__file__).with_name("backfill_job.py"),
}


def add_spark_options(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("Spark")
    g.add_argument(
        "--master",
        default="local[*]",
        help="Spark master: local[2], spark://host:7077, yarn, k8s://… (default local[*])",
    )
    g.add_argument("--deploy-mode", choices=("client", "cluster"), help="spark-submit's")
    g.add_argument("--driver-memory", default="2g", help="default 2g")
    g.add_argument("--executor-memory", help="per executor, e.g. 4g")
    g.add_argument(
        "--spark-conf",
        action="append",
        metavar="KEY=VALUE",
        help="any Spark setting, passed as --conf (repeatable)",
    )
    g.add_argument(
        "--dry-run", action="store_true", help="print the spark-submit command, do not run it"
    )


def spark_submit_binary() -> str:
    home = os.environ.get("SPARK_HOME")
    if home:
        return str(Path(home) / "bin" / "spark-submit")
    found = shutil.which("spark-submit")
    if found:
        return found
    try:
        import pyspark
    except ImportError:
        raise CerfleetError(
            "spark-submit not found: install the Spark extra (pip install 'cerfleet[spark]') "
            "or set SPARK_HOME"
        ) from None
    return str(Path(pyspark.__file__).parent / "bin" / "spark-submit")


def job_argv(
    args: argparse.Namespace, declare: Callable[[argparse.ArgumentParser], None]
) -> list[str]:
    """The job's own options, back as command-line words (defaults left out)."""
    probe = argparse.ArgumentParser(add_help=False)
    declare(probe)
    out: list[str] = []
    for action in probe._actions:
        if not action.option_strings:
            continue
        value = getattr(args, action.dest, None)
        if value is None or value is False or value == action.default:
            continue
        flag = max(action.option_strings, key=len)
        if isinstance(action, argparse._StoreTrueAction):
            out.append(flag)
        elif isinstance(action, argparse._AppendAction):
            for item in value:
                out += [flag, str(item)]
        else:
            out += [flag, str(value)]
    return out


def spark_submit_command(
    job: str,
    args: argparse.Namespace,
    declare: Callable[[argparse.ArgumentParser], None],
    archive: ClassArchive | None = None,
) -> list[str]:
    cmd = [spark_submit_binary(), "--master", args.master, "--name", f"cerfleet-{job}"]
    if args.deploy_mode:
        cmd += ["--deploy-mode", args.deploy_mode]
    if args.driver_memory:
        cmd += ["--driver-memory", args.driver_memory]
    if args.executor_memory:
        cmd += ["--executor-memory", args.executor_memory]
    for item in args.spark_conf or []:
        if "=" not in item:
            raise CerfleetError(f"--spark-conf expects KEY=VALUE, got {item!r}")
        cmd += ["--conf", item]
    if archive is not None:
        cmd += ["--driver-java-options", archive.java_options]
    return [*cmd, str(JOBS[job]), *job_argv(args, declare)]


def submit(
    job: str, args: argparse.Namespace, declare: Callable[[argparse.ArgumentParser], None]
) -> int:
    # A dry run prints the command of a run that would read an existing archive, and
    # never starts writing one.
    # Imported here: every cerfleet command imports this module for its options.
    from cerfleet.workers.backfill.class_archive import class_archive

    archive = class_archive(job, args.master, args.spark_conf or [])
    if args.dry_run and archive is not None and archive.writing is not None:
        archive = None
    cmd = spark_submit_command(job, args, declare, archive)
    env = dict(os.environ)
    # Driver and tasks run this very Python (the one cerfleet is installed in), unless the
    # user chose another.
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if args.dry_run:
        print(shlex.join(cmd))
        return 0
    code = subprocess.call(cmd, env=env)
    if archive is not None:
        archive.finish(code == 0)
    return code

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local Spark (two cores, as on CI machines) for every job test."""
    os.environ.setdefault("CERFLEET_SPARK_MASTER", "local[2]")
    from cerfleet.workers.backfill.spark_session import session

    spark = session("cerfleet-tests")
    try:
        yield spark
    finally:
        spark.stop()

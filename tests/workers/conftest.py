"""The fleet's process tests share one fixture: a coordinator and workers of their own
against the session's broker, closed after each test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fleet import Fleet
from tests.kafka_broker import KafkaBroker


@pytest.fixture
def fleet(kafka: KafkaBroker, tmp_path: Path) -> Iterator[Fleet]:
    f = Fleet(kafka, tmp_path)
    yield f
    f.close()

"""parse_timestamp: numbers are milliseconds, strings numeric or ISO-8601, else None."""

from __future__ import annotations

import enum
import math

import pytest

from cerfleet.events.timestamps import parse_timestamp

MAY_1_NOON_MS = 1_714_564_800_000.0  # 2024-05-01T12:00:00Z


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, 0.0),
        (1_714_564_800_000, MAY_1_NOON_MS),
        (-5, -5.0),
        (12.5, 12.5),
        ("1714564800000", MAY_1_NOON_MS),
        (" 42 ", 42.0),
        ("12.5", 12.5),
        ("-3", -3.0),
        ("1e3", 1000.0),
    ],
)
def test_numbers_are_milliseconds(value: object, expected: float) -> None:
    result = parse_timestamp(value)
    assert result == expected
    assert type(result) is float


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-05-01T12:00:00Z", MAY_1_NOON_MS),
        ("2024-05-01T12:00:00+00:00", MAY_1_NOON_MS),
        ("2024-05-01T14:00:00+02:00", MAY_1_NOON_MS),
        ("2024-05-01T07:00:00-05:00", MAY_1_NOON_MS),
        ("2024-05-01T12:00:00", MAY_1_NOON_MS),  # naive is UTC
        ("2024-05-01 12:00:00", MAY_1_NOON_MS),
        ("2024-05-01T12:00:00.250Z", MAY_1_NOON_MS + 250),
        ("2024-05-01T12:00:00.123456Z", MAY_1_NOON_MS + 123.456),
        ("2024-05-01", MAY_1_NOON_MS - 12 * 3_600_000),
        ("1970-01-01T00:00:00Z", 0.0),
        ("1969-12-31T23:59:59.999Z", -1.0),
    ],
)
def test_iso_8601(text: str, expected: float) -> None:
    result = parse_timestamp(text)
    assert result is not None
    assert math.isclose(result, expected, rel_tol=0, abs_tol=1e-6)


def test_iso_milliseconds_are_exact() -> None:
    # No float noise from timestamp() * 1000: whole milliseconds stay whole.
    assert parse_timestamp("2024-05-01T12:00:00.123Z") == MAY_1_NOON_MS + 123


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        False,
        "",
        "   ",
        "yesterday",
        "nan",
        "inf",
        "1_000",
        "2024-13-01",
        "12:00",
        float("nan"),
        float("inf"),
        10**400,  # beyond every float
        -(10**320),
        [1],
        {"ms": 1},
        b"123",
    ],
)
def test_everything_else_is_none(value: object) -> None:
    assert parse_timestamp(value) is None


def test_int_subclasses_other_than_bool_are_numbers() -> None:
    class Millis(enum.IntEnum):
        SECOND = 1000

    assert parse_timestamp(Millis.SECOND) == 1000.0

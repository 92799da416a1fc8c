"""What the format parsers hand to the reader: an event, or why a record is not one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cerfleet.errors import EventError

__all__ = ["Malformed", "MalformedEvent", "Parsed", "json_kind", "type_problem"]


@dataclass(frozen=True, slots=True)
class Malformed:
    """A record that is not an event; ``reason`` is shown to the user after ``FILE:LINE:``."""

    reason: str


# A parser yields (line number, Parsed); a dict is a good event.
Parsed = dict[str, Any] | Malformed


class MalformedEvent(EventError):
    """A record that is not a usable event, raised in strict mode (or for an unusable CSV header).

    ``line`` is the 1-based line the record starts on, ``reason`` the bare
    explanation and ``source`` the input's display name ("<stdin>" for stdin).
    """

    def __init__(self, line: int, reason: str, source: str | None = None) -> None:
        self.line = line
        self.reason = reason
        self.source = source
        where = f"{source}:{line}" if source else f"line {line}"
        super().__init__(f"{where}: {reason}")

    def __reduce__(self) -> tuple[object, ...]:
        # Raised in the decoding process too (``events.prefetch``): pickled whole.
        return (MalformedEvent, (self.line, self.reason, self.source))


def json_kind(value: object) -> str:
    """The JSON name of a decoded value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def type_problem(event: dict[str, Any], type_field: str) -> str | None:
    """Why ``event`` has no usable event type, or None when ``event[type_field]`` is one."""
    if type_field not in event:
        return f"missing type field {type_field!r}"
    value = event[type_field]
    if not isinstance(value, str):
        return f"type field {type_field!r} is not a string (got {json_kind(value)})"
    if not value:
        return f"empty type field {type_field!r}"
    return None

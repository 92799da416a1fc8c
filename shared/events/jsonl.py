"""JSON Lines: one JSON object per line, parsed one line at a time."""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from cerfleet.events.records import Malformed, Parsed, json_kind, type_problem

__all__ = ["BadRecord", "loads", "parse_jsonl", "parse_line"]


def _optional_orjson() -> Callable[[bytes | str], Any] | None:
    # orjson is a speed-up, never a requirement. Imported by name so the module
    # type-checks the same with or without it installed.
    try:
        module = importlib.import_module("orjson")
    except ImportError:
        return None
    loads: Callable[[bytes | str], Any] = module.loads
    return loads


_fast_loads = _optional_orjson()


class BadRecord(Exception):
    """Internal: carries the reason a line is not JSON."""


def _reject_constant(name: str) -> Any:
    # The stdlib accepts NaN/Infinity, which are not JSON (and orjson rejects);
    # refusing them keeps the verdict independent of whether orjson is installed.
    raise BadRecord(f"not valid JSON: {name} is not allowed")


def _integer(text: str) -> int | float:
    """An integer as orjson reads it: exact within 64 bits (signed or unsigned), a
    float beyond, so that a value decodes alike whichever decoder took its line (a
    line may fall back to the stdlib for another of its values). Beyond a float's
    range orjson refuses the line; the stdlib keeps the exact integer."""
    value = int(text)
    if -(2**63) <= value < 2**64:
        return value
    try:
        approx = float(value)
    except OverflowError:
        return value
    return approx if approx not in (float("inf"), float("-inf")) else value


def loads(raw: bytes | str) -> Any:
    """The JSON value of one record, as every reader of cerfleet decodes it (``BadRecord``
    when it is not JSON)."""
    if _fast_loads is not None:
        try:
            return _fast_loads(raw)
        except ValueError:
            # orjson is stricter than the stdlib in a few corners (integers
            # beyond 64 bits, nesting depth) and its messages are terser; the
            # stdlib gives the final verdict, so both setups accept the same input.
            pass
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise BadRecord(f"not valid UTF-8 (byte {err.start + 1})") from None
    try:
        return json.loads(raw, parse_constant=_reject_constant, parse_int=_integer)
    except json.JSONDecodeError as err:
        raise BadRecord(f"not valid JSON: {err.msg} (column {err.colno})") from None
    except RecursionError:
        raise BadRecord("not valid JSON: nested too deeply") from None
    except ValueError as err:  # an integer beyond Python's 4300-digit conversion limit
        raise BadRecord(f"not valid JSON: {err}") from None


def parse_jsonl(lines: Iterable[bytes | str], type_field: str) -> Iterator[tuple[int, Parsed]]:
    """Yield ``(line_number, event_or_Malformed)`` for each non-blank line of ``lines``.

    Lines may be bytes (files, stdin: decoded here so a bad line is reported,
    not fatal) or str (text streams). Line numbers are 1-based physical lines.
    """
    for line_number, raw in enumerate(lines, 1):
        if line_number == 1:
            # A UTF-8 byte order mark (Windows editors) is not part of the JSON.
            if isinstance(raw, bytes):
                raw = raw.removeprefix(b"\xef\xbb\xbf")
            else:
                raw = raw.removeprefix("\ufeff")
        if not raw.strip():
            continue
        # Without its line break: a record cut short is reported at the column where
        # it breaks off, not at "column 1" of the next line.
        raw = raw.rstrip(b"\r\n") if isinstance(raw, bytes) else raw.rstrip("\r\n")
        yield line_number, parse_line(raw, type_field)


def parse_line(raw: bytes | str, type_field: str) -> Parsed:
    """One non-blank line: the event, or why it is not one."""
    try:
        value = loads(raw)
    except BadRecord as err:
        return Malformed(str(err))
    if type(value) is not dict:
        return Malformed(f"not a JSON object (got {json_kind(value)})")
    problem = type_problem(value, type_field)
    return value if problem is None else Malformed(problem)

"""``events.jsonl.loads``: one JSON value decodes alike whichever decoder reads its line."""

from __future__ import annotations

import pytest

from cerfleet.events.jsonl import loads

# A lone surrogate makes orjson refuse a line, so the stdlib decodes all of it.
_STDLIB_ONLY = '"\\ud800"'


@pytest.mark.parametrize(
    "number",
    [
        "9223372036854775807",
        "18446744073709551615",  # exact: within 64 bits, unsigned
        "18446744073709551616",  # a float beyond
        "-9223372036854775809",
        "123456789012345678901234567890",
        "1" + "0" * 400,  # beyond a float's range: orjson refuses it, kept exact
    ],
)
def test_an_integer_decodes_alike_on_either_decoder(number: str) -> None:
    alone = loads(f"[{number}]".encode())[0] if len(number) < 300 else int(number)
    beside = loads(f"[{number}, {_STDLIB_ONLY}]".encode())[0]
    assert beside == alone and type(beside) is type(alone)
    assert type(beside) is (int if -(2**63) <= int(number) < 2**64 or len(number) > 300 else float)

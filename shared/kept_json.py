"""JSON bytes that are kept: in a cache, a held event, a set of results seen.

``orjson.dumps`` hands back its whole write buffer (at least 4 KiB in orjson 3.12 and
later) with the length set to the text's: a 20-byte key costs 4 KiB for as long as it
lives. That is harmless for bytes written out and dropped, and ruinous for bytes held
by the thousand (a cache of 65,536 record keys was a quarter of a GiB). ``dumps_kept``
copies the text into a bytes object of its own size.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["dumps_kept", "kept"]


def kept(data: bytes) -> bytes:
    """``data`` (an ``orjson.dumps`` result) in a bytes object of its own size, for
    bytes first used briefly and only sometimes kept."""
    return bytes(memoryview(data))


def dumps_kept(value: Any, option: int | None = None) -> bytes:
    """``orjson.dumps(value, option=option)`` in a bytes object of the text's size."""
    return kept(orjson.dumps(value, option=option))

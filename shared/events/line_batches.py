"""A byte stream cut into batches of whole lines, each line numbered.

Reads in large chunks through a ``read(n)`` that returns what is there (``os.read`` on
a file descriptor, ``read1`` of a buffered stream): from a file, a batch is up to
``max_bytes`` of lines; from a pipe or terminal, whatever has arrived (such a read
returns as soon as anything is there), so a line is handed on as soon as it is
complete and a live stream stays live.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = ["LineBatch", "line_batches", "whole_line_chunks"]

DEFAULT_MAX_BYTES = 1 << 20
_BOM = b"\xef\xbb\xbf"


@dataclass
class LineBatch:
    """Non-blank-looking lines (no line break, no carriage return at the end), their
    1-based line numbers, the stream's bytes read so far, and whether every line is
    ASCII (checked once for the block: the decoder then checks no line for UTF-8)."""

    lines: list[bytes]
    numbers: list[int]
    bytes_read: int
    ascii: bool = False


def line_batches(
    read: Callable[[int], bytes],
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    part: int = 0,
    parts: int = 1,
) -> Iterator[LineBatch]:
    """Batches of the lines ``read`` returns until end of input (an empty read); a
    last line without a line break counts. Empty lines are left out (their numbers
    are skipped); lines of only spaces are kept for the decoder to drop.

    ``part`` of ``parts``: only batches ``part``, ``part + parts``, … are made (one of
    several processes taking turns, each reading the whole input); the others' lines
    are only counted, so numbers are the input's."""
    next_number = 1
    for i, (text, total) in enumerate(whole_line_chunks(read, max_bytes)):
        if i % parts == part:
            yield _split(text, next_number, total)
        next_number += text.count(b"\n") + 1


def _split(text: bytes, first: int, bytes_read: int) -> LineBatch:
    """The lines of ``text`` (whole lines joined by line breaks), the first numbered
    ``first``; empty lines left out, their numbers skipped."""
    lines = text.split(b"\n")
    if b"\r" in text:  # CRLF files: the CR is no part of the record
        lines = [line.rstrip(b"\r") for line in lines]
    ascii = text.isascii()
    numbers = range(first, first + len(lines))
    if b"" in lines:
        kept = [(n, line) for n, line in zip(numbers, lines, strict=True) if line]
        return LineBatch([line for _, line in kept], [n for n, _ in kept], bytes_read, ascii)
    return LineBatch(lines, list(numbers), bytes_read, ascii)


def whole_line_chunks(read: Callable[[int], bytes], max_bytes: int) -> Iterator[tuple[bytes, int]]:
    """Whole lines (the last line break left off) of up to about ``max_bytes``, and the
    bytes read so far; a last line without a line break counts, and a UTF-8 byte order
    mark at the start is dropped (it is not part of the first record)."""
    carry = b""
    total = 0
    first = True
    while True:
        chunk = read(max_bytes)
        total += len(chunk)
        if chunk:
            data = carry + chunk
            end = data.rfind(b"\n")
            if end < 0:
                carry = data
                continue
            text, carry = data[:end], data[end + 1 :]
        elif carry:
            text, carry = carry, b""
        else:
            return
        if first:
            text = text.removeprefix(_BOM)
            first = False
        yield text, total
        if not chunk:
            return

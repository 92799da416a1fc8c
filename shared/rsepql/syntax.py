"""RSEP-QL's syntax tree: named windows on streams, basic event patterns (BEPs) on
them, and the chain of SEQ inside MATCH."""

from __future__ import annotations

from dataclasses import dataclass

from cerfleet import pattern
from cerfleet.errors import RsepqlError
from cerfleet.pattern import Span


@dataclass(frozen=True)
class Window:
    """``FROM NAMED <stream> WIN [...] AS <name>``: ``kind`` is ``range`` (the sliding
    time window W^τ of width ``ms``, sliding by the time unit), ``landmark`` (W^λ from
    the instant ``ms``) or ``identity`` (no ``WIN``: W^id, every item so far)."""

    name: str
    stream: str
    kind: str
    ms: int = 0


@dataclass(frozen=True)
class Bep:
    """``EVENT ON <window> { triples FILTER(...) } AS name``."""

    name: str
    window: str
    triples: tuple[pattern.TriplePattern, ...]
    filters: tuple[pattern.Pred, ...]
    span: Span | None = None

    def variables(self) -> frozenset[str]:
        return frozenset(
            t.name for triple in self.triples for t in triple if isinstance(t, pattern.GraphVar)
        )


@dataclass(frozen=True)
class Query:
    """``select`` None is ``SELECT *``; ``chain`` the BEP names of ``E1 SEQ E2 SEQ …``
    in order (SEQ is associative under Eq. (7): a chain of strictly later items)."""

    select: tuple[str, ...] | None
    windows: dict[str, Window]
    events: dict[str, Bep]
    chain: tuple[str, ...]

    def stream_of(self, event: str) -> str:
        return self.windows[self.events[event].window].stream


def error(text: str, message: str, span: Span | None, expected: str | None = None) -> RsepqlError:
    """An ``RsepqlError`` at ``span`` (line 1, column 1 when unknown)."""
    line, column, length = 1, 1, 1
    if span is not None:
        line, column = span.line, span.column
        length = span.end_column - span.column if span.end_line == span.line else 1
    return RsepqlError(
        message, line=line, column=column, source=text, length=max(length, 1), expected=expected
    )

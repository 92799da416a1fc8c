"""Errors a user can cause, each able to say where and what was expected."""

from __future__ import annotations


class CerfleetError(Exception):
    """Base class for errors reported to users without a traceback."""


class EvaluationLimit(CerfleetError):
    """An evaluator refused to go on with a stream: its state would outgrow a bound set
    for untrusted queries and streams. A worker suspends the query on that partition
    (``cerfleet.workers.budget``) rather than stop."""


class CEQLError(CerfleetError):
    """A query that cannot be compiled.

    Carries the 1-based ``line`` and ``column`` of the offending text, its
    ``length`` (for the caret run) and the query ``source`` so ``str()`` shows the
    line with carets under the offending text, then what was expected.
    """

    def __init__(
        self,
        message: str,
        *,
        line: int,
        column: int,
        source: str,
        length: int = 1,
        expected: str | None = None,
    ) -> None:
        self.message = message
        self.line = line
        self.column = column
        self.length = max(1, length)
        self.source = source
        self.expected = expected
        super().__init__(self.render())

    def render(self) -> str:
        lines = self.source.splitlines() or [""]
        text = lines[self.line - 1] if 0 < self.line <= len(lines) else ""
        # Keep the caret aligned when the line holds tabs.
        pad = "".join("\t" if ch == "\t" else " " for ch in text[: self.column - 1])
        caret = pad + "^" * min(self.length, max(1, len(text) - self.column + 1))
        out = [f"line {self.line}, column {self.column}: {self.message}", f"  {text}", f"  {caret}"]
        if self.expected:
            out.append(f"expected {self.expected}")
        return "\n".join(out)


class EventError(CerfleetError):
    """An input record that is not a usable event (not JSON, not an object, no type, ...)."""


class SnapshotError(CerfleetError):
    """A snapshot that does not belong to this query or is corrupt."""


class MatchRecognizeError(CEQLError):
    """A MATCH_RECOGNIZE query that cannot be compiled: reported like CEQL's (line,
    column, carets, what was expected), and caught wherever ``CEQLError`` is."""


class SpaseqError(CEQLError):
    """A SPAseq query that cannot be compiled: reported like CEQL's (line, column,
    carets, what was expected), and caught wherever ``CEQLError`` is."""


class RsepqlError(CEQLError):
    """An RSEP-QL query that cannot be compiled, or that uses what the engine does not
    support: reported like CEQL's (line, column, carets, what was expected)."""

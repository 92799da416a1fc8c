"""SPAseq's syntax tree: a SEQ of elements over named graph-pattern matches (GPMs)."""

from __future__ import annotations

from dataclasses import dataclass, field

from cerfleet import pattern
from cerfleet.errors import SpaseqError
from cerfleet.pattern import Span


@dataclass(frozen=True)
class Ref:
    """A GPM named in SEQ."""

    name: str
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Conj:
    """``Ψ1 & Ψ2``: events at the same timestamp, their mappings joined (Def. 8)."""

    left: BOp
    right: BOp


@dataclass(frozen=True)
class Disj:
    """``Ψ1 | Ψ2``: either (Def. 9)."""

    left: BOp
    right: BOp


BOp = Ref | Conj | Disj


@dataclass(frozen=True)
class Element:
    """One element of SEQ: a BOp expression, or ``X+`` (Kleene+ of one GPM)."""

    bop: BOp
    kleene: bool = False


@dataclass(frozen=True)
class Gpm:
    """``DEFINE GPM name ON stream { triples FILTER(...) GRAPH <iri> { ... } }``.

    ``local`` holds the filters over the GPM's own variables; ``stateful`` those that
    also read variables bound by earlier elements (checked on the joined mappings);
    ``optional`` the ``OPTIONAL { … }`` groups, left-joined after the other patterns
    and before the filters; ``absent`` the ``FILTER NOT EXISTS { … }`` groups."""

    name: str
    stream: str
    triples: tuple[pattern.TriplePattern, ...]
    local: tuple[pattern.Pred, ...]
    stateful: tuple[pattern.Pred, ...]
    background: str | None
    background_triples: tuple[pattern.TriplePattern, ...]
    span: Span | None = None
    optional: tuple[tuple[pattern.TriplePattern, ...], ...] = ()
    absent: tuple[tuple[pattern.TriplePattern, ...], ...] = ()

    def variables(self) -> frozenset[str]:
        """The variables the GPM's triples bind in every solution (not those only an
        OPTIONAL group binds)."""
        return frozenset(
            t.name
            for triple in self.triples + self.background_triples
            for t in triple
            if isinstance(t, pattern.GraphVar)
        )

    def all_variables(self) -> frozenset[str]:
        """Those and the variables OPTIONAL groups may bind."""
        extra = {
            t.name
            for group in self.optional
            for triple in group
            for t in triple
            if isinstance(t, pattern.GraphVar)
        }
        return self.variables() | extra


@dataclass(frozen=True)
class Query:
    """``select`` None is ``SELECT *``; ``within_ms`` None: one window, unbounded;
    ``ops[i]`` is the selection operator between ``elements[i]`` and ``[i + 1]``."""

    select: tuple[str, ...] | None
    within: tuple[int, str] | None
    streams: tuple[tuple[str, str], ...]
    elements: tuple[Element, ...]
    ops: tuple[str, ...]
    gpms: dict[str, Gpm]

    @property
    def within_ms(self) -> int | None:
        if self.within is None:
            return None
        return self.within[0] * pattern.TIME_UNITS_MS[self.within[1]]


def refs(bop: BOp) -> list[str]:
    """The GPM names of a BOp expression, left to right."""
    if isinstance(bop, Ref):
        return [bop.name]
    return refs(bop.left) + refs(bop.right)


def error(text: str, message: str, span: Span | None, expected: str | None = None) -> SpaseqError:
    """A ``SpaseqError`` at ``span`` (line 1, column 1 when unknown)."""
    line, column, length = 1, 1, 1
    if span is not None:
        line, column = span.line, span.column
        length = span.end_column - span.column if span.end_line == span.line else 1
    return SpaseqError(
        message, line=line, column=column, source=text, length=length, expected=expected
    )

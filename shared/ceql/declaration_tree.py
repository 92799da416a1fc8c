"""CEQL's parse tree to the pattern form: the declarations before a query (CORE's
``CREATE STREAM`` and ``CREATE QUARANTINE``, the paper's ``DECLARE STREAM``), the
transformer methods ``parser._ToAst`` inherits besides those of ``PredicateTree``."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from lark import Token, v_args
from lark.tree import Meta

from cerfleet import pattern
from cerfleet.ceql.predicate_tree import PredicateTree, token_span
from cerfleet.errors import CEQLError

__all__ = ["DeclarationTree", "Names", "plural"]

# CORE's engine declares attributes as `long` too.
_TYPE_SYNONYMS = {"long": "int"}


def plural(unit: Token) -> str:
    upper = unit.value.upper()
    return upper if upper.endswith("S") else upper + "S"


@dataclass(frozen=True)
class Names:
    """Identifiers of a clause (SELECT list, FROM list, PARTITION BY) with their spans."""

    names: tuple[str, ...]
    spans: tuple[pattern.Span | None, ...]

    @classmethod
    def of(cls, tokens: Iterable[Token]) -> Names:
        toks = [t for t in tokens if isinstance(t, Token) and t.type == "NAME"]
        return cls(tuple(t.value for t in toks), tuple(token_span(t) for t in toks))


@v_args(meta=True)
class DeclarationTree(PredicateTree):
    """Builds declaration nodes bottom-up; children are the already transformed nodes."""

    def __init__(self, source: str) -> None:
        super().__init__()
        self._source = source

    def declaration(self, meta: Meta, children: list[Any]) -> pattern.StreamDecl:
        _declare, _stream, name, *events = children
        return pattern.StreamDecl(name.value, tuple(events), token_span(name))

    def quarantine(self, meta: Meta, children: list[Any]) -> tuple[pattern.Quarantine, ...]:
        return tuple(children[2:])

    def policy(self, meta: Meta, children: list[Any]) -> pattern.Quarantine:
        kind, *rest = children
        span_ms = rest.pop(0) if kind.type != "DIRECT" else None
        names = Names.of(rest)
        return pattern.Quarantine(
            pattern.QuarantineKind[kind.type],
            names.names,
            span_ms,
            span=token_span(kind),
            stream_spans=names.spans,
        )

    def span(self, meta: Meta, children: list[Any]) -> int | float:
        numbers, units = children[0::2], children[1::2]
        total = sum(
            n.value * pattern.TIME_UNITS_MS[plural(u)] for n, u in zip(numbers, units, strict=True)
        )
        return int(total) if isinstance(total, float) and total.is_integer() else total

    def event_decl(self, meta: Meta, children: list[Any]) -> pattern.EventDecl:
        _event, name, *attrs = children
        return pattern.EventDecl(
            name.value, tuple(a for a in attrs if a is not None), token_span(name)
        )

    def attr_decl(self, meta: Meta, children: list[Token]) -> tuple[str, pattern.AttrType]:
        name, type_ = children
        spelled = type_.value.lower()
        try:
            return name.value, pattern.AttrType(_TYPE_SYNONYMS.get(spelled, spelled))
        except ValueError:
            raise self._error(
                f"unknown attribute type '{type_.value}'",
                type_,
                "one of: " + ", ".join(t.value for t in pattern.AttrType),
            ) from None

    def _error(self, message: str, tok: Token, expected: str) -> CEQLError:
        return CEQLError(
            message,
            line=tok.line or 1,
            column=tok.column or 1,
            length=len(tok.value),
            source=self._source,
            expected=expected,
        )

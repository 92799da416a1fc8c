"""Render a CEQL AST back to query text.

The text re-parses to an equal AST (spans aside). The printer adds the
parentheses the grammar's precedences require and no others, relying on every
binary operator being left-associative: a left-nested chain such as
``A ; B ; C`` prints bare, a right-nested one gets parentheses.

CEL precedence, loosest first: ``FILTER`` (which takes the whole formula on its
left), ``OR``, ``;``, then the postfix ``+`` and ``AS``. Filters and predicates:
``OR`` below ``AND`` below ``NOT``. Arithmetic: ``+ -`` below ``* / %`` below
unary minus.
"""

from __future__ import annotations

import math
import re

from cerfleet import pattern
from cerfleet.ceql.lexer import PLAIN_KEYWORDS

__all__ = [
    "format_filter",
    "format_formula",
    "format_name",
    "format_predicate",
    "format_value",
    "to_ceql",
]


# ------------------------------------------------------------------------ literals

# Only escapes the parser resolves; any other character (even a raw newline)
# may stand inside the quotes as is.
_STRING_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\t": "\\t"}


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_RESERVED = frozenset(
    {*PLAIN_KEYWORDS, *pattern.TIME_UNITS_MS, *(u.removesuffix("S") for u in pattern.TIME_UNITS_MS)}
)


def format_name(name: str) -> str:
    """A name as it re-parses to itself: bare when it is a plain identifier that no
    keyword spells, else in backticks (a backtick inside doubled)."""
    if _IDENTIFIER.fullmatch(name) and name.upper() not in _RESERVED:
        return name
    return "`" + name.replace("`", "``") + "`"


def format_string(value: str) -> str:
    """A single-quoted string literal with backslash escapes."""
    return "'" + "".join(_STRING_ESCAPES.get(ch, ch) for ch in value) + "'"


def format_value(value: pattern.Scalar) -> str:
    """A literal as CEQL text: TRUE/FALSE, integers, floats via ``repr``, quoted strings."""
    # bool first: it is a subclass of int.
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"CEQL has no literal for the float {value!r}")
        return repr(value)
    if isinstance(value, str):
        return format_string(value)
    raise TypeError(f"not a CEQL literal: {value!r}")


# ------------------------------------------------------------- value expressions


_ARITH_LEVEL = {"+": 1, "-": 1, "*": 2, "/": 2, "%": 2}
_FACTOR = 3  # attributes, literals, unary minus and parenthesised expressions


def _expr_level(expr: pattern.Expr) -> int:
    return _ARITH_LEVEL[expr.op] if isinstance(expr, pattern.Arith) else _FACTOR


def format_expr(expr: pattern.Expr) -> str:
    """An arithmetic expression."""
    if isinstance(expr, pattern.Attr):
        return format_name(expr.name)
    if isinstance(expr, pattern.VarAttr):
        var, attr = format_name(expr.var), format_name(expr.attr)
        return f"PREV({var})[{attr}]" if expr.back else f"{var}[{attr}]"
    if isinstance(expr, pattern.Const):
        return format_value(expr.value)
    if isinstance(expr, pattern.Neg):
        # Only an attribute stays bare: `--x` would start a comment, and `-1`
        # would read as a negative literal (the parser folds `-` into numbers).
        inner = format_expr(expr.operand)
        bare = isinstance(expr.operand, pattern.Attr | pattern.VarAttr)
        return f"-{inner}" if bare else f"-({inner})"
    if isinstance(expr, pattern.Arith):
        level = _ARITH_LEVEL[expr.op]
        left = _expr_operand(expr.left, level)
        right = _expr_operand(expr.right, level + 1)
        return f"{left} {expr.op} {right}"
    raise TypeError(f"not an expression: {expr!r}")


def _expr_operand(expr: pattern.Expr, min_level: int) -> str:
    text = format_expr(expr)
    # A leading minus is parenthesised so `x - -y` cannot lex as a `--` comment.
    if _expr_level(expr) < min_level or isinstance(expr, pattern.Neg) or _is_negative_number(expr):
        return f"({text})"
    return text


def _is_negative_number(expr: pattern.Expr) -> bool:
    value = expr.value if isinstance(expr, pattern.Const) else None
    return isinstance(value, int | float) and not isinstance(value, bool) and value < 0


# ------------------------------------------------------------------- predicates


def format_predicate(pred: pattern.Pred) -> str:
    """A unary predicate (the ``P`` in ``x[P]``)."""
    if isinstance(pred, pattern.BoolLit):
        return "TRUE" if pred.value else "FALSE"
    if isinstance(pred, pattern.Compare):
        return f"{format_expr(pred.left)} {pred.op} {format_expr(pred.right)}"
    if isinstance(pred, pattern.InList):
        values = ", ".join(format_value(c.value) for c in pred.values)
        return f"{format_expr(pred.expr)} {_not(pred.negated)}IN ({values})"
    if isinstance(pred, pattern.InRange):
        low, high = format_value(pred.low.value), format_value(pred.high.value)
        return f"{format_expr(pred.expr)} {_not(pred.negated)}IN RANGE({low}, {high})"
    if isinstance(pred, pattern.Like):
        quoted = format_string(pred.pattern)
        return f"{format_expr(pred.expr)} {_not(pred.negated)}LIKE {quoted}"
    if isinstance(pred, pattern.PNot):
        return f"NOT ({format_predicate(pred.operand)})"
    if isinstance(pred, pattern.PAnd | pattern.POr):
        return _connective(pred, format_predicate(pred.left), format_predicate(pred.right))
    raise TypeError(f"not a predicate: {pred!r}")


def _not(negated: bool) -> str:
    return "NOT " if negated else ""


# ---------------------------------------------------------------------- filters


def format_filter(filt: pattern.FilterExpr) -> str:
    """A filter: ``x[P]`` atoms combined with AND / OR."""
    if isinstance(filt, pattern.FilterAtom):
        return f"{format_name(filt.var)}[{format_predicate(filt.pred)}]"
    if isinstance(filt, pattern.Correlation):
        return format_predicate(filt.pred)
    if isinstance(filt, pattern.FilterAnd | pattern.FilterOr):
        return _connective(filt, format_filter(filt.left), format_filter(filt.right))
    raise TypeError(f"not a filter: {filt!r}")


# AND / OR in predicates and in filters: OR binds loosest, then AND, then atoms.
_Connective = pattern.PAnd | pattern.POr | pattern.FilterAnd | pattern.FilterOr


def _bool_level(node: pattern.Pred | pattern.FilterExpr) -> int:
    if isinstance(node, pattern.POr | pattern.FilterOr):
        return 1
    if isinstance(node, pattern.PAnd | pattern.FilterAnd):
        return 2
    return 3


def _connective(node: _Connective, left: str, right: str) -> str:
    level = _bool_level(node)
    if _bool_level(node.left) < level:
        left = f"({left})"
    if _bool_level(node.right) <= level:  # left-associative
        right = f"({right})"
    word = "AND" if isinstance(node, pattern.PAnd | pattern.FilterAnd) else "OR"
    return f"{left} {word} {right}"


# ------------------------------------------------------------------ CEL formulas

# Binding strength of each formula node as printed bare (higher binds tighter).
_ATOM, _POSTFIX, _SEQ, _AND, _OR, _FILTER = 5, 4, 3, 2, 1, 0


def _qualifier(formula: pattern.Formula) -> str | None:
    """``S>E`` for the form the parser gives it (E filtered on its own stream), else None."""
    match formula:
        case pattern.Filter(
            formula=pattern.EventType(name=name),
            filter=pattern.FilterAtom(var=var, pred=pattern.InStream(streams=(stream,))),
        ) if var == name:
            return f"{format_name(stream)}>{format_name(name)}"
    return None


def _level(formula: pattern.Formula) -> int:
    if isinstance(formula, pattern.EventType | pattern.NotEvent) or _qualifier(formula):
        return _ATOM
    if isinstance(formula, pattern.As | pattern.Plus | pattern.ContiguousPlus):
        return _POSTFIX
    if isinstance(formula, pattern.Seq | pattern.Contiguous | pattern.Absent):
        return _SEQ
    if isinstance(formula, pattern.And):
        return _AND
    if isinstance(formula, pattern.Or):
        return _OR
    return _FILTER


def format_formula(formula: pattern.Formula) -> str:
    """A CEL formula with the parentheses its structure needs."""
    if isinstance(formula, pattern.EventType):
        return format_name(formula.name)
    if isinstance(formula, pattern.As):
        # Postfix operands stay bare only when atomic, so `A+ AS x` vs `A AS x+`
        # chains never come up.
        return f"{_operand(formula.formula, _ATOM)} AS {format_name(formula.var)}"
    if isinstance(formula, pattern.Plus):
        return f"{_operand(formula.formula, _ATOM)}+"
    if isinstance(formula, pattern.ContiguousPlus):
        return f"{_operand(formula.formula, _ATOM)}:+"
    if isinstance(formula, pattern.Seq):
        return f"{_operand(formula.left, _SEQ)} ; {_operand(formula.right, _POSTFIX)}"
    if isinstance(formula, pattern.Contiguous):
        return f"{_operand(formula.left, _SEQ)} : {_operand(formula.right, _POSTFIX)}"
    if isinstance(formula, pattern.NotEvent):
        return f"NOT({_negated(formula.etype, formula.pred)})"
    if isinstance(formula, pattern.Absent):
        excluded = (
            format_name(formula.etype)
            if formula.pred is None
            else f"({_negated(formula.etype, formula.pred)})"
        )
        left, right = _operand(formula.left, _SEQ), _operand(formula.right, _POSTFIX)
        return f"{left} ; !{excluded} ; {right}"
    if isinstance(formula, pattern.Or):
        return f"{_operand(formula.left, _OR)} OR {_operand(formula.right, _AND)}"
    if isinstance(formula, pattern.And):
        return f"{_operand(formula.left, _AND)} AND {_operand(formula.right, _SEQ)}"
    if (qualified := _qualifier(formula)) is not None:
        return qualified
    if isinstance(formula, pattern.Filter):
        # FILTER takes everything on its left. The grammar would also read a
        # filtered formula as the left operand of `;`, OR or another FILTER
        # (`A FILTER θ ; B`), but parentheses make that plain to the reader.
        return f"{_operand(formula.formula, _OR)} FILTER {format_filter(formula.filter)}"
    raise TypeError(f"not a formula: {formula!r}")


def _negated(etype: str, pred: pattern.Pred | None) -> str:
    name = format_name(etype)
    # NOT(S>E ...): the parser puts the stream first, alone or conjoined with the filter.
    match pred:
        case pattern.InStream(streams=(stream,)):
            return f"{format_name(stream)}>{name}"
        case pattern.PAnd(left=pattern.InStream(streams=(stream,)), right=own):
            return f"{format_name(stream)}>{name} FILTER {name}[{format_predicate(own)}]"
    return name if pred is None else f"{name} FILTER {name}[{format_predicate(pred)}]"


def _operand(formula: pattern.Formula, min_level: int) -> str:
    text = format_formula(formula)
    return text if _level(formula) >= min_level else f"({text})"


# ----------------------------------------------------------------------- queries


def _format_number(value: int | float) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"not a number: {value!r}")
    return format_value(value)


def _format_window(window: pattern.Window) -> str:
    amount = _format_number(window.amount)
    if window.kind is pattern.WindowKind.EVENTS:
        return f"WITHIN {amount} EVENTS"
    if window.kind is pattern.WindowKind.TIME:
        if window.unit not in pattern.TIME_UNITS_MS:
            raise ValueError(f"unknown time unit {window.unit!r}")
        return f"WITHIN {amount} {window.unit}"
    if window.attr is None:
        raise ValueError("an ATTRIBUTE window needs an attribute")
    return f"WITHIN {amount} [{format_name(window.attr)}]"


def _format_declaration(decl: pattern.StreamDecl) -> str:
    events = ", ".join(
        "EVENT {} {{ {} }}".format(
            format_name(event.name),
            ", ".join(f"{format_name(name)}: {kind.value}" for name, kind in event.attributes),
        )
        for event in decl.events
    )
    return f"DECLARE STREAM {format_name(decl.name)} {{ {events} }}"


def _format_quarantine(policy: pattern.Quarantine) -> str:
    span = "" if policy.span_ms is None else f" {_format_number(policy.span_ms)} MILLISECONDS"
    streams = ", ".join(map(format_name, policy.streams))
    return f"{policy.kind.value}{span} {{ {streams} }}"


def to_ceql(query: pattern.Pattern) -> str:
    """The query as CEQL text, one clause per line."""
    lines = [_format_declaration(decl) for decl in query.declarations]
    if query.quarantines:
        policies = " ".join(_format_quarantine(policy) for policy in query.quarantines)
        lines.append(f"CREATE QUARANTINE {{ {policies} }}")

    select = "SELECT "
    if query.strategy is not pattern.Strategy.ALL:
        select += query.strategy.value + " "
    if query.select is None:
        select += "*"
    elif query.select:
        select += ", ".join(map(format_name, query.select))
    else:
        raise ValueError("a query must select * or at least one variable")
    lines.append(select)

    if query.streams:
        lines.append("FROM " + ", ".join(map(format_name, query.streams)))
    lines.append("WHERE " + format_formula(query.where))
    if query.partition_by:
        lines.append("PARTITION BY [" + ", ".join(map(format_name, query.partition_by)) + "]")
    if query.within is not None:
        lines.append(_format_window(query.within))
    if query.consume is not pattern.Consume.NONE:
        lines.append(f"CONSUME BY {query.consume.value}")
    if query.limit is not None:
        lines.append(f"LIMIT {query.limit}")
    return "\n".join(lines)

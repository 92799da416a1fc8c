"""CEQL's parse tree to the pattern form: unary predicates, value expressions and
literals (the transformer methods ``parser._ToAst`` inherits), and the span helpers."""

from __future__ import annotations

import re
from typing import Any

from lark import Token, Transformer, v_args
from lark.tree import Meta

from cerfleet import pattern

__all__ = ["PredicateTree", "span_of", "token_span", "unquote"]


def span_of(meta: Meta) -> pattern.Span:
    return pattern.Span(meta.line, meta.column, meta.end_line, meta.end_column)


def token_span(tok: Token) -> pattern.Span:
    return pattern.Span(tok.line or 1, tok.column or 1, tok.end_line or 1, tok.end_column or 1)


_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", "'": "'", '"': '"'}


def unquote(lexeme: str) -> str:
    # Unknown escapes keep their backslash, so regexes like '\d+' read naturally.
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m[1], m[0]), lexeme[1:-1], flags=re.S)


_COMPARISONS = {"==": "=", "<>": "!="}


def _negated(pred: pattern.Pred, negated: Token | None) -> pattern.Pred:
    """``NOT IN`` a half-open range: plain negation, as ``NOT IN RANGE`` is."""
    return pred if negated is None else pattern.PNot(pred, pred.span)


@v_args(meta=True)
class PredicateTree(Transformer[Token, Any]):
    """Builds predicate and expression nodes bottom-up from already transformed children."""

    def p_or(self, meta: Meta, children: list[Any]) -> pattern.POr:
        return pattern.POr(children[0], children[2], span_of(meta))

    def p_and(self, meta: Meta, children: list[Any]) -> pattern.PAnd:
        return pattern.PAnd(children[0], children[2], span_of(meta))

    def p_not(self, meta: Meta, children: list[Any]) -> pattern.PNot:
        return pattern.PNot(children[1], span_of(meta))

    def compare(self, meta: Meta, children: list[Any]) -> pattern.Compare:
        left, op, right = children
        return pattern.Compare(_COMPARISONS.get(op.value, op.value), left, right, span_of(meta))

    def in_list(self, meta: Meta, children: list[Any]) -> pattern.InList:
        expr, negated, _in, *values = children
        return pattern.InList(expr, tuple(values), negated is not None, span_of(meta))

    def in_range(self, meta: Meta, children: list[Any]) -> pattern.InRange:
        expr, negated, _in, _range, low, high = children
        return pattern.InRange(expr, low, high, negated is not None, span_of(meta))

    def in_range_dots(self, meta: Meta, children: list[Any]) -> pattern.InRange:
        expr, negated, _in, low, _dots, high = children
        return pattern.InRange(expr, low, high, negated is not None, span_of(meta))

    def in_from(self, meta: Meta, children: list[Any]) -> pattern.Pred:
        expr, negated, _in, low, _dots = children
        return _negated(pattern.Compare(">=", expr, low, span_of(meta)), negated)

    def in_upto(self, meta: Meta, children: list[Any]) -> pattern.Pred:
        expr, negated, _in, _dots, high = children
        return _negated(pattern.Compare("<=", expr, high, span_of(meta)), negated)

    def like(self, meta: Meta, children: list[Any]) -> pattern.Like:
        expr, negated, _like, regex = children
        return pattern.Like(expr, unquote(regex.value), negated is not None, span_of(meta))

    def bool_pred(self, meta: Meta, children: list[pattern.Const]) -> pattern.BoolLit:
        return pattern.BoolLit(bool(children[0].value), span_of(meta))

    # ---- value expressions and literals

    def arith(self, meta: Meta, children: list[Any]) -> pattern.Arith:
        left, op, right = children
        return pattern.Arith(op.value, left, right, span_of(meta))

    def neg(self, meta: Meta, children: list[Any]) -> pattern.Expr:
        operand = children[1]
        if isinstance(operand, pattern.Const) and not isinstance(operand.value, str | bool):
            return pattern.Const(-operand.value, span_of(meta))  # `-5` is a literal
        return pattern.Neg(operand, span_of(meta))

    def var_attr(self, meta: Meta, children: list[Token]) -> pattern.VarAttr:
        var, attr = children
        return pattern.VarAttr(var.value, attr.value, 0, span_of(meta))

    def prev_var_attr(self, meta: Meta, children: list[Token]) -> pattern.VarAttr:
        _prev, var, attr = children
        return pattern.VarAttr(var.value, attr.value, 1, span_of(meta))

    def c_group(self, meta: Meta, children: list[Any]) -> pattern.Expr:
        inner: pattern.Expr = children[1]  # FILTER_LPAR cexpr ")"
        return inner

    def correlation(self, meta: Meta, children: list[Any]) -> pattern.Correlation:
        return pattern.Correlation(self.compare(meta, children), span_of(meta))

    def correlation_chain(self, meta: Meta, children: list[Any]) -> pattern.FilterExpr:
        """``x = y = z``: ``x = y AND y = z``, each pair its own correlation (so each
        equality can still key the evaluator, as a written pair does)."""
        span = span_of(meta)
        pairs: list[pattern.FilterExpr] = [
            pattern.Correlation(self.compare(meta, children[i : i + 3]), span)
            for i in range(0, len(children) - 2, 2)
        ]
        chain = pairs[0]
        for pair in pairs[1:]:
            chain = pattern.FilterAnd(chain, pair, span)
        return chain

    def pos(self, meta: Meta, children: list[Any]) -> pattern.Expr:
        operand: pattern.Expr = children[1]
        return operand

    def attr(self, meta: Meta, children: list[Token]) -> pattern.Attr:
        return pattern.Attr(children[0].value, token_span(children[0]))

    def string(self, meta: Meta, children: list[Token]) -> pattern.Const:
        return pattern.Const(unquote(children[0].value), token_span(children[0]))

    def number(self, meta: Meta, children: list[Token]) -> pattern.Const:
        tok = children[0]
        value = int(tok.value) if tok.type == "INT" else float(tok.value)
        return pattern.Const(value, token_span(tok))

    def boolean(self, meta: Meta, children: list[Token]) -> pattern.Const:
        return pattern.Const(children[0].type == "TRUE", token_span(children[0]))

    def number_lit(self, meta: Meta, children: list[Any]) -> pattern.Const:
        minus, number = children
        return pattern.Const(-number.value, span_of(meta)) if minus is not None else number

    def string_lit(self, meta: Meta, children: list[Any]) -> pattern.Const:
        return self.string(meta, children)

    def bool_lit(self, meta: Meta, children: list[pattern.Const]) -> pattern.Const:
        return children[0]

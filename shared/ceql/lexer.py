"""CEQL's lexer: lark's basic lexer, then identifiers re-typed as keywords and the
tokens of FILTER clauses marked (grammar.lark says why). A lexical problem found while
re-typing is raised as ``Malformed``, which the parser turns into a ``CEQLError``.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise
from typing import Any

from lark import Token
from lark.common import LexerConf
from lark.exceptions import UnexpectedCharacters
from lark.lexer import BasicLexer, Lexer, LexerState

from cerfleet import pattern

__all__ = ["PLAIN_KEYWORDS", "CEQLLexer", "Malformed"]

# ------------------------------------------------------------------ keywords

PLAIN_KEYWORDS = (
    *("SELECT", "FROM", "WHERE", "AS", "OR", "AND", "NOT", "FILTER"),
    *("PARTITION", "BY", "WITHIN", "CONSUME", "LIMIT", "DECLARE", "CREATE", "STREAM"),
    *("ALL", "NEXT", "LAST", "MAX", "STRICT", "ANY", "NONE", "EVENT", "EVENTS"),
    *("IN", "RANGE", "LIKE", "TRUE", "FALSE"),
)

# Upper-cased spelling -> terminal. Singular units are accepted and normalised later.
_KEYWORDS: dict[str, str] = {kw: kw for kw in PLAIN_KEYWORDS} | {
    unit: "TIME_UNIT"
    for plural in pattern.TIME_UNITS_MS
    for unit in (plural, plural.removesuffix("S"))
}

# The only keywords that can occur inside [...] (RANGE only right after IN);
# any other keyword spelling there is an attribute name.
_PREDICATE_KEYWORDS = frozenset({"AND", "OR", "NOT", "IN", "LIKE", "TRUE", "FALSE"})

# --------------------------------------------------------- re-typing tokens


class Malformed(Exception):
    """A lexical problem found while re-typing, turned into a CEQLError by ``parse``."""

    def __init__(self, message: str, token: Token, expected: str) -> None:
        super().__init__(message)
        self.message = message
        self.token = token
        self.expected = expected


def _retyped(tok: Token, kind: str) -> Token:
    return Token.new_borrow_pos(kind, tok.value, tok)


def _is(tokens: list[Token], i: int, kind: str) -> bool:
    return i < len(tokens) and tokens[i].type == kind


def _retype(tokens: list[Token]) -> list[Token]:
    _reject_unclosed_comment(tokens)
    return _mark_filters(_stream_qualifiers(_unquote_names(_quarantine(_keywords(tokens)))))


def _unquote_names(tokens: list[Token]) -> list[Token]:
    """A backtick-quoted identifier is a NAME, whatever it spells (never a keyword)."""
    return [
        Token.new_borrow_pos("NAME", tok.value[1:-1].replace("``", "`"), tok)
        if tok.type == "NAME" and tok.value.startswith("`")
        else tok
        for tok in tokens
    ]


def _stream_qualifiers(tokens: list[Token]) -> list[Token]:
    """``S>E`` outside [...]: the '>' of a stream qualifier, not a comparison."""
    out = list(tokens)
    depth = 0
    for i, tok in enumerate(tokens):
        depth += {"LSQB": 1, "RSQB": -1}.get(tok.type, 0)
        if (
            depth == 0
            and tok.type == "CMP_OP"
            and tok.value == ">"
            and i > 0
            and tokens[i - 1].type == "NAME"
            and _is(tokens, i + 1, "NAME")
        ):
            out[i] = _retyped(tok, "STREAM_GT")
    return out


_POLICIES = frozenset({"FIXED_TIME", "BOUNDED_TIME", "DIRECT"})


def _quarantine(tokens: list[Token]) -> list[Token]:
    """``CREATE QUARANTINE { POLICY span { S, ... } ... }``: QUARANTINE right after
    CREATE and the policy names at the block's own level are keywords there only, so
    they stay usable as stream, event and attribute names everywhere else."""
    out = list(tokens)
    for i, tok in enumerate(tokens):
        if not (
            tok.type == "CREATE"
            and _is(tokens, i + 1, "NAME")
            and tokens[i + 1].value.upper() == "QUARANTINE"
        ):
            continue
        out[i + 1] = _retyped(tokens[i + 1], "QUARANTINE")
        depth = 0
        for j in range(i + 2, len(tokens)):
            kind = tokens[j].type
            depth += {"LBRACE": 1, "RBRACE": -1}.get(kind, 0)
            if depth <= 0 and kind == "RBRACE":
                break
            if depth == 1 and kind == "NAME" and tokens[j].value.upper() in _POLICIES:
                out[j] = _retyped(tokens[j], tokens[j].value.upper())
    return out


def _reject_unclosed_comment(tokens: list[Token]) -> None:
    # A closed /* ... */ is skipped by the lexer; an unclosed one lexes as '/' '*'.
    for tok, after in pairwise(tokens):
        if (tok.type, after.type) == ("SLASH", "STAR") and after.start_pos == tok.end_pos:
            raise Malformed("unterminated comment", tok, "'*/' to close the comment")


def _keywords(tokens: list[Token]) -> list[Token]:
    out: list[Token] = []
    depth = 0  # of [...]
    for i, tok in enumerate(tokens):
        if tok.type == "LSQB":
            depth += 1
        elif tok.type == "RSQB":
            depth = max(0, depth - 1)
        elif tok.type == "NAME":
            kind = _KEYWORDS.get(tok.value.upper())
            if kind is not None and not _attribute_position(tokens, i, kind, depth):
                tok = _retyped(tok, kind)
        out.append(tok)
    return out


def _attribute_position(tokens: list[Token], i: int, kind: str, depth: int) -> bool:
    """Whether the keyword-spelled ``tokens[i]`` stands where only an attribute name can."""
    if depth > 0:
        if kind == "RANGE":
            return not (i > 0 and tokens[i - 1].value.upper() == "IN")
        return kind not in _PREDICATE_KEYWORDS
    return _is(tokens, i + 1, "COLON")  # `name: type` in a schema


def _mark_filters(tokens: list[Token]) -> list[Token]:
    out = list(tokens)
    i = 0
    while i < len(out):
        i = _mark_filter(out, i + 1) if out[i].type == "FILTER" else i + 1
    return out


def _mark_filter(toks: list[Token], i: int) -> int:
    """Re-type, in place, the filter that starts at ``toks[i]``; return the index after it."""
    groups = 0  # open FILTER_LPARs
    want_atom = True
    while i < len(toks):
        tok = toks[i]
        if want_atom:
            if tok.type == "LPAR":
                toks[i] = _retyped(tok, "FILTER_LPAR")
                groups += 1
                i += 1
            elif _is_var_attr(toks, i):  # `x[attr]`: a value in a correlation
                toks[i] = _retyped(tok, "VAR_NAME")
                i += 4
                want_atom = False
            elif _is_prev_var_attr(toks, i):  # `PREV(x)[attr]`
                toks[i] = _retyped(tok, "PREV")
                toks[i + 2] = _retyped(toks[i + 2], "VAR_NAME")
                i += 7
                want_atom = False
            elif tok.type in _LITERALS:  # a correlation's constant operand
                i += 1
                want_atom = False
            elif tok.type == "MINUS":
                i += 1
            elif tok.type == "NAME" and _is(toks, i + 1, "LSQB"):
                toks[i] = _retyped(tok, "FILTER_NAME")
                i = _past_brackets(toks, i + 1)
                want_atom = False
            else:
                return i  # not a filter atom: let the parser report it
        elif tok.type == "RPAR" and groups > 0:
            groups -= 1
            i += 1
        elif tok.type in ("AND", "OR") and (groups > 0 or _starts_atom(toks, i + 1)):
            # Followed by a filter atom it continues the filter; otherwise it is the
            # formula's (`φ FILTER x[p] AND ψ` conjoins ψ with the filtered φ).
            toks[i] = _retyped(tok, "FILTER_" + tok.type)
            want_atom = True
            i += 1
        elif tok.type == "CMP_OP" or (tok.type in _ARITHMETIC and _starts_operand(toks, i + 1)):
            # Inside a correlation; a '+' not followed by an operand is the formula's.
            if tok.type == "PLUS":
                toks[i] = _retyped(tok, "CPLUS")
            want_atom = True
            i += 1
        else:
            return i  # the formula continues: `; C`, `OR D`, `)`, a clause ...
    return i


_LITERALS = frozenset({"INT", "DECIMAL", "STRING"})
_ARITHMETIC = frozenset({"PLUS", "MINUS", "STAR", "SLASH", "PERCENT"})


def _is_var_attr(toks: list[Token], i: int) -> bool:
    """``x [ attr ]`` with one name in the brackets (no predicate is a bare name)."""
    return (
        _is(toks, i, "NAME")
        and _is(toks, i + 1, "LSQB")
        and _is(toks, i + 2, "NAME")
        and _is(toks, i + 3, "RSQB")
    )


def _is_prev_var_attr(toks: list[Token], i: int) -> bool:
    return (
        _is(toks, i, "NAME")
        and toks[i].value.upper() == "PREV"
        and _is(toks, i + 1, "LPAR")
        and _is(toks, i + 2, "NAME")
        and _is(toks, i + 3, "RPAR")
        and _is(toks, i + 4, "LSQB")
        and _is(toks, i + 5, "NAME")
        and _is(toks, i + 6, "RSQB")
    )


def _starts_operand(toks: list[Token], i: int) -> bool:
    if i >= len(toks):
        return False
    kind = toks[i].type
    return (
        kind in _LITERALS
        or kind in ("LPAR", "MINUS")
        or _is_var_attr(toks, i)
        or _is_prev_var_attr(toks, i)
    )


def _past_brackets(toks: list[Token], i: int) -> int:
    depth = 0
    for j in range(i, len(toks)):
        depth += {"LSQB": 1, "RSQB": -1}.get(toks[j].type, 0)
        if depth == 0:
            return j + 1
    return len(toks)


def _starts_atom(toks: list[Token], i: int) -> bool:
    """``x[`` or a run of ``(`` before ``x[``: the start of a filter operand."""
    while _is(toks, i, "LPAR"):
        i += 1
    return _is(toks, i, "NAME") and _is(toks, i + 1, "LSQB")


class CEQLLexer(Lexer):
    """lark's basic lexer followed by ``_retype``."""

    # Ask lark for the (lexer_state, parser_state) call, as its own lexers get.
    __future_interface__ = True

    def __init__(self, conf: LexerConf) -> None:
        self._basic = BasicLexer(conf)

    def lex(self, lexer_state: LexerState, parser_state: Any) -> Iterator[Token]:
        raw: list[Token] = []
        try:
            raw.extend(self._basic.lex(lexer_state, parser_state))
        except UnexpectedCharacters:
            # Feed the good prefix first: a syntax error in it is reported first.
            yield from _retype(raw)
            raise
        yield from _retype(raw)

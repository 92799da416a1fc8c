"""CEQL's syntax errors in words: what was found, and what the parser accepts there."""

from __future__ import annotations

from collections.abc import Iterable

from lark import Lark, Token
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from cerfleet.ceql.lexer import PLAIN_KEYWORDS
from cerfleet.errors import CEQLError

__all__ = ["describe", "expected_text", "unexpected_character", "unexpected_token"]

# ------------------------------------------------------------- error texts

# Readable names, in the order they are listed in "expected one of: ...".
_READABLE: dict[str, str] = {
    "SEMICOLON": "';'",
    "PLUS": "'+'",
    "COLON_PLUS": "':+'",
    "BANG": "'!'",
    "MINUS": "'-'",
    "STAR": "'*'",
    "SLASH": "'/'",
    "PERCENT": "'%'",
    "CMP_OP": "a comparison operator",
    "COMMA": "','",
    "COLON": "':'",
    "DOUBLE_DOT": "'..'",
    "LPAR": "'('",
    "FILTER_LPAR": "'('",
    "RPAR": "')'",
    "LSQB": "'['",
    "RSQB": "']'",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "FILTER_AND": "'AND'",
    "FILTER_OR": "'OR'",
    **{kw: f"'{kw}'" for kw in PLAIN_KEYWORDS},
    "TIME_UNIT": "a time unit (MILLISECONDS, SECONDS, MINUTES, HOURS)",
    "NAME": "an identifier",
    "FILTER_NAME": "a filter atom such as x[...]",
    "VAR_NAME": "a variable's attribute such as x[price]",
    "PREV": "PREV(x)[attr]",
    "CPLUS": "'+'",
    "INT": "a whole number",
    "DECIMAL": "a number",
    "STRING": "a quoted string",
    "$END": "end of query",
}
_ORDER = {name: i for i, name in enumerate(_READABLE)}


def expected_text(terminals: Iterable[str]) -> str | None:
    names = sorted(set(terminals), key=lambda t: (_ORDER.get(t, len(_ORDER)), t))
    if {"INT", "DECIMAL"} <= set(names):
        names.remove("INT")  # "a number" covers it
    texts = list(dict.fromkeys(_READABLE.get(t, t) for t in names))
    if not texts:
        return None
    return texts[0] if len(texts) == 1 else "one of: " + ", ".join(texts)


def describe(tok: Token) -> str:
    if tok.type in ("NAME", "FILTER_NAME", "VAR_NAME"):
        return f"identifier '{tok.value}'"
    if tok.type in ("INT", "DECIMAL"):
        return f"number {tok.value}"
    if tok.type == "STRING":
        return f"string {tok.value}"
    return f"'{tok.value}'"


def _accepted_before(parser: Lark, source: str, pos: int | None) -> set[str]:
    """The terminals the parser accepts just before offset ``pos`` (None: the end).

    Replays the tokens in front of the error: by the time lark reports an error
    it has already made the reductions the bad token's lookahead asked for
    (LALR state merging allows that), so its own answer can miss valid tokens.
    """
    replay = parser.parse_interactive(source)
    try:
        for tok in replay.iter_parse():  # yields each token before feeding it
            if pos is not None and tok.start_pos is not None and tok.start_pos >= pos:
                break
    except UnexpectedInput:
        pass  # the bad character: the tokens before it are in
    accepted: set[str] = replay.accepts()
    return accepted


def unexpected_token(parser: Lark, exc: UnexpectedToken, source: str) -> CEQLError:
    tok = exc.token
    at_end = tok.type == "$END"
    expected = expected_text(_accepted_before(parser, source, None if at_end else tok.start_pos))
    if at_end:
        # lark dates $END at the last token; point just past that token instead.
        line = tok.end_line or 1
        column = tok.end_column or 1
        return CEQLError(
            "unexpected end of query", line=line, column=column, source=source, expected=expected
        )
    return CEQLError(
        f"unexpected {describe(tok)}",
        line=tok.line or 1,
        column=tok.column or 1,
        length=len(tok.value),
        source=source,
        expected=expected,
    )


def unexpected_character(parser: Lark, exc: UnexpectedCharacters, source: str) -> CEQLError:
    expected: str | None
    if exc.char in "'\"":
        message, expected = "unterminated string", f"a closing {exc.char}"
    else:
        message = f"unexpected character {exc.char!r}"
        expected = expected_text(_accepted_before(parser, source, exc.pos_in_stream))
    return CEQLError(message, line=exc.line, column=exc.column, source=source, expected=expected)

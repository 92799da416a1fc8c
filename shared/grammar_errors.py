"""A lark grammar's parse errors as a query language's own error.

The front-ends built on a lark grammar (MATCH_RECOGNIZE, RSEP-QL, SPAseq) report bad text
alike: the line and column of the offending token or character, the line with carets
under it, and what the grammar would have taken there, its terminals named in words the
language's users know. Each passes its parser, its error class and those words. CEQL
lexes its text itself and reports through ``cerfleet.ceql.syntax_errors``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from lark import Lark, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedToken

from cerfleet.errors import CEQLError

__all__ = ["expected_text", "parse_tree"]


def expected_text(names: Iterable[str], shown: Mapping[str, str]) -> str:
    """The terminals ``names`` in words (``shown``, else the name itself), sorted and
    joined as "a, b or c"; lark's anonymous terminals (``__ANON_0``) are left out."""
    words = sorted({shown.get(n, n) for n in names if not n.startswith("__")})
    if not words:
        return "something else"
    return ", ".join(words[:-1]) + (" or " if len(words) > 1 else "") + words[-1]


def parse_tree(
    parser: Lark, text: str, error: type[CEQLError], shown: Mapping[str, str]
) -> Tree[Any]:
    """``parser.parse(text)``; a syntax error is raised as ``error`` with its line,
    column, length and what was expected. The end of the text is placed just after its
    last character that is not blank."""
    try:
        return parser.parse(text)
    except UnexpectedToken as err:
        tok = err.token
        at_end = tok.type == "$END"
        # lark places the end at the last token's start.
        line, column = _end(text) if at_end or err.line < 1 else (err.line, err.column)
        raise error(
            "unexpected end of query" if at_end else f"unexpected {str(tok)!r}",
            line=line,
            column=max(1, column),
            source=text,
            length=len(str(tok)) or 1,
            expected=expected_text(err.accepts or err.expected, shown),
        ) from None
    except UnexpectedCharacters as err:
        raise error(
            f"unexpected character {text[err.pos_in_stream or 0]!r}",
            line=err.line,
            column=err.column,
            source=text,
            expected=expected_text(err.allowed or (), shown),
        ) from None
    except UnexpectedEOF as err:
        line, column = _end(text)
        raise error(
            "unexpected end of query",
            line=line,
            column=column,
            source=text,
            expected=expected_text(err.expected, shown),
        ) from None


def _end(text: str) -> tuple[int, int]:
    """The line and column just after the text's last character that is not blank."""
    lines = text.rstrip().splitlines() or [""]
    return len(lines), len(lines[-1]) + 1

"""A lark grammar's parse errors as a language's own error: where, and what was expected."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lark import Lark

from cerfleet.errors import CEQLError
from cerfleet.grammar_errors import expected_text, parse_tree

# A list of sums: "SUM(1, 2); SUM(3)".
_GRAMMAR = r"""
start: call (";" call)*
call: "SUM" "(" INT ("," INT)* ")"
%import common.INT
%import common.WS
%ignore WS
"""
_PARSER = Lark(_GRAMMAR, parser="lalr")
_SHOWN = {"INT": "a number", "LPAR": "'('", "RPAR": "')'", "COMMA": "','", "SEMICOLON": "';'"}


class ToyError(CEQLError):
    pass


def _error(text: str) -> ToyError:
    with pytest.raises(ToyError) as info:
        parse_tree(_PARSER, text, ToyError, _SHOWN)
    return info.value


def test_expected_text_names_terminals_in_words() -> None:
    assert expected_text(["INT"], _SHOWN) == "a number"
    assert expected_text(["RPAR", "COMMA"], _SHOWN) == "')' or ','"
    assert expected_text(["RPAR", "COMMA", "INT"], _SHOWN) == "')', ',' or a number"
    # Unknown names are shown as they are; lark's anonymous terminals not at all.
    assert expected_text(["SUM", "__ANON_0"], _SHOWN) == "SUM"
    assert expected_text(["__ANON_0"], _SHOWN) == "something else"


def test_a_valid_text_parses() -> None:
    tree = parse_tree(_PARSER, "SUM(1, 2);\nSUM(3)", ToyError, _SHOWN)
    assert [c.data for c in tree.children] == ["call", "call"]


def test_an_unexpected_token_names_its_place_and_what_could_stand_there() -> None:
    err = _error("SUM(1, 2);\nSUM(3 4)")
    assert (err.line, err.column, err.length) == (2, 7, 1)
    assert err.message == "unexpected '4'"
    assert err.expected == "')' or ','"
    assert str(err).splitlines()[1:3] == ["  SUM(3 4)", "        ^"]


def test_an_unexpected_character() -> None:
    err = _error("SUM(1) ? SUM(2)")
    assert (err.line, err.column) == (1, 8)
    assert err.message == "unexpected character '?'"
    assert err.expected == "';'"


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [("SUM(1, 2", 1, 9), ("SUM(1, 2\n", 1, 9), ("SUM(1,\n  2 \n\n", 2, 4), ("SUM(1);", 1, 8)],
)
def test_the_end_of_the_text_is_placed_after_its_last_character(
    text: str, line: int, column: int
) -> None:
    err = _error(text)
    assert err.message == "unexpected end of query"
    assert (err.line, err.column) == (line, column)
    assert err.expected


def test_the_error_is_the_languages_own_class() -> None:
    err = _error("")
    assert type(err) is ToyError and isinstance(err, CEQLError)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="SUM(),;12 \n?", max_size=30))
def test_every_text_parses_or_is_placed_inside_itself(text: str) -> None:
    try:
        parse_tree(_PARSER, text, ToyError, _SHOWN)
    except ToyError as err:
        lines = text.splitlines() or [""]
        assert 1 <= err.line <= len(lines), (text, err.line)
        assert 1 <= err.column <= len(lines[err.line - 1]) + 1, (text, err.column)
        assert err.expected
        assert str(err)  # renders the line and carets

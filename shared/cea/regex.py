"""LIKE's regular expressions, matched in time linear in the value's length.

A query's text comes from whoever can write to the registry topic and an
event's values from whoever can write to an input topic, so neither may be able
to make one match take exponential time, as Python's backtracking ``re`` does on
``(a+)+$`` against ``aaa…ab``. RE2 compiles a pattern into automata and matches
in time linear in the value; the constructs that have no such automaton
(backreferences, look-around, atomic groups, possessive quantifiers) do not
compile, and ``LikeSyntaxError`` says which construct was refused and why.

Semantics: the whole value must match (RE2's ``ANCHOR_BOTH``, like
``re.fullmatch``); the syntax is RE2's (see the README).
"""

from __future__ import annotations

from collections.abc import Callable

import re2
from re2 import _re2  # the binding under re2's Python wrapper: a match without Match objects

__all__ = ["LikeSyntaxError", "compile_like"]

_OPTIONS = re2.Options()
# Capture groups only slow the match down: LIKE asks whether, never where.
_OPTIONS.never_capture = True
# RE2 logs each rejected pattern to stderr; the error is reported to the client instead.
_OPTIONS.log_errors = False
_BOTH = _re2.RE2.Anchor.ANCHOR_BOTH

_NOT_LINEAR = "it cannot be matched in time linear in the value (RE2 has no automaton for it)"


class LikeSyntaxError(ValueError):
    """A LIKE pattern outside the accepted syntax.

    ``reason`` is a sentence for the client; ``fragment`` is the offending part of
    the pattern as RE2 reported it (empty when it named none).
    """

    def __init__(self, reason: str, fragment: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.fragment = fragment


def compile_like(regex: str) -> Callable[[str], bool]:
    """``value -> whether the whole value matches regex``; raises ``LikeSyntaxError``."""
    compiled = _re2.RE2(regex.encode("utf-8", "surrogatepass"), _OPTIONS)
    if not compiled.ok():
        raise _explain(regex, compiled.error().decode("utf-8", "replace"))
    match = compiled.Match

    def fullmatch(value: str) -> bool:
        # A lone surrogate (legal in JSON text) is kept as bytes RE2 never matches with '.'.
        data = value.encode("utf-8", "surrogatepass")
        return match(_BOTH, data, 0, len(data))[0][0] >= 0

    return fullmatch


def _explain(regex: str, error: str) -> LikeSyntaxError:
    """Turn RE2's error into the reason a client reads."""
    what, _, fragment = error.partition(": ")
    construct: str | None = None
    if what == "invalid escape sequence" and fragment[1:2] in set("123456789kg"):
        construct = f"backreference {fragment}"
    elif what == "invalid perl operator":
        if fragment in ("(?=", "(?!"):
            construct = f"look-ahead {fragment}"
        elif fragment in ("(?<=", "(?<!"):
            construct = f"look-behind {fragment}"
        elif fragment == "(?>":
            construct = f"atomic group {fragment}"
        elif fragment == "(?P" and "(?P=" in regex:
            fragment = "(?P="
            construct = f"named backreference {fragment}"
    elif what == "bad repetition operator" and fragment.endswith("+") and len(fragment) > 1:
        construct = f"possessive quantifier {fragment}"
    if construct is not None:
        return LikeSyntaxError(f"{construct} is not accepted: {_NOT_LINEAR}", fragment)
    return LikeSyntaxError(error, fragment)

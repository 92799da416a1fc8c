"""CEQL's checks of correlations (``b[price] > a[price]``, ``PREV(b)[price]``): the
variables they read must be bound where the semantics looks for them."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import NoReturn

from cerfleet import pattern
from cerfleet.pattern.walk import var_attrs

Fail = Callable[[str, pattern.Span | None, str | None], NoReturn]


def correlations(filter_: pattern.FilterExpr) -> Iterator[pattern.Correlation]:
    if isinstance(filter_, pattern.Correlation):
        yield filter_
    elif not isinstance(filter_, pattern.FilterAtom):
        yield from correlations(filter_.left)
        yield from correlations(filter_.right)


def check_correlations(
    fail: Fail,
    filter_: pattern.FilterExpr,
    bound: Iterable[str],
    everywhere: Iterable[str],
    negated: Iterable[str],
) -> None:
    """``bound``: the variables of the filtered formula; ``everywhere``: of the whole
    WHERE; ``negated``: those that may be bound to a NOT(...) event."""
    inside, anywhere, excluded = set(bound), list(everywhere), set(negated)
    for corr in correlations(filter_):
        for ref in var_attrs(corr.pred):
            # PREV(x) pairs x's events inside the filtered formula; another variable
            # may be bound anywhere around it (Foundations' valuations).
            scope = inside if ref.back else set(anywhere)
            if ref.var not in scope:
                fail(
                    f"unbound variable '{ref.var}' in FILTER",
                    ref.span,
                    "a variable bound in the filtered formula"
                    if ref.back
                    else "a variable bound in WHERE: " + (", ".join(anywhere) or "(none)"),
                )
            if ref.var in excluded:
                fail(
                    f"'{ref.var}' may be bound to a NOT(...) event, which a correlation "
                    "cannot read",
                    ref.span,
                    "a variable bound to events of a type",
                )

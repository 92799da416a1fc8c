"""The row pattern as an ordered NFA, and the preferred labelling of a match's rows.

SQL:2016 orders the parses of a row pattern ("preferment"): alternatives left first,
greedy quantifiers more iterations first, reluctant ones fewer first. ``Nfa`` lists
each state's moves in that order, so a depth-first search meets the parses in
preferment order (``labels``) and a Pike-VM simulation that keeps its threads in
that order finds the preferred match from the earliest start (``selection``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cerfleet.match_recognize import syntax as s

__all__ = ["Cond", "Nfa", "labels", "nfa"]

Row = Mapping[str, Any]


class Nfa:
    """A state either reads one row for a variable (``reads[q] = (var, next)``) or
    moves, without reading, to its successors in preference order (``moves[q]``).
    Quantified groups never match zero rows (the compiler rejects them), so there is
    no cycle that reads nothing and ``closure`` is finite."""

    def __init__(self, regex: s.Regex) -> None:
        self.moves: list[list[int]] = []
        self.reads: list[tuple[str, int] | None] = []
        self.final = self._state()
        self.start = self._build(regex, self.final)
        self.closure = [self._closure(q) for q in range(len(self.moves))]

    def _state(self) -> int:
        self.moves.append([])
        self.reads.append(None)
        return len(self.moves) - 1

    def _build(self, r: s.Regex, nxt: int) -> int:
        if isinstance(r, s.Var):
            q = self._state()
            self.reads[q] = (r.name, nxt)
            return q
        if isinstance(r, s.Cat):
            return self._build(r.left, self._build(r.right, nxt))
        if isinstance(r, s.Alt):
            q = self._state()
            self.moves[q] = [self._build(r.left, nxt), self._build(r.right, nxt)]
            return q
        tail = nxt
        if r.high is None:
            tail = self._state()
            self.moves[tail] = self._order(self._build(r.body, tail), nxt, r.greedy)
        else:
            # X{0,k} as (X (X ...)?)?: each level one more iteration, or leave.
            for _ in range(r.high - r.low):
                q = self._state()
                self.moves[q] = self._order(self._build(r.body, tail), nxt, r.greedy)
                tail = q
        for _ in range(r.low):
            tail = self._build(r.body, tail)
        return tail

    @staticmethod
    def _order(again: int, leave: int, greedy: bool) -> list[int]:
        return [again, leave] if greedy else [leave, again]

    def _closure(self, q: int) -> tuple[int, ...]:
        """The reading states and the final state reachable from q without reading,
        in preference order, each once (its first, most preferred, path)."""
        out: list[int] = []
        seen: set[int] = set()
        stack = [q]
        while stack:
            p = stack.pop()
            if p in seen:
                continue
            seen.add(p)
            if self.reads[p] is not None or p == self.final:
                out.append(p)
            else:
                stack.extend(reversed(self.moves[p]))
        return tuple(out)


# Built once per row pattern (a writer labels every match with the same one).
nfa = functools.lru_cache(maxsize=64)(Nfa)

# A DEFINE as the labelling sees it: the variable, the row's index and the labels of
# the rows before it.
Cond = Callable[[str, int, Sequence[str]], bool]


def labels(
    regex: s.Regex, rows: Sequence[Row], cond: Cond, *, running: bool = False
) -> tuple[str, ...]:
    """The variable of each row under the preferred match covering exactly ``rows``:
    the first path of ``Nfa``'s depth-first search that reads every row. Without
    ``running`` conditions (conditions reading the labels before the row), a state and
    row already searched without success fail again (the rest of a path does not
    depend on how it got there), so the search takes O(states × rows) steps; with them
    it may try every labelling of the match's rows."""
    machine = nfa(regex)
    n = len(rows)
    dead: set[tuple[int, int]] = set()
    stack: list[list[int]] = [[machine.start, 0, 0]]  # state, row, next choice
    read: list[str | None] = []  # per frame above the first: the variable it read
    while stack:
        frame = stack[-1]
        q, i, k = frame
        if q == machine.final and i == n:
            return tuple(name for name in read if name is not None)
        step = machine.reads[q]
        choices: list[tuple[int, int, str | None]]
        if step is not None:
            # Only running conditions read the labels before the row (a copy per step).
            before = [x for x in read if x is not None] if running else ()
            ok = i < n and cond(step[0], i, before)
            choices = [(step[1], i + 1, step[0])] if ok else []
        else:
            choices = [(t, i, None) for t in machine.moves[q]]
        if k < len(choices):
            frame[2] += 1
            target, j, name = choices[k]
            if (target, j) not in dead:
                stack.append([target, j, 0])
                read.append(name)
            continue
        if not running:
            dead.add((q, i))
        stack.pop()
        if read:
            read.pop()
    raise AssertionError("a complex event the row pattern does not match")

"""The ordered NFA: moves and closures in preferment order, greedy and reluctant."""

from __future__ import annotations

from cerfleet.match_recognize.nfa import Nfa, labels
from cerfleet.match_recognize.parser import parse
from cerfleet.match_recognize.syntax import Regex


def regex(text: str) -> Regex:
    return parse(f"SELECT * FROM T MATCH_RECOGNIZE (ALL MATCHES PATTERN ({text}))").regex


def anything(var: str, i: int, before: object) -> bool:
    return True


def _vars(machine: Nfa, states: tuple[int, ...]) -> list[str]:
    out = []
    for q in states:
        step = machine.reads[q]
        out.append("$" if step is None else step[0])
    return out


def test_closures_list_reading_states_in_preferment_order() -> None:
    greedy, reluctant = Nfa(regex("A B* C")), Nfa(regex("A B*? C"))
    after_a = greedy.reads[greedy.start]
    assert after_a is not None
    assert _vars(greedy, greedy.closure[after_a[1]]) == ["B", "C"]
    after_a = reluctant.reads[reluctant.start]
    assert after_a is not None
    assert _vars(reluctant, reluctant.closure[after_a[1]]) == ["C", "B"]
    # The final state ($) closes a closure where the pattern may end.
    machine = Nfa(regex("A+"))
    after = machine.reads[machine.start]
    assert after is not None
    assert _vars(machine, machine.closure[after[1]]) == ["A", "$"]
    machine = Nfa(regex("A+?"))
    after = machine.reads[machine.start]
    assert after is not None
    assert _vars(machine, machine.closure[after[1]]) == ["$", "A"]


def test_reluctant_labels_prefer_fewer_iterations() -> None:
    rows = [{}, {}, {}, {}]
    assert labels(regex("A B* C*"), rows, anything) == ("A", "B", "B", "B")
    assert labels(regex("A B*? C*"), rows, anything) == ("A", "C", "C", "C")
    assert labels(regex("A B{1,3}? C*"), rows, anything) == ("A", "B", "C", "C")
    assert labels(regex("A B?? C{1,2}"), rows, anything) == ("A", "B", "C", "C")

"""A complex event is a value: made by position or by name, equal and hashed by its
fields, never changed, copied and pickled whole."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from cerfleet.complex_event import ComplexEvent


def _ce(**changes: object) -> ComplexEvent:
    fields: dict[str, object] = {
        "start": 3,
        "end": 9,
        "positions": (3, 5, 9),
        "key": ("INTC",),
        "events": (),
    }
    fields.update(changes)
    return ComplexEvent(**fields)  # type: ignore[arg-type]


def test_made_by_position_or_by_name_alike() -> None:
    ce = ComplexEvent(3, 9, (3, 5, 9), ("INTC",), ())
    assert ce == _ce()
    assert (ce.start, ce.end, ce.positions, ce.key, ce.events) == (3, 9, (3, 5, 9), ("INTC",), ())
    assert repr(ce) == (
        "ComplexEvent(start=3, end=9, positions=(3, 5, 9), key=('INTC',), events=())"
    )


@pytest.mark.parametrize(
    "change", [{"start": 4}, {"end": 10}, {"positions": (3, 9)}, {"key": None}, {"key": ("X",)}]
)
def test_equal_and_hashed_by_every_field(change: dict[str, object]) -> None:
    assert hash(_ce()) == hash(_ce())
    assert _ce(**change) != _ce()
    assert len({_ce(), _ce(), _ce(**change)}) == 2


def test_never_changed() -> None:
    ce = _ce()
    with pytest.raises(dataclasses.FrozenInstanceError):
        ce.start = 4  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del ce.key  # type: ignore[misc]
    with pytest.raises(TypeError):
        ComplexEvent(3, 9, (3,), None)  # type: ignore[call-arg]


def test_copied_and_pickled_whole() -> None:
    ce = _ce(events=({"type": "BUY", "price": 1},))
    assert dataclasses.replace(ce, end=11) == _ce(end=11, events=ce.events)
    assert pickle.loads(pickle.dumps(ce)) == ce
    assert ce.to_dict() == {
        "start": 3,
        "end": 9,
        "positions": [3, 5, 9],
        "key": ["INTC"],
        "events": [{"type": "BUY", "price": 1}],
    }

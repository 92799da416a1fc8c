"""``submit`` refuses queries whose output per event can grow exponentially, unless told."""

from __future__ import annotations

from pathlib import Path

import pytest

from cerfleet.cli.main import main
from tests.shared.fleet.test_cli import no_kafka, query_file, submit_args

__all__ = ["no_kafka"]  # the fixture, used by name

UNBOUNDED = "SELECT * FROM S\nWHERE SELL ; BUY+\n"


@pytest.mark.usefixtures("no_kafka")
def test_an_unbounded_query_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(submit_args("q", query_file(tmp_path, UNBOUNDED))) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("cerfleet: cannot register 'q': an iteration '+' (line 2, column 14)")
    assert err.rstrip().endswith("add WITHIN or LIMIT, or pass --allow-unbounded")


@pytest.mark.usefixtures("no_kafka")
@pytest.mark.parametrize(
    ("text", "extra"),
    [
        (UNBOUNDED, ("--allow-unbounded",)),
        (UNBOUNDED + "WITHIN 10 EVENTS", ()),
        (UNBOUNDED + "LIMIT 5", ()),
        ("SELECT NEXT * FROM S WHERE SELL ; BUY+", ()),
    ],
)
def test_bounded_or_allowed_queries_go_through(
    tmp_path: Path, text: str, extra: tuple[str, ...]
) -> None:
    with pytest.raises(AssertionError, match="contacted Kafka"):
        main(submit_args("q", query_file(tmp_path, text), *extra))

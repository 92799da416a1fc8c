"""``cerfleet run``: end to end over the real compiler and evaluator."""

from __future__ import annotations

import io
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

import pytest

from cerfleet.cli.main import build_parser, main

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples"
EXPECTED_EXAMPLE_POSITIONS = [[4, 6, 8], [4, 6, 12], [16, 18, 20], [17, 18, 20], [29, 32, 35]]
FIELDS = {"start", "end", "positions", "key", "events"}

A_THEN_B = "SELECT * FROM S WHERE A ; B\n"


def write(tmp_path: Path, name: str, content: str) -> str:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    return str(path)


def jsonl(*events: dict[str, Any]) -> str:
    return "".join(json.dumps(e) + "\n" for e in events)


def output_lines(text: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in text.splitlines()]
    for line in lines:
        assert set(line) == FIELDS
    return lines


def cli_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.pop("PYTHONUNBUFFERED", None)  # flushing is the command's job, not the caller's
    return env


def spawn(*args: str, **options: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "cerfleet.cli", *args],
        cwd=REPO,
        env=cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **options,
    )


# ---------------------------------------------------------------------- the example


def test_bundled_example(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", str(EXAMPLES / "stock.ceql"), str(EXAMPLES / "stock.jsonl")])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    lines = output_lines(captured.out)
    assert sorted(line["positions"] for line in lines) == EXPECTED_EXAMPLE_POSITIONS
    for line in lines:
        assert line["start"] == line["positions"][0]
        assert line["end"] == line["positions"][-1]
        assert line["key"] is None
        msft, intc, amzn = line["events"]
        assert (msft["type"], msft["name"]) == ("SELL", "MSFT") and msft["price"] > 100
        assert (intc["type"], intc["name"]) == ("BUY", "INTC")
        assert (amzn["type"], amzn["name"]) == ("SELL", "AMZN") and amzn["price"] < 2000
        assert amzn["stock_time"] - msft["stock_time"] <= 10_000
    assert captured.out.count("\n") == len(lines)
    compact = json.dumps(lines[0], separators=(",", ":"), ensure_ascii=False)
    assert captured.out.splitlines()[0] == compact
    assert captured.err.strip() == "40 events, 5 complex events, 0 malformed lines skipped"


def test_subprocess_python_m_shared_cli() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "cerfleet.cli",
            "run",
            "examples/stock.ceql",
            "examples/stock.jsonl",
            "--quiet",
        ],
        cwd=REPO,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    lines = output_lines(result.stdout)
    assert sorted(line["positions"] for line in lines) == EXPECTED_EXAMPLE_POSITIONS


# ----------------------------------------------------------------- malformed input


def test_malformed_lines_are_reported_and_take_no_position(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    query = write(tmp_path, "q.ceql", A_THEN_B)
    events = write(
        tmp_path,
        "e.jsonl",
        '{"type": "A", "i": 0}\n'  # 1 -> position 0
        "this is not json\n"  # 2
        "\n"  # 3 blank: silently skipped
        '{"no_type": 1}\n'  # 4
        '{"type": "B", "i": 1}\n',  # 5 -> position 1
    )
    code = main(["run", query, events])
    captured = capsys.readouterr()
    assert code == 0
    [line] = output_lines(captured.out)
    assert line["positions"] == [0, 1]
    assert [e["i"] for e in line["events"]] == [0, 1]
    err = captured.err.splitlines()
    assert err[0].startswith(f"{events}:2: not valid JSON")
    assert err[1] == f"{events}:4: missing type field 'type'"
    assert err[-1] == "2 events, 1 complex events, 2 malformed lines skipped"


def test_strict_stops_at_first_malformed_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    query = write(tmp_path, "q.ceql", A_THEN_B)
    events = write(tmp_path, "e.jsonl", '{"type":"A"}\n{"type":"B"}\n[1]\n{"type":"B"}\n')
    code = main(["run", query, events, "--strict"])
    captured = capsys.readouterr()
    assert code == 2
    assert len(output_lines(captured.out)) == 1  # what came before is still printed
    assert captured.err.strip() == f"{events}:3: not a JSON object (got array)"


def test_schema_violation_is_a_malformed_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    query = write(
        tmp_path,
        "q.ceql",
        "DECLARE STREAM S { EVENT A { price: double }, EVENT B { price: double } }\n"
        "SELECT * FROM S WHERE A ; B\n",
    )
    events = write(
        tmp_path,
        "e.jsonl",
        jsonl({"type": "A", "price": 1.5}, {"type": "A", "price": "cheap"}, {"type": "B"}),
    )
    code = main(["run", query, events])
    captured = capsys.readouterr()
    assert code == 0
    [line] = output_lines(captured.out)
    assert line["positions"] == [0, 1]  # the rejected line took no position
    assert captured.err.splitlines()[0].startswith(f"{events}:2: attribute 'price'")
    assert "1 malformed lines skipped" in captured.err

    assert main(["run", query, events, "--strict"]) == 2
    assert capsys.readouterr().err.startswith(f"{events}:2: attribute 'price'")


# ------------------------------------------------------------------- query errors


def test_broken_query_exits_2_with_caret_and_no_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    query = write(tmp_path, "bad.ceql", "SELECT * FROM S\nWHERE A ;; B\n")
    events = write(tmp_path, "e.jsonl", jsonl({"type": "A"}))
    code = main(["run", query, events])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert captured.err.startswith(f"{query}: line 2, column ")
    assert "^" in captured.err
    assert "Traceback" not in captured.err


def test_broken_query_in_a_subprocess_has_no_traceback(tmp_path: Path) -> None:
    query = write(tmp_path, "bad.ceql", "SELECT * FROM S WHERE (A ; B\n")
    events = write(tmp_path, "e.jsonl", "")
    proc = spawn("run", query, events)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2
    assert out == b""
    assert err.decode().startswith(f"{query}: line ")
    assert b"^" in err
    assert b"Traceback" not in err


@pytest.mark.parametrize("missing", ["query", "events"])
def test_missing_files(tmp_path: Path, capsys: pytest.CaptureFixture[str], missing: str) -> None:
    query = write(tmp_path, "q.ceql", A_THEN_B)
    events = write(tmp_path, "e.jsonl", "")
    absent = str(tmp_path / "absent")
    args = ["run", absent, events] if missing == "query" else ["run", query, absent]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{absent}: cannot read {missing if missing == 'query' else 'event'}")
    assert "No such file" in err
    assert "Traceback" not in err


# ------------------------------------------------------------------ inputs & flags


def test_stdin_dash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    query = write(tmp_path, "q.ceql", A_THEN_B)
    data = jsonl({"type": "A"}, {"type": "C"}, {"type": "B"}).encode() + b"oops\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
    assert main(["run", query, "-"]) == 0
    captured = capsys.readouterr()
    assert [line["positions"] for line in output_lines(captured.out)] == [[0, 2]]
    assert captured.err.splitlines() == [
        "<stdin>:4: not valid JSON: Expecting value (column 1)",
        "3 events, 1 complex events, 1 malformed lines skipped",
    ]


def test_csv_events(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    query = write(tmp_path, "q.ceql", "SELECT * FROM S WHERE A ; B FILTER B[x > 1.5]\n")
    events = write(tmp_path, "e.csv", "type,x,note\nA,1,\nB,1,low\nB,2.5,high\nB,\n")
    assert main(["run", query, events]) == 0
    captured = capsys.readouterr()
    [line] = output_lines(captured.out)
    assert line["positions"] == [0, 2]
    assert line["events"] == [{"type": "A", "x": 1}, {"type": "B", "x": 2.5, "note": "high"}]
    assert f"{events}:5: expected 3 fields, got 2" in captured.err


def test_format_flag_overrides_extension(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    query = write(tmp_path, "q.ceql", A_THEN_B)
    events = write(tmp_path, "events.txt", "type\nA\nB\n")
    assert main(["run", query, events, "--format", "csv", "--quiet"]) == 0
    captured = capsys.readouterr()
    assert len(output_lines(captured.out)) == 1
    assert captured.err == ""


def test_type_and_time_fields(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    query = write(tmp_path, "q.ceql", "SELECT * FROM S WHERE A ; B WITHIN 5 SECONDS\n")
    events = write(
        tmp_path,
        "e.jsonl",
        jsonl(
            {"kind": "A", "at": "2024-05-01T12:00:00Z"},
            {"kind": "B", "at": "2024-05-01T12:00:04Z"},  # 4 s after: match
            {"kind": "B", "at": "2024-05-01T12:00:09Z"},  # 9 s after: too late
        ),
    )
    code = main(["run", query, events, "--type-field", "kind", "--time-field", "at"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert [line["positions"] for line in output_lines(captured.out)] == [[0, 1]]


def test_quiet_suppresses_only_the_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    query = write(tmp_path, "q.ceql", A_THEN_B)
    events = write(tmp_path, "e.jsonl", '{"type":"A"}\nnope\n{"type":"B"}\n')
    assert main(["run", query, events, "--quiet"]) == 0
    assert capsys.readouterr().err.splitlines() == [
        f"{events}:2: not valid JSON: Expecting value (column 1)"
    ]


def test_partition_key_is_printed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    query = write(tmp_path, "q.ceql", "SELECT * FROM S WHERE A ; B PARTITION BY [user]\n")
    events = write(
        tmp_path,
        "e.jsonl",
        jsonl(
            {"type": "A", "user": "ann"},
            {"type": "A", "user": "bob"},
            {"type": "B", "user": "bob"},
        ),
    )
    assert main(["run", query, events, "--quiet"]) == 0
    [line] = output_lines(capsys.readouterr().out)
    assert line["key"] == ["bob"]
    assert line["positions"] == [1, 2]


# ---------------------------------------------------------------- the command line


def test_version_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("cerfleet ")
    assert main(["run", "--help"]) == 0
    help_text = capsys.readouterr().out
    for flag in ("--type-field", "--time-field", "--format", "--strict", "--quiet"):
        assert flag in help_text


def test_usage_errors_return_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert main(["run"]) == 2
    assert main(["run", "q", "e", "--format", "xml"]) == 2
    assert main(["frobnicate"]) == 2
    capsys.readouterr()


def test_absent_command_packages_are_skipped() -> None:
    parser = build_parser(("cerfleet.cli.run", "no_such_cerfleet_package.cli"))
    assert parser.parse_args(["run", "q", "e"]).command == "run"


def test_broken_command_module_is_not_hidden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A command package that exists but fails on a missing dependency must say so.
    package = tmp_path / "broken_cmd_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "cli.py").write_text("import no_such_dependency_for_cerfleet\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="no_such_dependency_for_cerfleet"):
        build_parser(("cerfleet.cli.run", "broken_cmd_pkg.cli"))


# --------------------------------------------------------------------- streaming


def _line_reader(stream: IO[bytes]) -> queue.Queue[bytes]:
    lines: queue.Queue[bytes] = queue.Queue()

    def pump() -> None:
        for line in iter(stream.readline, b""):
            lines.put(line)
        lines.put(b"")

    threading.Thread(target=pump, daemon=True).start()
    return lines


def test_complex_events_stream_before_stdin_closes(tmp_path: Path) -> None:
    query = write(tmp_path, "q.ceql", A_THEN_B)
    proc = spawn("run", query, "-", stdin=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        out = _line_reader(proc.stdout)
        for event in ({"type": "A", "i": 0}, {"type": "C"}, {"type": "B", "i": 2}):
            proc.stdin.write(json.dumps(event).encode() + b"\n")
            proc.stdin.flush()
        # stdin is still open: the match must already have been printed.
        first = json.loads(out.get(timeout=60))
        assert first["positions"] == [0, 2]
        proc.stdin.write(b'{"type": "B", "i": 3}\n')
        proc.stdin.flush()
        assert json.loads(out.get(timeout=60))["positions"] == [0, 3]
        proc.stdin.close()
        assert out.get(timeout=60) == b""
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.stderr is not None
    assert proc.stderr.read().decode().strip() == (
        "4 events, 2 complex events, 0 malformed lines skipped"
    )


def test_closed_pipe_exits_quietly(tmp_path: Path) -> None:
    # Like `cerfleet run ... | head -1`: the reader goes away after one line.
    query = write(tmp_path, "q.ceql", "SELECT * FROM S WHERE A\n")
    events = write(tmp_path, "e.jsonl", jsonl({"type": "A", "pad": "x" * 200}) * 20_000)
    proc = spawn("run", query, events)
    assert proc.stdout is not None and proc.stderr is not None
    assert json.loads(proc.stdout.readline())["positions"] == [0]
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 0
    assert b"Traceback" not in err
    assert b"BrokenPipe" not in err


def test_late_events_are_reported_and_ignored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    query = write(tmp_path, "q.ceql", "SELECT * FROM S WHERE A ; B WITHIN 10 [t]\n")
    events = write(
        tmp_path,
        "e.jsonl",
        jsonl({"type": "A", "t": 5}, {"type": "A", "t": 3}, {"type": "B", "t": 6}),
    )
    assert main(["run", query, events]) == 0
    captured = capsys.readouterr()
    assert [line["positions"] for line in output_lines(captured.out)] == [[0, 2]]
    assert "e.jsonl:2: late event" in captured.err
    assert "1 late events ignored" in captured.err


def test_a_slow_writer_sees_each_complex_event_within_50_ms(tmp_path: Path) -> None:
    """With ``-``, a batch is whatever has arrived: a complex event is printed as soon
    as the line of its last event reaches the pipe, not when a batch fills up."""
    query = write(tmp_path, "q.ceql", A_THEN_B)
    proc = spawn("run", query, "-", stdin=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    delays = []
    try:
        out = _line_reader(proc.stdout)
        for i in range(7):
            proc.stdin.write(json.dumps({"type": "A", "i": i}).encode() + b"\n")
            proc.stdin.flush()
            time.sleep(0.05)  # a slow writer: the A arrives alone
            sent = time.perf_counter()
            proc.stdin.write(json.dumps({"type": "B", "i": i}).encode() + b"\n")
            proc.stdin.flush()
            line = out.get(timeout=60)
            delays.append(time.perf_counter() - sent)
            assert json.loads(line)["events"][-1] == {"type": "B", "i": i}
            # Every A so far pairs with this B: read the others too.
            for _ in range(i):
                out.get(timeout=60)
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    delays.sort()
    assert delays[len(delays) // 2] < 0.05, delays


def test_a_time_window_over_a_field_no_event_has_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    query = write(tmp_path, "q.ceql", "SELECT * FROM S WHERE A ; B WITHIN 5 SECONDS")
    events = write(tmp_path, "e.jsonl", jsonl({"type": "A", "t": 1}, {"type": "B", "t": 2}))
    assert main(["run", query, events]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == (
        "warning: none of the 2 events so far has a time in 'timestamp', which the query's "
        "WITHIN reads (set --time-field): no complex event can start or end"
    )
    assert main(["run", query, events, "--time-field", "t"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_a_clock_value_that_is_no_time_is_reported_and_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    query = write(tmp_path, "q.ceql", "SELECT * FROM S WHERE A ; B WITHIN 5 SECONDS")
    events = write(
        tmp_path,
        "e.jsonl",
        jsonl({"type": "A", "timestamp": "yesterday"}, {"type": "B", "timestamp": 5}),
    )
    assert main(["run", query, events]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0].endswith(
        ":1: 'timestamp' is 'yesterday', not a time: the event has no clock for WITHIN "
        "(it takes part only inside complex events)"
    )
    assert err[-1] == (
        "2 events, 0 complex events, 0 malformed lines skipped, 1 events without a readable clock"
    )


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
@pytest.mark.parametrize("window", ["WITHIN 5 SECONDS", "WITHIN 5 [timestamp]"])
def test_a_clock_beyond_every_float_is_no_clock_and_kills_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str, window: str
) -> None:
    query = write(tmp_path, "q.ceql", f"SELECT * FROM S WHERE A ; B ; C {window}")
    rows = [("A", "1"), ("B", "1" + "0" * 400), ("C", "3"), ("C", "-" + "9" * 320)]
    if suffix == ".csv":
        content = "type,timestamp\n" + "".join(f"{t},{ts}\n" for t, ts in rows)
    else:
        content = "".join(f'{{"type":"{t}","timestamp":{ts}}}\n' for t, ts in rows)
    events = write(tmp_path, "e" + suffix, content)
    assert main(["run", query, events]) == 0
    captured = capsys.readouterr()
    # B has no clock but sits inside A ; B ; C; the last C, no clock, ends nothing.
    assert [line["positions"] for line in output_lines(captured.out)] == [[0, 1, 2]]
    err = captured.err.splitlines()
    first = 3 if suffix == ".csv" else 2
    assert err[0].endswith(
        f":{first}: 'timestamp' is an integer of 401 digits, too large for a clock: the event "
        "has no clock for WITHIN (it takes part only inside complex events)"
    )
    assert err[-1] == (
        "4 events, 1 complex events, 0 malformed lines skipped, 2 events without a readable clock"
    )


def test_a_progress_line_on_a_terminal_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from cerfleet.cli import run as run_module

    query = write(tmp_path, "q.ceql", A_THEN_B)
    events = write(tmp_path, "e.jsonl", jsonl({"type": "A"}, {"type": "B"}))
    monkeypatch.setattr(run_module._Progress, "PERIOD", 0.0)
    assert main(["run", query, events]) == 0
    assert "%" not in capsys.readouterr().err  # stderr is no terminal here
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(["run", query, events]) == 0
    err = capsys.readouterr().err
    assert "\r100.0% of 0.0 MB, 2 events" in err and "1 complex events" in err
    assert err.endswith("2 events, 1 complex events, 0 malformed lines skipped\n")
    assert main(["run", query, events, "--quiet"]) == 0
    assert "%" not in capsys.readouterr().err


# ------------------------------------------------------------- out-of-order input


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_max_lateness_reorders_within_the_bound(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str
) -> None:
    query = write(tmp_path, "q.ceql", "SELECT * FROM S WHERE A : B WITHIN 10 MILLISECONDS\n")
    rows = [("B", 5), ("A", 3), ("B", 40), ("A", 9)]  # B@5 before A@3; A@9 31 ms late
    if suffix == ".csv":
        content = "type,timestamp\n" + "".join(f"{t},{ts}\n" for t, ts in rows)
    else:
        content = jsonl(*({"type": t, "timestamp": ts} for t, ts in rows))
    events = write(tmp_path, "e" + suffix, content)
    assert main(["run", query, events, "--max-lateness", "2ms"]) == 0
    captured = capsys.readouterr()
    assert [line["positions"] for line in output_lines(captured.out)] == [[0, 1]]
    line = 5 if suffix == ".csv" else 4  # A@9 arrives after B@40: late
    assert f":{line}: late event" in captured.err
    assert main(["run", query, events]) == 0  # in input order, A@3 is late, A : B never
    assert output_lines(capsys.readouterr().out) == []


def test_max_lateness_rejects_a_bad_duration(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "q", "e", "--max-lateness", "soon"])
    assert "not a duration" in capsys.readouterr().err


def test_stream_field_restricts_from_and_qualifiers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    query = write(tmp_path, "q.ceql", "SELECT * FROM S1, S2 WHERE S1>A ; B\n")
    events = write(
        tmp_path,
        "e.jsonl",
        jsonl(
            {"type": "A", "src": "S2"},  # not S1
            {"type": "A", "src": "S1"},
            {"type": "B", "src": "S3"},  # not in FROM
            {"type": "B", "src": "S2"},
        ),
    )
    assert main(["run", query, events, "--stream-field", "src"]) == 0
    assert [line["positions"] for line in output_lines(capsys.readouterr().out)] == [[1, 3]]
    # Without a stream field every event is in every stream of FROM.
    assert main(["run", query, events]) == 0
    positions = sorted(line["positions"] for line in output_lines(capsys.readouterr().out))
    assert positions == [[0, 2], [0, 3], [1, 2], [1, 3]]

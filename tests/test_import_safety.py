"""Import and crash safety (docs/import.md): interrupted imports, hostile lines, strict JSON out.

Each test goes through the public API (``TranscriptStore``) on a real SQLite file; the
SIGKILL and CLI cases run subprocesses (``tests/workers/crash_importer.py``, the installed
``openclaw-fts``). "Same as a clean import" is checked row by row: every column of every
stored event, in ``seq`` order, and the session rows.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy
import sqlalchemy.exc
from factories import MessageFactory, msg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, text

from openclaw_fts import Caller, TranscriptStore, jsonsafe
from openclaw_fts.check import check
from openclaw_fts.errors import ImportFormatError, InvalidEventError
from openclaw_fts.reconcile import RECONCILE_LEASE_SECONDS, LeaseWait, holder_is_dead

#: Random transcripts × interruption points tried in process per run.
INTERRUPT_EXAMPLES = 60
#: Entries written per import transaction in these tests (small: many interruption points).
SMALL_BATCH = 5
#: The key the tests import under (given: without one, a second session goes under an orphan key).
MAIN_KEY = "agent:main:main"

ALL_CALLER = Caller("agent:main:main", visibility="all")

EVENT_COLUMNS = "seq, event_id, parent_id, type, role, target_id, side, timestamp_ms, event"


class Interrupted(Exception):
    """Raised from the progress callback: the import stops after a committed batch."""


def stored_events(engine: Engine, sid: str) -> list[tuple[Any, ...]]:
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                f"SELECT {EVENT_COLUMNS} FROM transcript_events WHERE session_id = :s ORDER BY seq"
            ),
            {"s": sid},
        ).all()
    return [tuple(r) for r in rows]


def session_row(engine: Engine, sid: str) -> tuple[Any, ...]:
    with engine.connect() as conn:
        row = conn.execute(
            text(
                "SELECT session_key, agent_id, spawned_by, parent_session_key, "
                "owner_session_key, archived, incognito, last_seq FROM openclaw_sessions "
                "WHERE session_id = :s"
            ),
            {"s": sid},
        ).one()
    return tuple(row)


def transcript_lines(rng: random.Random, n: int) -> list[bytes]:
    """A transcript as an older writer leaves it: entries with and without ids (some without
    an id repeated verbatim), a repeated id, and the odd bad or blank line."""
    lines: list[bytes] = [json.dumps({"type": "session", "version": 4, "id": "hdr"}).encode()]
    parent: str | None = None
    for i in range(n):
        roll = rng.random()
        if roll < 0.30:  # no id: a few shapes, so identical lines recur
            shape = rng.randrange(4)
            event: dict[str, Any] = (
                {"type": "model_change", "provider": "p", "modelId": f"m{rng.randrange(2)}"}
                if shape == 0
                else {"type": "custom", "customType": "note", "data": {"n": rng.randrange(3)}}
                if shape == 1
                else {"type": "message", "message": {"role": "user", "content": "same again"}}
                if shape == 2
                else {"type": "message", "message": {"role": "assistant", "content": f"t{i}"}}
            )
            lines.append(json.dumps(event).encode())
        elif roll < 0.34 and parent is not None:  # the same id twice: the first one counts
            lines.append(json.dumps(msg(parent, "a repeated id")).encode())
        elif roll < 0.38:
            lines.append(
                rng.choice([b"{broken", b'{"type":"message","x":NaN}', b"\xff\xfe", b"[1]", b""])
            )
        else:
            event = MessageFactory(id=f"e{i}", parentId=parent, text=f"entry {i} text")
            lines.append(json.dumps(event).encode())
            parent = f"e{i}"
    return lines


#: What the in-process property test did (printed with ``-s``, quoted in docs/reliability.md).
TALLY = {"transcripts": 0, "stopped": 0, "entries": 0, "aborted": 0}


@pytest.fixture(scope="module")
def shared_store(tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = tmp_path_factory.mktemp("interrupt")
    store = TranscriptStore(f"sqlite:///{folder / 'db.sqlite'}", background=False)
    yield store, folder
    store.close()
    print(
        f"\n[import-interrupt] {TALLY['transcripts']} transcripts, {TALLY['stopped']} imports "
        f"stopped between batches, {TALLY['aborted']} aborted inside a statement, "
        f"{TALLY['entries']} entries compared with a clean import, 0 lost"
    )


#: Numbers each Hypothesis example's file and sessions uniquely within the shared database.
_example = iter(range(10**9))


@settings(
    max_examples=INTERRUPT_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    seed=st.integers(0, 2**32 - 1),
    size=st.integers(0, 120),
    stops=st.lists(st.integers(0, 12), min_size=1, max_size=3),
)
def test_interrupted_imports_end_as_a_clean_import(
    shared_store: Any, seed: int, size: int, stops: list[int]
) -> None:
    """Stop an import after a random number of committed batches, again and again, then let a
    last import finish: the session holds exactly what one clean import stores."""
    store, folder = shared_store
    n = next(_example)
    path = folder / f"t{n}.jsonl"
    path.write_bytes(b"\n".join(transcript_lines(random.Random(seed), size)) + b"\n")
    clean = store.import_jsonl(
        path, session_key=MAIN_KEY, session_id=f"clean{n}", batch_events=SMALL_BATCH
    )
    for stop_after in stops:
        batches = 0

        def stop(count: int, limit: int = stop_after) -> None:
            nonlocal batches
            batches += 1
            if batches > limit:
                raise Interrupted

        try:
            store.import_jsonl(
                path, session_key=MAIN_KEY, session_id=f"retry{n}", progress=stop, batch_events=3
            )
        except Interrupted:
            TALLY["stopped"] += 1
    final = store.import_jsonl(
        path, session_key=MAIN_KEY, session_id=f"retry{n}", batch_events=SMALL_BATCH
    )
    assert stored_events(store.engine, f"retry{n}") == stored_events(store.engine, f"clean{n}")
    assert session_row(store.engine, f"retry{n}") == session_row(store.engine, f"clean{n}")
    assert final["errorCount"] == clean["errorCount"]
    TALLY["transcripts"] += 1
    TALLY["entries"] += clean["imported"]
    again = store.import_jsonl(path, session_key=MAIN_KEY, session_id=f"retry{n}")
    assert again["imported"] == 0
    assert stored_events(store.engine, f"retry{n}") == stored_events(store.engine, f"clean{n}")


#: Random transcripts interrupted inside SQLite statements per run.
MID_STATEMENT_EXAMPLES = 40
#: SQLite virtual-machine steps between two calls of the interrupting progress handler.
PROGRESS_HANDLER_STEPS = 200


@contextlib.contextmanager
def sqlite_interrupt_after(engine: Engine, calls: int) -> Any:
    """Make SQLite itself abort the running statement (``interrupted``) once its progress
    handler has been called ``calls`` times on this engine's connections: an interruption at an
    arbitrary point inside an import's statements, not only between its batches."""
    seen = {"calls": 0}

    def handler() -> int:
        seen["calls"] += 1
        return 1 if seen["calls"] > calls else 0

    def on_checkout(dbapi_conn: Any, record: Any, proxy: Any) -> None:
        dbapi_conn.set_progress_handler(handler, PROGRESS_HANDLER_STEPS)

    def on_checkin(dbapi_conn: Any, record: Any) -> None:
        dbapi_conn.set_progress_handler(None, 0)

    sqlalchemy.event.listen(engine, "checkout", on_checkout)
    sqlalchemy.event.listen(engine, "checkin", on_checkin)
    try:
        yield
    finally:
        sqlalchemy.event.remove(engine, "checkout", on_checkout)
        sqlalchemy.event.remove(engine, "checkin", on_checkin)


@settings(
    max_examples=MID_STATEMENT_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    seed=st.integers(0, 2**32 - 1),
    size=st.integers(1, 120),
    stops=st.lists(st.integers(0, 40), min_size=1, max_size=3),
)
def test_imports_aborted_inside_a_statement_end_as_a_clean_import(
    shared_store: Any, seed: int, size: int, stops: list[int]
) -> None:
    """SQLite aborts a statement of the import (``interrupted``: the transaction rolls back)
    at a random point, again and again; a last import finishes: same as one clean import."""
    store, folder = shared_store
    n = next(_example)
    path = folder / f"t{n}.jsonl"
    path.write_bytes(b"\n".join(transcript_lines(random.Random(seed), size)) + b"\n")
    clean = store.import_jsonl(
        path, session_key=MAIN_KEY, session_id=f"clean{n}", batch_events=SMALL_BATCH
    )
    TALLY["transcripts"] += 1
    TALLY["entries"] += clean["imported"]
    for calls in stops:
        try:
            with sqlite_interrupt_after(store.engine, calls):
                store.import_jsonl(
                    path, session_key=MAIN_KEY, session_id=f"retry{n}", batch_events=SMALL_BATCH
                )
        except (sqlite3.OperationalError, sqlalchemy.exc.OperationalError) as exc:
            assert "interrupted" in str(exc)
            TALLY["aborted"] += 1
    store.import_jsonl(path, session_key=MAIN_KEY, session_id=f"retry{n}", batch_events=SMALL_BATCH)
    assert stored_events(store.engine, f"retry{n}") == stored_events(store.engine, f"clean{n}")
    assert session_row(store.engine, f"retry{n}") == session_row(store.engine, f"clean{n}")


def test_reimport_without_ids_after_a_stop_is_complete(
    store: TranscriptStore, tmp_path: Path
) -> None:
    """The issue's case: 21 entries without ids, the import stopped after a batch; the retry
    stores the rest (it used to report them as duplicates and store 16)."""
    path = tmp_path / "old.jsonl"
    events = [
        {"type": "message", "message": {"role": "user", "content": f"old writer line {i % 7}"}}
        for i in range(21)
    ]
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    clean = store.import_jsonl(path, session_key=MAIN_KEY, session_id="clean", batch_events=5)
    assert clean["imported"] == 21

    def stop(count: int) -> None:
        raise Interrupted

    with pytest.raises(Interrupted):
        store.import_jsonl(
            path, session_key=MAIN_KEY, session_id="retry", progress=stop, batch_events=5
        )
    assert len(stored_events(store.engine, "retry")) == 5
    retry = store.import_jsonl(path, session_key=MAIN_KEY, session_id="retry", batch_events=5)
    assert retry["imported"] == 16 and retry["skippedDuplicates"] == 5
    assert stored_events(store.engine, "retry") == stored_events(store.engine, "clean")
    store.reconcile()
    assert check(store.engine).ok


def test_a_grown_file_adds_only_its_new_entries(store: TranscriptStore, tmp_path: Path) -> None:
    """Re-importing a transcript its writer appended to since: the old entries (with or
    without ids, repeated text included) are not stored twice; the new ones are."""
    path = tmp_path / "grow.jsonl"
    same = {"type": "custom", "customType": "tick"}
    first = [same, msg("a", "first"), same]
    path.write_text("".join(json.dumps(e) + "\n" for e in first), encoding="utf-8")
    assert store.import_jsonl(path, session_key=MAIN_KEY, session_id="g")["imported"] == 3
    with path.open("a", encoding="utf-8") as handle:
        for event in (same, msg("b", "second", parent="a")):
            handle.write(json.dumps(event) + "\n")
    again = store.import_jsonl(path, session_key=MAIN_KEY, session_id="g")
    assert (again["imported"], again["skippedDuplicates"]) == (2, 3)
    assert [r[3] for r in stored_events(store.engine, "g")] == [
        "custom",
        "message",
        "custom",
        "custom",
        "message",
    ]


# -- SIGKILL in a subprocess -----------------------------------------------------------------

#: Imports killed with SIGKILL per run, each at a seeded random moment.
SIGKILL_TRIALS = 20
#: Transcripts per trial and entries per transcript (with ~30 % id-less entries).
SIGKILL_FILES = 3
SIGKILL_ENTRIES = 300
#: Entries per transaction in the killed worker (many commit points to land between or in).
SIGKILL_BATCH = 10
SIGKILL_SEED = 20261203
#: Kills land at a random moment within this share of a measured uninterrupted import.
SIGKILL_WINDOW_SHARE = 0.9


@pytest.mark.slow
def test_imports_killed_with_sigkill_end_as_a_clean_import(tmp_path: Path) -> None:
    from test_crash import ForkServer

    rng = random.Random(SIGKILL_SEED)
    files = []
    for k in range(SIGKILL_FILES):
        path = tmp_path / f"f{k}.jsonl"
        path.write_bytes(b"\n".join(transcript_lines(rng, SIGKILL_ENTRIES)) + b"\n")
        files.append(path)
    db = tmp_path / "kill.sqlite"
    store = TranscriptStore(f"sqlite:///{db}", background=False)
    worker = ForkServer(tmp_path)
    mid_import = lost = 0
    total = 0
    try:
        clean: dict[str, list[tuple[Any, ...]]] = {}
        for path in files:
            store.import_jsonl(path, session_key=MAIN_KEY, session_id=f"clean-{path.stem}")
            clean[path.stem] = stored_events(store.engine, f"clean-{path.stem}")
        # How long the worker's whole import takes on this machine, so the kills below land
        # inside it on a fast CI box as on a slow laptop (a fixed window once missed it).
        worker.start("crash_importer", db, "calibrate-", SIGKILL_BATCH, *files)
        worker.wait_for("ready")
        started = time.monotonic()
        worker.wait_for("done")
        window = time.monotonic() - started
        worker.kill()
        for trial in range(SIGKILL_TRIALS):
            prefix = f"k{trial}-"
            worker.start("crash_importer", db, prefix, SIGKILL_BATCH, *files)
            worker.wait_for("ready")
            time.sleep(rng.uniform(0.0, SIGKILL_WINDOW_SHARE * window))
            lines, alive = worker.kill()
            finished = any("done" in line for line in lines)
            mid_import += alive and not finished and any("batch" in line for line in lines)
            for path in files:  # the retry
                store.import_jsonl(path, session_key=MAIN_KEY, session_id=prefix + path.stem)
                got = stored_events(store.engine, prefix + path.stem)
                lost += len(clean[path.stem]) - len(got)
                total += len(got)
                assert got == clean[path.stem], f"trial {trial}, {path.name}"
        store.reconcile()
        assert check(store.engine).ok
    finally:
        worker.close()
        store.close()
    print(
        f"\n[import-crash] import takes {window * 1000:.0f} ms; "
        f"{SIGKILL_TRIALS} SIGKILLs ({mid_import} mid-import), "
        f"{total} entries re-imported, {lost} lost"
    )
    assert mid_import >= SIGKILL_TRIALS // 4, "kills should land inside an import"


# -- every way a line can be bad -------------------------------------------------------------


def _nested(depth: int) -> bytes:
    return b'{"type":"message","id":"deep","x":' + b"[" * depth + b"]" * depth + b"}"


#: (line, the reason its error names); None: the line is stored. Line numbers follow the order.
HOSTILE_LINES: list[tuple[bytes, str | None]] = [
    (b"\xef\xbb\xbf" + json.dumps({"type": "session", "id": "hostile"}).encode(), None),
    (json.dumps(msg("a", "before the hostile lines")).encode(), None),
    (b'{"type":"message","id":"big","timestamp":' + b"9" * 5000 + b"}", "more than"),
    (b'{"type":"message","id":"nan","timestamp":NaN}', "non-finite number NaN"),
    (b'{"type":"message","id":"inf","n":[Infinity]}', "non-finite number Infinity"),
    (b'{"type":"message","id":"ninf","n":-Infinity}', "non-finite number -Infinity"),
    (b'{"type":"message","id":"e400","timestamp":1e400}', "number out of range"),
    (b'{"type":"message","id":"bytes","message":{"content":"\xff\xfe"}}', "not valid UTF-8"),
    (b'{"type":"message","id":"s\\ud800","message":{"content":"x"}}', "lone surrogate"),
    (_nested(300), "nested deeper than"),
    (_nested(100_000), "nested too deeply"),
    (b"\xef\xbb\xbf" + json.dumps(msg("bom2", "mid-file mark")).encode(), "byte-order mark"),
    (b'{"type":"message","id":"' + b"k" * 100_000 + b'"}', "longer than"),
    (b"{not json", "malformed JSON"),
    (b"[1, 2]", "not a JSON object"),
    (json.dumps(msg("far", "far future", ts=10**30)).encode(), None),
    (json.dumps(msg("z", "after the hostile lines", parent="a")).encode(), None),
]


def write_hostile(path: Path) -> None:
    path.write_bytes(b"\n".join(line for line, _ in HOSTILE_LINES) + b"\n")


def test_every_bad_line_is_reported_with_file_and_line(
    store: TranscriptStore, tmp_path: Path
) -> None:
    path = tmp_path / "hostile.jsonl"
    write_hostile(path)
    report = store.import_jsonl(path, session_key="agent:main:hostile")
    bad = [(n, why) for n, (_, why) in enumerate(HOSTILE_LINES, start=1) if why is not None]
    assert report["errorCount"] == len(bad), report["errors"]
    for (number, why), error in zip(bad, report["errors"], strict=True):
        assert error.startswith(f"{path}:{number}: "), (number, error)
        assert why in error, (number, why, error)
        assert len(error) < len(str(path)) + 200, error  # no input quoted back
    assert report["imported"] == len(HOSTILE_LINES) - len(bad)
    assert [r[1] for r in stored_events(store.engine, "hostile")] == [
        "hostile",  # line 1, behind a byte-order mark
        "a",
        "far",  # a timestamp out of range is stored, and treated as absent
        "z",
    ]
    store.reconcile()
    assert check(store.engine).ok
    found = store.search(ALL_CALLER, "hostile lines")
    assert sorted(h["messageId"] for h in found["results"]) == ["a", "z"]


def test_bad_lines_never_stop_a_folder_import(store: TranscriptStore, tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    write_hostile(folder / "a-hostile.jsonl")
    (folder / "b-good.jsonl").write_text(
        json.dumps(msg("g1", "the later file")) + "\n", encoding="utf-8"
    )
    report = store.import_dir(folder)
    assert report["failedFiles"] == []
    assert sorted(report["sessions"]) == ["b-good", "hostile"]
    assert stored_events(store.engine, "b-good")[0][1] == "g1"


def test_an_unreadable_file_is_refused_as_a_whole(store: TranscriptStore, tmp_path: Path) -> None:
    """A file that cannot be opened is an ImportFormatError, not a bare OSError."""
    folder = tmp_path / "dir.jsonl"
    folder.mkdir()
    with pytest.raises(ImportFormatError):
        store.import_jsonl(folder)


@pytest.mark.parametrize(
    "value",
    [float("nan"), float("inf"), -float("inf"), 10**5000],
    ids=["nan", "inf", "-inf", "huge"],
)
def test_append_refuses_what_is_not_strict_json(store: TranscriptStore, value: Any) -> None:
    store.create_session("s1", "agent:main:main")
    event = msg("x", "payload")
    event["metrics"] = {"value": value}
    with pytest.raises(InvalidEventError):
        store.append("s1", event)
    with pytest.raises(InvalidEventError):
        store.append_many("s1", [msg("y", "fine"), event])
    assert stored_events(store.engine, "s1") == []


# -- the command line ------------------------------------------------------------------------


def strict_json(textual: str) -> Any:
    """Parse as RFC 8259 JSON: NaN / Infinity fail the test."""

    def refuse(name: str) -> Any:
        raise AssertionError(f"non-finite {name} in JSON output")

    return json.loads(textual, parse_constant=refuse)


def test_cli_reports_bad_lines_and_imports_the_later_files(tmp_path: Path) -> None:
    from test_cli import one_line_error, run

    write_hostile(tmp_path / "hostile.jsonl")
    (tmp_path / "later.jsonl").write_text(
        json.dumps(msg("g1", "the later file")) + "\n", encoding="utf-8"
    )
    proc = run(tmp_path, "--db", "s.sqlite", "import", "hostile.jsonl", "later.jsonl", "--json")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "unexpected error" not in proc.stderr
    result = strict_json(proc.stdout)
    assert sorted(result["sessions"]) == ["hostile", "later"]
    # the good lines of the hostile file (same batch as the bad ones) and the later file
    assert result["imported"] == sum(why is None for _, why in HOSTILE_LINES) + 1
    assert result["errorCount"] == sum(why is not None for _, why in HOSTILE_LINES)
    assert all(e.startswith("hostile.jsonl:") for e in result["errors"]), result["errors"]
    assert any(e.startswith("hostile.jsonl:3: integer with more than") for e in result["errors"])
    human = run(tmp_path, "--db", "h.sqlite", "import", "hostile.jsonl", "later.jsonl")
    assert human.returncode == 0 and "hostile.jsonl:4: non-finite number NaN" in human.stdout
    missing = run(tmp_path, "--db", "m.sqlite", "import", "nowhere.jsonl", "later.jsonl")
    assert "nowhere.jsonl" in one_line_error(missing, 1)
    history = run(tmp_path, "--db", "m.sqlite", "history", "agent:main:main", "--json")
    assert [m["__openclaw"]["id"] for m in strict_json(history.stdout)["messages"]] == ["g1"]


def test_non_finite_numbers_stored_behind_the_plugins_back_come_out_as_null(
    store: TranscriptStore, tmp_path: Path
) -> None:
    """A row written by another program (or an older version) holding NaN / Infinity: history
    (API, tool, CLI) still answers strict JSON, the numbers read as null."""
    from test_cli import run

    from openclaw_fts import tools

    store.create_session("legacy", "agent:main:main")
    store.append("legacy", msg("m1", "legacy metrics"))
    raw = '{"type":"message","id":"m2","parentId":"m1","message":{"role":"assistant",'
    raw += '"content":"measured","metrics":{"cost":NaN,"ratio":Infinity,"low":-Infinity}}}'
    sqlite = __import__("sqlite3").connect(store.engine.url.database)
    with sqlite:
        sqlite.execute(
            "INSERT INTO transcript_events (session_id, seq, event_id, parent_id, type, role, "
            "event) VALUES ('legacy', 1, 'm2', 'm1', 'message', 'assistant', ?)",
            (raw,),
        )
    sqlite.close()
    store.reconcile()
    out = store.history(ALL_CALLER, "agent:main:main")
    strict_json(jsonsafe.dumps(out))
    assert out["messages"][-1]["metrics"] == {"cost": None, "ratio": None, "low": None}
    strict_json(
        jsonsafe.dumps(tools.sessions_history(store, ALL_CALLER, {"sessionKey": "agent:main:main"}))
    )
    proc = run(
        tmp_path, "--db", str(store.engine.url.database), "history", "agent:main:main", "--json"
    )
    assert proc.returncode == 0, proc.stderr
    assert strict_json(proc.stdout)["messages"][-1]["metrics"]["cost"] is None


# -- error messages quote bounded input ------------------------------------------------------

HUGE = 100_000


def test_errors_quote_at_most_a_bounded_piece_of_the_input(
    store: TranscriptStore, tmp_path: Path
) -> None:
    from openclaw_fts import tools
    from openclaw_fts.errors import MAX_ERROR_CHARS, MAX_QUOTED_CHARS, OpenClawFtsError

    key = "agent:main:" + "k" * HUGE
    bound = MAX_QUOTED_CHARS * 2 + 200  # a message quotes at most two inputs
    self_caller = Caller("agent:main:main", visibility="self")
    answers = [
        tools.sessions_history(store, ALL_CALLER, {"sessionKey": key}),
        tools.sessions_history(store, self_caller, {"sessionKey": key}),
        tools.sessions_search(store, self_caller, {"query": "x", "sessionKey": key}),
    ]
    # OpenClaw's readers ignore unknown arguments, however long their names.
    assert "error" not in tools.sessions_search(store, ALL_CALLER, {"query": "x", key: 1})
    for answer in answers:
        assert answer["status"] in ("error", "forbidden"), answer
        assert len(answer["error"]) < bound, len(answer["error"])
        assert "k" * (MAX_QUOTED_CHARS + 1) not in answer["error"]
    store.create_session("s1", "agent:main:main")
    calls = [
        lambda: store.append(key, msg("a", "x")),
        lambda: store.rewind("s1", "m" * HUGE),
        lambda: store.create_session(key, "agent:main:main"),
        lambda: store.import_jsonl(tmp_path / ("n" * 200 + ".jsonl")),
    ]
    for call in calls:
        with pytest.raises(OpenClawFtsError) as caught:
            call()
        assert len(str(caught.value)) < bound + len(str(tmp_path)), len(str(caught.value))
    assert len(str(OpenClawFtsError("x" * HUGE))) < MAX_ERROR_CHARS + 40


def test_cli_errors_quote_a_bounded_piece_of_the_input(tmp_path: Path) -> None:
    from test_cli import one_line_error, run

    from openclaw_fts.errors import MAX_ERROR_CHARS

    (tmp_path / "t.jsonl").write_text(json.dumps(msg("a", "x")) + "\n", encoding="utf-8")
    assert run(tmp_path, "--db", "s.sqlite", "import", "t.jsonl").returncode == 0
    for args in (
        ("history", "agent:main:" + "k" * HUGE),
        ("search", "x", "--limit", "9" * HUGE),
        ("search", "x", "--since", "y" * HUGE),
    ):
        line = one_line_error(
            run(tmp_path, "--db", "s.sqlite", *args), 1 if args[0] == "history" else 2
        )
        assert len(line) < MAX_ERROR_CHARS + 100, (args[0], len(line))


# -- the reconcile lease of a dead or a live holder ------------------------------------------

WORKERS = Path(__file__).parent / "workers"
#: A live holder's lease in these tests: long enough to be seen waiting, short enough to wait.
SHORT_LEASE_SECONDS = 3.0
#: The same for a holder that a COMMAND LINE run must see waiting: the command's start (a new
#: interpreter importing the package) took more than 3 s beside a second test worker, and a
#: lease that ran out before the command read it was rightly taken over, without a wait.
CLI_LEASE_SECONDS = 15.0


def hold_lease(url: str, lease_seconds: float, hold_seconds: float) -> subprocess.Popen[str]:
    """A process that holds the lease (without renewing it) until it exits or is killed."""
    proc = subprocess.Popen(
        [
            sys.executable,
            str(WORKERS / "hold_lease.py"),
            url,
            str(lease_seconds),
            str(hold_seconds),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=WORKERS,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith('{"held"'), (line, proc.stderr.read() if proc.stderr else "")
    return proc


def pending_import(store: TranscriptStore, tmp_path: Path) -> None:
    path = tmp_path / "pending.jsonl"
    path.write_text(json.dumps(msg("p1", "waiting for the lease")) + "\n", encoding="utf-8")
    store.import_jsonl(path)
    assert store.index_status()["pending"] == 1


def test_a_dead_holders_lease_is_taken_over_at_once(
    store: TranscriptStore, db_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pending_import(store, tmp_path)
    proc = hold_lease(db_url, RECONCILE_LEASE_SECONDS, 600)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    waits: list[LeaseWait] = []
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="openclaw_fts.reconcile"):
        out = store.reconcile(on_wait=waits.append)
    took = time.monotonic() - started
    assert out["ran"] is True and out["pending"] == 0
    assert waits == [], "a dead holder is not waited for"
    assert took < RECONCILE_LEASE_SECONDS / 3, took
    assert any("is gone" in r.getMessage() for r in caplog.records), caplog.text


def test_a_live_holder_is_waited_for_and_the_wait_is_reported(
    store: TranscriptStore, db_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pending_import(store, tmp_path)
    proc = hold_lease(db_url, SHORT_LEASE_SECONDS, 600)
    try:
        waits: list[LeaseWait] = []
        started = time.monotonic()
        with caplog.at_level(logging.INFO, logger="openclaw_fts.reconcile"):
            out = store.reconcile(on_wait=waits.append)
        took = time.monotonic() - started
    finally:
        proc.kill()
        proc.communicate(timeout=30)
    assert out["ran"] is True and out["pending"] == 0
    assert len(waits) == 1 and f":{proc.pid}:" in waits[0].holder
    assert 0 < waits[0].expires_in <= SHORT_LEASE_SECONDS
    assert took >= SHORT_LEASE_SECONDS - 1.0, "the live holder's lease was not respected"
    logged = [r.getMessage() for r in caplog.records if "reconcile waits" in r.getMessage()]
    assert len(logged) == 1 and "holds the lease" in logged[0] and str(proc.pid) in logged[0]


def test_who_counts_as_a_dead_holder() -> None:
    here = socket.gethostname()
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(timeout=30)
    assert holder_is_dead(f"{here}:{gone.pid}:token")
    assert not holder_is_dead(f"{here}:{os.getpid()}:token")  # this very process
    assert not holder_is_dead(f"another-{here}:{gone.pid}:token")  # cannot see another host
    assert not holder_is_dead("not a holder name")


def test_cli_takes_a_dead_holders_lease_and_shows_a_live_holders_wait(tmp_path: Path) -> None:
    from test_cli import run

    (tmp_path / "t.jsonl").write_text(json.dumps(msg("a", "lease words")) + "\n", encoding="utf-8")
    assert run(tmp_path, "--db", "s.sqlite", "import", "t.jsonl").returncode == 0
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    dead = hold_lease(url, RECONCILE_LEASE_SECONDS, 600)
    dead.kill()
    dead.communicate(timeout=30)
    started = time.monotonic()
    proc = run(tmp_path, "--db", "s.sqlite", "search", "lease", "--json")
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - started < RECONCILE_LEASE_SECONDS / 2
    assert "Waiting" not in proc.stderr
    assert [h["messageId"] for h in strict_json(proc.stdout)["results"]] == ["a"]

    (tmp_path / "u.jsonl").write_text(json.dumps(msg("b", "more words")) + "\n", encoding="utf-8")
    assert run(tmp_path, "--db", "s.sqlite", "import", "u.jsonl").returncode == 0
    live = hold_lease(url, CLI_LEASE_SECONDS, 600)
    try:
        proc = run(tmp_path, "--db", "s.sqlite", "reconcile")
    finally:
        live.kill()
        live.communicate(timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert f"Waiting: another reconciler ({socket.gethostname()}:{live.pid}:" in proc.stderr
    assert "holds the lease" in proc.stderr and "expires in" in proc.stderr

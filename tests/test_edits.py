"""Editing stored events: an UPDATE of an event's JSON re-indexes its session (ORM in the same
flush; bulk and raw SQL through the reconciler, the session hidden meanwhile) or is refused
with a clear error; ``rebuild`` / ``optimize``; bulk ``insert(TranscriptEvent)``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from factories import chain, msg
from sqlalchemy import Engine, insert, select, text, update
from sqlalchemy.exc import DBAPIError, IntegrityError, ProgrammingError
from sqlalchemy.orm import Session, sessionmaker

from openclaw_fts import (
    Caller,
    DuplicateEventError,
    InvalidEventError,
    TranscriptEvent,
    TranscriptStore,
)
from openclaw_fts.check import check
from openclaw_fts.index.sqlite.edit_triggers import EDIT_REFUSED

pytestmark = pytest.mark.both_engines

CALLER = Caller("agent:main:main", visibility="all")
CLI = Path(sys.executable).with_name("openclaw-fts")
#: Seconds one CLI run may take on a loaded machine.
COMMAND_TIMEOUT = 120


@pytest.fixture
def seeded(store: TranscriptStore) -> TranscriptStore:
    store.create_session("s1", "agent:main:main")
    store.append_many("s1", chain(["alpha original words", "bravo reply", "charlie third"]))
    return store


def found(store: TranscriptStore, query: str) -> list[str]:
    return [h["messageId"] for h in store.search(CALLER, query)["results"]]


def edited(event: dict[str, Any], content: str) -> dict[str, Any]:
    return {**event, "message": {**event["message"], "content": content}}


def test_orm_attribute_edit_reindexes_in_the_same_flush(
    seeded: TranscriptStore, host: sessionmaker[Session]
) -> None:
    with host.begin() as db:
        ev = db.get(TranscriptEvent, ("s1", 0))
        assert ev is not None
        ev.event = edited(ev.event, "delta replaced words")
    assert found(seeded, "delta") == ["m0"]
    assert found(seeded, "alpha") == []
    assert seeded.index_status()["pending"] == 0
    assert check(seeded.engine).ok


def test_orm_edit_that_moves_the_tree_rederives_columns(
    seeded: TranscriptStore, host: sessionmaker[Session]
) -> None:
    with host.begin() as db:
        ev = db.get(TranscriptEvent, ("s1", 2))
        assert ev is not None
        ev.event = {**ev.event, "id": "m2b", "message": {"role": "user", "content": "echo"}}
    with host() as db:
        row = db.execute(
            select(TranscriptEvent.event_id, TranscriptEvent.role).where(TranscriptEvent.seq == 2)
        ).one()
    assert tuple(row) == ("m2b", "user")
    assert found(seeded, "echo") == ["m2b"]
    assert check(seeded.engine).ok


def test_session_merge_of_an_existing_event_reindexes(
    seeded: TranscriptStore, host: sessionmaker[Session]
) -> None:
    with host.begin() as db:
        db.merge(
            TranscriptEvent(session_id="s1", seq=1, event=msg("m1", "foxtrot merged", parent="m0"))
        )
    assert found(seeded, "foxtrot") == ["m1"]
    assert found(seeded, "bravo") == []
    assert check(seeded.engine).ok


def test_changing_an_events_identity_is_refused(
    seeded: TranscriptStore, host: sessionmaker[Session]
) -> None:
    with (
        pytest.raises(InvalidEventError, match="session_id and seq cannot change"),
        host.begin() as db,
    ):
        ev = db.get(TranscriptEvent, ("s1", 1))
        assert ev is not None
        ev.seq = 7


def test_bulk_orm_update_makes_the_session_pending_then_reconcile_reindexes(
    seeded: TranscriptStore, host: sessionmaker[Session]
) -> None:
    new = {**chain(["", "x"])[1], "message": {"role": "assistant", "content": "golf bulk edit"}}
    with host.begin() as db:
        db.execute(update(TranscriptEvent), [{"session_id": "s1", "seq": 1, "event": new}])
    result = seeded.search(CALLER, "bravo")
    assert result["results"] == [] and result.get("indexing") is True  # hidden, not stale
    assert seeded.index_status()["pending"] == 1
    seeded.reconcile()
    assert found(seeded, "golf") == ["m1"]
    assert check(seeded.engine).ok


#: What a refused raw UPDATE raises: SQLite's RAISE(ABORT) is a constraint failure, PostgreSQL's
#: plpgsql RAISE EXCEPTION (SQLSTATE P0001) a programming error; both carry EDIT_REFUSED.
REFUSED_ERROR: dict[str, type[DBAPIError]] = {
    "sqlite": IntegrityError,
    "postgresql": ProgrammingError,
}


def raw_edit(engine: Engine, seq: int, change: dict[str, Any], **columns: Any) -> None:
    """A raw SQL UPDATE of session s1's event ``seq``, as a migration script or an operator
    writes one: the JSON with ``change`` merged in (``message`` merged one level down), and
    the derived ``columns`` given; no ORM, no plugin code."""
    with engine.begin() as conn:
        stored = conn.execute(
            text("SELECT event FROM transcript_events WHERE session_id = 's1' AND seq = :q"),
            {"q": seq},
        ).scalar_one()
        event = json.loads(stored)
        message = {**event.get("message", {}), **change.pop("message", {})}
        event = {**event, **change, "message": message}
        sets = ", ".join(["event = :event", *(f"{name} = :{name}" for name in columns)])
        conn.execute(
            text(f"UPDATE transcript_events SET {sets} WHERE session_id = 's1' AND seq = :q"),
            {"q": seq, "event": json.dumps(event), **columns},
        )


def index_state(engine: Engine) -> tuple[bool, int]:
    with engine.connect() as conn:
        marked, generation = conn.execute(
            text("SELECT needs_rebuild, generation FROM openclaw_index_state")
        ).one()
    return bool(marked), int(generation)


def test_raw_sql_text_edit_is_reindexed_by_the_reconciler(
    seeded: TranscriptStore, engine: Engine
) -> None:
    _, generation = index_state(engine)
    raw_edit(engine, 2, {"message": {"content": "hotel raw text"}})
    assert index_state(engine) == (True, generation + 1)  # the trigger marks the session
    assert found(seeded, "charlie") == []
    report = check(seeded.engine)
    assert report.ok and report.status["pending"] == 1  # pending is not drift
    seeded.reconcile()
    assert found(seeded, "hotel") == ["m2"]
    assert check(seeded.engine).ok


def test_raw_sql_edit_of_what_the_tree_is_built_from_is_refused(
    seeded: TranscriptStore, engine: Engine
) -> None:
    refused = REFUSED_ERROR[engine.dialect.name]
    with pytest.raises(refused, match="may change the content of an event") as info:
        raw_edit(engine, 2, {"parentId": None})
    assert EDIT_REFUSED in str(info.value)
    assert found(seeded, "charlie") == ["m2"]
    assert seeded.index_status()["pending"] == 0
    # With its column, the same change is accepted (and marks the session).
    raw_edit(engine, 2, {"id": "m9"}, event_id="m9")
    with engine.connect() as conn:
        event_id = conn.execute(
            text("SELECT event_id FROM transcript_events WHERE seq = 2")
        ).scalar_one()
    assert event_id == "m9"
    assert seeded.index_status()["pending"] == 1


def test_rebuild_rederives_columns_written_behind_the_plugin(
    seeded: TranscriptStore, engine: Engine
) -> None:
    # Both the JSON and the derived column, as a careless migration script might: allowed by
    # the guard (the column changed too) but the column is wrong.
    raw_edit(engine, 1, {"message": {"role": "user"}}, role="bogus")
    result = seeded.rebuild(["agent:main:main"])
    assert result["rebuilt"] == ["s1"]
    assert seeded.index_status() == {"pending": 0, "indexed": 1, "total": 1}
    with seeded.engine.connect() as conn:
        role = conn.execute(text("SELECT role FROM transcript_events WHERE seq = 1")).scalar()
    assert role == "user"
    assert check(seeded.engine).ok


def test_rebuild_and_optimize_commands(
    seeded: TranscriptStore, db_url: str, tmp_path: Path
) -> None:
    path = db_url.removeprefix("sqlite:///")
    seeded.close()

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(CLI), "--db", path, "--json", *args],
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT,
            cwd=tmp_path,
        )

    rebuilt = cli("rebuild", "agent:main:main")
    assert rebuilt.returncode == 0, rebuilt.stderr
    data = json.loads(rebuilt.stdout)
    # Re-planned from the transcript; the index was right, so nothing to write.
    assert data["rebuilt"] == ["s1"] and data["sessions"] == 1 and data["pending"] == 0
    assert data["inserted"] == data["deleted"] == 0
    everything = json.loads(cli("rebuild").stdout)
    assert everything["rebuilt"] == ["s1"]
    unknown = cli("rebuild", "agent:nobody:here")
    assert unknown.returncode == 1
    assert "no session has the key or id agent:nobody:here" in unknown.stderr
    optimized = cli("optimize")
    assert optimized.returncode == 0, optimized.stderr
    assert json.loads(optimized.stdout)["optimized"] is True
    assert cli("check").returncode == 0


# -- bulk insert ------------------------------------------------------------------------------


def test_bulk_insert_of_events_is_appended_and_indexed(
    seeded: TranscriptStore, host: sessionmaker[Session]
) -> None:
    seeded.create_session("s2", "agent:main:other")
    with host.begin() as db:
        db.execute(
            insert(TranscriptEvent),
            [
                {"session_id": "s1", "event": msg("m3", "india bulk one", parent="m2")},
                {"session_id": "s2", "event": msg("n0", "juliet bulk two")},
                {"session_id": "s1", "event": msg("m4", "kilo bulk three", parent="m3")},
            ],
        )
    with host() as db:
        seqs = db.execute(
            select(TranscriptEvent.session_id, TranscriptEvent.seq, TranscriptEvent.event_id)
            .where(TranscriptEvent.event_id.in_(["m3", "m4", "n0"]))
            .order_by(TranscriptEvent.session_id, TranscriptEvent.seq)
        ).all()
    assert [tuple(r) for r in seqs] == [("s1", 3, "m3"), ("s1", 4, "m4"), ("s2", 0, "n0")]
    assert sorted(found(seeded, "bulk")) == ["m3", "m4", "n0"]
    assert check(seeded.engine).ok


def test_bulk_insert_errors_are_clear_and_roll_back(
    seeded: TranscriptStore, host: sessionmaker[Session]
) -> None:
    with (
        pytest.raises(InvalidEventError, match="seq is assigned by the plugin"),
        host.begin() as db,
    ):
        db.execute(
            insert(TranscriptEvent), [{"session_id": "s1", "seq": 9, "event": msg("x", "y")}]
        )
    with pytest.raises(DuplicateEventError), host.begin() as db:
        db.execute(
            insert(TranscriptEvent),
            [
                {"session_id": "s1", "event": msg("new", "lima")},
                {"session_id": "s1", "event": msg("m0", "a taken id")},
            ],
        )
    assert found(seeded, "lima") == []
    with host() as db:
        assert db.scalar(select(TranscriptEvent.seq).order_by(TranscriptEvent.seq.desc())) == 2


#: Write-then-optimize rounds: past the ~1,300 after which SQLite before 3.41 found its FTS5
#: index corrupt when every round was a plain 'optimize' (measured with SQLite 3.40.1).
OPTIMIZE_ROUNDS = 1_600


@pytest.mark.sqlite_only("FTS5's segment levels; on PostgreSQL optimize is ANALYZE")
def test_optimize_after_every_write_keeps_the_index_readable(seeded: TranscriptStore) -> None:
    """FTS5's 'optimize' puts the segments it merges one level above the highest, so a write
    then an optimize, repeated (a host that optimizes after every import, an hourly job),
    adds a level each round; the index was unreadable ("database disk image is malformed")
    after about 1,300 rounds. The store's optimize starts the index afresh long before."""
    parent = "m2"
    for n in range(OPTIMIZE_ROUNDS):
        seeded.append("s1", msg(f"r{n}", f"round{n} words", parent=parent))
        parent = f"r{n}"
        seeded.optimize()
    assert found(seeded, f"round{OPTIMIZE_ROUNDS - 1}") == [parent]
    assert found(seeded, "bravo") == ["m1"]
    assert check(seeded.engine).ok

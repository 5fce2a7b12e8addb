"""PostgreSQL's pending marks (revision 0014, ``openclaw_fts/index/postgresql/pending_marks.py``)
on both layouts: after every writer path of the plugin (create, append, a fork's inline
repair, ``append_many``, ``import_dir``, the ORM, the reconciler, ``rebuild``, deletes) and
every write behind its back (raw event inserts, edits and deletes, a state deleted, the
states truncated, a state at another version, a write under REPEATABLE READ), the marked
sessions are exactly those ``STATE_PENDING`` calls pending (one transaction at a time: no
mark is left behind), and the marked probe answers as the one that reads every session, for
the whole database and for each session; a search reports ``indexing`` exactly then."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import PARTITIONED
from factories import chain, msg, transcript_file
from sqlalchemy import Connection, Engine, text
from sqlalchemy.orm import Session, sessionmaker
from test_migrations import revision_module

from openclaw_fts import Caller, TranscriptEvent, TranscriptStore, migrate
from openclaw_fts.alembic import VERSION_TABLE
from openclaw_fts.index.pending import PENDING_TABLE, STATE_PENDING, pending_probe_sql
from openclaw_fts.index.postgresql import pending_marks

ALL = Caller("agent:main:main", visibility="all")


@pytest.fixture(params=["postgresql", PARTITIONED])
def db_engine(request: pytest.FixtureRequest) -> str:
    """Both PostgreSQL layouts (the marks are on sessions and states, alike in both)."""
    return str(request.param)


def marks(engine: Engine) -> set[str]:
    with engine.connect() as conn:
        return {r[0] for r in conn.execute(text(f"SELECT session_id FROM {PENDING_TABLE}"))}


def state_pending(engine: Engine) -> set[str]:
    with engine.connect() as conn:
        return {
            r[0]
            for r in conn.execute(
                text(
                    "SELECT s.session_id FROM openclaw_sessions AS s LEFT JOIN "
                    "openclaw_index_state AS st ON st.session_id = s.session_id "
                    f"WHERE {STATE_PENDING}"
                )
            )
        }


def probes_agree(engine: Engine) -> bool:
    """The marked probe and the unmarked one, for the database and for each session; returns
    the database's answer."""
    with engine.connect() as conn:
        whole = conn.execute(text(pending_probe_sql())).scalar()
        assert conn.execute(text(pending_probe_sql(marked=True))).scalar() == whole
        one = "s.session_id = :sid"
        for (sid,) in conn.execute(text("SELECT session_id FROM openclaw_sessions")).all():
            plain = conn.execute(text(pending_probe_sql(one)), {"sid": sid}).scalar()
            marked = conn.execute(text(pending_probe_sql(one, marked=True)), {"sid": sid})
            assert marked.scalar() == plain, sid
    return bool(whole)


def settled(store: TranscriptStore, engine: Engine, pending: set[str] | None = None) -> None:
    """The marks equal the pending sessions (``pending`` when given), the probes agree, and
    a search of every session says ``indexing`` exactly when one is pending."""
    found = state_pending(engine)
    if pending is not None:
        assert found == pending
    assert marks(engine) == found
    any_pending = probes_agree(engine)
    assert bool(store.search(ALL, "lantern").get("indexing")) is any_pending


def raw(engine: Engine, sql: str, **params: object) -> None:
    with engine.begin() as conn:
        conn.execute(text(sql), params)


def test_the_plugins_writers_leave_the_marks_equal_to_pending(
    store: TranscriptStore, engine: Engine, host: sessionmaker[Session], tmp_path: Path
) -> None:
    store.create_session("s1", "agent:main:main")
    settled(store, engine, set())
    store.append("s1", msg("m1", "first lantern"))
    store.append_many("s1", chain(["second lantern", "third lantern"], prefix="n"))
    settled(store, engine, set())
    # a fork from the first event: not an extension, repaired inline
    store.append("s1", msg("f1", "forked lantern", parent="m1"))
    settled(store, engine, set())
    store.create_session("s2", "agent:main:other", spawned_by="agent:main:main")
    store.append_many("s2", chain(["lantern two"]))
    with host.begin() as db:  # the ORM: an edit and a new event
        ev = db.get(TranscriptEvent, ("s2", 0))
        assert ev is not None
        ev.event = {**ev.event, "message": {"role": "user", "content": "lantern edited"}}
        db.add(TranscriptEvent(session_id="s2", seq=1, event=msg("o2", "lantern orm")))
    settled(store, engine, set())
    folder = tmp_path / "sessions"
    folder.mkdir()
    transcript_file(folder / "imp.jsonl", "imp", ["lantern imported", "more imported"])
    store.import_dir(folder)
    settled(store, engine)
    store.reconcile()
    settled(store, engine, set())
    store.rebuild()
    settled(store, engine)
    store.reconcile()
    settled(store, engine, set())
    assert store.delete_session("s2")
    settled(store, engine, set())


def test_writes_behind_the_plugins_back_are_marked_and_reconcile_clears_them(
    store: TranscriptStore, engine: Engine
) -> None:
    for sid in ("s1", "s2", "s3"):
        store.create_session(sid, f"agent:main:{sid}")
        store.append_many(sid, chain([f"lantern {sid}", "reply"], prefix=sid))
    settled(store, engine, set())
    event = msg("r1", "raw lantern", parent="s11")
    raw(
        engine,
        "INSERT INTO transcript_events (session_id, seq, event_id, parent_id, type, role, "
        "event) VALUES ('s1', 2, 'r1', 's11', 'message', 'user', :e)",
        e=json.dumps(event),
    )
    settled(store, engine, {"s1"})  # behind its last_seq
    raw(engine, "DELETE FROM transcript_events WHERE session_id = 's2' AND seq = 1")
    settled(store, engine, {"s1", "s2"})  # needs_rebuild
    raw(engine, "DELETE FROM openclaw_index_state WHERE session_id = 's3'")
    settled(store, engine, {"s1", "s2", "s3"})  # no state
    store.reconcile()
    settled(store, engine, set())
    raw(engine, "UPDATE openclaw_index_state SET index_version = index_version - 1")
    settled(store, engine, set())  # pending by version only: no mark, the probes agree
    assert store.search(ALL, "lantern").get("indexing") is True
    store.reconcile()
    settled(store, engine, set())
    assert not store.search(ALL, "lantern").get("indexing")
    raw(engine, "TRUNCATE openclaw_index_state")
    settled(store, engine, {"s1", "s2", "s3"})
    store.reconcile()
    settled(store, engine, set())
    with engine.connect() as conn:  # REPEATABLE READ: marked, never cleared there
        conn.execute(text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"))
        conn.execute(text("UPDATE openclaw_index_state SET needs_rebuild = TRUE"))
        conn.execute(text("UPDATE openclaw_index_state SET needs_rebuild = FALSE"))
        conn.commit()
    assert marks(engine) == {"s1", "s2", "s3"} and state_pending(engine) == set()
    assert probes_agree(engine) is False  # a mark that outlived its pendingness: no answer
    assert not store.search(ALL, "lantern").get("indexing")
    store.append("s1", msg("t1", "lantern after"))  # the session's next write clears its mark
    assert marks(engine) == {"s2", "s3"}


def test_revision_0014_marks_the_pending_sessions_of_an_existing_database(
    store: TranscriptStore, engine: Engine
) -> None:
    """A database at 0012 with exact and pending sessions: the upgrade marks the pending
    ones, searches answer the same, and the downgrade removes the table and triggers."""
    for sid in ("s1", "s2", "s3"):
        store.create_session(sid, f"agent:main:{sid}")
        store.append_many(sid, chain([f"lantern {sid}"], prefix=sid))
    if _partitioned(engine):  # refused downgrade: 0014's own statements, as it would run them
        with engine.begin() as conn:
            drop_0014_by_hand(conn)
            conn.execute(
                text(f"UPDATE {VERSION_TABLE} SET version_num = :v"),
                {"v": migrate.BOUNDED_REVISION},
            )
    else:
        migrate.downgrade(engine, migrate.BOUNDED_REVISION)
    assert migrate.current_revisions(engine) == (migrate.BOUNDED_REVISION,)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT to_regclass(:t)"), {"t": PENDING_TABLE}).scalar() is None
        assert not {r[0] for r in conn.execute(text("SELECT tgname FROM pg_trigger"))} & {
            t[0] for t in revision_module("0014_pending_sessions").TRIGGERS
        }
    raw(engine, "DELETE FROM transcript_events WHERE session_id = 's2'")
    raw(engine, "DELETE FROM openclaw_index_state WHERE session_id = 's3'")
    with TranscriptStore(engine, upgrade=False, background=False) as old:
        before = old.search(ALL, "lantern")
    assert before.get("indexing") is True
    migrate.upgrade(engine)
    assert migrate.current_revisions(engine) == tuple(sorted(migrate.head_revisions()))
    assert marks(engine) == {"s2", "s3"} == state_pending(engine)
    with TranscriptStore(engine, background=False) as new:
        assert new.search(ALL, "lantern") == before
        new.reconcile()
        settled(new, engine, set())


def _partitioned(engine: Engine) -> bool:
    with engine.connect() as conn:
        found = conn.execute(text("SELECT to_regclass('message_index_by_agent')")).scalar()
    return found is not None


def drop_0014_by_hand(conn: Connection) -> Any:
    """Revision 0014's schema dropped by its own frozen statements, as its downgrade (or
    another process) would drop it, without touching the version table; returns the
    revision's script."""
    old = revision_module("0014_pending_sessions")
    for name, table, _ in old.TRIGGERS:
        conn.execute(text(f"DROP TRIGGER {name} ON {table}"))
    for name in old.FUNCTION_NAMES:
        conn.execute(text(f"DROP FUNCTION {name}"))
    conn.execute(text(f"DROP TABLE {old.TABLE}"))
    conn.execute(text(f"DROP INDEX {old.VERSION_INDEX}"))
    return old


def test_revision_0014_froze_the_ddl_it_runs() -> None:
    """The revision's frozen copies are the DDL ``pending_marks`` holds today (a change of the
    definition of pending needs a revision of its own)."""
    old = revision_module("0014_pending_sessions")
    assert old.CREATE_TABLE == pending_marks.CREATE_TABLE
    assert old.CREATE_VERSION_INDEX == pending_marks.CREATE_VERSION_INDEX
    assert old.BACKFILL == pending_marks.BACKFILL
    assert old.FUNCTIONS == pending_marks.FUNCTIONS
    assert old.TRIGGERS == pending_marks.TRIGGERS
    assert old.FUNCTION_NAMES == pending_marks.FUNCTION_NAMES
    assert (old.TABLE, old.VERSION_INDEX) == (PENDING_TABLE, pending_marks.VERSION_INDEX)


def test_a_mark_is_not_cleared_while_a_write_that_keeps_it_pending_is_in_flight(
    store: TranscriptStore, engine: Engine
) -> None:
    """A marked session made exact by one transaction (its state) while another, not yet
    committed, raises its ``last_seq`` (a raw event insert): the first cannot lock the
    session's row, so it leaves the mark, and after both commit the session is pending and
    marked (clearing it would have lost the mark: the second saw it and wrote none)."""
    store.create_session("s1", "agent:main:main")
    store.append_many("s1", chain(["lantern one", "lantern two"], prefix="s1"))
    raw(engine, "UPDATE openclaw_index_state SET needs_rebuild = TRUE")
    assert marks(engine) == {"s1"}
    event = msg("r1", "raw lantern", parent="s11")
    with engine.connect() as writer, engine.connect() as indexer:
        writer.execute(
            text(
                "INSERT INTO transcript_events (session_id, seq, event_id, parent_id, type, "
                "role, event) VALUES ('s1', 2, 'r1', 's11', 'message', 'user', :e)"
            ),
            {"e": json.dumps(event)},
        )  # last_seq 2, not committed: the session's row is locked
        indexer.execute(text("UPDATE openclaw_index_state SET needs_rebuild = FALSE"))
        indexer.commit()  # exact as it saw it (last_seq 1): the mark stays all the same
        assert marks(engine) == {"s1"}
        writer.commit()
    settled(store, engine, {"s1"})  # behind: last_seq 2, indexed 1
    store.reconcile()
    settled(store, engine, set())

"""The ORM session hooks: same-transaction indexing whatever way the host writes (docs/host.md).

Every test runs on a real SQLite file; what is indexed is observed through ``store.search`` (and,
for "nothing left behind", by counting rows of the plugin's tables).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from engines import count_matches, full_text_integrity
from factories import AgentSessionFactory, MessageFactory, chain, msg
from sqlalchemy import Connection, Engine, create_engine, delete, inspect, select, text
from sqlalchemy import event as sa_event
from sqlalchemy.orm import Session, scoped_session, sessionmaker

import openclaw_fts
from openclaw_fts import (
    AgentSession,
    Caller,
    DuplicateEventError,
    InvalidEventError,
    OpenClawFtsError,
    TranscriptEvent,
    TranscriptStore,
    UnknownSessionError,
)
from openclaw_fts.check import check
from openclaw_fts.engine import READ_ONLY, make_engine
from openclaw_fts.index.sqlite.connect import TAKE_WRITE_LOCK
from openclaw_fts.index.sqlite.vocabulary import VOCABULARY_TABLE

pytestmark = pytest.mark.both_engines

CALLER = Caller("agent:main:main", visibility="all")
KEY = "agent:main:main"
#: Every plugin table that holds per-session rows.
SESSION_TABLES = (
    "openclaw_sessions",
    "transcript_events",
    "openclaw_branches",
    "openclaw_index_state",
    "message_index",
)


# -- helpers ---------------------------------------------------------------------------------


def found(store: TranscriptStore, query: str, **kwargs: Any) -> set[str]:
    out = store.search(CALLER, query, limit=25, **kwargs)
    assert "status" not in out, out
    return {hit["messageId"] for hit in out["results"]}


def search_out(store: TranscriptStore, query: str) -> dict[str, Any]:
    return store.search(CALLER, query, limit=25)


def reader(engine: Engine) -> Connection:
    """A read-only (deferred) connection: it never waits for a writer's lock."""
    return engine.connect().execution_options(**{READ_ONLY: True})


def row_counts(engine: Engine, session_id: str) -> dict[str, int]:
    with reader(engine) as conn:
        return {
            table: conn.execute(
                text(f"SELECT count(*) FROM {table} WHERE session_id = :sid"), {"sid": session_id}
            ).scalar_one()
            for table in SESSION_TABLES
        }


def fts_count(engine: Engine, word: str) -> int:
    with reader(engine) as conn:
        return count_matches(conn, word)


def fts_integrity(engine: Engine) -> None:
    full_text_integrity(engine)


def index_rows_of(engine: Engine, session_id: str) -> list[tuple[int, str, str, str]]:
    with reader(engine) as conn:
        return [
            (r[0], r[1], r[2], r[3])
            for r in conn.execute(
                text(
                    "SELECT seq, event_id, role, body FROM message_index WHERE session_id = :sid "
                    "ORDER BY seq"
                ),
                {"sid": session_id},
            )
        ]


def events_of(engine: Engine, session_id: str) -> list[tuple[int, str | None]]:
    with reader(engine) as conn:
        return [
            (r[0], r[1])
            for r in conn.execute(
                text(
                    "SELECT seq, event_id FROM transcript_events WHERE session_id = :sid "
                    "ORDER BY seq"
                ),
                {"sid": session_id},
            )
        ]


def host_engine(factory: sessionmaker[Session]) -> Engine:
    bind = factory.kw["bind"]
    assert isinstance(bind, Engine)
    return bind


# -- findable right after commit, not before ---------------------------------------------------


def test_store_append_is_findable_immediately(store: TranscriptStore) -> None:
    store.create_session("s1", KEY)
    seq = store.append("s1", msg("m1", "the deployment failed on friday"))
    assert seq == 0
    assert found(store, "deployment") == {"m1"}
    out = search_out(store, "friday")
    assert "indexing" not in out and "warning" not in out
    assert store.index_status() == {"pending": 0, "indexed": 1, "total": 1}
    seqs = store.append_many("s1", chain(["rollback worked", "great news"], start=2, parent="m1"))
    assert seqs == [1, 2]
    assert found(store, "rollback") == {"m2"}
    assert found(store, "news") == {"m3"}


def test_host_orm_add_findable_after_commit_not_before(
    store: TranscriptStore, host: sessionmaker[Session]
) -> None:
    with host.begin() as db:
        s = AgentSession(session_id="s1", session_key=KEY)
        db.add(s)
        db.add(TranscriptEvent(session=s, event=msg("m1", "kubernetes upgrade plan")))
        db.flush()
        # same transaction: the FTS row exists on the writing connection ...
        n = count_matches(db.connection(), "kubernetes")
        assert n == 1
        # ... but no other connection sees it before commit
        assert found(store, "kubernetes") == set()
        assert fts_count(store.engine, "kubernetes") == 0
    assert found(store, "kubernetes") == {"m1"}
    assert "indexing" not in search_out(store, "kubernetes")


def test_host_orm_append_to_existing_session_not_visible_before_commit(
    store: TranscriptStore, host: sessionmaker[Session]
) -> None:
    store.create_session("s1", KEY)
    store.append("s1", msg("m1", "first message"))
    with host.begin() as db:
        db.add(TranscriptEvent(session_id="s1", event=msg("m2", "zeppelin", parent="m1")))
        db.flush()
        assert found(store, "zeppelin") == set()
        assert found(store, "first") == {"m1"}
    assert found(store, "zeppelin") == {"m2"}
    assert events_of(store.engine, "s1") == [(0, "m1"), (1, "m2")]


def test_relationship_append_and_scoped_session(store: TranscriptStore, db_url: str) -> None:
    engine = make_engine(db_url)
    try:
        scoped = scoped_session(sessionmaker(engine))
        openclaw_fts.install(scoped)
        s = AgentSession(session_id="s1", session_key=KEY)
        s.events.append(TranscriptEvent(event=msg("m1", "walrus operator")))
        s.events.append(
            TranscriptEvent(event=msg("m2", "pattern matching", parent="m1", role="assistant"))
        )
        scoped.add(s)
        scoped.commit()
        assert [e.seq for e in s.events] == [0, 1]
        scoped.remove()
    finally:
        engine.dispose()
    assert found(store, "walrus") == {"m1"}
    assert found(store, "matching") == {"m2"}


def test_install_is_idempotent(store: TranscriptStore, host: sessionmaker[Session]) -> None:
    openclaw_fts.install(host)
    openclaw_fts.install(host)
    with host.begin() as db:
        s = AgentSession(session_id="s1", session_key=KEY)
        db.add(s)
        db.add(TranscriptEvent(session=s, event=msg("m1", "idempotent hooks")))
    assert index_rows_of(store.engine, "s1") == [(0, "m1", "user", "idempotent hooks")]


# -- rollback and savepoints -------------------------------------------------------------------


def test_rollback_leaves_nothing(store: TranscriptStore, host: sessionmaker[Session]) -> None:
    db = host()
    try:
        s = AgentSession(session_id="s1", session_key=KEY)
        db.add(s)
        db.add(TranscriptEvent(session=s, event=msg("m1", "ephemeral words")))
        db.flush()
        db.rollback()
    finally:
        db.close()
    assert row_counts(store.engine, "s1") == dict.fromkeys(SESSION_TABLES, 0)
    assert fts_count(store.engine, "ephemeral") == 0
    assert found(store, "ephemeral") == set()


def test_rollback_of_append_to_existing_session(
    store: TranscriptStore, host: sessionmaker[Session]
) -> None:
    store.create_session("s1", KEY)
    store.append("s1", msg("m1", "kept message"))
    with pytest.raises(RuntimeError), host.begin() as db:
        db.add(TranscriptEvent(session_id="s1", event=msg("m2", "vanishing", parent="m1")))
        db.flush()
        raise RuntimeError("host aborts")
    assert fts_count(store.engine, "vanishing") == 0
    assert events_of(store.engine, "s1") == [(0, "m1")]
    assert found(store, "kept") == {"m1"}
    # the session is still clean and the next append gets the next seq
    assert store.append("s1", msg("m3", "after abort", parent="m1")) == 1
    assert found(store, "abort") == {"m3"}
    assert store.index_status()["pending"] == 0


def test_savepoint_rollback_leaves_nothing(
    store: TranscriptStore, host: sessionmaker[Session]
) -> None:
    with host.begin() as db:
        s = AgentSession(session_id="s1", session_key=KEY)
        db.add(s)
        db.add(TranscriptEvent(session=s, event=msg("m1", "outer alpha")))
        db.flush()
        with pytest.raises(RuntimeError), db.begin_nested():
            db.add(
                TranscriptEvent(session_id="s1", event=msg("m2", "inner savepoint", parent="m1"))
            )
            db.flush()
            assert count_matches(db.connection(), "savepoint") == 1
            raise RuntimeError("roll the savepoint back")
        assert count_matches(db.connection(), "savepoint") == 0
        db.add(TranscriptEvent(session_id="s1", event=msg("m3", "outer omega", parent="m1")))
    assert events_of(store.engine, "s1") == [(0, "m1"), (1, "m3")]
    assert [r[1] for r in index_rows_of(store.engine, "s1")] == ["m1", "m3"]
    assert fts_count(store.engine, "savepoint") == 0
    assert found(store, "inner") == set()
    assert found(store, "outer") == {"m1", "m3"}
    assert store.index_status() == {"pending": 0, "indexed": 1, "total": 1}


def test_committed_savepoint_is_kept(store: TranscriptStore, host: sessionmaker[Session]) -> None:
    store.create_session("s1", KEY)
    with host.begin() as db:
        with db.begin_nested():
            db.add(TranscriptEvent(session_id="s1", event=msg("m1", "nested commit")))
        db.add(TranscriptEvent(session_id="s1", event=msg("m2", "outer after", parent="m1")))
    assert found(store, "nested") == {"m1"}
    assert found(store, "after") == {"m2"}


def test_orm_appended_objects_are_persistent_in_the_identity_map(
    store: TranscriptStore, host: sessionmaker[Session]
) -> None:
    store.create_session("s1", KEY)
    store.append("s1", msg("m1", "first words"))
    with host() as db:
        owner = db.get(AgentSession, "s1")
        assert owner is not None and owner.last_seq == 0
        added = msg("m2", "second words", parent="m1", role="assistant")
        ev = TranscriptEvent(session_id="s1", event=added)
        db.add(ev)
        db.flush()
        state = inspect(ev)
        assert state.persistent and not state.modified
        assert db.get(TranscriptEvent, ("s1", 1)) is ev
        assert (ev.seq, ev.event_id, ev.parent_id, ev.role) == (1, "m2", "m1", "assistant")
        # The owner already loaded follows the append, with nothing left to flush.
        assert owner.last_seq == 1 and owner not in db.dirty
        db.refresh(ev)
        assert ev.event == added
        db.commit()
        assert ev.seq == 1  # expired on commit, read again
    assert events_of(store.engine, "s1") == [(0, "m1"), (1, "m2")]
    assert found(store, "second") == {"m2"}


def test_rolled_back_orm_append_leaves_its_objects_transient(
    store: TranscriptStore, host: sessionmaker[Session]
) -> None:
    store.create_session("s1", KEY)
    with host() as db:
        kept = TranscriptEvent(session_id="s1", event=msg("m1", "kept words"))
        db.add(kept)
        db.flush()
        nested = db.begin_nested()
        inner = TranscriptEvent(session_id="s1", event=msg("m2", "dropped words", parent="m1"))
        db.add(inner)
        db.flush()
        assert inspect(inner).persistent
        nested.rollback()
        # As SQLAlchemy leaves an object whose INSERT was rolled back: transient, values kept.
        assert inspect(inner).transient and inner.event["id"] == "m2" and inner.seq == 1
        assert inspect(kept).persistent
        assert db.get(TranscriptEvent, ("s1", 1)) is None
        db.add(inner)  # added again: stored at the seq it kept
        db.commit()
    assert events_of(store.engine, "s1") == [(0, "m1"), (1, "m2")]
    with host() as db:
        gone = TranscriptEvent(session_id="s1", event=msg("m3", "vanished words", parent="m2"))
        db.add(gone)
        db.flush()
        db.rollback()
        assert inspect(gone).transient and gone.event["id"] == "m3"
        assert db.get(TranscriptEvent, ("s1", 2)) is None
    assert events_of(store.engine, "s1") == [(0, "m1"), (1, "m2")]
    assert found(store, "words") == {"m1", "m2"}
    assert store.index_status()["pending"] == 0
    assert store.append("s1", msg("m4", "after", parent="m2")) == 2


@contextmanager
def statements_sent(engine: Engine) -> Iterator[list[str]]:
    """Every statement ``engine``'s connections send inside the block, values replaced by ``?``
    (SQLite: as the driver runs them, raw cursors included; PostgreSQL: as SQLAlchemy sends
    them, which is every statement there), without transaction starts and ends."""
    sent: list[str] = []
    raw: list[str] = []

    def on_checkout(dbapi_connection: Any, record: Any, proxy: Any) -> None:
        if hasattr(dbapi_connection, "set_trace_callback"):
            dbapi_connection.set_trace_callback(raw.append)

    def on_execute(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        raw.append(statement)

    sqlite = engine.dialect.name == "sqlite"
    listener = ("checkout", on_checkout) if sqlite else ("before_cursor_execute", on_execute)
    sa_event.listen(engine, *listener)
    try:
        yield sent
    finally:
        sa_event.remove(engine, *listener)
    for statement in raw:
        if statement.startswith("--") or statement.split()[0] in ("BEGIN", "COMMIT"):
            continue  # FTS5's own statements, transaction boundaries
        sent.append(without_values(statement))


#: What the statements of SQLite's writer-kept vocabulary hold.
VOCABULARY_STATEMENTS = (VOCABULARY_TABLE, "PRAGMA schema_version", "pragma_database_list")


def without_values(statement: str) -> str:
    return re.sub(r"'[^']*'|\b\d+\b", "?", statement)


def test_orm_append_sends_what_store_append_sends(
    store: TranscriptStore, host: sessionmaker[Session]
) -> None:
    """One append path: an event added in a host's session is written by the statements
    ``TranscriptStore.append`` sends, and no other (but SQLite's write lock, which a deferred
    host transaction takes before its first read), transaction starts and ends aside. To a
    session its writer never created or appended to: the locked read and the write. To one
    it did (the host's engine appended before, the store appended before): on PostgreSQL the
    one guarded statement, on SQLite the same statements as the first time."""
    for sid in ("s1", "s2", "s3"):
        store.create_session(sid, KEY)
    store.append("s1", msg("a1", "warm up"))
    store.append("s3", msg("c0", "warm up"))
    with host.begin() as db:
        db.add(TranscriptEvent(session_id="s2", event=msg("b1", "warm up")))
    fresh = TranscriptStore(store.engine, background=False)
    try:
        with statements_sent(store.engine) as unknown_via_store:
            fresh.append("s3", msg("c1", "measured words", parent="c0"))
    finally:
        fresh.close()
    with statements_sent(host_engine(host)) as unknown_via_orm, host.begin() as db:
        db.add(TranscriptEvent(session_id="s3", event=msg("c2", "measured words", parent="c1")))
    with statements_sent(store.engine) as known_via_store:
        store.append("s1", msg("a2", "measured words", parent="a1"))
    with statements_sent(host_engine(host)) as known_via_orm, host.begin() as db:
        db.add(TranscriptEvent(session_id="s2", event=msg("b2", "measured words", parent="b1")))
    write_lock = without_values(TAKE_WRITE_LOCK)
    for sent in (unknown_via_store, unknown_via_orm, known_via_store, known_via_orm):
        # SQLite's writer-kept vocabulary: a writer sends the words the process does not know
        # to be there (index/sqlite/vocabulary.py), so whether it does depends on what was
        # written before, not on the path
        sent[:] = [s for s in sent if not any(v in s for v in VOCABULARY_STATEMENTS)]
    for via_store, via_orm in (
        (unknown_via_store, unknown_via_orm),
        (known_via_store, known_via_orm),
    ):
        assert via_store and [s for s in via_orm if s != write_lock] == via_store
        assert len(via_orm) <= len(via_store) + 1
    if store.engine.dialect.name == "postgresql":
        assert len(known_via_orm) == 1 < len(unknown_via_orm)
    assert found(store, "measured") == {"a2", "b2", "c1", "c2"}


# -- seq and derived columns ---------------------------------------------------------------------


def test_seq_and_derived_columns_filled_on_flush(
    store: TranscriptStore, host: sessionmaker[Session]
) -> None:
    with host.begin() as db:
        s = AgentSession(session_id="s1", session_key="agent:ops:main")
        db.add(s)
        events = [
            TranscriptEvent(session=s, event=msg("m1", "hi", ts=1_790_000_000_000)),
            TranscriptEvent(
                session=s,
                event={"type": "model_change", "id": "mc", "parentId": "m1", "modelId": "x"},
            ),
            TranscriptEvent(
                session=s, event={"type": "leaf", "id": "l1", "parentId": "mc", "targetId": "m1"}
            ),
            TranscriptEvent(
                session=s,
                event={
                    **msg("s1", "aside", parent="m1", role="assistant"),
                    "timestamp": "2026-09-01T12:00:00Z",
                    "appendMode": "side",
                },
            ),
        ]
        for e in events:
            assert e.seq is None
        db.add_all(events)
        db.flush()
        assert [e.seq for e in events] == [0, 1, 2, 3]
        cols = [
            (e.event_id, e.parent_id, e.type, e.role, e.target_id, e.side, e.timestamp_ms)
            for e in events
        ]
        assert cols == [
            ("m1", None, "message", "user", None, False, 1_790_000_000_000),
            ("mc", "m1", "model_change", None, None, False, None),
            ("l1", "mc", "leaf", None, "m1", False, None),
            ("s1", "m1", "message", "assistant", None, True, 1_788_264_000_000),
        ]
        assert s.agent_id == "ops"
        assert s.last_seq == 3
    with host() as db:
        stored = db.execute(
            select(TranscriptEvent.seq, TranscriptEvent.event_id, TranscriptEvent.role).order_by(
                TranscriptEvent.seq
            )
        ).all()
        assert [tuple(r) for r in stored] == [
            (0, "m1", "user"),
            (1, "mc", None),
            (2, "l1", None),
            (3, "s1", "assistant"),
        ]


def test_seq_follows_creation_order_not_add_order(
    store: TranscriptStore, host: sessionmaker[Session]
) -> None:
    store.create_session("s1", KEY)
    first = TranscriptEvent(session_id="s1", event=msg("a", "first created"))
    second = TranscriptEvent(session_id="s1", event=msg("b", "second created", parent="a"))
    with host.begin() as db:
        db.add(second)
        db.add(first)
        db.flush()
        assert (first.seq, second.seq) == (0, 1)
    assert found(store, "created") == {"a", "b"}
    assert store.index_status()["pending"] == 0


@pytest.mark.parametrize(
    ("key", "agent"),
    [("agent:research:main", "research"), ("global", "main"), ("agent:main:subagent:42", "main")],
)
def test_agent_id_derived_from_key(
    store: TranscriptStore, host: sessionmaker[Session], key: str, agent: str
) -> None:
    with host.begin() as db:
        db.add(AgentSession(session_id="s1", session_key=key))
    with host() as db:
        assert db.get(AgentSession, "s1").agent_id == agent  # type: ignore[union-attr]


def test_factory_built_objects_are_indexed(
    store: TranscriptStore, host: sessionmaker[Session]
) -> None:
    s = AgentSessionFactory(session_key=KEY)
    with host.begin() as db:
        db.add(s)
        db.add(TranscriptEvent(session=s, event=MessageFactory(id="f1", text="factory made")))
        db.add(
            TranscriptEvent(
                session=s,
                event=MessageFactory(
                    id="f2", parentId="f1", role="assistant", text="factory answer"
                ),
            )
        )
    assert found(store, "factory") == {"f1", "f2"}


# -- never indexed -------------------------------------------------------------------------------


def test_only_user_and_assistant_text_is_indexed(store: TranscriptStore) -> None:
    store.create_session("s1", KEY)
    events = [
        {
            "type": "message",
            "id": "sys",
            "parentId": None,
            "message": {"role": "system", "content": "systemword instructions"},
        },
        msg("u1", "userword question", parent="sys"),
        {
            "type": "message",
            "id": "a1",
            "parentId": "u1",
            "message": {
                "role": "assistant",
                "content": [
                    {
                        "type": "thinking",
                        "thinking": "thinkword pondering",
                        "thinkingSignature": "x",
                    },
                    {
                        "type": "toolCall",
                        "id": "c1",
                        "name": "bash",
                        "arguments": {"command": "toolcallword"},
                    },
                    {"type": "text", "text": "answerword visible"},
                ],
            },
        },
        {
            "type": "message",
            "id": "t1",
            "parentId": "a1",
            "message": {
                "role": "toolResult",
                "toolCallId": "c1",
                "content": [{"type": "text", "text": "toolresultword output"}],
            },
        },
        {
            "type": "message",
            "id": "i1",
            "parentId": "t1",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "image",
                        "data": "aW1hZ2V3b3Jk",
                        "mimeType": "image/png",
                        "alt": "imageword",
                    }
                ],
            },
        },
        {
            "type": "custom_message",
            "id": "cm",
            "parentId": "i1",
            "customType": "x",
            "content": "custommessageword",
            "display": True,
        },
        {"type": "compaction", "id": "cp", "parentId": "cm", "summary": "compactionword"},
        {"type": "branch_summary", "id": "bs", "parentId": "cp", "summary": "summaryword"},
        {"type": "label", "id": "lb", "parentId": "bs", "label": "labelword"},
        {"type": "session_info", "id": "si", "parentId": "lb", "name": "infoword"},
        {
            "type": "message",
            "id": "a2",
            "parentId": "si",
            "message": {
                "role": "assistant",
                "content": [{"type": "toolCall", "id": "c2", "name": "read", "arguments": {}}],
            },
        },
        msg("u2", "closingword", parent="a2"),
    ]
    store.append_many("s1", events[:4])
    for event in events[4:]:
        store.append("s1", event)
    assert found(store, "userword") == {"u1"}
    assert found(store, "answerword") == {"a1"}
    assert found(store, "closingword") == {"u2"}
    for word in (
        "systemword",
        "thinkword",
        "toolcallword",
        "toolresultword",
        "imageword",
        "aW1hZ2V3b3Jk",
        "custommessageword",
        "compactionword",
        "summaryword",
        "labelword",
        "infoword",
        "pondering",
        "output",
    ):
        assert found(store, word) == set(), word
        assert fts_count(store.engine, word) == 0, word
    assert [r[1] for r in index_rows_of(store.engine, "s1")] == ["u1", "a1", "u2"]
    assert store.index_status()["pending"] == 0


def test_incognito_session_never_indexed(
    store: TranscriptStore, host: sessionmaker[Session]
) -> None:
    store.create_session("secret", "agent:main:incognito", incognito=True)
    store.append("secret", msg("m1", "incognitoword private"))
    with host.begin() as db:
        db.add(
            TranscriptEvent(
                session_id="secret", event=msg("m2", "incognitoword again", parent="m1")
            )
        )
    store.rewind("secret", "m1")
    assert index_rows_of(store.engine, "secret") == []
    assert fts_count(store.engine, "incognitoword") == 0
    assert found(store, "incognitoword") == set()
    assert events_of(store.engine, "secret")[:2] == [(0, "m1"), (1, "m2")]


def test_turning_incognito_on_and_off(store: TranscriptStore, host: sessionmaker[Session]) -> None:
    store.create_session("s1", KEY)
    store.append_many("s1", chain(["toggleword one", "toggleword two"]))
    assert found(store, "toggleword") == {"m0", "m1"}
    with host.begin() as db:
        db.get(AgentSession, "s1").incognito = True  # type: ignore[union-attr]
    assert index_rows_of(store.engine, "s1") == []
    assert fts_count(store.engine, "toggleword") == 0
    with host.begin() as db:
        db.get(AgentSession, "s1").incognito = False  # type: ignore[union-attr]
    assert found(store, "toggleword") == {"m0", "m1"}


@pytest.mark.parametrize("kind", ["plain", "side", "leaf"])
@pytest.mark.parametrize("incognito", [True, False])
def test_incognito_flip_and_an_append_in_one_flush(
    store: TranscriptStore, host: sessionmaker[Session], kind: str, incognito: bool
) -> None:
    # What was indexed followed the old flag: the append's fast paths must not trust it.
    store.create_session("s1", KEY, incognito=not incognito)
    store.append_many("s1", chain(["flipword one", "flipword two"]))
    event = {
        "plain": msg("m2", "flipword three", parent="m1"),
        "side": {**msg("x1", "flipword side", parent="m0"), "appendMode": "side"},
        "leaf": {"type": "leaf", "id": "l1", "parentId": "m1", "targetId": "m1"},
    }[kind]
    with host.begin() as db:
        db.get(AgentSession, "s1").incognito = incognito  # type: ignore[union-attr]
        db.add(TranscriptEvent(session_id="s1", event=event))
    assert store.index_status()["pending"] == 0
    expected = set() if incognito else {"m0", "m1"} | ({"m2"} if kind == "plain" else set())
    assert {r[1] for r in index_rows_of(store.engine, "s1")} == expected
    assert fts_count(store.engine, "flipword") == len(expected)


# -- deletes -------------------------------------------------------------------------------------


def _populate(store: TranscriptStore) -> None:
    store.create_session("doomed", KEY)
    store.append_many("doomed", chain(["doomword alpha", "doomword beta", "doomword gamma"]))
    store.rewind("doomed", "m1")
    store.append("doomed", msg("m9", "doomword branch", parent="m1"))
    store.create_session("keeper", "agent:main:other")
    store.append_many("keeper", chain(["keepword alpha", "keepword beta"], prefix="k"))
    assert found(store, "doomword") == {"m0", "m1", "m9"}
    counts = row_counts(store.engine, "doomed")
    assert all(counts[t] > 0 for t in SESSION_TABLES), counts


def _assert_deleted(store: TranscriptStore) -> None:
    assert row_counts(store.engine, "doomed") == dict.fromkeys(SESSION_TABLES, 0)
    assert fts_count(store.engine, "doomword") == 0
    assert found(store, "doomword") == set()
    assert found(store, "keepword") == {"k0", "k1"}
    assert fts_count(store.engine, "keepword") == 2
    fts_integrity(store.engine)
    assert store.index_status() == {"pending": 0, "indexed": 1, "total": 1}


def test_delete_via_orm_object(store: TranscriptStore, host: sessionmaker[Session]) -> None:
    _populate(store)
    with host.begin() as db:
        obj = db.get(AgentSession, "doomed")
        assert obj is not None
        db.delete(obj)
    _assert_deleted(store)


def test_delete_via_orm_object_with_loaded_events(
    store: TranscriptStore, host: sessionmaker[Session]
) -> None:
    _populate(store)
    with host.begin() as db:
        obj = db.get(AgentSession, "doomed")
        assert obj is not None
        assert len(obj.events) == 5 and len(obj.branches) >= 1
        db.delete(obj)
    _assert_deleted(store)


def test_delete_via_orm_bulk_delete(store: TranscriptStore, host: sessionmaker[Session]) -> None:
    _populate(store)
    with host.begin() as db:
        db.execute(delete(AgentSession).where(AgentSession.session_id == "doomed"))
    _assert_deleted(store)


def test_delete_via_raw_sql(store: TranscriptStore, engine: Engine) -> None:
    _populate(store)
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM openclaw_sessions WHERE session_id = :s"), {"s": "doomed"})
    _assert_deleted(store)


def test_delete_via_raw_sql_on_host_engine_configured_by_install(
    store: TranscriptStore, db_url: str
) -> None:
    _populate(store)
    plain = create_engine(db_url)  # the host's own engine, not made by the plugin
    try:
        openclaw_fts.install(sessionmaker(plain))
        with plain.begin() as conn:
            conn.execute(text("DELETE FROM openclaw_sessions WHERE session_key = :k"), {"k": KEY})
    finally:
        plain.dispose()
    _assert_deleted(store)


def test_delete_via_store(store: TranscriptStore) -> None:
    _populate(store)
    assert store.delete_session("doomed") is True
    assert store.delete_session("doomed") is False
    _assert_deleted(store)


def test_delete_rolled_back_keeps_everything(
    store: TranscriptStore, host: sessionmaker[Session]
) -> None:
    _populate(store)
    before = row_counts(store.engine, "doomed")
    with pytest.raises(RuntimeError), host.begin() as db:
        db.execute(delete(AgentSession).where(AgentSession.session_id == "doomed"))
        raise RuntimeError("changed my mind")
    assert row_counts(store.engine, "doomed") == before
    assert found(store, "doomword") == {"m0", "m1", "m9"}


# -- bad events ----------------------------------------------------------------------------------


class _Unserialisable:
    pass


def _circular() -> dict[str, Any]:
    event: dict[str, Any] = {"type": "custom", "id": "loop"}
    event["self"] = event
    return event


@pytest.fixture
def indexed(store: TranscriptStore) -> TranscriptStore:
    store.create_session("s1", KEY)
    store.append_many("s1", chain(["intactword one", "intactword two"]))
    return store


def _assert_intact(store: TranscriptStore) -> None:
    assert events_of(store.engine, "s1") == [(0, "m0"), (1, "m1")]
    assert found(store, "intactword") == {"m0", "m1"}
    assert store.index_status() == {"pending": 0, "indexed": 1, "total": 1}
    fts_integrity(store.engine)
    # and the session still takes appends, with the next seq
    assert store.append("s1", msg("m2", "recovered fine", parent="m1")) == 2
    assert found(store, "recovered") == {"m2"}


@pytest.mark.parametrize(
    "bad",
    [
        "a string",
        ["type", "message"],
        42,
        None,
        {"type": "message", "id": "x", "message": {"role": "user", "content": b"bytes"}},
        {"type": "message", "id": "x", "message": {"role": "user", "content": _Unserialisable()}},
        {"type": "custom", "id": "x", "data": {1, 2, 3}},
        _circular(),
    ],
    ids=["str", "list", "int", "none", "bytes", "object", "set", "circular"],
)
def test_bad_event_rejected_index_intact(indexed: TranscriptStore, bad: Any) -> None:
    with pytest.raises(InvalidEventError):
        indexed.append("s1", bad)
    with pytest.raises(InvalidEventError):
        indexed.append_many("s1", [msg("ok", "validword fine", parent="m1"), bad])
    assert found(indexed, "validword") == set()
    _assert_intact(indexed)


def test_bad_event_via_host_orm(indexed: TranscriptStore, host: sessionmaker[Session]) -> None:
    with pytest.raises(InvalidEventError), host.begin() as db:
        db.add(TranscriptEvent(session_id="s1", event=msg("ok", "validword", parent="m1")))
        db.add(TranscriptEvent(session_id="s1", event=["not", "an", "object"]))  # type: ignore[arg-type]
    _assert_intact(indexed)


def test_duplicate_event_id_rejected(indexed: TranscriptStore) -> None:
    with pytest.raises(DuplicateEventError):
        indexed.append("s1", msg("m0", "dupword clash", parent="m1"))
    with pytest.raises(DuplicateEventError):
        indexed.append_many(
            "s1", [msg("n1", "dupword a", parent="m1"), msg("n1", "dupword b", parent="n1")]
        )
    # a leaf control's id counts too
    with pytest.raises(DuplicateEventError):
        indexed.append("s1", {"type": "leaf", "id": "m1", "parentId": "m1", "targetId": "m0"})
    assert found(indexed, "dupword") == set()
    _assert_intact(indexed)


def test_duplicate_event_id_via_host_orm(
    indexed: TranscriptStore, host: sessionmaker[Session]
) -> None:
    with pytest.raises(DuplicateEventError), host.begin() as db:
        db.add(TranscriptEvent(session_id="s1", event=msg("m1", "dupword", parent="m1")))
    _assert_intact(indexed)


def test_duplicate_seq_rejected(indexed: TranscriptStore, host: sessionmaker[Session]) -> None:
    for seq in (0, 1):
        with pytest.raises(DuplicateEventError), host.begin() as db:
            db.add(
                TranscriptEvent(
                    session_id="s1", seq=seq, event=msg(f"x{seq}", "seqword", parent="m1")
                )
            )
    with pytest.raises(DuplicateEventError), host.begin() as db:
        db.add(TranscriptEvent(session_id="s1", seq=5, event=msg("y1", "seqword", parent="m1")))
        db.add(TranscriptEvent(session_id="s1", seq=5, event=msg("y2", "seqword", parent="y1")))
    assert found(indexed, "seqword") == set()
    _assert_intact(indexed)


def test_explicit_seq_gap_is_accepted_and_exact(
    indexed: TranscriptStore, host: sessionmaker[Session]
) -> None:
    with host.begin() as db:
        db.add(TranscriptEvent(session_id="s1", seq=10, event=msg("g", "gapword", parent="m1")))
    assert events_of(indexed.engine, "s1")[-1] == (10, "g")
    assert found(indexed, "gapword") == {"g"}
    assert indexed.index_status()["pending"] == 0
    assert indexed.append("s1", msg("h", "aftergap", parent="g")) == 11
    assert found(indexed, "aftergap") == {"h"}


def test_unknown_session_rejected(indexed: TranscriptStore) -> None:
    with pytest.raises(UnknownSessionError):
        indexed.append("nope", msg("z", "orphanword"))
    assert found(indexed, "orphanword") == set()
    _assert_intact(indexed)


def test_every_plugin_error_is_a_value_error() -> None:
    for exc in (InvalidEventError, DuplicateEventError, UnknownSessionError):
        assert issubclass(exc, OpenClawFtsError) and issubclass(exc, ValueError)


def test_unicode_event_round_trips_and_is_indexed(store: TranscriptStore) -> None:
    store.create_session("s1", KEY)
    event = {
        "type": "message",
        "id": "m1",
        "parentId": None,
        "timestamp": "2026-09-01T12:00:00.000Z",
        "unknownField": {"nested": [1, 2.5, None, True], "ключ": "значение"},
        "message": {"role": "user", "content": "Crème brûlée — 明天下午三点开项目评审会议 😀"},
    }
    store.append("s1", event)
    with store.engine.connect() as conn:
        raw = conn.execute(text("SELECT event FROM transcript_events")).scalar_one()
    assert json.loads(raw) == event
    assert found(store, "creme") == {"m1"}
    assert found(store, "brulee") == {"m1"}
    assert found(store, "评审") == {"m1"}


def test_concurrent_appends_from_two_threads(store: TranscriptStore) -> None:
    store.create_session("a", KEY)
    store.create_session("b", "agent:main:b")
    errors: list[BaseException] = []

    def writer(sid: str, prefix: str) -> None:
        try:
            parent = None
            for i in range(40):
                eid = f"{prefix}{i}"
                store.append(sid, msg(eid, f"threadword {prefix} number{i}", parent=parent))
                parent = eid
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(sid, sid)) for sid in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(index_rows_of(store.engine, "a")) == 40
    assert len(index_rows_of(store.engine, "b")) == 40
    assert found(store, "number39") == {"a39", "b39"}
    assert store.index_status() == {"pending": 0, "indexed": 2, "total": 2}


def test_store_and_orm_appends_to_one_session_are_serialised(
    store: TranscriptStore, host: sessionmaker[Session]
) -> None:
    """Two threads append to the same session at once, one through ``TranscriptStore.append``
    and one through a host's ORM session: the session's append lock makes each read the other's
    ``last_seq``, so every event gets its own seq (no taken seq, no error)."""
    store.create_session("s1", KEY)
    rounds = 30
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def via_store() -> None:
        try:
            start.wait()
            for i in range(rounds):
                store.append("s1", msg(f"st{i}", f"lockword store{i}"))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def via_orm() -> None:
        try:
            start.wait()
            for i in range(rounds):
                with host.begin() as db:
                    db.add(TranscriptEvent(session_id="s1", event=msg(f"orm{i}", f"orm{i}")))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=via_store), threading.Thread(target=via_orm)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    stored = events_of(store.engine, "s1")
    assert [seq for seq, _ in stored] == list(range(2 * rounds))
    assert {eid for _, eid in stored} == {f"st{i}" for i in range(rounds)} | {
        f"orm{i}" for i in range(rounds)
    }
    store.reconcile()
    assert store.index_status()["pending"] == 0
    assert check(store.engine).ok


# -- host sessions beyond the happy path ---------------------------------------------------------


def test_install_on_a_session_subclass(store: TranscriptStore, db_url: str) -> None:
    class HostSession(Session):
        pass

    openclaw_fts.install(HostSession)
    engine = make_engine(db_url)
    try:
        factory = sessionmaker(engine, class_=HostSession)
        with factory.begin() as db:
            s = AgentSession(session_id="s1", session_key=KEY)
            db.add(s)
            db.add(TranscriptEvent(session=s, event=msg("m1", "subclassword")))
    finally:
        engine.dispose()
        openclaw_fts.uninstall(HostSession)
    assert found(store, "subclassword") == {"m1"}


def test_stale_session_object_in_a_long_lived_host_session(
    store: TranscriptStore, db_url: str
) -> None:
    """A host keeps its AgentSession object across transactions (expire_on_commit=False, as many
    web apps do) while another writer appends: the next ORM append must still get the next seq
    and be indexed, not collide with the other writer's event."""
    engine = make_engine(db_url)
    try:
        factory = openclaw_fts.install(sessionmaker(engine, expire_on_commit=False))
        db = factory()
        s = AgentSession(session_id="s1", session_key=KEY)
        db.add(s)
        db.add(TranscriptEvent(session=s, event=msg("m1", "first from host")))
        db.commit()
        store.append("s1", msg("m2", "meanwhile elsewhere", parent="m1"))
        db.add(TranscriptEvent(session=s, event=msg("m3", "second from host", parent="m2")))
        db.commit()
        db.close()
    finally:
        engine.dispose()
    assert events_of(store.engine, "s1") == [(0, "m1"), (1, "m2"), (2, "m3")]
    assert found(store, "host") == {"m1", "m3"}
    assert found(store, "elsewhere") == {"m2"}
    assert store.index_status()["pending"] == 0


def test_deleting_one_event_through_the_orm_unindexes_it(
    store: TranscriptStore, host: sessionmaker[Session]
) -> None:
    """A host removes one message (e.g. a user asked to forget it): its text must not stay
    searchable — the session is repaired or left pending, never clean with the old row."""
    store.create_session("s1", KEY)
    store.append_many("s1", chain(["keepword one", "forgetword two", "keepword three"]))
    with host.begin() as db:
        victim = db.execute(
            select(TranscriptEvent).where(
                TranscriptEvent.session_id == "s1", TranscriptEvent.event_id == "m1"
            )
        ).scalar_one()
        db.delete(victim)
    assert found(store, "forgetword") == set()
    store.reconcile()
    assert found(store, "forgetword") == set()
    assert fts_count(store.engine, "forgetword") == 0


def test_deleting_one_event_with_raw_sql_unindexes_it(
    store: TranscriptStore, engine: Engine
) -> None:
    store.create_session("s1", KEY)
    store.append_many("s1", chain(["keepword one", "forgetword two"]))
    with engine.begin() as conn:
        conn.execute(
            text("DELETE FROM transcript_events WHERE session_id = :s AND event_id = :e"),
            {"s": "s1", "e": "m1"},
        )
    assert found(store, "forgetword") == set()
    store.reconcile()
    assert fts_count(store.engine, "forgetword") == 0
    assert found(store, "keepword") == {"m0"}

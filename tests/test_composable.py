"""``search_select``: hits as a Select a host joins to its own tables, filters and pages through,
with the caller's visibility and the pending filter already inside."""

from __future__ import annotations

import pytest
from factories import chain, msg
from sqlalchemy import Column, ForeignKey, Integer, MetaData, String, Table, insert, select

from openclaw_fts import AgentSession, Caller, TranscriptStore
from openclaw_fts.composable import Cursor, search_select

pytestmark = pytest.mark.both_engines

#: Hits per page in the pagination test.
PAGE = 3

host_metadata = MetaData()
chats = Table(
    "chats",
    host_metadata,
    Column("id", Integer, primary_key=True),
    Column("project_id", Integer, nullable=False),
    Column("session_id", String(512), ForeignKey(AgentSession.session_id), nullable=False),
)


def seed(store: TranscriptStore) -> None:
    for n, key in enumerate(["agent:main:a", "agent:main:b", "agent:other:c"]):
        sid = f"s{n}"
        store.create_session(sid, key)
        store.append_many(sid, chain([f"deploy number {i} of {sid}" for i in range(4)]))
    with store.engine.begin() as conn:
        host_metadata.create_all(conn)
        conn.execute(
            insert(chats),
            [
                {"id": 1, "project_id": 7, "session_id": "s0"},
                {"id": 2, "project_id": 8, "session_id": "s1"},
                {"id": 3, "project_id": 7, "session_id": "s2"},
            ],
        )


#: The same raw edit of an event's JSON, behind the plugin's back, in each engine's SQL.
EDIT_SQL = {
    "sqlite": "UPDATE transcript_events SET event = json_set(event, '$.message.content', "
    "'deploy changed') WHERE session_id = 's0' AND seq = 0",
    "postgresql": "UPDATE transcript_events SET event = jsonb_set(event::jsonb, "
    "'{message,content}', '\"deploy changed\"')::text WHERE session_id = 's0' AND seq = 0",
}


def D(store: TranscriptStore) -> str:
    """The dialect of the store's database."""
    return store.engine.dialect.name


def test_hits_join_the_hosts_table_and_filter_on_it(store: TranscriptStore) -> None:
    seed(store)
    hits = search_select(
        Caller("agent:main:a", visibility="all"), "deploy", dialect=D(store)
    ).subquery()
    stmt = (
        select(hits.c.session_id, hits.c.message_id, chats.c.project_id)
        .join(chats, chats.c.session_id == hits.c.session_id)
        .where(chats.c.project_id == 7)
        .order_by(hits.c.rank, hits.c.hit_id)
    )
    with store.engine.connect() as conn:
        rows = conn.execute(stmt).all()
    # s2 is another agent's: `all` without agent-to-agent does not see it.
    assert {r.session_id for r in rows} == {"s0"}
    assert sorted(r.message_id for r in rows) == ["m0", "m1", "m2", "m3"]


def test_visibility_and_pending_sessions_are_inside_the_statement(store: TranscriptStore) -> None:
    seed(store)
    store.rewind("s1", "m0")  # repaired inline: still visible
    with store.engine.begin() as conn:  # written behind the hooks: pending
        conn.exec_driver_sql(EDIT_SQL[conn.dialect.name])
    with store.engine.connect() as conn:
        own = conn.execute(
            search_select(Caller("agent:main:b", visibility="self"), "deploy", dialect=D(store))
        )
        assert {r.session_id for r in own} == {"s1"}
        every = conn.execute(
            search_select(Caller("agent:main:b", visibility="all"), "deploy", dialect=D(store))
        )
        assert {r.session_id for r in every} == {"s1"}  # s0 pending, s2 another agent's
        none = conn.execute(search_select(Caller("agent:main:b"), "   ", dialect=D(store))).all()
        assert none == []


def test_keyset_pages_cover_every_hit_once_in_rank_order(store: TranscriptStore) -> None:
    seed(store)
    store.append("s0", msg("x1", "deploy deploy deploy", parent="m3"))
    caller = Caller("agent:main:a", visibility="agent")
    with store.engine.connect() as conn:
        everything = conn.execute(search_select(caller, "deploy", dialect=D(store))).all()
        pages, after = [], None
        while True:
            page = conn.execute(
                search_select(caller, "deploy", after=after, dialect=D(store)).limit(PAGE)
            ).all()
            if not page:
                break
            pages.append(page)
            after = Cursor(page[-1].rank, page[-1].hit_id)
    flat = [r.hit_id for page in pages for r in page]
    assert flat == [r.hit_id for r in everything]
    assert len(flat) == len(set(flat)) == 9  # s0 and s1, 4 messages each, and x1
    assert everything[0].message_id == "x1"  # the best match ranks first
    assert all(len(p) <= PAGE for p in pages)

"""What a PostgreSQL database's schema has, remembered per pooled connection
(``index.memo.SchemaFeature``): the pending marks (revision 0014), the impact-list rows' time
(0013) and the layout partitioned by agent. Read in ONE statement, once per connection, and
read again after an upgrade, a downgrade or a conversion of the layout made in this process:
a store whose connections remembered the schema before such a change searches, writes and
optimises after it exactly as a store opened after it, on either layout, without its pool
renewed."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import PARTITIONED
from factories import T0, chain
from sqlalchemy import Connection, Engine, event, text
from sqlalchemy.exc import ProgrammingError
from test_pending_marks import drop_0014_by_hand

from openclaw_fts import AgentToAgent, Caller, TranscriptStore, migrate
from openclaw_fts.index.postgresql import impact, partition, pending_marks
from openclaw_fts.rows import INDEX_VERSION

ALL = Caller("agent:main:me", visibility="all", agent_to_agent=AgentToAgent(True))
AGENT = Caller("agent:main:me", visibility="agent")
SELF = Caller("agent:main:me", visibility="self")
#: A threshold low enough for the tests' few messages (the shipped one is 2000).
MIN_DOCS = 8
#: Pooled connections held at once, each remembering the schema before a change.
HELD = 3
#: (session, key, agent) of the corpus; the last one is made pending.
SESSIONS = (
    ("s1", "agent:main:me", "main"),
    ("s2", "agent:ops:b", "ops"),
    ("s3", "agent:main:c", "main"),
)


@pytest.fixture(params=["postgresql", PARTITIONED])
def db_engine(request: pytest.FixtureRequest) -> str:
    """Both PostgreSQL layouts."""
    return str(request.param)


def _populate(store: TranscriptStore) -> None:
    """Three sessions of two agents whose "lantern" has an impact list; ``s3`` pending."""
    for sid, key, agent in SESSIONS:
        store.create_session(sid, key, agent_id=agent)
        texts = [f"lantern {'lantern ' * (i % 3)}w{i % 7}" for i in range(30)]
        store.append_many(sid, chain(texts, prefix=sid))
    with store.engine.begin() as conn:
        impact.promote(conn, MIN_DOCS)
        tracked = {r[0] for r in conn.execute(text(impact.TRACKED_WORDS_SQL))}
        assert "lantern" in tracked
        conn.execute(
            text("UPDATE openclaw_index_state SET index_version = :v WHERE session_id = 's3'"),
            {"v": INDEX_VERSION - 1},
        )


def _answers(store: TranscriptStore) -> list[Any]:
    """Searches that ask every feature: the pending probe (marks), a walk of the list with a
    window (the rows' time), the partitions of a caller's agents (the layout)."""
    found = []
    for caller in (ALL, AGENT, SELF):
        for extra in ({}, {"since": T0 + 10_000}, {"order": "recent"}):
            found.append(store.search(caller, "lantern", limit=5, **extra))
    assert found[0].get("indexing") is True
    return found


def _has(conn: Connection) -> tuple[bool, bool, bool]:
    """The features as ``conn``'s pooled connection remembers them."""
    return pending_marks.has_marks(conn), impact.timed(conn), partition.is_partitioned(conn)


def _catalogue(engine: Engine) -> tuple[bool, bool, bool]:
    """The features as the catalogue says now (no memo)."""
    with engine.connect() as conn:
        return (
            pending_marks.marked(conn),
            impact.has_row_time(conn),
            partition.has_layout(conn),
        )


def _remembered(store: TranscriptStore) -> tuple[set[int], list[tuple[bool, bool, bool]]]:
    """:data:`HELD` connections of the store's pool checked out at once (its idle ones
    first): which DBAPI connections, and what each remembers (reading it when it does not)."""
    conns = [store.engine.connect() for _ in range(HELD)]
    try:
        ids = {id(c.connection.dbapi_connection) for c in conns}
        return ids, [_has(c) for c in conns]
    finally:
        for c in conns:
            c.close()


def _change(engine: Engine, step: str) -> None:
    if step == "downgrade":
        migrate.downgrade(engine, migrate.BOUNDED_REVISION)  # below 0013 and 0014
    elif step == "upgrade":
        migrate.upgrade(engine)
    elif step == "partition":
        migrate.partition_by_agent(engine, 4)
    else:
        migrate.unpartition_by_agent(engine)


def test_a_store_that_remembered_the_schema_answers_as_a_fresh_one_after_each_change(
    store: TranscriptStore, engine: Engine, db_url: str, db_engine: str
) -> None:
    """Each change removes or adds a feature every held connection remembered (another
    engine of this process makes it, as the CLI or a host's ``migrate`` call would): the
    same connections then remember the catalogue's answer, and the store's searches (the
    pending probe, a windowed walk, the partitions), its appends and ``optimize`` (which
    analyses the layout's table) are a fresh store's."""
    _populate(store)
    steps = ["downgrade", "upgrade", "partition", "unpartition"]
    if db_engine == PARTITIONED:  # a partitioned database is not downgraded
        steps = ["unpartition", "downgrade", "upgrade", "partition"]
    for n, step in enumerate(steps):
        _answers(store)
        store.optimize()
        held, before = _remembered(store)
        assert before == [_catalogue(engine)] * HELD
        _change(engine, step)
        now = _catalogue(engine)
        assert now != before[0], step
        ids, after = _remembered(store)
        assert ids == held and after == [now] * HELD, step
        event = chain([f"lantern after {step}"], start=30 + n, parent=f"s1{29 + n}", prefix="s1")
        store.append("s1", event[0])
        store.optimize()
        with TranscriptStore(db_url, upgrade=False, background=False) as fresh:
            assert _answers(store) == _answers(fresh), step


def test_a_change_in_an_open_transaction_is_read_by_the_others_from_its_commit_on(
    store: TranscriptStore, engine: Engine, db_engine: str
) -> None:
    """A downgrade in the caller's transaction: its own connection reads the schema without
    the marks at once; another pooled connection reads it again but still sees them (not
    committed), and reads it once more after the commit."""
    if db_engine == PARTITIONED:
        pytest.skip("a partitioned database is not downgraded")
    _populate(store)
    with store.engine.connect() as other:
        assert _has(other) == (True, True, False)
    with engine.begin() as conn:
        migrate.downgrade(conn, migrate.BOUNDED_REVISION)
        assert _has(conn) == (False, False, False)
        with store.engine.connect() as other:
            assert _has(other) == (True, True, False)
    with store.engine.connect() as other:
        assert _has(other) == (False, False, False)


def test_a_new_connection_reads_the_schema_in_one_statement(
    store: TranscriptStore, db_engine: str
) -> None:
    """Every kind of search on a new connection, the pending probe, a walk with a window and
    (partitioned) a caller's partitions included: one statement reads the three features,
    and none reads any of them alone."""
    _populate(store)
    statements: list[str] = []

    def seen(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement)

    event.listen(store.engine, "before_cursor_execute", seen)
    store.engine.dispose()  # a new connection from here on
    _answers(store)
    _answers(store)
    probes = [  # not the partitions' statement, which reads the layout with its agents
        s
        for s in statements
        if s.startswith(("SELECT to_regclass", "SELECT EXISTS (SELECT 1 FROM pg_attribute"))
        and "ARRAY(" not in s
    ]
    assert len(probes) == 1, probes
    for feature in (pending_marks.MARKED_SQL, impact.TIMED_SQL, partition.LAYOUT_SQL):
        assert feature in probes[0]
    assert store.engine.pool.checkedin() == 1  # one connection served every search


def test_a_change_another_process_made_fails_one_search_then_is_read_again(
    store: TranscriptStore, engine: Engine, db_url: str
) -> None:
    """Revision 0014's downgrade run behind this process's back (its own statements, as
    another process would run them: nothing here is told): the first search of a
    connection that remembers the marks fails on their missing table, and from then on every
    connection reads the schema again and answers as a fresh store."""
    _populate(store)
    _answers(store)
    held, _ = _remembered(store)
    with engine.begin() as conn:
        old = drop_0014_by_hand(conn)
    with pytest.raises(ProgrammingError, match=old.TABLE):
        store.search(ALL, "lantern")
    ids, after = _remembered(store)
    assert ids == held and all(not marks for marks, _, _ in after)
    with TranscriptStore(db_url, upgrade=False, background=False) as fresh:
        assert _answers(store) == _answers(fresh)

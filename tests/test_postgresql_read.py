"""PostgresSearch (openclaw_fts/index/postgresql/read.py) against a real server: ranking,
visibility and pending inside the ranked statement, filters, order, hostile queries, CJK,
diacritics, phrase and prefix, hit texts; and the same small corpus ranked by SQLite (through
TranscriptStore) and by PostgreSQL, compared by top-k overlap. Rows and index states are
planted with plain INSERTs (tests/pgindex.py) to get exact pending shapes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from factories import msg
from pgindex import State, add_message, add_session, migrated_database, set_state
from pgserver import PgServer
from sqlalchemy import Engine, create_engine, event, text
from test_postgresql_query import HOSTILE

from openclaw_fts import TranscriptStore
from openclaw_fts.index.base import reader
from openclaw_fts.index.postgresql.read import PostgresSearch
from openclaw_fts.rows import Hit
from openclaw_fts.search import build_request
from openclaw_fts.visibility import AgentToAgent, Caller

ME = "agent:main:main"
TREE = Caller(ME, visibility="tree")
ALL = Caller(ME, visibility="all")
ALL_AGENTS = Caller(ME, visibility="all", agent_to_agent=AgentToAgent(enabled=True))
SIB_SELF = Caller("agent:main:sib", visibility="self")
LONG = (
    "deploy to production after the long review of everything that was still waiting in the "
    "queue for the release"
)
HIDDEN_ROWS = 30


@pytest.fixture(scope="module")
def db(pg_server: PgServer) -> Iterator[Engine]:
    with migrated_database(pg_server) as engine:
        with engine.begin() as conn:
            sessions: list[tuple[str, str, dict[str, Any], State]] = [
                ("main", ME, {}, "clean"),
                ("child", "agent:main:sub", {"spawned_by": ME}, "clean"),
                ("sib", "agent:main:sib", {}, "clean"),
                ("oth", "agent:other:main", {"agent_id": "other"}, "clean"),
                ("inc", "agent:main:inc", {"incognito": True}, "clean"),
                ("ikey", "agent:main:dashboard:incognito-x", {}, "clean"),
                ("pend", "agent:main:pend", {}, "missing"),
                ("behind", "agent:main:behind", {"spawned_by": ME}, "behind"),
                ("rebuild", "agent:main:rebuild", {}, "rebuild"),
                ("oldv", "agent:main:oldv", {}, "old_version"),
            ]
            for sid, key, extra, _ in sessions:
                add_session(conn, sid, key, **extra)
            add_message(conn, "main", "m1", "deploy the staging server", ts=1000)
            add_message(conn, "main", "m2", "deploy deploy deploy", role="assistant", ts=2000)
            add_message(conn, "main", "m3", "我们的数据库很好", ts=3000)
            add_message(conn, "main", "m4", "Café au lait", role="assistant", ts=4000)
            add_message(conn, "child", "c1", LONG, ts=1500)
            add_message(conn, "sib", "b1", "deploy sib", ts=500)
            for n in range(HIDDEN_ROWS):
                add_message(conn, "oth", f"o{n}", "zebra deploy", ts=10_000 + n)
            for sid in ("inc", "ikey", "pend", "behind", "rebuild", "oldv"):
                add_message(conn, sid, f"{sid}1", f"zebra deploy {sid}", ts=9000)
            for sid, _, _, state in sessions:
                set_state(conn, sid, state)
        yield engine


def hits(
    engine: Engine, caller: Caller, query: str, *, exact: bool = False, **kwargs: Any
) -> list[Hit]:
    req = build_request(query, **kwargs)
    with engine.connect() as conn:
        return PostgresSearch().ranked_hits(conn, caller, req, exact=exact)


def ids(found: list[Hit]) -> list[str]:
    return [h[3] for h in found]


def add_clean(engine: Engine, sessions: dict[str, str], text_: str = "hello") -> None:
    """Sessions (id -> key) of one message each (event ``e<n>``), exactly indexed."""
    with engine.begin() as conn:
        for n, (sid, key) in enumerate(sessions.items(), start=1):
            add_session(conn, sid, key)
            add_message(conn, sid, f"e{n}", text_)
            set_state(conn, sid, "clean")


def test_registered_for_postgresql(db: Engine) -> None:
    with db.connect() as conn:
        assert isinstance(reader(conn), PostgresSearch)


def test_ranking_and_score(db: Engine) -> None:
    found = hits(db, TREE, "deploy")
    assert ids(found) == ["m2", "m1", "c1"]  # more occurrences, then shorter, rank first
    ranks = [h[7] for h in found]
    assert all(r is not None and r < 0 for r in ranks) and ranks == sorted(ranks)
    assert found[0][6] == ME and found[2][6] == "agent:main:sub"


def test_hidden_sessions_never_consume_the_limit(db: Engine) -> None:
    # 30 short "zebra deploy" rows of another agent would outrank every visible row.
    assert ids(hits(db, TREE, "deploy", limit=2)) == ["m2", "m1", "c1"]  # limit + 1 rows
    assert ids(hits(db, TREE, "zebra")) == []
    assert ids(hits(db, ALL, "zebra")) == []  # other agent, incognito flag and key, pending
    assert len(hits(db, ALL_AGENTS, "zebra", limit=5)) == 6
    everything = ids(hits(db, ALL_AGENTS, "zebra", limit=25))
    assert len(everything) == 25 + 1 and all(e.startswith("o") for e in everything)


def test_incognito_never_visible(db: Engine) -> None:
    for exact in (False, True):
        found = ids(hits(db, ALL_AGENTS, "incognito OR ikey OR inc", exact=exact))
        assert found == []


def test_pending_sessions_are_filtered_unless_exact(db: Engine) -> None:
    assert ids(hits(db, TREE, "behind")) == []
    assert ids(hits(db, TREE, "behind", exact=True)) == ["behind1"]  # caller's promise
    pending = {"pend1", "rebuild1", "oldv1"}
    assert not pending & set(ids(hits(db, ALL, "zebra OR pend OR rebuild OR oldv")))
    assert set(ids(hits(db, ALL, "pend OR rebuild OR oldv", exact=True))) == pending


def test_pending_probes(db: Engine) -> None:
    r = PostgresSearch()
    with db.connect() as conn:
        assert r.any_pending(conn)
        assert r.pending_visible(conn, TREE, None)  # "behind" is in the caller's tree
        assert not r.pending_visible(conn, TREE, ME)
        assert r.pending_visible(conn, ALL, None)
        assert not r.pending_visible(conn, SIB_SELF, None)


def test_any_pending_false_when_every_session_is_clean(pg_server: PgServer) -> None:
    with migrated_database(pg_server) as engine:
        add_clean(engine, {"a": ME})
        with engine.connect() as conn:
            assert not PostgresSearch().any_pending(conn)
            assert not PostgresSearch().pending_visible(conn, TREE, None)
        with engine.begin() as conn:
            add_message(conn, "a", "e2", "hello again")  # last_seq moves past the watermark
        with engine.connect() as conn:
            assert PostgresSearch().any_pending(conn)


def test_filters(db: Engine) -> None:
    assert ids(hits(db, TREE, "deploy", role="assistant")) == ["m2"]
    assert ids(hits(db, TREE, "deploy", role="user")) == ["m1", "c1"]
    assert ids(hits(db, TREE, "deploy", since=1200)) == ["m2", "c1"]
    assert ids(hits(db, TREE, "deploy", until=1500)) == ["m1", "c1"]
    assert ids(hits(db, TREE, "deploy", session_key="agent:main:sub")) == ["c1"]
    assert ids(hits(db, TREE, "deploy", session_key="agent:main:sib")) == []  # not visible


def test_order_recent(db: Engine) -> None:
    assert ids(hits(db, TREE, "deploy", order="recent")) == ["m2", "c1", "m1"]


def test_cjk_diacritics_phrase_prefix(db: Engine) -> None:
    assert ids(hits(db, TREE, "数据")) == ["m3"]
    assert ids(hits(db, TREE, "据")) == ["m3"]
    assert ids(hits(db, TREE, "据数")) == []
    assert ids(hits(db, TREE, "cafe")) == ["m4"]
    assert ids(hits(db, TREE, "CAFÉ")) == ["m4"]
    assert ids(hits(db, TREE, '"au lait"')) == ["m4"]
    assert ids(hits(db, TREE, '"lait au"')) == []
    assert ids(hits(db, TREE, "stag*")) == ["m1"]
    assert ids(hits(db, TREE, '"the stag"*')) == ["m1"]
    assert set(ids(hits(db, TREE, "cafe OR staging"))) == {"m4", "m1"}


@pytest.mark.parametrize("query", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_queries(db: Engine, query: str) -> None:
    if not query.strip():
        return
    for caller in (TREE, ALL_AGENTS):
        hits(db, caller, query[:4096])


def test_hit_texts(db: Engine) -> None:
    found = hits(db, TREE, "数据 OR cafe")
    with db.connect() as conn:
        texts = PostgresSearch().hit_texts(conn, found)
    by_event = {h[3]: texts[h[0]] for h in found}
    assert by_event == {"m3": "我们的数据库很好", "m4": "Café au lait"}  # CJK: re-read, unspaced
    with db.connect() as conn:
        assert PostgresSearch().hit_texts(conn, []) == {}


def test_hit_texts_take_the_bodies_the_ranked_statement_returned(db: Engine) -> None:
    """In the transaction of ``ranked_hits`` the bodies come with the ranked rows (no statement
    of its own for a Latin hit); in another transaction, or for a hit it did not return, they
    are read. The texts are the same either way."""
    r = PostgresSearch()
    statements: list[str] = []
    with db.connect() as conn:
        event.listen(conn, "before_cursor_execute", lambda *a: statements.append(str(a[2])))
        found = r.ranked_hits(conn, TREE, build_request("deploy OR cafe"), exact=False)
        assert sorted(ids(found)) == ["c1", "m1", "m2", "m4"]
        statements.clear()
        same = r.hit_texts(conn, found)
        assert statements == []
        conn.rollback()
        other = r.hit_texts(conn, found)  # the stash went with its transaction
        assert len(statements) == 1 and "body" in statements[0]
        assert same == other
        assert same[next(h[0] for h in found if h[3] == "m4")] == "Café au lait"
        assert same[next(h[0] for h in found if h[3] == "c1")] == LONG
        conn.rollback()
        first = r.ranked_hits(conn, TREE, build_request("cafe"), exact=False)
        statements.clear()
        assert r.hit_texts(conn, found) == same  # rows the last ranking did not return: read
        assert len(statements) == 1
        assert ids(first) == ["m4"]


# --- the same corpus on both engines -------------------------------------------------------------

TOPICS = {
    "deploy": "deploy the service to staging",
    "database": "the database migration needs a rollback plan",
    "latency": "latency went up after the kubernetes upgrade",
    "invoice": "send the invoice to the customer",
}
COMPARE_QUERIES = [
    "deploy",
    "database migration",
    "latency OR invoice",
    "kube*",
    '"rollback plan"',
    "staging deploy",
]
TOP_K = 5


def compare_corpus() -> list[tuple[str, str, str]]:
    """(session, event id, text): messages mixing the topics with varying length and repeats."""
    out = []
    names = list(TOPICS)
    for n in range(40):
        a, b = names[n % 4], names[(n * 7 + 1) % 4]
        filler = " ".join(["and then we talked about other things"] * (n % 5))
        body = f"{TOPICS[a]} {filler} {TOPICS[b] if n % 3 else ''} {a if n % 6 == 0 else ''}"
        out.append((f"s{n % 8}", f"e{n}", " ".join(body.split())))
    return out


def test_sqlite_and_postgresql_rank_alike(pg_server: PgServer, tmp_path: Path) -> None:
    corpus = compare_corpus()
    sessions = sorted({s for s, _, _ in corpus})
    store = TranscriptStore(f"sqlite:///{tmp_path / 'cmp.sqlite'}", background=False)
    try:
        for sid in sessions:
            store.create_session(sid, f"agent:main:{sid}", agent_id="main")
        for n, (sid, eid, body) in enumerate(corpus):
            store.append(sid, msg(eid, body, ts=1_000_000 + n))
        store.reconcile()
        sqlite_top = {
            q: [r["messageId"] for r in store.search(ALL, q, limit=TOP_K)["results"]]
            for q in COMPARE_QUERIES
        }
    finally:
        store.close()
    with migrated_database(pg_server) as engine:
        with engine.begin() as conn:
            for sid in sessions:
                add_session(conn, sid, f"agent:main:{sid}")
            for n, (sid, eid, body) in enumerate(corpus):
                add_message(conn, sid, eid, body, ts=1_000_000 + n)
            for sid in sessions:
                set_state(conn, sid, "clean")
        pg_top = {q: ids(hits(engine, ALL, q, limit=TOP_K))[:TOP_K] for q in COMPARE_QUERIES}
    overlaps = {}
    for q in COMPARE_QUERIES:
        a, b = sqlite_top[q], pg_top[q]
        assert len(a) == len(b) == TOP_K, q
        overlaps[q] = len(set(a) & set(b)) / TOP_K
    print("top-5 overlap", overlaps)
    # Same rows match on both engines; the orders differ (bm25 weighs a word's rarity and
    # length differently from ts_rank), so only a majority of the top 5 is asked to agree.
    assert min(overlaps.values()) >= 0.4, overlaps
    assert sum(overlaps.values()) / len(overlaps) >= 0.6, overlaps


def test_custom_plans_for_the_search_transaction_only_on_a_host_engine(db: Engine) -> None:
    """psycopg prepares a statement from its 5th run; the ranked statement must keep being
    planned with its parameters (bench/pg_narrow.py). On an engine the host made, the setting
    must not outlive the search's transaction; nor must ``jit = off`` (no JIT compilation for a
    search's statements), a server's setting a host may rely on."""
    host = create_engine(db.url)
    try:
        with host.connect() as conn:
            jit = conn.exec_driver_sql("SHOW jit").scalar()
            conn.exec_driver_sql("SET jit = on")  # the server's default, whatever this one's
            conn.commit()
            for _ in range(8):  # past psycopg's prepare threshold: same answers
                assert ids(
                    PostgresSearch().ranked_hits(conn, TREE, build_request("deploy"), exact=False)
                ) == ["m2", "m1", "c1"]
            assert conn.exec_driver_sql("SHOW plan_cache_mode").scalar() == "force_custom_plan"
            assert conn.exec_driver_sql("SHOW jit").scalar() == "off"
            conn.rollback()
            assert conn.exec_driver_sql("SHOW plan_cache_mode").scalar() == "auto"
            assert conn.exec_driver_sql("SHOW jit").scalar() == "on"
            conn.exec_driver_sql(f"SET jit = {jit}")
            conn.commit()
    finally:
        host.dispose()


def test_custom_plans_for_the_whole_session_on_an_engine_the_plugin_made(db: Engine) -> None:
    """On an engine of ``make_engine`` every connection has custom plans (and no JIT) from the
    start, so a search sends no ``set_config`` of its own, in any transaction."""
    statements: list[str] = []
    with db.connect() as conn:
        event.listen(conn, "before_cursor_execute", lambda *a: statements.append(str(a[2])))
        assert conn.exec_driver_sql("SHOW plan_cache_mode").scalar() == "force_custom_plan"
        assert conn.exec_driver_sql("SHOW jit").scalar() == "off"
        for _ in range(8):
            found = PostgresSearch().ranked_hits(conn, TREE, build_request("deploy"), exact=False)
            assert ids(found) == ["m2", "m1", "c1"]
            conn.rollback()
        assert conn.exec_driver_sql("SHOW plan_cache_mode").scalar() == "force_custom_plan"
    assert not any("plan_cache_mode" in s and "set_config" in s for s in statements)


def test_any_pending_is_remembered_for_one_snapshot(pg_server: PgServer) -> None:
    with migrated_database(pg_server) as engine:
        add_clean(engine, {"a": ME})
        r = PostgresSearch()
        with engine.connect() as conn:
            assert not r.any_pending(conn)
            conn.rollback()
            # Nothing committed since: the same snapshot, the answer is remembered (a stale
            # memo would hide this planted value).
            key = conn.connection.info["openclaw_fts_pg_any_pending"][0]
            conn.connection.info["openclaw_fts_pg_any_pending"] = (key, True)
            assert r.any_pending(conn)
            conn.rollback()
            with engine.begin() as other:  # another connection commits: a new snapshot
                other.execute(text("UPDATE openclaw_index_state SET needs_rebuild = true"))
            assert r.any_pending(conn)
            conn.rollback()
            with engine.begin() as other:
                other.execute(text("UPDATE openclaw_index_state SET needs_rebuild = false"))
            assert not r.any_pending(conn)
            # This transaction's own write: never answered from (or into) the memo.
            conn.execute(text("UPDATE openclaw_index_state SET needs_rebuild = true"))
            assert r.any_pending(conn)
            conn.rollback()
            assert not r.any_pending(conn)


def test_pending_visible_is_remembered_per_caller_for_one_snapshot(pg_server: PgServer) -> None:
    """A read-mostly server answers the wide probe once per commit, not once per search; the
    answer is keyed by the caller's visibility, and never taken from (or put into) the memo by
    a transaction that has written."""
    memo_key = "openclaw_fts_pg_pending_visible"
    with migrated_database(pg_server) as engine:
        add_clean(engine, {"a": ME, "s": "agent:main:sib"})
        r = PostgresSearch()
        with engine.connect() as conn:
            assert not r.pending_visible(conn, TREE, None)
            assert not r.pending_visible(conn, SIB_SELF, None)
            conn.rollback()
            snapshot, answers = conn.connection.info[memo_key]
            assert len(answers) == 2  # one per visibility
            for key in answers:  # plant: a stale memo would hide these
                answers[key] = True
            assert r.pending_visible(conn, TREE, None)
            assert r.pending_visible(conn, SIB_SELF, None)
            assert not r.pending_visible(conn, ALL, None)  # not remembered yet: read
            conn.rollback()
            with engine.begin() as other:  # a commit elsewhere: a new snapshot, a new memo
                other.execute(
                    text(
                        "UPDATE openclaw_index_state SET needs_rebuild = true WHERE session_id = "
                        "(SELECT session_id FROM openclaw_sessions WHERE session_key = :k)"
                    ),
                    {"k": "agent:main:sib"},
                )
            assert not r.pending_visible(conn, TREE, None)
            assert r.pending_visible(conn, SIB_SELF, None)
            assert conn.connection.info[memo_key][0] != snapshot
            conn.rollback()
            # This transaction's own write: the probe reads, and the memo keeps its answer.
            conn.execute(text("UPDATE openclaw_index_state SET needs_rebuild = true"))
            assert r.pending_visible(conn, TREE, None)
            conn.rollback()
            assert not r.pending_visible(conn, TREE, None)


def test_a_search_sets_the_custom_plan_mode_once(pg_server: PgServer) -> None:
    """On an engine the host made: ``pending_visible`` sets ``plan_cache_mode`` for the
    transaction together with reading the snapshot; ``ranked_hits`` in the same transaction
    does not set it again, and sets it itself in a transaction that has not."""
    with migrated_database(pg_server) as made:
        add_clean(made, {"a": ME}, "deploy")
        engine = create_engine(made.url)
        r = PostgresSearch()
        statements: list[str] = []
        with engine.connect() as conn:

            def seen(*args: Any) -> None:
                statements.append(str(args[2]))

            event.listen(conn, "before_cursor_execute", seen)
            assert not r.pending_visible(conn, TREE, None)
            assert ids(r.ranked_hits(conn, TREE, build_request("deploy"), exact=True)) == ["e1"]
            assert ids(r.ranked_hits(conn, TREE, build_request("deploy"), exact=True)) == ["e1"]
            assert sum("plan_cache_mode" in s for s in statements) == 1
            assert conn.exec_driver_sql("SHOW plan_cache_mode").scalar() == "force_custom_plan"
            assert conn.exec_driver_sql("SHOW jit").scalar() == "off"  # in the same statement
            conn.rollback()
            statements.clear()
            assert ids(r.ranked_hits(conn, TREE, build_request("deploy"), exact=True)) == ["e1"]
            assert sum("plan_cache_mode" in s for s in statements) == 1
            assert conn.exec_driver_sql("SHOW plan_cache_mode").scalar() == "force_custom_plan"
        engine.dispose()

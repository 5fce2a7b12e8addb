"""Wide callers (visibility ``all`` / ``agent``) on PostgreSQL: where a search's time goes
(bench/NOTES.md, "A search's fixed cost on PostgreSQL").

On the bench corpus (:mod:`bench.corpus`, loaded through ``TranscriptStore.append_many`` into a
database of its own, then ``ANALYZE`` and ``optimize``: the frequent words get their impact
lists), for a few words of each class (``very common``, ``common``, ``rare``, chosen by
document count as ``bench.core.Bench.pick_queries`` does), interleaved in one process, p50 of
:data:`RUNS` calls each:

* ``two-trips``: a search whose word has an impact list answered the way it was before the walk
  joined the one statement (``pending_and_hits`` declines; ``pending_visible`` then the walk:
  two round trips). Other words: the same as ``plugin``.
* ``plugin``: ``TranscriptStore.search`` as shipped.
* ``statement``: the plugin's one statement alone, run through SQLAlchemy on a connection of
  the store's engine (no snippets, no shaping): the database's share plus the driver's.
* ``raw``: the same statement text through plain psycopg (``%(name)s`` parameters), autocommit.
* ``searchable``: SQLAlchemy-Searchable's ``search()`` on its own tables (``bench.peers``, a
  database of its own on the same server, loaded from the plugin's index rows), top 10 as ORM
  objects; ``tantivy``: tantivy's top 10 (block-max BM25), with ``--peers`` only (loading them
  takes a minute or two at 100k).
* ``server``: the statement's ``Execution Time`` in ``EXPLAIN (ANALYZE)`` (the server alone),
  and its ``Planning Time`` (``planning``: every execution is planned, custom plans).

``statement``, ``raw`` and ``server`` pass the pending memo the plugin holds on a read-mostly
server (the snapshot unchanged since the last search: the probe does not run).

With ``--profile`` a cProfile of :data:`PROFILE_CALLS` plugin searches per (class, caller) is
printed (cumulative time, top :data:`PROFILE_LINES` lines).

Usage: ``python -m bench.pg_wide [--url postgresql+psycopg://…/db] [--size 100k]
[--profile]``: without ``--url`` a throwaway server is started (tests/pgserver.py) and the
corpus loaded; with ``--url``, a database that already holds the corpus is searched as it is
(an empty one is loaded first). One JSON line per cell, then a Markdown table, in ms.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import pstats
import re
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
from sqlalchemy import text

from bench import pg_baseline
from bench.core import PEER_MESSAGES, PEER_SESSIONS
from bench.corpus import Corpus, parse_size
from bench.peers import PeerQuery, SearchablePeer, TantivyPeer
from bench.pg_run import _load_pgserver
from openclaw_fts import AgentToAgent, Caller, TranscriptStore, migrate
from openclaw_fts.index.impact import fast_path_word
from openclaw_fts.index.postgresql import TEXT_SEARCH_CONFIG, read
from openclaw_fts.query import compile_query
from openclaw_fts.rows import SearchRequest

#: Calls per side and cell (the p50 is reported).
RUNS = 41
#: Words per class.
WORDS_PER_CLASS = 3
#: Events per ``append_many`` while loading.
LOAD_BATCH = 200
#: Plugin searches per (class, caller) under ``--profile``.
PROFILE_CALLS = 200
PROFILE_LINES = 28
LIMIT = 10
TREE_CALLER_KEY = "agent:main:main"
CALLERS = {
    "all": Caller(TREE_CALLER_KEY, visibility="all", agent_to_agent=AgentToAgent(True)),
    "agent": Caller(TREE_CALLER_KEY, visibility="agent"),
}
SIDES = ("two-trips", "plugin", "statement", "raw", "searchable", "tantivy", "server")
#: Columns of the table: the sides, then the server's planning time of the statement.
COLUMNS = (*SIDES, "planning")
_PARAM = re.compile(r"(?<!:):([a-z_]+)")


def load(store: TranscriptStore, corpus: Corpus) -> None:
    """The corpus, session by session, then ``ANALYZE`` and ``optimize`` (the lists)."""
    for n, info in enumerate(corpus.sessions):
        store.create_session(
            info.session_id,
            info.session_key,
            agent_id=info.agent_id,
            spawned_by=info.spawned_by,
            parent_session_key=info.parent_session_key,
            owner_session_key=info.owner_session_key,
        )
        events = corpus.events(info)
        for start in range(0, len(events), LOAD_BATCH):
            store.append_many(info.session_id, events[start : start + LOAD_BATCH])
        if n % 200 == 0:
            print(f"loaded {n:,} of {len(corpus.sessions):,} sessions", file=sys.stderr)
    with store.engine.begin() as conn:
        conn.execute(text("ANALYZE"))
    store.optimize()


def pick(store: TranscriptStore) -> dict[str, list[str]]:
    """Words per class by document count (the bands of ``Bench.pick_queries``)."""
    with store.engine.connect() as conn:
        docs = int(conn.execute(text("SELECT count(*) FROM message_index")).scalar() or 0)
        counts = conn.execute(
            text(
                "SELECT word, ndoc FROM ts_stat('SELECT body_tsv FROM message_index') "
                "WHERE word ~ '^[a-z]{2,}$'"
            )
        ).all()
    bands = {
        "very common": (int(docs * 0.25), docs),
        "common": (int(docs * 0.03), int(docs * 0.10)),
        "rare": (2, max(3, docs // 2000)),
    }
    out: dict[str, list[str]] = {}
    for klass, (lo, hi) in bands.items():
        found = sorted((int(d), str(w)) for w, d in counts if lo <= int(d) <= hi)
        step = max(1, len(found) // WORDS_PER_CLASS)
        out[klass] = [w for _, w in found[::step][:WORDS_PER_CLASS]]
    return out


@contextlib.contextmanager
def two_trips() -> Iterator[None]:
    """``pending_and_hits`` declines a search its word's list answers (as it used to)."""
    folded = read.PostgresSearch.pending_and_hits

    def declining(self: Any, conn: Any, caller: Caller, req: SearchRequest) -> Any:
        if not caller.is_narrow and fast_path_word(req) is not None:
            return None
        return folded(self, conn, caller, req)

    read.PostgresSearch.pending_and_hits = declining  # type: ignore[method-assign]
    try:
        yield
    finally:
        read.PostgresSearch.pending_and_hits = folded  # type: ignore[method-assign]


def statement(
    caller: Caller, word: str, memo: tuple[str, bool] | None = None
) -> tuple[str, dict[str, Any]]:
    """The one statement the plugin sends for ``word`` (``memo``: the snapshot and the pending
    answer the plugin remembers; None, the probe runs)."""
    req = SearchRequest(
        query=word,
        compiled=compile_query(word),
        limit=LIMIT,
        session_key=None,
        role=None,
        since=None,
        until=None,
        order="relevance",
    )
    listed = fast_path_word(req) if not caller.is_narrow else None
    return read.folded_sql(caller, req, memo=memo, word=listed, walk=listed is not None)


def timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def peers(store: TranscriptStore, url: str, folder: str) -> tuple[SearchablePeer, TantivyPeer]:
    """SQLAlchemy-Searchable (database ``<plugin's>_peer``, the plugin's text search
    configuration migrated into it) and tantivy (in ``folder``), loaded with the plugin's
    sessions and index rows unless already there."""
    from pathlib import Path

    from psycopg.rows import dict_row

    base, _, query = url.partition("?")
    peer_url = f"{base}_peer" + (f"?{query}" if query else "")
    admin = base.rsplit("/", 1)[0] + "/postgres" + (f"?{query}" if query else "")
    with psycopg.connect(admin.replace("+psycopg", ""), autocommit=True) as conn:
        name = peer_url.partition("?")[0].rsplit("/", 1)[1]
        fresh = not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if fresh:
            conn.execute(f'CREATE DATABASE "{name}"')
    if fresh:
        from openclaw_fts.engine import make_engine

        peer_engine = make_engine(peer_url)
        migrate.upgrade(peer_engine)
        peer_engine.dispose()
    with psycopg.connect(url.replace("+psycopg", ""), row_factory=dict_row) as conn:
        sessions = list(conn.execute(PEER_SESSIONS))
        rows = list(conn.execute(PEER_MESSAGES))
    searchable = SearchablePeer(peer_url, f"public.{TEXT_SEARCH_CONFIG}")
    if fresh:
        print("loading SQLAlchemy-Searchable", file=sys.stderr)
        searchable.load(sessions, rows)
    tantivy = TantivyPeer(Path(folder))
    print("loading tantivy", file=sys.stderr)
    tantivy.load(sessions, rows)
    return searchable, tantivy


def measure(
    store: TranscriptStore,
    raw: psycopg.Connection[Any],
    word: str,
    caller: Caller,
    peers: tuple[SearchablePeer, TantivyPeer] | None,
    runs: int = RUNS,
) -> dict[str, float]:
    sql, params = statement(caller, word)
    raw_sql = _PARAM.sub(r"%(\1)s", sql.replace("%", "%%"))
    first = raw.execute(raw_sql, params).fetchone()
    assert first is not None
    # the memo the plugin has for a read-mostly server: the probe does not run
    sql, params = statement(caller, word, (str(first[0]), bool(first[2])))
    raw_sql = _PARAM.sub(r"%(\1)s", sql.replace("%", "%%"))
    clause = text(sql)

    def old() -> None:
        with two_trips():
            store.search(caller, word, limit=LIMIT)

    def plugin() -> None:
        store.search(caller, word, limit=LIMIT)

    def through_sqlalchemy() -> None:
        with store.engine.connect() as conn:
            conn.execution_options(isolation_level="AUTOCOMMIT").execute(clause, params).all()

    def through_psycopg() -> None:
        raw.execute(raw_sql, params).fetchall()

    planning: list[float] = []

    def server() -> float:
        plan = raw.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + raw_sql, params).fetchone()
        assert plan is not None
        planning.append(float(plan[0][0]["Planning Time"]))
        return float(plan[0][0]["Execution Time"])

    sides: dict[str, Callable[[], float]] = {
        "two-trips": lambda: timed(old),
        "plugin": lambda: timed(plugin),
        "statement": lambda: timed(through_sqlalchemy),
        "raw": lambda: timed(through_psycopg),
        "server": server,
    }
    if peers is not None:
        vis = "all" if caller.visibility == "all" else "agent"
        scope = {"agent": "main"}
        query = PeerQuery("word", (word,), pg_baseline.tsquery("word", (word,)))
        searchable, tantivy = peers
        sides["searchable"] = lambda: timed(lambda: searchable.search(query, vis, scope))
        sides["tantivy"] = lambda: timed(lambda: tantivy.search(query, vis, scope))
    for fn in sides.values():  # warm: plans, pools, memo
        fn()
    times: dict[str, list[float]] = {s: [] for s in sides}
    for i in range(runs):
        order = tuple(sides) if i % 2 == 0 else tuple(reversed(sides))
        for side in order:
            times[side].append(sides[side]())
    return {
        **{s: statistics.median(v) for s, v in times.items()},
        "planning": statistics.median(planning),
    }


def profile(store: TranscriptStore, words: list[str], caller: Caller) -> str:
    prof = cProfile.Profile()
    prof.enable()
    for i in range(PROFILE_CALLS):
        store.search(caller, words[i % len(words)], limit=LIMIT)
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(PROFILE_LINES)
    return out.getvalue()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url")
    parser.add_argument("--size", default="100k")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--peers", action="store_true")
    parser.add_argument("--runs", type=int, default=RUNS, help="calls per side and cell")
    parser.add_argument("--only", help="classes, comma-separated")
    parser.add_argument("--tantivy-dir", default="/tmp/openclaw-fts-bench-tantivy")
    args = parser.parse_args(argv)
    server = None
    url = args.url
    if url is None:
        pgserver = _load_pgserver()
        server = pgserver.PgServer(pgserver.find_bindir()).start()
        url = server.url()
    store = TranscriptStore(url, background=False)
    try:
        with store.engine.connect() as conn:
            empty = not conn.execute(text("SELECT count(*) FROM openclaw_sessions")).scalar()
        if empty:
            load(store, Corpus(parse_size(args.size)))
        words = pick(store)
        if args.only:
            words = {k: v for k, v in words.items() if k in args.only.split(",")}
        both = peers(store, url, args.tantivy_dir) if args.peers else None
        print(json.dumps({"words": words}), flush=True)
        raw_url = url.replace("postgresql+psycopg://", "postgresql://")
        rows: list[tuple[str, str, dict[str, float]]] = []
        with psycopg.connect(raw_url, autocommit=True) as raw:
            raw.execute("SET plan_cache_mode = force_custom_plan")
            for klass, chosen in words.items():
                for vis, caller in CALLERS.items():
                    cells = [measure(store, raw, w, caller, both, args.runs) for w in chosen]
                    p50 = {
                        s: statistics.median(c.get(s, float("nan")) for c in cells) for s in COLUMNS
                    }
                    print(json.dumps({"class": klass, "caller": vis, **p50}), flush=True)
                    rows.append((klass, vis, p50))
                    if args.profile:
                        print(f"## profile: {klass} / {vis}\n{profile(store, chosen, caller)}")
        print("| class | caller | " + " | ".join(COLUMNS) + " |")
        print("|---|---|" + "---:|" * len(COLUMNS))
        for klass, vis, p50 in rows:
            print(f"| {klass} | {vis} | " + " | ".join(f"{p50[s]:.2f}" for s in COLUMNS) + " |")
    finally:
        store.close()
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()

"""Narrow callers (visibility ``tree`` / ``self``) on PostgreSQL: which plan keeps a search flat
as hidden sessions grow (docs/postgresql.md, "Narrow callers").

Three ways to search the caller's few sessions, timed for a common word (in every message) and
a rare one (one message in a thousand), at 1k, 10k and 100k hidden sessions of five messages:

* ``join``: the statement ``PostgresSearch`` runs today -- the visibility predicate over
  ``openclaw_sessions`` joined to ``message_index``, ``body_tsv @@ q``; the planner picks the
  path (GIN on ``body_tsv``, or the visible sessions' rows through the btree on
  ``message_index (session_id, event_id)``).
* ``btree_gin``: the visible session ids listed first, then ``session_id = ANY(:ids) AND
  body_tsv @@ q`` with a two-column GIN index ``(session_id, body_tsv)`` (extension
  ``btree_gin``).
* ``token``: option (a), the session token inside the tsvector: ``setweight(text, 'A') ||
  setweight(sess, 'D')``, the text queried with ``:A``, the visible sessions ORed as ``:D``,
  ranked with weights ``{0,0,0,1}``.

Usage: ``python -m bench.pg_narrow [--url postgresql+psycopg://...] [--sizes 1000,10000,100000]``
(without ``--url`` a throwaway server is started from tests/pgserver.py). Prints one JSON line
per measurement and a Markdown table; p50 of :data:`RUNS` runs, in ms.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, create_engine, text

from openclaw_fts import migrate
from openclaw_fts.index.postgresql import TEXT_SEARCH_CONFIG
from openclaw_fts.index.postgresql.query import body_tsvector_sql, render
from openclaw_fts.index.postgresql.read import PostgresSearch, hits_sql
from openclaw_fts.index.visibility_sql import visible
from openclaw_fts.models import INDEX_VERSION
from openclaw_fts.query import CompiledQuery, compile_query
from openclaw_fts.rows import SearchRequest
from openclaw_fts.visibility import Caller

RUNS = 41
MESSAGES = 5
CALLER = "agent:main:caller"
CHILDREN = 3
VISIBLE_MESSAGES = 20
WORDS = {"common": "deploy", "rare": "zanzibar"}
TOKEN_COLUMN = "body_tsv_a"
VERBOSE = False
#: psycopg prepares a statement on its 5th execution on a connection, and PostgreSQL may then
#: switch to a generic plan, in which ``to_tsquery(cfg, $1)`` is not a constant: the plan the
#: reader sets per transaction (read.PLAN_CACHE_MODE) is measured against the default.
PLAN_CACHE_MODE = "force_custom_plan"


def setup(conn: Connection) -> None:
    conn.execute(text("CREATE EXTENSION IF NOT EXISTS btree_gin"))
    conn.execute(
        text(
            f"ALTER TABLE message_index ADD COLUMN {TOKEN_COLUMN} tsvector GENERATED ALWAYS AS ("
            f"setweight({body_tsvector_sql()}, 'A') || "
            "setweight(to_tsvector('simple'::regconfig, sess), 'D')) STORED"
        )
    )
    conn.execute(text(f"CREATE INDEX ix_token ON message_index USING gin ({TOKEN_COLUMN})"))
    conn.execute(text("CREATE INDEX ix_sess_tsv ON message_index USING gin (session_id, body_tsv)"))
    keys = [CALLER] + [f"{CALLER}:child{c}" for c in range(CHILDREN)]
    for n, key in enumerate(keys):
        sid = f"v{n}"
        conn.execute(
            text(
                "INSERT INTO openclaw_sessions (session_id, session_key, agent_id, spawned_by, "
                "last_seq) VALUES (:s, :k, 'main', :p, :l)"
            ),
            {"s": sid, "k": key, "p": None if n == 0 else CALLER, "l": VISIBLE_MESSAGES - 1},
        )
        conn.execute(
            text(
                "INSERT INTO openclaw_index_state (session_id, indexed_seq, index_version) "
                "VALUES (:s, :l, :v)"
            ),
            {"s": sid, "l": VISIBLE_MESSAGES - 1, "v": INDEX_VERSION},
        )
        conn.execute(
            text(
                "INSERT INTO message_index (session_id, seq, event_id, role, timestamp_ms, body, "
                "sess) SELECT CAST(:s AS varchar), k, 'e' || k, 'user', k, "
                "'deploy the visible thing w' || k || "
                "CASE WHEN k = 3 AND :n < 2 THEN ' zanzibar' ELSE '' END, "
                "(SELECT 's' || id FROM openclaw_index_state "
                "WHERE session_id = CAST(:s AS varchar)) "
                "FROM generate_series(0, CAST(:m AS int)) AS k"
            ),
            {"s": sid, "n": n, "m": VISIBLE_MESSAGES - 1},
        )


def grow(conn: Connection, start: int, stop: int) -> None:
    """Hidden sessions ``start`` .. ``stop - 1`` (same agent, outside the caller's tree)."""
    p = {"a": start, "b": stop - 1, "l": MESSAGES - 1, "v": INDEX_VERSION}
    conn.execute(
        text(
            "INSERT INTO openclaw_sessions (session_id, session_key, agent_id, last_seq) "
            "SELECT 'h' || g, 'agent:main:h' || g, 'main', :l "
            "FROM generate_series(CAST(:a AS int), CAST(:b AS int)) AS g"
        ),
        p,
    )
    conn.execute(
        text(
            "INSERT INTO openclaw_index_state (session_id, indexed_seq, index_version) "
            "SELECT 'h' || g, :l, :v FROM generate_series(CAST(:a AS int), CAST(:b AS int)) AS g"
        ),
        p,
    )
    conn.execute(
        text(
            "INSERT INTO message_index (session_id, seq, event_id, role, timestamp_ms, body, sess) "
            "SELECT st.session_id, k, 'e' || k, 'user', g * 10 + k, "
            "'deploy the w' || ((g * 7 + k * 13) % 5000) || ' w' || ((g * 11 + k * 3) % 5000) "
            "|| ' w' || ((g * 17 + k) % 3000) || ' and some more words about it' || "
            "CASE WHEN (g * 5 + k) % 1000 = 0 THEN ' zanzibar' ELSE '' END, 's' || st.id "
            "FROM generate_series(CAST(:a AS int), CAST(:b AS int)) AS g "
            "CROSS JOIN generate_series(0, CAST(:l AS int)) AS k "
            "JOIN openclaw_index_state AS st ON st.session_id = 'h' || g"
        ),
        p,
    )


def weighted(compiled: CompiledQuery, weight: str) -> str:
    """``render`` with every operand restricted to ``weight`` (``'w':A``, ``'w':*A``)."""
    groups = []
    for group in compiled.groups:
        alternatives = []
        for term in group:
            ops = [f"'{t}':{weight}" for t in term.tokens]
            if term.prefix:
                ops[-1] = ops[-1][: -len(weight)] + "*" + weight
            alternatives.append("(" + " <-> ".join(ops) + ")")
        groups.append("(" + " | ".join(alternatives) + ")")
    return " & ".join(groups)


def statements(word: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """Each plan as ONE statement (one round trip), visibility inside it."""
    caller = Caller(CALLER, visibility="tree")
    compiled = compile_query(word)
    assert compiled is not None
    req = SearchRequest(word, compiled, 10, None, None, None, None, "relevance")
    out = {"join": hits_sql(caller, req, exact=True)}
    # A wide caller for scale: every session of its agent is visible, all of them match.
    out["wide_all"] = hits_sql(Caller(CALLER, visibility="all"), req, exact=True)
    # The same two with the per-row pending filter (what a search runs when any_pending is
    # true, or when it is not asked).
    out["join_pending"] = hits_sql(caller, req, exact=False)
    out["wide_all_pending"] = hits_sql(Caller(CALLER, visibility="all"), req, exact=False)
    pred = visible(caller, "s", dialect="postgresql")
    cfg = f"'{TEXT_SEARCH_CONFIG}'::regconfig"
    order = 'rank, mi.timestamp_ms DESC, s.session_key COLLATE "C", mi.event_id COLLATE "C", mi.id'
    cols = "mi.id, mi.session_id, mi.seq, mi.event_id, mi.role, mi.timestamp_ms, s.session_key"
    ids = f"ARRAY(SELECT s.session_id FROM openclaw_sessions AS s WHERE {pred.sql})"
    out["btree_gin"] = (
        f"SELECT {cols}, -ts_rank(mi.body_tsv, to_tsquery({cfg}, :q), 1) AS rank "
        "FROM message_index AS mi JOIN openclaw_sessions AS s ON s.session_id = mi.session_id "
        f"WHERE mi.session_id = ANY({ids}) AND mi.body_tsv @@ to_tsquery({cfg}, :q) "
        f"ORDER BY {order} LIMIT 11",
        {"q": render(compiled), **pred.params},
    )
    sess = (
        "to_tsquery('simple', (SELECT coalesce(string_agg('s' || st.id || chr(58) || 'D', ' | '), "
        "'s0') FROM openclaw_sessions AS s JOIN openclaw_index_state AS st "
        f"ON st.session_id = s.session_id WHERE {pred.sql}))"
    )
    tsq = f"(to_tsquery({cfg}, :qa) && {sess})"
    out["token"] = (
        f"SELECT {cols}, -ts_rank('{{0,0,0,1}}', mi.{TOKEN_COLUMN}, {tsq}, 1) AS rank "
        "FROM message_index AS mi JOIN openclaw_sessions AS s ON s.session_id = mi.session_id "
        f"WHERE mi.{TOKEN_COLUMN} @@ {tsq} AND {pred.sql} ORDER BY {order} LIMIT 11",
        {"qa": weighted(compiled, "A"), **pred.params},
    )
    return out


#: The indexes each plan may use: the others are dropped inside the measuring transaction (and
#: come back with its rollback), so no plan is timed with another plan's index.
PLANS = ("join", "btree_gin", "token", "join_pending", "wide_all", "wide_all_pending")
OWN_INDEXES = {
    "join": (),
    "wide_all": (),
    "join_pending": (),
    "wide_all_pending": (),
    "btree_gin": ("ix_sess_tsv",),
    "token": ("ix_token",),
}
EXTRA_INDEXES = ("ix_sess_tsv", "ix_token")


def measure(
    conn: Connection, name: str, sql: str, params: dict[str, Any]
) -> tuple[float, int, str]:
    trans = conn.begin()
    try:
        conn.execute(text(f"SET LOCAL plan_cache_mode = {PLAN_CACHE_MODE}"))
        for index in EXTRA_INDEXES:
            if index not in OWN_INDEXES[name]:
                conn.execute(text(f"DROP INDEX {index}"))
        return _measure(conn, sql, params)
    finally:
        trans.rollback()


def _measure(conn: Connection, sql: str, params: dict[str, Any]) -> tuple[float, int, str]:
    rows = conn.execute(text(sql), params).all()
    plan = "\n".join(r[0] for r in conn.execute(text("EXPLAIN ANALYZE " + sql), params))
    if VERBOSE:
        print(plan, file=sys.stderr)
    times = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        conn.execute(text(sql), params).all()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), len(rows), plan


def measure_probes(conn: Connection) -> dict[str, float]:
    """p50 ms of the two pending probes (nothing pending: the worst case, every session read)."""
    reader = PostgresSearch()
    caller = Caller(CALLER, visibility="tree")
    out = {}
    for name, probe in (
        ("any_pending", lambda: reader.any_pending(conn)),
        ("pending_visible_tree", lambda: reader.pending_visible(conn, caller, None)),
    ):
        assert not probe()
        times = []
        for _ in range(RUNS):
            t0 = time.perf_counter()
            probe()
            times.append((time.perf_counter() - t0) * 1000)
        out[name] = statistics.median(times)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url")
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--explain", action="store_true", help="EXPLAIN ANALYZE to stderr")
    parser.add_argument(
        "--plan-cache-mode",
        default="force_custom_plan",
        help="plan_cache_mode for the timed statements (auto: PostgreSQL's default)",
    )
    args = parser.parse_args()
    global VERBOSE, PLAN_CACHE_MODE
    VERBOSE = args.explain
    PLAN_CACHE_MODE = args.plan_cache_mode
    server = None
    url = args.url
    if url is None:
        sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))
        from pgserver import PgServer, find_bindir  # type: ignore[import-not-found]

        bindir = find_bindir()
        assert bindir is not None, "no PostgreSQL binaries"
        server = PgServer(bindir).start()
        url = server.url()
    try:
        engine = create_engine(url)
        migrate.upgrade(engine)
        with engine.begin() as conn:
            setup(conn)
        results = []
        have = 0
        for size in map(int, args.sizes.split(",")):
            with engine.begin() as conn:
                grow(conn, have, size)
            with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.execute(text("VACUUM ANALYZE"))
            have = size
            with engine.connect() as conn:
                for kind, word in WORDS.items():
                    for name, (sql, params) in statements(word).items():
                        p50, n, plan = measure(conn, name, sql, params)
                        used = sorted(
                            set(
                                re.findall(
                                    r"(?:Index|Index Only) Scan .*? on (\w+)|"
                                    r"Bitmap Index Scan on (\w+)",
                                    plan,
                                )
                            )
                        )
                        spent = re.findall(r"(Planning|Execution) Time: ([0-9.]+) ms", plan)
                        row = {
                            "hidden": size,
                            "word": kind,
                            "plan": name,
                            "p50_ms": p50,
                            "server_ms": sum(float(ms) for _, ms in spent),
                            "rows": n,
                            "indexes": sorted({a or b for a, b in used}),
                        }
                        results.append(row)
                        print(json.dumps(row), flush=True)
        with engine.connect() as conn:
            probes = measure_probes(conn)
        print(json.dumps(probes))
        print(f"\nplan_cache_mode={PLAN_CACHE_MODE}; p50 client ms (server plan+exec ms)")
        print(
            "\n| hidden sessions | word | join | btree_gin | token | join, pending filter "
            "| wide caller (all) | wide, pending filter |\n|---|---|---|---|---|---|---|---|"
        )
        for size in map(int, args.sizes.split(",")):
            for kind in WORDS:
                cells = {r["plan"]: r for r in results if r["hidden"] == size and r["word"] == kind}
                print(
                    f"| {size:,} | {kind} | "
                    + " | ".join(
                        f"{cells[p]['p50_ms']:.2f} ({cells[p]['server_ms']:.2f})" for p in PLANS
                    )
                    + " |"
                )
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()

"""The benchmark on PostgreSQL: ``python -m bench.run --backend postgresql --size 100k``.

The same corpus, query classes, rows and result files as the SQLite bench (:mod:`bench.core`,
whose figures this class reuses through a few backend hooks), with raw psycopg
(:mod:`bench.pg_baseline`) as the baseline measured in the same run, on the same server: the
plugin and the baseline each get a database of their own. Without ``--pg-url`` a throwaway
server is started (``tests/pgserver.py``, loaded by path) and stopped at the end.

Figures: ``live``, ``size`` (``pg_total_relation_size``), ``search`` (class × visibility; no
sqlite-utils column), ``append``, ``hidden``, ``pending`` (what a search costs when another
connection committed just before it: ``PostgresReader.any_pending``'s memo misses), ``rewind``,
``backfill``, ``upgrade`` (revision 1 → head of a populated database; no raw baseline, and the
sessions must be left pending). Not run here: ``cjk`` (FTS5 index sizes) and ``memory`` (the
import's RSS does not depend on the engine much; run it on SQLite).
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import psycopg

from bench import pg_baseline as pgraw
from bench.core import (
    GOAL_UPGRADE_S,
    PEER_MESSAGES,
    PEER_SESSIONS,
    UPGRADE_FROM,
    Bench,
    Row,
    State,
    _dist,
    ms,
    pct,
    ratio,
)
from bench.peers import SEARCHABLE_AVAILABLE, Peer, SearchablePeer
from bench.peers import version as peer_version
from openclaw_fts.index.postgresql import TEXT_SEARCH_CONFIG

PG_FIGURES: tuple[str, ...] = (
    "live",
    "size",
    "search",
    "filters",
    "append",
    "hidden",
    "pending",
    "rewind",
    "backfill",
    "upgrade",
)
TABLES = (
    "openclaw_sessions",
    "transcript_events",
    "message_index",
    "openclaw_index_state",
    "openclaw_branches",
)
#: Searches per side in the ``pending`` figure.
PENDING_REPS = 30
GOAL_PENDING_PROBE_MS = 1.0


def _load_pgserver() -> Any:
    """``tests/pgserver.py`` (the test suite's throwaway server), imported by path."""
    path = Path(__file__).resolve().parent.parent / "tests" / "pgserver.py"
    spec = importlib.util.spec_from_file_location("openclaw_fts_bench_pgserver", path)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve the module by name
    spec.loader.exec_module(module)
    return module


class PgBench(Bench):
    figures = PG_FIGURES
    backend_label = "pg-"

    def __init__(self, args: Any, tmp: Path) -> None:
        super().__init__(args, tmp)
        self.server: Any = None
        self.server_version = ""
        self._names = itertools.count(1)
        self._created: list[str] = []
        if args.pg_url:
            self.admin_url = args.pg_url
        else:
            pgserver = _load_pgserver()
            reason = pgserver.unavailable_reason()
            if reason is not None:
                raise SystemExit(f"cannot start a PostgreSQL server: {reason} (or pass --pg-url)")
            self.log("starting a throwaway PostgreSQL server (tests/pgserver.py)")
            self.server = pgserver.PgServer(pgserver.find_bindir()).start()
            self.admin_url = self.server.url()
        with contextlib.closing(pgraw.connect(self.admin_url, autocommit=True)) as conn:
            row = conn.execute("SHOW server_version").fetchone()
            self.server_version = str(row[0]) if row else "?"
        self.environment["postgresql"] = self.server_version
        self.environment["psycopg"] = psycopg.__version__

    # -- databases -------------------------------------------------------------------------

    def database(self, what: str) -> str:
        """A fresh empty database on the server; its SQLAlchemy URL."""
        name = f"bench_{what}_{next(self._names)}"
        with contextlib.closing(pgraw.connect(self.admin_url, autocommit=True)) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f"CREATE DATABASE \"{name}\" TEMPLATE template0 ENCODING 'UTF8'")
        self._created.append(name)
        base, _, query = self.admin_url.partition("?")
        head = base.rsplit("/", 1)[0]
        return f"{head}/{name}" + (f"?{query}" if query else "")

    def drop(self, url: str) -> None:
        name = url.partition("?")[0].rsplit("/", 1)[1]
        with contextlib.closing(pgraw.connect(self.admin_url, autocommit=True)) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if name in self._created:
            self._created.remove(name)

    def migrated(self, url: str, revision: str = "head") -> None:
        """The plugin's schema on ``url`` (setup of the baseline's database, not timed)."""
        from openclaw_fts import migrate
        from openclaw_fts.engine import make_engine

        engine = make_engine(url)
        try:
            migrate.upgrade(engine, revision)
        finally:
            engine.dispose()

    def cleanup(self) -> None:
        if not self.args.keep:
            for name in list(self._created):
                with contextlib.suppress(psycopg.Error):
                    self.drop(f"x/{name}")
        if self.server is not None:
            self.server.stop()
            self.server = None

    def extra_meta(self) -> dict[str, Any]:
        return {"postgresql": self.server_version}

    # -- backend hooks ----------------------------------------------------------------------

    def new_state(self) -> State:
        plugin = self.database("plugin")
        base = self.database("baseline")
        self.migrated(base)
        return State(plugin, base)

    def store(self, path: Any) -> Any:
        from openclaw_fts import TranscriptStore

        return TranscriptStore(str(path), background=False)

    @staticmethod
    def raw_conn(path: Any) -> Any:
        return pgraw.connect(str(path), autocommit=True)

    def baseline(self, path: Any, *, create: bool = True) -> Any:
        return pgraw.Baseline(str(path))

    def count_index_rows(self, path: Any) -> int:
        with contextlib.closing(self.raw_conn(path)) as conn:
            conn.execute("VACUUM ANALYZE")
            return int(conn.execute("SELECT count(*) FROM message_index").fetchone()[0])

    def search_sql(self, vis: str) -> str:
        return pgraw.search_sql(vis)

    @staticmethod
    def sql(statement: str) -> str:
        return statement.replace("?", "%s")

    def vocabulary(self, conn: Any) -> list[tuple[str, int]]:
        return [
            (str(w), int(n))
            for w, n in conn.execute(
                "SELECT word, ndoc FROM ts_stat('SELECT body_tsv FROM message_index')"
            )
        ]

    @staticmethod
    def match(kind: str, words: Sequence[str]) -> str:
        return pgraw.tsquery(kind, words)

    @staticmethod
    def count_match(conn: Any, match: str) -> int:
        return int(conn.execute(pgraw.count_sql(), {"q": match}).fetchone()[0])

    main_peer = "sqlalchemy-searchable"

    def plugin_url(self, path: Any) -> str:
        return str(path)

    def append_sides(
        self, state: State
    ) -> list[tuple[str, Callable[[int, dict[str, Any], str], None]]]:
        """The plugin through the host's ORM, and SQLAlchemy-Searchable's documented write: one
        ORM object in its own transaction, the library's trigger filling the vector."""
        sides = super().append_sides(state)
        if not SEARCHABLE_AVAILABLE:
            return sides
        url = self.database("searchable_append")
        self.migrated(url)
        peer = SearchablePeer(url, f"public.{TEXT_SEARCH_CONFIG}")
        self._append_cleanup.append(peer.close)
        peer.add_sessions(
            [dict(session_id="s1", session_key="agent:main:main", agent_id="main",
                  spawned_by=None, parent_session_key=None, owner_session_key=None,
                  incognito=False)]
        )  # fmt: skip

        def searchable(i: int, event: dict[str, Any], body: str) -> None:
            peer.add_messages(
                [dict(session_id="s1", seq=i, event_id=event["id"], role="user",
                      timestamp_ms=0, body=body)]
            )  # fmt: skip

        return [*sides, (SearchablePeer.label, searchable)]

    def raw_count(self, conn: Any, match: str, vis: str, scope: dict[str, Any]) -> int:
        return int(conn.execute(pgraw.count_sql(vis), {"q": match, **scope}).fetchone()[0])

    def peer_rows(self, state: State) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
        from psycopg.rows import dict_row

        with contextlib.closing(self.raw_conn(state.baseline_path)) as c:
            cur = c.cursor(row_factory=dict_row)
            sessions = list(cur.execute(PEER_SESSIONS))
            rows = list(cur.execute(PEER_MESSAGES))
        return sessions, rows

    def engine_peers(self, state: State) -> list[Peer]:
        """SQLAlchemy-Searchable, loaded through its ORM from the raw baseline's rows."""
        if not SEARCHABLE_AVAILABLE:
            self.warn(
                'sqlalchemy-searchable is not installed (pip install -e ".[bench]"): the search '
                "rows have no SQLAlchemy-Searchable column"
            )
            return []
        url = self.database("searchable")
        self.migrated(url)  # the plugin's text search configuration, so both tokenize alike
        # The trigger (tsvector_update_trigger) wants a schema-qualified configuration.
        peer = SearchablePeer(url, f"public.{TEXT_SEARCH_CONFIG}")
        sessions, rows = self.peer_rows(state)
        self.log("loading the SQLAlchemy-Searchable baseline (ORM, trigger)")
        load = peer.load(sessions, rows)
        label = SearchablePeer.label
        if load["rows"] != state.index_rows:
            self.warn(f"{label} holds {load['rows']} rows, expected {state.index_rows}")
        self.details["sqlalchemySearchable"] = {"version": peer_version(label), **load}
        rate = load["rows"] / load["loadSeconds"]
        self.add(
            Row(f"{label} load (ORM, 100 rows a transaction)", "s", None, None, None,
                "printed", None, peers={label: {"p50": load["loadSeconds"]}},
                note=f"{load['rows']:,} index rows, {rate:,.0f} rows/s, "
                f"{load['sizeBytes'] / 1e6:.1f} MB (tables, indexes, TOAST)")
        )  # fmt: skip
        return [peer]

    # -- size ------------------------------------------------------------------------------

    def table_sizes(self, url: str) -> dict[str, int]:
        """:data:`TABLES`, then any other table of the index (``message_*``: the impact
        lists), each with its indexes and TOAST."""
        with contextlib.closing(self.raw_conn(url)) as conn:
            conn.execute("VACUUM ANALYZE")
            others = [
                str(r[0])
                for r in conn.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
                    " ORDER BY tablename"
                )
                if str(r[0]).startswith("message_") and r[0] not in TABLES
            ]
            return {
                t: int(conn.execute("SELECT pg_total_relation_size(%s)", (t,)).fetchone()[0])
                for t in (*TABLES, *others)
            }

    def fig_size(self) -> None:
        """``pg_total_relation_size`` per table (heap, TOAST and indexes, the GIN included)."""
        state = self._state()
        plugin = self.table_sizes(state.plugin_path)
        base = self.table_sizes(state.baseline_path)
        with contextlib.closing(self.raw_conn(state.plugin_path)) as conn:
            gin = int(
                conn.execute("SELECT pg_relation_size('ix_message_index_body_tsv')").fetchone()[0]
            )
        text_bytes = state.raw_text_bytes
        self.add(
            Row("size: raw indexed text", "MB", text_bytes / 1e6, text_bytes / 1e6, 1.0,
                "printed", None, note=f"{state.index_rows:,} rows")
        )  # fmt: skip
        for name in dict.fromkeys((*plugin, *base)):
            p, b = plugin.get(name), base.get(name)
            share = (p or 0) / text_bytes if text_bytes else 0.0
            self.add(
                Row(f"size: {name}", "MB", None if p is None else p / 1e6,
                    None if b is None else b / 1e6, ratio(p, b), "printed", None,
                    note=f"{share:.2f}× raw text")
            )  # fmt: skip
        total_p, total_b = sum(plugin.values()), sum(base.values())
        self.add(
            Row("size: all tables", "MB", total_p / 1e6, total_b / 1e6, ratio(total_p, total_b),
                "printed", None,
                note=f"{total_p / text_bytes:.2f}× raw text" if text_bytes else "")
        )  # fmt: skip
        self.add(
            Row("size: GIN index / raw text", "x", gin / text_bytes if text_bytes else None,
                None, None, "printed", None, note=f"{gin / 1e6:,.1f} MB (plugin)")
        )  # fmt: skip
        self.details["size"] = {
            "plugin": plugin,
            "baseline": base,
            "ginBytes": gin,
            "rawTextBytes": text_bytes,
        }

    # -- pending probe -----------------------------------------------------------------------

    def fig_pending(self) -> None:
        """A search right after another connection committed (``any_pending``'s memo misses,
        the probe reads every session) vs the same search with nothing committed in between
        (memo hit); and the probe statement alone: the one the plugin runs on a database at
        its head, which keeps the pending marks (revision 0014: the marked sessions, not every
        session, are read)."""
        from openclaw_fts.index.pending import pending_probe_sql

        state = self._state()
        if not state.queries:
            state.queries = self.pick_queries()
        q = state.queries["rare"][0]
        store = self.store(state.plugin_path)
        callers = self.callers()
        other = self.raw_conn(state.baseline_path)  # any database: the snapshot is cluster-wide
        other.execute("CREATE TABLE IF NOT EXISTS bench_tick (n int)")
        probe = self.raw_conn(state.plugin_path)
        probe_sql = pending_probe_sql(marked=True)
        sessions = int(probe.execute("SELECT count(*) FROM openclaw_sessions").fetchone()[0])
        plan = "\n".join(
            str(r[0]) for r in probe.execute("EXPLAIN (ANALYZE, COSTS OFF) " + probe_sql)
        )
        details: dict[str, Any] = {"sessions": sessions, "query": q.text, "probePlan": plan}
        probe_ms: list[float] = []
        for _ in range(PENDING_REPS):
            t0 = time.perf_counter()
            probe.execute(probe_sql).fetchone()
            probe_ms.append(ms(time.perf_counter() - t0))
        for vis in ("all", "tree"):
            caller = callers[vis]
            store.search(caller, q.text)
            hit: list[float] = []
            miss: list[float] = []
            for i in range(PENDING_REPS):
                for side in ("hit", "miss") if i % 2 == 0 else ("miss", "hit"):
                    if side == "miss":
                        other.execute("INSERT INTO bench_tick VALUES (1)")  # autocommit: a commit
                    t0 = time.perf_counter()
                    store.search(caller, q.text)
                    (miss if side == "miss" else hit).append(ms(time.perf_counter() - t0))
            r = ratio(pct(miss, 50), pct(hit, 50))
            self.add(
                Row(
                    f"pending: search {vis} rare, commit just before",
                    "ms",
                    pct(miss, 50),
                    pct(hit, 50),
                    r,
                    "printed",
                    None,
                    plugin_p95=pct(miss, 95),
                    baseline_p95=pct(hit, 95),
                    ratio_p95=ratio(pct(miss, 95), pct(hit, 95)),
                    note="baseline column: the same search, nothing committed in between "
                    "(memo hit)",
                )
            )
            details[vis] = {"missMs": _dist(miss), "hitMs": _dist(hit)}
        self.add(
            Row(
                f"pending: any_pending probe alone ({sessions:,} sessions)",
                "ms",
                pct(probe_ms, 50),
                None,
                None,
                f"≤ {GOAL_PENDING_PROBE_MS:g} ms",
                pct(probe_ms, 50) <= GOAL_PENDING_PROBE_MS,
                plugin_p95=pct(probe_ms, 95),
                note="the statement any_pending runs on a memo miss (the marked sessions: 0014)",
            )
        )
        details["probeMs"] = _dist(probe_ms)
        other.execute("DROP TABLE bench_tick")
        other.close()
        probe.close()
        store.close()
        self.details["pending"] = details

    # -- backfill ------------------------------------------------------------------------------

    backfill_goal = False

    def backfill_target(self, what: str, *, migrated: bool) -> Any:
        url = self.database("backfill_" + what.replace("-", "_"))
        if migrated:
            self.migrated(url)
        return url

    def discard(self, path: Any) -> None:
        self.drop(str(path))

    # -- schema upgrade ------------------------------------------------------------------------

    def fig_upgrade(self) -> None:
        """``alembic upgrade`` 0001 → head of a database holding the corpus's events; the
        sessions must be left pending (the index is built by ``reconcile``, not the upgrade)."""
        from openclaw_fts import TranscriptStore, migrate
        from openclaw_fts.engine import make_engine

        self.ensure_folder()
        url = self.database("upgrade")
        self.migrated(url, UPGRADE_FROM)
        base = pgraw.Baseline(url)
        n_events, _ = base.import_dir(self.folder, index=False)
        base.close()
        with contextlib.closing(self.raw_conn(url)) as conn:
            conn.execute("VACUUM ANALYZE")
            size = int(conn.execute("SELECT pg_database_size(current_database())").fetchone()[0])
        engine = make_engine(url)
        with engine.connect() as c:  # open the pool's connection outside the timing
            c.exec_driver_sql("SELECT 1")
        t0 = time.perf_counter()
        with self.plugin_call():
            migrate.upgrade(engine)
        plugin_s = time.perf_counter() - t0
        engine.dispose()
        store = TranscriptStore(url, background=False, upgrade=False)
        status = store.index_status()
        store.close()
        sessions = len(self.corpus.sessions)
        left_pending = int(status["pending"])
        self.add(
            Row(
                "schema upgrade 0001 → head",
                "s",
                plugin_s,
                None,
                None,
                f"< {GOAL_UPGRADE_S:g} s, sessions left pending",
                plugin_s < GOAL_UPGRADE_S and left_pending == sessions,
                note=f"{n_events:,} events, {size / 1e6:,.0f} MB db; {left_pending:,} of "
                f"{sessions:,} sessions pending after it; no raw baseline",
            )
        )
        self.details["upgrade"] = {
            "events": n_events,
            "dbBytes": size,
            "pendingAfter": left_pending,
            "sessions": sessions,
        }
        self.drop(url)

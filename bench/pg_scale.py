"""PostgreSQL at scale: ``python -m bench.pg_scale --sizes 100k,1m`` (messages per size).

For each size, on a fresh throwaway server (``tests/pgserver.py`` loaded by path, with settings
for a large load): a corpus of agents, sessions and subagents is bulk-loaded with ``COPY`` (the
rows the plugin writes, computed by the plugin's own pure functions: ``transcript.index_row``,
``tokens.index_body``, the derived event columns; sessions left exact), the GIN index built
after the load, ``ANALYZE``, the words it names as frequent promoted (``catch_up_lists``: a
host's store tracks them as it grows; untracked, they were all promoted inside the first live
commit at a boundary); then, through ``TranscriptStore``:

* ``search`` p50 / p95 per query class (rare / common / very common word) × visibility
  (``self``, ``tree``, ``agent``, ``all`` with agent-to-agent on), on the flat layout, on a hot
  standby (``read_url``, ``pg_basebackup -R`` of the loaded server; ``--no-standby`` skips it),
  and on the layout partitioned by agent (``migrate.partition_by_agent``, its time measured);
* the live ingest rate at that size (``append_many`` of 100 events, new sessions);
* the size of the index (``message_index`` with its GIN index) per message, and of all tables;
* the resident memory of this process (the plugin's) after the searches.

``--compare-gin`` adds a layout, ``flat-gin``: the flat database searched with no narrow
caller read row by row (``read.NARROW_SCAN_EVENTS`` below every caller: the plan the
statement had before it), interleaved with the others, so one run shows both plans.

Invariant: every timed search is a ``TranscriptStore.search`` of the plugin, measured with
``time.perf_counter`` around the call; the load is not the plugin's write path (its rate is
reported as "bulk load", apart from the live ingest rate). Results: ``bench/results/
pg-scale-<sizes>.json`` and a Markdown table on stdout (``--table FILE`` prints it again).
Run big sizes under ``nice`` in the background; the machine is shared.

Load once, measure many times: ``--keep DIR`` (one size) leaves the loaded server's folder
(both databases, after the partitioning) in ``DIR`` with a ``kept.json`` naming its size and
seed, and prints the command that reuses it; ``--reuse DIR`` starts a server on that folder and
runs only the measuring steps (searches, standby, ingest; ``--unpartition`` then times
``migrate.unpartition_by_agent`` on the partitioned database, which it converts back). Without
``--keep`` the server's folder is removed at the end, as before. The query words and callers
come from their own generator (seeded from ``--seed``), so a reused folder is searched with
the same words as the run that loaded it.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import random
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import psycopg

from bench.baseline import dump
from bench.corpus import ZipfWords, _pseudo_words, message_event, parse_size
from bench.pg_baseline import _pg_event_row, index_tuple
from bench.pg_run import _load_pgserver
from openclaw_fts import AgentToAgent, Caller, TranscriptStore, migrate, transcript
from openclaw_fts.engine import make_engine
from openclaw_fts.index.base import backend
from openclaw_fts.index.impact import IMPACT_TABLE, TERMS_TABLE
from openclaw_fts.index.postgresql import read as pg_read
from openclaw_fts.index.postgresql.impact import DUE_TRIGGER
from openclaw_fts.index.postgresql.impact import promote as promote_all
from openclaw_fts.rows import INDEX_VERSION

RESULTS = Path(__file__).resolve().parent / "results"
#: Messages per session, agents, the share of sessions that are subagents of another.
MESSAGES_PER_SESSION = 50
AGENTS = 100
SUBAGENT_SHARE = 0.1
#: Vocabulary size and Zipf exponent of the message words; words per message.
VOCABULARY = 30_000
ZIPF_EXPONENT = 1.05
WORDS_PER_MESSAGE = (6, 24)
#: Frequency ranks of the query classes' words (0: the most frequent word).
CLASS_RANKS = {"rare": (15_000, 25_000), "common": (100, 300), "very common": (0, 5)}
VISIBILITIES = ("self", "tree", "agent", "all")
#: The visibilities whose callers ``read.NARROW_SCAN_EVENTS`` concerns.
NARROW_VISIBILITIES = ("self", "tree")
#: Searches per (class, visibility) cell; partitions of the partitioned layout.
SEARCHES_PER_CELL = 20
PARTITIONS = 16
#: Live ingest: batches of events appended through the store at each size.
INGEST_BATCHES = 20
INGEST_BATCH_EVENTS = 100
#: Server settings for the load (the test server's are for tiny databases).
LOAD_SETTINGS = {
    "shared_buffers": "2GB",
    "maintenance_work_mem": "1GB",
    "work_mem": "32MB",
    "max_wal_size": "16GB",
    "checkpoint_timeout": "30min",
    "max_parallel_maintenance_workers": "1",
    "autovacuum": "off",
    # Commits wait for their WAL record (a production setting; the test server's is off): the
    # standby fence is then the flush position (index/postgresql/replica.py).
    "synchronous_commit": "on",
}
T0_MS = 1_790_000_000_000
#: Sessions whose events and index rows go in one pair of COPY statements.
CHUNK_SESSIONS = 2_000
#: Loaded messages at which the load stops to run the reconciler's promotion pass
#: (``impact_lists.promote_if_free``), as a host's store crosses them while it ingests: the impact
#: lists of the words frequent by then are written, and the rest of the load's rows join them
#: through the plugin's insert trigger. Without the GIN index (built after the load) each pass
#: counts by scanning the table (171 s at 200k on the shared machine), so past 200k the words
#: that grow frequent later are left to the store's ``reconcile()`` at the end, with the GIN
#: index: the same words (those of the newest rows), their lists cut at the full size.
PROMOTE_AT = (10_000, 20_000, 50_000, 100_000, 200_000)
#: The loaded database, and its copy converted to the partitioned layout.
FLAT_DB = "scale_flat"
#: The file of a kept server's folder naming what it holds (``--keep`` / ``--reuse``).
KEPT_FILE = "kept.json"
PARTITIONED_DB = "scale_partitioned"
COPY_EVENTS = (
    "COPY transcript_events (session_id, seq, event_id, parent_id, type, role, target_id, "
    "side, timestamp_ms, event) FROM STDIN"
)
COPY_INDEX = (
    "COPY message_index (session_id, seq, event_id, role, timestamp_ms, body, sess) FROM STDIN"
)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def rss_mb() -> float:
    """This process's resident memory now (MiB)."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


class Corpus:
    """Agents, sessions (10 % subagents of another session of the same agent) and messages of
    Zipf-distributed pseudo-words (:class:`bench.corpus.ZipfWords`, the text model of the main
    corpus too), generated from one seed. Plainer than :class:`bench.corpus.Corpus` (text
    messages only, no rewinds, CJK or tool calls) so that millions of rows load quickly."""

    def __init__(self, messages: int, seed: int) -> None:
        self.rng = random.Random(seed)
        self.vocabulary = ZipfWords(_pseudo_words(self.rng, VOCABULARY, set()), ZIPF_EXPONENT)
        self.words = self.vocabulary.words
        n_sessions = max(AGENTS, messages // MESSAGES_PER_SESSION)
        self.messages = messages
        self.sessions: list[tuple[str, str, str, str | None]] = []  # id, key, agent, spawner
        for n in range(n_sessions):
            agent = f"agent{n % AGENTS}"
            spawner = None
            if n >= AGENTS and self.rng.random() < SUBAGENT_SHARE:
                parent = self.sessions[n - AGENTS]  # the same agent (n - AGENTS ≡ n mod AGENTS)
                spawner = parent[1]
                key = f"agent:{agent}:subagent:{n}"
            else:
                key = f"agent:{agent}:s{n}"
            self.sessions.append((f"sess-{n}", key, agent, spawner))

    def text(self) -> str:
        k = self.rng.randint(*WORDS_PER_MESSAGE)
        return " ".join(self.vocabulary.draw(self.rng, k))

    def events(self, count: int, prefix: str = "m") -> list[dict[str, Any]]:
        out = []
        parent: str | None = None
        for i in range(count):
            event_id = f"{prefix}{i}"
            role = "user" if i % 2 == 0 else "assistant"
            message = {"role": role, "content": self.text()}
            out.append(message_event(event_id, parent, T0_MS + i * 1000, message))
            parent = event_id
        return out

    def per_session(self) -> Iterator[tuple[tuple[str, str, str, str | None], int]]:
        base, extra = divmod(self.messages, len(self.sessions))
        for n, session in enumerate(self.sessions):
            yield session, base + (1 if n < extra else 0)

    def query_words(self, cls: str, rng: random.Random) -> list[str]:
        lo, hi = CLASS_RANKS[cls]
        return rng.sample(self.words[lo:hi], min(SEARCHES_PER_CELL, hi - lo))


def _libpq(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://")


def load(url: str, corpus: Corpus) -> dict[str, Any]:
    """Bulk load with COPY: sessions, events, index rows, exact index state and branches; the
    impact lists as a host's store has them after ingesting through the plugin (no
    ``optimize()``): the reconciler's promotion pass at each of :data:`PROMOTE_AT`, the
    plugin's insert trigger adding the later rows of tracked words, then, with the GIN index
    built, the store's own ``reconcile()``, the ``ANALYZE`` and :func:`catch_up_lists` (the
    words the statistics name: a host's autovacuum ``ANALYZE`` names them as the index grows
    and its next boundary commits promote them, a few at a time; left untracked here, the
    first live commit at a boundary promoted ~2,700 of them at once, minutes). The commit-time
    check (``DUE_TRIGGER``) is off during the COPY: without the GIN index its counts would be
    scans of the whole table, a cost of this bulk load that no host meets."""
    started = time.perf_counter()
    engine = make_engine(url)
    promoted: list[dict[str, Any]] = []
    checkpoints = [n for n in PROMOTE_AT if n < corpus.messages]

    def promote(conn: psycopg.Connection[Any], done: int) -> None:
        conn.commit()
        began = time.perf_counter()
        with engine.begin() as sa:
            backend(sa).impact_lists.promote_if_free(sa)
        promoted.append({"atMessages": done, "seconds": time.perf_counter() - began})
        log(f"  promotion pass at {done:,} messages: {promoted[-1]['seconds']:.1f}s")

    try:
        with psycopg.connect(_libpq(url)) as conn:
            conn.execute("DROP INDEX ix_message_index_body_tsv")
            conn.execute(f"ALTER TABLE message_index DISABLE TRIGGER {DUE_TRIGGER}")
            with conn.cursor() as cur:
                with cur.copy(
                    "COPY openclaw_sessions (session_id, session_key, agent_id, spawned_by, "
                    "last_seq) FROM STDIN"
                ) as copy:
                    for (sid, key, agent, spawner), count in corpus.per_session():
                        copy.write_row((sid, key, agent, spawner, count - 1))
                chunk: list[tuple[str, list[dict[str, Any]]]] = []
                done = pending = 0
                for (sid, _key, _agent, _spawner), count in corpus.per_session():
                    chunk.append((sid, corpus.events(count)))
                    pending += count
                    due = bool(checkpoints) and done + pending >= checkpoints[0]
                    if len(chunk) >= CHUNK_SESSIONS or due:
                        done += _copy_chunk(cur, chunk)
                        chunk, pending = [], 0
                        log(f"  loaded {done:,} / {corpus.messages:,} messages")
                        if due:
                            checkpoints.pop(0)
                            promote(conn, done)
                done += _copy_chunk(cur, chunk)
                cur.execute(
                    "INSERT INTO openclaw_index_state (session_id, indexed_seq, indexed_leaf, "
                    "needs_rebuild, generation, index_version) SELECT s.session_id, s.last_seq, "
                    "e.event_id, FALSE, 0, %s FROM openclaw_sessions AS s JOIN transcript_events "
                    "AS e ON e.session_id = s.session_id AND e.seq = s.last_seq",
                    (INDEX_VERSION,),
                )
                cur.execute(
                    "INSERT INTO openclaw_branches (session_id, tip_id, tip_seq, is_active) "
                    "SELECT session_id, indexed_leaf, indexed_seq, TRUE FROM openclaw_index_state"
                )
            conn.execute(f"ALTER TABLE message_index ENABLE TRIGGER {DUE_TRIGGER}")
            conn.commit()
            loaded = time.perf_counter()
            conn.execute(
                "CREATE INDEX ix_message_index_body_tsv ON message_index USING gin (body_tsv)"
            )
            conn.commit()
            indexed = time.perf_counter()
            with TranscriptStore(url, background=False) as store:
                reconciled = store.reconcile()
            passed = time.perf_counter()
            conn.autocommit = True
            conn.execute("VACUUM ANALYZE")
            analyzed = time.perf_counter()
            caught_up = catch_up_lists(url)
            conn.execute(f"ANALYZE {IMPACT_TABLE}, {TERMS_TABLE}")
            row = conn.execute(
                f"SELECT (SELECT count(*) FROM {TERMS_TABLE}), "
                f"(SELECT count(*) FROM {IMPACT_TABLE})"
            ).fetchone()
    finally:
        engine.dispose()
    assert row is not None
    return {
        "copySeconds": loaded - started,
        "ginBuildSeconds": indexed - loaded,
        "reconcileSeconds": passed - indexed,
        "analyzeSeconds": analyzed - passed,
        "bulkMessagesPerSecond": corpus.messages / (time.perf_counter() - started),
        "lists": "as ingested: promotion passes while loading, reconcile() at the end",
        "promotionPasses": promoted,
        "reconcile": {k: v for k, v in reconciled.items() if isinstance(v, int | float | bool)},
        "caughtUp": caught_up,
        "trackedWords": int(row[0]),
        "listRows": int(row[1]),
    }


def catch_up_lists(url: str) -> dict[str, Any]:
    """Promote every word the planner's statistics and the newest rows name as frequent, in one
    transaction (``impact.promote``, what ``optimize`` runs), timed apart from every measure.

    A host's store written through the plugin is promoted as it grows: each autovacuum
    ``ANALYZE`` names the words grown frequent since the last one, and the next commit that
    crosses a ``PROMOTE_EVERY_ROWS`` boundary tracks them. The bulk load's ``ANALYZE`` names
    every frequent word of 5m rows at once (2,689 untracked at 5m): left so, the first live
    ``append_many`` at a boundary promoted them all inside its commit (more than three minutes,
    ~50-400 ms a word), and the searches ranked every match of words a host tracks. Returns
    the words promoted (0 on a folder already caught up) and the seconds."""
    started = time.perf_counter()
    engine = make_engine(url)
    try:
        with engine.begin() as sa:
            words = promote_all(sa)
    finally:
        engine.dispose()
    return {"words": words, "seconds": time.perf_counter() - started}


def _copy_chunk(cur: psycopg.Cursor[Any], chunk: list[tuple[str, list[dict[str, Any]]]]) -> int:
    """One COPY of the chunk's events, then one of their index rows; returns the events."""
    with cur.copy(COPY_EVENTS) as copy:
        for sid, events in chunk:
            for seq, event in enumerate(events):
                copy.write_row(_pg_event_row(sid, seq, event, dump(event)))
    with cur.copy(COPY_INDEX) as copy:
        for sid, events in chunk:
            for seq, event in enumerate(events):
                row = transcript.index_row(seq, event)
                if row is not None:
                    copy.write_row(index_tuple(sid, row, f"s{sid}", 0))
    return sum(len(events) for _, events in chunk)


def sizes(url: str) -> dict[str, Any]:
    """Bytes of the index (``message_index`` or every partition of ``message_index_by_agent``,
    with their indexes), of its GIN indexes, and of the database, per message."""
    with psycopg.connect(_libpq(url)) as conn:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM message_index), "
            "CASE WHEN to_regclass('message_index_by_agent') IS NULL "
            "THEN pg_total_relation_size('message_index') ELSE "
            "(SELECT sum(pg_total_relation_size(relid)) "
            "FROM pg_partition_tree(to_regclass('message_index_by_agent'))) END, "
            "(SELECT sum(pg_relation_size(i.indexrelid)) FROM pg_index AS i "
            "JOIN pg_class AS c ON c.oid = i.indexrelid JOIN pg_am AS a ON a.oid = c.relam "
            "WHERE a.amname = 'gin'), "
            "pg_database_size(current_database())"
        ).fetchone()
    assert row is not None
    n, index_bytes, gin, total = (int(v or 0) for v in row)
    return {
        "messages": n,
        "indexBytes": index_bytes,
        "indexBytesPerMessage": index_bytes / max(n, 1),
        "ginBytesPerMessage": gin / max(n, 1),
        "databaseBytes": total,
        "databaseBytesPerMessage": total / max(n, 1),
    }


def callers(corpus: Corpus, rng: random.Random) -> dict[str, list[Caller]]:
    spawners = [s for s in corpus.sessions if s[3] is not None]
    everyone = AgentToAgent(enabled=True, allow=["*"])
    picks = rng.sample(corpus.sessions, SEARCHES_PER_CELL)
    trees = rng.sample(spawners, min(SEARCHES_PER_CELL, len(spawners))) or picks
    return {
        "self": [Caller(s[1], visibility="self") for s in picks],
        "tree": [Caller(str(s[3]), visibility="tree") for s in trees],
        "agent": [Caller(s[1], visibility="agent") for s in picks],
        "all": [Caller(s[1], visibility="all", agent_to_agent=everyone) for s in picks],
    }


#: The layout measuring the flat database with every narrow caller answered by the GIN
#: index's match set joined to its sessions (``--compare-gin``: the plan before
#: ``read.NARROW_SCAN_EVENTS``; the same statement with its row-by-row branch gated off).
GIN_PLAN = "flat-gin"


@contextlib.contextmanager
def _plan_of(layout: str) -> Iterator[None]:
    """For :data:`GIN_PLAN`'s searches only: no caller's sessions are few enough to be read
    row by row."""
    if layout != GIN_PLAN:
        yield
        return
    saved = pg_read.NARROW_SCAN_EVENTS
    pg_read.NARROW_SCAN_EVENTS = -1
    try:
        yield
    finally:
        pg_read.NARROW_SCAN_EVENTS = saved


def search_grid(
    stores: dict[str, TranscriptStore],
    who: dict[str, list[Caller]],
    words: dict[str, list[str]],
) -> dict[str, dict[str, Any]]:
    """p50 / p95 per (visibility, class) for each layout's store, the layouts interleaved
    search by search (rotating which goes first) so they share the machine's load."""
    grids: dict[str, dict[str, Any]] = {layout: {} for layout in stores}
    for vis in VISIBILITIES:
        for cls, qs in words.items():
            # The GIN plan differs from the flat layout's for narrow callers only.
            layouts = [lo for lo in stores if lo != GIN_PLAN or vis in NARROW_VISIBILITIES]
            took: dict[str, list[float]] = {layout: [] for layout in layouts}
            hits = dict.fromkeys(layouts, 0)
            for layout in layouts:
                store = stores[layout]
                with _plan_of(layout):
                    store.search(who[vis][0], qs[0])  # warm the plan and the pages once
            for n, (caller, word) in enumerate(zip(itertools.cycle(who[vis]), qs, strict=False)):
                for layout in layouts[n % len(layouts) :] + layouts[: n % len(layouts)]:
                    with _plan_of(layout):
                        started = time.perf_counter()
                        found = stores[layout].search(caller, word)
                        took[layout].append((time.perf_counter() - started) * 1000)
                    hits[layout] += len(found.get("results", []))
            for layout in layouts:
                ms = sorted(took[layout])
                grids[layout][f"{vis}|{cls}"] = {
                    "p50": statistics.median(ms),
                    "p95": ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))],
                    "n": len(ms),
                    "meanHits": hits[layout] / len(ms),
                }
    return grids


def ingest(store: TranscriptStore, corpus: Corpus, label: str) -> dict[str, Any]:
    took = []
    run = time.strftime("%Y%m%dT%H%M%S", time.gmtime())  # a reused server keeps earlier runs'
    for b in range(INGEST_BATCHES):
        sid = f"ingest-{label}-{run}-{b}"
        store.create_session(sid, f"agent:agent{b % AGENTS}:ingest{run}-{b}")
        events = corpus.events(INGEST_BATCH_EVENTS, prefix="i")
        started = time.perf_counter()
        store.append_many(sid, events)
        took.append(time.perf_counter() - started)
    return {
        "eventsPerSecond": INGEST_BATCHES * INGEST_BATCH_EVENTS / sum(took),
        "batchP50Ms": statistics.median(took) * 1000,
    }


def _start(pgserver: Any, args: argparse.Namespace) -> Any:
    """A server for one size: a fresh one (in ``--keep DIR`` when given, else a temporary
    folder), or the one kept in ``--reuse DIR`` started again."""
    pgserver.SERVER_SETTINGS.update(LOAD_SETTINGS)
    server = pgserver.PgServer(pgserver.find_bindir())
    if args.reuse:
        server.root = Path(args.reuse).resolve()
        server.start_again()
        return server
    if args.keep:
        keep = Path(args.keep).resolve()
        keep.mkdir(parents=True, exist_ok=True)
        keep.chmod(0o755)  # the server user must reach the folder made inside it
        tempfile.tempdir = str(keep)  # PgServer.start makes its folder with mkdtemp
    try:
        return server.start()
    finally:
        tempfile.tempdir = None


def _finish(server: Any, args: argparse.Namespace, kept: dict[str, Any]) -> None:
    """Stop the server; keep its folder (``--keep``, ``--reuse``) or remove it."""
    if not (args.keep or args.reuse):
        server.stop()
        return
    server.shutdown("fast")
    if args.keep and kept:
        (server.root / KEPT_FILE).write_text(json.dumps(kept, indent=1))
        log(
            f"kept the loaded server in {server.root}; measure it again with "
            f"`python -m bench.pg_scale --reuse {server.root}`; remove it with "
            f"`rm -rf {server.root}`"
        )


def _load_size(server: Any, size: int, args: argparse.Namespace, out: dict[str, Any]) -> None:
    """Fresh server: create and load the flat database, copy and partition it (into ``out``)."""
    flat_url = server.url(FLAT_DB)
    parted_url = server.url(PARTITIONED_DB)
    with psycopg.connect(_libpq(server.url()), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {FLAT_DB}")
    corpus = Corpus(size, args.seed)
    TranscriptStore(flat_url, background=False).close()
    log(f"size {size:,}: loading {len(corpus.sessions):,} sessions")
    out["load"] = load(flat_url, corpus)
    log(f"  load: {out['load']}")
    out["sizes"] = sizes(flat_url)
    if args.no_partition:
        return
    # The same rows in a second database, converted: its time is the migration's.
    with psycopg.connect(_libpq(server.url()), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {PARTITIONED_DB} TEMPLATE {FLAT_DB}")
    engine = make_engine(parted_url)
    try:
        started = time.perf_counter()
        out["partitionRows"] = migrate.partition_by_agent(engine, args.partitions)
        out["partitionSeconds"] = time.perf_counter() - started
    finally:
        engine.dispose()
    out["partitions"] = args.partitions
    out["partitionedSizes"] = sizes(parted_url)
    log(f"  partitioned a copy in {out['partitionSeconds']:.1f}s")


def run_size(pgserver: Any, size: int, args: argparse.Namespace) -> dict[str, Any]:
    server = _start(pgserver, args)
    standby = None
    out: dict[str, Any] = {"messages": size, "agents": AGENTS}
    kept: dict[str, Any] = {}
    try:
        flat_url = server.url(FLAT_DB)
        parted_url = server.url(PARTITIONED_DB)
        if args.reuse:
            kept = json.loads((server.root / KEPT_FILE).read_text())
            out.update(kept["loaded"])
            out["reusedFrom"] = kept["createdAt"]
        else:
            _load_size(server, size, args, out)
            kept = {
                "messages": size,
                "seed": args.seed,
                "createdAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "loaded": dict(out),
            }
            if args.keep:  # written now: a run stopped while measuring still leaves it
                (server.root / KEPT_FILE).write_text(json.dumps(kept, indent=1))
            if args.load_only:
                return out
        if args.reuse:  # a folder kept before ``load`` caught its lists up: do it now, once
            out["caughtUpOnReuse"] = {FLAT_DB: catch_up_lists(flat_url)}
            if "partitionedSizes" in out:
                out["caughtUpOnReuse"][PARTITIONED_DB] = catch_up_lists(parted_url)
            log(f"  lists caught up: {out['caughtUpOnReuse']}")
        corpus = Corpus(size, args.seed)
        out["sessions"] = len(corpus.sessions)
        if not args.no_standby:
            started = time.perf_counter()
            standby = server.standby()
            out["standbyBasebackupSeconds"] = time.perf_counter() - started
        rng = random.Random(args.seed + 1)
        who = callers(corpus, rng)
        words = {cls: corpus.query_words(cls, rng) for cls in CLASS_RANKS}
        out["rssBeforeMb"] = rss_mb()
        with contextlib.ExitStack() as stack:
            stores = {
                "flat": stack.enter_context(TranscriptStore(flat_url, background=False)),
            }
            if "partitionedSizes" in out:
                stores["partitioned"] = stack.enter_context(
                    TranscriptStore(parted_url, background=False)
                )
            if args.compare_gin:
                stores[GIN_PLAN] = stack.enter_context(TranscriptStore(flat_url, background=False))
            if standby is not None:
                stores["standby"] = stack.enter_context(
                    TranscriptStore(flat_url, read_url=standby.url(FLAT_DB), background=False)
                )
                stores["standby"].read_after()
            out.update(search_grid(stores, who, words))
            out["rssAfterMb"] = rss_mb()
            log("  searches done")
            if standby is not None:
                standby.stop()  # before the ingest: its copy is not needed any more
                standby = None
            if not args.no_ingest:
                out["ingest"] = ingest(stores["flat"], corpus, "flat")
                if "partitioned" in stores:
                    out["partitionedIngest"] = ingest(stores["partitioned"], corpus, "partitioned")
                log(f"  ingest flat {out['ingest']}, partitioned {out.get('partitionedIngest')}")
        out["maxRssMb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        if args.unpartition and "partitionedSizes" in out:
            engine = make_engine(parted_url)
            try:
                started = time.perf_counter()
                out["unpartitionRows"] = migrate.unpartition_by_agent(engine)
                out["unpartitionSeconds"] = time.perf_counter() - started
            finally:
                engine.dispose()
            log(f"  unpartitioned in {out['unpartitionSeconds']:.1f}s")
    finally:
        if standby is not None:
            standby.stop()
        _finish(server, args, kept)
    return out


def _rate(run: dict[str, Any], step: str) -> str:
    """A live ingest rate of a run, or a dash where the run skipped the step."""
    return f"{run[step]['eventsPerSecond']:,.0f}" if step in run else "–"


def table(results: dict[str, Any]) -> str:
    """The Markdown tables of a result file."""
    runs = results["runs"]
    lines = [f"Command: `{results['command']}` ({results['createdAt']}, {results['machine']})", ""]
    lines.append(
        "| messages | sessions | bulk load msg/s | GIN build s | index B/msg (flat / partitioned) "
        "| GIN B/msg (flat / partitioned) | database B/msg | live ingest ev/s (flat / "
        "partitioned) | partitioning s (and back) | plugin RSS MB |"
    )
    lines.append("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in runs:
        flat, parted = r["sizes"], r.get("partitionedSizes")
        back = f" / {r['unpartitionSeconds']:.1f}" if "unpartitionSeconds" in r else ""
        p_index = f"{parted['indexBytesPerMessage']:.0f}" if parted else "–"
        p_gin = f"{parted['ginBytesPerMessage']:.0f}" if parted else "–"
        p_secs = f"{r['partitionSeconds']:.1f}" if "partitionSeconds" in r else "–"
        lines.append(
            f"| {r['messages']:,} | {r['sessions']:,} "
            f"| {r['load']['bulkMessagesPerSecond']:,.0f} | {r['load']['ginBuildSeconds']:.0f} "
            f"| {flat['indexBytesPerMessage']:.0f} / {p_index} "
            f"| {flat['ginBytesPerMessage']:.0f} / {p_gin} "
            f"| {flat['databaseBytesPerMessage']:.0f} "
            f"| {_rate(r, 'ingest')} / {_rate(r, 'partitionedIngest')} "
            f"| {p_secs}{back} | {r.get('rssAfterMb', float('nan')):.0f} |"
        )
    lines.append("")
    layouts = [k for k in ("flat", GIN_PLAN, "standby", "partitioned") if any(k in r for r in runs)]
    header = (
        "| visibility | class | "
        + " | ".join(
            f"{layout} {r['messages']:,}" for layout in layouts for r in runs if layout in r
        )
        + " |"
    )
    lines.append("Search p50 / p95 (ms), through `TranscriptStore.search`:")
    lines.append("")
    lines.append(header)
    lines.append("| --- | --- |" + " ---: |" * (header.count("|") - 3))
    for vis in VISIBILITIES:
        for cls in CLASS_RANKS:
            cells = []
            for layout in layouts:
                for r in runs:
                    if layout in r:
                        c = r[layout].get(f"{vis}|{cls}")
                        cells.append("–" if c is None else f"{c['p50']:.1f} / {c['p95']:.1f}")
            lines.append(f"| {vis} | {cls} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.pg_scale", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--sizes", default="100k,1m", help="messages per run, e.g. 100k,1m,10m")
    parser.add_argument("--partitions", type=int, default=PARTITIONS)
    parser.add_argument("--seed", type=int, default=20261204)
    parser.add_argument("--no-standby", action="store_true", help="skip the standby searches")
    parser.add_argument("--out", default=None, help="result file (default bench/results/...)")
    parser.add_argument("--table", default=None, help="print the tables of a result file")
    parser.add_argument("--keep", default=None, help="leave the loaded server in this folder")
    parser.add_argument("--reuse", default=None, help="measure the server kept in this folder")
    parser.add_argument("--no-ingest", action="store_true", help="skip the live ingest step")
    parser.add_argument(
        "--compare-gin",
        action="store_true",
        help=f"also search the flat database as {GIN_PLAN}: narrow callers through the GIN plan",
    )
    parser.add_argument(
        "--no-partition",
        action="store_true",
        help="flat layout only (no partitioned copy: its migration alone took 18 min at 10m)",
    )
    parser.add_argument(
        "--load-only", action="store_true", help="with --keep: load and partition, measure nothing"
    )
    parser.add_argument(
        "--unpartition",
        action="store_true",
        help="at the end, time migrate.unpartition_by_agent on the partitioned database",
    )
    args = parser.parse_args(argv)
    if args.reuse:
        kept = Path(args.reuse) / KEPT_FILE
        if not kept.is_file():
            parser.error(f"{args.reuse} holds no {KEPT_FILE}: not a folder --keep left")
        held = json.loads(kept.read_text())
        args.sizes, args.seed = str(held["messages"]), int(held["seed"])
    if args.keep and "," in args.sizes:
        parser.error("--keep takes one size")
    if args.load_only and not args.keep:
        parser.error("--load-only needs --keep (else the loaded server is removed unmeasured)")
    if args.keep and args.reuse:
        parser.error("--keep loads a new server, --reuse measures a kept one: pick one")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.table:
        print(table(json.loads(Path(args.table).read_text())))
        return 0
    pgserver = _load_pgserver()
    reason = pgserver.unavailable_reason()
    if reason is not None:
        raise SystemExit(f"cannot start a PostgreSQL server: {reason}")
    memory_gib = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**30
    results: dict[str, Any] = {
        "command": "python -m bench.pg_scale " + " ".join(sys.argv[1:] if argv is None else argv),
        "createdAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": f"{os.cpu_count()} cores, {memory_gib:.0f} GiB, shared",
        "runs": [],
    }
    out = Path(args.out) if args.out else RESULTS / f"pg-scale-{args.sizes.replace(',', '-')}.json"
    if args.load_only:  # nothing measured: no result file, which would replace a measured one
        run_size(pgserver, parse_size(args.sizes), args)
        return 0
    for label in args.sizes.split(","):
        results["runs"].append(run_size(pgserver, parse_size(label), args))
        out.write_text(json.dumps(results, indent=1))  # after each size: a partial run counts
    print(table(results))
    log(f"wrote {out}")
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        raise SystemExit(main())

"""The impact lists on PostgreSQL (:mod:`..impact`): kept by triggers, walked by search.

Invariant: every tracked word's list holds exactly the index rows whose ``body_tsv`` has the
word as a lexeme and whose impact reaches the word's ``min_impact``, each with ``impact =
ts_rank(body_tsv, word, 1)``, the very score the exact path ranks by (a one-lexeme query's
``ts_rank`` depends on the row alone), so a list's order IS the exact order, and with its index
row's ``timestamp_ms`` (:data:`ROW_TIME_COLUMN`, revision 0013; an index row's time never
changes), so a walk with a time window drops the list rows outside it before it joins them to
their index rows. The rows are written by an ``AFTER INSERT`` statement trigger on the index
rows (:data:`INSERT_TRIGGER`, from the rows' transition table, in the inserting statement's
transaction, whatever inserted them) and removed with their index row (the foreign key's
cascade on the flat layout; a row trigger, :data:`DELETE_TRIGGER`, on the partitioned one);
a word becomes tracked only in the statement that writes its whole list
(:data:`PROMOTE_FUNCTION`). Its candidates are the plugin's own counts
(:data:`CANDIDATES_FUNCTION`, revision 0010): the words of the newest index rows held there at
a rate that would make them frequent in the whole index, each counted through the GIN index up
to the threshold — no scan of the index, and no ``ANALYZE`` needed (before 0010 they came from
the planner's statistics only, which exist after one: a host that wrote and searched at once,
without ``optimize``, had no lists; those statistics still add candidates when there are any).
Tracked words are plain ASCII letters and digits, which are their own ``tsquery`` text. The
DDL here is what revisions 0007, 0009, 0010, 0012 and 0013 create (they keep frozen copies).

Why that holds under concurrency (revision 0009). A promotion reads the index rows that are
committed; a writer's trigger joins the words that are tracked in ITS snapshot. Left alone, a
writer whose transaction is open while a word is promoted writes rows holding the word that
neither side lists (issue 42: the promotion cannot see them, the trigger did not know the
word). So the two are serialised by one transaction-level advisory lock,
:data:`PROMOTION_LOCK_KEY`:

* every statement that inserts or deletes index rows takes it in SHARE mode (the insert
  trigger, before it reads the tracked words; :data:`GUARD_TRIGGER` before a delete), and
  keeps it until its transaction ends;
* a promotion, and a rebuild of lists (:func:`rebuild`, :func:`rebuild_words`), take it
  EXCLUSIVE: it is granted only once every transaction that wrote index rows has committed
  or rolled back, and until the promotion commits no writer gets past the lock.

Under READ COMMITTED (PostgreSQL's default, and every transaction of the plugin) each
statement of a plpgsql function takes a fresh snapshot, so the promotion's scans, run after
its lock, see every row of every writer that went before it, and a writer's trigger, run
after its lock, sees every word promoted before it: both sides list each row exactly once.
A transaction under REPEATABLE READ or SERIALIZABLE keeps its first snapshot, so a lock
cannot make it see a later promotion: the promoting transaction records its id in
:data:`PROMOTED_SEQUENCE` (a sequence: not transactional, seen at once), and such a writer's
trigger raises ``serialization_failure`` (SQLSTATE 40001) when that id is not visible in its
snapshot, which is the error these isolation levels already ask their callers to retry; a
promotion itself does nothing outside READ COMMITTED. Crashes need nothing more: a list row
is written in its index row's transaction and a word with its whole list, so a SIGKILL or an
immediate restart rolls both back together; the advisory locks die with their transaction.

Words are promoted in a transaction of their own or at a commit, never in the middle of a
writer's: the insert trigger no longer promotes (a writer that held the exclusive lock and then
waited for a row lock held by a writer waiting for the share lock would deadlock); a deferred
constraint trigger, :data:`DUE_TRIGGER`, fires at the commit of a transaction that inserted an
index row whose id is a multiple of ``PROMOTE_EVERY_ROWS`` and promotes then (at most
``PROMOTE_MAX_WORDS`` words, the most frequent first: revision 0012), when the
exclusive lock is free at once (``pg_try_advisory_xact_lock``: it never waits, so it cannot
deadlock; when other writers are busy the next boundary, ``optimize`` or a reconciler's pass
promotes: :func:`promote_if_free`, which never waits either; a pass runs only when
``store.reconcile()`` is called or a search that finds sessions pending starts one in the
background, never after appends indexed inline). Cost on the append path: one
uncontended share lock per statement (measured in docs/postgresql.md).

A list found drifted anyway (``check``, a list edited by hand) is never trusted silently: its
word is marked untrusted (:func:`distrust`; ``avg_len`` = :data:`UNTRUSTED`: PostgreSQL's
lists do not use that column), a search takes the exact path for it (:func:`walk_sql`,
:data:`TRACKED_SQL`), the reconciler rebuilds the untrusted lists and ``optimize`` checks and
rebuilds every list (:func:`repair`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, text

from ..impact import (
    FREQUENT_TERM_MIN_DOCS,
    IMPACT_TABLE,
    LIST_DIVISOR,
    LIST_MIN_ROWS,
    MAX_TERM_CHARS,
    PROMOTE_EVERY_ROWS,
    PROMOTE_MAX_WORDS,
    TERMS_TABLE,
    WALK_CAP_ROWS,
)
from ..memo import SchemaFeature
from .names import CONTENT_TABLE, TSVECTOR_COLUMN

INSERT_FUNCTION = "openclaw_fts_impact_insert"
INSERT_TRIGGER = "message_index_impact_insert"
DELETE_FUNCTION = "openclaw_fts_impact_delete"
DELETE_TRIGGER = "message_index_impact_delete"
#: The list rows' copy of their index row's time (revision 0013): a walk with a ``since`` /
#: ``until`` drops the rows outside the window before joining them to their index rows.
ROW_TIME_COLUMN = "timestamp_ms"
PROMOTE_FUNCTION = "openclaw_fts_impact_promote"
#: The foreign key of the flat layout (rows follow their index row).
ROW_FOREIGN_KEY = "fk_message_impact_row_id"
#: A tracked word as a regular expression (``impact.TERM_PATTERN``).
TERM_REGEX = f"^[a-z0-9]{{1,{MAX_TERM_CHARS}}}$"
_NEW_ROWS = "openclaw_fts_new_rows"
log = logging.getLogger(__name__)
#: The transaction-level advisory lock that serialises promotions (exclusive) against the
#: writers of index rows (shared). Not the reconcile lease's key (``.lease.LOCK_KEY``).
PROMOTION_LOCK_KEY = 0x65B6_9B5A
#: Holds the transaction id of the latest transaction that promoted a word (a sequence: its
#: value is seen by every transaction at once, whatever its snapshot).
PROMOTED_SEQUENCE = "openclaw_fts_impact_promoted"
#: Takes :data:`PROMOTION_LOCK_KEY` in share mode before index rows are deleted.
GUARD_FUNCTION = "openclaw_fts_impact_guard"
GUARD_TRIGGER = "message_index_impact_guard"
#: Promotes at the commit of a transaction that crossed a ``PROMOTE_EVERY_ROWS`` boundary.
DUE_FUNCTION = "openclaw_fts_impact_due"
DUE_TRIGGER = "message_index_impact_due"
#: ``message_impact_terms.avg_len`` of a word whose list is not trusted (found drifted): its
#: searches take the exact path until its list is rebuilt. PostgreSQL's lists do not use
#: ``avg_len`` otherwise (it is 0).
UNTRUSTED = -1.0
#: The ``SQLSTATE`` a writer whose snapshot predates a promotion raises (REPEATABLE READ and
#: SERIALIZABLE only): ``serialization_failure``, which asks the caller to retry.
SERIALIZATION_FAILURE = "40001"

#: What every writer of index rows runs first (plpgsql): the share lock, then, outside READ
#: COMMITTED, the refusal of a snapshot that cannot see the latest promotion.
_GUARD = (
    f"PERFORM pg_advisory_xact_lock_shared({PROMOTION_LOCK_KEY}); "
    "IF current_setting('transaction_isolation') <> 'read committed' AND NOT "
    f"pg_visible_in_snapshot((SELECT last_value FROM {PROMOTED_SEQUENCE})::text::xid8, "
    "pg_current_snapshot()) THEN RAISE EXCEPTION 'openclaw-fts: a frequent word was promoted "
    "after this transaction''s snapshot was taken: retry the transaction' "
    f"USING ERRCODE = '{SERIALIZATION_FAILURE}'; END IF; "
)
#: :data:`_GUARD` for the other plpgsql functions that write index rows (:mod:`.partition`).
GUARD_SQL = _GUARD


def relist_session_sql(table: str) -> str:
    """plpgsql: the list rows of every index row of the session ``NEW.session_id`` in
    ``table``, those it lacks only (a change of agent moves the rows between partitions,
    and the partitioned layout's delete trigger removed their list rows on the way)."""
    return (
        f"INSERT INTO {IMPACT_TABLE} (row_id, term, impact, tf, doc_len, {ROW_TIME_COLUMN}) "
        "SELECT x.id, x.term, x.impact, x.tf, x.doc_len, x.timestamp_ms FROM "
        "(SELECT n.id, t.term, t.min_impact, n.timestamp_ms, "
        f"ts_rank(n.{TSVECTOR_COLUMN}, t.term::tsquery, 1) AS impact, "
        f"coalesce(array_length(u.positions, 1), 1) AS tf, length(n.{TSVECTOR_COLUMN}) AS doc_len "
        f"FROM {table} AS n CROSS JOIN LATERAL unnest(n.{TSVECTOR_COLUMN}) AS u "
        f"JOIN {TERMS_TABLE} AS t ON t.term = u.lexeme WHERE n.session_id = NEW.session_id) "
        "AS x WHERE x.impact >= x.min_impact ON CONFLICT DO NOTHING; "
    )


#: The words the planner's statistics show in at least ``min_docs`` rows, not tracked yet
#: (they exist after an ``ANALYZE``: ``optimize`` runs one), each with the rows the statistics
#: say hold it.
_STATS_CANDIDATES = (
    "SELECT e.elem, e.freq * greatest(c.reltuples, 0) FROM pg_stats AS st "
    "JOIN pg_namespace AS ns ON ns.nspname = st.schemaname "
    "JOIN pg_class AS c ON c.relname = st.tablename AND c.relnamespace = ns.oid "
    "CROSS JOIN LATERAL unnest(st.most_common_elems::text::text[], "
    "st.most_common_elem_freqs) AS e(elem, freq) "
    f"WHERE st.tablename IN ('{CONTENT_TABLE}', 'message_index_by_agent') "
    f"AND st.attname = '{TSVECTOR_COLUMN}' AND st.schemaname = current_schema() "
    f"AND e.elem ~ '{TERM_REGEX}' AND e.freq * greatest(c.reltuples, 0) >= min_docs "
    f"AND NOT EXISTS (SELECT 1 FROM {TERMS_TABLE} AS t WHERE t.term = e.elem)"
)
#: The words of the newest :data:`SAMPLE_ROWS` index rows held there often enough to be held
#: by ``min_docs`` rows of the whole index at that rate (times :data:`SAMPLE_MARGIN`; the
#: newest id stands for the row count: ids only grow), not tracked yet, each with the rows
#: that rate gives it in the whole index: the plugin's own counts, no ``ANALYZE`` needed. A
#: word that grows frequent is written while it does, so the checks it crosses meet it.
#: The sample's rows and margin (see :data:`_SAMPLE_CANDIDATES`; a share varies from sample
#: to sample). SQLite's checkpoint uses the same figures (``.sqlite.impact``).
SAMPLE_ROWS = 512
SAMPLE_MARGIN = 0.6
#: Fewest of the sample's rows a candidate is in, whatever the index's size: past ~1m rows the
#: rate above would make every word of the sample a candidate, each counted through the GIN
#: index at every check (seconds). A word in fewer is left to the planner's statistics
#: (``optimize``, autovacuum's ``ANALYZE``): its exact path ranks a small share of the index.
SAMPLE_MIN_HITS = 4
#: The sample's size and newest id come from its one scan (window aggregates over its rows):
#: a separate subquery for them was run again for every word of the sample (218 times, 80 ms
#: of a 627 ms check at 300k rows; revision 0012).
_SAMPLE_CANDIDATES = (
    "SELECT s.w, s.k::float8 * greatest(s.top, 1) / greatest(s.n, 1) FROM "
    "(SELECT u.w, count(*) AS k, max(r.n) AS n, max(r.top) AS top FROM "
    "(SELECT q.v, count(*) OVER () AS n, max(q.id) OVER () AS top FROM "
    f"(SELECT id, {TSVECTOR_COLUMN} AS v FROM {CONTENT_TABLE} ORDER BY id DESC "
    f"LIMIT {SAMPLE_ROWS}) AS q) AS r "
    "CROSS JOIN LATERAL unnest(tsvector_to_array(r.v)) AS u(w) GROUP BY u.w) AS s "
    f"WHERE s.w ~ '{TERM_REGEX}' AND s.k >= {SAMPLE_MIN_HITS} "
    f"AND s.k * greatest(s.top, 1) >= min_docs * s.n * {SAMPLE_MARGIN} "
    f"AND NOT EXISTS (SELECT 1 FROM {TERMS_TABLE} AS t WHERE t.term = s.w)"
)
CANDIDATES_FUNCTION = "openclaw_fts_impact_candidates"
#: The untracked words that ``min_docs`` index rows hold (each counted, up to ``min_docs``,
#: through the GIN index), from the newest rows (:data:`_SAMPLE_CANDIDATES`) and the planner's
#: statistics when there are any (:data:`_STATS_CANDIDATES`), the most frequent first (the
#: larger of the two estimates; then the word). Revision 0010; the order is revision 0012's.
#: The estimates are sorted before any word is counted, and ``OFFSET 0`` keeps the count above
#: the sort (the planner would otherwise push it below, into the union: every candidate counted
#: before the first is returned), so a caller that stops after a few words (a bounded
#: :data:`PROMOTE_FUNCTION`, an ``EXISTS``) counts only the candidates it read. The function is
#: inlined into its callers' statements and a scan of a sorted subquery keeps its order.
CREATE_CANDIDATES_FUNCTION = (
    f"CREATE OR REPLACE FUNCTION {CANDIDATES_FUNCTION}(min_docs bigint) RETURNS SETOF text "
    f"LANGUAGE sql STABLE AS $$ SELECT c.w FROM (SELECT a.w FROM ({_SAMPLE_CANDIDATES}"
    f" UNION ALL {_STATS_CANDIDATES}) AS a(w, est) GROUP BY a.w ORDER BY max(a.est) DESC, a.w "
    "OFFSET 0) AS c(w) WHERE (SELECT count(*) FROM (SELECT 1 FROM "
    f"{CONTENT_TABLE} WHERE {TSVECTOR_COLUMN} @@ c.w::tsquery LIMIT min_docs) AS z) >= min_docs $$"
)
_CANDIDATES = f"SELECT x.cand FROM {CANDIDATES_FUNCTION}(min_docs) AS x(cand)"

#: The function behind :data:`INSERT_TRIGGER`: the share lock (:data:`_GUARD`), then the new
#: rows' list rows (those reaching their word's ``min_impact``).
CREATE_INSERT_FUNCTION = (
    f"CREATE OR REPLACE FUNCTION {INSERT_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$ "
    f"BEGIN {_GUARD}"
    f"INSERT INTO {IMPACT_TABLE} (row_id, term, impact, tf, doc_len, {ROW_TIME_COLUMN}) "
    "SELECT x.id, x.term, x.impact, x.tf, x.doc_len, x.timestamp_ms FROM "
    "(SELECT n.id, t.term, t.min_impact, n.timestamp_ms, "
    f"ts_rank(n.{TSVECTOR_COLUMN}, t.term::tsquery, 1) AS impact, "
    f"coalesce(array_length(u.positions, 1), 1) AS tf, length(n.{TSVECTOR_COLUMN}) AS doc_len "
    f"FROM {_NEW_ROWS} AS n CROSS JOIN LATERAL unnest(n.{TSVECTOR_COLUMN}) AS u "
    f"JOIN {TERMS_TABLE} AS t ON t.term = u.lexeme) AS x WHERE x.impact >= x.min_impact; "
    "RETURN NULL; END $$"
)
#: The function behind :data:`GUARD_TRIGGER` (before a statement deletes index rows).
CREATE_GUARD_FUNCTION = (
    f"CREATE OR REPLACE FUNCTION {GUARD_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$ "
    f"BEGIN {_GUARD}RETURN NULL; END $$"
)
#: The function behind :data:`DUE_TRIGGER`: at the commit, when some word is newly frequent
#: and no other transaction holds the lock (never waits), promote at most
#: :data:`~openclaw_fts.index.impact.PROMOTE_MAX_WORDS` words (revision 0012).
CREATE_DUE_FUNCTION = (
    f"CREATE OR REPLACE FUNCTION {DUE_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$ "
    f"DECLARE min_docs bigint := {FREQUENT_TERM_MIN_DOCS}; BEGIN "
    "IF current_setting('transaction_isolation') = 'read committed' "
    f"AND EXISTS ({_CANDIDATES}) AND pg_try_advisory_xact_lock({PROMOTION_LOCK_KEY}) THEN "
    f"PERFORM {PROMOTE_FUNCTION}(min_docs, {PROMOTE_MAX_WORDS}); END IF; RETURN NULL; END $$"
)
#: Deletes the list rows of a deleted index row (the partitioned layout, where no foreign key
#: can name ``id`` alone).
CREATE_DELETE_FUNCTION = (
    f"CREATE OR REPLACE FUNCTION {DELETE_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$ "
    f"BEGIN DELETE FROM {IMPACT_TABLE} WHERE row_id = OLD.id; RETURN NULL; END $$"
)
#: Tracks the candidate words (:data:`CANDIDATES_FUNCTION`: the newest rows' frequent words
#: and the planner's statistics' that at least ``min_docs`` rows hold, then counted) not
#: tracked yet, the most frequent first, until ``max_words`` are tracked (NULL: every one;
#: revision 0012, before which it took ``min_docs`` alone and tracked every one): each word's
#: list (the rows reaching the impact of its ``max(LIST_MIN_ROWS, docs / LIST_DIVISOR)``-th
#: best row), then its ``message_impact_terms`` row. Returns how many words it tracked. Under
#: READ COMMITTED only (0 otherwise), and only after the exclusive :data:`PROMOTION_LOCK_KEY`
#: (when there is a candidate at all); records its transaction in :data:`PROMOTED_SEQUENCE`
#: before it tracks a word. It stops reading candidates once the bound is reached, so the
#: ones after are not even counted.
CREATE_PROMOTE_FUNCTION = (
    f"CREATE OR REPLACE FUNCTION {PROMOTE_FUNCTION}(min_docs bigint, max_words integer) "
    "RETURNS integer LANGUAGE plpgsql AS $$ DECLARE w text; n bigint; cut real; "
    "added integer := 0; BEGIN "
    "IF current_setting('transaction_isolation') <> 'read committed' OR max_words < 1 "
    f"OR NOT EXISTS ({_CANDIDATES}) THEN RETURN 0; END IF; "
    f"PERFORM pg_advisory_xact_lock({PROMOTION_LOCK_KEY}); "
    f"FOR w IN {_CANDIDATES} LOOP "
    f"SELECT count(*) INTO n FROM {CONTENT_TABLE} WHERE {TSVECTOR_COLUMN} @@ w::tsquery; "
    "CONTINUE WHEN n < min_docs; "
    "IF added = 0 THEN "
    f"PERFORM setval('{PROMOTED_SEQUENCE}', pg_current_xact_id()::text::bigint); END IF; "
    f"SELECT coalesce((SELECT r FROM (SELECT ts_rank({TSVECTOR_COLUMN}, w::tsquery, 1) AS r "
    f"FROM {CONTENT_TABLE} WHERE {TSVECTOR_COLUMN} @@ w::tsquery ORDER BY 1 DESC "
    f"OFFSET greatest({LIST_MIN_ROWS}, n / {LIST_DIVISOR}) - 1 LIMIT 1) AS z), 0) INTO cut; "
    f"INSERT INTO {IMPACT_TABLE} (row_id, term, impact, tf, doc_len, {ROW_TIME_COLUMN}) "
    "SELECT x.id, w, x.impact, x.tf, x.doc_len, x.timestamp_ms FROM "
    "(SELECT mi.id, mi.timestamp_ms, "
    f"ts_rank(mi.{TSVECTOR_COLUMN}, w::tsquery, 1) AS impact, "
    f"coalesce(array_length(u.positions, 1), 1) AS tf, length(mi.{TSVECTOR_COLUMN}) AS doc_len "
    f"FROM {CONTENT_TABLE} AS mi CROSS JOIN LATERAL unnest(mi.{TSVECTOR_COLUMN}) AS u "
    f"WHERE mi.{TSVECTOR_COLUMN} @@ w::tsquery AND u.lexeme = w) AS x WHERE x.impact >= cut; "
    f"INSERT INTO {TERMS_TABLE} (term, docs, avg_len, min_impact) VALUES (w, n, 0, cut); "
    "added := added + 1; EXIT WHEN added >= max_words; END LOOP; RETURN added; END $$"
)
#: The sequence behind :data:`PROMOTED_SEQUENCE` (its first value no snapshot misses).
CREATE_PROMOTED_SEQUENCE = f"CREATE SEQUENCE IF NOT EXISTS {PROMOTED_SEQUENCE} MINVALUE 1 START 1"


def create_triggers_sql(table: str) -> list[str]:
    """The statements that attach the list triggers to ``table`` (the flat ``message_index``,
    or the partitioned table; the delete trigger only there): revision 0007's insert trigger
    and revision 0009's guard before deletes and promotion at commit."""
    statements = [
        f"CREATE TRIGGER {INSERT_TRIGGER} AFTER INSERT ON {table} "
        f"REFERENCING NEW TABLE AS {_NEW_ROWS} FOR EACH STATEMENT "
        f"EXECUTE FUNCTION {INSERT_FUNCTION}()",
        f"CREATE TRIGGER {GUARD_TRIGGER} BEFORE DELETE ON {table} "
        f"FOR EACH STATEMENT EXECUTE FUNCTION {GUARD_FUNCTION}()",
        f"CREATE CONSTRAINT TRIGGER {DUE_TRIGGER} AFTER INSERT ON {table} "
        "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW "
        f"WHEN (NEW.id % {PROMOTE_EVERY_ROWS} = 0) EXECUTE FUNCTION {DUE_FUNCTION}()",
    ]
    if table != CONTENT_TABLE:
        statements.append(
            f"CREATE TRIGGER {DELETE_TRIGGER} AFTER DELETE ON {table} "
            f"FOR EACH ROW EXECUTE FUNCTION {DELETE_FUNCTION}()"
        )
    return statements


def before_partitioning(conn: Connection) -> None:
    """The flat table is about to be dropped: its foreign key from the lists goes first."""
    conn.execute(text(f"ALTER TABLE {IMPACT_TABLE} DROP CONSTRAINT IF EXISTS {ROW_FOREIGN_KEY}"))


def after_partitioning(conn: Connection, table: str) -> None:
    """The partitioned ``table`` holds every index row (same ids): it keeps the lists now."""
    for statement in create_triggers_sql(table):
        conn.execute(text(statement))


def after_unpartitioning(conn: Connection) -> None:
    """The plain ``message_index`` holds every index row again (same ids): its foreign key
    from the lists and its triggers, as revisions 0007 and 0009 made them."""
    conn.execute(
        text(
            f"ALTER TABLE {IMPACT_TABLE} ADD CONSTRAINT {ROW_FOREIGN_KEY} FOREIGN KEY (row_id) "
            f"REFERENCES {CONTENT_TABLE} (id) ON DELETE CASCADE"
        )
    )
    for statement in create_triggers_sql(CONTENT_TABLE):
        conn.execute(text(statement))


def guarded(conn: Connection) -> bool:
    """Whether the lists are serialised against promotions (revision 0009's guard exists)."""
    return bool(
        conn.execute(text(f"SELECT to_regprocedure('{GUARD_FUNCTION}()') IS NOT NULL")).scalar()
    )


def self_promoting(conn: Connection) -> bool:
    """Whether promotion finds its words from the plugin's own counts (revision 0010's
    :data:`CANDIDATES_FUNCTION` exists)."""
    return bool(
        conn.execute(
            text(f"SELECT to_regprocedure('{CANDIDATES_FUNCTION}(bigint)') IS NOT NULL")
        ).scalar()
    )


def bounded(conn: Connection) -> bool:
    """Whether a promotion tracks at most a given number of words (revision 0012's
    two-argument :data:`PROMOTE_FUNCTION`)."""
    return bool(
        conn.execute(
            text(f"SELECT to_regprocedure('{PROMOTE_FUNCTION}(bigint, integer)') IS NOT NULL")
        ).scalar()
    )


def promote(
    conn: Connection, min_docs: int = FREQUENT_TERM_MIN_DOCS, max_words: int | None = None
) -> int:
    """Track the newly frequent words (:data:`CANDIDATES_FUNCTION`), the most frequent first,
    at most ``max_words`` of them (None: every one, what ``optimize`` runs); waits for the
    transactions writing index rows to end (:data:`PROMOTION_LOCK_KEY`). Before revision 0012
    the database's promotion takes no bound: every candidate is tracked."""
    if not bounded(conn):
        found = conn.execute(text(f"SELECT {PROMOTE_FUNCTION}(:n)"), {"n": min_docs}).scalar()
        return int(found or 0)
    found = conn.execute(
        text(f"SELECT {PROMOTE_FUNCTION}(:n, CAST(:m AS integer))"),
        {"n": min_docs, "m": max_words},
    ).scalar()
    return int(found or 0)


def promote_if_free(
    conn: Connection,
    min_docs: int = FREQUENT_TERM_MIN_DOCS,
    max_words: int | None = PROMOTE_MAX_WORDS,
) -> int:
    """Track the newly frequent words (:data:`CANDIDATES_FUNCTION`), the most frequent first,
    at most ``max_words`` (:data:`~openclaw_fts.index.impact.PROMOTE_MAX_WORDS`: the lock it
    holds keeps every writer out meanwhile; the rest wait for the next checkpoint or pass);
    never waits for the lock (the exclusive lock is tried, not waited for: the reconciler's
    pass, like a commit at a checkpoint, must not hold writers back);
    0 when there is none, when the lock is busy (the next checkpoint or pass looks again),
    outside READ COMMITTED, or before revision 0010."""
    if not self_promoting(conn):
        return 0
    found = conn.execute(
        text(
            "SELECT current_setting('transaction_isolation') = 'read committed' AND EXISTS "
            f"(SELECT 1 FROM {CANDIDATES_FUNCTION}(:n))"
        ),
        {"n": min_docs},
    ).scalar()
    if not found:
        return 0
    if not conn.execute(
        text("SELECT pg_try_advisory_xact_lock(:k)"), {"k": PROMOTION_LOCK_KEY}
    ).scalar():
        return 0
    return promote(conn, min_docs, max_words)


def _lock_exclusive(conn: Connection) -> bool:
    """Wait until no transaction is writing index rows, and keep them out until this one ends;
    False (nothing locked) outside READ COMMITTED, whose one snapshot, taken before the lock,
    would not see what the writers it waited for committed."""
    isolation = conn.execute(text("SELECT current_setting('transaction_isolation')")).scalar()
    if isolation != "read committed":
        log.warning(
            "impact lists not rebuilt: the transaction is %s, not read committed", isolation
        )
        return False
    conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": PROMOTION_LOCK_KEY})
    return True


def _fill(words: str) -> str:
    """The list rows of the tracked words that ``words`` selects (a condition on ``t``)."""
    return (
        f"INSERT INTO {IMPACT_TABLE} (row_id, term, impact, tf, doc_len, {ROW_TIME_COLUMN}) "
        "SELECT x.id, x.term, x.impact, x.tf, x.doc_len, x.timestamp_ms FROM "
        "(SELECT mi.id, t.term, mi.timestamp_ms, "
        f"t.min_impact, ts_rank(mi.{TSVECTOR_COLUMN}, t.term::tsquery, 1) AS impact, "
        "coalesce(array_length(u.positions, 1), 1) AS tf, "
        f"length(mi.{TSVECTOR_COLUMN}) AS doc_len FROM {TERMS_TABLE} AS t "
        f"JOIN {CONTENT_TABLE} AS mi ON mi.{TSVECTOR_COLUMN} @@ t.term::tsquery "
        f"CROSS JOIN LATERAL unnest(mi.{TSVECTOR_COLUMN}) AS u WHERE u.lexeme = t.term "
        f"AND {words}) AS x WHERE x.impact >= x.min_impact"
    )


def rebuild(conn: Connection) -> None:
    """Rewrite every tracked word's list from the index rows (its ``min_impact`` kept), each
    trusted again; after the exclusive lock (nothing outside READ COMMITTED)."""
    if not _lock_exclusive(conn):
        return
    conn.execute(text(f"DELETE FROM {IMPACT_TABLE}"))
    conn.execute(text(_fill("TRUE")))
    conn.execute(text(f"UPDATE {TERMS_TABLE} SET avg_len = 0 WHERE avg_len <> 0"))


def rebuild_words(conn: Connection, words: list[str]) -> None:
    """Rewrite the lists of ``words`` (tracked ones) from the index rows and trust them again,
    after the exclusive lock: one transaction, so a search sees the old list (untrusted: the
    exact path) or the new one. Nothing outside READ COMMITTED (they stay untrusted)."""
    if not words or not _lock_exclusive(conn):
        return
    conn.execute(text(f"DELETE FROM {IMPACT_TABLE} WHERE term = ANY(:w)"), {"w": words})
    conn.execute(text(_fill("t.term = ANY(:w)")), {"w": words})
    conn.execute(text(f"UPDATE {TERMS_TABLE} SET avg_len = 0 WHERE term = ANY(:w)"), {"w": words})


def distrust(conn: Connection, words: list[str]) -> None:
    """Mark the lists of ``words`` untrusted (:data:`UNTRUSTED`): searches take the exact path
    for them until :func:`rebuild_words`."""
    if words:
        conn.execute(
            text(f"UPDATE {TERMS_TABLE} SET avg_len = :u WHERE term = ANY(:w)"),
            {"u": UNTRUSTED, "w": words},
        )


def untrusted(conn: Connection) -> list[str]:
    """The tracked words whose list is marked untrusted."""
    return [
        str(r[0])
        for r in conn.execute(
            text(f"SELECT term FROM {TERMS_TABLE} WHERE avg_len < 0 ORDER BY term")
        )
    ]


def repair(conn: Connection, *, verify: bool) -> list[str]:
    """Rebuild the untrusted lists and, with ``verify``, every list that :func:`drift` finds
    wrong (read before the lock, so writers wait only for the rebuild); returns the words
    rebuilt. A drifted list is marked untrusted first, so it stays so if the rebuild cannot
    run."""
    words = set(untrusted(conn))
    if verify:
        drifted = sorted(drift(conn))
        distrust(conn, drifted)
        words.update(drifted)
    chosen = sorted(words)
    rebuild_words(conn, chosen)
    return chosen if chosen and not untrusted(conn) else []


def drift(conn: Connection) -> dict[str, dict[str, int]]:
    """Each tracked word whose list differs from the rows whose ``tsvector`` holds it with an
    impact reaching its ``min_impact`` (a list row whose time is not its index row's counts
    as one missing and one extra: revision 0013)."""
    timed = has_row_time(conn)
    should = (
        f"SELECT mi.id{', mi.timestamp_ms' if timed else ''} FROM {CONTENT_TABLE} AS mi "
        f"WHERE mi.{TSVECTOR_COLUMN} @@ t.term::tsquery "
        f"AND ts_rank(mi.{TSVECTOR_COLUMN}, t.term::tsquery, 1) >= t.min_impact"
    )
    has = (
        f"SELECT i.row_id{f', i.{ROW_TIME_COLUMN}' if timed else ''} FROM {IMPACT_TABLE} AS i "
        "WHERE i.term = t.term"
    )
    rows = conn.execute(
        text(
            f"SELECT t.term, (SELECT count(*) FROM ({should} EXCEPT {has}) AS m), "
            f"(SELECT count(*) FROM ({has} EXCEPT {should}) AS x) FROM {TERMS_TABLE} AS t"
        )
    ).all()
    return {
        str(term): {"missing": int(missing), "extra": int(extra)}
        for term, missing, extra in rows
        if missing or extra
    }


#: Every tracked word whose list is trusted (a search remembers them per pooled connection).
TRACKED_WORDS_SQL = f"SELECT term FROM {TERMS_TABLE} WHERE avg_len >= 0"
#: Whether ``:impact_word`` is tracked and its list trusted, as a column named ``tracked``.
TRACKED_SQL = (
    f"EXISTS (SELECT 1 FROM {TERMS_TABLE} AS tt WHERE tt.term = :impact_word "
    "AND tt.avg_len >= 0) AS tracked"
)


def walk_sql(where: str, scope: str, condition: str = "", listed: str = "") -> str:
    """The walk of a word's list (none while it is untrusted: the exact path answers): its
    first :data:`WALK_CAP_ROWS` rows in descending impact, joined to their index rows and
    sessions, the first ``:impact_rows`` that satisfy ``where`` (the visibility over ``s``),
    ``scope`` and ``condition`` (each ``''`` or ``' AND …'``), with their bodies. ``listed``
    (``''`` or ``' AND …'``, :func:`list_filters`): conditions on the list rows' own columns
    (alias ``c``), applied to the capped rows before the join (a list row has its index row's
    time, so the rows returned and the rows read are the same, and a window that keeps 1 list
    row in 10 no longer joins the 9 others to their index rows to drop them). ``WITH TIES``
    at both cuts: the rows tied on the impact at a cut come along, so the exact path's
    tie-break (newest, session key, message id, row id) can order them. Rows in descending
    impact only: the planner reads the list's index backwards through nested loops and stops
    at the limit (a sort on the exact path's whole key would read every row of the walk
    first). ``rank`` is the impact as ``ts_rank`` returns it (a ``real``; the column holds it
    widened), so a score is the exact path's to the last digit."""
    walked = (
        f"SELECT row_id, impact{', ' + ROW_TIME_COLUMN if listed else ''} FROM {IMPACT_TABLE} "
        f"WHERE term = :impact_word AND EXISTS (SELECT 1 FROM {TERMS_TABLE} AS tw "
        "WHERE tw.term = :impact_word AND tw.avg_len >= 0) "
        "ORDER BY impact DESC FETCH FIRST :impact_cap ROWS WITH TIES"
    )
    if listed:
        # Inside CASE the planner cannot estimate the window (1 list row in 10 for 7 days at
        # 100k): with the estimate it sorted the whole list instead of reading its index in
        # order until enough rows pass (very common words: 1.7-2.4 ms of execution against
        # 0.26 ms; EXPLAIN ANALYZE on the 100k bench store, median of 7).
        walked = (
            f"SELECT c.row_id, c.impact FROM ({walked}) AS c "
            f"WHERE CASE WHEN TRUE{listed} THEN TRUE ELSE FALSE END"
        )
    return (
        "SELECT mi.id, mi.session_id, mi.seq, mi.event_id, mi.role, mi.timestamp_ms, "
        "s.session_key, -CAST(i.impact AS real) AS rank, mi.body "
        f"FROM ({walked}) AS i "
        f"JOIN {CONTENT_TABLE} AS mi ON mi.id = i.row_id "
        "JOIN openclaw_sessions AS s ON s.session_id = mi.session_id "
        f"WHERE {where}{scope}{condition} "
        "ORDER BY i.impact DESC FETCH FIRST :impact_rows ROWS WITH TIES"
    )


def list_filters(since: int | None, until: int | None, params: dict[str, Any]) -> str:
    """A search's time window as :func:`walk_sql`'s ``listed`` conditions on the list rows'
    :data:`ROW_TIME_COLUMN` (the same ``:since`` / ``:until`` parameters as the conditions on
    the index rows, ``hits.user_filters``; their values added to ``params``)."""
    filters = []
    if since is not None:
        filters.append(f" AND c.{ROW_TIME_COLUMN} >= :since")
        params["since"] = since
    if until is not None:
        filters.append(f" AND c.{ROW_TIME_COLUMN} <= :until")
        params["until"] = until
    return "".join(filters)


#: Whether ``message_impact`` has :data:`ROW_TIME_COLUMN` (the catalogue only).
TIMED_SQL = (
    "EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = "
    f"to_regclass('{IMPACT_TABLE}') AND attname = '{ROW_TIME_COLUMN}' "
    "AND attnum > 0 AND NOT attisdropped)"
)
#: The list rows' time as one of the schema's features (:class:`~..memo.SchemaFeature`).
TIMED = SchemaFeature("postgresql", "impact_row_time", TIMED_SQL)


def timed(conn: Connection) -> bool:
    """Whether the list rows carry their index row's time (revision 0013's
    :data:`ROW_TIME_COLUMN`), as the pooled connection remembers the schema (:data:`TIMED`:
    read again after an upgrade or a downgrade through ``openclaw_fts.migrate``). After
    another process's downgrade below 0013, the first windowed walk of a connection that
    remembers it fails, and every connection reads the schema again (downgrade with the
    plugin's processes stopped, as for :mod:`.partition`'s layout); one that learnt it before
    another's upgrade walks without the window (the same rows, the join drops them)."""
    return TIMED.present(conn)


def has_row_time(conn: Connection) -> bool:
    """Whether ``message_impact`` has :data:`ROW_TIME_COLUMN` now (no memo: the revision probe)."""
    return bool(conn.execute(text(f"SELECT {TIMED_SQL}")).scalar())


def walk_params(word: str, want: int) -> dict[str, Any]:
    """:func:`walk_sql`'s own parameters."""
    return {"impact_word": word, "impact_cap": WALK_CAP_ROWS, "impact_rows": want}


def exact_order(row: Any) -> tuple[Any, ...]:
    """The exact path's order of a walked row (impact, then newest, session key, message id,
    row id: ``COLLATE "C"`` is code point order, as Python compares strings)."""
    return (row[7], -row[5], row[6], row[3], row[0])


def top_rows(
    conn: Connection,
    word: str,
    want: int,
    where: str,
    params: dict[str, Any],
    *,
    condition: str,
    scope: str,
    listed: str = "",
) -> list[Any] | None:
    """The first ``want`` visible rows of ``word``'s list in the exact path's order, with
    their bodies, in one statement; None when the list's first :data:`WALK_CAP_ROWS` rows
    hold fewer than ``want`` visible ones (or the word is not tracked: its list is empty).
    ``where``/``scope``: the visibility over sessions ``s`` and index rows ``mi``;
    ``condition``: the pending condition ('' when nothing visible is pending); ``listed``:
    :func:`walk_sql`'s."""
    bound = {**params, **walk_params(word, want)}
    rows = list(conn.execute(text(walk_sql(where, scope, condition, listed)), bound).all())
    if len(rows) < want:
        return None
    rows.sort(key=exact_order)
    return rows[:want]


class ServerImpactLists:
    """:class:`~openclaw_fts.index.base.ImpactLists` on PostgreSQL: lists kept by triggers
    under concurrent writers, so a drifted list is marked untrusted (:func:`distrust`),
    rebuilt by the reconciler (:func:`repair`) and newly frequent words tracked when the
    promotion lock is free (:func:`promote_if_free`)."""

    def drift(self, conn: Connection) -> dict[str, dict[str, int]]:
        return drift(conn)

    def distrust(self, conn: Connection, words: Sequence[str]) -> None:
        distrust(conn, list(words))

    def repair(self, conn: Connection, *, verify: bool) -> list[str]:
        """Rebuild the untrusted lists (every drifted one with ``verify``)."""
        return repair(conn, verify=verify)

    def promote_if_free(self, conn: Connection) -> None:
        """Never waits for the lock (the reconciler's pass: rows indexed since the last
        checkpoint cross none); tracks at most ``PROMOTE_MAX_WORDS`` words."""
        promote_if_free(conn)

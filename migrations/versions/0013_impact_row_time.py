"""PostgreSQL: each impact-list row keeps its index row's time, so a windowed walk drops rows first.

A one-word search with ``since`` / ``until`` walks the word's list in impact order and joins
each list row to its ``message_index`` row by primary key before the row's time can drop it:
with a 7-day window that keeps 1 list row in 10, the walk joined ~10 times as many rows as the
same search unfiltered (``agent`` caller at 100k: 1.55-1.67× at p50, 1.71-1.89× at p95;
bench/NOTES.md). Here ``message_impact`` gets ``timestamp_ms`` (NOT NULL, its index row's),
filled for every existing list row, and the functions that write list rows write it: the
insert trigger's function, the promotion and, on the partitioned layout, the change-of-agent
function (its list rows are written again); the walk filters the list rows on it before the
join (``openclaw_fts/index/postgresql/impact.py``). Index rows never change their time, so
the copy stays exact. The revision takes the promotion lock exclusive first (revision 0009):
no writer of index rows is between its share lock and its list rows meanwhile. SQLite:
nothing (its lists are written by the plugin's writer and walked without a window on them).

Idempotent (a database stamped back to 0012 with the column kept upgrades again). Downgrade
restores 0012's functions and drops the column.

Revision ID: 0013_impact_row_time
Revises: 0012_impact_promotion_bounded
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0013_impact_row_time"
down_revision: str | None = "0012_impact_promotion_bounded"
branch_labels: tuple[str, ...] | None = None
depends_on: str | None = None

# Frozen at this revision.
PG_LOCK = "SELECT pg_advisory_xact_lock(1706466138)"

PG_ADD_COLUMN = "ALTER TABLE message_impact ADD COLUMN IF NOT EXISTS timestamp_ms bigint"

PG_FILL_COLUMN = (
    "UPDATE message_impact AS i SET timestamp_ms = mi.timestamp_ms FROM message_index AS mi "
    "WHERE mi.id = i.row_id AND i.timestamp_ms IS DISTINCT FROM mi.timestamp_ms"
)

# A list row without its index row (none: the foreign key, or the partitioned layout's delete
# trigger, removes them together) could never be returned: it goes rather than block NOT NULL.
PG_DROP_ORPHANS = "DELETE FROM message_impact WHERE timestamp_ms IS NULL"

PG_NOT_NULL = "ALTER TABLE message_impact ALTER COLUMN timestamp_ms SET NOT NULL"

PG_INSERT_FUNCTION = (
    "CREATE OR REPLACE FUNCTION openclaw_fts_impact_insert() RETURNS trigger LANGUAGE plpgsql AS"
    " $$ BEGIN PERFORM pg_advisory_xact_lock_shared(1706466138); IF current_setting('transaction"
    "_isolation') <> 'read committed' AND NOT pg_visible_in_snapshot((SELECT last_value FROM ope"
    "nclaw_fts_impact_promoted)::text::xid8, pg_current_snapshot()) THEN RAISE EXCEPTION 'opencl"
    "aw-fts: a frequent word was promoted after this transaction''s snapshot was taken: retry th"
    "e transaction' USING ERRCODE = '40001'; END IF; INSERT INTO message_impact (row_id, term, i"
    "mpact, tf, doc_len, timestamp_ms) SELECT x.id, x.term, x.impact, x.tf, x.doc_len, x.timesta"
    "mp_ms FROM (SELECT n.id, t.term, t.min_impact, n.timestamp_ms, ts_rank(n.body_tsv, t.term::"
    "tsquery, 1) AS impact, coalesce(array_length(u.positions, 1), 1) AS tf, length(n.body_tsv) "
    "AS doc_len FROM openclaw_fts_new_rows AS n CROSS JOIN LATERAL unnest(n.body_tsv) AS u JOIN "
    "message_impact_terms AS t ON t.term = u.lexeme) AS x WHERE x.impact >= x.min_impact; RETURN"
    " NULL; END $$"
)

PG_PROMOTE_FUNCTION = (
    "CREATE OR REPLACE FUNCTION openclaw_fts_impact_promote(min_docs bigint, max_words integer) "
    "RETURNS integer LANGUAGE plpgsql AS $$ DECLARE w text; n bigint; cut real; added integer :="
    " 0; BEGIN IF current_setting('transaction_isolation') <> 'read committed' OR max_words < 1 "
    "OR NOT EXISTS (SELECT x.cand FROM openclaw_fts_impact_candidates(min_docs) AS x(cand)) THEN"
    " RETURN 0; END IF; PERFORM pg_advisory_xact_lock(1706466138); FOR w IN SELECT x.cand FROM o"
    "penclaw_fts_impact_candidates(min_docs) AS x(cand) LOOP SELECT count(*) INTO n FROM message"
    "_index WHERE body_tsv @@ w::tsquery; CONTINUE WHEN n < min_docs; IF added = 0 THEN PERFORM "
    "setval('openclaw_fts_impact_promoted', pg_current_xact_id()::text::bigint); END IF; SELECT "
    "coalesce((SELECT r FROM (SELECT ts_rank(body_tsv, w::tsquery, 1) AS r FROM message_index WH"
    "ERE body_tsv @@ w::tsquery ORDER BY 1 DESC OFFSET greatest(512, n / 16) - 1 LIMIT 1) AS z),"
    " 0) INTO cut; INSERT INTO message_impact (row_id, term, impact, tf, doc_len, timestamp_ms) "
    "SELECT x.id, w, x.impact, x.tf, x.doc_len, x.timestamp_ms FROM (SELECT mi.id, mi.timestamp_"
    "ms, ts_rank(mi.body_tsv, w::tsquery, 1) AS impact, coalesce(array_length(u.positions, 1), 1"
    ") AS tf, length(mi.body_tsv) AS doc_len FROM message_index AS mi CROSS JOIN LATERAL unnest("
    "mi.body_tsv) AS u WHERE mi.body_tsv @@ w::tsquery AND u.lexeme = w) AS x WHERE x.impact >= "
    "cut; INSERT INTO message_impact_terms (term, docs, avg_len, min_impact) VALUES (w, n, 0, cu"
    "t); added := added + 1; EXIT WHEN added >= max_words; END LOOP; RETURN added; END $$"
)

PG_MOVE_FUNCTION = (
    "CREATE OR REPLACE FUNCTION openclaw_fts_message_index_move() RETURNS trigger LANGUAGE plpgs"
    "ql AS $$ BEGIN PERFORM pg_advisory_xact_lock_shared(1706466138); IF current_setting('transa"
    "ction_isolation') <> 'read committed' AND NOT pg_visible_in_snapshot((SELECT last_value FRO"
    "M openclaw_fts_impact_promoted)::text::xid8, pg_current_snapshot()) THEN RAISE EXCEPTION 'o"
    "penclaw-fts: a frequent word was promoted after this transaction''s snapshot was taken: ret"
    "ry the transaction' USING ERRCODE = '40001'; END IF; UPDATE message_index_by_agent SET agen"
    "t_id = NEW.agent_id WHERE agent_id = OLD.agent_id AND session_id = NEW.session_id; INSERT I"
    "NTO message_impact (row_id, term, impact, tf, doc_len, timestamp_ms) SELECT x.id, x.term, x"
    ".impact, x.tf, x.doc_len, x.timestamp_ms FROM (SELECT n.id, t.term, t.min_impact, n.timesta"
    "mp_ms, ts_rank(n.body_tsv, t.term::tsquery, 1) AS impact, coalesce(array_length(u.positions"
    ", 1), 1) AS tf, length(n.body_tsv) AS doc_len FROM message_index_by_agent AS n CROSS JOIN L"
    "ATERAL unnest(n.body_tsv) AS u JOIN message_impact_terms AS t ON t.term = u.lexeme WHERE n."
    "session_id = NEW.session_id) AS x WHERE x.impact >= x.min_impact ON CONFLICT DO NOTHING; RE"
    "TURN NULL; END $$"
)

# Revision 0012's (the insert and move functions are 0009's), for the downgrade.
INSERT_FUNCTION_0012 = (
    "CREATE OR REPLACE FUNCTION openclaw_fts_impact_insert() RETURNS trigger LANGUAGE plpgsql AS"
    " $$ BEGIN PERFORM pg_advisory_xact_lock_shared(1706466138); IF current_setting('transaction"
    "_isolation') <> 'read committed' AND NOT pg_visible_in_snapshot((SELECT last_value FROM ope"
    "nclaw_fts_impact_promoted)::text::xid8, pg_current_snapshot()) THEN RAISE EXCEPTION 'opencl"
    "aw-fts: a frequent word was promoted after this transaction''s snapshot was taken: retry th"
    "e transaction' USING ERRCODE = '40001'; END IF; INSERT INTO message_impact (row_id, term, i"
    "mpact, tf, doc_len) SELECT x.id, x.term, x.impact, x.tf, x.doc_len FROM (SELECT n.id, t.ter"
    "m, t.min_impact, ts_rank(n.body_tsv, t.term::tsquery, 1) AS impact, coalesce(array_length(u"
    ".positions, 1), 1) AS tf, length(n.body_tsv) AS doc_len FROM openclaw_fts_new_rows AS n CRO"
    "SS JOIN LATERAL unnest(n.body_tsv) AS u JOIN message_impact_terms AS t ON t.term = u.lexeme"
    ") AS x WHERE x.impact >= x.min_impact; RETURN NULL; END $$"
)

PROMOTE_FUNCTION_0012 = (
    "CREATE OR REPLACE FUNCTION openclaw_fts_impact_promote(min_docs bigint, max_words integer) "
    "RETURNS integer LANGUAGE plpgsql AS $$ DECLARE w text; n bigint; cut real; added integer :="
    " 0; BEGIN IF current_setting('transaction_isolation') <> 'read committed' OR max_words < 1 "
    "OR NOT EXISTS (SELECT x.cand FROM openclaw_fts_impact_candidates(min_docs) AS x(cand)) THEN"
    " RETURN 0; END IF; PERFORM pg_advisory_xact_lock(1706466138); FOR w IN SELECT x.cand FROM o"
    "penclaw_fts_impact_candidates(min_docs) AS x(cand) LOOP SELECT count(*) INTO n FROM message"
    "_index WHERE body_tsv @@ w::tsquery; CONTINUE WHEN n < min_docs; IF added = 0 THEN PERFORM "
    "setval('openclaw_fts_impact_promoted', pg_current_xact_id()::text::bigint); END IF; SELECT "
    "coalesce((SELECT r FROM (SELECT ts_rank(body_tsv, w::tsquery, 1) AS r FROM message_index WH"
    "ERE body_tsv @@ w::tsquery ORDER BY 1 DESC OFFSET greatest(512, n / 16) - 1 LIMIT 1) AS z),"
    " 0) INTO cut; INSERT INTO message_impact (row_id, term, impact, tf, doc_len) SELECT x.id, w"
    ", x.impact, x.tf, x.doc_len FROM (SELECT mi.id, ts_rank(mi.body_tsv, w::tsquery, 1) AS impa"
    "ct, coalesce(array_length(u.positions, 1), 1) AS tf, length(mi.body_tsv) AS doc_len FROM me"
    "ssage_index AS mi CROSS JOIN LATERAL unnest(mi.body_tsv) AS u WHERE mi.body_tsv @@ w::tsque"
    "ry AND u.lexeme = w) AS x WHERE x.impact >= cut; INSERT INTO message_impact_terms (term, do"
    "cs, avg_len, min_impact) VALUES (w, n, 0, cut); added := added + 1; EXIT WHEN added >= max_"
    "words; END LOOP; RETURN added; END $$"
)

MOVE_FUNCTION_0012 = (
    "CREATE OR REPLACE FUNCTION openclaw_fts_message_index_move() RETURNS trigger LANGUAGE plpgs"
    "ql AS $$ BEGIN PERFORM pg_advisory_xact_lock_shared(1706466138); IF current_setting('transa"
    "ction_isolation') <> 'read committed' AND NOT pg_visible_in_snapshot((SELECT last_value FRO"
    "M openclaw_fts_impact_promoted)::text::xid8, pg_current_snapshot()) THEN RAISE EXCEPTION 'o"
    "penclaw-fts: a frequent word was promoted after this transaction''s snapshot was taken: ret"
    "ry the transaction' USING ERRCODE = '40001'; END IF; UPDATE message_index_by_agent SET agen"
    "t_id = NEW.agent_id WHERE agent_id = OLD.agent_id AND session_id = NEW.session_id; INSERT I"
    "NTO message_impact (row_id, term, impact, tf, doc_len) SELECT x.id, x.term, x.impact, x.tf,"
    " x.doc_len FROM (SELECT n.id, t.term, t.min_impact, ts_rank(n.body_tsv, t.term::tsquery, 1)"
    " AS impact, coalesce(array_length(u.positions, 1), 1) AS tf, length(n.body_tsv) AS doc_len "
    "FROM message_index_by_agent AS n CROSS JOIN LATERAL unnest(n.body_tsv) AS u JOIN message_im"
    "pact_terms AS t ON t.term = u.lexeme WHERE n.session_id = NEW.session_id) AS x WHERE x.impa"
    "ct >= x.min_impact ON CONFLICT DO NOTHING; RETURN NULL; END $$"
)


def _partitioned() -> bool:
    """Whether the database has the partitioned layout (its change-of-agent function)."""
    if op.get_context().as_sql:
        return False
    found = op.get_bind().execute(sa.text("SELECT to_regclass('message_index_by_agent')"))
    return found.scalar() is not None


def upgrade() -> None:
    if op.get_context().dialect.name != "postgresql":
        return
    op.execute(PG_LOCK)
    op.execute(PG_ADD_COLUMN)
    op.execute(PG_FILL_COLUMN)
    op.execute(PG_DROP_ORPHANS)
    op.execute(PG_NOT_NULL)
    op.execute(PG_INSERT_FUNCTION)
    op.execute(PG_PROMOTE_FUNCTION)
    if _partitioned():
        op.execute(PG_MOVE_FUNCTION)


def downgrade() -> None:
    if op.get_context().dialect.name != "postgresql":
        return
    op.execute(PG_LOCK)
    op.execute(INSERT_FUNCTION_0012)
    op.execute(PROMOTE_FUNCTION_0012)
    if _partitioned():
        op.execute(MOVE_FUNCTION_0012)
    op.execute("ALTER TABLE message_impact DROP COLUMN IF EXISTS timestamp_ms")

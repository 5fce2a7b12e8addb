"""PostgreSQL: impact lists that stay exact while words are promoted under concurrent writers.

Revision 0007's promotion read the committed index rows while the insert trigger of a writer
whose transaction was open joined only the words tracked in its own snapshot: rows written in
that window were in neither (issue 42). Here the two are serialised by a transaction-level
advisory lock (``openclaw_fts/index/postgresql/impact.py`` argues the design): writers of index
rows take it in share mode (the insert trigger, before it reads the tracked words; a new
``BEFORE DELETE`` statement trigger), promotion takes it exclusive, and a writer under
REPEATABLE READ or SERIALIZABLE whose snapshot predates a promotion (recorded in a new
sequence) gets a serialization failure to retry. The insert trigger no longer promotes in the
middle of a writer's transaction: a deferred constraint trigger does it at the commit of a
transaction that inserted an index row whose id is a multiple of 4096, when the lock is free.
SQLite: nothing (its writer holds the database's write lock).

Both directions run on either layout (the partitioned one keeps its triggers on
``message_index_by_agent``; its change-of-agent function, which moved the index rows without
their list rows, takes the lock too and writes them again). Downgrade restores 0007's
functions.

Revision ID: 0009_impact_promotion_lock
Revises: 0008_last_seq_per_statement
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0009_impact_promotion_lock"
down_revision: str | None = "0008_last_seq_per_statement"
branch_labels: tuple[str, ...] | None = None
depends_on: str | None = None

# Frozen at this revision.
PG_SEQUENCE = "CREATE SEQUENCE IF NOT EXISTS openclaw_fts_impact_promoted MINVALUE 1 START 1"

PG_GUARD_FUNCTION = (
    "CREATE OR REPLACE FUNCTION openclaw_fts_impact_guard() RETURNS trigger LANGUAGE plpgsql AS"
    " $$ BEGIN PERFORM pg_advisory_xact_lock_shared(1706466138); IF current_setting('transactio"
    "n_isolation') <> 'read committed' AND NOT pg_visible_in_snapshot((SELECT last_value FROM o"
    "penclaw_fts_impact_promoted)::text::xid8, pg_current_snapshot()) THEN RAISE EXCEPTION 'ope"
    "nclaw-fts: a frequent word was promoted after this transaction''s snapshot was taken: retr"
    "y the transaction' USING ERRCODE = '40001'; END IF; RETURN NULL; END $$"
)

PG_INSERT_FUNCTION = (
    "CREATE OR REPLACE FUNCTION openclaw_fts_impact_insert() RETURNS trigger LANGUAGE plpgsql A"
    "S $$ BEGIN PERFORM pg_advisory_xact_lock_shared(1706466138); IF current_setting('transacti"
    "on_isolation') <> 'read committed' AND NOT pg_visible_in_snapshot((SELECT last_value FROM "
    "openclaw_fts_impact_promoted)::text::xid8, pg_current_snapshot()) THEN RAISE EXCEPTION 'op"
    "enclaw-fts: a frequent word was promoted after this transaction''s snapshot was taken: ret"
    "ry the transaction' USING ERRCODE = '40001'; END IF; INSERT INTO message_impact (row_id, t"
    "erm, impact, tf, doc_len) SELECT x.id, x.term, x.impact, x.tf, x.doc_len FROM (SELECT n.id"
    ", t.term, t.min_impact, ts_rank(n.body_tsv, t.term::tsquery, 1) AS impact, coalesce(array_"
    "length(u.positions, 1), 1) AS tf, length(n.body_tsv) AS doc_len FROM openclaw_fts_new_rows"
    " AS n CROSS JOIN LATERAL unnest(n.body_tsv) AS u JOIN message_impact_terms AS t ON t.term "
    "= u.lexeme) AS x WHERE x.impact >= x.min_impact; RETURN NULL; END $$"
)

PG_PROMOTE_FUNCTION = (
    "CREATE OR REPLACE FUNCTION openclaw_fts_impact_promote(min_docs bigint) RETURNS integer LA"
    "NGUAGE plpgsql AS $$ DECLARE w text; n bigint; cut real; added integer := 0; BEGIN IF curr"
    "ent_setting('transaction_isolation') <> 'read committed' OR NOT EXISTS (SELECT DISTINCT e."
    "elem FROM pg_stats AS st JOIN pg_namespace AS ns ON ns.nspname = st.schemaname JOIN pg_cla"
    "ss AS c ON c.relname = st.tablename AND c.relnamespace = ns.oid CROSS JOIN LATERAL unnest("
    "st.most_common_elems::text::text[], st.most_common_elem_freqs) AS e(elem, freq) WHERE st.t"
    "ablename IN ('message_index', 'message_index_by_agent') AND st.attname = 'body_tsv' AND st"
    ".schemaname = current_schema() AND e.elem ~ '^[a-z0-9]{1,64}$' AND e.freq * greatest(c.rel"
    "tuples, 0) >= min_docs AND NOT EXISTS (SELECT 1 FROM message_impact_terms AS t WHERE t.ter"
    "m = e.elem)) THEN RETURN 0; END IF; PERFORM pg_advisory_xact_lock(1706466138); FOR w IN SE"
    "LECT DISTINCT e.elem FROM pg_stats AS st JOIN pg_namespace AS ns ON ns.nspname = st.schema"
    "name JOIN pg_class AS c ON c.relname = st.tablename AND c.relnamespace = ns.oid CROSS JOIN"
    " LATERAL unnest(st.most_common_elems::text::text[], st.most_common_elem_freqs) AS e(elem, "
    "freq) WHERE st.tablename IN ('message_index', 'message_index_by_agent') AND st.attname = '"
    "body_tsv' AND st.schemaname = current_schema() AND e.elem ~ '^[a-z0-9]{1,64}$' AND e.freq "
    "* greatest(c.reltuples, 0) >= min_docs AND NOT EXISTS (SELECT 1 FROM message_impact_terms "
    "AS t WHERE t.term = e.elem) LOOP SELECT count(*) INTO n FROM message_index WHERE body_tsv "
    "@@ w::tsquery; CONTINUE WHEN n < min_docs; IF added = 0 THEN PERFORM setval('openclaw_fts_"
    "impact_promoted', pg_current_xact_id()::text::bigint); END IF; SELECT coalesce((SELECT r F"
    "ROM (SELECT ts_rank(body_tsv, w::tsquery, 1) AS r FROM message_index WHERE body_tsv @@ w::"
    "tsquery ORDER BY 1 DESC OFFSET greatest(512, n / 16) - 1 LIMIT 1) AS z), 0) INTO cut; INSE"
    "RT INTO message_impact (row_id, term, impact, tf, doc_len) SELECT x.id, w, x.impact, x.tf,"
    " x.doc_len FROM (SELECT mi.id, ts_rank(mi.body_tsv, w::tsquery, 1) AS impact, coalesce(arr"
    "ay_length(u.positions, 1), 1) AS tf, length(mi.body_tsv) AS doc_len FROM message_index AS "
    "mi CROSS JOIN LATERAL unnest(mi.body_tsv) AS u WHERE mi.body_tsv @@ w::tsquery AND u.lexem"
    "e = w) AS x WHERE x.impact >= cut; INSERT INTO message_impact_terms (term, docs, avg_len, "
    "min_impact) VALUES (w, n, 0, cut); added := added + 1; END LOOP; RETURN added; END $$"
)

PG_DUE_FUNCTION = (
    "CREATE OR REPLACE FUNCTION openclaw_fts_impact_due() RETURNS trigger LANGUAGE plpgsql AS $"
    "$ DECLARE min_docs bigint := 2000; BEGIN IF current_setting('transaction_isolation') = 're"
    "ad committed' AND EXISTS (SELECT DISTINCT e.elem FROM pg_stats AS st JOIN pg_namespace AS "
    "ns ON ns.nspname = st.schemaname JOIN pg_class AS c ON c.relname = st.tablename AND c.reln"
    "amespace = ns.oid CROSS JOIN LATERAL unnest(st.most_common_elems::text::text[], st.most_co"
    "mmon_elem_freqs) AS e(elem, freq) WHERE st.tablename IN ('message_index', 'message_index_b"
    "y_agent') AND st.attname = 'body_tsv' AND st.schemaname = current_schema() AND e.elem ~ '^"
    "[a-z0-9]{1,64}$' AND e.freq * greatest(c.reltuples, 0) >= min_docs AND NOT EXISTS (SELECT "
    "1 FROM message_impact_terms AS t WHERE t.term = e.elem)) AND pg_try_advisory_xact_lock(170"
    "6466138) THEN PERFORM openclaw_fts_impact_promote(min_docs); END IF; RETURN NULL; END $$"
)

PG_GUARD_TRIGGER = (
    "CREATE TRIGGER message_index_impact_guard BEFORE DELETE ON {table} FOR EACH STATEMENT EXEC"
    "UTE FUNCTION openclaw_fts_impact_guard()"
)

PG_DUE_TRIGGER = (
    "CREATE CONSTRAINT TRIGGER message_index_impact_due AFTER INSERT ON {table} DEFERRABLE INIT"
    "IALLY DEFERRED FOR EACH ROW WHEN (NEW.id % 4096 = 0) EXECUTE FUNCTION openclaw_fts_impact_"
    "due()"
)


# The partitioned layout's change of agent (made by the conversion, not by a revision).
PG_MOVE_FUNCTION = (
    "CREATE OR REPLACE FUNCTION openclaw_fts_message_index_move() RETURNS trigger LANGUAGE plpg"
    "sql AS $$ BEGIN PERFORM pg_advisory_xact_lock_shared(1706466138); IF current_setting('tran"
    "saction_isolation') <> 'read committed' AND NOT pg_visible_in_snapshot((SELECT last_value "
    "FROM openclaw_fts_impact_promoted)::text::xid8, pg_current_snapshot()) THEN RAISE EXCEPTIO"
    "N 'openclaw-fts: a frequent word was promoted after this transaction''s snapshot was taken"
    ": retry the transaction' USING ERRCODE = '40001'; END IF; UPDATE message_index_by_agent SE"
    "T agent_id = NEW.agent_id WHERE agent_id = OLD.agent_id AND session_id = NEW.session_id; I"
    "NSERT INTO message_impact (row_id, term, impact, tf, doc_len) SELECT x.id, x.term, x.impac"
    "t, x.tf, x.doc_len FROM (SELECT n.id, t.term, t.min_impact, ts_rank(n.body_tsv, t.term::ts"
    "query, 1) AS impact, coalesce(array_length(u.positions, 1), 1) AS tf, length(n.body_tsv) A"
    "S doc_len FROM message_index_by_agent AS n CROSS JOIN LATERAL unnest(n.body_tsv) AS u JOIN"
    " message_impact_terms AS t ON t.term = u.lexeme WHERE n.session_id = NEW.session_id) AS x "
    "WHERE x.impact >= x.min_impact ON CONFLICT DO NOTHING; RETURN NULL; END $$"
)

# Revision 0007's, and the conversion's before this revision, for the downgrade.
MOVE_FUNCTION_BEFORE = (
    "CREATE OR REPLACE FUNCTION openclaw_fts_message_index_move() RETURNS trigger LANGUAGE plpg"
    "sql AS $$ BEGIN UPDATE message_index_by_agent SET agent_id = NEW.agent_id WHERE agent_id ="
    " OLD.agent_id AND session_id = NEW.session_id; RETURN NULL; END $$"
)

INSERT_FUNCTION_0007 = (
    "CREATE OR REPLACE FUNCTION openclaw_fts_impact_insert() RETURNS trigger LANGUAGE plpgsql"
    " AS $$ DECLARE lo bigint; hi bigint; BEGIN INSERT INTO message_impact (row_id, term, imp"
    "act, tf, doc_len) SELECT x.id, x.term, x.impact, x.tf, x.doc_len FROM (SELECT n.id, t.te"
    "rm, t.min_impact, ts_rank(n.body_tsv, t.term::tsquery, 1) AS impact, coalesce(array_leng"
    "th(u.positions, 1), 1) AS tf, length(n.body_tsv) AS doc_len FROM openclaw_fts_new_rows A"
    "S n CROSS JOIN LATERAL unnest(n.body_tsv) AS u JOIN message_impact_terms AS t ON t.term "
    "= u.lexeme) AS x WHERE x.impact >= x.min_impact; SELECT min(id), max(id) INTO lo, hi FRO"
    "M openclaw_fts_new_rows; IF hi / 4096 > (lo - 1) / 4096 THEN PERFORM openclaw_fts_impact"
    "_promote(2000); END IF; RETURN NULL; END $$"
)

PROMOTE_FUNCTION_0007 = (
    "CREATE OR REPLACE FUNCTION openclaw_fts_impact_promote(min_docs bigint) RETURNS integer "
    "LANGUAGE plpgsql AS $$ DECLARE w text; n bigint; cut real; added integer := 0; BEGIN FOR"
    " w IN SELECT DISTINCT e.elem FROM pg_stats AS st JOIN pg_namespace AS ns ON ns.nspname ="
    " st.schemaname JOIN pg_class AS c ON c.relname = st.tablename AND c.relnamespace = ns.oi"
    "d CROSS JOIN LATERAL unnest(st.most_common_elems::text::text[], st.most_common_elem_freq"
    "s) AS e(elem, freq) WHERE st.tablename IN ('message_index', 'message_index_by_agent') AN"
    "D st.attname = 'body_tsv' AND st.schemaname = current_schema() AND e.elem ~ '^[a-z0-9]{1"
    ",64}$' AND e.freq * greatest(c.reltuples, 0) >= min_docs AND NOT EXISTS (SELECT 1 FROM m"
    "essage_impact_terms AS t WHERE t.term = e.elem) LOOP SELECT count(*) INTO n FROM message"
    "_index WHERE body_tsv @@ w::tsquery; CONTINUE WHEN n < min_docs; SELECT coalesce((SELECT"
    " r FROM (SELECT ts_rank(body_tsv, w::tsquery, 1) AS r FROM message_index WHERE body_tsv "
    "@@ w::tsquery ORDER BY 1 DESC OFFSET greatest(512, n / 16) - 1 LIMIT 1) AS z), 0) INTO c"
    "ut; INSERT INTO message_impact (row_id, term, impact, tf, doc_len) SELECT x.id, w, x.imp"
    "act, x.tf, x.doc_len FROM (SELECT mi.id, ts_rank(mi.body_tsv, w::tsquery, 1) AS impact, "
    "coalesce(array_length(u.positions, 1), 1) AS tf, length(mi.body_tsv) AS doc_len FROM mes"
    "sage_index AS mi CROSS JOIN LATERAL unnest(mi.body_tsv) AS u WHERE mi.body_tsv @@ w::tsq"
    "uery AND u.lexeme = w) AS x WHERE x.impact >= cut; INSERT INTO message_impact_terms (ter"
    "m, docs, avg_len, min_impact) VALUES (w, n, 0, cut); added := added + 1; END LOOP; RETUR"
    "N added; END $$"
)


def _table() -> str:
    """The table the list triggers are on: the partitioned one when the layout has it."""
    if op.get_context().as_sql:
        return "message_index"
    found = op.get_bind().execute(sa.text("SELECT to_regclass('message_index_by_agent')"))
    return "message_index_by_agent" if found.scalar() is not None else "message_index"


def upgrade() -> None:
    if op.get_context().dialect.name != "postgresql":
        return
    table = _table()
    op.execute(PG_SEQUENCE)
    op.execute(PG_PROMOTE_FUNCTION)
    op.execute(PG_INSERT_FUNCTION)
    op.execute(PG_GUARD_FUNCTION)
    op.execute(PG_DUE_FUNCTION)
    op.execute(PG_GUARD_TRIGGER.format(table=table))
    op.execute(PG_DUE_TRIGGER.format(table=table))
    if table == "message_index_by_agent":
        op.execute(PG_MOVE_FUNCTION)


def downgrade() -> None:
    if op.get_context().dialect.name != "postgresql":
        return
    table = _table()
    op.execute(f"DROP TRIGGER IF EXISTS message_index_impact_due ON {table}")
    op.execute(f"DROP TRIGGER IF EXISTS message_index_impact_guard ON {table}")
    op.execute("DROP FUNCTION IF EXISTS openclaw_fts_impact_due()")
    op.execute("DROP FUNCTION IF EXISTS openclaw_fts_impact_guard()")
    op.execute(INSERT_FUNCTION_0007)
    op.execute(PROMOTE_FUNCTION_0007)
    if table == "message_index_by_agent":
        op.execute(MOVE_FUNCTION_BEFORE)
    op.execute("DROP SEQUENCE IF EXISTS openclaw_fts_impact_promoted")

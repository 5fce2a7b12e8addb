"""PostgreSQL: frequent words get their impact lists from the plugin's own counts, no ``ANALYZE``.

Revision 0009's promotion found its candidates in the planner's statistics (``pg_stats``),
which exist only after an ``ANALYZE``: a host that wrote through the ORM and searched at once,
with no ``optimize()``, had no lists (issue #38: ``all`` very common 78.8 ms at 100k events,
1.73 ms after ``optimize``). Here a new function names the candidates from the words of the
newest index rows (those held there at a rate that makes them frequent in the whole index),
each counted through the GIN index up to the threshold, and from the statistics when there are
any; the promotion and the commit-time check read it. The locks of revision 0009 are kept
unchanged (``openclaw_fts/index/postgresql/impact.py`` argues the design). No table changes.
SQLite: nothing (its writer's checkpoint samples the newest rows already).

Downgrade restores 0009's functions.

Revision ID: 0010_impact_own_counts
Revises: 0009_impact_promotion_lock
Create Date: 2026-12-06
"""

from __future__ import annotations

from alembic import op

revision: str = "0010_impact_own_counts"
down_revision: str | None = "0009_impact_promotion_lock"
branch_labels: tuple[str, ...] | None = None
depends_on: str | None = None

# Frozen at this revision.
PG_CANDIDATES_FUNCTION = (
    "CREATE OR REPLACE FUNCTION openclaw_fts_impact_candidates(min_docs bigint) RETURNS SETOF t"
    "ext LANGUAGE sql STABLE AS $$ SELECT c.w FROM (SELECT s.w FROM (SELECT u.w, count(*) AS k "
    "FROM (SELECT body_tsv AS v FROM message_index ORDER BY id DESC LIMIT 512) AS r CROSS JOIN "
    "LATERAL unnest(tsvector_to_array(r.v)) AS u(w) GROUP BY u.w) AS s, (SELECT count(*) AS n, "
    "max(id) AS top FROM (SELECT id FROM message_index ORDER BY id DESC LIMIT 512) AS q) AS m W"
    "HERE s.w ~ '^[a-z0-9]{1,64}$' AND s.k >= 4 AND s.k * greatest(m.top, 1) >= min_docs * m.n "
    "* 0.6 AND NOT EXISTS (SELECT 1 FROM message_impact_terms AS t WHERE t.term = s.w) UNION SE"
    "LECT DISTINCT e.elem FROM pg_stats AS st JOIN pg_namespace AS ns ON ns.nspname = st.schema"
    "name JOIN pg_class AS c ON c.relname = st.tablename AND c.relnamespace = ns.oid CROSS JOIN"
    " LATERAL unnest(st.most_common_elems::text::text[], st.most_common_elem_freqs) AS e(elem, "
    "freq) WHERE st.tablename IN ('message_index', 'message_index_by_agent') AND st.attname = '"
    "body_tsv' AND st.schemaname = current_schema() AND e.elem ~ '^[a-z0-9]{1,64}$' AND e.freq "
    "* greatest(c.reltuples, 0) >= min_docs AND NOT EXISTS (SELECT 1 FROM message_impact_terms "
    "AS t WHERE t.term = e.elem)) AS c(w) WHERE (SELECT count(*) FROM (SELECT 1 FROM message_in"
    "dex WHERE body_tsv @@ c.w::tsquery LIMIT min_docs) AS z) >= min_docs $$"
)

PG_PROMOTE_FUNCTION = (
    "CREATE OR REPLACE FUNCTION openclaw_fts_impact_promote(min_docs bigint) RETURNS integer LA"
    "NGUAGE plpgsql AS $$ DECLARE w text; n bigint; cut real; added integer := 0; BEGIN IF curr"
    "ent_setting('transaction_isolation') <> 'read committed' OR NOT EXISTS (SELECT x.cand FROM"
    " openclaw_fts_impact_candidates(min_docs) AS x(cand)) THEN RETURN 0; END IF; PERFORM pg_ad"
    "visory_xact_lock(1706466138); FOR w IN SELECT x.cand FROM openclaw_fts_impact_candidates(m"
    "in_docs) AS x(cand) LOOP SELECT count(*) INTO n FROM message_index WHERE body_tsv @@ w::ts"
    "query; CONTINUE WHEN n < min_docs; IF added = 0 THEN PERFORM setval('openclaw_fts_impact_p"
    "romoted', pg_current_xact_id()::text::bigint); END IF; SELECT coalesce((SELECT r FROM (SEL"
    "ECT ts_rank(body_tsv, w::tsquery, 1) AS r FROM message_index WHERE body_tsv @@ w::tsquery "
    "ORDER BY 1 DESC OFFSET greatest(512, n / 16) - 1 LIMIT 1) AS z), 0) INTO cut; INSERT INTO "
    "message_impact (row_id, term, impact, tf, doc_len) SELECT x.id, w, x.impact, x.tf, x.doc_l"
    "en FROM (SELECT mi.id, ts_rank(mi.body_tsv, w::tsquery, 1) AS impact, coalesce(array_lengt"
    "h(u.positions, 1), 1) AS tf, length(mi.body_tsv) AS doc_len FROM message_index AS mi CROSS"
    " JOIN LATERAL unnest(mi.body_tsv) AS u WHERE mi.body_tsv @@ w::tsquery AND u.lexeme = w) A"
    "S x WHERE x.impact >= cut; INSERT INTO message_impact_terms (term, docs, avg_len, min_impa"
    "ct) VALUES (w, n, 0, cut); added := added + 1; END LOOP; RETURN added; END $$"
)

PG_DUE_FUNCTION = (
    "CREATE OR REPLACE FUNCTION openclaw_fts_impact_due() RETURNS trigger LANGUAGE plpgsql AS $"
    "$ DECLARE min_docs bigint := 2000; BEGIN IF current_setting('transaction_isolation') = 're"
    "ad committed' AND EXISTS (SELECT x.cand FROM openclaw_fts_impact_candidates(min_docs) AS x"
    "(cand)) AND pg_try_advisory_xact_lock(1706466138) THEN PERFORM openclaw_fts_impact_promote"
    "(min_docs); END IF; RETURN NULL; END $$"
)

# Revision 0009's, for the downgrade.
PROMOTE_FUNCTION_0009 = (
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

DUE_FUNCTION_0009 = (
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


def upgrade() -> None:
    if op.get_context().dialect.name != "postgresql":
        return
    op.execute(PG_CANDIDATES_FUNCTION)
    op.execute(PG_PROMOTE_FUNCTION)
    op.execute(PG_DUE_FUNCTION)


def downgrade() -> None:
    if op.get_context().dialect.name != "postgresql":
        return
    op.execute(DUE_FUNCTION_0009)
    op.execute(PROMOTE_FUNCTION_0009)
    op.execute("DROP FUNCTION IF EXISTS openclaw_fts_impact_candidates(bigint)")

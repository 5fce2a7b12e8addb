"""PostgreSQL: a promotion tracks at most ``PROMOTE_MAX_WORDS`` words, the most frequent first.

The writer's commit-time promotion (at a ``PROMOTE_EVERY_ROWS`` boundary) and the reconciler's
``promote_if_free`` tracked EVERY candidate word they found, each counted, ranked and listed
in the committing writer's transaction (or under the lock every writer needs). One autovacuum
``ANALYZE`` of a big store names hundreds of newly frequent words at once: measured at 5m rows,
~100 ms a word near the threshold, ~1 s for one in 50k rows, and a first ``ANALYZE`` naming
2,689 words kept one ``append_many`` promoting for minutes (bench/NOTES.md, issue #38). Here
``openclaw_fts_impact_promote(bigint)`` is replaced by ``openclaw_fts_impact_promote(min_docs
bigint, max_words integer)``, which stops once ``max_words`` are tracked (NULL: no bound, what
``optimize`` passes); the candidates function returns the most frequent first (the larger of
the newest rows' and the statistics' estimates), sorted before any is counted, so a bounded
promotion counts only the candidates it reads; the commit-time function passes the bound
(8, ``openclaw_fts/index/impact.py``). The rest wait for the next boundary or pass. The locks
of revision 0009 are unchanged. No table changes. SQLite: nothing (its writer's checkpoint
tracks its words itself).

Downgrade restores 0010's functions.

Revision ID: 0012_impact_promotion_bounded
Revises: 0011_index_rows_by_time
Create Date: 2026-12-07
"""

from __future__ import annotations

from alembic import op

revision: str = "0012_impact_promotion_bounded"
down_revision: str | None = "0011_index_rows_by_time"
branch_labels: tuple[str, ...] | None = None
depends_on: str | None = None

# Frozen at this revision.
PG_CANDIDATES_FUNCTION = (
    "CREATE OR REPLACE FUNCTION openclaw_fts_impact_candidates(min_docs bigint) RETURNS SETOF te"
    "xt LANGUAGE sql STABLE AS $$ SELECT c.w FROM (SELECT a.w FROM (SELECT s.w, s.k::float8 * gr"
    "eatest(s.top, 1) / greatest(s.n, 1) FROM (SELECT u.w, count(*) AS k, max(r.n) AS n, max(r.t"
    "op) AS top FROM (SELECT q.v, count(*) OVER () AS n, max(q.id) OVER () AS top FROM (SELECT i"
    "d, body_tsv AS v FROM message_index ORDER BY id DESC LIMIT 512) AS q) AS r CROSS JOIN LATER"
    "AL unnest(tsvector_to_array(r.v)) AS u(w) GROUP BY u.w) AS s WHERE s.w ~ '^[a-z0-9]{1,64}$'"
    " AND s.k >= 4 AND s.k * greatest(s.top, 1) >= min_docs * s.n * 0.6 AND NOT EXISTS (SELECT 1"
    " FROM message_impact_terms AS t WHERE t.term = s.w) UNION ALL SELECT e.elem, e.freq * great"
    "est(c.reltuples, 0) FROM pg_stats AS st JOIN pg_namespace AS ns ON ns.nspname = st.schemana"
    "me JOIN pg_class AS c ON c.relname = st.tablename AND c.relnamespace = ns.oid CROSS JOIN LA"
    "TERAL unnest(st.most_common_elems::text::text[], st.most_common_elem_freqs) AS e(elem, freq"
    ") WHERE st.tablename IN ('message_index', 'message_index_by_agent') AND st.attname = 'body_"
    "tsv' AND st.schemaname = current_schema() AND e.elem ~ '^[a-z0-9]{1,64}$' AND e.freq * grea"
    "test(c.reltuples, 0) >= min_docs AND NOT EXISTS (SELECT 1 FROM message_impact_terms AS t WH"
    "ERE t.term = e.elem)) AS a(w, est) GROUP BY a.w ORDER BY max(a.est) DESC, a.w OFFSET 0) AS "
    "c(w) WHERE (SELECT count(*) FROM (SELECT 1 FROM message_index WHERE body_tsv @@ c.w::tsquer"
    "y LIMIT min_docs) AS z) >= min_docs $$"
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
    " 0) INTO cut; INSERT INTO message_impact (row_id, term, impact, tf, doc_len) SELECT x.id, w"
    ", x.impact, x.tf, x.doc_len FROM (SELECT mi.id, ts_rank(mi.body_tsv, w::tsquery, 1) AS impa"
    "ct, coalesce(array_length(u.positions, 1), 1) AS tf, length(mi.body_tsv) AS doc_len FROM me"
    "ssage_index AS mi CROSS JOIN LATERAL unnest(mi.body_tsv) AS u WHERE mi.body_tsv @@ w::tsque"
    "ry AND u.lexeme = w) AS x WHERE x.impact >= cut; INSERT INTO message_impact_terms (term, do"
    "cs, avg_len, min_impact) VALUES (w, n, 0, cut); added := added + 1; EXIT WHEN added >= max_"
    "words; END LOOP; RETURN added; END $$"
)

PG_DUE_FUNCTION = (
    "CREATE OR REPLACE FUNCTION openclaw_fts_impact_due() RETURNS trigger LANGUAGE plpgsql AS $$"
    " DECLARE min_docs bigint := 2000; BEGIN IF current_setting('transaction_isolation') = 'read"
    " committed' AND EXISTS (SELECT x.cand FROM openclaw_fts_impact_candidates(min_docs) AS x(ca"
    "nd)) AND pg_try_advisory_xact_lock(1706466138) THEN PERFORM openclaw_fts_impact_promote(min"
    "_docs, 8); END IF; RETURN NULL; END $$"
)

# Revision 0010's, for the downgrade.
CANDIDATES_FUNCTION_0010 = (
    "CREATE OR REPLACE FUNCTION openclaw_fts_impact_candidates(min_docs bigint) RETURNS SETOF te"
    "xt LANGUAGE sql STABLE AS $$ SELECT c.w FROM (SELECT s.w FROM (SELECT u.w, count(*) AS k FR"
    "OM (SELECT body_tsv AS v FROM message_index ORDER BY id DESC LIMIT 512) AS r CROSS JOIN LAT"
    "ERAL unnest(tsvector_to_array(r.v)) AS u(w) GROUP BY u.w) AS s, (SELECT count(*) AS n, max("
    "id) AS top FROM (SELECT id FROM message_index ORDER BY id DESC LIMIT 512) AS q) AS m WHERE "
    "s.w ~ '^[a-z0-9]{1,64}$' AND s.k >= 4 AND s.k * greatest(m.top, 1) >= min_docs * m.n * 0.6 "
    "AND NOT EXISTS (SELECT 1 FROM message_impact_terms AS t WHERE t.term = s.w) UNION SELECT DI"
    "STINCT e.elem FROM pg_stats AS st JOIN pg_namespace AS ns ON ns.nspname = st.schemaname JOI"
    "N pg_class AS c ON c.relname = st.tablename AND c.relnamespace = ns.oid CROSS JOIN LATERAL "
    "unnest(st.most_common_elems::text::text[], st.most_common_elem_freqs) AS e(elem, freq) WHER"
    "E st.tablename IN ('message_index', 'message_index_by_agent') AND st.attname = 'body_tsv' A"
    "ND st.schemaname = current_schema() AND e.elem ~ '^[a-z0-9]{1,64}$' AND e.freq * greatest(c"
    ".reltuples, 0) >= min_docs AND NOT EXISTS (SELECT 1 FROM message_impact_terms AS t WHERE t."
    "term = e.elem)) AS c(w) WHERE (SELECT count(*) FROM (SELECT 1 FROM message_index WHERE body"
    "_tsv @@ c.w::tsquery LIMIT min_docs) AS z) >= min_docs $$"
)

PROMOTE_FUNCTION_0010 = (
    "CREATE OR REPLACE FUNCTION openclaw_fts_impact_promote(min_docs bigint) RETURNS integer LAN"
    "GUAGE plpgsql AS $$ DECLARE w text; n bigint; cut real; added integer := 0; BEGIN IF curren"
    "t_setting('transaction_isolation') <> 'read committed' OR NOT EXISTS (SELECT x.cand FROM op"
    "enclaw_fts_impact_candidates(min_docs) AS x(cand)) THEN RETURN 0; END IF; PERFORM pg_adviso"
    "ry_xact_lock(1706466138); FOR w IN SELECT x.cand FROM openclaw_fts_impact_candidates(min_do"
    "cs) AS x(cand) LOOP SELECT count(*) INTO n FROM message_index WHERE body_tsv @@ w::tsquery;"
    " CONTINUE WHEN n < min_docs; IF added = 0 THEN PERFORM setval('openclaw_fts_impact_promoted"
    "', pg_current_xact_id()::text::bigint); END IF; SELECT coalesce((SELECT r FROM (SELECT ts_r"
    "ank(body_tsv, w::tsquery, 1) AS r FROM message_index WHERE body_tsv @@ w::tsquery ORDER BY "
    "1 DESC OFFSET greatest(512, n / 16) - 1 LIMIT 1) AS z), 0) INTO cut; INSERT INTO message_im"
    "pact (row_id, term, impact, tf, doc_len) SELECT x.id, w, x.impact, x.tf, x.doc_len FROM (SE"
    "LECT mi.id, ts_rank(mi.body_tsv, w::tsquery, 1) AS impact, coalesce(array_length(u.position"
    "s, 1), 1) AS tf, length(mi.body_tsv) AS doc_len FROM message_index AS mi CROSS JOIN LATERAL"
    " unnest(mi.body_tsv) AS u WHERE mi.body_tsv @@ w::tsquery AND u.lexeme = w) AS x WHERE x.im"
    "pact >= cut; INSERT INTO message_impact_terms (term, docs, avg_len, min_impact) VALUES (w, "
    "n, 0, cut); added := added + 1; END LOOP; RETURN added; END $$"
)

DUE_FUNCTION_0010 = (
    "CREATE OR REPLACE FUNCTION openclaw_fts_impact_due() RETURNS trigger LANGUAGE plpgsql AS $$"
    " DECLARE min_docs bigint := 2000; BEGIN IF current_setting('transaction_isolation') = 'read"
    " committed' AND EXISTS (SELECT x.cand FROM openclaw_fts_impact_candidates(min_docs) AS x(ca"
    "nd)) AND pg_try_advisory_xact_lock(1706466138) THEN PERFORM openclaw_fts_impact_promote(min"
    "_docs); END IF; RETURN NULL; END $$"
)


def upgrade() -> None:
    if op.get_context().dialect.name != "postgresql":
        return
    op.execute("DROP FUNCTION IF EXISTS openclaw_fts_impact_promote(bigint)")
    op.execute(PG_CANDIDATES_FUNCTION)
    op.execute(PG_PROMOTE_FUNCTION)
    op.execute(PG_DUE_FUNCTION)


def downgrade() -> None:
    if op.get_context().dialect.name != "postgresql":
        return
    op.execute(DUE_FUNCTION_0010)
    op.execute("DROP FUNCTION IF EXISTS openclaw_fts_impact_promote(bigint, integer)")
    op.execute(PROMOTE_FUNCTION_0010)
    op.execute(CANDIDATES_FUNCTION_0010)

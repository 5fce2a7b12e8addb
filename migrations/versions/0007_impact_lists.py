"""Impact lists of frequent words: ``message_impact`` and ``message_impact_terms``.

For each tracked word (held by at least ``FREQUENT_TERM_MIN_DOCS`` messages, plain ASCII
letters and digits) one row per index row that holds it, with the word's score factor in that
row, indexed by ``(term, impact)``: a one-word search walks the list from the top instead of
ranking every match (``openclaw_fts/index/impact.py``). A list row is deleted with its index
row (a foreign key with ``ON DELETE CASCADE``; on SQLite also a trigger, for connections
without foreign keys). On PostgreSQL an ``AFTER INSERT`` statement trigger on
``message_index`` writes the rows of new index rows and, every few thousand rows, tracks the
words the planner's statistics show became frequent (plpgsql functions, frozen copies below);
on SQLite the plugin's writer does both.

Upgrade on a database holding index rows: the backfill tracks every frequent word and writes
its whole list (SQLite: from FTS5's vocabulary and row sizes; PostgreSQL: after an ``ANALYZE``
of the index rows, from the most common lexemes). The partitioned layout (which only a
database at head can have) is not met here. Downgrade drops the tables, trigger and functions.

Revision ID: 0007_impact_lists
Revises: 0006_tsvector_statistics
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0007_impact_lists"
down_revision: str | None = "0006_tsvector_statistics"
branch_labels: tuple[str, ...] | None = None
depends_on: str | None = None

# Frozen at this revision.
MIN_DOCS = 2000
TERM = sa.String(64)

SQLITE_DELETE_TRIGGER = (
    "CREATE TRIGGER IF NOT EXISTS message_index_impact_delete AFTER DELETE ON message_index "
    "BEGIN DELETE FROM message_impact WHERE row_id = old.id; END"
)

PG_INSERT_FUNCTION = (
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

PG_DELETE_FUNCTION = (
    "CREATE OR REPLACE FUNCTION openclaw_fts_impact_delete() RETURNS trigger LANGUAGE plpgsql"
    " AS $$ BEGIN DELETE FROM message_impact WHERE row_id = OLD.id; RETURN NULL; END $$"
)

PG_PROMOTE_FUNCTION = (
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

PG_INSERT_TRIGGER = (
    "CREATE TRIGGER message_index_impact_insert AFTER INSERT ON message_index REFERENCING NEW"
    " TABLE AS openclaw_fts_new_rows FOR EACH STATEMENT EXECUTE FUNCTION openclaw_fts_impact_"
    "insert()"
)


def upgrade() -> None:
    dialect = op.get_context().dialect.name
    op.create_table(
        "message_impact_terms",
        sa.Column("term", TERM, nullable=False),
        sa.Column("docs", sa.Integer(), nullable=False),
        sa.Column("avg_len", sa.Float(), nullable=False),
        sa.Column("min_impact", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("term"),
    )
    op.create_table(
        "message_impact",
        sa.Column("row_id", sa.Integer(), nullable=False),
        sa.Column("term", TERM, nullable=False),
        sa.Column("impact", sa.Float(), nullable=False),
        sa.Column("tf", sa.Integer(), nullable=False),
        sa.Column("doc_len", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["row_id"],
            ["message_index.id"],
            name="fk_message_impact_row_id",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("row_id", "term"),
        sqlite_with_rowid=False,
    )
    op.create_index("ix_message_impact_walk", "message_impact", ["term", "impact"])
    if dialect == "sqlite":
        op.execute(SQLITE_DELETE_TRIGGER)
    elif dialect == "postgresql":
        op.execute(PG_PROMOTE_FUNCTION)
        op.execute(PG_INSERT_FUNCTION)
        op.execute(PG_DELETE_FUNCTION)
        op.execute(PG_INSERT_TRIGGER)
    if op.get_context().as_sql:
        return
    _backfill(dialect)


def _backfill(dialect: str) -> None:
    """Track every word that is frequent already, with its whole list."""
    bind = op.get_bind()
    if dialect == "sqlite":
        from openclaw_fts.index.probes import backfill_probes_of

        backfill_probes_of(bind).track_frequent(bind, MIN_DOCS)
    elif (
        dialect == "postgresql"
        and bind.execute(sa.text("SELECT EXISTS (SELECT 1 FROM message_index)")).scalar()
    ):
        op.execute("ANALYZE message_index")
        bind.execute(sa.text("SELECT openclaw_fts_impact_promote(:n)"), {"n": MIN_DOCS})


def downgrade() -> None:
    dialect = op.get_context().dialect.name
    if dialect == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS message_index_impact_delete")
    elif dialect == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS message_index_impact_insert ON message_index")
    op.drop_index("ix_message_impact_walk", table_name="message_impact")
    op.drop_table("message_impact")
    op.drop_table("message_impact_terms")
    if dialect == "postgresql":
        for function in (
            "openclaw_fts_impact_insert()",
            "openclaw_fts_impact_delete()",
            "openclaw_fts_impact_promote(bigint)",
        ):
            op.execute(f"DROP FUNCTION IF EXISTS {function}")

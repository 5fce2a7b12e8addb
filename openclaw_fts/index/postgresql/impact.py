"""The impact lists on PostgreSQL (:mod:`..impact`): kept by triggers, walked by search.

Invariant: every tracked word's list holds exactly the index rows whose ``body_tsv`` has the
word as a lexeme and whose impact reaches the word's ``min_impact``, each with ``impact =
ts_rank(body_tsv, word, 1)``, the very score the exact
path ranks by (a one-lexeme query's ``ts_rank`` depends on the row alone), so a list's order
IS the exact order. The rows are written by an ``AFTER INSERT`` statement trigger on the index
rows (:data:`INSERT_TRIGGER`, from the rows' transition table, in the inserting statement's
transaction, whatever inserted them) and removed with their index row (the foreign key's
cascade on the flat layout; a row trigger, :data:`DELETE_TRIGGER`, on the partitioned one);
a word becomes tracked only in the statement that writes its whole list
(:data:`PROMOTE_FUNCTION`, which reads the planner's statistics of the most common lexemes:
no scan of the index). Tracked words are plain ASCII letters and digits, which are their own
``tsquery`` text. The DDL here is what revision 0007 creates (it keeps frozen copies).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, text

from ..impact import (
    FREQUENT_TERM_MIN_DOCS,
    IMPACT_TABLE,
    LIST_DIVISOR,
    LIST_MIN_ROWS,
    MAX_TERM_CHARS,
    PROMOTE_EVERY_ROWS,
    TERMS_TABLE,
    WALK_CAP_ROWS,
)
from .names import CONTENT_TABLE, TSVECTOR_COLUMN

INSERT_FUNCTION = "openclaw_fts_impact_insert"
INSERT_TRIGGER = "message_index_impact_insert"
DELETE_FUNCTION = "openclaw_fts_impact_delete"
DELETE_TRIGGER = "message_index_impact_delete"
PROMOTE_FUNCTION = "openclaw_fts_impact_promote"
#: The foreign key of the flat layout (rows follow their index row).
ROW_FOREIGN_KEY = "fk_message_impact_row_id"
#: A tracked word as a regular expression (``impact.TERM_PATTERN``).
TERM_REGEX = f"^[a-z0-9]{{1,{MAX_TERM_CHARS}}}$"
_NEW_ROWS = "openclaw_fts_new_rows"

#: The function behind :data:`INSERT_TRIGGER`: the new rows' list rows (those reaching their
#: word's ``min_impact``); it looks for newly frequent words when the new rows' ids cross a
#: multiple of ``PROMOTE_EVERY_ROWS``.
CREATE_INSERT_FUNCTION = (
    f"CREATE OR REPLACE FUNCTION {INSERT_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$ "
    "DECLARE lo bigint; hi bigint; BEGIN "
    f"INSERT INTO {IMPACT_TABLE} (row_id, term, impact, tf, doc_len) "
    "SELECT x.id, x.term, x.impact, x.tf, x.doc_len FROM (SELECT n.id, t.term, t.min_impact, "
    f"ts_rank(n.{TSVECTOR_COLUMN}, t.term::tsquery, 1) AS impact, "
    f"coalesce(array_length(u.positions, 1), 1) AS tf, length(n.{TSVECTOR_COLUMN}) AS doc_len "
    f"FROM {_NEW_ROWS} AS n CROSS JOIN LATERAL unnest(n.{TSVECTOR_COLUMN}) AS u "
    f"JOIN {TERMS_TABLE} AS t ON t.term = u.lexeme) AS x WHERE x.impact >= x.min_impact; "
    f"SELECT min(id), max(id) INTO lo, hi FROM {_NEW_ROWS}; "
    f"IF hi / {PROMOTE_EVERY_ROWS} > (lo - 1) / {PROMOTE_EVERY_ROWS} THEN "
    f"PERFORM {PROMOTE_FUNCTION}({FREQUENT_TERM_MIN_DOCS}); END IF; "
    "RETURN NULL; END $$"
)
#: Deletes the list rows of a deleted index row (the partitioned layout, where no foreign key
#: can name ``id`` alone).
CREATE_DELETE_FUNCTION = (
    f"CREATE OR REPLACE FUNCTION {DELETE_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$ "
    f"BEGIN DELETE FROM {IMPACT_TABLE} WHERE row_id = OLD.id; RETURN NULL; END $$"
)
#: Tracks every word of the planner's most-common-lexeme statistics of the index rows that at
#: least ``min_docs`` rows hold (estimated from the statistics, then counted) and is not
#: tracked yet: its list (the rows reaching the impact of its
#: ``max(LIST_MIN_ROWS, docs / LIST_DIVISOR)``-th best row), then its ``message_impact_terms``
#: row. Returns how many words it tracked.
CREATE_PROMOTE_FUNCTION = (
    f"CREATE OR REPLACE FUNCTION {PROMOTE_FUNCTION}(min_docs bigint) RETURNS integer "
    "LANGUAGE plpgsql AS $$ DECLARE w text; n bigint; cut real; added integer := 0; BEGIN "
    "FOR w IN SELECT DISTINCT e.elem FROM pg_stats AS st "
    "JOIN pg_namespace AS ns ON ns.nspname = st.schemaname "
    "JOIN pg_class AS c ON c.relname = st.tablename AND c.relnamespace = ns.oid "
    "CROSS JOIN LATERAL unnest(st.most_common_elems::text::text[], "
    "st.most_common_elem_freqs) AS e(elem, freq) "
    f"WHERE st.tablename IN ('{CONTENT_TABLE}', 'message_index_by_agent') "
    f"AND st.attname = '{TSVECTOR_COLUMN}' AND st.schemaname = current_schema() "
    f"AND e.elem ~ '{TERM_REGEX}' AND e.freq * greatest(c.reltuples, 0) >= min_docs "
    f"AND NOT EXISTS (SELECT 1 FROM {TERMS_TABLE} AS t WHERE t.term = e.elem) LOOP "
    f"SELECT count(*) INTO n FROM {CONTENT_TABLE} WHERE {TSVECTOR_COLUMN} @@ w::tsquery; "
    "CONTINUE WHEN n < min_docs; "
    f"SELECT coalesce((SELECT r FROM (SELECT ts_rank({TSVECTOR_COLUMN}, w::tsquery, 1) AS r "
    f"FROM {CONTENT_TABLE} WHERE {TSVECTOR_COLUMN} @@ w::tsquery ORDER BY 1 DESC "
    f"OFFSET greatest({LIST_MIN_ROWS}, n / {LIST_DIVISOR}) - 1 LIMIT 1) AS z), 0) INTO cut; "
    f"INSERT INTO {IMPACT_TABLE} (row_id, term, impact, tf, doc_len) "
    "SELECT x.id, w, x.impact, x.tf, x.doc_len FROM (SELECT mi.id, "
    f"ts_rank(mi.{TSVECTOR_COLUMN}, w::tsquery, 1) AS impact, "
    f"coalesce(array_length(u.positions, 1), 1) AS tf, length(mi.{TSVECTOR_COLUMN}) AS doc_len "
    f"FROM {CONTENT_TABLE} AS mi CROSS JOIN LATERAL unnest(mi.{TSVECTOR_COLUMN}) AS u "
    f"WHERE mi.{TSVECTOR_COLUMN} @@ w::tsquery AND u.lexeme = w) AS x WHERE x.impact >= cut; "
    f"INSERT INTO {TERMS_TABLE} (term, docs, avg_len, min_impact) VALUES (w, n, 0, cut); "
    "added := added + 1; END LOOP; RETURN added; END $$"
)


def create_triggers_sql(table: str) -> list[str]:
    """The statements that attach the list triggers to ``table`` (the flat ``message_index``,
    or the partitioned table; the delete trigger only there)."""
    statements = [
        f"CREATE TRIGGER {INSERT_TRIGGER} AFTER INSERT ON {table} "
        f"REFERENCING NEW TABLE AS {_NEW_ROWS} FOR EACH STATEMENT "
        f"EXECUTE FUNCTION {INSERT_FUNCTION}()"
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
    from the lists and its insert trigger, as revision 0007 made them."""
    conn.execute(
        text(
            f"ALTER TABLE {IMPACT_TABLE} ADD CONSTRAINT {ROW_FOREIGN_KEY} FOREIGN KEY (row_id) "
            f"REFERENCES {CONTENT_TABLE} (id) ON DELETE CASCADE"
        )
    )
    for statement in create_triggers_sql(CONTENT_TABLE):
        conn.execute(text(statement))


def promote(conn: Connection, min_docs: int = FREQUENT_TERM_MIN_DOCS) -> int:
    """Track the newly frequent words the planner's statistics name (after ``ANALYZE``)."""
    return int(conn.execute(text(f"SELECT {PROMOTE_FUNCTION}(:n)"), {"n": min_docs}).scalar() or 0)


def rebuild(conn: Connection) -> None:
    """Rewrite every tracked word's list from the index rows (its ``min_impact`` kept)."""
    conn.execute(text(f"DELETE FROM {IMPACT_TABLE}"))
    conn.execute(
        text(
            f"INSERT INTO {IMPACT_TABLE} (row_id, term, impact, tf, doc_len) "
            "SELECT x.id, x.term, x.impact, x.tf, x.doc_len FROM (SELECT mi.id, t.term, "
            f"t.min_impact, ts_rank(mi.{TSVECTOR_COLUMN}, t.term::tsquery, 1) AS impact, "
            "coalesce(array_length(u.positions, 1), 1) AS tf, "
            f"length(mi.{TSVECTOR_COLUMN}) AS doc_len FROM {TERMS_TABLE} AS t "
            f"JOIN {CONTENT_TABLE} AS mi ON mi.{TSVECTOR_COLUMN} @@ t.term::tsquery "
            f"CROSS JOIN LATERAL unnest(mi.{TSVECTOR_COLUMN}) AS u WHERE u.lexeme = t.term) "
            "AS x WHERE x.impact >= x.min_impact"
        )
    )


def drift(conn: Connection) -> dict[str, dict[str, int]]:
    """Each tracked word whose list differs from the rows whose ``tsvector`` holds it with an
    impact reaching its ``min_impact``."""
    should = (
        f"SELECT mi.id FROM {CONTENT_TABLE} AS mi WHERE mi.{TSVECTOR_COLUMN} @@ t.term::tsquery "
        f"AND ts_rank(mi.{TSVECTOR_COLUMN}, t.term::tsquery, 1) >= t.min_impact"
    )
    has = f"SELECT i.row_id FROM {IMPACT_TABLE} AS i WHERE i.term = t.term"
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


#: Every tracked word (a search remembers them per pooled connection).
TRACKED_WORDS_SQL = f"SELECT term FROM {TERMS_TABLE}"
#: Whether ``:impact_word`` is tracked, as a column named ``tracked``.
TRACKED_SQL = f"EXISTS (SELECT 1 FROM {TERMS_TABLE} AS tt WHERE tt.term = :impact_word) AS tracked"


def walk_sql(where: str, scope: str, condition: str = "") -> str:
    """The walk of a word's list: its first :data:`WALK_CAP_ROWS` rows in descending impact,
    joined to their index rows and sessions, the first ``:impact_rows`` that satisfy ``where``
    (the visibility over ``s``), ``scope`` and ``condition`` (each ``''`` or ``' AND …'``),
    with their bodies. ``WITH TIES`` at both cuts: the rows tied on the impact at a cut come
    along, so the exact path's tie-break (newest, session key, message id, row id) can order
    them. Rows in descending impact only: the planner reads the list's index backwards through
    nested loops and stops at the limit (a sort on the exact path's whole key would read every
    row of the walk first). ``rank`` is the impact as ``ts_rank`` returns it (a ``real``; the
    column holds it widened), so a score is the exact path's to the last digit."""
    return (
        "SELECT mi.id, mi.session_id, mi.seq, mi.event_id, mi.role, mi.timestamp_ms, "
        "s.session_key, -CAST(i.impact AS real) AS rank, mi.body "
        f"FROM (SELECT row_id, impact FROM {IMPACT_TABLE} WHERE term = :impact_word "
        "ORDER BY impact DESC FETCH FIRST :impact_cap ROWS WITH TIES) AS i "
        f"JOIN {CONTENT_TABLE} AS mi ON mi.id = i.row_id "
        "JOIN openclaw_sessions AS s ON s.session_id = mi.session_id "
        f"WHERE {where}{scope}{condition} "
        "ORDER BY i.impact DESC FETCH FIRST :impact_rows ROWS WITH TIES"
    )


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
) -> list[Any] | None:
    """The first ``want`` visible rows of ``word``'s list in the exact path's order, with
    their bodies, in one statement; None when the list's first :data:`WALK_CAP_ROWS` rows
    hold fewer than ``want`` visible ones (or the word is not tracked: its list is empty).
    ``where``/``scope``: the visibility over sessions ``s`` and index rows ``mi``;
    ``condition``: the pending condition ('' when nothing visible is pending)."""
    bound = {**params, **walk_params(word, want)}
    rows = list(conn.execute(text(walk_sql(where, scope, condition)), bound).all())
    if len(rows) < want:
        return None
    rows.sort(key=exact_order)
    return rows[:want]

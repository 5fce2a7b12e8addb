"""What the engine-neutral tests need to look under the index on each engine: how to count the
rows a word matches, and the engine's own full-text integrity check."""

from __future__ import annotations

from sqlalchemy import Connection, Engine, TextClause, text

from openclaw_fts.index.postgresql import TEXT_SEARCH_CONFIG, TSVECTOR_COLUMN

_COUNT = {
    "sqlite": "SELECT count(*) FROM message_fts WHERE message_fts MATCH :w",
    "postgresql": (
        f"SELECT count(*) FROM message_index WHERE {TSVECTOR_COLUMN} @@ "
        f"to_tsquery('{TEXT_SEARCH_CONFIG}'::regconfig, :w)"
    ),
}


def count_matches_sql(conn: Connection) -> TextClause:
    """A statement counting the index rows whose text holds the word ``:w``."""
    return text(_COUNT[conn.dialect.name])


def count_matches(conn: Connection, word: str) -> int:
    return int(conn.execute(count_matches_sql(conn), {"w": word}).scalar_one())


def full_text_integrity(engine: Engine) -> None:
    """FTS5's integrity check on SQLite (raises on corruption); nothing to check on PostgreSQL,
    where the ``tsvector`` is a column the server generates from the row's own body."""
    if engine.dialect.name != "sqlite":
        return
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "INSERT INTO message_fts(message_fts, rank) VALUES ('integrity-check', 1)"
        )

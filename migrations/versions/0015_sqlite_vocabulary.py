"""SQLite: the index's words, kept by the writer, where a search that finds nothing reads its near
words' candidates.

A search that finds nothing reads the candidates of a misspelt word from the index's vocabulary:
on SQLite FTS5's ``fts5vocab``, which counts every term it reads by walking the term's whole
doclist, so reading the two-letter range of a word's candidates was 0.5-0.9 ms of a ~1 ms miss
at 100k events against a 0.3-0.45 ms hit (bench/NOTES.md). Here ``message_vocabulary`` (one
row per term, ``WITHOUT ROWID``) holds the terms of the index made of letters only, filled once
from ``fts5vocab``; the writer adds the words of the rows it indexes
(``openclaw_fts/index/sqlite/vocabulary.py`` says how, and why a superset is harmless), and a
range of it is a B-tree read. PostgreSQL: nothing.

Idempotent (a database stamped back to 0014 with the table kept upgrades again: the terms
already there are kept). Downgrade drops the table.

Revision ID: 0015_sqlite_vocabulary
Revises: 0014_pending_sessions
Create Date: 2026-12-07
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

revision: str = "0015_sqlite_vocabulary"
down_revision: str | None = "0014_pending_sessions"
branch_labels: tuple[str, ...] | None = None
depends_on: str | None = None

# Frozen at this revision.
TABLE = "message_vocabulary"
CREATE_TABLE = (
    "CREATE TABLE IF NOT EXISTS message_vocabulary (term TEXT NOT NULL, "
    "CONSTRAINT pk_message_vocabulary PRIMARY KEY (term)) WITHOUT ROWID"
)
VOCAB = "temp.openclaw_fts_vocab_0015"
CREATE_VOCAB = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {VOCAB} USING fts5vocab(main, 'message_fts', 'row')"
)
#: Terms inserted per statement.
FILL_CHUNK = 10_000


def upgrade() -> None:
    if op.get_context().dialect.name != "sqlite":
        return
    op.execute(CREATE_TABLE)
    if op.get_context().as_sql:
        return
    bind = op.get_bind()
    bind.execute(sa.text(CREATE_VOCAB))
    terms = [
        str(term)
        for (term,) in bind.execute(sa.text(f"SELECT term FROM {VOCAB}"))
        if str(term).isalpha()
    ]
    bind.execute(sa.text(f"DROP TABLE IF EXISTS {VOCAB}"))
    for start in range(0, len(terms), FILL_CHUNK):
        bind.execute(
            sa.text(f"INSERT OR IGNORE INTO {TABLE} (term) SELECT value FROM json_each(:terms)"),
            {"terms": json.dumps(terms[start : start + FILL_CHUNK])},
        )


def downgrade() -> None:
    if op.get_context().dialect.name != "sqlite":
        return
    op.execute(f"DROP TABLE IF EXISTS {TABLE}")

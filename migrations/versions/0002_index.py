"""Full-text index: index state, content table, FTS5 table, reconcile lease.

Creates empty tables only — never a backfill — so it runs in milliseconds whatever the data
size. Sessions stored before it have no index state, which makes them pending: the reconciler
indexes them in the background.

Per dialect: on SQLite the FTS5 table and its triggers; on PostgreSQL the ``unaccent``
extension (created if missing; a clear error naming it when that is not possible), a text
search configuration (``simple`` with ``unaccent`` for word tokens), a stored generated
``tsvector`` column over ``message_index.body`` (ASCII punctuation read as spaces), a GIN index
on it, and the two transcript triggers in plpgsql (``last_seq`` follows raw inserts; a
deleted event makes its session dirty). Downgrade drops what it created except the extension
(a server-wide object other schemas may use).

Table names: on a database made by this release (0001 created ``openclaw_sessions``) the index
state table is ``openclaw_index_state`` and the triggers and plpgsql bodies name the
namespaced tables; on one an earlier release took to 0001 (``sessions``) they are the old
names, which 0005 renames. Constraint names are those 0005 gives either way
(``uq_index_state_session_id`` keeps its old name, as 0005 keeps it).

Revision ID: 0002_index
Revises: 0001_transcripts
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.exc import DBAPIError

from openclaw_fts.errors import UnsupportedDatabaseError

# seq columns: 64-bit on every engine (SQLite's INTEGER is; BIGINT elsewhere).
SEQ = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

revision: str = "0002_index"
down_revision: str | None = "0001_transcripts"
branch_labels: tuple[str, ...] | None = None
depends_on: str | None = None

KEY = sa.String(512)

#: The names earlier releases gave the tables, and the namespaced names (frozen, as in 0001).
OLD = {"sessions": "sessions", "index_state": "index_state"}
NEW = {"sessions": "openclaw_sessions", "index_state": "openclaw_index_state"}


def _names() -> dict[str, str]:
    """The names of the database at hand: namespaced (0001 of this release made
    ``openclaw_sessions``), or those of an earlier release."""
    if op.get_context().as_sql:
        return NEW
    return NEW if sa.inspect(op.get_bind()).has_table(NEW["sessions"]) else OLD


# Frozen copies of openclaw_fts.index.sqlite's DDL at this revision (a migration must not
# change when the package does).
CREATE_FTS = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS message_fts USING fts5("
    "body, sess, content='message_index', content_rowid='id', "
    "tokenize='unicode61 remove_diacritics 2')"
)
CREATE_DELETE_TRIGGER = (
    "CREATE TRIGGER IF NOT EXISTS message_index_fts_delete AFTER DELETE ON message_index BEGIN "
    "INSERT INTO message_fts(message_fts, rowid, body, sess) "
    "VALUES ('delete', old.id, old.body, old.sess); END"
)

CREATE_SEQ_TRIGGER = (
    "CREATE TRIGGER IF NOT EXISTS transcript_events_last_seq AFTER INSERT ON transcript_events "
    "BEGIN UPDATE {sessions} SET last_seq = new.seq "
    "WHERE session_id = new.session_id AND last_seq < new.seq; END"
)

CREATE_EVENT_DELETE_TRIGGER = (
    "CREATE TRIGGER IF NOT EXISTS transcript_events_deleted AFTER DELETE ON transcript_events "
    "BEGIN UPDATE {index_state} SET needs_rebuild = 1, generation = generation + 1 "
    "WHERE session_id = old.session_id; END"
)

# Frozen copies of openclaw_fts.index.postgresql's names at this revision.
PG_EXTENSION = "unaccent"
PG_CONFIG = "openclaw_fts_unaccent"
PG_TSVECTOR = "body_tsv"
PG_GIN_INDEX = "ix_message_index_body_tsv"
PG_CREATE_CONFIG = f"CREATE TEXT SEARCH CONFIGURATION {PG_CONFIG} (COPY = pg_catalog.simple)"
PG_MAP_UNACCENT = (
    f"ALTER TEXT SEARCH CONFIGURATION {PG_CONFIG} "
    f"ALTER MAPPING FOR hword, hword_part, word WITH {PG_EXTENSION}, simple"
)
# ASCII punctuation becomes a space before PostgreSQL's parser sees the text, so it splits words
# where FTS5's unicode61 does (`node.js`, `foo_bar`, `3.14`, e-mail addresses, paths) instead of
# keeping hosts, files, numbers and hyphenated words whole (docs/postgresql.md).
PG_PUNCTUATION = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
PG_ADD_TSVECTOR = (
    f"ALTER TABLE message_index ADD COLUMN {PG_TSVECTOR} tsvector "
    f"GENERATED ALWAYS AS (to_tsvector('{PG_CONFIG}'::regconfig, translate(body, "
    f"'{PG_PUNCTUATION.replace(chr(39), chr(39) * 2)}', '{' ' * len(PG_PUNCTUATION)}'))) STORED"
)
PG_CREATE_GIN = f"CREATE INDEX {PG_GIN_INDEX} ON message_index USING gin ({PG_TSVECTOR})"
PG_DROP_CONFIG = f"DROP TEXT SEARCH CONFIGURATION IF EXISTS {PG_CONFIG}"
# The two transcript triggers of the SQLite branch, in plpgsql (row-level, like SQLite's).
PG_CREATE_SEQ_FUNCTION = (
    "CREATE FUNCTION openclaw_fts_events_last_seq() RETURNS trigger LANGUAGE plpgsql AS $$ "
    "BEGIN UPDATE {sessions} SET last_seq = NEW.seq "
    "WHERE session_id = NEW.session_id AND last_seq < NEW.seq; RETURN NULL; END $$"
)
PG_CREATE_SEQ_TRIGGER = (
    "CREATE TRIGGER transcript_events_last_seq AFTER INSERT ON transcript_events "
    "FOR EACH ROW EXECUTE FUNCTION openclaw_fts_events_last_seq()"
)
PG_CREATE_EVENT_DELETE_FUNCTION = (
    "CREATE FUNCTION openclaw_fts_events_deleted() RETURNS trigger LANGUAGE plpgsql AS $$ "
    "BEGIN UPDATE {index_state} SET needs_rebuild = true, generation = generation + 1 "
    "WHERE session_id = OLD.session_id; RETURN NULL; END $$"
)
PG_CREATE_EVENT_DELETE_TRIGGER = (
    "CREATE TRIGGER transcript_events_deleted AFTER DELETE ON transcript_events "
    "FOR EACH ROW EXECUTE FUNCTION openclaw_fts_events_deleted()"
)
PG_DROP_TRIGGERS = (
    "DROP TRIGGER IF EXISTS transcript_events_deleted ON transcript_events",
    "DROP FUNCTION IF EXISTS openclaw_fts_events_deleted()",
    "DROP TRIGGER IF EXISTS transcript_events_last_seq ON transcript_events",
    "DROP FUNCTION IF EXISTS openclaw_fts_events_last_seq()",
)


def _ensure_unaccent() -> None:
    """``CREATE EXTENSION IF NOT EXISTS unaccent``, or an error that names the extension, says
    why, and says who can fix it (the transaction is then rolled back as a whole)."""
    bind = op.get_bind()
    if bind.execute(
        sa.text("SELECT 1 FROM pg_extension WHERE extname = :name"), {"name": PG_EXTENSION}
    ).first():
        return
    if not bind.execute(
        sa.text("SELECT 1 FROM pg_available_extensions WHERE name = :name"),
        {"name": PG_EXTENSION},
    ).first():
        raise UnsupportedDatabaseError(
            f"PostgreSQL extension {PG_EXTENSION!r} is not installed on the server (it ships "
            "with PostgreSQL's contrib modules, e.g. the postgresql-contrib package); "
            "openclaw-fts needs it to fold diacritics"
        )
    try:
        with bind.begin_nested():
            bind.exec_driver_sql(f"CREATE EXTENSION IF NOT EXISTS {PG_EXTENSION}")
    except DBAPIError as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        raise UnsupportedDatabaseError(
            f"cannot create PostgreSQL extension {PG_EXTENSION!r} ({reason}); ask the database "
            f"owner or a superuser to run `CREATE EXTENSION {PG_EXTENSION};` in this database, "
            "then upgrade again"
        ) from exc


def upgrade() -> None:
    names = _names()
    sessions, index_state = names["sessions"], names["index_state"]
    op.create_table(
        index_state,
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session_id", KEY, nullable=False),
        sa.Column("indexed_seq", SEQ, server_default=sa.text("-1"), nullable=False),
        sa.Column("indexed_leaf", KEY, nullable=True),
        sa.Column("needs_rebuild", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("generation", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("index_version", sa.Integer(), server_default=sa.text("1"), nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"],
            [f"{sessions}.session_id"],
            name=op.f(f"fk_{index_state}_session_id_{sessions}"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f(f"pk_{index_state}")),
        sa.UniqueConstraint("session_id", name=op.f("uq_index_state_session_id")),
    )
    op.create_table(
        "message_index",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session_id", KEY, nullable=False),
        sa.Column("seq", SEQ, nullable=False),
        sa.Column("event_id", KEY, nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("timestamp_ms", sa.BigInteger(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("sess", sa.String(32), nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"],
            [f"{sessions}.session_id"],
            name=op.f(f"fk_message_index_session_id_{sessions}"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_message_index")),
        sa.UniqueConstraint(
            "session_id", "event_id", name=op.f("uq_message_index_session_id_event_id")
        ),
    )
    op.create_table(
        "reconcile_lease",
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("holder", sa.String(128), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_reconcile_lease")),
    )
    if op.get_context().dialect.name == "sqlite":
        op.execute(CREATE_FTS)
        op.execute(CREATE_DELETE_TRIGGER)
        op.execute(CREATE_SEQ_TRIGGER.format(**names))
        op.execute(CREATE_EVENT_DELETE_TRIGGER.format(**names))
    elif op.get_context().dialect.name == "postgresql":
        _ensure_unaccent()
        op.execute(PG_CREATE_CONFIG)
        op.execute(PG_MAP_UNACCENT)
        op.execute(PG_ADD_TSVECTOR)
        op.execute(PG_CREATE_GIN)
        op.execute(PG_CREATE_SEQ_FUNCTION.format(**names))
        op.execute(PG_CREATE_SEQ_TRIGGER)
        op.execute(PG_CREATE_EVENT_DELETE_FUNCTION.format(**names))
        op.execute(PG_CREATE_EVENT_DELETE_TRIGGER)


def downgrade() -> None:
    if op.get_context().dialect.name == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS transcript_events_deleted")
        op.execute("DROP TRIGGER IF EXISTS transcript_events_last_seq")
        op.execute("DROP TRIGGER IF EXISTS message_index_fts_delete")
        op.execute("DROP TABLE IF EXISTS message_fts")
    elif op.get_context().dialect.name == "postgresql":
        for statement in PG_DROP_TRIGGERS:
            op.execute(statement)
    op.drop_table("reconcile_lease")
    op.drop_table("message_index")
    op.drop_table(_names()["index_state"])
    if op.get_context().dialect.name == "postgresql":
        op.execute(PG_DROP_CONFIG)  # after the table: the generated column depends on it

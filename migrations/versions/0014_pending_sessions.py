"""PostgreSQL: the sessions whose index may not be exact, kept in a table by triggers.

A search hides a pending session (``openclaw_fts/index/pending.py``: no index state,
``needs_rebuild``, ``indexed_seq`` behind ``last_seq``, another ``INDEX_VERSION``) and says
``indexing: true`` when one it may see is. On PostgreSQL it asked with an ``EXISTS`` over every
session the caller may see, each joined to its state: 276 of 287 ms of an ``all`` caller's
search at 10m messages (200,000 visible sessions, none pending; bench/NOTES.md), paid again
after every commit anywhere on the server. Here ``openclaw_pending_sessions`` holds, at every
commit, every session the definition but for the version calls pending (the version is the
code's constant; ``openclaw_index_state.index_version`` is indexed instead, and the readers
test it through two ranges), kept by statement triggers on ``openclaw_sessions`` and
``openclaw_index_state``, whoever writes (``openclaw_fts/index/postgresql/pending_marks.py``
says how, and why a mark is never lost to a concurrent writer); the readers test each marked
session, so a mark that outlives its session's pendingness changes no answer. The existing
pending sessions are marked in the same transaction as the triggers are made (the writers of
both tables wait for it). Both layouts alike (the partitioned layout partitions only the index
rows). SQLite: nothing (its one probe is memoised by ``PRAGMA data_version``).

Downgrade drops the triggers, their functions, the table and the index.

Revision ID: 0014_pending_sessions
Revises: 0013_impact_row_time
Create Date: 2026-12-07
"""

from __future__ import annotations

from alembic import op

revision: str = "0014_pending_sessions"
down_revision: str | None = "0013_impact_row_time"
branch_labels: tuple[str, ...] | None = None
depends_on: str | None = None

# Frozen at this revision (the definition of pending as ``INDEX_VERSION`` 9's code spells it).
TABLE = "openclaw_pending_sessions"
VERSION_INDEX = "ix_openclaw_index_state_version"
CREATE_TABLE = (
    "CREATE TABLE IF NOT EXISTS openclaw_pending_sessions (session_id varchar(512) NOT NULL, "
    "CONSTRAINT pk_openclaw_pending_sessions PRIMARY KEY (session_id))"
)

CREATE_VERSION_INDEX = (
    "CREATE INDEX IF NOT EXISTS ix_openclaw_index_state_version ON openclaw_index_state (inde"
    "x_version)"
)

BACKFILL = (
    "INSERT INTO openclaw_pending_sessions (session_id) SELECT s.session_id FROM openclaw_ses"
    "sions AS s LEFT JOIN openclaw_index_state AS st ON st.session_id = s.session_id WHERE st"
    ".id IS NULL OR st.needs_rebuild = TRUE OR st.indexed_seq < s.last_seq ON CONFLICT (sessi"
    "on_id) DO NOTHING"
)

CLEAR_FUNCTION = (
    "CREATE OR REPLACE FUNCTION openclaw_fts_clear_marks(touched text[]) RETURNS void LANGUAG"
    "E plpgsql AS $$ DECLARE held text[]; BEGIN IF current_setting('transaction_isolation') <"
    "> 'read committed' THEN RETURN; END IF; SELECT array_agg(h.session_id) INTO held FROM (S"
    "ELECT s.session_id FROM openclaw_sessions AS s WHERE s.session_id = ANY (touched) FOR SH"
    "ARE SKIP LOCKED) AS h; IF held IS NULL THEN RETURN; END IF; SELECT array_agg(h.session_i"
    "d) INTO held FROM (SELECT st.session_id FROM openclaw_index_state AS st WHERE st.session"
    "_id = ANY (held) FOR SHARE SKIP LOCKED) AS h; IF held IS NULL THEN RETURN; END IF; DELET"
    "E FROM openclaw_pending_sessions AS pq WHERE pq.session_id = ANY (held) AND NOT EXISTS ("
    "SELECT 1 FROM openclaw_sessions AS s LEFT JOIN openclaw_index_state AS st ON st.session_"
    "id = s.session_id WHERE s.session_id = pq.session_id AND (st.id IS NULL OR st.needs_rebu"
    "ild = TRUE OR st.indexed_seq < s.last_seq)); END $$"
)

MARK_SESSIONS_FUNCTION = (
    "CREATE OR REPLACE FUNCTION openclaw_fts_mark_sessions() RETURNS trigger LANGUAGE plpgsql"
    " AS $$ BEGIN INSERT INTO openclaw_pending_sessions (session_id) SELECT s.session_id FROM"
    " openclaw_fts_new_sessions AS s LEFT JOIN openclaw_index_state AS st ON st.session_id = "
    "s.session_id WHERE st.id IS NULL OR st.needs_rebuild = TRUE OR st.indexed_seq < s.last_s"
    "eq ON CONFLICT (session_id) DO NOTHING; RETURN NULL; END $$"
)

MARK_STATES_FUNCTION = (
    "CREATE OR REPLACE FUNCTION openclaw_fts_mark_states() RETURNS trigger LANGUAGE plpgsql A"
    "S $$ DECLARE touched text[]; BEGIN INSERT INTO openclaw_pending_sessions (session_id) SE"
    "LECT s.session_id FROM openclaw_fts_new_states AS st JOIN openclaw_sessions AS s ON s.se"
    "ssion_id = st.session_id WHERE st.id IS NULL OR st.needs_rebuild = TRUE OR st.indexed_se"
    "q < s.last_seq ON CONFLICT (session_id) DO NOTHING; SELECT array_agg(pq.session_id) INTO"
    " touched FROM openclaw_pending_sessions AS pq JOIN openclaw_fts_new_states AS n ON n.ses"
    "sion_id = pq.session_id; IF touched IS NOT NULL THEN PERFORM openclaw_fts_clear_marks(to"
    "uched); END IF; RETURN NULL; END $$"
)

MARK_STATELESS_FUNCTION = (
    "CREATE OR REPLACE FUNCTION openclaw_fts_mark_stateless() RETURNS trigger LANGUAGE plpgsq"
    "l AS $$ BEGIN INSERT INTO openclaw_pending_sessions (session_id) SELECT s.session_id FRO"
    "M openclaw_fts_old_states AS st JOIN openclaw_sessions AS s ON s.session_id = st.session"
    "_id ON CONFLICT (session_id) DO NOTHING; RETURN NULL; END $$"
)

MARK_ALL_FUNCTION = (
    "CREATE OR REPLACE FUNCTION openclaw_fts_mark_all() RETURNS trigger LANGUAGE plpgsql AS $"
    "$ BEGIN INSERT INTO openclaw_pending_sessions (session_id) SELECT session_id FROM opencl"
    "aw_sessions ON CONFLICT (session_id) DO NOTHING; RETURN NULL; END $$"
)

UNMARK_SESSIONS_FUNCTION = (
    "CREATE OR REPLACE FUNCTION openclaw_fts_unmark_sessions() RETURNS trigger LANGUAGE plpgs"
    "ql AS $$ BEGIN DELETE FROM openclaw_pending_sessions AS pq USING openclaw_fts_old_sessio"
    "ns AS o WHERE pq.session_id = o.session_id; RETURN NULL; END $$"
)

UNMARK_ALL_FUNCTION = (
    "CREATE OR REPLACE FUNCTION openclaw_fts_unmark_all() RETURNS trigger LANGUAGE plpgsql AS"
    " $$ BEGIN DELETE FROM openclaw_pending_sessions; RETURN NULL; END $$"
)

TRIGGERS = (
    (
        "openclaw_fts_mark_inserted_sessions",
        "openclaw_sessions",
        (
            "CREATE TRIGGER openclaw_fts_mark_inserted_sessions AFTER INSERT ON openclaw_sess"
            "ions REFERENCING NEW TABLE AS openclaw_fts_new_sessions FOR EACH STATEMENT EXECU"
            "TE FUNCTION openclaw_fts_mark_sessions()"
        ),
    ),
    (
        "openclaw_fts_mark_updated_sessions",
        "openclaw_sessions",
        (
            "CREATE TRIGGER openclaw_fts_mark_updated_sessions AFTER UPDATE ON openclaw_sessi"
            "ons REFERENCING NEW TABLE AS openclaw_fts_new_sessions FOR EACH STATEMENT EXECUT"
            "E FUNCTION openclaw_fts_mark_sessions()"
        ),
    ),
    (
        "openclaw_fts_unmark_deleted_sessions",
        "openclaw_sessions",
        (
            "CREATE TRIGGER openclaw_fts_unmark_deleted_sessions AFTER DELETE ON openclaw_ses"
            "sions REFERENCING OLD TABLE AS openclaw_fts_old_sessions FOR EACH STATEMENT EXEC"
            "UTE FUNCTION openclaw_fts_unmark_sessions()"
        ),
    ),
    (
        "openclaw_fts_unmark_truncated_sessions",
        "openclaw_sessions",
        (
            "CREATE TRIGGER openclaw_fts_unmark_truncated_sessions AFTER TRUNCATE ON openclaw"
            "_sessions FOR EACH STATEMENT EXECUTE FUNCTION openclaw_fts_unmark_all()"
        ),
    ),
    (
        "openclaw_fts_mark_inserted_states",
        "openclaw_index_state",
        (
            "CREATE TRIGGER openclaw_fts_mark_inserted_states AFTER INSERT ON openclaw_index_"
            "state REFERENCING NEW TABLE AS openclaw_fts_new_states FOR EACH STATEMENT EXECUT"
            "E FUNCTION openclaw_fts_mark_states()"
        ),
    ),
    (
        "openclaw_fts_mark_updated_states",
        "openclaw_index_state",
        (
            "CREATE TRIGGER openclaw_fts_mark_updated_states AFTER UPDATE ON openclaw_index_s"
            "tate REFERENCING NEW TABLE AS openclaw_fts_new_states FOR EACH STATEMENT EXECUTE"
            " FUNCTION openclaw_fts_mark_states()"
        ),
    ),
    (
        "openclaw_fts_mark_deleted_states",
        "openclaw_index_state",
        (
            "CREATE TRIGGER openclaw_fts_mark_deleted_states AFTER DELETE ON openclaw_index_s"
            "tate REFERENCING OLD TABLE AS openclaw_fts_old_states FOR EACH STATEMENT EXECUTE"
            " FUNCTION openclaw_fts_mark_stateless()"
        ),
    ),
    (
        "openclaw_fts_mark_truncated_states",
        "openclaw_index_state",
        (
            "CREATE TRIGGER openclaw_fts_mark_truncated_states AFTER TRUNCATE ON openclaw_ind"
            "ex_state FOR EACH STATEMENT EXECUTE FUNCTION openclaw_fts_mark_all()"
        ),
    ),
)
FUNCTIONS = (
    CLEAR_FUNCTION,
    MARK_SESSIONS_FUNCTION,
    MARK_STATES_FUNCTION,
    MARK_STATELESS_FUNCTION,
    MARK_ALL_FUNCTION,
    UNMARK_SESSIONS_FUNCTION,
    UNMARK_ALL_FUNCTION,
)
FUNCTION_NAMES = (
    "openclaw_fts_clear_marks",
    "openclaw_fts_mark_sessions",
    "openclaw_fts_mark_states",
    "openclaw_fts_mark_stateless",
    "openclaw_fts_mark_all",
    "openclaw_fts_unmark_sessions",
    "openclaw_fts_unmark_all",
)


def upgrade() -> None:
    if op.get_context().dialect.name != "postgresql":
        return
    op.execute(CREATE_TABLE)
    op.execute(CREATE_VERSION_INDEX)
    for function in FUNCTIONS:
        op.execute(function)
    for name, table, trigger in TRIGGERS:  # (again, on a database stamped back: the tests')
        op.execute(f"DROP TRIGGER IF EXISTS {name} ON {table}")
        op.execute(trigger)
    op.execute(BACKFILL)  # after the triggers: a writer of either table waits for this one


def downgrade() -> None:
    if op.get_context().dialect.name != "postgresql":
        return
    for name, table, _trigger in TRIGGERS:
        op.execute(f"DROP TRIGGER IF EXISTS {name} ON {table}")
    for name in FUNCTION_NAMES:
        op.execute(f"DROP FUNCTION IF EXISTS {name}")
    op.execute(f"DROP TABLE IF EXISTS {TABLE}")
    op.execute(f"DROP INDEX IF EXISTS {VERSION_INDEX}")

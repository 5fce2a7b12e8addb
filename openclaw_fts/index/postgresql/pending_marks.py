"""PostgreSQL's pending marks (revision 0014): :data:`~..pending.PENDING_TABLE`, kept by
triggers, so a search asks whether a session it may see is pending in O(pending sessions)
instead of reading every session it may see (bench/NOTES.md: 276 of 287 ms of an ``all``
caller's search at 10m messages).

Invariant: at every commit, every session for which :data:`~..pending.STATE_PENDING` holds
has a row in the table, whoever wrote (the plugin, a host's raw SQL, a migration); a row may
outlive its session's pendingness (the readers test each marked session with
:data:`~..pending.PENDING_CONDITION`, so a stale row costs a probe's row, never an answer).

How: every statement that inserts or updates sessions or index states marks, at its end
(statement triggers over the transition tables), each session it touched that is pending as
this transaction sees it. A concurrent writer of the other table's row cannot make pending a
session this one saw exact (a session falls behind only when ``last_seq`` rises past
``indexed_seq``, and the writer that raises it sees that), and ``needs_rebuild``, a missing
state and a deleted state are pending whoever looks. A statement that writes index states
then clears the marks of its sessions that are exact, under READ COMMITTED only, and only for
sessions whose ``openclaw_sessions`` row it holds or can lock at once (``FOR SHARE SKIP
LOCKED``: a writer of ``last_seq`` holds it until it commits; the states are its own rows),
reading them in the next statement (a snapshot taken after the lock): a mark is never
cleared while a write that could make its session pending is in flight, and no writer waits
for a mark (a mark left so goes with the session's next write of its state; the share lock
holds a writer of that session's row until the clearing transaction commits). Deleting a
session deletes its mark; deleting a state (or truncating the states) marks its session.
The version part of the definition is this code's constant: the readers test it through
:data:`VERSION_INDEX`. An append that leaves its session exact writes no mark (its
statement raises ``last_seq`` and ``indexed_seq`` together; the triggers only read).
The DDL here is what revision 0014 creates (it keeps a frozen copy; a test compares them).
"""

from __future__ import annotations

from sqlalchemy import Connection, text

from ..memo import SchemaFeature
from ..pending import PENDING_TABLE, STATE_PENDING

#: ``openclaw_index_state.index_version``, indexed: a state written at another version is
#: found through two ranges of it (``pending_probe_sql(marked=True)``), not a scan.
VERSION_INDEX = "ix_openclaw_index_state_version"
#: The functions and triggers, by name.
CLEAR = "openclaw_fts_clear_marks"
MARK_SESSIONS = "openclaw_fts_mark_sessions"
MARK_STATES = "openclaw_fts_mark_states"
MARK_STATELESS = "openclaw_fts_mark_stateless"
MARK_ALL = "openclaw_fts_mark_all"
UNMARK_SESSIONS = "openclaw_fts_unmark_sessions"
UNMARK_ALL = "openclaw_fts_unmark_all"
#: The transition tables' names.
NEW_SESSIONS = "openclaw_fts_new_sessions"
OLD_SESSIONS = "openclaw_fts_old_sessions"
NEW_STATES = "openclaw_fts_new_states"
OLD_STATES = "openclaw_fts_old_states"

_INSERT = f"INSERT INTO {PENDING_TABLE} (session_id) "
_DONE = " ON CONFLICT (session_id) DO NOTHING; "

CREATE_TABLE = (
    f"CREATE TABLE IF NOT EXISTS {PENDING_TABLE} (session_id varchar(512) NOT NULL, "
    f"CONSTRAINT pk_{PENDING_TABLE} PRIMARY KEY (session_id))"
)
CREATE_VERSION_INDEX = (
    f"CREATE INDEX IF NOT EXISTS {VERSION_INDEX} ON openclaw_index_state (index_version)"
)
#: Every session pending now (what the triggers keep from here on).
BACKFILL = (
    f"{_INSERT}SELECT s.session_id FROM openclaw_sessions AS s LEFT JOIN openclaw_index_state "
    f"AS st ON st.session_id = s.session_id WHERE {STATE_PENDING}{_DONE.rstrip('; ')}"
)

#: Clear the marks of ``touched`` sessions that are exact, under READ COMMITTED only, and
#: only of sessions whose row and state this transaction holds or can lock at once (``FOR
#: SHARE SKIP LOCKED``: a writer of either holds it until it commits), read in the next
#: statement (a snapshot taken after the locks).
CLEAR_FUNCTION = (
    f"CREATE OR REPLACE FUNCTION {CLEAR}(touched text[]) RETURNS void LANGUAGE plpgsql AS $$ "
    "DECLARE held text[]; BEGIN "
    "IF current_setting('transaction_isolation') <> 'read committed' THEN RETURN; END IF; "
    "SELECT array_agg(h.session_id) INTO held FROM (SELECT s.session_id FROM "
    "openclaw_sessions AS s WHERE s.session_id = ANY (touched) FOR SHARE SKIP LOCKED) AS h; "
    "IF held IS NULL THEN RETURN; END IF; "
    "SELECT array_agg(h.session_id) INTO held FROM (SELECT st.session_id FROM "
    "openclaw_index_state AS st WHERE st.session_id = ANY (held) FOR SHARE SKIP LOCKED) AS h; "
    "IF held IS NULL THEN RETURN; END IF; "
    f"DELETE FROM {PENDING_TABLE} AS pq WHERE pq.session_id = ANY (held) AND NOT EXISTS "
    "(SELECT 1 FROM openclaw_sessions AS s LEFT JOIN openclaw_index_state AS st "
    f"ON st.session_id = s.session_id WHERE s.session_id = pq.session_id AND ({STATE_PENDING})); "
    "END $$"
)


def _mark_function(name: str, changed: str, rows: str, *, clear: bool) -> str:
    """A statement trigger's function over the transition table ``changed``: mark the
    sessions ``rows`` (a FROM clause over ``s`` and ``st``) finds pending; with ``clear``,
    then clear the marks of the others (:data:`CLEAR_FUNCTION`: only a statement that wrote
    the states holds their rows already, so it takes no lock a writer of states waits for).
    """
    mark = f"{_INSERT}SELECT s.session_id FROM {rows} WHERE {STATE_PENDING}{_DONE}"
    if not clear:
        return (
            f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ "
            f"BEGIN {mark}RETURN NULL; END $$"
        )
    return (
        f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ "
        f"DECLARE touched text[]; BEGIN {mark}"
        f"SELECT array_agg(pq.session_id) INTO touched FROM {PENDING_TABLE} AS pq "
        f"JOIN {changed} AS n ON n.session_id = pq.session_id; "
        f"IF touched IS NOT NULL THEN PERFORM {CLEAR}(touched); END IF; RETURN NULL; END $$"
    )


FUNCTIONS = (
    CLEAR_FUNCTION,
    # sessions inserted or updated
    _mark_function(
        MARK_SESSIONS,
        NEW_SESSIONS,
        f"{NEW_SESSIONS} AS s LEFT JOIN openclaw_index_state AS st ON st.session_id = s.session_id",
        clear=False,
    ),
    # states inserted or updated
    _mark_function(
        MARK_STATES,
        NEW_STATES,
        f"{NEW_STATES} AS st JOIN openclaw_sessions AS s ON s.session_id = st.session_id",
        clear=True,
    ),
    # states deleted: their sessions are pending
    f"CREATE OR REPLACE FUNCTION {MARK_STATELESS}() RETURNS trigger LANGUAGE plpgsql AS $$ "
    f"BEGIN {_INSERT}SELECT s.session_id FROM {OLD_STATES} AS st JOIN openclaw_sessions AS s "
    f"ON s.session_id = st.session_id{_DONE}RETURN NULL; END $$",
    # states truncated: every session is pending
    f"CREATE OR REPLACE FUNCTION {MARK_ALL}() RETURNS trigger LANGUAGE plpgsql AS $$ "
    f"BEGIN {_INSERT}SELECT session_id FROM openclaw_sessions{_DONE}RETURN NULL; END $$",
    # sessions deleted: their marks go
    f"CREATE OR REPLACE FUNCTION {UNMARK_SESSIONS}() RETURNS trigger LANGUAGE plpgsql AS $$ "
    f"BEGIN DELETE FROM {PENDING_TABLE} AS pq USING {OLD_SESSIONS} AS o "
    "WHERE pq.session_id = o.session_id; RETURN NULL; END $$",
    # sessions truncated: every mark goes
    f"CREATE OR REPLACE FUNCTION {UNMARK_ALL}() RETURNS trigger LANGUAGE plpgsql AS $$ "
    f"BEGIN DELETE FROM {PENDING_TABLE}; RETURN NULL; END $$",
)


def _trigger(name: str, when: str, table: str, references: str, function: str) -> str:
    return (
        f"CREATE TRIGGER {name} AFTER {when} ON {table} {references}"
        f"FOR EACH STATEMENT EXECUTE FUNCTION {function}()"
    )


#: (trigger name, table, its CREATE TRIGGER).
TRIGGERS = (
    (
        "openclaw_fts_mark_inserted_sessions",
        "openclaw_sessions",
        _trigger(
            "openclaw_fts_mark_inserted_sessions",
            "INSERT",
            "openclaw_sessions",
            f"REFERENCING NEW TABLE AS {NEW_SESSIONS} ",
            MARK_SESSIONS,
        ),
    ),
    (
        "openclaw_fts_mark_updated_sessions",
        "openclaw_sessions",
        _trigger(
            "openclaw_fts_mark_updated_sessions",
            "UPDATE",
            "openclaw_sessions",
            f"REFERENCING NEW TABLE AS {NEW_SESSIONS} ",
            MARK_SESSIONS,
        ),
    ),
    (
        "openclaw_fts_unmark_deleted_sessions",
        "openclaw_sessions",
        _trigger(
            "openclaw_fts_unmark_deleted_sessions",
            "DELETE",
            "openclaw_sessions",
            f"REFERENCING OLD TABLE AS {OLD_SESSIONS} ",
            UNMARK_SESSIONS,
        ),
    ),
    (
        "openclaw_fts_unmark_truncated_sessions",
        "openclaw_sessions",
        _trigger(
            "openclaw_fts_unmark_truncated_sessions",
            "TRUNCATE",
            "openclaw_sessions",
            "",
            UNMARK_ALL,
        ),
    ),
    (
        "openclaw_fts_mark_inserted_states",
        "openclaw_index_state",
        _trigger(
            "openclaw_fts_mark_inserted_states",
            "INSERT",
            "openclaw_index_state",
            f"REFERENCING NEW TABLE AS {NEW_STATES} ",
            MARK_STATES,
        ),
    ),
    (
        "openclaw_fts_mark_updated_states",
        "openclaw_index_state",
        _trigger(
            "openclaw_fts_mark_updated_states",
            "UPDATE",
            "openclaw_index_state",
            f"REFERENCING NEW TABLE AS {NEW_STATES} ",
            MARK_STATES,
        ),
    ),
    (
        "openclaw_fts_mark_deleted_states",
        "openclaw_index_state",
        _trigger(
            "openclaw_fts_mark_deleted_states",
            "DELETE",
            "openclaw_index_state",
            f"REFERENCING OLD TABLE AS {OLD_STATES} ",
            MARK_STATELESS,
        ),
    ),
    (
        "openclaw_fts_mark_truncated_states",
        "openclaw_index_state",
        _trigger(
            "openclaw_fts_mark_truncated_states", "TRUNCATE", "openclaw_index_state", "", MARK_ALL
        ),
    ),
)
#: The functions' names, for the downgrade.
FUNCTION_NAMES = (
    CLEAR,
    MARK_SESSIONS,
    MARK_STATES,
    MARK_STATELESS,
    MARK_ALL,
    UNMARK_SESSIONS,
    UNMARK_ALL,
)

#: Whether :data:`~..pending.PENDING_TABLE` exists (the catalogue only).
MARKED_SQL = f"to_regclass('{PENDING_TABLE}') IS NOT NULL"
#: The marks as one of the schema's features (:class:`~..memo.SchemaFeature`).
MARKS = SchemaFeature("postgresql", "pending_marks", MARKED_SQL)


def has_marks(conn: Connection) -> bool:
    """Whether the database keeps :data:`~..pending.PENDING_TABLE` (revision 0014), as the
    pooled connection remembers the schema (:data:`MARKS`: read again after an upgrade or a
    downgrade through ``openclaw_fts.migrate``; a store opened with ``upgrade=False`` on an
    older database probes every visible session, as before). After another process's
    downgrade below 0014, the first pending probe of a connection that remembers the marks
    fails, and every connection reads the schema again (downgrade with the plugin's processes
    stopped)."""
    return MARKS.present(conn)


def marked(conn: Connection) -> bool:
    """Whether :data:`~..pending.PENDING_TABLE` exists now (no memo: the revision probe)."""
    return bool(conn.execute(text(f"SELECT {MARKED_SQL}")).scalar())

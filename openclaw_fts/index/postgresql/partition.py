"""The partitioned layout on PostgreSQL: the index rows hash-partitioned by agent.

Invariant: after :func:`partition_by_agent`, ``message_index`` is a view over
:data:`PARTITIONED_TABLE` (``PARTITION BY HASH (agent_id)``) that every statement of the plugin
reads and writes exactly as it did the table: an ``INSTEAD OF INSERT`` trigger fills the row's
``agent_id`` from its session (and its ``id`` from the same sequence), ``INSTEAD OF DELETE``
deletes the row from its partition (and, by a trigger, its impact-list rows), and a change of a
session's ``agent_id`` moves its rows to
the agent's partition in the same statement. So every index row lives in the partition of its
session's agent, at every commit. The conversion runs in the caller's one transaction (all or
nothing) and keeps every row and id. A search whose caller can only see a known set of agents
reads that set first (:func:`visible_agents`, same snapshot) and adds
``mi.agent_id = ANY(:scope_agents)`` (:func:`agent_scope_sql`), from which the planner prunes
every other partition; a caller of ``all`` under an agent-to-agent policy reads them all.
:func:`unpartition` is the way back, in one transaction too: the plain table exactly as the
plugin's revisions make it, with every row and id.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, text

from ...models import TIME_INDEX
from ..memo import SchemaFeature, schema_changes
from ..visibility_sql import visible
from . import impact
from .names import GIN_INDEX, TSVECTOR_COLUMN, TSVECTOR_STATISTICS_TARGET

if TYPE_CHECKING:
    from ...caller import Caller

#: The partitioned table behind the ``message_index`` view.
PARTITIONED_TABLE = "message_index_by_agent"
#: Hash partitions :func:`partition_by_agent` makes unless told otherwise.
DEFAULT_PARTITIONS = 16
#: Most partitions accepted (each is a table with four indexes).
MAX_PARTITIONS = 1024
VIEW = "message_index"
_FLAT = "message_index_flat"
_SEQUENCE = "message_index_id_seq"
#: The view's columns, in the table's order (``agent_id`` last).
_COLUMNS = ("id", "session_id", "seq", "event_id", "role", "timestamp_ms", "body", "sess")
_INSERT_FUNCTION = "openclaw_fts_message_index_insert"
_DELETE_FUNCTION = "openclaw_fts_message_index_delete"
_MOVE_FUNCTION = "openclaw_fts_message_index_move"
#: A change of a session's agent: its index rows move to the agent's partition (a delete and
#: an insert there, whose delete trigger removes their impact-list rows: they are written
#: again), under the impact lists' share lock like any writer of index rows (revision 0009
#: replaces the function of a database converted before it).
CREATE_MOVE_FUNCTION = (
    f"CREATE OR REPLACE FUNCTION {_MOVE_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$ "
    f"BEGIN {impact.GUARD_SQL}"
    f"UPDATE {PARTITIONED_TABLE} SET agent_id = NEW.agent_id "
    "WHERE agent_id = OLD.agent_id AND session_id = NEW.session_id; "
    f"{impact.relist_session_sql(PARTITIONED_TABLE)}RETURN NULL; END $$"
)
#: Whether the database has the layout (the catalogue only).
LAYOUT_SQL = f"to_regclass('{PARTITIONED_TABLE}') IS NOT NULL"
#: The layout as one of the schema's features (:class:`~..memo.SchemaFeature`).
LAYOUT = SchemaFeature("postgresql", "partitioned_layout", LAYOUT_SQL)


def is_partitioned(conn: Connection) -> bool:
    """Whether the database has the partitioned layout, as the pooled connection remembers the
    schema (:data:`LAYOUT`: read again after :func:`partition_by_agent` and
    :func:`unpartition` in this process). After another process's conversion, a connection
    pooled before it searches correctly, only without pruning; one pooled before another's
    :func:`unpartition` finds out in :func:`visible_agents`."""
    return LAYOUT.present(conn)


def partition_by_agent(conn: Connection, partitions: int = DEFAULT_PARTITIONS) -> int:
    """Convert ``message_index`` to the partitioned layout in the caller's transaction; returns
    the rows moved. Refused when the database has it already or is not at the plugin's head
    (the caller checks the revision)."""
    if isinstance(partitions, bool) or not isinstance(partitions, int):
        raise ValueError("partitions must be an integer")
    if not 1 <= partitions <= MAX_PARTITIONS:
        raise ValueError(f"partitions must be between 1 and {MAX_PARTITIONS}")
    if has_layout(conn):
        raise ValueError(f"the database already has the partitioned layout ({PARTITIONED_TABLE})")

    def run(sql: str) -> None:
        conn.execute(text(sql))

    columns = ", ".join(_COLUMNS)
    run(f"ALTER TABLE {VIEW} RENAME TO {_FLAT}")
    # LIKE copies the columns, NOT NULLs, the id default (the same sequence) and body_tsv's
    # generation expression; no index or constraint (they are made for the partitions below).
    run(
        f"CREATE TABLE {PARTITIONED_TABLE} (LIKE {_FLAT} INCLUDING DEFAULTS INCLUDING GENERATED, "
        "agent_id varchar(512) NOT NULL) PARTITION BY HASH (agent_id)"
    )
    for n in range(partitions):
        run(
            f"CREATE TABLE {PARTITIONED_TABLE}_p{n} PARTITION OF {PARTITIONED_TABLE} "
            f"FOR VALUES WITH (MODULUS {partitions}, REMAINDER {n})"
        )
    run(f"ALTER SEQUENCE {_SEQUENCE} OWNED BY {PARTITIONED_TABLE}.id")
    moved = conn.execute(
        text(
            f"INSERT INTO {PARTITIONED_TABLE} ({columns}, agent_id) "
            f"SELECT {', '.join('f.' + c for c in _COLUMNS)}, s.agent_id FROM {_FLAT} AS f "
            "JOIN openclaw_sessions AS s ON s.session_id = f.session_id"
        )
    ).rowcount
    impact.before_partitioning(conn)
    run(f"DROP TABLE {_FLAT}")
    # Unique keys must hold the partition key; the session's rows determine its agent, so
    # (id, agent_id) and (session_id, event_id, agent_id) are as unique as (id) and
    # (session_id, event_id) were, and their leading columns serve the same lookups.
    run(
        f"ALTER TABLE {PARTITIONED_TABLE} ADD CONSTRAINT pk_{PARTITIONED_TABLE} "
        "PRIMARY KEY (id, agent_id)"
    )
    run(
        f"ALTER TABLE {PARTITIONED_TABLE} ADD CONSTRAINT uq_{PARTITIONED_TABLE}_session_event "
        "UNIQUE (session_id, event_id, agent_id)"
    )
    run(
        f"ALTER TABLE {PARTITIONED_TABLE} ADD CONSTRAINT fk_{PARTITIONED_TABLE}_session "
        "FOREIGN KEY (session_id) REFERENCES openclaw_sessions (session_id) ON DELETE CASCADE"
    )
    run(f"CREATE INDEX {GIN_INDEX} ON {PARTITIONED_TABLE} USING gin ({TSVECTOR_COLUMN})")
    run(f"CREATE INDEX {TIME_INDEX} ON {PARTITIONED_TABLE} (timestamp_ms)")
    run(
        f"ALTER TABLE {PARTITIONED_TABLE} ALTER COLUMN {TSVECTOR_COLUMN} "
        f"SET STATISTICS {TSVECTOR_STATISTICS_TARGET}"
    )
    run(
        f"CREATE VIEW {VIEW} AS SELECT {columns}, {TSVECTOR_COLUMN}, agent_id "
        f"FROM {PARTITIONED_TABLE}"
    )
    values = ", ".join(f"NEW.{c}" for c in _COLUMNS)
    run(
        f"CREATE FUNCTION {_INSERT_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "NEW.agent_id := (SELECT agent_id FROM openclaw_sessions "
        "WHERE session_id = NEW.session_id); "
        f"IF NEW.id IS NULL THEN NEW.id := nextval('{_SEQUENCE}'); END IF; "
        f"INSERT INTO {PARTITIONED_TABLE} ({columns}, agent_id) VALUES ({values}, NEW.agent_id); "
        "RETURN NEW; END $$"
    )
    run(
        f"CREATE TRIGGER {VIEW}_insert INSTEAD OF INSERT ON {VIEW} "
        f"FOR EACH ROW EXECUTE FUNCTION {_INSERT_FUNCTION}()"
    )
    run(
        f"CREATE FUNCTION {_DELETE_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        f"DELETE FROM {PARTITIONED_TABLE} WHERE agent_id = OLD.agent_id AND id = OLD.id; "
        "RETURN OLD; END $$"
    )
    run(
        f"CREATE TRIGGER {VIEW}_delete INSTEAD OF DELETE ON {VIEW} "
        f"FOR EACH ROW EXECUTE FUNCTION {_DELETE_FUNCTION}()"
    )
    run(CREATE_MOVE_FUNCTION)
    run(
        f"CREATE TRIGGER openclaw_sessions_agent_moves_index AFTER UPDATE OF agent_id "
        "ON openclaw_sessions FOR EACH ROW WHEN (OLD.agent_id IS DISTINCT FROM NEW.agent_id) "
        f"EXECUTE FUNCTION {_MOVE_FUNCTION}()"
    )
    impact.after_partitioning(conn, PARTITIONED_TABLE)
    run(f"ANALYZE {PARTITIONED_TABLE}")
    schema_changes(conn)
    return int(moved or 0)


def has_layout(conn: Connection) -> bool:
    """Whether the database has the partitioned layout now (no memo)."""
    return bool(conn.execute(text(f"SELECT {LAYOUT_SQL}")).scalar())


def unpartition(conn: Connection) -> int:
    """Convert the partitioned layout back to the plain ``message_index`` table, in the
    caller's transaction; returns the rows moved. Every row keeps its id and the sequence its
    position; the table, its constraints, indexes and statistics target are made exactly as
    the plugin's revisions make them (the generated column's expression copied from the
    partitioned table, which copied it from the original). Refused when the database does not
    have the layout."""
    if not has_layout(conn):
        raise ValueError("the database does not have the partitioned layout")

    def run(sql: str) -> None:
        conn.execute(text(sql))

    run("DROP TRIGGER openclaw_sessions_agent_moves_index ON openclaw_sessions")
    run(f"DROP VIEW {VIEW}")  # its INSTEAD OF triggers with it
    for function in (_INSERT_FUNCTION, _DELETE_FUNCTION, _MOVE_FUNCTION):
        run(f"DROP FUNCTION {function}()")
    run(f"ALTER SEQUENCE {_SEQUENCE} OWNED BY NONE")  # kept when the partitioned table goes
    definitions = []
    for name, type_, default, generated, not_null in conn.execute(
        text(
            "SELECT a.attname, format_type(a.atttypid, a.atttypmod), "
            "pg_get_expr(d.adbin, d.adrelid), a.attgenerated, a.attnotnull FROM pg_attribute AS a "
            "LEFT JOIN pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
            "WHERE a.attrelid = to_regclass(:t) AND a.attnum > 0 AND NOT a.attisdropped "
            "AND a.attname <> 'agent_id' ORDER BY a.attnum"
        ),
        {"t": PARTITIONED_TABLE},
    ):
        definition = f"{name} {type_}"
        if generated == "s":
            definition += f" GENERATED ALWAYS AS ({default}) STORED"
        elif default is not None:
            definition += f" DEFAULT {default}"
        if not_null:
            definition += " NOT NULL"
        definitions.append(definition)
    run(f"CREATE TABLE {VIEW} ({', '.join(definitions)})")
    columns = ", ".join(_COLUMNS)
    moved = conn.execute(
        text(f"INSERT INTO {VIEW} ({columns}) SELECT {columns} FROM {PARTITIONED_TABLE}")
    ).rowcount
    run(f"ALTER SEQUENCE {_SEQUENCE} OWNED BY {VIEW}.id")
    run(f"DROP TABLE {PARTITIONED_TABLE}")  # its partitions, indexes and constraints with it
    for statement in _FLAT_CONSTRAINTS:
        run(statement)
    run(f"CREATE INDEX {GIN_INDEX} ON {VIEW} USING gin ({TSVECTOR_COLUMN})")
    run(f"CREATE INDEX {TIME_INDEX} ON {VIEW} (timestamp_ms)")
    run(
        f"ALTER TABLE {VIEW} ALTER COLUMN {TSVECTOR_COLUMN} "
        f"SET STATISTICS {TSVECTOR_STATISTICS_TARGET}"
    )
    impact.after_unpartitioning(conn)
    run(f"ANALYZE {VIEW}")
    schema_changes(conn)
    return int(moved or 0)


#: The plain table's keys, named as the plugin's revisions name them (the metadata's naming
#: convention): what :func:`unpartition` makes again.
_FLAT_CONSTRAINTS = (
    f"ALTER TABLE {VIEW} ADD CONSTRAINT pk_{VIEW} PRIMARY KEY (id)",
    f"ALTER TABLE {VIEW} ADD CONSTRAINT uq_{VIEW}_session_id_event_id "
    "UNIQUE (session_id, event_id)",
    f"ALTER TABLE {VIEW} ADD CONSTRAINT fk_{VIEW}_session_id_openclaw_sessions "
    "FOREIGN KEY (session_id) REFERENCES openclaw_sessions (session_id) ON DELETE CASCADE",
)


def agent_scope(caller: Caller) -> tuple[Caller, bool] | None:
    """Which agents ``caller`` can see, as (a caller whose visible sessions name the other
    agents, whether the caller's own agent is one): None when no such set is known (``all``
    with an agent-to-agent policy that lets it read other agents)."""
    if caller.sandboxed and caller.sandbox_visibility == "spawned":
        return caller, False
    if caller.visibility in ("self", "tree"):
        return caller, False
    if caller.visibility == "agent":
        return dataclasses.replace(caller, visibility="self"), True
    policy = caller.agent_to_agent
    if policy.enabled and policy.allows(caller.effective_agent_id):
        return None
    return dataclasses.replace(caller, visibility="tree"), True


def visible_agents(conn: Connection, caller: Caller) -> list[str] | None:
    """The agents whose sessions ``caller`` can see (a superset: flagged-incognito sessions
    count), read from the sessions the narrow predicate admits, in the caller's snapshot; None
    when no such set is known (every partition)."""
    scope = agent_scope(caller)
    if scope is None:
        return None
    narrow, own_agent = scope
    pred = visible(narrow, "sc", for_search=False, dialect="postgresql")
    # The layout is read again in the same statement: a connection pooled before
    # :func:`unpartition` remembers a layout that is gone (no agent set then: no agent_id).
    layout, found = conn.execute(
        text(
            "SELECT to_regclass(:layout_table) IS NOT NULL, ARRAY(SELECT DISTINCT sc.agent_id "
            f"FROM openclaw_sessions AS sc WHERE {pred.sql})"
        ),
        {**pred.params, "layout_table": PARTITIONED_TABLE},
    ).one()
    if not layout:
        LAYOUT.note(conn, False)
        return None
    agents = {str(a) for a in found}
    if own_agent and "\x00" not in caller.effective_agent_id:  # no stored agent holds a NUL
        agents.add(caller.effective_agent_id)
    return sorted(agents)


def agent_scope_sql(alias: str, agents: list[str]) -> tuple[str, dict[str, Any]]:
    """``<alias>.agent_id = ANY(:scope_agents)``: bound as a value the planner sees (the
    search forces custom plans), so it prunes every other partition before running."""
    return f"{alias}.agent_id = ANY(:scope_agents)", {"scope_agents": agents}


class AgentPartitions:
    """:class:`~openclaw_fts.index.base.Partitions` of PostgreSQL: this module's functions."""

    default_count = DEFAULT_PARTITIONS
    max_count = MAX_PARTITIONS

    def partition(self, conn: Connection, partitions: int | None) -> int:
        """Hash partitions of the index rows by agent (:func:`partition_by_agent`)."""
        return partition_by_agent(conn, self.default_count if partitions is None else partitions)

    def unpartition(self, conn: Connection) -> int:
        """The plain ``message_index`` table again (:func:`unpartition`)."""
        return unpartition(conn)

    def partitioned(self, conn: Connection) -> bool:
        return has_layout(conn)

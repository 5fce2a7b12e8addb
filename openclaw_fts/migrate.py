"""Running the plugin's Alembic migrations from code (the store, the CLI, tests).

Invariant: finds the migration scripts both in a source checkout (top-level ``migrations/``)
and in an installed wheel (``openclaw_fts/migrations``), and runs them on the caller's engine or
connection, inside one transaction per call. The plugin's revision is read from its own version
table (stand-alone use) or, when that is empty, from the host's ``alembic_version`` (a host that
runs the plugin's revisions in its own history); a host-managed database is never migrated here
— the host's ``alembic upgrade heads`` owns it — and reading the revision never writes
(a hot standby at head opens without a write; one that is not is refused before any). After a
migration run here, the pooled connections of this process read what the schema has again
(``index.memo.schema_changes``): the migrating one at once, the others from its commit on.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine

from .alembic import BRANCH_LABEL, VERSION_TABLE
from .engine import write_engine
from .errors import HostManagedSchemaError, UnsupportedDatabaseError
from .index.base import Partitions, backend_of
from .index.memo import schema_changes
from .index.probes import probes_of

if TYPE_CHECKING:
    from alembic.config import Config

# Alembic is imported inside the functions: it costs a few hundred ms at start-up, and most
# command-line runs (search, history) never migrate.

#: The head of the plugin's branch (its label: :data:`BRANCH_LABEL`).
HEAD = f"{BRANCH_LABEL}@head"
#: The plugin's revisions in Alembic's package-resource form, for a host's ``version_locations``
#: (resolved inside the installed package: no site-packages path in the host's configuration).
#: It contains ":", so it goes in a TOML list or an ini list with ``path_separator = newline``
#: — never with ``path_separator = os`` on POSIX, whose separator is ":" too.
PACKAGE_VERSION_LOCATION = "openclaw_fts:migrations/versions"


def script_location() -> Path:
    """The folder holding ``env.py`` and ``versions/`` (``openclaw_fts/migrations``: in a source
    checkout a symbolic link to the top-level ``migrations/``, in a wheel the folder itself)."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "migrations", here.parent / "migrations"):
        if (candidate / "env.py").is_file():
            return candidate
    raise FileNotFoundError("openclaw_fts migrations not found (broken installation?)")


def version_location() -> Path:
    """The ``versions`` folder (a host's ``version_locations`` uses
    :data:`PACKAGE_VERSION_LOCATION` instead of this absolute path)."""
    return script_location() / "versions"


#: Alembic's default version table: where a host's own migrations record the plugin's revision.
HOST_VERSION_TABLE = "alembic_version"
#: The newest revision that changes the plugin's tables (what a host's version table hides
#: when a host revision ``depends_on`` it, as docs/alembic.md recommends).
TABLES_REVISION = "0005_namespaced_tables"
#: The revision after it, which changes no table (a statistics target on PostgreSQL).
STATISTICS_REVISION = "0006_tsvector_statistics"
#: The revision that added the impact lists' tables; the one after it changes no table (a
#: trigger on PostgreSQL, nothing on SQLite).
IMPACT_REVISION = "0007_impact_lists"
#: The revision after it, which changes no table either (a trigger on PostgreSQL).
LAST_SEQ_REVISION = "0008_last_seq_per_statement"
#: The revision after it, which changes no table (functions and triggers on PostgreSQL).
GUARD_REVISION = "0009_impact_promotion_lock"
#: The revision after it, which changes no table either (functions on PostgreSQL); the one
#: after it adds an index (revision 0011: the index rows' time order).
SELF_PROMOTING_REVISION = "0010_impact_own_counts"
#: That revision, adding the index; the one after it changes no table (functions on
#: PostgreSQL, nothing on SQLite: a promotion's bound).
TIME_ORDER_REVISION = "0011_index_rows_by_time"
#: That revision; the one after it adds a column the models do not declare on PostgreSQL
#: (the impact lists' rows' time: revision 0013), nothing on SQLite.
BOUNDED_REVISION = "0012_impact_promotion_bounded"
#: That revision; the one after it adds the pending marks (revision 0014: a table and
#: triggers on PostgreSQL, nothing on SQLite).
ROW_TIME_REVISION = "0013_impact_row_time"
#: That revision; the head after it adds SQLite's writer-kept vocabulary (revision 0015: a
#: table the models do not declare on SQLite, nothing on PostgreSQL).
PENDING_REVISION = "0014_pending_sessions"


@functools.lru_cache(maxsize=1)
def plugin_revisions() -> frozenset[str]:
    """Every revision id the plugin ships."""
    from alembic.script import ScriptDirectory

    script = ScriptDirectory(str(script_location()))
    return frozenset(r.revision for r in script.walk_revisions())


@functools.lru_cache(maxsize=1)
def head_revisions() -> frozenset[str]:
    """The plugin's head revision(s)."""
    from alembic.script import ScriptDirectory

    script = ScriptDirectory(str(script_location()))
    return frozenset(r.revision for r in script.get_revisions(HEAD) if r is not None)


def _config(conn: Connection) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(script_location()))
    cfg.attributes["connection"] = conn
    return cfg


def _nothing_to_do(conn: Connection, action: str, revision: str) -> bool:
    """True when ``action`` would change nothing; raise if the host's Alembic owns the schema."""
    own = _own_revisions(conn)
    to_head = action == "upgrade" and revision == HEAD
    if own:
        return to_head and set(own) == set(head_revisions())
    host = host_revisions(conn)
    if not host:
        return False
    if to_head and set(host) >= set(head_revisions()):
        return True
    raise HostManagedSchemaError(
        f"the plugin's revisions are run by the host's Alembic (its {HOST_VERSION_TABLE} "
        f"table holds {', '.join(host)}): run `alembic upgrade heads` "
        "(or `alembic downgrade openclaw_fts@...`) in the host project"
    )


def _run(bind: Engine | Connection, action: str, revision: str) -> None:
    if isinstance(bind, Engine):
        # Checked on a plain read first: a database at head is opened without a write
        # transaction (so a read-only file opens too).
        with bind.connect() as conn:
            if _nothing_to_do(conn, action, revision):
                return
            _refuse_standby(conn, action)
        with write_engine(bind).begin() as conn:
            _run(conn, action, revision)
        return
    if _nothing_to_do(bind, action, revision):
        return
    from alembic import command

    cfg = _config(bind)
    if action == "upgrade":
        command.upgrade(cfg, revision)
    else:
        command.downgrade(cfg, revision)
    schema_changes(bind)


def _refuse_standby(conn: Connection, action: str) -> None:
    """A hot standby replays its primary's schema and refuses writes: say so, before any."""
    replicas = backend_of(conn).replicas
    if replicas is not None and replicas.in_recovery(conn):
        raise UnsupportedDatabaseError(
            f"openclaw-fts: cannot {action} a hot standby (it replays its primary); run the "
            "migration on the primary, or open the store with upgrade=False"
        )


def upgrade(bind: Engine | Connection, revision: str = HEAD) -> None:
    """Migrate the database up to ``revision`` (default: the plugin's head)."""
    _run(bind, "upgrade", revision)


def downgrade(bind: Engine | Connection, revision: str) -> None:
    """Migrate down to ``revision`` (``"base"`` removes every plugin table). A database in the
    layout partitioned by agent is refused: :func:`unpartition_by_agent` first."""
    if isinstance(bind, Engine):
        with bind.connect() as conn:
            _refuse_partitioned(conn)
    else:
        _refuse_partitioned(bind)
    _run(bind, "downgrade", revision)


def _refuse_partitioned(conn: Connection) -> None:
    partitions = backend_of(conn).partitions
    if partitions is not None and partitions.partitioned(conn):
        raise UnsupportedDatabaseError(
            "openclaw-fts: cannot downgrade a database in the layout partitioned by agent (the "
            "revisions name message_index as a table): run migrate.unpartition_by_agent first "
            "(or `openclaw-fts unpartition`)"
        )


def _versions(conn: Connection, table: str) -> tuple[str, ...]:
    from alembic.runtime.migration import MigrationContext

    ctx = MigrationContext.configure(conn, opts={"version_table": table})
    return tuple(ctx.get_current_heads())


def _own_revisions(conn: Connection) -> tuple[str, ...]:
    return _versions(conn, VERSION_TABLE)


def host_revisions(bind: Engine | Connection) -> tuple[str, ...]:
    """The plugin's revisions as the host's ``alembic_version`` records them (empty: the host's
    history does not hold the plugin). A host revision that ``depends_on`` a plugin revision
    can hide it from that table (Alembic records heads only): then the plugin's tables decide —
    every model present means :data:`IMPACT_REVISION` (0007 added the impact lists' tables),
    :data:`LAST_SEQ_REVISION`, :data:`GUARD_REVISION`, :data:`SELF_PROMOTING_REVISION`,
    :data:`TIME_ORDER_REVISION`, :data:`BOUNDED_REVISION`, :data:`ROW_TIME_REVISION`,
    :data:`PENDING_REVISION` or the head, which change no table
    of the models: they change triggers and functions on PostgreSQL (0013 adds a column there
    the models do not declare, 0014 its pending marks' table), read there to tell them
    apart, and do nothing on SQLite, but for 0011's index on the index rows' time, read on
    both, and the head's vocabulary table on SQLite (nothing on PostgreSQL), read there;
    every model but those means
    :data:`TABLES_REVISION` or :data:`STATISTICS_REVISION`, which changes no table either: it
    sets a statistics target on PostgreSQL, read there likewise."""
    if isinstance(bind, Engine):
        with bind.connect() as conn:
            return host_revisions(conn)
    recorded = _versions(bind, HOST_VERSION_TABLE)
    if not recorded:
        return ()
    listed = tuple(r for r in recorded if r in plugin_revisions())
    if listed:
        return listed
    from sqlalchemy import inspect

    from .models import IMPACT_TABLES, metadata

    present = set(inspect(bind).get_table_names()) & set(metadata.tables)
    if present == set(metadata.tables):
        if not probes_of(bind).triggers_at_head(bind):
            return (IMPACT_REVISION,)
        if not probes_of(bind).lists_guarded(bind):
            return (LAST_SEQ_REVISION,)
        if not probes_of(bind).lists_self_promoting(bind):
            return (GUARD_REVISION,)
        if not probes_of(bind).rows_in_time_order(bind):
            return (SELF_PROMOTING_REVISION,)
        if not probes_of(bind).promotion_bounded(bind):
            return (TIME_ORDER_REVISION,)
        if not probes_of(bind).lists_timed(bind):
            return (BOUNDED_REVISION,)
        if not probes_of(bind).pending_marked(bind):
            return (ROW_TIME_REVISION,)
        if not probes_of(bind).vocabulary_kept(bind):
            return (PENDING_REVISION,)
        return tuple(sorted(head_revisions()))
    if present == set(metadata.tables) - set(IMPACT_TABLES):
        if not probes_of(bind).tables_at_head(bind):
            return (TABLES_REVISION,)
        return (STATISTICS_REVISION,)
    if present:
        raise HostManagedSchemaError(
            f"the host's {HOST_VERSION_TABLE} ({', '.join(recorded)}) implies an older "
            "openclaw-fts schema: run `alembic upgrade heads` in the host project"
        )
    return ()


def is_host_managed(bind: Engine | Connection) -> bool:
    """True when the host's own Alembic history runs the plugin's revisions on this database."""
    if isinstance(bind, Engine):
        with bind.connect() as conn:
            return is_host_managed(conn)
    return not _own_revisions(bind) and bool(host_revisions(bind))


def current_revisions(bind: Engine | Connection) -> tuple[str, ...]:
    """The plugin revisions the database is at (empty: not migrated): from the plugin's own
    version table, else from the host's ``alembic_version``."""
    if isinstance(bind, Engine):
        with bind.connect() as conn:
            return current_revisions(conn)
    return _own_revisions(bind) or host_revisions(bind)


def partition_by_agent(bind: Engine | Connection, partitions: int | None = None) -> int:
    """PostgreSQL, opt-in: move the index rows into ``partitions`` hash partitions by agent
    (default ``index.postgresql.partition.DEFAULT_PARTITIONS``), in one transaction that keeps
    every row; ``message_index`` becomes a view the plugin reads and writes as before
    (docs/scale.md). Returns the rows moved. The database must be at the plugin's head;
    run it once, with no writer running (it takes the table's exclusive lock)."""
    if isinstance(bind, Engine):
        with write_engine(bind).begin() as conn:
            return partition_by_agent(conn, partitions)
    layout = _partitions(bind)
    if set(current_revisions(bind)) != set(head_revisions()):
        raise UnsupportedDatabaseError(
            "openclaw-fts: upgrade the database to the plugin's head before partitioning it"
        )
    return layout.partition(bind, partitions)


def unpartition_by_agent(bind: Engine | Connection) -> int:
    """Undo :func:`partition_by_agent`: the index rows go back into the plain ``message_index``
    table, exactly as the plugin's revisions make it, in one transaction that keeps every row
    and id. Returns the rows moved. Needed before ``downgrade`` (which refuses the partitioned
    layout); run it with no writer running, and reopen the stores other processes opened
    before it (this process's read the layout again)."""
    if isinstance(bind, Engine):
        with write_engine(bind).begin() as conn:
            return unpartition_by_agent(conn)
    return _partitions(bind).unpartition(bind)


def _partitions(conn: Connection) -> Partitions:
    """The partitioned layout of ``conn``'s engine; refused on an engine without one."""
    backend = backend_of(conn)
    if backend.partitions is None:
        raise UnsupportedDatabaseError(
            f"openclaw-fts: the partitioned layout is for PostgreSQL (not {backend.name})"
        )
    return backend.partitions

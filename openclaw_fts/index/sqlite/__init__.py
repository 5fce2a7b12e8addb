"""The SQLite backend (:class:`.backend.SqliteBackend`), registered for ``sqlite`` databases
when this package is imported; the names of its FTS5 objects are handed on from :mod:`.fts`.

Invariant: one backend instance serves every ``sqlite`` connection of the process (it holds no
state; per-connection memos live on the DBAPI connection's ``info``).
"""

from ..base import register
from ..dialect_sql import register as register_sql
from ..probes import register_probes
from .backend import SqliteBackend
from .fts import CONTENT_TABLE as CONTENT_TABLE
from .fts import FTS_TABLE as FTS_TABLE
from .fts import IN_LIST_CHUNK as IN_LIST_CHUNK
from .fts import is_fts_table as is_fts_table
from .probes import SqliteProbes

_backend = SqliteBackend()
register(_backend)
register_probes("sqlite", SqliteProbes())
register_sql("sqlite", _backend.spelt)

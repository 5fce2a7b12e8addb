"""The PostgreSQL backend (:class:`.backend.PostgresqlBackend`), registered for ``postgresql``
databases when this package is imported; the names of its text-search objects are handed on
from :mod:`.names`.

Invariant: importing this package runs no statement and imports no driver (psycopg is loaded by
SQLAlchemy when an engine connects); one backend instance serves every connection of the
process (what it remembers lives on the pooled connection).
"""

from ..base import register
from ..dialect_sql import register as register_sql
from ..probes import register_probes
from .backend import PostgresqlBackend
from .names import CONTENT_TABLE as CONTENT_TABLE
from .names import GIN_INDEX as GIN_INDEX
from .names import TEXT_SEARCH_CONFIG as TEXT_SEARCH_CONFIG
from .names import TSVECTOR_COLUMN as TSVECTOR_COLUMN
from .names import TSVECTOR_STATISTICS_TARGET as TSVECTOR_STATISTICS_TARGET
from .names import UNACCENT_EXTENSION as UNACCENT_EXTENSION
from .names import is_search_object as is_search_object
from .probes import PostgresqlProbes

_backend = PostgresqlBackend()
register(_backend)
register_probes("postgresql", PostgresqlProbes())
register_sql("postgresql", _backend.spelt)

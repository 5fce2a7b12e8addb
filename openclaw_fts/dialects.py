"""Which databases the plugin runs on, checked once where an engine enters the plugin.

Invariant: an engine or URL of a dialect outside :data:`SCHEMA_DIALECTS` is refused with
:class:`~openclaw_fts.errors.UnsupportedDatabaseError` naming the supported ones before any
statement runs on it; a dialect whose schema migrates but that has no index backend would be
refused the same way by everything that writes or searches the index (``TranscriptStore``,
``install``), while ``openclaw_fts.migrate`` still accepts it — today both lists agree.
"""

from __future__ import annotations

from .errors import UnsupportedDatabaseError

#: Dialects the plugin's migrations run on.
SCHEMA_DIALECTS = ("sqlite", "postgresql")
#: Dialects with an index backend (writes and searches).
INDEX_DIALECTS = ("sqlite", "postgresql")


def require_schema_dialect(name: str) -> None:
    """Refuse a dialect the migrations do not support."""
    if name not in SCHEMA_DIALECTS:
        raise UnsupportedDatabaseError(
            f"openclaw-fts does not support {name!r} databases; supported: "
            f"{', '.join(SCHEMA_DIALECTS)}"
        )


def require_index_dialect(name: str) -> None:
    """Refuse a dialect without an index backend (also one the migrations do not support)."""
    require_schema_dialect(name)
    if name not in INDEX_DIALECTS:
        raise UnsupportedDatabaseError(
            f"openclaw-fts: the {name} schema can be migrated from Python "
            f"(openclaw_fts.migrate.upgrade(engine)), but there is no {name} index backend, so "
            f"the store, install() and the command line support only: "
            f"{', '.join(INDEX_DIALECTS)}"
        )

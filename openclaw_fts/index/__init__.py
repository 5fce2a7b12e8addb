"""The full-text index: one backend package per dialect (``sqlite``, ``postgresql``) behind the
interfaces of :mod:`.base`, and the SQL every backend shares.

Invariant: importing this package registers every backend (each registers itself by dialect
name, and the SQLite one attaches its DDL to the plugin's metadata), so the registry of
:mod:`.base` is complete before any connection asks it for a backend.
"""

from . import postgresql, sqlite  # noqa: F401  (each registers itself)

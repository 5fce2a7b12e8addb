"""The PostgreSQL side of the index: the names of its text-search objects, the read side
(:mod:`.read`, ``PostgresReader``) and the write side (:mod:`.write`, ``PostgresWriter``), both
registered for ``postgresql`` and imported on first use, the query rendering (:mod:`.query`),
the composable search's match and rank (:mod:`.compose`) and the reconcile lease
(:mod:`.lease`).

Invariant: ``message_index.body_tsv`` is a stored generated column,
``to_tsvector(TEXT_SEARCH_CONFIG, translate(body, <ASCII punctuation>, <spaces>))``, so every
``message_index`` row carries the tsvector of exactly the text it indexes, in the same row,
written by the same statement; the GIN index :data:`GIN_INDEX` covers it. Diacritics are
folded by the configuration (``simple`` with ``unaccent`` in front), never by an expression in
the column (``unaccent()`` is not immutable, so PostgreSQL refuses it in a generated column).
The revision that creates these objects keeps frozen copies of the DDL; this module names them
for the code that reads them (autogenerate filters, the reader). It runs no statement and
imports nothing heavy: the reader and the writer are imported when
:func:`~openclaw_fts.index.base.reader` or :func:`~openclaw_fts.index.base.writer` first asks
for them.
"""

from __future__ import annotations

from ..base import Reader, Writer, register_reader, register_writer

#: The extension that folds diacritics (contrib; trusted since PostgreSQL 13).
UNACCENT_EXTENSION = "unaccent"
#: Text search configuration: a copy of ``simple`` (no stemming, no stop words: every word is
#: findable, like FTS5's unicode61) with ``unaccent`` mapped in front for word tokens.
TEXT_SEARCH_CONFIG = "openclaw_fts_unaccent"
#: The tsvector column of ``message_index`` (generated from ``body``).
TSVECTOR_COLUMN = "body_tsv"
#: The GIN index over :data:`TSVECTOR_COLUMN`.
GIN_INDEX = "ix_message_index_body_tsv"
CONTENT_TABLE = "message_index"
#: The statistics target of :data:`TSVECTOR_COLUMN` (revision 0006): ``ANALYZE`` keeps ten times
#: this many most-common lexemes, so a rare word's match count is estimated near what it is.
TSVECTOR_STATISTICS_TARGET = 1000


def is_search_object(type_: str, name: str, table: str | None) -> bool:
    """True for the PostgreSQL search objects the ORM metadata does not model (autogenerate
    must not propose dropping them)."""
    if type_ == "column":
        return name == TSVECTOR_COLUMN and table == CONTENT_TABLE
    if type_ == "index":
        return name == GIN_INDEX
    return False


def _reader() -> Reader:
    from .read import PostgresReader

    return PostgresReader()


def _writer() -> Writer:
    from .write import PostgresWriter

    return PostgresWriter()


register_reader("postgresql", _reader)
register_writer("postgresql", _writer)

"""The names of the PostgreSQL text-search objects the index relies on (the revision that
creates them keeps frozen copies of the DDL): for the code that reads them (autogenerate
filters, the search statements, the schema probe).

Invariant: ``message_index.body_tsv`` is a stored generated column,
``to_tsvector(TEXT_SEARCH_CONFIG, translate(body, <ASCII punctuation>, <spaces>))``, so every
``message_index`` row carries the tsvector of exactly the text it indexes, in the same row,
written by the same statement; the GIN index :data:`GIN_INDEX` covers it. Diacritics are
folded by the configuration (``simple`` with ``unaccent`` in front), never by an expression in
the column (``unaccent()`` is not immutable, so PostgreSQL refuses it in a generated column).
Names only: no statement runs here.
"""

from __future__ import annotations

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

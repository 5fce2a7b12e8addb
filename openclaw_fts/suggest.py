"""Suggestions for a query that finds nothing, for a caller: the words (found by the index,
:mod:`openclaw_fts.index.suggest`, whose invariant they keep: each is proved visible to the
caller) and the sentence a result's ``warning`` and the command line show them in.

Invariant: no SQL here and no word chosen here; a search asks for its suggestions inside its one
backend call (:meth:`~openclaw_fts.index.base.Reader.search_page`), and
:meth:`~openclaw_fts.store.TranscriptStore.suggest` through :func:`suggestions`, so both give
the same words.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection

from .caller import Caller
from .index import suggest as index_suggest
from .index.base import reader
from .index.suggest import MAX_FRAGMENT_CHARS as MAX_FRAGMENT_CHARS
from .index.suggest import MAX_SUGGESTIONS as MAX_SUGGESTIONS
from .query import CompiledQuery


def suggestions(
    conn: Connection, caller: Caller, compiled: CompiledQuery | None, *, exact: bool = False
) -> list[str]:
    """For a query that found nothing: up to :data:`MAX_SUGGESTIONS` near words and a prefix
    form the caller may search (:func:`openclaw_fts.index.suggest.suggestions`); ``exact``: no
    session the caller may see is pending in this snapshot."""
    return index_suggest.suggestions(reader(conn), conn, caller, compiled, exact=exact)


def suggestion_text(words: Sequence[str]) -> str:
    """The sentence a result's ``warning`` and the command line carry."""
    return f"No matches. Did you mean: {', '.join(words)}?"

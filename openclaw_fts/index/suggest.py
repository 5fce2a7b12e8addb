"""Suggestions for a search that found nothing: near words from the index's own vocabulary,
and the prefix form of a word, asked of a backend's :class:`~openclaw_fts.index.base.Reader`
(inside its search call, :mod:`.page`; the sentence they are shown in is
:func:`openclaw_fts.suggest.suggestion_text`).

Invariant: every suggested word is proved, by the index backend's
:meth:`~openclaw_fts.index.base.Reader.visible_words`, to occur in a message of a session the
caller may search (the visibility predicate is in the statement that proves it), so a
suggestion never reveals a word found only in sessions the caller cannot see; and of a
session whose index is exact (:data:`~openclaw_fts.index.pending.EXACT_SESSION` is in that
statement too, unless the search that asks knows none of them is pending): search hides a
pending session, whose rows may hold words its transcript no longer has, so a word found only
there would send the caller to a query that finds nothing. No word is suggested that those
messages hold only inside what a credential's mask keeps (``pro`` of ``sk-pro…0gEy``):
:func:`said_outside_masks` reads the best messages holding each short candidate. A ``self``
or ``tree`` caller's near words are ordered by how many messages it may see hold them (counted
with the same predicate, not over the whole index), so neither their order nor which of them
are kept depends on sessions it cannot see; a wider caller's (``agent``, ``all``) keep the
order of their frequency over the whole index on both engines (SQLite: FTS5's vocabulary;
PostgreSQL: the tracked words' counts, then the others' counted up to a cap), where counting
them among its visible messages cost its searches that find nothing more (measured:
bench/NOTES.md). The work is
bounded by named constants (:data:`MAX_CORRECTED_TOKENS` tokens, one edit each) and runs only
when a query found nothing; only for word-like terms
(:func:`~openclaw_fts.spelling.term_is_word_like`: an identifier -- a hash, a UUID,
``ABC-1234``, ``w0g0n1q`` -- is not a misspelt word, and a vocabulary full of identifiers
made its near words cost 100x a hit), each word examining at most
:data:`~openclaw_fts.spelling.MAX_NEAR_CANDIDATES` candidates (the backends' ``near_words``);
:mod:`openclaw_fts.spelling` argues both bounds.
"""

from __future__ import annotations

from typing import NamedTuple

from sqlalchemy import Connection

from ..caller import Caller
from ..query import CompiledQuery, compile_query
from ..redact import KEEP_END_CHARS, KEEP_START_CHARS, mask_fragments
from ..rows import SearchRequest
from ..spelling import term_is_word_like
from ..tokens import tokenize
from .base import SearchReads

#: Most suggestions for one query (near words and prefix forms together).
MAX_SUGGESTIONS = 3
#: Tokens shorter than this are not corrected (one edit of a 2-letter word is any word).
MIN_CORRECTED_CHARS = 3
#: Tokens longer than this are not corrected (no word is that long; it bounds the candidates).
MAX_CORRECTED_CHARS = 32
#: Tokens of one query looked at (the first ones not found), bounding the statements run.
MAX_CORRECTED_TOKENS = 3
#: Tokens up to this long are corrected by one edit; longer ones by up to
#: :data:`MAX_EDIT_DISTANCE` (SQLite; PostgreSQL corrects one edit: docs/cli.md).
SHORT_TOKEN_CHARS = 5
MAX_EDIT_DISTANCE = 2
#: Words up to this long can lie wholly inside what a credential's mask keeps of it (its first
#: :data:`~openclaw_fts.redact.KEEP_START_CHARS` or last ``KEEP_END_CHARS`` characters).
MAX_FRAGMENT_CHARS = max(KEEP_START_CHARS, KEEP_END_CHARS)


class OwnRows(NamedTuple):
    """What a backend's read of a narrow caller's own rows found for one head (the first
    letters its near words share): the words (PostgreSQL: lexemes) starting with it of each
    of the caller's messages that holds one (``rows``), and the same of those messages whose
    body holds no credential mask (``bare``: no
    :data:`~openclaw_fts.redact.engine.MASK_ELLIPSIS`), what a backend's ``visible_words``
    asks of a message with ``unmasked``: both answered from that one read."""

    rows: list[frozenset[str]]
    bare: list[frozenset[str]]


#: Best-ranked messages holding such a word that are read to find it outside every mask.
MASK_CHECK_MESSAGES = 8


def said_outside_masks(
    conn: Connection, backend: SearchReads, caller: Caller, word: str, *, prefix: bool, exact: bool
) -> bool:
    """Whether ``word`` (``prefix``: a word starting with it) occurs in a message the caller may
    search other than inside the kept start or end of a masked credential (``sk-pro…0gEy``
    holds ``sk``, ``pro`` and ``0gey`` for the index, and none of them is a word anyone
    wrote). A word longer than :data:`MAX_FRAGMENT_CHARS` always does; a shorter one is looked
    for in the :data:`MASK_CHECK_MESSAGES` best-ranked messages that match it, through the
    search's own statement (visibility, pending filter), and is judged inside a mask only
    when each of them holds it only there (:func:`~openclaw_fts.redact.mask_fragments`)."""
    if len(word) > MAX_FRAGMENT_CHARS and not prefix:
        return True
    if backend.visible_words(conn, caller, [word], prefix=prefix, exact=exact, unmasked=True):
        return True  # a message without any mask holds it: no message need be ranked
    query = f"{word}*" if prefix else word
    compiled = compile_query(query)
    if compiled is None:
        return True
    req = SearchRequest(query, compiled, MASK_CHECK_MESSAGES, None, None, None, None, "relevance")
    hits = backend.ranked_hits(conn, caller, req, exact=exact)
    for text in backend.hit_texts(conn, hits).values():
        kept = mask_fragments(text)
        if not kept:
            return True  # it matched a message without any mask
        for token in tokenize(text):
            held = token.norm == word or (prefix and token.norm.startswith(word))
            if held and not any(a <= token.start and token.end <= b for a, b in kept):
                return True
    return False


def _unmasked(
    conn: Connection,
    backend: SearchReads,
    caller: Caller,
    found: list[tuple[str, int]],
    exact: bool,
) -> set[str]:
    """Of ``found`` (near words), those :func:`said_outside_masks` needs no read for: the
    long ones, and the short ones a visible message without any mask holds, asked of the
    backend in one call (``visible_words(unmasked=True)``), not by ranking each word's best
    messages (at 100k events that ranking was most of a search that finds nothing:
    bench/NOTES.md)."""
    short = [w for w, _ in found if len(w) <= MAX_FRAGMENT_CHARS]
    long = {w for w, _ in found if len(w) > MAX_FRAGMENT_CHARS}
    if not short:
        return long
    proved = backend.visible_words(conn, caller, short, want=len(short), exact=exact, unmasked=True)
    return long | {w for w, _ in proved}


def _tokens(compiled: CompiledQuery) -> list[str]:
    """The whole-word tokens of the query worth correcting, in query order: those of its
    word-like terms (:func:`~openclaw_fts.spelling.term_is_word_like`; an identifier such as
    ``ABC-1234`` or ``w0g0n1q`` gets no suggestion and costs no statement)."""
    out = []
    for term in compiled.terms:
        if not term_is_word_like(term.tokens):
            continue
        for n, token in enumerate(term.tokens):
            if term.prefix and n == len(term.tokens) - 1:
                continue  # already a prefix
            if MIN_CORRECTED_CHARS <= len(token) <= MAX_CORRECTED_CHARS and token.isalnum():
                out.append(token)
    return list(dict.fromkeys(out))


def suggestions(
    backend: SearchReads,
    conn: Connection,
    caller: Caller,
    compiled: CompiledQuery | None,
    *,
    exact: bool = False,
    unfiltered: bool = False,
) -> list[str]:
    """For a query that found nothing: up to :data:`MAX_SUGGESTIONS` words one edit away
    from a query word that no visible message holds (most frequent first, see the module's
    invariant; never a word found only inside a masked credential, :func:`said_outside_masks`),
    and that word's
    prefix form (``word*``) when visible words start with it. ``exact``: no session the caller
    may see is pending in this snapshot (a search that asked says so), and the statements
    need not test it. ``unfiltered``: the search that found nothing had no ``role``,
    ``since``, ``until`` or ``sessionKey`` (it read every message the caller may see)."""
    if compiled is None:
        return []
    near: list[str] = []
    prefixes: list[str] = []
    looked = 0
    tokens = _tokens(compiled)
    # Which words are found, asked once for all of them: a query that found nothing because
    # of its filters (``role``, ``since``, ``until``) or its combination usually holds only
    # found words, and one statement (PostgreSQL) answers it instead of one per word.
    # Only whether each is found (``counted=False``): the first visible message of each word
    # proves it, where counting them read up to a thousand (bench/NOTES.md, "Filters on the
    # fast paths").
    # A query of one plain word that an unfiltered search did not find is not found: the
    # search read what the question would (the same visible, exact messages), so it is not
    # asked again (one statement, one round trip less for a misspelt word).
    one_word = (
        len(compiled.terms) == 1
        and not compiled.terms[0].prefix
        and len(compiled.terms[0].tokens) == 1
    )
    found_words = (
        {
            w
            for w, _ in backend.visible_words(
                conn, caller, tokens, want=len(tokens), exact=exact, counted=False
            )
        }
        if tokens and not (unfiltered and one_word)
        else set()
    )
    for token in tokens:
        if looked >= MAX_CORRECTED_TOKENS or len(near) >= MAX_SUGGESTIONS:
            break
        if token in found_words:
            continue  # this word is found: another one (or the combination) is not
        looked += 1
        distance = 1 if len(token) <= SHORT_TOKEN_CHARS else MAX_EDIT_DISTANCE
        want = MAX_SUGGESTIONS
        while True:
            found = backend.near_words(
                conn, caller, token, max_distance=distance, want=want, exact=exact
            )
            unmasked = _unmasked(conn, backend, caller, found, exact)
            words = [
                w
                for w, _ in found
                if w in unmasked
                or said_outside_masks(conn, backend, caller, w, prefix=False, exact=exact)
            ]
            if len(words) >= MAX_SUGGESTIONS or len(found) < want:
                break
            want += len(found) - len(words)  # a fragment of a mask took a place: ask past it
        near.extend(words)
        if backend.visible_words(
            conn, caller, [token], prefix=True, exact=exact
        ) and said_outside_masks(conn, backend, caller, token, prefix=True, exact=exact):
            prefixes.append(f"{token}*")
    near = list(dict.fromkeys(near))
    kept = prefixes[:1]  # room for one prefix form among the suggestions
    return near[: MAX_SUGGESTIONS - len(kept)] + kept

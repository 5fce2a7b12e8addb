"""One search's page, read by any backend the same way: the pending/exact protocol, each
query's ranked hits (or one hit per session) and their texts, and the suggestions of the
queries that found nothing -- what :meth:`~openclaw_fts.index.base.Reader.search_page` answers.

Invariant: every read runs on the caller's connection, in one snapshot, with the caller's
visibility, the pending filter (unless this snapshot is known to have nothing pending the
caller may see) and every user filter inside each ranking statement, before its LIMIT; the
explicit ``sessionKey`` of the requests is already resolved and judged (``visibility.py``).
Nothing here shapes the tool's answer (byte budget, keys, snippets): ``search.py`` does.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection

from ..caller import Caller
from ..rows import Hit, QueryPage, SearchPage, SearchRequest
from .base import SearchReads
from .suggest import suggestions


class PagedSearch:
    """The one search entry every backend shares (mixed into
    :class:`~openclaw_fts.index.sql.SqlBackend`): the engines differ only in the reads it calls."""

    def search_page(
        self: SearchReads,
        conn: Connection,
        caller: Caller,
        reqs: Sequence[SearchRequest],
        *,
        per_session: bool = False,
        suggest: bool = True,
    ) -> SearchPage:
        """See the Reader protocol: the search over this backend's own reads."""
        # First: it starts the snapshot every later read sees. A backend without a cheap
        # database-wide probe asks only about the caller's sessions (below).
        exact = self.GLOBAL_PENDING_PROBE and not self.any_pending(conn)
        # Whether no session the suggestions may read from is pending: they look at every
        # session the caller may see, whatever the sessionKey (below: or what the probe says).
        words_exact = exact
        session_key = reqs[0].session_key
        # One query: the backend may answer the pending probe and rank in one statement.
        folded = None
        if len(reqs) == 1 and not per_session and reqs[0].compiled is not None and not exact:
            folded = self.pending_and_hits(conn, caller, reqs[0])
        if folded is not None:
            indexing = folded[0]
        else:
            indexing = not exact and self.pending_visible(conn, caller, session_key)
        # Nothing the caller may see is pending: every row the ranked statement can return (its
        # visibility and sessionKey filters are the same) is exact, so it needs no pending filter.
        exact = exact or not indexing
        words_exact = words_exact or (exact and session_key is None)
        found = [
            _query_hits(
                self, conn, caller, req, exact=exact, per_session=per_session, folded=folded
            )
            for req in reqs
        ]
        queries = []
        for req, page in zip(reqs, found, strict=True):
            if suggest and not page.hits:
                unfiltered = (
                    session_key is None
                    and req.role is None
                    and req.since is None
                    and req.until is None
                )
                words = suggestions(
                    self, conn, caller, req.compiled, exact=words_exact, unfiltered=unfiltered
                )
                page = QueryPage(page.hits, page.more, page.texts, page.session_hits, words)
            queries.append(page)
        return SearchPage(indexing=indexing, queries=queries)


def _query_hits(
    backend: SearchReads,
    conn: Connection,
    caller: Caller,
    req: SearchRequest,
    *,
    exact: bool,
    per_session: bool,
    folded: tuple[bool, list[Hit]] | None,
) -> QueryPage:
    """One query's hits (up to its limit; whether there were more) and their texts."""
    if req.compiled is None:
        return QueryPage([], False, {}, {}, [])
    counts: dict[int, int] = {}
    if per_session:
        grouped = backend.session_hits(conn, caller, req, exact=exact)
        hits = [hit for hit, _ in grouped]
        counts = {hit[0]: n for hit, n in grouped}
    elif folded is not None:
        hits = folded[1]
    else:
        hits = backend.ranked_hits(conn, caller, req, exact=exact)
    kept = hits[: req.limit]
    return QueryPage(kept, len(hits) > req.limit, backend.hit_texts(conn, kept), counts, [])

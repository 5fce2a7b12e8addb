"""Typed results: ``TypedDict``s for what the store and the tool adapters return.

Invariant: each class here describes exactly one result object, key for key, as the code builds
it; those of the tools agree with the JSON Schemas :data:`tools.SESSIONS_SEARCH_OUTPUT_SCHEMA` /
:data:`tools.SESSIONS_HISTORY_OUTPUT_SCHEMA` (same properties, ``NotRequired`` exactly where
the schema does not require a field; the test suite compares them). Only types live
here: nothing at runtime builds or checks these dicts.

The result objects are ``@final``, so a host narrows a union with ``in``::

    out = store.search(caller, "deploy*")
    if "status" in out:  # StatusResult: an error, or a session the caller may not name
        raise RuntimeError(out["error"])
    first = out["results"][0]["snippet"]

``typing_extensions`` supplies ``NotRequired`` (``typing`` has it from Python 3.11 only). No
``from __future__ import annotations`` here: with string annotations ``__required_keys__`` would
miss the ``NotRequired`` fields at runtime (the tests read them).
"""

from typing import Any, Literal

from typing_extensions import NotRequired, TypedDict, final

__all__ = [
    "BatchSearchHit",
    "BatchSearchResult",
    "HistoryAnswer",
    "HistoryResult",
    "ImportOutcome",
    "ImportResult",
    "IndexStatus",
    "OpenClawMeta",
    "RebuildResult",
    "ReconcileResult",
    "SearchAnswer",
    "SearchHit",
    "SearchResult",
    "SessionsListResult",
    "StatusResult",
]


@final
class StatusResult(TypedDict):
    """Invalid arguments (``error``), or a session the caller may not name (``forbidden``)."""

    status: Literal["error", "forbidden"]
    error: str


class SearchHit(TypedDict):
    """One ``sessions_search`` hit. The store always fills ``sessionId`` and ``messageId``;
    OpenClaw's schema makes them optional."""

    sessionKey: str
    sessionId: NotRequired[str]
    messageId: NotRequired[str]
    role: Literal["user", "assistant"]
    #: Epoch milliseconds.
    timestamp: int
    snippet: str
    #: Higher is better (negated bm25 rank).
    score: float


@final
class BatchSearchHit(SearchHit):
    """A hit of a batch search: which query (index into ``queries``) found it."""

    queryIndex: int


@final
class SearchResult(TypedDict):
    """``sessions_search`` with one ``query``. ``truncated``, ``indexing`` and ``warning`` are
    present only when true (``warning`` with ``indexing``)."""

    results: list[SearchHit]
    sessionLinkRule: NotRequired[str]
    indexing: NotRequired[Literal[True]]
    warning: NotRequired[str]
    truncated: NotRequired[Literal[True]]


@final
class BatchSearchResult(TypedDict):
    """``sessions_search`` with ``queries``: each query's hits in turn."""

    batch: Literal[True]
    queries: list[str]
    results: list[BatchSearchHit]
    sessionLinkRule: NotRequired[str]
    indexing: NotRequired[Literal[True]]
    warning: NotRequired[str]
    #: Every query's index, while sessions the caller may see are pending.
    indexingQueries: NotRequired[list[int]]
    truncated: NotRequired[Literal[True]]
    #: The queries whose hits were cut (by their limit or by the byte cap).
    truncatedQueries: NotRequired[list[int]]


class OpenClawMeta(TypedDict):
    """``__openclaw`` of a history message."""

    #: 1-based position in the transcript.
    seq: int
    id: str | None
    #: Epoch milliseconds, when the event had a readable timestamp.
    timestamp: int | None


@final
class HistoryResult(TypedDict):
    """``sessions_history``. ``offset``, ``hasMore`` (and ``nextOffset`` while there is more)
    when paging; with ``messageId`` only ``totalMessages``."""

    sessionKey: str
    #: Sanitised messages, oldest first, each with ``__openclaw`` (:class:`OpenClawMeta`).
    messages: list[dict[str, Any]]
    truncated: bool
    droppedMessages: bool
    contentTruncated: bool
    contentRedacted: bool
    bytes: int
    sessionLinkRule: NotRequired[str]
    offset: NotRequired[int]
    nextOffset: NotRequired[int]
    hasMore: NotRequired[bool]
    totalMessages: NotRequired[int]


@final
class SessionsListResult(TypedDict):
    """``list_sessions`` / ``sessions_list``: the listed sessions (OpenClaw's row fields:
    ``key``, ``agentId``, ``kind``, ``channel``, ``sessionId``, ``updatedAt``, ``spawnedBy``,
    ``parentSessionKey``, ``messages``; docs/tools.md) and ``truncated`` when more matched."""

    count: int
    sessions: list[dict[str, Any]]
    truncated: NotRequired[Literal[True]]


#: What ``search`` / ``sessions_search`` may answer.
SearchAnswer = SearchResult | BatchSearchResult | StatusResult
#: What ``history`` / ``sessions_history`` may answer.
HistoryAnswer = HistoryResult | StatusResult


class IndexStatus(TypedDict):
    """``index_status()``: sessions pending, indexed, and in all."""

    pending: int
    indexed: int
    total: int


class ReconcileResult(IndexStatus):
    """``reconcile()``: the counts after the run; the run's totals when it ran (``ran: false``:
    another reconciler held the lease and the call did not wait)."""

    ran: bool
    sessions: NotRequired[int]
    inserted: NotRequired[int]
    deleted: NotRequired[int]
    retried: NotRequired[int]


@final
class RebuildResult(ReconcileResult):
    """``rebuild()``: the ids of the sessions re-indexed, and the reconcile that did it."""

    rebuilt: list[str]


#: What one file of a folder import became (``as``: current, orphan or reset archive).
ImportOutcome = TypedDict(
    "ImportOutcome",
    {
        "file": str,
        "agentId": str,
        "sessionKey": str,
        "sessionId": str,
        "as": str,
        "matchedBy": str | None,
        "note": NotRequired[str],
    },
)


@final
class ImportResult(TypedDict):
    """``import_jsonl`` / ``import_item`` / ``import_dir``: what the import did."""

    files: int
    sessions: list[str]
    imported: int
    skippedDuplicates: int
    errorCount: int
    errors: list[str]
    failedFiles: list[str]
    agents: list[str]
    outcomes: list[ImportOutcome]

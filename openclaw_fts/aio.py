"""``AsyncTranscriptStore``: the store's operations as coroutines that never block the event
loop.

Invariant: every call runs the synchronous :class:`~openclaw_fts.store.TranscriptStore`
method of the same name in a worker thread (``asyncio.to_thread``) on the store's own
synchronous engine, so its results, errors, locks and guarantees are exactly the synchronous
store's, and its parameters and return types are the synchronous method's, overloads included
(``tests/test_async.py`` compares them). Given an async URL or an ``AsyncEngine``, the store
opens the same database through the synchronous driver (``sqlite+aiosqlite``: ``sqlite3``;
``postgresql+asyncpg``: psycopg 3); the host's async engine keeps its own connections. Host
writes through an ``AsyncSession`` are indexed by :func:`openclaw_fts.install` on the
``async_sessionmaker``, not by this class.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, overload

from sqlalchemy.engine import URL, make_url

from .caller import Caller
from .engine import DISTRIBUTION, sync_driver_url
from .engine import SYNC_DRIVERS as SYNC_DRIVERS  # its home before engine.py
from .errors import MissingDriverError
from .models import AgentSession
from .results import (
    BatchSearchResult,
    HistoryAnswer,
    ImportResult,
    IndexStatus,
    RebuildResult,
    ReconcileResult,
    SearchAnswer,
    SearchResult,
    SessionsListResult,
    StatusResult,
)
from .store import TranscriptStore

#: What SQLAlchemy's asyncio layer needs (greenlet) comes with either of these extras.
ASYNC_EXTRAS = ("async", "postgresql-async")

try:
    from sqlalchemy.ext.asyncio import AsyncEngine
except ImportError as exc:  # no greenlet: SQLAlchemy names its own extra, not the plugin's
    raise MissingDriverError(
        "openclaw_fts.aio needs SQLAlchemy's asyncio support, which needs the greenlet "
        "package: install it with "
        + " (SQLite) or ".join(f"pip install '{DISTRIBUTION}[{extra}]'" for extra in ASYNC_EXTRAS)
        + " (PostgreSQL)"
    ) from exc

R = TypeVar("R")


def sync_url(url: str | URL | AsyncEngine) -> URL:
    """The synchronous URL of the same database (:func:`openclaw_fts.engine.sync_driver_url`)."""
    return sync_driver_url(url.url if isinstance(url, AsyncEngine) else make_url(url))


class AsyncTranscriptStore:
    """Open with ``await AsyncTranscriptStore.open(url, **store_options)`` (migrating and
    connecting run in a thread too); close with ``await store.aclose()`` or ``async with``."""

    def __init__(self, store: TranscriptStore) -> None:
        self.store = store

    @classmethod
    async def open(cls, url: str | URL | AsyncEngine, **options: Any) -> AsyncTranscriptStore:
        store = await asyncio.to_thread(TranscriptStore, sync_url(url), **options)
        return cls(store)

    async def _run(self, fn: Callable[..., R], *args: Any, **kwargs: Any) -> R:
        return await asyncio.to_thread(functools.partial(fn, *args, **kwargs))

    async def create_session(
        self,
        session_id: str,
        session_key: str,
        *,
        agent_id: str | None = None,
        spawned_by: str | None = None,
        parent_session_key: str | None = None,
        owner_session_key: str | None = None,
        archived: bool = False,
        incognito: bool = False,
    ) -> AgentSession:
        return await self._run(
            self.store.create_session,
            session_id,
            session_key,
            agent_id=agent_id,
            spawned_by=spawned_by,
            parent_session_key=parent_session_key,
            owner_session_key=owner_session_key,
            archived=archived,
            incognito=incognito,
        )

    async def append(self, session_id: str, event: Mapping[str, Any]) -> int:
        return await self._run(self.store.append, session_id, event)

    async def append_many(self, session_id: str, events: Iterable[Mapping[str, Any]]) -> list[int]:
        return await self._run(self.store.append_many, session_id, list(events))

    async def rewind(self, session_id: str, target_id: str | None) -> int:
        return await self._run(self.store.rewind, session_id, target_id)

    async def delete_session(self, session_id: str) -> bool:
        return await self._run(self.store.delete_session, session_id)

    async def import_jsonl(
        self, path: str | Path, session_key: str | None = None, **kwargs: Any
    ) -> ImportResult:
        return await self._run(self.store.import_jsonl, path, session_key, **kwargs)

    async def import_paths(
        self,
        paths: Iterable[str | Path],
        *,
        session_key: str | None = None,
        rekey: bool = False,
        progress: Callable[[int], None] | None = None,
        on_file: Callable[[Path], None] | None = None,
    ) -> ImportResult:
        return await self._run(
            self.store.import_paths,
            list(paths),
            session_key=session_key,
            rekey=rekey,
            progress=progress,
            on_file=on_file,
        )

    async def import_dir(self, sessions_dir: str | Path, **kwargs: Any) -> ImportResult:
        return await self._run(self.store.import_dir, sessions_dir, **kwargs)

    @overload
    async def search(
        self,
        caller: Caller,
        query: str | None,
        *,
        limit: int | None = None,
        session_key: str | None = None,
        role: str | None = None,
        since: int | str | None = None,
        until: int | str | None = None,
        order: str | None = None,
        now_ms: int | None = None,
        queries: None = None,
    ) -> SearchResult | StatusResult: ...

    @overload
    async def search(
        self,
        caller: Caller,
        query: str | None,
        *,
        limit: int | None = None,
        session_key: str | None = None,
        role: str | None = None,
        since: int | str | None = None,
        until: int | str | None = None,
        order: str | None = None,
        now_ms: int | None = None,
        queries: Sequence[str],
    ) -> BatchSearchResult | StatusResult: ...

    @overload
    async def search(
        self,
        caller: Caller,
        query: str | None,
        *,
        limit: int | None = None,
        session_key: str | None = None,
        role: str | None = None,
        since: int | str | None = None,
        until: int | str | None = None,
        order: str | None = None,
        now_ms: int | None = None,
        queries: Sequence[str] | None = None,
    ) -> SearchAnswer: ...

    async def search(
        self,
        caller: Caller,
        query: str | None,
        *,
        limit: int | None = None,
        session_key: str | None = None,
        role: str | None = None,
        since: int | str | None = None,
        until: int | str | None = None,
        order: str | None = None,
        now_ms: int | None = None,
        queries: Sequence[str] | None = None,
    ) -> SearchAnswer:
        answer: SearchAnswer = await self._run(
            self.store.search,
            caller,
            query,
            limit=limit,
            session_key=session_key,
            role=role,
            since=since,
            until=until,
            order=order,
            now_ms=now_ms,
            queries=queries,
        )
        return answer

    async def search_by_session(
        self,
        caller: Caller,
        query: str,
        *,
        limit: int | None = None,
        session_key: str | None = None,
        role: str | None = None,
        since: int | str | None = None,
        until: int | str | None = None,
        order: str | None = None,
        now_ms: int | None = None,
    ) -> dict[str, Any]:
        return await self._run(
            self.store.search_by_session,
            caller,
            query,
            limit=limit,
            session_key=session_key,
            role=role,
            since=since,
            until=until,
            order=order,
            now_ms=now_ms,
        )

    async def suggest(self, caller: Caller, query: str) -> list[str]:
        return await self._run(self.store.suggest, caller, query)

    async def list_sessions(self, caller: Caller, **kwargs: Any) -> SessionsListResult:
        return await self._run(self.store.list_sessions, caller, **kwargs)

    async def history(self, caller: Caller, session_key: str, **kwargs: Any) -> HistoryAnswer:
        return await self._run(self.store.history, caller, session_key, **kwargs)

    async def reconcile(self, progress: Any = None, on_wait: Any = None) -> ReconcileResult:
        return await self._run(self.store.reconcile, progress, on_wait)

    async def rebuild(
        self, keys: Iterable[str] | None = None, progress: Any = None, on_wait: Any = None
    ) -> RebuildResult:
        return await self._run(
            self.store.rebuild, None if keys is None else list(keys), progress, on_wait
        )

    async def optimize(self) -> None:
        await self._run(self.store.optimize)

    async def read_after(self, lsn: str | None = None) -> None:
        await self._run(self.store.read_after, lsn)

    async def index_status(self) -> IndexStatus:
        return await self._run(self.store.index_status)

    async def aclose(self) -> None:
        await self._run(self.store.close)

    async def __aenter__(self) -> AsyncTranscriptStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

"""Async hosts: ``install(async_sessionmaker)`` indexes writes made through ``AsyncSession`` on
``sqlite+aiosqlite`` and on ``postgresql+asyncpg`` in the same transaction, and
``AsyncTranscriptStore`` answers without blocking the event loop (each test runs on both engines:
the host's async engine opens the test's database through the async driver)."""

from __future__ import annotations

import asyncio
import inspect
import shutil
import sys
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from factories import chain, msg
from sqlalchemy import delete, func, insert, select
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.orm import Session

import openclaw_fts
from openclaw_fts import (
    AgentSession,
    Caller,
    DuplicateEventError,
    InvalidSessionError,
    TranscriptEvent,
    TranscriptStore,
)
from openclaw_fts.aio import AsyncTranscriptStore, sync_url
from openclaw_fts.check import check

pytestmark = pytest.mark.both_engines

CALLER = Caller("agent:main:main", visibility="all")
EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "sessions"
ASYNC_DRIVERS = {
    "sqlite": ("sqlite+aiosqlite", "aiosqlite"),
    "postgresql": ("postgresql+asyncpg", "asyncpg"),
}


def aio_url(db_url: str) -> str:
    """The same database through the engine's async driver."""
    url = make_url(db_url)
    drivername, module = ASYNC_DRIVERS[url.get_backend_name()]
    pytest.importorskip(module)
    return url.set(drivername=drivername).render_as_string(hide_password=False)


def found(store: TranscriptStore, query: str) -> list[str]:
    return sorted(h["messageId"] for h in store.search(CALLER, query)["results"])


def test_async_sessionmaker_writes_are_indexed_in_their_transaction(
    db_url: str, store: TranscriptStore
) -> None:
    async def main() -> None:
        engine = create_async_engine(aio_url(db_url))
        factory = async_sessionmaker(engine, expire_on_commit=False)
        assert openclaw_fts.install(factory) is factory
        try:
            async with factory.begin() as db:
                s = AgentSession(session_id="a1", session_key="agent:main:main")
                db.add(s)
                db.add(TranscriptEvent(session=s, event=msg("m1", "asynchronous deploy")))
            with pytest.raises(RuntimeError):
                async with factory.begin() as db:
                    db.add(TranscriptEvent(session_id="a1", event=msg("m2", "rolled back")))
                    await db.flush()
                    raise RuntimeError("host failure")
            async with factory.begin() as db:  # edit through the ORM: re-indexed in the flush
                ev = await db.get(TranscriptEvent, ("a1", 0))
                assert ev is not None
                ev.event = msg("m1", "asynchronous rollout")
            async with factory() as db:
                count = select(func.count()).select_from(TranscriptEvent)
                assert (await db.execute(count)).scalar() == 1
        finally:
            await engine.dispose()

    asyncio.run(main())
    assert [h["messageId"] for h in store.search(CALLER, "rollout")["results"]] == ["m1"]
    assert store.search(CALLER, "deploy")["results"] == []
    assert store.search(CALLER, "rolled")["results"] == []
    assert check(store.engine).ok


def test_the_documented_sync_session_class_route_works_and_cascades(
    db_url: str, store: TranscriptStore
) -> None:
    class HostSession(Session):
        pass

    openclaw_fts.install(HostSession)
    store.create_session("s1", "agent:main:main")
    store.append_many("s1", chain(["one", "two"]))

    async def main() -> None:
        engine = create_async_engine(aio_url(db_url))
        factory = async_sessionmaker(engine, sync_session_class=HostSession)
        try:
            async with factory.begin() as db:
                assert isinstance(db, AsyncSession)
                db.add(TranscriptEvent(session_id="s1", event=msg("m2", "three", parent="m1")))
            async with factory.begin() as db:
                await db.execute(delete(AgentSession).where(AgentSession.session_id == "s1"))
        finally:
            await engine.dispose()

    asyncio.run(main())
    with store.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(TranscriptEvent)).scalar() == 0
    assert check(store.engine).ok


def test_async_store_runs_off_the_event_loop(db_url: str) -> None:
    async def main() -> tuple[int, dict[str, object], dict[str, object]]:
        ticks = 0
        done = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        async with await AsyncTranscriptStore.open(aio_url(db_url), background=False) as store:
            await store.import_dir(EXAMPLES)
            reconciled = await store.reconcile()
            await store.create_session("s9", "agent:main:async")
            await store.append_many("s9", chain(["async hello", "async reply"]))
            found = await store.search(CALLER, "async hello")
            history = await store.history(CALLER, "agent:main:async")
            assert (await store.index_status())["pending"] == 0
        done.set()
        await task
        return ticks, found, {**history, "reconciled": reconciled}

    ticks, found, history = asyncio.run(main())
    assert ticks > 0
    assert [h["messageId"] for h in found["results"]] == ["m0"]  # type: ignore[index]
    assert history["reconciled"]["ran"] is True  # type: ignore[index]


def test_async_store_opens_on_the_hosts_async_engine(db_url: str) -> None:
    async def main() -> tuple[dict[str, object], dict[str, object]]:
        engine = create_async_engine(aio_url(db_url))
        try:
            async with await AsyncTranscriptStore.open(engine, background=False) as store:
                assert store.store.engine.url.drivername in (
                    "sqlite+pysqlite",
                    "postgresql+psycopg",
                )
                await store.create_session("s1", "agent:main:main")
                await store.append_many("s1", chain(["engine handed over", "dropped"]))
                await store.rewind("s1", "m0")  # m1 leaves the active branch
                rebuilt = await store.rebuild()
                await store.optimize()
                return await store.search(CALLER, "handed"), {**rebuilt}
        finally:
            await engine.dispose()

    answer, rebuilt = asyncio.run(main())
    assert [h["messageId"] for h in answer["results"]] == ["m0"]  # type: ignore[index]
    assert rebuilt["rebuilt"] == ["s1"]


def test_async_non_append_writes_are_indexed_in_their_transaction(
    db_url: str, store: TranscriptStore
) -> None:
    """Branches, incognito flips, deletes, bulk inserts and savepoints through the async driver
    keep the index exact in the writing transaction, as through the synchronous one."""

    async def main() -> None:
        engine = create_async_engine(aio_url(db_url))
        factory = async_sessionmaker(engine, expire_on_commit=False)
        openclaw_fts.install(factory)
        try:
            async with factory.begin() as db:
                s = AgentSession(session_id="a1", session_key="agent:main:main")
                db.add(s)
                db.add_all(TranscriptEvent(session=s, event=e) for e in chain(["alpha", "beta"]))
            async with factory.begin() as db:  # a branch off m0: m1 leaves the active path
                db.add(TranscriptEvent(session_id="a1", event=msg("b1", "branched", parent="m0")))
            assert found(store, "branched") == ["b1"]
            async with factory.begin() as db:
                s = await db.get(AgentSession, "a1")
                assert s is not None
                s.incognito = True
            assert found(store, "alpha") == []
            async with factory.begin() as db:
                s = await db.get(AgentSession, "a1")
                assert s is not None
                s.incognito = False
            assert found(store, "alpha") == ["m0"]
            async with factory.begin() as db:
                ev = await db.get(TranscriptEvent, ("a1", 0))
                await db.delete(ev)
            assert found(store, "alpha") == []
            async with factory.begin() as db:
                await db.execute(
                    insert(TranscriptEvent),
                    [{"session_id": "a1", "event": msg("k1", "bulkword")}],
                )
                async with db.begin_nested() as savepoint:
                    db.add(TranscriptEvent(session_id="a1", event=msg("sp", "savepointword")))
                    await db.flush()
                    await savepoint.rollback()
            assert found(store, "bulkword") == ["k1"]
            assert found(store, "savepointword") == []
            with pytest.raises(DuplicateEventError):
                async with factory.begin() as db:
                    db.add(TranscriptEvent(session_id="a1", event=msg("k1", "again")))
            with pytest.raises(DuplicateEventError):
                async with factory.begin() as db:
                    await db.execute(
                        insert(TranscriptEvent), [{"session_id": "a1", "event": msg("k1", "x")}]
                    )
        finally:
            await engine.dispose()

    asyncio.run(main())
    assert found(store, "again") == []
    assert store.index_status()["pending"] == 0
    assert check(store.engine).ok


def test_unstorable_session_fields_are_refused_before_the_driver(
    db_url: str, db_engine: str, store: TranscriptStore
) -> None:
    async def main() -> None:
        engine = create_async_engine(aio_url(db_url))
        factory = async_sessionmaker(engine)
        openclaw_fts.install(factory)
        try:
            async with factory.begin() as db:
                db.add(AgentSession(session_id="n\x00", session_key="agent:main:nul"))
        finally:
            await engine.dispose()

    if db_engine != "sqlite":
        with pytest.raises(InvalidSessionError, match="NUL"):
            asyncio.run(main())
        assert store.index_status()["total"] == 0
    else:
        asyncio.run(main())  # SQLite text holds NUL


@pytest.mark.sqlite_only("a pure function of URLs; no database")
def test_sync_url_maps_async_drivers(db_url: str) -> None:
    assert str(sync_url("sqlite+aiosqlite:///x.db")) == "sqlite+pysqlite:///x.db"
    pg = sync_url("postgresql+asyncpg://u:pw@db/app?ssl=require&prepared_statement_cache_size=0")
    assert pg.drivername == "postgresql+psycopg"
    assert pg.password == "pw"
    assert dict(pg.query) == {"sslmode": "require"}
    assert sync_url("postgresql+psycopg://u@db/app").drivername == "postgresql+psycopg"


def _signature(fn: Callable[..., Any]) -> inspect.Signature:
    """``fn``'s parameters and return type, its string annotations evaluated where it lives."""
    return inspect.signature(fn, eval_str=True)


def _overloads(fn: Callable[..., Any]) -> list[inspect.Signature]:
    return [_signature(item) for item in typing.get_overloads(fn)]


#: The async store's methods with a synchronous namesake of another name.
ASYNC_NAMES = {"aclose": "close"}
#: Its own methods with no synchronous namesake: the constructor's coroutine twin.
ASYNC_ONLY = {"open"}


@pytest.mark.sqlite_only("compares signatures; no database")
def test_async_methods_have_the_sync_signatures(db_url: str) -> None:
    """Every public coroutine of ``AsyncTranscriptStore`` takes the parameters (names, kinds,
    defaults, annotations) of its ``TranscriptStore`` namesake and declares its return type,
    overloads included, so a type checker reads an async call as it reads the sync one."""
    names = [
        name
        for name, member in vars(AsyncTranscriptStore).items()
        if not name.startswith("_") and name not in ASYNC_ONLY and callable(member)
    ]
    assert {"search", "import_paths", "create_session", "reconcile", "aclose"} <= set(names)
    for name in names:
        method = getattr(AsyncTranscriptStore, name)
        assert inspect.iscoroutinefunction(method), name
        sync = getattr(TranscriptStore, ASYNC_NAMES.get(name, name))
        assert _signature(method) == _signature(sync), name
        if sys.version_info >= (3, 11):  # typing.get_overloads is new in 3.11
            assert _overloads(method) == _overloads(sync), name
    if sys.version_info >= (3, 11):
        assert len(_overloads(AsyncTranscriptStore.search)) == 3


def test_async_store_passes_every_argument_through(db_url: str, tmp_path: Path) -> None:
    """The explicit keyword arguments reach the synchronous store: a batch search narrows to
    the batch answer, filters and callbacks arrive, the created session comes back."""
    transcript = tmp_path / "one.jsonl"
    shutil.copy(next(EXAMPLES.glob("*.jsonl")), transcript)
    statuses: list[object] = []
    files: list[Path] = []

    async def main() -> dict[str, Any]:
        async with await AsyncTranscriptStore.open(aio_url(db_url), background=False) as store:
            created = await store.create_session(
                "s1", "agent:main:main", agent_id="main", archived=True
            )
            await store.append_many("s1", chain(["deploy the canary", "canary is green"]))
            imported = await store.import_paths(
                [transcript], session_key="agent:main:imported", on_file=files.append
            )
            reconciled = await store.reconcile(progress=statuses.append)
            batch = await store.search(CALLER, None, queries=["canary", "green"], limit=5)
            assert "status" not in batch, batch
            roles = await store.search(CALLER, "canary", role="assistant", session_key="s1")
            assert "results" in roles, roles
            grouped = await store.search_by_session(CALLER, "canary", limit=1)
            under_key = await store.history(CALLER, "agent:main:imported")
            assert "messages" in under_key, under_key
            return {
                "created": (created.session_id, created.agent_id, created.archived),
                "imported": (imported["files"], len(imported["sessions"])),
                "under_key": len(under_key["messages"]) > 0,
                "ran": reconciled["ran"],
                "batch": sorted({hit["queryIndex"] for hit in batch["results"]}),
                "roles": [hit["messageId"] for hit in roles["results"]],
                "grouped": len(grouped["results"]),
            }

    out = asyncio.run(main())
    assert out == {
        "created": ("s1", "main", True),
        "imported": (1, 1),
        "under_key": True,
        "ran": True,
        "batch": [0, 1],
        "roles": ["m1"],
        "grouped": 1,
    }
    assert files == [transcript]
    assert statuses  # the reconciler reported its progress through the coroutine's callback

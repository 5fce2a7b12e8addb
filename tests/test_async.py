"""Async hosts: ``install(async_sessionmaker)`` indexes writes made through ``AsyncSession`` on
``sqlite+aiosqlite`` in the same transaction, and ``AsyncTranscriptStore`` answers without
blocking the event loop."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from factories import chain, msg
from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.orm import Session

import openclaw_fts
from openclaw_fts import AgentSession, Caller, TranscriptEvent, TranscriptStore
from openclaw_fts.aio import AsyncTranscriptStore
from openclaw_fts.check import check

pytest.importorskip("aiosqlite")

CALLER = Caller("agent:main:main", visibility="all")
EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "sessions"


def aio_url(db_url: str) -> str:
    return db_url.replace("sqlite:///", "sqlite+aiosqlite:///", 1)


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

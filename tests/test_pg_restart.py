"""A PostgreSQL restart under a running store: the next call of every kind just works.

The session's throwaway server is restarted (``pg_ctl restart -m fast``: every client
connection is cut, as any restart or failover does) while a store holds pooled connections;
the store's first search, history read, append and reconcile afterwards must succeed, with no
``OperationalError`` for the caller to retry.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from factories import chain
from pgserver import PgServer

from openclaw_fts import Caller, TranscriptStore
from openclaw_fts.check import check

KEY = "agent:main:main"
CALLER = Caller(KEY, visibility="self")
#: Calls made before the restart, so the pool holds several connections.
WARM_CALLS = 3
#: Restarts in a row (each followed by the first calls of every kind).
RESTARTS = 2


@pytest.fixture
def pg_store(pg_url: str) -> Iterator[TranscriptStore]:
    s = TranscriptStore(pg_url, background=False)
    try:
        yield s
    finally:
        s.close()


def test_the_first_calls_after_a_server_restart_succeed(
    pg_server: PgServer, pg_store: TranscriptStore
) -> None:
    pg_store.create_session("restart-1", KEY)
    pg_store.append_many("restart-1", chain(["puffin before the restart", "noted"]))
    pg_store.reconcile()
    for _ in range(WARM_CALLS):
        assert len(pg_store.search(CALLER, "puffin")["results"]) == 1
    for n in range(RESTARTS):
        pg_server.restart()
        # Each kind of call is the first of its kind on connections pooled before the restart.
        assert len(pg_store.search(CALLER, "puffin")["results"]) == 1 + n
        assert len(pg_store.history(CALLER, KEY)["messages"]) == 2 + n
        pg_store.append(
            "restart-1",
            {
                "type": "message",
                "id": f"after-{n}",
                "timestamp": 1,
                "message": {"role": "user", "content": "puffin again"},
            },
        )
        pg_store.reconcile()
        assert check(pg_store.engine).ok
    assert len(pg_store.search(CALLER, "puffin")["results"]) == 1 + RESTARTS

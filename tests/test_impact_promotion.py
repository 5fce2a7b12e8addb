"""PostgreSQL's impact lists stay exact while words are promoted under concurrent writers.

A word becomes tracked (``index/impact.py``) in one transaction that fills its whole list; a
writer whose transaction is still open at that moment inserts rows holding the word that the
promotion's scan cannot see. These tests force promotions with a low threshold (the promote
function takes it as an argument) and assert, after each scenario, what a user relies on:
``check`` is clean and, for every tracked word, a search through its list returns what the
exact path returns. Flat and partitioned layouts.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import PARTITIONED
from factories import chain, msg
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session, sessionmaker

import openclaw_fts
from openclaw_fts import AgentSession, AgentToAgent, Caller, TranscriptEvent, TranscriptStore
from openclaw_fts.check import check
from openclaw_fts.engine import make_engine
from openclaw_fts.index.postgresql import impact, partition
from openclaw_fts.index.postgresql.backend import PostgresqlBackend
from openclaw_fts.index.postgresql.read import PostgresSearch

LAYOUTS = ("postgresql", PARTITIONED)
CALLER = Caller("agent:main:me", visibility="all", agent_to_agent=AgentToAgent(True))
#: A threshold low enough for the tests' few messages (the shipped one is 2000).
MIN_DOCS = 8
LIMIT = 10
#: Seconds a promotion is given to finish while a writer's transaction is open (it finishes
#: at once without the fix; with it, it waits for the writer).
PROMOTION_HEAD_START_S = 1.0


@pytest.fixture
def host(db_url: str, store: TranscriptStore) -> Iterator[sessionmaker[Session]]:
    """A host application's engine and sessionmaker, with the plugin installed."""
    engine = make_engine(db_url)
    factory = sessionmaker(engine)
    openclaw_fts.install(factory)
    try:
        yield factory
    finally:
        engine.dispose()


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the searches an impact list answered."""
    used: list[int] = []
    pg_rows = PostgresSearch._impact_rows
    pg_folded = PostgresSearch._folded_rows

    def impact_rows(self: PostgresSearch, *args: Any, **kwargs: Any) -> Any:
        found = pg_rows(self, *args, **kwargs)
        used.extend([1] if found is not None else [])
        return found

    def folded_rows(self: PostgresSearch, *args: Any, **kwargs: Any) -> Any:
        found = pg_folded(self, *args, **kwargs)
        used.extend([1] if found[0][3] else [])  # the one statement's ``listed``
        return found

    monkeypatch.setattr(PostgresSearch, "_folded_rows", folded_rows)
    monkeypatch.setattr(PostgresSearch, "_impact_rows", impact_rows)
    return used


def promote(engine: Engine, min_docs: int = MIN_DOCS) -> int:
    """Refresh the planner's statistics of the index rows and promote every word at least
    ``min_docs`` rows hold (what ``optimize`` does with the shipped threshold)."""
    with engine.begin() as conn:
        target = partition.PARTITIONED_TABLE if partition.is_partitioned(conn) else "message_index"
        conn.execute(text(f"ANALYZE {target}"))
        return impact.promote(conn, min_docs)


def tracked_words(engine: Engine) -> list[str]:
    with engine.connect() as conn:
        return sorted(str(r[0]) for r in conn.execute(text(impact.TRACKED_WORDS_SQL)))


def _ids(answer: Any) -> list[tuple[str, str]]:
    return [(h["sessionId"], h["messageId"]) for h in answer["results"]]


def lists_answer_exactly(
    store: TranscriptStore, monkeypatch: pytest.MonkeyPatch, words: list[str] | None = None
) -> None:
    """``check`` is clean and every tracked word's list search equals the exact path's."""
    report = check(store.engine)
    assert report.impact_drift == {}, report.as_dict()
    assert report.ok, report.as_dict()
    for word in words if words is not None else tracked_words(store.engine):
        monkeypatch.setattr(PostgresqlBackend, "IMPACT_LISTS", True)
        fast = _ids(store.search(CALLER, word, limit=LIMIT))
        monkeypatch.setattr(PostgresqlBackend, "IMPACT_LISTS", False)
        exact = _ids(store.search(CALLER, word, limit=LIMIT))
        monkeypatch.setattr(PostgresqlBackend, "IMPACT_LISTS", True)
        assert fast == exact, word


@pytest.mark.parametrize("db_engine", LAYOUTS)
def test_a_promotion_while_a_writer_is_open_keeps_the_writers_rows(
    store: TranscriptStore, host: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host's transaction has flushed rows holding "zebra" (its index rows and their list
    rows are written, not committed); "zebra" is promoted meanwhile from another connection;
    then the host commits. The list must hold the host's rows: they are the word's best."""
    store.create_session("old", "agent:main:old", agent_id="main")
    store.append_many(
        "old", chain([f"zebra crossing number {i} on a long road" for i in range(3 * MIN_DOCS)])
    )
    with host.begin() as db:
        s = AgentSession(session_id="new", session_key="agent:main:new", agent_id="main")
        db.add(s)
        for i in range(LIMIT):
            db.add(TranscriptEvent(session=s, event=msg(f"z{i}", "zebra zebra", ts=i)))
        db.flush()
        promoted: list[int] = []
        promoter = threading.Thread(target=lambda: promoted.append(promote(store.engine)))
        promoter.start()
        promoter.join(PROMOTION_HEAD_START_S)
    promoter.join()
    assert promoted and promoted[0] >= 1
    assert "zebra" in tracked_words(store.engine)
    found = _ids(store.search(CALLER, "zebra", limit=LIMIT))
    assert {m for _, m in found} == {f"z{i}" for i in range(LIMIT)}
    lists_answer_exactly(store, monkeypatch)


def _zebra_corpus(store: TranscriptStore) -> None:
    """Messages holding "zebra" once to four times among fillers: scores spread."""
    store.create_session("z", "agent:main:z", agent_id="main")
    texts = [("zebra " * (1 + i % 4)) + " ".join(["filler"] * (i % 7)) for i in range(4 * MIN_DOCS)]
    store.append_many("z", chain(texts))
    assert promote(store.engine) >= 1


def _corrupt(engine: Engine) -> int:
    """Delete the best row of "zebra"'s list behind the plugin's back; returns its row id."""
    with engine.begin() as conn:
        return int(
            conn.execute(
                text(
                    "DELETE FROM message_impact WHERE term = 'zebra' AND row_id = "
                    "(SELECT row_id FROM message_impact WHERE term = 'zebra' "
                    "ORDER BY impact DESC, row_id LIMIT 1) RETURNING row_id"
                )
            ).scalar_one()
        )


@pytest.mark.parametrize("db_engine", LAYOUTS)
def test_a_drifted_list_is_not_trusted_and_the_reconciler_rebuilds_it(
    store: TranscriptStore, monkeypatch: pytest.MonkeyPatch, walks: list[int]
) -> None:
    _zebra_corpus(store)
    lists_answer_exactly(store, monkeypatch, ["zebra"])
    assert walks, "the list answered"
    _corrupt(store.engine)
    report = check(store.engine)
    assert not report.ok
    assert report.impact_drift == {"zebra": {"missing": 1, "extra": 0}}
    assert report.impact_unmarked is None  # marked untrusted
    del walks[:]
    monkeypatch.setattr(PostgresqlBackend, "IMPACT_LISTS", True)
    fast = _ids(store.search(CALLER, "zebra", limit=LIMIT))
    monkeypatch.setattr(PostgresqlBackend, "IMPACT_LISTS", False)
    exact = _ids(store.search(CALLER, "zebra", limit=LIMIT))
    assert fast == exact
    assert walks == []  # the untrusted list answered nothing
    assert store.reconcile()["ran"]
    lists_answer_exactly(store, monkeypatch, ["zebra"])
    assert walks, "the rebuilt list answers again"


@pytest.mark.parametrize("db_engine", LAYOUTS)
def test_optimize_finds_and_rebuilds_a_drifted_list(
    store: TranscriptStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a ``check`` first: ``optimize`` compares every list with the index."""
    _zebra_corpus(store)
    _corrupt(store.engine)
    with store.engine.begin() as conn:  # an extra row too: a message that does not hold it
        conn.execute(
            text(
                "INSERT INTO message_impact (row_id, term, impact, tf, doc_len) "
                "SELECT id, 'zebra', 1, 1, 1 FROM message_index "
                "WHERE NOT body_tsv @@ 'zebra'::tsquery LIMIT 1"
            )
        )
    store.optimize()
    lists_answer_exactly(store, monkeypatch, ["zebra"])

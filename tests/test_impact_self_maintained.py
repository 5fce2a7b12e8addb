"""A store filled the way a host fills it, never optimized, has the lists of its frequent words.

Issue #38: PostgreSQL used to find its frequent words in the planner's statistics, which exist
only after an ``ANALYZE`` (``optimize()``): a host that wrote through the ORM hooks, imported a
folder or appended, and searched at once, had no lists and ranked every match of a common word.
Now both engines find them from the plugin's own counts at the writer's checkpoints
(``index/impact.py``): these tests fill a store past the engine's first checkpoint with the
shipped thresholds, through each way in, without ``optimize()``, and assert what a user relies
on: a common word's search is answered from its list, and returns what the exact path returns.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from factories import chain, msg, transcript_file
from sqlalchemy.orm import Session, sessionmaker

from openclaw_fts import AgentSession, AgentToAgent, Caller, TranscriptEvent, TranscriptStore
from openclaw_fts.check import check
from openclaw_fts.index import base
from openclaw_fts.index.impact import FREQUENT_TERM_MIN_DOCS, PROMOTE_EVERY_ROWS
from openclaw_fts.index.sqlite.impact import CHECK_EVERY_ROWS

pytestmark = pytest.mark.both_engines

CALLER = Caller("agent:main:me", visibility="all", agent_to_agent=AgentToAgent(True))
LIMIT = 10
WORD = "kiwi"
#: Messages per session (and per transaction of the ORM test).
PER_SESSION = 1000


def rows_to_fill(store: TranscriptStore) -> int:
    """Index rows past the engine's first checkpoint (SQLite's writer, PostgreSQL's commit)."""
    every = CHECK_EVERY_ROWS if store.engine.dialect.name == "sqlite" else PROMOTE_EVERY_ROWS
    assert every > FREQUENT_TERM_MIN_DOCS
    return every + 1


def texts(session: int, count: int) -> list[str]:
    """Every message holds the word, one to three times, among fillers: scores spread, with
    ties."""
    return [
        f"{(WORD + ' ') * (1 + i % 3)}harvest {' '.join(['report'] * ((i * 7 + session) % 11))} "
        f"s{session}n{i}"
        for i in range(count)
    ]


def sessions(store: TranscriptStore) -> list[tuple[str, list[str]]]:
    total = rows_to_fill(store)
    out = []
    for n, start in enumerate(range(0, total, PER_SESSION)):
        out.append((f"s{n}", texts(n, min(PER_SESSION, total - start))))
    return out


def _ids(answer: Any) -> list[tuple[str, str]]:
    return [(h["sessionId"], h["messageId"]) for h in answer["results"]]


def assert_listed_and_exact(
    store: TranscriptStore, monkeypatch: pytest.MonkeyPatch, walks: list[int]
) -> None:
    """No ``optimize()``: the word's search walks its list, and returns the exact path's hits."""
    assert store.index_status()["pending"] == 0
    backend = type(base.backend_for(store.engine.dialect.name))
    before = len(walks)
    monkeypatch.setattr(backend, "IMPACT_LISTS", True)
    fast = _ids(store.search(CALLER, WORD, limit=LIMIT))
    assert len(walks) == before + 1, "the word's search did not use a list"
    monkeypatch.setattr(backend, "IMPACT_LISTS", False)
    exact = _ids(store.search(CALLER, WORD, limit=LIMIT))
    monkeypatch.setattr(backend, "IMPACT_LISTS", True)
    assert len(exact) == LIMIT
    assert fast == exact
    report = check(store.engine)
    assert report.impact_drift == {}, report.as_dict()
    assert report.ok, report.as_dict()


def test_appends_get_the_list_without_optimize(
    store: TranscriptStore, monkeypatch: pytest.MonkeyPatch, walks: list[int]
) -> None:
    for n, (sid, lines) in enumerate(sessions(store)):
        store.create_session(sid, f"agent:main:{sid}", agent_id="main" if n % 2 else "ops")
        for start in range(0, len(lines), 250):
            parent = f"m{start - 1}" if start else None
            store.append_many(sid, chain(lines[start : start + 250], start=start, parent=parent))
    store.append("s0", msg("last", f"one more {WORD}", parent=f"m{PER_SESSION - 1}"))
    assert_listed_and_exact(store, monkeypatch, walks)


def test_the_orm_hooks_get_the_list_without_optimize(
    store: TranscriptStore,
    host: sessionmaker[Session],
    monkeypatch: pytest.MonkeyPatch,
    walks: list[int],
) -> None:
    for n, (sid, lines) in enumerate(sessions(store)):
        with host.begin() as db:
            agent = "main" if n % 2 else "ops"
            s = AgentSession(session_id=sid, session_key=f"agent:{agent}:{sid}", agent_id=agent)
            db.add(s)
            for event in chain(lines):
                db.add(TranscriptEvent(session=s, event=event))
    assert_listed_and_exact(store, monkeypatch, walks)


def test_import_dir_gets_the_list_without_optimize(
    store: TranscriptStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, walks: list[int]
) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    for sid, lines in sessions(store):
        transcript_file(folder / f"{sid}.jsonl", sid, lines)
    report = store.import_dir(folder)
    assert report["errorCount"] == 0, report
    store.reconcile()  # what the store's background job does with the imported sessions
    assert_listed_and_exact(store, monkeypatch, walks)


def test_a_reconcile_gets_the_list_without_optimize(
    store: TranscriptStore, monkeypatch: pytest.MonkeyPatch, walks: list[int]
) -> None:
    """Rows short of the first checkpoint: the word is frequent, not tracked yet. The
    reconciler re-indexes every session (``rebuild``): its rows cross the checkpoint as a
    writer's do."""
    short = rows_to_fill(store) - 2 * PER_SESSION // 5
    for n, (sid, lines) in enumerate(sessions(store)):
        store.create_session(sid, f"agent:main:{sid}", agent_id="main" if n % 2 else "ops")
        store.append_many(sid, chain(lines[: max(0, min(len(lines), short - n * PER_SESSION))]))
    before = len(walks)
    store.search(CALLER, WORD, limit=LIMIT)
    assert len(walks) == before, "tracked before the checkpoint: the test proves nothing"
    store.rebuild()
    assert_listed_and_exact(store, monkeypatch, walks)


def test_a_reconcile_with_nothing_pending_promotes_on_postgresql(
    store: TranscriptStore, monkeypatch: pytest.MonkeyPatch, walks: list[int]
) -> None:
    """Appends indexed inline stop past ``FREQUENT_TERM_MIN_DOCS`` rows holding the word but
    short of the first ``PROMOTE_EVERY_ROWS`` checkpoint: no commit promoted it. A
    ``store.reconcile()`` with nothing pending re-indexes nothing, so only its pass's own
    look (``promote_if_free``) can track the word."""
    if store.engine.dialect.name != "postgresql":
        pytest.skip("SQLite's writer tracks its words itself: its reconciler promotes nothing")
    rows = (FREQUENT_TERM_MIN_DOCS + PROMOTE_EVERY_ROWS) // 2
    assert FREQUENT_TERM_MIN_DOCS < rows < PROMOTE_EVERY_ROWS
    for n, (sid, lines) in enumerate(sessions(store)):
        kept = lines[: max(0, min(len(lines), rows - n * PER_SESSION))]
        if not kept:
            break
        store.create_session(sid, f"agent:main:{sid}", agent_id="main" if n % 2 else "ops")
        store.append_many(sid, chain(kept))
    assert store.index_status()["pending"] == 0
    before = len(walks)
    store.search(CALLER, WORD, limit=LIMIT)
    assert len(walks) == before, "tracked before the reconcile: the test proves nothing"
    result = store.reconcile()
    assert result["ran"], result
    assert_listed_and_exact(store, monkeypatch, walks)

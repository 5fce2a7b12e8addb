"""A search is one backend call (issue #39): ``store.search`` asks the engine's backend for
its page of hits once, a batch and its suggestions included, and the shared SQL names no
dialect (each engine spells its own parts, ``index/dialect_sql.py``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from factories import msg

from openclaw_fts import Caller, TranscriptStore
from openclaw_fts.index.base import backend_of

pytestmark = pytest.mark.both_engines

ME = Caller("agent:main:main", visibility="agent")
INDEX = Path(__file__).resolve().parent.parent / "openclaw_fts" / "index"


@pytest.fixture
def filled(store: TranscriptStore) -> TranscriptStore:
    store.create_session("s1", "agent:main:main")
    store.append("s1", msg("m1", "the walrus reads the deployment notes", parent=None))
    store.create_session("s2", "agent:main:side")
    store.append("s2", msg("m2", "a deployment of walruses", parent=None))
    return store


def test_a_batch_with_suggestions_is_one_backend_call(
    filled: TranscriptStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = backend_of(filled.engine)
    calls: list[int] = []
    original = type(backend).search_page

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(len(args[2]))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(type(backend), "search_page", counted)
    out = filled.search(ME, None, queries=["deployment", "walrsu"], session_key="current")
    assert calls == [2]
    assert [h["messageId"] for h in out["results"]] == ["m1"]
    assert out["warning"] == "Query 2: No matches. Did you mean: walrus?"


def test_a_refused_session_key_asks_the_backend_nothing(
    filled: TranscriptStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = backend_of(filled.engine)
    calls: list[int] = []
    original = type(backend).search_page

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(type(backend), "search_page", counted)
    out = filled.search(Caller("agent:main:main", visibility="self"), "x", session_key="s2")
    assert out["status"] == "forbidden"
    assert calls == []


SHARED = ["sessions_sql.py", "visibility_sql.py", "page.py", "suggest.py"]


@pytest.mark.parametrize("module", SHARED)
def test_the_shared_sql_names_no_dialect(module: str, db_engine: str) -> None:
    source = (INDEX / module).read_text(encoding="utf-8")
    compared = r"""dialect(\.name)?\s*(==|!=|\bin\b)|(==|!=)\s*["'](postgresql|sqlite)["']"""
    assert not re.search(compared, source)

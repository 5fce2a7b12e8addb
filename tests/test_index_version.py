"""An index built under an older INDEX_VERSION (e.g. before CJK was tokenised per character)
is re-indexed by the reconciler with no manual step."""

from __future__ import annotations

from factories import chain
from sqlalchemy import text

from openclaw_fts import Caller, TranscriptStore
from openclaw_fts.models import INDEX_VERSION

KEY = "agent:main:main"
CALLER = Caller(KEY, visibility="agent")


def test_sessions_indexed_under_an_older_version_are_pending_then_reindexed(
    store: TranscriptStore,
) -> None:
    store.create_session("s1", KEY)
    store.append_many("s1", chain(["明天下午三点开项目评审会议", "deploy the staging build"]))
    assert [r["messageId"] for r in store.search(CALLER, "评审")["results"]] == ["m0"]
    # What an older release left behind: rows indexed the old way (one token per CJK run)
    # under an older version number.
    with store.engine.begin() as conn:
        conn.execute(
            text("UPDATE openclaw_index_state SET index_version = :old"), {"old": INDEX_VERSION - 1}
        )
    assert store.index_status() == {"pending": 1, "indexed": 0, "total": 1}
    pending = store.search(CALLER, "评审")
    assert pending["results"] == [] and pending["indexing"] is True
    report = store.reconcile()
    assert report["sessions"] == 1
    assert store.index_status() == {"pending": 0, "indexed": 1, "total": 1}
    out = store.search(CALLER, "评审")
    assert [r["messageId"] for r in out["results"]] == ["m0"] and "indexing" not in out

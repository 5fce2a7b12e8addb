"""Hostile input (docs/reliability.md) and the security promises that go with it.

Every bad input has a defined outcome — a clear ``openclaw_fts.errors`` error (never a raw
``sqlite3``/SQLAlchemy/Unicode/Recursion error) or a documented behaviour — and leaves the index
intact: after each case :func:`assert_intact` runs the index check, one reconcile, and the
check again. The security half plants text in sessions the caller may not see and asserts that
no argument of search or history brings any of it back, that errors say no more than
``forbidden``, and that no planted credential appears in any output.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from factories import UNLINKED
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session, sessionmaker

from openclaw_fts import (
    AgentSession,
    AgentToAgent,
    Caller,
    DuplicateEventError,
    ImportFormatError,
    InvalidEventError,
    InvalidSessionError,
    OpenClawFtsError,
    ToolInputError,
    TranscriptEvent,
    TranscriptStore,
    UnknownSessionError,
    tools,
)
from openclaw_fts.check import check
from openclaw_fts.hooks import MAX_EVENT_BYTES, MAX_SEQ

pytestmark = pytest.mark.both_engines

KEY = "agent:main:main"
WORKERS = Path(__file__).parent / "workers"
ALL = Caller(KEY, visibility="all")
TS = 1_790_000_000_000


# -- helpers ---------------------------------------------------------------------------------


def msg(
    event_id: Any, content: Any, *, parent: Any = UNLINKED, role: str = "user", **extra: Any
) -> dict[str, Any]:
    """A message; by default without a ``parentId`` key, so it chains to the current leaf."""
    event = {
        "type": "message",
        "id": event_id,
        "parentId": parent,
        "timestamp": TS,
        "message": {"role": role, "content": content},
    }
    if parent is UNLINKED:
        del event["parentId"]
    event.update(extra)
    return event


def assert_intact(store: TranscriptStore) -> None:
    """The index equals the active branches: now, and after one reconcile."""
    before = check(store.engine)
    assert before.ok, before.as_dict()
    store.reconcile()
    after = check(store.engine)
    assert after.ok, after.as_dict()
    assert after.status["pending"] == 0, after.status


def hits(store: TranscriptStore, query: str, caller: Caller = ALL, **kwargs: Any) -> list[str]:
    out = store.search(caller, query, limit=25, **kwargs)
    assert "results" in out, out
    return [h["messageId"] for h in out["results"]]


def event_ids(engine: Engine, session_id: str) -> list[Any]:
    with engine.connect() as conn:
        return [
            r[0]
            for r in conn.execute(
                text("SELECT event_id FROM transcript_events WHERE session_id = :s ORDER BY seq"),
                {"s": session_id},
            )
        ]


def row_count(engine: Engine, table: str) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one())


def only_plugin_errors(fn: Callable[[], Any]) -> Any:
    """Run ``fn``: it returns, or raises an OpenClawFtsError. Anything else fails the test."""
    try:
        return fn()
    except OpenClawFtsError as exc:
        return exc


@pytest.fixture
def s1(store: TranscriptStore) -> TranscriptStore:
    store.create_session("s1", KEY)
    store.append("s1", msg("m0", "baseline message about lighthouses"))
    return store


# -- events that are not objects -------------------------------------------------------------

NOT_OBJECTS = [[1, 2], ["type", "message"], "a string", "", None, 5, 1.5, True, b"bytes", ()]


@pytest.mark.parametrize("bad", NOT_OBJECTS, ids=repr)
def test_event_not_an_object_is_refused_and_nothing_stored(s1: TranscriptStore, bad: Any) -> None:
    with pytest.raises(InvalidEventError, match="JSON object"):
        s1.append("s1", bad)
    # in a batch: the whole append is refused, the good event with it
    with pytest.raises(InvalidEventError):
        s1.append_many("s1", [msg("good", "good companion"), bad])
    assert event_ids(s1.engine, "s1") == ["m0"]
    assert hits(s1, "companion") == []
    assert_intact(s1)


def test_event_not_an_object_through_the_orm(
    s1: TranscriptStore, host: sessionmaker[Session]
) -> None:
    for bad in ([1, 2], "text", 7):
        with pytest.raises(InvalidEventError), host.begin() as db:
            db.add(TranscriptEvent(session_id="s1", event=bad))
    assert event_ids(s1.engine, "s1") == ["m0"]
    assert_intact(s1)


# -- ids -------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad_id", [None, "", "   ", "\t\n", 5, 1.5, [], {}, True], ids=repr)
def test_missing_or_blank_id_is_stored_but_never_indexed(s1: TranscriptStore, bad_id: Any) -> None:
    event = msg(bad_id, "anonymous whale song")
    seq = s1.append("s1", event)
    assert seq == 1
    noid = msg("x", "another anonymous whale")
    del noid["id"]
    assert s1.append("s1", noid) == 2
    # documented (§2): only messages with a non-blank string id are indexed
    assert hits(s1, "whale") == []
    s1.append("s1", msg("m3", "named whale"))
    assert hits(s1, "whale") == ["m3"]
    assert hits(s1, "lighthouses") == ["m0"]
    assert_intact(s1)


def test_duplicate_id_in_one_append_refuses_the_whole_batch(s1: TranscriptStore) -> None:
    with pytest.raises(DuplicateEventError):
        s1.append_many("s1", [msg("d1", "first twin"), msg("d1", "second twin")])
    assert event_ids(s1.engine, "s1") == ["m0"]
    assert hits(s1, "twin") == []
    assert_intact(s1)


def test_duplicate_id_across_appends_keeps_the_first(s1: TranscriptStore) -> None:
    s1.append("s1", msg("d1", "original narwhal"))
    with pytest.raises(DuplicateEventError):
        s1.append("s1", msg("d1", "impostor narwhal"))
    with pytest.raises(DuplicateEventError):
        s1.append_many("s1", [msg("d2", "fine"), msg("d1", "impostor again")])
    with pytest.raises(DuplicateEventError):
        s1.append("s1", msg("m0", "overwrite the baseline"))
    assert event_ids(s1.engine, "s1") == ["m0", "d1"]
    assert hits(s1, "narwhal") == ["d1"]
    assert hits(s1, "impostor") == []
    assert hits(s1, "baseline") == ["m0"]
    assert_intact(s1)


def test_duplicate_id_through_the_orm(s1: TranscriptStore, host: sessionmaker[Session]) -> None:
    with pytest.raises(DuplicateEventError), host.begin() as db:
        db.add(TranscriptEvent(session_id="s1", event=msg("m0", "orm impostor")))
    with pytest.raises(DuplicateEventError), host.begin() as db:
        db.add(TranscriptEvent(session_id="s1", event=msg("o1", "orm twin a")))
        db.add(TranscriptEvent(session_id="s1", event=msg("o1", "orm twin b")))
    assert event_ids(s1.engine, "s1") == ["m0"]
    assert hits(s1, "impostor") == [] and hits(s1, "twin") == []
    assert_intact(s1)


def test_duplicate_ids_on_import_are_skipped_and_counted(
    store: TranscriptStore, tmp_path: Path
) -> None:
    path = tmp_path / "dupes.jsonl"
    lines = [
        {"type": "session", "id": "imp"},
        msg("a", "first albatross"),
        msg("a", "second albatross"),
        msg("b", "bird", parent="a"),
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    report = store.import_jsonl(path)
    assert report["imported"] == 3  # the header, a, b
    assert report["skippedDuplicates"] == 1
    again = store.import_jsonl(path)  # re-import: nothing new
    assert again["imported"] == 0
    assert event_ids(store.engine, "imp") == ["imp", "a", "b"]
    assert_intact(store)
    assert hits(store, "albatross") == ["a"]


# -- the tree: cycles, unknown parents, leaf controls pointing nowhere -----------------------


def test_parent_cycles_and_unknown_parents_chain_to_the_current_leaf(
    s1: TranscriptStore,
) -> None:
    s1.append_many(
        "s1",
        [
            msg("c1", "cycle alpha", parent="c2"),  # c2 does not exist yet: unknown parent
            msg("c2", "cycle beta", parent="c1"),
            msg("c3", "cycle gamma", parent="c3"),  # its own parent
            msg("c4", "orphan delta", parent="no-such-event"),
            msg("c5", "after epsilon", parent=123),  # malformed parentId: not in the tree
        ],
    )
    s1.append("s1", msg("c6", "cycle zeta", parent="c6"))
    # docs/openclaw-tree.md: a stale parent (unknown when the entry is read, its own id
    # included) is the current leaf, so all are on one branch in append order; an entry whose
    # parentId is neither null nor an id is no node of OpenClaw's tree, so c5 is not on it.
    out = s1.history(ALL, KEY)
    assert [m["__openclaw"]["id"] for m in out["messages"]] == [
        "m0",
        "c1",
        "c2",
        "c3",
        "c4",
        "c6",
    ]
    assert set(hits(s1, "cycle")) == {"c1", "c2", "c3", "c6"}
    assert_intact(s1)


@pytest.mark.parametrize("target", ["nowhere", "", 5, {"id": "m0"}, ["m0"]], ids=repr)
def test_leaf_control_pointing_nowhere_is_ignored(s1: TranscriptStore, target: Any) -> None:
    """§1: only ``targetId: null`` empties the branch; a target that names no event — an
    unknown id, a blank string, a number, an object — is ignored like any unknown target."""
    s1.append("s1", msg("m1", "before the bogus rewind", parent="m0"))
    s1.append("s1", {"type": "leaf", "id": "l1", "parentId": "m1", "targetId": target})
    s1.append("s1", msg("m2", "after the bogus rewind", parent="l1"))
    out = s1.history(ALL, KEY)
    assert [m["__openclaw"]["id"] for m in out["messages"]] == ["m0", "m1", "m2"]
    assert set(hits(s1, "rewind")) == {"m1", "m2"}
    assert_intact(s1)


def test_rewind_api_to_an_unknown_event_is_a_clear_error(s1: TranscriptStore) -> None:
    with pytest.raises(UnknownSessionError):
        s1.rewind("s1", "nowhere")
    with pytest.raises(UnknownSessionError):
        s1.rewind("no-such-session", "m0")
    assert hits(s1, "lighthouses") == ["m0"]
    assert_intact(s1)


def test_leaf_control_to_null_empties_the_branch(s1: TranscriptStore) -> None:
    s1.append("s1", {"type": "leaf", "id": "l0", "parentId": "m0", "targetId": None})
    assert hits(s1, "lighthouses") == []
    assert s1.history(ALL, KEY)["messages"] == []
    assert_intact(s1)


# -- strings: NUL bytes, lone surrogates -----------------------------------------------------


def test_nul_bytes_in_text_ids_and_keys(store: TranscriptStore, db_engine: str) -> None:
    if db_engine != "sqlite":
        # PostgreSQL text cannot hold NUL: ids and keys with one are refused with a clear
        # error; a NUL inside message text is stored (the JSON escapes it) and searchable.
        with pytest.raises(InvalidSessionError, match="NUL"):
            store.create_session("nul\x00sid", "agent:main:nul\x00key")
        store.create_session("nulsid", "agent:main:nulkey")
        with pytest.raises(InvalidEventError, match="NUL"):
            store.append("nulsid", msg("id\x00one", "nul in the id"))
        store.append("nulsid", msg("idone", "before\x00after nulbyte text"))
        out = store.search(ALL, "nulbyte")
        assert [h["messageId"] for h in out["results"]] == ["idone"]
        assert "\x00" not in out["results"][0]["snippet"]
        assert "results" in store.search(ALL, "before\x00after")
        assert_intact(store)
        return
    store.create_session("nul\x00sid", "agent:main:nul\x00key")
    store.append("nul\x00sid", msg("id\x00one", "before\x00after nulbyte text"))
    out = store.search(ALL, "nulbyte")
    assert [h["messageId"] for h in out["results"]] == ["id\x00one"]
    assert "\x00" not in out["results"][0]["snippet"]
    assert hits(store, "nulbyte", session_key="agent:main:nul\x00key") == ["id\x00one"]
    assert "results" in store.search(ALL, "before\x00after")  # a NUL in the query: no error
    # a key that only shares the part before the NUL is a different key (with no session)
    assert store.search(ALL, "nulbyte", session_key="agent:main:nul") == {"results": []}
    assert store.history(ALL, "agent:main:nul")["status"] == "error"
    hist = store.history(ALL, "agent:main:nul\x00key", message_id="id\x00one")
    assert [m["__openclaw"]["id"] for m in hist["messages"]] == ["id\x00one"]
    assert_intact(store)


def test_nul_in_the_callers_own_key_and_agent(store: TranscriptStore) -> None:
    """A caller whose key (or agent id, or allow pattern) holds a NUL gets the same answers on
    both engines, never a driver error: no stored session has that key (PostgreSQL text cannot
    hold NUL), so it sees what a caller of a key with no session sees; a stored key that
    differs only by U+FFFD where the NUL is stays someone else's."""
    nul_key, fffd_key = "agent:main:x\x00", "agent:main:x\ufffd"
    store.create_session("sx", "agent:main:x")
    store.append("sx", msg("m0", "lighthouse keeper"))
    store.create_session("sf", fffd_key)
    store.append("sf", msg("f0", "replacement lighthouse"))

    def found(caller: Caller, query: str = "lighthouse", **kw: Any) -> list[str]:
        return sorted(h["messageId"] for h in store.search(caller, query, **kw)["results"])

    for visibility in ("self", "tree"):
        narrow = Caller(nul_key, visibility=visibility)  # type: ignore[arg-type]
        assert found(narrow) == []
        own = store.history(narrow, nul_key)  # its own key, with no session
        assert own["status"] == "error" and "Session not found" in own["error"]
        assert store.history(narrow, fffd_key)["status"] == "forbidden"
        assert store.history(narrow, "agent:main:x")["status"] == "forbidden"
    for visibility in ("agent", "all"):
        wide = Caller(nul_key, visibility=visibility)  # type: ignore[arg-type]
        assert found(wide) == ["f0", "m0"]  # its agent (main) is an ordinary one
        assert [m["__openclaw"]["id"] for m in store.history(wide, "agent:main:x")["messages"]] == [
            "m0"
        ]
        assert found(wide, session_key=nul_key) == []
        assert "Session not found" in store.history(wide, nul_key)["error"]
    assert found(ALL, session_key=nul_key) == []
    assert found(Caller("agent:ma\x00in:x", visibility="agent")) == []  # an agent of no session
    assert found(Caller(KEY, agent_id="ma\x00in", visibility="agent")) == []
    nul_agent = Caller("agent:ma\x00in:x", visibility="agent")
    for key in ("cron:job", "main", "agent:ma\x00in:y"):  # keys with no session, in its agent
        assert "Session not found" in store.history(nul_agent, key)["error"]
    assert store.history(nul_agent, "agent:main:x")["status"] == "forbidden"
    policy = AgentToAgent(enabled=True, allow=["ma\x00*", "main"])
    assert found(Caller(KEY, visibility="all", agent_to_agent=policy)) == ["f0", "m0"]
    assert_intact(store)


def test_lone_surrogates_in_text_are_stored_and_searchable(s1: TranscriptStore) -> None:
    s1.append("s1", msg("su1", "lone \ud800 surrogate \udfff in text"))
    s1.append("s1", msg("su2", [{"type": "text", "text": "block \udc00 surrogate"}]))
    assert set(hits(s1, "surrogate")) == {"su1", "su2"}
    out = s1.search(ALL, "surrogate")
    json.dumps(out, ensure_ascii=False).encode("utf-8", "surrogatepass")
    assert hits(s1, "\ud800") == []  # a query of a lone surrogate: no error, nothing found
    assert len(s1.history(ALL, KEY)["messages"]) == 3
    assert_intact(s1)


@pytest.mark.parametrize("where", ["id", "parentId", "targetId"])
def test_lone_surrogate_in_an_event_id(s1: TranscriptStore, where: str) -> None:
    """An id with a lone surrogate cannot be encoded as UTF-8 for SQLite: refused with a clear
    error (InvalidEventError), or stored losslessly — never a raw UnicodeEncodeError."""
    if where == "targetId":
        event: dict[str, Any] = {"type": "leaf", "id": "l1", "targetId": "m\ud800"}
    else:
        event = msg("x1", "surrogate id event")
        event[where] = "x\ud800"
    result = only_plugin_errors(lambda: s1.append("s1", event))
    if isinstance(result, OpenClawFtsError):
        assert isinstance(result, InvalidEventError)
    assert hits(s1, "lighthouses") == ["m0"]
    assert_intact(s1)


def test_lone_surrogate_in_session_ids_and_keys(s1: TranscriptStore) -> None:
    """Every entry point taking a session id or key: a clear error or a defined result."""
    calls: list[Callable[[], Any]] = [
        lambda: s1.create_session("sid\ud800", KEY),
        lambda: s1.create_session("sid-ok", "agent:main:\ud800"),
        lambda: s1.append("sid\ud800", msg("z", "z")),
        lambda: s1.append_many("sid\udc00", [msg("z", "z")]),
        lambda: s1.rewind("sid\ud800", None),
        lambda: s1.rewind("s1", "m\ud800"),
        lambda: s1.delete_session("sid\ud800"),
        lambda: s1.search(ALL, "lighthouses", session_key="agent:\ud800"),
        lambda: s1.search(Caller("agent:main:\ud800"), "lighthouses"),
        lambda: s1.history(ALL, "agent:\ud800"),
        lambda: s1.history(ALL, KEY, message_id="m\ud800"),
        lambda: s1.history(ALL, KEY, message_id="m0", session_id="s\ud800"),
    ]
    failures = []
    for n, call in enumerate(calls):
        try:
            only_plugin_errors(call)
        except Exception as exc:
            failures.append(f"call {n}: {type(exc).__module__}.{type(exc).__name__}: {exc}")
    assert not failures, "\n".join(failures)
    assert_intact(s1)


# -- size ------------------------------------------------------------------------------------


#: Wall-clock bound for storing, and for searching, one 10 MB message. It catches a path that is
#: not linear (quadratic work on 10 MB takes many minutes), not a speed: PostgreSQL computes the
#: message's tsvector on the server, 12-14 s when the suite ran alone on CI's 2 cores and 23 s
#: beside a second test worker and other load (pytest-xdist, 7 December 2026).
BIG_MESSAGE_SECONDS = 60


def test_ten_megabyte_message_is_stored_and_searchable(s1: TranscriptStore) -> None:
    body = ("filler " * (10 * 1024 * 1024 // 7)) + "needleword at the very end"
    assert len(body.encode()) > 10 * 1024 * 1024
    started = time.monotonic()
    s1.append("s1", msg("big", body, parent="m0"))
    stored_in = time.monotonic() - started
    started = time.monotonic()
    out = s1.search(ALL, "needleword")
    searched_in = time.monotonic() - started
    assert [h["messageId"] for h in out["results"]] == ["big"]
    assert len(out["results"][0]["snippet"]) <= 301
    assert "needleword" in out["results"][0]["snippet"]
    assert len(json.dumps(out).encode()) <= 32 * 1024 + 200
    hist = s1.history(ALL, KEY)
    assert hist["contentTruncated"] is True
    assert len(json.dumps(hist["messages"], ensure_ascii=False).encode()) <= 80 * 1024
    assert stored_in < BIG_MESSAGE_SECONDS and searched_in < BIG_MESSAGE_SECONDS, (
        stored_in,
        searched_in,
    )
    assert_intact(s1)


def test_event_over_the_size_limit_is_refused(s1: TranscriptStore) -> None:
    body = "x" * (MAX_EVENT_BYTES + 1)
    with pytest.raises(InvalidEventError, match="limit"):
        s1.append("s1", msg("huge", body))
    assert event_ids(s1.engine, "s1") == ["m0"]
    assert_intact(s1)


def test_million_character_queries_fail_fast(s1: TranscriptStore) -> None:
    for query in ("a" * 1_000_000, "deploy " * 150_000, '"' * 1_000_000, "(" * 1_000_000):
        started = time.monotonic()
        with pytest.raises(ToolInputError, match="must not exceed 4096 characters"):
            s1.search(ALL, query)
        assert time.monotonic() - started < 1.0
        started = time.monotonic()
        out = tools.sessions_search(s1, ALL, {"query": query})
        assert out == {"status": "error", "error": "query must not exceed 4096 characters"}
        assert time.monotonic() - started < 1.0
    # trimmed first: a million spaces around a word is a one-word query
    started = time.monotonic()
    assert hits(s1, " " * 500_000 + "lighthouses" + " " * 500_000) == ["m0"]
    assert time.monotonic() - started < 1.0


@pytest.mark.parametrize(
    "query",
    ['"' * 4096, "(" * 4096, "OR " * 1365, "a* " * 1365, "NEAR(" * 819, "x" * 4096, "明" * 4096],
    ids=lambda q: f"{q[:6]!r}x{len(q)}",
)
def test_longest_hostile_queries_are_answered(s1: TranscriptStore, query: str) -> None:
    started = time.monotonic()
    out = s1.search(ALL, query)
    assert "results" in out
    assert time.monotonic() - started < 2.0


# -- nesting ---------------------------------------------------------------------------------


def nested_lists(depth: int, leaf: Any = "deepword") -> Any:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def nested_dicts(depth: int, leaf: Any = "deepword") -> Any:
    value = leaf
    for _ in range(depth):
        value = {"type": "text", "content": value}
    return value


@pytest.mark.parametrize("make", [nested_lists, nested_dicts])
def test_hundred_thousand_levels_of_nesting_is_a_clear_error(
    s1: TranscriptStore, host: sessionmaker[Session], make: Callable[[int], Any]
) -> None:
    deep = make(100_000)
    with pytest.raises(InvalidEventError, match="nested too deeply"):
        s1.append("s1", msg("deep", deep))
    with pytest.raises(InvalidEventError, match="nested too deeply"):
        s1.append_many("s1", [msg("ok", "fine"), msg("deep", deep)])
    with pytest.raises(InvalidEventError, match="nested too deeply"), host.begin() as db:
        db.add(TranscriptEvent(session_id="s1", event=msg("deep", deep)))
    assert event_ids(s1.engine, "s1") == ["m0"]
    assert_intact(s1)


def test_deeply_nested_jsonl_line_is_reported_and_the_rest_imported(
    store: TranscriptStore, tmp_path: Path
) -> None:
    path = tmp_path / "deep.jsonl"
    deep = "[" * 100_000 + "]" * 100_000
    line = '{"type":"message","id":"d","message":{"role":"user","content":' + deep + "}}"
    path.write_text(
        "\n".join([json.dumps(msg("a", "shallow first")), line, json.dumps(msg("b", "second"))])
        + "\n",
        encoding="utf-8",
    )
    report = store.import_jsonl(path)
    assert report["imported"] == 2
    assert report["errorCount"] == 1 and f"{path}:2:" in report["errors"][0]
    assert_intact(store)
    assert hits(store, "shallow") == ["a"]


@pytest.mark.parametrize("where", ["content", "unknown_field"])
def test_storable_but_deep_event_does_not_break_history_or_search(
    s1: TranscriptStore, where: str
) -> None:
    """600 levels fit json's encoder (the event is stored); reading it back must not overflow
    the interpreter stack in search, history or the reconciler."""
    event = msg("deep", "deep storable message")
    if where == "content":
        event["message"]["content"] = [
            {"type": "text", "text": "deep storable message"},
            nested_lists(600),
        ]
    else:
        event["message"]["extra"] = nested_dicts(300)  # 600 JSON levels
    result = only_plugin_errors(lambda: s1.append("s1", event))
    if isinstance(result, OpenClawFtsError):
        assert isinstance(result, InvalidEventError)
        return
    assert hits(s1, "storable") == ["deep"]
    for include_tools in (False, True):
        out = only_plugin_errors(lambda t=include_tools: s1.history(ALL, KEY, include_tools=t))
        assert not isinstance(out, OpenClawFtsError), out
        assert len(json.dumps(out).encode()) <= 80 * 1024 + 1024
    assert_intact(s1)


def at_stack_depth(frames: int, fn: Callable[[], Any]) -> Any:
    """Call ``fn`` from ``frames`` Python frames deeper (a web framework, a host's call stack)."""
    if frames == 0:
        return fn()
    return at_stack_depth(frames - 1, fn)


#: Levels of nesting of the deep event: about what a fresh process's json encoder still stores.
DEEP_LEVELS = 950
DEEP_PLACEHOLDER = "<the nested lists>"


@pytest.mark.sqlite_only("about Python's stack depth, not the engine; the worker takes a file")
@pytest.mark.parametrize("where", ["content", "unknown_field"])
def test_event_stored_from_a_shallow_stack_is_readable_from_a_deep_one(
    s1: TranscriptStore, db_url: str, tmp_path: Path, where: str
) -> None:
    """Nesting accepted at write time depends on how deep the WRITER's call stack is (json's
    encoder shares the interpreter's recursion limit); a fresh process stores ~950 levels. The
    same event must then be readable by search, history, check and reconcile called from a
    deeper stack — or be refused when written. Never a RecursionError for a stored event."""
    event = msg("deep", [{"type": "text", "text": "deep storable message"}])
    if where == "content":
        event["message"]["content"].append(DEEP_PLACEHOLDER)
    else:
        event["message"]["extra"] = DEEP_PLACEHOLDER
    # The nesting written as text, not by json.dumps: this test's own stack (deeper under
    # pytest-xdist's worker) must not decide whether the file can be made.
    deep = "[" * DEEP_LEVELS + json.dumps("deepword") + "]" * DEEP_LEVELS
    event_file = tmp_path / "event.json"
    event_file.write_text(json.dumps(event).replace(json.dumps(DEEP_PLACEHOLDER), deep))
    db = db_url.removeprefix("sqlite:///")
    done = subprocess.run(
        [sys.executable, str(WORKERS / "append_one.py"), db, "s1", str(event_file)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=WORKERS,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    if "refused" in answer:
        assert answer["refused"].startswith("InvalidEventError"), answer
        return
    calls: dict[str, Callable[[], Any]] = {
        "search": lambda: s1.search(ALL, "storable"),
        "history": lambda: s1.history(ALL, KEY, include_tools=True),
        "history anchored": lambda: s1.history(ALL, KEY, message_id="deep"),
        "check": lambda: check(s1.engine),
        "reconcile": lambda: s1.reconcile(),
    }
    with s1.engine.begin() as conn:  # the reconciler must re-read the session, too
        conn.execute(text("UPDATE openclaw_index_state SET needs_rebuild = 1"))
    failures = []
    for name, call in calls.items():
        try:
            at_stack_depth(150, call)
        except RecursionError:
            failures.append(name)
    assert not failures, f"RecursionError reading a stored event in: {failures}"
    assert hits(s1, "storable") == ["deep"]
    assert_intact(s1)


# -- timestamps ------------------------------------------------------------------------------

BAD_TIMESTAMPS = [
    "yesterday",
    {},
    [],
    -5,
    True,
    False,
    None,
    "2026-13-45",
    "",
    10**30,
    -(10**30),
    "9" * 400,
]


@pytest.mark.parametrize("ts", BAD_TIMESTAMPS, ids=lambda v: repr(v)[:12])
def test_timestamps_that_are_not_dates(s1: TranscriptStore, ts: Any) -> None:
    """Stored verbatim; the index row gets the event time when it is a sane epoch-ms number,
    else the time it was written (§2). Search results always carry an integer timestamp."""
    event = msg("t1", "chronometer reading", parent="m0")
    event["timestamp"] = ts
    before = int(time.time() * 1000)
    s1.append("s1", event)
    out = s1.search(ALL, "chronometer")
    assert [h["messageId"] for h in out["results"]] == ["t1"]
    stamp = out["results"][0]["timestamp"]
    assert isinstance(stamp, int)
    if ts == -5 and not isinstance(ts, bool):
        assert stamp == -5
    else:
        assert stamp >= before - 1000
    # the same values as search bounds: a ToolInputError or a result, nothing else
    for bound in ("since", "until"):
        result = only_plugin_errors(lambda b=bound: s1.search(ALL, "chronometer", **{b: ts}))
        assert isinstance(result, (dict, ToolInputError)), result
    hist = s1.history(ALL, KEY)
    assert hist["messages"][-1]["__openclaw"]["id"] == "t1"
    assert_intact(s1)


@pytest.mark.parametrize("ts", [1e400, -1e400, float("nan")], ids=repr)
def test_non_finite_timestamps_are_refused_on_append(s1: TranscriptStore, ts: float) -> None:
    """NaN / Infinity are not JSON: an event holding one is refused with a clear error (they
    would come back in history as invalid JSON); as search bounds they are a tool error."""
    event = msg("t1", "chronometer reading", parent="m0")
    event["timestamp"] = ts
    with pytest.raises(InvalidEventError, match="non-finite number"):
        s1.append("s1", event)
    assert event_ids(s1.engine, "s1") == ["m0"]
    for bound in ("since", "until"):
        result = only_plugin_errors(lambda b=bound: s1.search(ALL, "lighthouses", **{b: ts}))
        assert isinstance(result, (dict, ToolInputError)), result
    assert_intact(s1)


# -- seq through the ORM ---------------------------------------------------------------------


@pytest.mark.parametrize("seq", [-1, -(2**70), 2**70, MAX_SEQ + 1, 2**63, "5", 1.0, True], ids=repr)
def test_bad_seq_through_the_orm_is_refused(
    s1: TranscriptStore, host: sessionmaker[Session], seq: Any
) -> None:
    with pytest.raises(InvalidEventError, match="seq"), host.begin() as db:
        session = db.get(AgentSession, "s1")
        db.add(TranscriptEvent(session=session, event=msg("o1", "orm sequence"), seq=seq))
    assert event_ids(s1.engine, "s1") == ["m0"]
    assert hits(s1, "sequence") == []
    assert_intact(s1)


def test_seq_conflict_and_gap_through_the_orm(
    s1: TranscriptStore, host: sessionmaker[Session]
) -> None:
    with pytest.raises(DuplicateEventError), host.begin() as db:
        db.add(TranscriptEvent(session_id="s1", event=msg("o1", "taken slot"), seq=0))
    with host.begin() as db:  # a gap is allowed: the session is repaired or left pending
        db.add(TranscriptEvent(session_id="s1", event=msg("o2", "gapped slot"), seq=MAX_SEQ))
    out = s1.search(ALL, "gapped")
    assert [h["messageId"] for h in out["results"]] == ["o2"] or out.get("indexing") is True
    s1.reconcile()
    assert hits(s1, "gapped") == ["o2"]
    assert hits(s1, "taken") == []
    # MAX_SEQ is the largest seq accepted: the next one, assigned by the ORM hooks or by the
    # store's own write path, must be refused rather than stored past the bound
    with pytest.raises(InvalidEventError), host.begin() as db:
        db.add(TranscriptEvent(session_id="s1", event=msg("o3", "beyond the bound")))
    with pytest.raises(InvalidEventError):
        s1.append("s1", msg("o4", "beyond the bound"))
    with s1.engine.connect() as conn:
        top = conn.execute(text("SELECT max(seq) FROM transcript_events")).scalar_one()
    assert top <= MAX_SEQ
    assert_intact(s1)


# -- session ids that are not strings --------------------------------------------------------

NOT_STRINGS = [5, None, 1.5, b"s1", ["s1"], {"id": "s1"}, ("s1",), True]


@pytest.mark.parametrize("sid", NOT_STRINGS, ids=repr)
def test_non_string_session_ids(s1: TranscriptStore, sid: Any) -> None:
    with pytest.raises(OpenClawFtsError):
        s1.create_session(sid, KEY)
    with pytest.raises(OpenClawFtsError):
        s1.create_session("fresh", sid)
    with pytest.raises(OpenClawFtsError):
        s1.append(sid, msg("z", "z"))
    with pytest.raises(OpenClawFtsError):
        s1.append_many(sid, [msg("z", "z")])
    with pytest.raises(OpenClawFtsError):
        s1.rewind(sid, None)
    if sid is not None:  # rewind(…, None) is the documented "empty branch"
        with pytest.raises(OpenClawFtsError):
            s1.rewind("s1", sid)
    deleted = only_plugin_errors(lambda: s1.delete_session(sid))
    assert deleted is False or isinstance(deleted, OpenClawFtsError), deleted
    with pytest.raises(ToolInputError):
        s1.history(ALL, sid)
    if sid is not None:
        with pytest.raises(ToolInputError):
            s1.search(ALL, "lighthouses", session_key=sid)
        with pytest.raises(ToolInputError):
            Caller(sid)
        with pytest.raises(ToolInputError):
            s1.history(ALL, KEY, message_id=sid)
    assert event_ids(s1.engine, "s1")[:1] == ["m0"]
    assert_intact(s1)


@pytest.mark.parametrize("field", ["spawned_by", "parent_session_key", "owner_session_key"])
def test_non_string_ownership_links(store: TranscriptStore, field: str) -> None:
    for bad in (["agent:main:main"], {"k": 1}, b"agent:main:main"):
        result = only_plugin_errors(
            lambda b=bad: store.create_session(f"own-{field}", KEY, **{field: b})
        )
        assert isinstance(result, OpenClawFtsError), result
    assert_intact(store)


# -- SQL (and FTS, LIKE, JSON) metacharacters in every string argument -----------------------

META = [
    "'; DROP TABLE openclaw_sessions; --",
    '" OR 1=1 --',
    "') OR ('1'='1",
    "%",
    "_",
    "agent:main:%",
    "\\",
    "*",
    "s1' --",
    'x" AND sess : s1 OR "',
    "NEAR(a b) OR sess:*",
    "a;b;c",
    "`backtick`",
    "$1 ?1 :name @p",
    '{}[]"\\/',
    "\x1b[31mred\x1b[0m",
]


@pytest.mark.parametrize("meta", META, ids=lambda m: repr(m)[:24])
def test_sql_metacharacters_in_every_string_argument(s1: TranscriptStore, meta: str) -> None:
    sid, key = f"sid{meta}", f"agent:main:{meta}"
    s1.create_session(sid, key, spawned_by=meta, parent_session_key=meta, owner_session_key=meta)
    s1.append_many(
        sid,
        [
            msg(meta, f"metaword {meta} body"),
            msg(f"{meta}2", f"second metaword {meta}", parent=meta, role="assistant"),
        ],
    )
    s1.rewind(sid, meta)
    s1.append(sid, msg(f"{meta}3", "third metaword"))
    assert set(hits(s1, "metaword")) == {meta, f"{meta}3"}
    assert set(hits(s1, "metaword", session_key=key)) == {meta, f"{meta}3"}
    assert "results" in s1.search(ALL, meta)
    assert "results" in s1.search(ALL, f"metaword {meta}", role="user", order="recent")
    as_meta = Caller(meta, visibility="tree")  # the caller's own key is hostile too
    assert set(hits(s1, "metaword", caller=as_meta)) == {meta, f"{meta}3"}
    hist = s1.history(ALL, key, message_id=meta, session_id=sid)
    assert [m["__openclaw"]["id"] for m in hist["messages"]] == [meta, f"{meta}3"]
    assert s1.history(ALL, sid)["sessionKey"] == key
    # an id the other session does not hold is an error naming it, never a match elsewhere
    elsewhere: Any = s1.history(ALL, KEY, message_id=meta)
    assert elsewhere["status"] == "error" and "not found" in elsewhere["error"], elsewhere
    # nothing else was touched: the other session and every table are intact
    assert hits(s1, "lighthouses") == ["m0"]
    assert row_count(s1.engine, "openclaw_sessions") == 2
    assert s1.delete_session(sid) is True
    assert row_count(s1.engine, "openclaw_sessions") == 1
    assert hits(s1, "metaword") == []
    assert_intact(s1)


# -- files -----------------------------------------------------------------------------------


def test_invalid_utf8_lines_are_reported_with_file_and_line(
    store: TranscriptStore, tmp_path: Path
) -> None:
    path = tmp_path / "mixed.jsonl"
    lines = [
        json.dumps({"type": "session", "version": 4, "id": "utf"}).encode(),
        json.dumps(msg("a", "valid opening")).encode(),
        b'{"type":"message","id":"b","message":{"role":"user","content":"bad \xff\xfe bytes"}}',
        b"\xc3\x28 not even json",
        b'{"type":"message","id":"c","parentId":"a","message":{"role":"user","content":"valid '
        b'\xe6\x98\x8e\xe5\xa4\xa9 closing"}}',
        b'{"type":"message","id":"d","message":{"role":"user","content":"trunc \xe6\x98"}}',
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    report = store.import_jsonl(path, session_key=KEY)
    assert report["imported"] == 3
    assert report["errorCount"] == 3
    for number in (3, 4, 6):
        assert any(e.startswith(f"{path}:{number}:") for e in report["errors"]), report
    assert_intact(store)
    assert set(hits(store, "valid")) == {"a", "c"}
    assert hits(store, "明天") == ["c"]


def test_random_binary_file_is_refused_and_nothing_stored(
    store: TranscriptStore, tmp_path: Path
) -> None:
    rng = random.Random(7)
    for n in range(5):
        path = tmp_path / f"noise{n}.jsonl"
        path.write_bytes(rng.randbytes(rng.randint(1, 200_000)))
        with pytest.raises(ImportFormatError):
            store.import_jsonl(path)
    for table in ("openclaw_sessions", "transcript_events", "message_index"):
        assert row_count(store.engine, table) == 0
    assert_intact(store)


def test_jsonl_of_json_arrays_is_refused(store: TranscriptStore, tmp_path: Path) -> None:
    path = tmp_path / "arrays.jsonl"
    path.write_text('[1, 2]\n["type", "message"]\n[{"type": "message"}]\n', encoding="utf-8")
    with pytest.raises(ImportFormatError, match="not an OpenClaw transcript"):
        store.import_jsonl(path)
    scalars = tmp_path / "scalars.jsonl"
    scalars.write_text('1\n"message"\nnull\ntrue\n', encoding="utf-8")
    with pytest.raises(ImportFormatError):
        store.import_jsonl(scalars)
    assert row_count(store.engine, "openclaw_sessions") == 0
    # arrays after a valid start are reported line by line, the rest imported
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(
        json.dumps(msg("a", "array neighbour")) + "\n[1]\n" + json.dumps(msg("b", "x")) + "\n",
        encoding="utf-8",
    )
    report = store.import_jsonl(mixed)
    assert report["imported"] == 2 and report["errorCount"] == 1
    assert f"{mixed}:2:" in report["errors"][0]
    assert_intact(store)


def test_lone_surrogate_escapes_in_a_jsonl_file(store: TranscriptStore, tmp_path: Path) -> None:
    r"""``"\ud800"`` is valid JSON text that decodes to a lone surrogate: in text it is stored;
    in an id the line is refused with file:line (or stored) — the rest is imported."""
    path = tmp_path / "surrogates.jsonl"
    path.write_text(
        "\n".join(
            [
                '{"type":"session","id":"sur"}',
                '{"type":"message","id":"a","message":{"role":"user","content":"text \\ud800 ok"}}',
                '{"type":"message","id":"b\\ud800","message":{"role":"user","content":"bad id"}}',
                '{"type":"message","id":"c","message":{"role":"user","content":"after sur"}}',
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    report = only_plugin_errors(lambda: store.import_jsonl(path))
    assert isinstance(report, dict), report
    assert report["imported"] + report["errorCount"] == 4
    assert report["errorCount"] <= 1
    if report["errorCount"]:
        assert report["errors"][0].startswith(f"{path}:3:")
    assert_intact(store)
    assert hits(store, "after") == ["c"]


def test_surrogate_session_id_in_a_jsonl_header(store: TranscriptStore, tmp_path: Path) -> None:
    path = tmp_path / "header.jsonl"
    path.write_text(
        '{"type":"session","id":"s\\ud800"}\n'
        '{"type":"message","id":"a","message":{"role":"user","content":"x"}}\n',
        encoding="utf-8",
    )
    result = only_plugin_errors(lambda: store.import_jsonl(path))
    assert isinstance(result, (dict, ImportFormatError)), result
    assert_intact(store)


# ============================================================================================
# Security: visibility, existence leaks, secrets
# ============================================================================================

#: Every hidden session's text carries this word; no output to the caller may contain it.
HIDDEN_WORD = "zebracrossing"
CALLER = Caller(KEY)  # visibility "tree"


@pytest.fixture
def world(store: TranscriptStore, tmp_path: Path) -> TranscriptStore:
    """The caller's own session and child, and hidden sessions of every kind."""
    store.create_session("mine", KEY)
    store.create_session("child", "agent:main:sub:1", spawned_by=KEY)
    store.create_session("hidden", "agent:main:other")
    store.create_session("hidden-prefix", "agent:main:main:x")  # the caller's key + suffix
    store.create_session("hidden-prefix2", "agent:main")  # a prefix of the caller's key
    store.create_session("other-agent", "agent:other:main")
    store.create_session("other-agent-child", "agent:other:sub", spawned_by="agent:other:main")
    store.create_session("incog", "agent:main:incog", spawned_by=KEY, incognito=True)
    store.append("mine", msg("mine-1", "visible zebra stripes"))
    store.append("child", msg("child-1", "child zebra stripes"))
    for sid in ("hidden", "hidden-prefix", "hidden-prefix2", "other-agent", "other-agent-child"):
        store.append_many(
            sid,
            [msg(f"{sid}-{i}", f"{HIDDEN_WORD} zebra stripes {sid} {i}") for i in range(30)],
        )
    store.append("incog", msg("incog-1", f"{HIDDEN_WORD} zebra incognito"))
    # a pending hidden session (imported, never indexed) must not set "indexing" either
    path = tmp_path / "hidden-pending.jsonl"
    path.write_text(json.dumps(msg("hp-1", f"{HIDDEN_WORD} pending")) + "\n", encoding="utf-8")
    store.import_jsonl(path, session_key="agent:main:hidden-pending")
    return store


HIDDEN_IDS = (
    "hidden",
    "hidden-prefix",
    "hidden-prefix2",
    "other-agent",
    "other-agent-child",
    "incog",
    "hidden-pending",
)


def assert_nothing_hidden(out: dict[str, Any]) -> None:
    """No hidden text, no hit from a hidden session, no message of one."""
    blob = json.dumps(out, ensure_ascii=False)
    assert HIDDEN_WORD not in blob, blob[:500]
    for hit in out.get("results", []):
        assert hit["sessionId"] not in HIDDEN_IDS, hit
    for message in out.get("messages", []):
        assert not str(message["__openclaw"]["id"]).startswith(HIDDEN_IDS), message
    if "results" not in out and "messages" not in out:  # an error: its two fields only
        assert set(out) == {"status", "error"}, out


#: Callers that may see "mine" (and, except ``self``, "child") and none of the hidden sessions
#: (the caller's agent is "nobody" where the visibility would otherwise cover agent "main").
CALLERS = {
    "self": Caller(KEY, visibility="self"),
    "tree": Caller(KEY, visibility="tree"),
    "agent": Caller(KEY, visibility="agent", agent_id="nobody"),
    "all": Caller(KEY, visibility="all", agent_id="nobody"),
    "sandboxed": Caller(KEY, visibility="all", sandboxed=True),
    "all-a2a-off": Caller(
        KEY, visibility="all", agent_id="nobody", agent_to_agent=AgentToAgent(allow=["*"])
    ),
    "all-a2a-self": Caller(
        KEY,
        visibility="all",
        agent_id="nobody",
        agent_to_agent=AgentToAgent(enabled=True, allow=["nobody"]),
    ),
    "tree-a2a": Caller(KEY, visibility="tree", agent_to_agent=AgentToAgent(enabled=True)),
}


@pytest.mark.parametrize("caller", CALLERS.values(), ids=CALLERS.keys())
def test_search_arguments_never_reach_hidden_sessions(
    world: TranscriptStore, caller: Caller
) -> None:
    queries = [HIDDEN_WORD, "zebra", "stripes", f"{HIDDEN_WORD}*", "zebra OR zebracrossing"]
    keys: list[str | None] = [
        None,
        "agent:main:other",
        "hidden",  # a session id instead of a key
        "agent:other:main",
        "agent:main:main:x",
        "agent:main",
        "agent:main:%",
        "agent:main:incog",
        "agent:main:hidden-pending",
        "%",
    ]
    for query in queries:
        for key in keys:
            for order in ("relevance", "recent"):
                out = world.search(caller, query, session_key=key, order=order, limit=1)
                assert_nothing_hidden(out)
                if "results" in out:
                    # hidden rows neither consume the limit nor set truncated nor "indexing"
                    assert "indexing" not in out
                    mine = {"mine-1", "child-1"}
                    got = {h["messageId"] for h in out["results"]}
                    assert got <= mine
                    # "agent" (of agent "nobody") sees only its own key: the child is agent main's
                    narrow = caller.visibility in ("self", "agent")
                    if key is None and query == "zebra" and not narrow:
                        assert len(got) == 1 and out.get("truncated") is True
                    if key is None and query == "zebra" and narrow:
                        assert got == {"mine-1"} and "truncated" not in out
                else:
                    assert out["status"] in ("forbidden", "error")


def test_search_through_the_tool_adapter_cannot_widen_visibility(world: TranscriptStore) -> None:
    for extra in (
        {"visibility": "all"},
        {"sessionId": "hidden"},
        {"caller": "agent:main:other"},
        {"agentToAgent": {"enabled": True}},
        {"includeHidden": True},
    ):
        # unknown arguments are ignored, as OpenClaw's readers ignore them: they change nothing
        out = tools.sessions_search(world, CALLER, {"query": HIDDEN_WORD, **extra})
        assert out == tools.sessions_search(world, CALLER, {"query": HIDDEN_WORD})
        assert_nothing_hidden(out)
    out = tools.sessions_history(world, CALLER, {"sessionKey": "hidden", "visibility": "all"})
    assert out["status"] == "forbidden"
    assert_nothing_hidden(out)


def test_history_arguments_never_reach_hidden_sessions(world: TranscriptStore) -> None:
    cases: list[dict[str, Any]] = []
    for target in ("agent:main:other", "hidden", "agent:other:main", "other-agent", "%"):
        cases.append({"session_key": target})
        cases.append({"session_key": target, "message_id": "hidden-1"})
        cases.append({"session_key": target, "message_id": "hidden-1", "session_id": "hidden"})
    for sid in HIDDEN_IDS:  # own key, a hidden incarnation
        cases.append({"session_key": KEY, "message_id": f"{sid}-1", "session_id": sid})
        cases.append({"session_key": KEY, "message_id": f"{sid}-1"})  # hidden anchor
    for case in cases:
        key = case.pop("session_key")
        out = world.history(CALLER, key, include_tools=True, **case)
        assert_nothing_hidden(out)
        if "messages" in out:
            assert out["sessionKey"] == KEY and out["messages"] == []
        else:
            assert out["status"] in ("forbidden", "error")


def test_hidden_session_errors_say_no_more_than_forbidden(world: TranscriptStore) -> None:
    def shape(out: dict[str, Any], *secrets: str) -> str:
        blob = json.dumps(out)
        for value in secrets:
            blob = blob.replace(value, "<arg>")
        return blob

    # §5: a sessionId that does not belong to the key is an error — the same error whether the
    # id is unknown or names a hidden session (of this key's agent or of another key)
    unknown = world.history(CALLER, KEY, message_id="m", session_id="no-such-session")
    for hidden in HIDDEN_IDS:
        out = world.history(CALLER, KEY, message_id="m", session_id=hidden)
        assert shape(out, hidden) == shape(unknown, "no-such-session")
    # an unknown key and a hidden key, each with a sessionId that is not theirs: same answer
    a = world.history(CALLER, "agent:main:nope", message_id="m", session_id="mine")
    b = world.history(CALLER, "agent:main:other", message_id="m", session_id="mine")
    assert shape(a, "agent:main:nope") == shape(b, "agent:main:other")
    # a hidden key with its own sessionId: forbidden, and nothing more (no id, no count)
    out = world.history(CALLER, "agent:main:other", message_id="hidden-1", session_id="hidden")
    assert out["status"] == "forbidden" and set(out) == {"status", "error"}
    # a hidden key without sessionId: forbidden, OpenClaw's text for each tool, naming the
    # setting and not the key; an unknown key answers exactly the same
    out_h = world.history(CALLER, "agent:main:other")
    out_s = world.search(CALLER, "zebra", session_key="agent:main:other")
    rule = "visibility is restricted to the current session tree (tools.sessions.visibility=tree)."
    assert out_h == {"status": "forbidden", "error": f"Session history {rule}"}
    assert out_s == {"status": "forbidden", "error": f"Session search {rule}"}
    assert world.history(CALLER, "agent:main:nope") == out_h
    assert world.search(CALLER, "zebra", session_key="agent:main:nope") == out_s
    # a hidden anchor in the caller's own session: the same answer as an unknown anchor (the
    # "not found" error, echoing only the id the caller gave)
    hidden_anchor = world.history(CALLER, KEY, message_id="hidden-1")
    unknown_anchor = world.history(CALLER, KEY, message_id="no-such-message")
    assert shape(hidden_anchor, "hidden-1") == shape(unknown_anchor, "no-such-message")


#: Allow lists whose patterns, read with ``*`` as the only wildcard, do not match agent "main".
NOT_MATCHING_THE_CALLER = (
    ["m?in", "other"],
    ["[m]ain", "other"],
    ["[!x]ain", "other"],
    ["?ain", "oth*"],
)


def test_agent_to_agent_patterns_only_know_the_star(world: TranscriptStore) -> None:
    """§6: allow patterns have one wildcard, ``*``. ``?`` and ``[...]`` are literal, so a
    pattern list that does not name the caller's agent must not open other agents' sessions."""
    opened = {}
    for patterns in NOT_MATCHING_THE_CALLER:
        caller = Caller(
            KEY, visibility="all", agent_to_agent=AgentToAgent(enabled=True, allow=patterns)
        )
        out = world.search(caller, HIDDEN_WORD, session_key="agent:other:main")
        if out.get("results"):
            opened[str(patterns)] = len(out["results"])
        hist = world.history(caller, "agent:other:main")
        if hist.get("messages"):
            opened[f"history {patterns}"] = len(hist["messages"])
    assert not opened, f"other agents' sessions opened by non-matching patterns: {opened}"
    # the star works, both ways
    caller = Caller(
        KEY, visibility="all", agent_to_agent=AgentToAgent(enabled=True, allow=["ma*", "OTH*"])
    )
    out = world.search(caller, HIDDEN_WORD, session_key="agent:other:main")
    assert {h["sessionId"] for h in out["results"]} == {"other-agent"}


def test_incognito_sessions_are_never_searchable(world: TranscriptStore) -> None:
    for caller in (CALLER, Caller(KEY, visibility="all"), Caller("agent:main:incog")):
        for key in (None, "agent:main:incog"):
            out = world.search(caller, "incognito", session_key=key)
            assert out.get("results", []) == [], out


# -- secrets ---------------------------------------------------------------------------------

SECRETS = {
    "openai": "sk-proj-Abcdefghijklmnop1234567890QRSTuvwx",
    "github": "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123",
    "slack": "xoxb-1234567890-abcdefghijklmnopqrstuvwx",
    "gitlab": "glpat-AbCdEfGhIjKlMnOpQrSt",
    "google": "AIzaSyA1234567890abcdefghijklmnopqrstu",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0",
    "password": "correct-horse-battery-staple-99",
    "dbpass": "Sup3rS3cretPassw0rdValue",
}


def secret_events() -> list[dict[str, Any]]:
    s = SECRETS
    return [
        msg("e1", f"deploy with OPENAI_API_KEY={s['openai']} please"),
        msg("e2", f"my token is {s['github']} and {s['slack']}", role="assistant"),
        msg(
            "e3",
            [
                {"type": "text", "text": f"Authorization: Bearer {s['jwt']}"},
                {"type": "thinking", "thinking": f"the key is {s['gitlab']}", "signature": "x"},
                {
                    "type": "toolCall",
                    "id": "c1",
                    "name": "bash",
                    "arguments": {"command": f"export TOKEN={s['google']}", "apiKey": s["aws"]},
                },
            ],
            role="assistant",
        ),
        msg("e4", [{"type": "text", "text": f"slack {s['slack']}"}], role="toolResult"),
        msg("e5", f'config {{"password": "{s["password"]}"}} secretive'),
        msg("e6", f"connect postgres://admin:{s['dbpass']}@db.example.com/prod secretive"),
        {
            "type": "message",
            "id": "e7",
            "parentId": None,
            "message": {"role": "user", "text": f"via text field {s['aws']} secretive"},
        },
        {
            "type": "message",
            "id": "e8",
            "parentId": None,
            "message": {
                "role": "assistant",
                "content": "upstream failed secretive",
                "errorMessage": f"401 Incorrect API key provided: {s['openai']}",
                "details": {"env": {"GITHUB_TOKEN": s["github"]}},
                "usage": {"note": f"billed to {s['aws']}"},
            },
        },
    ]


def test_secrets_never_appear_in_search_or_history(store: TranscriptStore) -> None:
    store.create_session("sec", KEY)
    store.append_many("sec", secret_events())
    outputs: list[Any] = []
    queries = ["secretive", "deploy", "token", "Authorization", "config", "connect", "slack"]
    queries += [*SECRETS.values(), *(v[:8] + "*" for v in SECRETS.values())]
    for query in queries:
        for order in ("relevance", "recent"):
            outputs.append(store.search(ALL, query[:4096], limit=25, order=order))
    for include_tools in (False, True):
        outputs.append(store.history(ALL, KEY, include_tools=include_tools))
        for n in range(1, 9):
            outputs.append(store.history(ALL, KEY, message_id=f"e{n}", include_tools=include_tools))
    outputs.append(tools.sessions_history(store, ALL, {"sessionKey": KEY, "includeTools": True}))
    blob = json.dumps(outputs, ensure_ascii=False)
    assert "secretive" in blob  # the searches did find the messages
    leaked = {name: value for name, value in SECRETS.items() if value[6:-4] in blob}
    assert not leaked, f"secrets in the output: {sorted(leaked)}"


def test_secrets_in_other_message_fields_never_appear_in_history(store: TranscriptStore) -> None:
    """§7: every history text is redacted — also strings in message fields the plugin does not
    know (provider payloads, host metadata), which history passes through."""
    store.create_session("sec", KEY)
    event = msg("u1", "provider failure", role="assistant")
    event["message"]["providerResponse"] = {"error": {"message": f"bad key {SECRETS['openai']}"}}
    event["message"]["meta"] = {"apiKey": SECRETS["github"], "note": f"token {SECRETS['slack']}"}
    event["message"]["content"] = [
        {"type": "text", "text": "provider failure"},
        {"type": "custom_block", "payload": f"Authorization: Bearer {SECRETS['jwt']}"},
    ]
    store.append("sec", event)
    blob = json.dumps(
        [store.history(ALL, KEY, include_tools=t) for t in (False, True)], ensure_ascii=False
    )
    assert "provider failure" in blob
    leaked = sorted(n for n, v in SECRETS.items() if v[6:-4] in blob)
    assert not leaked, f"secrets in history output: {leaked}"


#: Secrets with a recognisable shape on their own (no ``name=`` around them).
VENDOR_SECRETS = ("openai", "github", "slack", "gitlab", "google", "aws", "jwt")


def test_redaction_covers_the_whole_text_before_the_window_is_cut(store: TranscriptStore) -> None:
    """A secret far from the hit, and one that a snippet window would cut in half."""
    store.create_session("sec", KEY)
    pad = " ".join(f"w{i}" for i in range(200))
    for n, name in enumerate(VENDOR_SECRETS):
        secret = SECRETS[name]
        store.append("sec", msg(f"p{n}", f"{pad} beacon OPENAI_API_KEY={secret} {pad}"))
        store.append("sec", msg(f"q{n}", f"{pad} beacon{n} {secret} tail"))
        store.append("sec", msg(f"r{n}", f"beacon{n} {'x' * 280}{secret} tail"))
    queries = ["beacon", *(f"beacon{n}" for n in range(len(VENDOR_SECRETS)))]
    blob = json.dumps([store.search(ALL, q, limit=25) for q in queries], ensure_ascii=False)
    assert "beacon" in blob
    leaked = [name for name in VENDOR_SECRETS if SECRETS[name][6:-4] in blob]
    assert not leaked, leaked

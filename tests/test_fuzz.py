"""Property-based fuzzing of the write paths and the importer (docs/reliability.md).

Hypothesis generates event dicts — recursive JSON with, often, the realistic shapes of
OpenClaw's transcripts (messages with roles and content blocks, leaf controls, side appends,
headers), ids and parents drawn from a small pool so that duplicates, cycles and rewinds
collide — and byte soup for the JSONL importer. The promises checked on every example:

* ``append`` / ``append_many`` / ``rewind`` / ``import_jsonl`` / ``import_dir`` either succeed
  or raise an :class:`openclaw_fts.errors.OpenClawFtsError` — nothing else escapes;
* ``search`` and ``history`` on what was stored answer with a result dict (or ToolInputError);
* the index never drifts from the active branches (``check``), and after one ``reconcile()``
  every session is indexed and ``check(engine).ok``.

The example database is off and generation is derandomized, so CI runs the same examples every
time (see SCALE below for longer, random local runs); each test prints how many examples it
ran (quoted in docs/reliability.md).
"""

from __future__ import annotations

import itertools
import json
import os
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from openclaw_fts import (
    Caller,
    ImportFormatError,
    OpenClawFtsError,
    ToolInputError,
    TranscriptStore,
)
from openclaw_fts.check import check

#: Longer local runs: OPENCLAW_FTS_FUZZ_SCALE=10 runs ten times the examples, and
#: OPENCLAW_FTS_FUZZ_RANDOM=1 draws new examples each run instead of CI's fixed ones.
SCALE = float(os.environ.get("OPENCLAW_FTS_FUZZ_SCALE", "1"))
#: Examples per test; the whole file stays well under a minute on the CI machine.
APPEND_EXAMPLES = int(300 * SCALE)
IMPORT_EXAMPLES = int(200 * SCALE)
SURROGATE_EXAMPLES = int(60 * SCALE)
#: The index check reads every session: run it every this many examples (and at the end).
CHECK_EVERY = 25

FUZZ_SETTINGS = settings(
    deadline=None,
    database=None,
    derandomize="OPENCLAW_FTS_FUZZ_RANDOM" not in os.environ,
    # No shrinking: every example writes to the database, so shrinking a failure would take
    # minutes; the failing example is printed as generated.
    phases=[Phase.explicit, Phase.generate],
    report_multiple_bugs=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

KEYS = ("agent:main:main", "agent:main:sub:1", "agent:other:main", "global")
CALLERS = (
    Caller("agent:main:main", visibility="all"),
    Caller("agent:main:main"),
    Caller("agent:other:main", visibility="self"),
)

# -- strategies ------------------------------------------------------------------------------

#: Text: every encodable code point (NUL and other controls included), no lone surrogates.
TEXT = st.text(st.characters(codec="utf-8"), max_size=40)
#: Words that make searches hit, mixed into message text.
WORDS = st.sampled_from(["deploy", "café", "明天", "node.js", "c++", "NEAR", "OR", "x:y", '"'])
PROSE = st.lists(st.one_of(WORDS, TEXT), max_size=8).map(" ".join)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),
    TEXT,
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(TEXT, inner, max_size=4)),
    max_leaves=12,
)
#: A small pool, so ids, parents and leaf targets collide; plus non-ids.
IDS = st.one_of(
    st.sampled_from(["a", "b", "c", "d", "m1", "leaf"]),
    st.sampled_from(["", " ", None, 0, 7, True, [], {}]),
    TEXT,
)
TIMESTAMPS = st.one_of(
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(),
    st.sampled_from(["2026-09-01T10:00:00Z", "2026-09-01", "yesterday", "", "2026-13-45"]),
    JSON,
)
BLOCK = st.one_of(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["text", "input_text", "output_text"]), "text": PROSE}
    ),
    st.fixed_dictionaries(
        {"type": st.just("thinking"), "thinking": PROSE},
        optional={"thinkingSignature": TEXT, "signature": TEXT},
    ),
    st.fixed_dictionaries(
        {"type": st.just("toolCall"), "id": TEXT, "name": TEXT, "arguments": JSON}
    ),
    st.fixed_dictionaries(
        {"type": st.just("image"), "data": TEXT, "mimeType": st.just("image/png")}
    ),
    st.fixed_dictionaries({"type": st.just("toolResult"), "content": st.lists(JSON, max_size=3)}),
    JSON,
)
MESSAGE = st.fixed_dictionaries(
    {
        "role": st.one_of(
            st.sampled_from(["user", "assistant", "toolResult", "tool", "system"]), JSON
        ),
        "content": st.one_of(PROSE, st.lists(BLOCK, max_size=4), JSON),
    },
    optional={
        "text": st.one_of(PROSE, JSON),
        "details": JSON,
        "usage": JSON,
        "errorMessage": PROSE,
    },
)
MESSAGE_EVENT = st.fixed_dictionaries(
    {"type": st.just("message"), "id": IDS, "message": st.one_of(MESSAGE, MESSAGE, JSON)},
    optional={
        "parentId": IDS,
        "timestamp": TIMESTAMPS,
        "appendMode": st.one_of(st.just("side"), JSON),
        "extra": JSON,
    },
)
LEAF_EVENT = st.fixed_dictionaries(
    {"type": st.just("leaf"), "id": IDS, "targetId": IDS}, optional={"parentId": IDS}
)
OTHER_EVENT = st.fixed_dictionaries(
    {
        "type": st.one_of(
            st.sampled_from(
                ["session", "model_change", "compaction", "custom", "label", "branch_summary"]
            ),
            JSON,
        ),
        "id": IDS,
    },
    optional={"parentId": IDS, "timestamp": TIMESTAMPS, "data": JSON, "version": JSON},
)
RANDOM_DICT = st.dictionaries(
    st.one_of(st.sampled_from(["type", "id", "parentId", "targetId", "message"]), TEXT),
    JSON,
    max_size=6,
)
#: Mostly realistic events; sometimes arbitrary dicts or not objects at all.
EVENT = st.one_of(
    MESSAGE_EVENT, MESSAGE_EVENT, MESSAGE_EVENT, LEAF_EVENT, OTHER_EVENT, RANDOM_DICT, JSON
)
#: How one example writes its events: one append each, or append_many of a run.
CHUNKS = st.lists(st.integers(min_value=1, max_value=5), min_size=1, max_size=6)


def json_line(value: Any, ascii_only: bool) -> bytes:
    return json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")


LINE = st.one_of(
    st.builds(json_line, EVENT, st.booleans()),
    st.builds(json_line, EVENT, st.booleans()),
    st.binary(max_size=120).map(lambda b: b.replace(b"\n", b" ")),
    st.builds(lambda v: json_line(v, False)[: len(json_line(v, False)) // 2], EVENT),
    st.just(b""),
    st.just(b"\xef\xbb\xbf" + b'{"type":"message","id":"bom"}'),
)


# -- helpers ---------------------------------------------------------------------------------


def write_events(store: TranscriptStore, sid: str, events: list[Any], chunks: list[int]) -> int:
    """Append ``events`` in the given chunk sizes; returns how many appends succeeded."""
    stored = 0
    position = 0
    for size in itertools.cycle(chunks):
        if position >= len(events):
            break
        part = events[position : position + size]
        position += size
        try:
            if len(part) == 1:
                store.append(sid, part[0])
            else:
                store.append_many(sid, part)
            stored += 1
        except OpenClawFtsError:
            pass
    return stored


def read_back(store: TranscriptStore, key: str, query: str) -> None:
    """Search and history answer with a dict (or a ToolInputError), nothing else."""
    for caller in CALLERS:
        try:
            out = store.search(caller, query, limit=25)
            assert "results" in out or out.get("status") in ("error", "forbidden"), out
        except ToolInputError:
            pass
        out = store.history(caller, key, include_tools=True)
        assert "messages" in out or out.get("status") in ("error", "forbidden"), out
        json.dumps(out, ensure_ascii=False).encode("utf-8")


def assert_all_indexed(store: TranscriptStore) -> dict[str, int]:
    before = check(store.engine)
    assert before.ok, before.as_dict()
    store.reconcile()
    after = check(store.engine)
    assert after.ok, after.as_dict()
    assert after.status["pending"] == 0, after.status
    return after.status


# -- the fuzz tests --------------------------------------------------------------------------


def test_fuzz_append_and_read(tmp_path: Path) -> None:
    store = TranscriptStore(f"sqlite:///{tmp_path / 'fuzz.sqlite'}", background=False)
    counter = itertools.count()
    stats = {"examples": 0, "events": 0, "appends_ok": 0, "rewinds": 0}

    @settings(FUZZ_SETTINGS, max_examples=APPEND_EXAMPLES)
    @given(
        events=st.lists(EVENT, min_size=1, max_size=14),
        chunks=CHUNKS,
        key=st.sampled_from(KEYS),
        incognito=st.sampled_from([False, False, False, True]),
        rewind_to=st.none() | st.sampled_from(["a", "b", "c", "nowhere", ""]),
        query=st.one_of(PROSE, WORDS, TEXT),
    )
    def run(
        events: list[Any],
        chunks: list[int],
        key: str,
        incognito: bool,
        rewind_to: str | None,
        query: str,
    ) -> None:
        sid = f"fz{next(counter)}"
        store.create_session(sid, key, incognito=incognito)
        stats["examples"] += 1
        stats["events"] += len(events)
        stats["appends_ok"] += write_events(store, sid, events, chunks)
        if rewind_to is not None:
            try:
                store.rewind(sid, rewind_to)
                stats["rewinds"] += 1
            except OpenClawFtsError:
                pass
            store.append(sid, {"type": "message", "id": f"after-{sid}", "message": {}})
        read_back(store, key, query)
        if stats["examples"] % CHECK_EVERY == 0:  # live writes never leave a session wrongly
            report = check(store.engine)  # clean (check reads every session: not each time)
            assert report.ok, report.as_dict()

    try:
        run()
        status = assert_all_indexed(store)
        assert status["total"] == stats["examples"]
    finally:
        store.close()
    print(
        f"\n[fuzz] append: {stats['examples']} examples, {stats['events']} events, "
        f"{stats['appends_ok']} appends stored, {stats['rewinds']} rewinds; index exact"
    )


def test_fuzz_jsonl_importer(tmp_path: Path) -> None:
    store = TranscriptStore(f"sqlite:///{tmp_path / 'fuzz.sqlite'}", background=False)
    counter = itertools.count()
    stats = {"examples": 0, "imported": 0, "refused": 0, "line_errors": 0}

    @settings(FUZZ_SETTINGS, max_examples=IMPORT_EXAMPLES)
    @given(
        lines=st.lists(LINE, max_size=25),
        session_key=st.none() | st.sampled_from(KEYS),
        as_dir=st.booleans(),
        index=st.one_of(st.none(), st.binary(max_size=80), st.builds(json.dumps, JSON)),
        query=WORDS,
    )
    def run(
        lines: list[bytes],
        session_key: str | None,
        as_dir: bool,
        index: bytes | str | None,
        query: str,
    ) -> None:
        n = next(counter)
        folder = tmp_path / f"imp{n}"
        folder.mkdir()
        path = folder / f"sess{n}.jsonl"
        path.write_bytes(b"\n".join(lines))
        stats["examples"] += 1
        try:
            if as_dir:
                if index is not None:
                    data = index if isinstance(index, bytes) else index.encode()
                    (folder / "sessions.json").write_bytes(data)
                report = store.import_dir(folder)
            else:
                report = store.import_jsonl(path, session_key=session_key)
        except ImportFormatError:
            stats["refused"] += 1
            return
        assert set(report) >= {"imported", "errorCount", "errors"}, report
        for error in report["errors"]:
            assert str(path) in error or str(folder) in error, error
        stats["imported"] += report["imported"]
        stats["line_errors"] += report["errorCount"]
        # A lone file's report names the key it went under (the default key may be taken).
        lone = not as_dir and report["outcomes"]
        read_back(
            store,
            report["outcomes"][0]["sessionKey"] if lone else session_key or "agent:main:main",
            query,
        )

    try:
        run()
        status = assert_all_indexed(store)
    finally:
        store.close()
    print(
        f"\n[fuzz] importer: {stats['examples']} files, {stats['imported']} events imported, "
        f"{stats['line_errors']} bad lines reported, {stats['refused']} files refused; "
        f"{status['total']} sessions all indexed"
    )


#: Text that may hold lone surrogates (valid in a Python str and in JSON's \\uXXXX escapes).
SURROGATE_TEXT = st.lists(
    st.one_of(
        st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff", "a", "明", " "]),
        st.characters(codec="utf-8"),
    ),
    max_size=8,
).map("".join)


def test_fuzz_lone_surrogates_anywhere(tmp_path: Path) -> None:
    """Lone surrogates in any string of an event (ids, parents, text, keys): stored or refused
    with an OpenClawFtsError, and the session stays readable."""
    store = TranscriptStore(f"sqlite:///{tmp_path / 'fuzz.sqlite'}", background=False)
    counter = itertools.count()
    stats = {"examples": 0}
    ids = st.one_of(st.sampled_from(["a", "b", "c"]), SURROGATE_TEXT)
    event = st.fixed_dictionaries(
        {
            "type": st.sampled_from(["message", "leaf", "custom"]),
            "id": ids,
            "parentId": ids,
            "targetId": ids,
            "message": st.fixed_dictionaries(
                {
                    "role": st.sampled_from(["user", "assistant"]),
                    "content": st.one_of(
                        SURROGATE_TEXT,
                        st.lists(
                            st.fixed_dictionaries(
                                {"type": st.just("text"), "text": SURROGATE_TEXT}
                            ),
                            max_size=3,
                        ),
                    ),
                }
            ),
        },
        optional={"extra": st.dictionaries(SURROGATE_TEXT, SURROGATE_TEXT, max_size=2)},
    )

    @settings(FUZZ_SETTINGS, max_examples=SURROGATE_EXAMPLES)
    @given(events=st.lists(event, min_size=1, max_size=6), query=SURROGATE_TEXT)
    def run(events: list[dict[str, Any]], query: str) -> None:
        sid = f"sg{next(counter)}"
        store.create_session(sid, "agent:main:main")
        stats["examples"] += 1
        write_events(store, sid, events, [1, 3])
        read_back(store, "agent:main:main", query or "x")

    try:
        run()
        assert_all_indexed(store)
    finally:
        store.close()
    print(f"\n[fuzz] lone surrogates: {stats['examples']} examples")


@pytest.mark.parametrize("seed", range(3))
def test_fuzz_random_bytes_are_never_a_transcript(tmp_path: Path, seed: int) -> None:
    """Pure noise (no JSON object with a "type" anywhere): refused whole, nothing stored."""
    rng = random.Random(seed)
    with TranscriptStore(f"sqlite:///{tmp_path / 'n.sqlite'}", background=False) as store:
        for n in range(20):
            path = tmp_path / f"noise{n}.jsonl"
            path.write_bytes(rng.randbytes(rng.randint(1, 50_000)).replace(b"{", b"("))
            with pytest.raises(ImportFormatError):
                store.import_jsonl(path)
        assert store.index_status()["total"] == 0

"""The upstream redaction vectors, verbatim (tests/fixtures/redaction_upstream/), end to end.

Each text is imported as a user message of an OpenClaw transcript file, then read back
through ``sessions_search`` snippets and ``sessions_history`` text, on both engines (one
store per engine, one import per session of :data:`CASES_PER_SESSION` texts). OpenClaw's own
vectors must leak nothing (docs/redaction.md, "Figures"); the counts of every fixture must
add up to the cases of the upstream files.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from factories import msg
from upstream_vectors import (
    Case,
    detect_secrets_cases,
    gitleaks_cases,
    load,
    openclaw_cases,
)

from openclaw_fts import Caller, TranscriptStore
from openclaw_fts.importer import import_jsonl
from openclaw_fts.tools import sessions_history, sessions_search

pytestmark = pytest.mark.both_engines

#: Texts per imported session file.
CASES_PER_SESSION = 100
KEY_PREFIX = "agent:main:upstream"
CALLER = Caller("agent:main:main", visibility="all")
#: Highest share of gitleaks' and detect-secrets' positives (judged without detect-secrets
#: installed) allowed to leak: the measured 19 of 564 (3.4 %, each gitleaks sample's secret
#: named as gitleaks names it; 36 of 563 under the earlier token-run judge, 123 before the rule
#: families of openclaw_fts/redact/families.py, docs/redaction.md "Figures") plus a margin, so
#: that a change that leaks more fails here. The goal is 2 %: this bound is a ratchet, not the
#: goal.
MAX_PUBLIC_LEAK_RATE = 0.045


def _marker(i: int) -> str:
    return f"upstreamcase{i}"


@pytest.fixture(scope="module")
def openclaw_store(
    module_db_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[TranscriptStore, list[Case]]]:
    """Every upstream case imported from JSONL files (a marker line, then the text as it
    is): OpenClaw's vectors, gitleaks' and detect-secrets' positives."""
    cases = openclaw_cases() + gitleaks_cases()[0] + detect_secrets_cases()[0]
    root = tmp_path_factory.mktemp("upstream")
    store = TranscriptStore(module_db_url, background=False)
    for start in range(0, len(cases), CASES_PER_SESSION):
        path = root / f"s{start}.jsonl"
        lines, parent = [], None
        for i, case in enumerate(cases[start : start + CASES_PER_SESSION], start=start):
            event = msg(f"c{i}", f"{_marker(i)}\n{case.text}", parent=parent)
            lines.append(json.dumps(event, ensure_ascii=False))
            parent = f"c{i}"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        import_jsonl(
            store.engine, path, session_id=f"u{start}", session_key=f"{KEY_PREFIX}:{start}"
        )
    store.reconcile()
    try:
        yield store, cases
    finally:
        store.close()


def _history_texts(store: TranscriptStore, count: int) -> dict[str, str]:
    """Each case's text as ``sessions_history`` shows it, by marker."""
    shown: dict[str, str] = {}
    for start in range(0, count, CASES_PER_SESSION):
        answer = sessions_history(
            store, CALLER, {"sessionKey": f"{KEY_PREFIX}:{start}", "limit": CASES_PER_SESSION}
        )
        for message in answer["messages"]:
            content = message["content"]
            text = content if isinstance(content, str) else json.dumps(content)
            shown[text.split("\n", 1)[0]] = text
    return shown


def _leaks(store: TranscriptStore, cases: list[Case]) -> dict[int, list[str]]:
    """What each case shows of its secrets through search snippets or history, by index."""
    histories = _history_texts(store, len(cases))
    assert len(histories) == len(cases)
    leaks: dict[int, list[str]] = {}
    for i, case in enumerate(cases):
        hits = sessions_search(store, CALLER, {"query": _marker(i), "limit": 1})["results"]
        assert [h["messageId"] for h in hits] == [f"c{i}"], i
        found = case.leaks(hits[0]["snippet"]) + case.leaks(histories[_marker(i)])
        if found:
            leaks[i] = found
    return leaks


def test_openclaw_vectors_leak_nothing_through_search_or_history(
    openclaw_store: tuple[TranscriptStore, list[Case]],
) -> None:
    store, cases = openclaw_store
    leaks = _leaks(store, cases)
    openclaw = [c for c in cases if c.family == "openclaw"]
    assert len(openclaw) > 200  # every text vector of the default mode (docs/redaction.md)
    assert {cases[i].origin: f for i, f in leaks.items() if cases[i].family == "openclaw"} == {}
    public = len(cases) - len(openclaw)
    public_leaks = sum(1 for i in leaks if cases[i].family != "openclaw")
    assert public > 500
    assert public_leaks <= MAX_PUBLIC_LEAK_RATE * public, public_leaks


# The counts: every upstream case is in the fixtures (the counts were taken from the upstream
# files by an independent count when the fixtures were extracted).


@pytest.mark.sqlite_only
def test_openclaw_fixture_holds_every_test_of_the_upstream_file() -> None:
    data = load("openclaw.json")
    assert data["source"]["commit"] == "046080c813ee4b4b486dee57ed364ed7ac22471a"
    assert data["counted_tests"] == data["tests"] == 175
    assert len({v["line"] for v in data["vectors"]}) == data["counted_tests"]
    assert len(data["vectors"]) == 419
    assert sum(not v["literal"] for v in data["vectors"]) == 22


@pytest.mark.sqlite_only
def test_gitleaks_fixture_holds_every_sample_list_of_the_rules() -> None:
    data = load("gitleaks.json")
    lists = {(v["path"], v["assigned_at"]) for v in data["vectors"]}
    lists |= {(v["path"], v["assigned_at"]) for v in data["empty_lists"]}
    assert len(lists) == data["counted_assignments"] == 390
    kinds: dict[str, int] = {}
    for v in data["vectors"]:
        kinds[v["kind"]] = kinds.get(v["kind"], 0) + 1
    assert kinds == {"literal": 601, "generated": 222, "generated-from-literal": 23, "computed": 81}


@pytest.mark.sqlite_only
def test_detect_secrets_fixture_holds_every_parametrized_case() -> None:
    data = load("detect_secrets.json")
    assert len(data["vectors"]) == data["counted_cases"] == 455
    assert sum(not v["literal"] for v in data["vectors"]) == 4  # LONG_LINE: random digits


@pytest.mark.sqlite_only
def test_every_vector_names_its_source_line() -> None:
    for name in ("openclaw.json", "gitleaks.json", "detect_secrets.json"):
        data = load(name)
        assert len(data["source"]["commit"]) == 40
        for v in data["vectors"]:
            assert isinstance(v["line"], int) and v["line"] > 0, (name, v)


@pytest.mark.sqlite_only
def test_fixture_readme_states_the_counts() -> None:
    readme = (Path(__file__).parent / "fixtures" / "redaction_upstream" / "README.md").read_text(
        encoding="utf-8"
    )
    for figure in ("419 vectors from 175 tests", "927 samples", "455 cases"):
        assert figure in readme

"""The typed results (``openclaw_fts.results``) agree with the tools' JSON output schemas key for
key, describe what the store really returns, and type-check a host's reads under mypy."""

from __future__ import annotations

import subprocess
import sys
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import pytest
from factories import chain

import openclaw_fts
from openclaw_fts import Caller, TranscriptStore, results, tools

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples" / "sessions"
#: Seconds a mypy run may take on a loaded machine.
COMMAND_TIMEOUT = 300

_SEARCH = tools.SESSIONS_SEARCH_OUTPUT_SCHEMA["anyOf"]
_HISTORY = tools.SESSIONS_HISTORY_OUTPUT_SCHEMA["anyOf"]

#: Each TypedDict and the JSON Schema object it describes.
SCHEMA_OBJECTS: list[tuple[type[Any], dict[str, Any]]] = [
    (results.SearchResult, _SEARCH[0]),
    (results.SearchHit, _SEARCH[0]["properties"]["results"]["items"]),
    (results.BatchSearchResult, _SEARCH[1]),
    (results.BatchSearchHit, _SEARCH[1]["properties"]["results"]["items"]),
    (results.StatusResult, _SEARCH[2]),
    (results.HistoryResult, _HISTORY[0]),
    (results.StatusResult, _HISTORY[1]),
    (results.SessionsListResult, tools.SESSIONS_LIST_OUTPUT_SCHEMA),
]


def _keys(td: type[Any]) -> tuple[set[str], set[str]]:
    required: frozenset[str] = td.__required_keys__
    optional: frozenset[str] = td.__optional_keys__
    return set(required), set(optional)


@pytest.mark.parametrize(
    ("td", "schema"),
    SCHEMA_OBJECTS,
    ids=[f"{td.__name__}-{i}" for i, (td, _) in enumerate(SCHEMA_OBJECTS)],
)
def test_typed_dict_keys_match_the_output_schema(td: type[Any], schema: dict[str, Any]) -> None:
    required, optional = _keys(td)
    assert schema["additionalProperties"] is False
    assert required | optional == set(schema["properties"]), td.__name__
    assert required == set(schema.get("required", ())), td.__name__


def test_literal_fields_match_the_schemas_enums_and_consts() -> None:
    for td, schema in SCHEMA_OBJECTS:
        hints = typing.get_type_hints(td)
        for name, prop in schema["properties"].items():
            allowed = prop.get("enum", [prop["const"]] if "const" in prop else None)
            if allowed is None:
                continue
            hint = hints[name]
            assert typing.get_origin(hint) is Literal, (td.__name__, name, hint)
            assert set(typing.get_args(hint)) == set(allowed), (td.__name__, name)


def test_the_union_answers_hold_the_result_and_status_shapes() -> None:
    assert set(typing.get_args(results.SearchAnswer)) == {
        results.SearchResult,
        results.BatchSearchResult,
        results.StatusResult,
    }
    assert set(typing.get_args(results.HistoryAnswer)) == {
        results.HistoryResult,
        results.StatusResult,
    }
    for name in results.__all__:
        assert getattr(results, name) is not None
    for name in ("SearchResult", "HistoryResult", "StatusResult", "SearchAnswer", "IndexStatus"):
        assert getattr(openclaw_fts, name) is getattr(results, name)
        assert name in openclaw_fts.__all__


def _conforms(value: Mapping[str, Any], td: type[Any]) -> None:
    required, optional = _keys(td)
    assert required <= set(value), (td.__name__, sorted(required - set(value)))
    assert set(value) <= required | optional, (
        td.__name__,
        sorted(set(value) - required - optional),
    )


def test_the_stores_other_results_have_exactly_their_typed_keys(
    store: TranscriptStore, tmp_path: Path
) -> None:
    caller = Caller("agent:main:main")
    store.create_session("s1", "agent:main:main")
    store.append_many("s1", chain(["deploy the staging server", "staging deploy done"]))
    _conforms(store.index_status(), results.IndexStatus)
    report = store.import_dir(EXAMPLES)
    _conforms(report, results.ImportResult)
    assert report["outcomes"]
    for outcome in report["outcomes"]:
        _conforms(outcome, results.ImportOutcome)
    _conforms(store.reconcile(), results.ReconcileResult)
    _conforms(store.rebuild(["s1"]), results.RebuildResult)
    # The store always fills the hit fields OpenClaw's schema leaves optional.
    out = store.search(caller, "staging")
    assert "status" not in out and out["results"]
    for hit in out["results"]:
        _conforms(hit, results.SearchHit)
        assert "sessionId" in hit and "messageId" in hit
    history = store.history(caller, "agent:main:main")
    assert "messages" in history
    for message in history["messages"]:
        _conforms(message["__openclaw"], results.OpenClawMeta)


@pytest.mark.slow
def test_a_host_reads_typed_results_under_mypy_strict(tmp_path: Path) -> None:
    snippet = tmp_path / "host_results.py"
    snippet.write_text(
        "from openclaw_fts import Caller, TranscriptStore, tools\n"
        "from openclaw_fts.aio import AsyncTranscriptStore\n\n"
        "def read(store: TranscriptStore) -> str:\n"
        '    out = store.search(Caller("agent:main:main"), "deploy*", limit=5)\n'
        '    if "status" in out:\n'
        '        return out["error"]\n'
        '    snippet: str = out["results"][0]["snippet"]\n'
        '    score: float = out["results"][0]["score"]\n'
        '    batch = store.search(Caller("agent:main:main"), None, queries=["a", "b"])\n'
        '    if "status" not in batch:\n'
        '        index: int = batch["results"][0]["queryIndex"]\n'
        '    ctx = store.history(Caller("agent:main:main"), "agent:main:main")\n'
        '    if "status" not in ctx:\n'
        '        n: int = ctx["bytes"]\n'
        '    pending: int = store.index_status()["pending"]\n'
        '    imported: int = store.import_dir("x")["imported"]\n'
        '    ran: bool = store.reconcile()["ran"]\n'
        '    tool = tools.sessions_search(store, Caller("agent:main:main"), {"query": "x"})\n'
        '    if "results" in tool and "batch" not in tool:\n'
        '        first: str = tool["results"][0]["sessionKey"]\n'
        "    return snippet\n\n"
        "async def aread(store: AsyncTranscriptStore) -> None:\n"
        '    out = await store.search(Caller("agent:main:main"), "deploy*")\n'
        '    if "status" not in out:\n'
        '        texts = [hit["snippet"] for hit in out["results"]]\n'
        '    many = await store.search(Caller("a:b:c"), None, queries=["x", "y"], limit=3)\n'
        '    if "status" not in many:\n'
        '        which: int = many["results"][0]["queryIndex"]\n'
        '    made: str = (await store.create_session("s", "a:b:c", archived=True)).session_id\n'
    )
    wrong = tmp_path / "host_results_wrong.py"
    wrong.write_text(
        "from openclaw_fts import Caller, TranscriptStore\n\n"
        "def read(store: TranscriptStore) -> str:\n"
        '    out = store.search(Caller("agent:main:main"), "deploy*")\n'
        '    return out["results"][0]["snipet"]\n'
    )
    ok = _mypy(snippet)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = _mypy(wrong)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    # Unnarrowed, the error answer has no "results"; and a misspelt key is caught.
    assert 'TypedDict "StatusResult" has no key "results"' in bad.stdout
    assert '"snipet"' in bad.stdout


def _mypy(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(path)],
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        cwd=REPO,
    )

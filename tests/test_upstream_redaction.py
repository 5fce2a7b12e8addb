"""The upstream redaction vectors, verbatim (tests/fixtures/redaction_upstream/): the counts
of every fixture add up to the cases of the upstream files."""

from __future__ import annotations

from pathlib import Path

import pytest
from upstream_vectors import load

from openclaw_fts import Caller

pytestmark = pytest.mark.both_engines

#: Texts per imported session file.
CASES_PER_SESSION = 100
KEY_PREFIX = "agent:main:upstream"
CALLER = Caller("agent:main:main", visibility="all")


def _marker(i: int) -> str:
    return f"upstreamcase{i}"


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

"""A one-word search of a wide caller walks the word's impact list (``index/impact.py``) once
the word is frequent: it must return what the exact path returns (same hits, same order), keep
doing so as rows are appended, rewound and deleted, and a database upgraded with data must
get the lists of its frequent words (the migration's backfill)."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import PARTITIONED
from factories import T0, chain
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine, inspect, text

from openclaw_fts import AgentToAgent, Caller, TranscriptStore, migrate
from openclaw_fts.check import check
from openclaw_fts.index import base
from openclaw_fts.index.impact import FREQUENT_TERM_MIN_DOCS, LIST_MIN_ROWS, overlap
from openclaw_fts.index.sqlite import impact as sqlite_impact
from openclaw_fts.index.sqlite import read as sqlite_read

pytestmark = pytest.mark.both_engines

#: (agent, key) of each session; the callers are agent:main:me (agent main).
SESSIONS = (
    ("main", "agent:main:a"),
    ("ops", "agent:ops:b"),
    ("main", "agent:main:c"),
    ("ops", "agent:ops:d"),
    ("main", "agent:main:me"),
)
#: Messages per session: every one holds "alpha", nine in ten "beta", so both are frequent.
PER_SESSION = FREQUENT_TERM_MIN_DOCS // len(SESSIONS) + 100
CALLERS = {
    "all": Caller("agent:main:me", visibility="all", agent_to_agent=AgentToAgent(True)),
    "agent": Caller("agent:main:me", visibility="agent"),
}
WORDS = ("alpha", "beta")
LIMIT = 10


def _text(n: int, i: int) -> str:
    """Lengths and repetitions vary, so the scores spread (with ties, as in real text)."""
    filler = " ".join(f"w{(i * 7 + k) % 97}" for k in range((i * 13 + n) % 41))
    beta = "" if i % 10 == 9 else " beta" * (1 + i % 3)
    return f"alpha{' alpha' * (i % 4)} {filler}{beta}"


@pytest.fixture
def corpus(store: TranscriptStore) -> TranscriptStore:
    for n, (agent, key) in enumerate(SESSIONS):
        store.create_session(f"s{n}", key, agent_id=agent)
        texts = [_text(n, i) for i in range(PER_SESSION)]
        store.append_many(f"s{n}", chain(texts))
    store.optimize()  # tracks the words that are frequent (both engines)
    return store


def _ids(answer: Any) -> list[tuple[str, str, float]]:
    return [(h["sessionId"], h["messageId"], h["score"]) for h in answer["results"]]


def _both_paths(
    store: TranscriptStore,
    monkeypatch: pytest.MonkeyPatch,
    caller: Caller,
    query: str,
    **filters: Any,
) -> tuple[list[tuple[str, str, float]], list[tuple[str, str, float]]]:
    backend = type(base.backend_for(store.engine.dialect.name))
    monkeypatch.setattr(backend, "IMPACT_LISTS", True)
    fast = _ids(store.search(caller, query, limit=LIMIT, **filters))
    monkeypatch.setattr(backend, "IMPACT_LISTS", False)
    exact = _ids(store.search(caller, query, limit=LIMIT, **filters))
    monkeypatch.setattr(backend, "IMPACT_LISTS", True)
    return fast, exact


def _make_pending(store: TranscriptStore, session_id: str) -> None:
    """The session indexed under an older version: pending, its rows left out of every
    search until reconciled (each ranking statement then carries the pending filter)."""
    from openclaw_fts.rows import INDEX_VERSION

    with store.engine.begin() as conn:
        conn.execute(
            text("UPDATE openclaw_index_state SET index_version = :old WHERE session_id = :s"),
            {"old": INDEX_VERSION - 1, "s": session_id},
        )
    assert store.search(CALLERS["all"], "alpha").get("indexing") is True


def _same_hits(store: TranscriptStore, monkeypatch: pytest.MonkeyPatch, walks: list[int]) -> None:
    before = len(walks)
    for caller in CALLERS.values():
        for word in WORDS:
            fast, exact = _both_paths(store, monkeypatch, caller, word)
            assert len(exact) == LIMIT
            assert [h[:2] for h in fast] == [h[:2] for h in exact], (caller.visibility, word)
            # "higher is better", in result order
            assert [h[2] for h in fast] == sorted((h[2] for h in fast), reverse=True)
    assert len(walks) - before == len(CALLERS) * len(WORDS)  # every one walked a list


def test_a_frequent_word_walks_its_list_and_finds_what_the_exact_path_finds(
    corpus: TranscriptStore, monkeypatch: pytest.MonkeyPatch, walks: list[int]
) -> None:
    _same_hits(corpus, monkeypatch, walks)


def test_other_queries_take_the_exact_path(
    corpus: TranscriptStore, monkeypatch: pytest.MonkeyPatch, walks: list[int]
) -> None:
    caller = CALLERS["all"]
    for query in ("alpha beta", '"alpha beta"', "alph*", "alpha OR beta", "w3"):
        fast, exact = _both_paths(corpus, monkeypatch, caller, query)
        assert fast == exact
    narrow = Caller("agent:main:me", visibility="self")
    assert _both_paths(corpus, monkeypatch, narrow, "alpha")[0]
    fast, exact = _both_paths(corpus, monkeypatch, caller, "alpha", session_key="agent:main:a")
    assert fast == exact
    # ordered recent: no list walk either (SQLite scores the rows as the list would: below)
    fast, exact = _both_paths(corpus, monkeypatch, caller, "alpha", order="recent")
    assert walks == []
    assert [h[:2] for h in fast] == [h[:2] for h in exact]
    if corpus.engine.dialect.name == "sqlite":
        _check_newest_scores(corpus, monkeypatch, "alpha", fast, exact)
    else:
        assert fast == exact


def test_a_caller_who_sees_few_of_the_list_gets_the_exact_path(
    corpus: TranscriptStore, monkeypatch: pytest.MonkeyPatch, walks: list[int]
) -> None:
    """An ``agent`` caller whose agent holds fewer of the word's messages than the limit asks
    for: the list's visible rows cannot answer, the exact path does (every match)."""
    corpus.create_session("lone", "agent:lone:me", agent_id="lone")
    few = ["alpha among the few", "only alpha here", "beta without the other"]
    corpus.append_many("lone", chain(few))
    lone = Caller("agent:lone:me", visibility="agent")
    fast, exact = _both_paths(corpus, monkeypatch, lone, "alpha")
    assert fast == exact
    assert {h[:2] for h in fast} == {("lone", "m0"), ("lone", "m1")}
    assert walks == []


def test_appended_rows_join_the_lists(
    corpus: TranscriptStore, monkeypatch: pytest.MonkeyPatch, walks: list[int]
) -> None:
    # the best scores there can be: the word alone (ts_rank's best; ties go to the newest) and
    # the word six times with nothing else (bm25's best)
    short = ["alpha"] * 3 + ["alpha " * 6] * 3
    corpus.append_many("s1", chain(short, start=PER_SESSION, parent=f"m{PER_SESSION - 1}"))
    fast, exact = _both_paths(corpus, monkeypatch, CALLERS["all"], "alpha")
    assert [h[:2] for h in fast] == [h[:2] for h in exact]
    new = {("s1", f"m{PER_SESSION + k}") for k in range(len(short))}
    assert len(new & {h[:2] for h in fast}) >= 3
    _same_hits(corpus, monkeypatch, walks)


def test_a_tie_longer_than_the_limit_is_broken_as_the_exact_path_breaks_it(
    corpus: TranscriptStore, monkeypatch: pytest.MonkeyPatch, walks: list[int]
) -> None:
    """Many rows of one word alone, in two sessions (PostgreSQL's best score, a tie far longer
    than the limit): the walk reads every row tied at its cut, and the order among them is
    the exact path's (newest first, then key, id)."""
    tied = ["alpha"] * (LIMIT * 12)
    for n in (1, 3):
        corpus.append_many(f"s{n}", chain(tied, start=PER_SESSION, parent=f"m{PER_SESSION - 1}"))
    for limit in (LIMIT, LIMIT + 5):
        backend = type(base.backend_for(corpus.engine.dialect.name))
        fast = _ids(corpus.search(CALLERS["all"], "alpha", limit=limit))
        monkeypatch.setattr(backend, "IMPACT_LISTS", False)
        exact = _ids(corpus.search(CALLERS["all"], "alpha", limit=limit))
        monkeypatch.setattr(backend, "IMPACT_LISTS", True)
        assert [h[:2] for h in fast] == [h[:2] for h in exact]
    assert len(walks) == 2


def test_rewinds_and_deleted_sessions_leave_the_lists(
    corpus: TranscriptStore, monkeypatch: pytest.MonkeyPatch, walks: list[int]
) -> None:
    best = _both_paths(corpus, monkeypatch, CALLERS["all"], "alpha")[0]
    rewound_session = best[0][0]
    rewound_seq = int(best[0][1][1:])
    corpus.rewind(rewound_session, f"m{rewound_seq - 1}")
    corpus.reconcile()
    _same_hits(corpus, monkeypatch, walks)
    after = {h[:2] for h in _both_paths(corpus, monkeypatch, CALLERS["all"], "alpha")[0]}
    assert (rewound_session, f"m{rewound_seq}") not in after
    assert corpus.delete_session("s0")
    _same_hits(corpus, monkeypatch, walks)
    assert all(h[0] != "s0" for h in _both_paths(corpus, monkeypatch, CALLERS["all"], "beta")[0])
    assert check(corpus.engine).ok


def test_top10_overlap_on_a_generated_corpus(
    corpus: TranscriptStore, monkeypatch: pytest.MonkeyPatch, walks: list[int]
) -> None:
    """Rows written after a word became tracked keep the average length of that moment
    (SQLite); the overlap of the fast top 10 with bm25's stays at least 0.95."""
    more = [_text(9, i) + " extra words" * (i % 5) for i in range(LIST_MIN_ROWS)]
    corpus.append_many("s2", chain(more, start=PER_SESSION, parent=f"m{PER_SESSION - 1}"))
    for caller in CALLERS.values():
        for word in WORDS:
            fast, exact = _both_paths(corpus, monkeypatch, caller, word)
            assert overlap([hash(h[:2]) for h in fast], [hash(h[:2]) for h in exact]) >= 0.95


def test_an_upgraded_database_gets_the_lists_of_its_frequent_words(
    db_url: str,
    db_engine: str,
    corpus: TranscriptStore,
    monkeypatch: pytest.MonkeyPatch,
    walks: list[int],
) -> None:
    if db_engine == PARTITIONED:
        pytest.skip("the partitioned layout is made at head, never downgraded")
    engine = create_engine(db_url)
    migrate.downgrade(engine, migrate.STATISTICS_REVISION)
    assert not ({"message_impact", "message_impact_terms"} & set(inspect(engine).get_table_names()))
    migrate.upgrade(engine)  # the backfill tracks "alpha" and "beta" again
    engine.dispose()
    _same_hits(corpus, monkeypatch, walks)


def test_check_reports_a_list_that_disagrees_and_rebuild_repairs_it(
    corpus: TranscriptStore, monkeypatch: pytest.MonkeyPatch, walks: list[int]
) -> None:
    assert check(corpus.engine).impact_drift == {}
    with corpus.engine.begin() as conn:  # behind the plugin's back
        conn.execute(text("DELETE FROM message_impact WHERE term = 'beta'"))
    report = check(corpus.engine)
    assert not report.ok
    assert set(report.impact_drift) == {"beta"}
    assert report.impact_drift["beta"]["missing"] >= LIST_MIN_ROWS
    assert report.as_dict()["impactDrift"] == report.impact_drift
    corpus.rebuild()
    corpus.reconcile()
    assert check(corpus.engine).ok
    _same_hits(corpus, monkeypatch, walks)


def test_the_lists_survive_the_partitioned_layout_undone(
    db_url: str,
    db_engine: str,
    corpus: TranscriptStore,
    monkeypatch: pytest.MonkeyPatch,
    walks: list[int],
) -> None:
    if db_engine != PARTITIONED:
        pytest.skip("only the partitioned layout can be undone")
    engine = create_engine(db_url)
    migrate.unpartition_by_agent(engine)
    engine.dispose()  # the store's pooled connections read the layout again by themselves
    short = ["alpha"] * 3
    corpus.append_many("s1", chain(short, start=PER_SESSION, parent=f"m{PER_SESSION - 1}"))
    _same_hits(corpus, monkeypatch, walks)
    assert corpus.delete_session("s1")
    assert check(corpus.engine).ok
    _same_hits(corpus, monkeypatch, walks)


def test_appended_rows_of_any_script_join_the_lists_with_their_exact_lengths(
    corpus: TranscriptStore, monkeypatch: pytest.MonkeyPatch, walks: list[int]
) -> None:
    # bm25's best rows (the word six times, little else) whose token counts the writer must
    # get right: punctuation and underscores split words, accents fold, other scripts count
    tricky = [
        "alpha_alpha-alpha.alpha/alpha:alpha",
        "alpha alpha alpha alpha alpha alpha x_1",
        "Alpha ALPHA alpha alpha alpha alpha Café",
        "alpha alpha alpha alpha alpha alpha 東京 ünïcode",
        "alpha alpha alpha alpha alpha alpha 🚀 it's",
    ]
    corpus.append_many("s1", chain(tricky, start=PER_SESSION, parent=f"m{PER_SESSION - 1}"))
    fast, exact = _both_paths(corpus, monkeypatch, CALLERS["all"], "alpha")
    assert [h[:2] for h in fast] == [h[:2] for h in exact]
    # the same scores up to the word's constant factor (SQLite's IDF): the lists' stored
    # occurrences and lengths are the ones the engine scores with (PostgreSQL: float4)
    assert [h[2] / fast[0][2] for h in fast] == pytest.approx(
        [h[2] / exact[0][2] for h in exact], rel=1e-6
    )
    if corpus.engine.dialect.name == "sqlite":  # bm25's best rows (ts_rank prefers shorter)
        new = {("s1", f"m{PER_SESSION + k}") for k in range(len(tricky))}
        assert new <= {h[:2] for h in fast}
    assert check(corpus.engine).impact_drift == {}


#: The search's own filters a list walk applies (messages ``i`` of every session are at
#: ``T0 + i`` seconds, even ``i`` the user's): each keeps a part of the list's rows.
FILTERS: tuple[dict[str, Any], ...] = (
    {"role": "user"},
    {"role": "assistant"},
    {"since": T0 + 300_000},
    {"until": T0 + 199_000},
    {"role": "user", "since": T0 + 100_000, "until": T0 + 400_000},
)


def _passes(store: TranscriptStore, caller: Caller, word: str, filters: dict[str, Any]) -> None:
    """The oracle: every hit of the filtered search passes the filter."""
    for hit in store.search(caller, word, limit=LIMIT, **filters)["results"]:
        assert hit["role"] == filters.get("role", hit["role"])
        assert filters.get("since", hit["timestamp"]) <= hit["timestamp"]
        assert hit["timestamp"] <= filters.get("until", hit["timestamp"])


def test_a_filtered_search_walks_the_list_and_finds_what_the_exact_path_finds(
    corpus: TranscriptStore, monkeypatch: pytest.MonkeyPatch, walks: list[int]
) -> None:
    """``role``, ``since`` and ``until`` are applied while the list is walked (issue #37): the
    hits, their order and their scores are the exact path's, which filters before its limit."""
    for caller in CALLERS.values():
        for word in WORDS:
            for filters in FILTERS:
                before = len(walks)
                fast, exact = _both_paths(corpus, monkeypatch, caller, word, **filters)
                assert len(exact) == LIMIT
                assert [h[:2] for h in fast] == [h[:2] for h in exact], (word, filters)
                assert len(walks) - before == 1, (caller.visibility, word, filters)
                _passes(corpus, caller, word, filters)


def test_a_filter_the_list_cannot_answer_takes_the_exact_path(
    corpus: TranscriptStore, monkeypatch: pytest.MonkeyPatch, walks: list[int]
) -> None:
    """A window so narrow that the list's best rows hold fewer matches in it than the limit
    (the last few messages of each session): the walk gives up and the exact path answers,
    with every match in the window, not only the listed ones."""
    window = {"since": T0 + (PER_SESSION - 3) * 1000}
    for caller in CALLERS.values():
        fast, exact = _both_paths(corpus, monkeypatch, caller, "alpha", **window)
        assert fast == exact
        assert len(exact) == 3 * sum(key.startswith("agent:main") for _, key in SESSIONS) or (
            caller.visibility == "all" and len(exact) == LIMIT
        )
        _passes(corpus, caller, "alpha", window)
    assert walks == []


def _out_of_time_order(corpus: TranscriptStore) -> int:
    """Two sessions whose row ids do not follow their times: ``old``, written last but older
    than every other (its rows are in every ``until`` window, with the highest ids), and
    ``late``, written after it, whose first message opens a ``since`` window (the time
    returned) that the other sessions' last messages, with lower ids, are in too."""
    corpus.create_session("old", "agent:main:old", agent_id="main")
    old = chain([_text(9, i) for i in range(300)], prefix="old")
    for event in old:
        event["timestamp"] = event["timestamp"] - 10**9
    corpus.append_many("old", old)
    corpus.create_session("late", "agent:ops:late", agent_id="ops")
    late = chain([_text(8, i) for i in range(400)], prefix="late")
    opens = T0 + (PER_SESSION - 400) * 1000 + 500
    for n, event in enumerate(late):
        event["timestamp"] = opens + n * 1000
    corpus.append_many("late", late)
    return opens


def _windows(opens: int) -> tuple[dict[str, Any], ...]:
    """The windows :func:`_out_of_time_order`'s rows are searched with."""
    return (
        {"since": opens},
        {"until": T0 + 150_000},
        {"since": opens, "until": opens + 200_000},
        {"role": "user", "until": T0 + 150_000},
    )


def test_a_window_written_out_of_time_order_walks_the_list_with_every_row_of_it(
    corpus: TranscriptStore, monkeypatch: pytest.MonkeyPatch, walks: list[int]
) -> None:
    """SQLite bounds the ids a walk may keep by the window's rows (``impact.id_bound``), so
    rows whose ids do not follow their times must stay in: a session written after the
    others but older (an import: its rows are in every ``until`` window, with the highest
    ids), and one written last whose first message opens a ``since`` window that the other
    sessions' last messages, with lower ids, are in too. Each window answers as the exact
    path does, with the bound and without it (a window wider than it allows); a window that
    holds no row answers nothing."""
    opens = _out_of_time_order(corpus)
    windows = _windows(opens)
    for bound in (sqlite_impact.WINDOW_BOUND_ROWS, 0):
        monkeypatch.setattr(sqlite_impact, "WINDOW_BOUND_ROWS", bound)
        # a connection keeps the bounds it read until the database changes: read them again
        monkeypatch.setattr(sqlite_read, "_WINDOW_MEMO", f"bounds read with {bound}")
        for caller in CALLERS.values():
            for window in windows:
                before = len(walks)
                fast, exact = _both_paths(corpus, monkeypatch, caller, "alpha", **window)
                assert len(exact) == LIMIT, window
                assert [h[:2] for h in fast] == [h[:2] for h in exact], (bound, window)
                assert len(walks) - before == 1, (caller.visibility, window)
                _passes(corpus, caller, "alpha", window)
        # rows on the far side of the window's edge in ids are among the best ones
        since, _ = _both_paths(corpus, monkeypatch, CALLERS["all"], "alpha", since=opens)
        assert {session for session, _, _ in since} - {"late"}
        until, _ = _both_paths(corpus, monkeypatch, CALLERS["all"], "alpha", until=T0 + 150_000)
        assert "old" in {session for session, _, _ in until}
    if corpus.engine.dialect.name == "sqlite":  # answered from the time index alone
        before = len(walks)
        for caller in CALLERS.values():
            nothing = _both_paths(corpus, monkeypatch, caller, "alpha", since=opens + 10**9)
            assert nothing == ([], [])
        assert len(walks) - before == len(CALLERS)


def test_a_window_bounds_the_exact_statement_by_its_ids_with_every_row_of_it(
    corpus: TranscriptStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A wide caller's query without a list (a prefix, two words, a phrase, an OR, a word too
    rare to be tracked) takes the exact statement; with a time window SQLite gives FTS5 the
    window's id bounds (``impact.id_bound``) beside the MATCH, so that only the matches inside
    them are joined and scored. Over rows whose ids do not follow their times, each window
    answers as the statement without the bound does (hits, order, scores), with the bound
    and without it (a window wider than it allows); a window that holds no row answers
    nothing."""
    windows = (*_windows(_out_of_time_order(corpus)), {"role": "assistant", "since": T0})
    queries = ("alph*", "alpha beta", '"alpha beta"', "alpha OR w3", "w3", "alpha w3")
    found = 0
    for bound in (sqlite_impact.WINDOW_BOUND_ROWS, 0):
        monkeypatch.setattr(sqlite_impact, "WINDOW_BOUND_ROWS", bound)
        # a connection keeps the bounds it read until the database changes: read them again
        monkeypatch.setattr(sqlite_read, "_WINDOW_MEMO", f"exact bounds read with {bound}")
        for caller in CALLERS.values():
            for query in queries:
                for window in windows:
                    for order in ("relevance", "recent"):
                        fast, exact = _both_paths(
                            corpus, monkeypatch, caller, query, order=order, **window
                        )
                        assert fast == exact, (caller.visibility, query, window, order)
                        found += bool(exact)
                        _passes(corpus, caller, query, window)
    assert found >= len(CALLERS) * len(queries) * 2 * 2  # most windows hold hits
    for caller in CALLERS.values():
        for query in queries:
            nothing = _both_paths(corpus, monkeypatch, caller, query, since=T0 + 10**10)
            assert nothing == ([], [])


def test_a_windows_id_bounds_are_read_again_once_the_index_changed(
    corpus: TranscriptStore, monkeypatch: pytest.MonkeyPatch, walks: list[int]
) -> None:
    """A connection keeps the id bounds of the windows it read until the database changes
    (SQLite, ``read._window_ids``). Once every session is deleted, row ids start again from 1:
    a new session's rows in the same window then have ids below the bound read before, which
    would leave its best rows out; the answers stay the exact path's, from the list."""
    window = {"since": T0 + (PER_SESSION - 400) * 1000}
    for caller in CALLERS.values():
        fast, exact = _both_paths(corpus, monkeypatch, caller, "alpha", **window)
        assert [h[:2] for h in fast] == [h[:2] for h in exact]
    for n in range(len(SESSIONS)):
        assert corpus.delete_session(f"s{n}")
    corpus.create_session("fresh", "agent:main:fresh", agent_id="main")
    fresh = chain([_text(7, i) for i in range(PER_SESSION)], prefix="fresh")
    for event in fresh:
        event["timestamp"] = event["timestamp"] + (PER_SESSION - 400) * 1000
    corpus.append_many("fresh", fresh)
    for caller in CALLERS.values():
        before = len(walks)
        fast, exact = _both_paths(corpus, monkeypatch, caller, "alpha", **window)
        assert len(walks) - before == 1, caller.visibility  # the list answered
        assert len(exact) == LIMIT
        assert [h[:2] for h in fast] == [h[:2] for h in exact], caller.visibility
        _passes(corpus, caller, "alpha", window)


# -- the ``recent`` order -----------------------------------------------------------------------

#: Queries ordered ``recent``: frequent words, two words, a phrase, a prefix, a rarer word
#: (not tracked) alone, beside a frequent one (the query still requires it) and as an
#: alternative (it does not). On PostgreSQL they take every plan of ``read.RecentPlan``:
#: ``newest`` (one tracked word, a prefix, an OR), ``newest-sparse`` (two tracked words, a
#: phrase of them), ``sparse`` (an untracked word required).
RECENT_QUERIES = (
    "alpha",
    "beta",
    "alpha beta",
    '"alpha beta"',
    "alph*",
    "w3",
    "alpha w3",
    "w3 OR beta",
)


@pytest.fixture
def newest_walks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the searches answered by SQLite's newest-first walk (``_newest_hits``)."""
    from openclaw_fts.index.sqlite import read as sqlite_read

    used: list[int] = []
    walk = sqlite_read._newest_hits

    def counted(*args: Any, **kwargs: Any) -> Any:
        found = walk(*args, **kwargs)
        used.extend([1] if found is not None else [])
        return found

    monkeypatch.setattr(sqlite_read, "_newest_hits", counted)
    return used


@pytest.fixture
def recent_plans(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The plans PostgreSQL chose for searches ordered ``recent`` (``_recent_plan``)."""
    from openclaw_fts.index.postgresql.read import PostgresSearch

    chosen: list[str] = []
    plan = PostgresSearch._recent_plan

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        found = plan(self, *args, **kwargs)
        chosen.append(found)
        return found

    monkeypatch.setattr(PostgresSearch, "_recent_plan", counted)
    return chosen


@pytest.fixture
def recent_rests(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The second statements' plans of PostgreSQL's searches ordered ``recent`` whose newest
    rows held too few matches (``read.recent_rest``)."""
    from openclaw_fts.index.postgresql import read as pg_read

    ran: list[str] = []
    rest = pg_read.recent_rest

    def counted(*args: Any) -> Any:
        found = rest(*args)
        ran.extend([found] if found is not None else [])
        return found

    monkeypatch.setattr(pg_read, "recent_rest", counted)
    return ran


def _same_newest(
    store: TranscriptStore,
    monkeypatch: pytest.MonkeyPatch,
    filters: tuple[dict[str, Any], ...],
    newest_walks: list[int],
) -> None:
    """Every caller, query and filter ordered ``recent``: the hits and their order are the
    exact path's, with the walks' bounds as they are and small (so that the newest rows often
    hold too few matches: the walk gives up, or on PostgreSQL the same statement reads every
    match); so are the scores, except those of a tracked word that SQLite's newest-first walk
    answered (:func:`_check_newest_scores`)."""
    from openclaw_fts.index.postgresql import read as pg_read
    from openclaw_fts.index.sqlite import read as sqlite_read

    _compare_newest(store, monkeypatch, filters, newest_walks)
    with monkeypatch.context() as small:
        small.setattr(sqlite_read, "RECENT_WALK_ROWS", 3 * LIMIT)
        small.setattr(sqlite_read, "RECENT_MIN_MATCHES", LIMIT)
        small.setattr(pg_read, "RECENT_WALK_ROWS", 3 * LIMIT)
        small.setattr(pg_read, "RECENT_SPARSE_WALK_ROWS", LIMIT)
        _compare_newest(store, monkeypatch, filters, newest_walks)


def _idf(store: TranscriptStore, monkeypatch: pytest.MonkeyPatch, word: str) -> float:
    """What the exact path's score of ``word`` is, per unit of the list's score: the word's
    bm25 IDF (one number for the query), measured on a search by relevance that walks the list."""
    fast, exact = _both_paths(store, monkeypatch, CALLERS["all"], word)
    ratios = [e[2] / f[2] for f, e in zip(fast, exact, strict=True)]
    assert ratios and ratios == pytest.approx([ratios[0]] * len(ratios), rel=1e-9)
    return ratios[0]


def _check_newest_scores(
    store: TranscriptStore,
    monkeypatch: pytest.MonkeyPatch,
    word: str,
    fast: list[tuple[str, str, float]],
    exact: list[tuple[str, str, float]],
) -> None:
    """SQLite's newest-first walk of a tracked word scores its rows as the word's list does (the
    score the same search by relevance shows, bm25 without its IDF): the exact path's bm25
    divided by the word's IDF, higher for more occurrences in a shorter message."""
    idf = _idf(store, monkeypatch, word)
    assert [f[2] for f in fast] == pytest.approx([e[2] / idf for e in exact], rel=1e-9)
    assert all(f[2] > 0 for f in fast)


def _compare_newest(
    store: TranscriptStore,
    monkeypatch: pytest.MonkeyPatch,
    filters: tuple[dict[str, Any], ...],
    newest_walks: list[int],
) -> None:
    sqlite = store.engine.dialect.name == "sqlite"
    for caller in CALLERS.values():
        for query in RECENT_QUERIES:
            for extra in filters:
                before = len(newest_walks)
                fast, exact = _both_paths(
                    store, monkeypatch, caller, query, order="recent", **extra
                )
                where = (caller.visibility, query, extra)
                assert exact, where
                assert [h[:2] for h in fast] == [h[:2] for h in exact], where
                if sqlite and query in WORDS and len(newest_walks) > before:
                    _check_newest_scores(store, monkeypatch, query, fast, exact)
                else:
                    assert fast == exact, where


def test_recent_order_walks_the_newest_matches_and_finds_what_the_exact_path_finds(
    corpus: TranscriptStore,
    monkeypatch: pytest.MonkeyPatch,
    newest_walks: list[int],
    recent_plans: list[str],
    recent_rests: list[str],
) -> None:
    """Every session of the corpus holds messages at the same times, so row ids do not follow
    time: the newest-first walk of the newest session's rows must take in the other sessions'
    rows as new as the ones it kept (ties broken by key, then id), as the exact path does."""
    _same_newest(corpus, monkeypatch, ({}, *FILTERS), newest_walks)
    engine = corpus.engine.dialect.name
    assert newest_walks or engine != "sqlite"
    if engine == "postgresql":  # every plan was compared with the exact statement
        assert set(recent_plans) == {"exact", "newest", "newest-sparse", "sparse"}
        # and so was each second statement, after newest rows that held too few matches (a
        # query of several tracked words reads every match in its first statement instead)
        assert set(recent_rests) == {"exact"}


def test_a_query_of_few_matches_ordered_recent_judges_its_newest_matches_first(
    corpus: TranscriptStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite: a wide caller's query of at most ``RECENT_MIN_MATCHES`` matches ordered
    ``recent`` reads its matches once and judges the visibility of the newest first
    (``_few_newest``), judging every match when those cannot prove the page (too few visible,
    or the last of them as old as a row left out: the corpus's sessions hold messages at the
    same times). Hits, order and scores are the exact path's for every caller, query and
    filter, with the bound raised so that every query without a list takes this path, and
    with the judged rows as they are and as few as can be (one per row wanted), so that both
    the judged rows and every match answer."""
    if corpus.engine.dialect.name != "sqlite":
        pytest.skip("SQLite's statement for queries of few matches")
    answered: list[int] = []
    every: list[int] = []
    few, all_matches = sqlite_read._few_newest, sqlite_read._every_match_newest

    def counted_few(*args: Any) -> Any:
        found = few(*args)
        answered.extend([1] if found is not None else [])
        return found

    def counted_every(*args: Any) -> Any:
        every.append(1)
        return all_matches(*args)

    monkeypatch.setattr(sqlite_read, "_few_newest", counted_few)
    monkeypatch.setattr(sqlite_read, "_every_match_newest", counted_every)
    # a session the `agent` caller cannot see, newest of all: its rows are judged first
    corpus.create_session("late", "agent:ops:late", agent_id="ops")
    late = chain([_text(6, i) for i in range(3 * LIMIT)], prefix="late")
    for event in late:
        event["timestamp"] = event["timestamp"] + PER_SESSION * 1000
    corpus.append_many("late", late)
    queries = [q for q in RECENT_QUERIES if q not in WORDS] + ["w5 w7", '"w3 w10"']
    with monkeypatch.context() as bounds:
        bounds.setattr(sqlite_read, "RECENT_MIN_MATCHES", 10**6)
        for judged in (sqlite_read.RECENT_FEW_ROWS, 1):
            bounds.setattr(sqlite_read, "RECENT_FEW_ROWS", judged)
            answered.clear()
            every.clear()
            for caller in CALLERS.values():
                for query in queries:
                    for extra in ({}, *FILTERS):
                        fast, exact = _both_paths(
                            corpus, monkeypatch, caller, query, order="recent", **extra
                        )
                        assert fast == exact, (caller.visibility, query, extra, judged)
            assert answered  # the path answered
            assert len(every) < len(answered)  # the judged rows proved some pages alone
            if judged == 1:
                assert every  # and some pages needed every match
        # a pending session's rows are left out by the judging statements too
        _make_pending(corpus, "s4")
        answered.clear()
        for caller in CALLERS.values():
            for query in queries:
                for extra in ({}, {"role": "user"}):
                    fast, exact = _both_paths(
                        corpus, monkeypatch, caller, query, order="recent", **extra
                    )
                    assert fast == exact, (caller.visibility, query, extra, "pending")
                    assert all(h[0] != "s4" for h in fast)
        assert answered


def test_a_tracked_word_ordered_recent_reads_the_newest_rows_in_time_first(
    corpus: TranscriptStore, monkeypatch: pytest.MonkeyPatch, newest_walks: list[int]
) -> None:
    """SQLite: a tracked word's search ordered ``recent`` reads the newest rows in time (as
    many as should hold ``RECENT_TIME_MARGIN`` times the rows wanted) and their matches in one
    statement (``_newest_in_time``), and walks the matches by row id only when those rows
    cannot fill the page. The hits and order are the exact path's, the scores the list's, for
    every caller and filter, with the margin as it is, so small that the page is rarely
    filled (the walk answers), and so large that every row is read; an ``until`` window goes
    to the walk. Row ids do not follow time in this corpus (sessions interleaved, and an old
    session written last), nor are times unique."""
    if corpus.engine.dialect.name != "sqlite":
        pytest.skip("SQLite's recent order of a tracked word")
    filled: list[int] = []
    walked: list[int] = []
    in_time, walk = sqlite_read._newest_in_time, sqlite_read._walked

    def counted_in_time(*args: Any) -> Any:
        found = in_time(*args)
        filled.extend([1] if found is not None else [])
        return found

    def counted_walk(*args: Any) -> Any:
        walked.append(1)
        return walk(*args)

    monkeypatch.setattr(sqlite_read, "_newest_in_time", counted_in_time)
    monkeypatch.setattr(sqlite_read, "_walked", counted_walk)
    corpus.create_session("old", "agent:ops:old", agent_id="ops")
    old = chain([_text(9, i) for i in range(40)], prefix="old")
    for event in old:
        event["timestamp"] = event["timestamp"] + (PER_SESSION - 30) * 1000 + 500
    corpus.append_many("old", old)
    for margin in (sqlite_read.RECENT_TIME_MARGIN, 0, 10**6):
        monkeypatch.setattr(sqlite_read, "RECENT_TIME_MARGIN", margin)
        filled.clear()
        walked.clear()
        for caller in CALLERS.values():
            for word in WORDS:
                for extra in ({}, *FILTERS, {"since": T0 + 10**9}):
                    before = len(newest_walks)
                    fast, exact = _both_paths(
                        corpus, monkeypatch, caller, word, order="recent", **extra
                    )
                    where = (margin, caller.visibility, word, extra)
                    assert [h[:2] for h in fast] == [h[:2] for h in exact], where
                    if exact:
                        assert len(newest_walks) == before + 1, where
                        _check_newest_scores(corpus, monkeypatch, word, fast, exact)
        # the newest rows filled pages unless none were read; the walk answered the others
        assert filled if margin else not filled, margin
        assert walked, margin  # `until`, and pages that no rows fill
    # a pending session's rows are left out by the statement too
    monkeypatch.setattr(sqlite_read, "RECENT_TIME_MARGIN", 2)
    _make_pending(corpus, "s4")
    filled.clear()
    for caller in CALLERS.values():
        for word in WORDS:
            for extra in ({}, {"role": "user"}):
                fast, exact = _both_paths(
                    corpus, monkeypatch, caller, word, order="recent", **extra
                )
                assert [h[:2] for h in fast] == [h[:2] for h in exact], (caller, word, extra)
                assert exact and all(h[0] != "s4" for h in fast)
    assert filled


def test_two_tracked_words_the_newest_rows_lack_are_found_in_one_statement(
    corpus: TranscriptStore,
    monkeypatch: pytest.MonkeyPatch,
    newest_walks: list[int],
    recent_plans: list[str],
    recent_rests: list[str],
) -> None:
    """A session newer than the rest holds neither word of "alpha beta": its rows are the
    newest ones, so on PostgreSQL the newest rows' walk finds no match and the statement
    answers from every match through the GIN index (no second statement); a query of one
    word and a phrase likewise. The rows and their order are the exact path's."""
    from openclaw_fts.index.postgresql import read as pg_read

    monkeypatch.setattr(pg_read, "RECENT_SPARSE_WALK_ROWS", 4 * LIMIT)
    corpus.create_session("fresh", "agent:main:fresh", agent_id="main")
    fresh = chain([f"gamma delta w{i % 7}" for i in range(6 * LIMIT)], prefix="fresh")
    for event in fresh:
        event["timestamp"] = event["timestamp"] + 10**9
    corpus.append_many("fresh", fresh)
    for caller in CALLERS.values():
        for query in ("alpha beta", '"alpha beta"', "beta alpha w3"):
            fast, exact = _both_paths(corpus, monkeypatch, caller, query, order="recent")
            where = (caller.visibility, query)
            assert len(exact) == LIMIT, where
            assert "fresh" not in {h[0] for h in exact}, where
            assert fast == exact, where
    if corpus.engine.dialect.name == "postgresql":
        assert "newest-sparse" in recent_plans
        assert recent_rests == []


def test_recent_order_after_an_import_of_older_sessions_is_the_exact_paths(
    corpus: TranscriptStore, monkeypatch: pytest.MonkeyPatch, newest_walks: list[int]
) -> None:
    """Sessions written after the others but older (an import of old transcripts; a session
    rebuilt with its old times): the highest row ids hold the oldest messages, so a walk by
    id proves nothing and the answer is still the newest matches; then a session written
    later and newer than everything, whose rows the walk answers with again. On PostgreSQL
    the time of the newest rows is the one the engine read before that session (kept for an
    hour here): the walk reads the rows written since as well, and finds the same."""
    from openclaw_fts.index.postgresql import read as pg_read

    monkeypatch.setattr(pg_read, "RECENT_FLOOR_SECONDS", 3600.0)
    corpus.create_session("old", "agent:main:old", agent_id="main")
    old = chain([_text(9, i) for i in range(300)])
    for event in old:
        event["timestamp"] = event["timestamp"] - 10**9
    corpus.append_many("old", old)
    middle = chain([_text(8, i) for i in range(40)], prefix="mid")
    for event in middle:
        event["timestamp"] = event["timestamp"] + (PER_SESSION - 20) * 1000 + 500
    corpus.create_session("middle", "agent:ops:middle", agent_id="ops")
    corpus.append_many("middle", middle)
    _same_newest(corpus, monkeypatch, ({}, {"role": "user"}, {"until": T0 + 100_000}), newest_walks)
    corpus.create_session("new", "agent:main:new", agent_id="main")
    new = chain([_text(7, i) for i in range(30)], prefix="new")
    for event in new:
        event["timestamp"] = event["timestamp"] + 10**9
    corpus.append_many("new", new)
    before = len(newest_walks)
    _same_newest(corpus, monkeypatch, ({},), newest_walks)
    assert len(newest_walks) > before or corpus.engine.dialect.name != "sqlite"


def test_a_tracked_word_scores_a_message_alike_in_either_order(
    corpus: TranscriptStore,
    monkeypatch: pytest.MonkeyPatch,
    walks: list[int],
    newest_walks: list[int],
) -> None:
    """The newest messages include the best ones for "alpha" and long ones that hold it once
    (below the list's cut): a search ordered ``recent`` and the same search by relevance, each
    answered by its fast path, give a message they both return the same score, with a ``role``
    or a time window too; the ``recent`` rows and order are the exact path's. A word without a
    list keeps bm25's scores."""
    from openclaw_fts.index.sqlite import read as sqlite_read

    long = "alpha " + " ".join(f"w{k}" for k in range(60))
    # the best there can be, of each role: the word six times (bm25), the word alone (ts_rank)
    newest = ["alpha " * 6, "alpha " * 6, "alpha", "alpha", long, long, "alpha alpha", long]
    corpus.append_many("s2", chain(newest, start=PER_SESSION, parent=f"m{PER_SESSION - 1}"))
    sqlite = corpus.engine.dialect.name == "sqlite"
    for caller in CALLERS.values():
        for extra in ({}, {"role": "user"}, {"role": "assistant"}, {"since": T0 + 300_000}):
            where = (caller.visibility, extra)
            newest_before = len(newest_walks)
            recent, exact = _both_paths(
                corpus, monkeypatch, caller, "alpha", order="recent", **extra
            )
            assert [h[:2] for h in recent] == [h[:2] for h in exact], where
            assert len(newest_walks) - newest_before == (1 if sqlite else 0), where
            if sqlite:
                _check_newest_scores(corpus, monkeypatch, "alpha", recent, exact)
            lists = len(walks)
            relevance = _ids(corpus.search(caller, "alpha", limit=LIMIT, **extra))
            assert len(walks) - lists == 1, where
            by_message = {h[:2]: h[2] for h in relevance}
            both = [h for h in recent if h[:2] in by_message]
            assert both, where  # the newest best messages
            assert all(h[2] == pytest.approx(by_message[h[:2]], rel=1e-12) for h in both), where
            assert {("s2", f"m{PER_SESSION + k}") for k in range(len(newest))} & {
                h[:2] for h in recent
            }
    with monkeypatch.context() as small:
        small.setattr(sqlite_read, "RECENT_MIN_MATCHES", LIMIT)
        before = len(newest_walks)
        fast, exact = _both_paths(corpus, monkeypatch, CALLERS["all"], "w3", order="recent")
        assert len(newest_walks) - before == (1 if sqlite else 0)
        assert exact and fast == exact


def test_a_tracked_words_first_search_ordered_recent_compiles_no_pattern(
    corpus: TranscriptStore, monkeypatch: pytest.MonkeyPatch, newest_walks: list[int]
) -> None:
    """SQLite: the newest messages hold "alpha" in letters that fold to it (``Álpha``,
    ``alphå``), long enough to be cut to a snippet: the first search of the word ordered
    ``recent`` in a process (its patterns' caches cleared, then the snippet module's import
    warm-up redone) compiles no regular expression: neither for the word's occurrences in a
    body outside its list nor for its snippets (a pattern per word and per token distance,
    compiled there, made a word's first search 2-3x its next ones: bench/NOTES.md). The hits
    are the exact path's, the scores the list's."""
    import re

    from openclaw_fts import snippet, tokens

    if corpus.engine.dialect.name != "sqlite":
        pytest.skip("SQLite's recent order of a tracked word")
    filler = " ".join(f"wörd{k} étage" for k in range(40))
    newest = [
        f"Álpha {filler} alphå {filler}",
        f"{filler} ALPHA",
        f"naïve alphá {filler} x",
        f"{filler} Ālpha alpha.",
    ]
    corpus.append_many("s2", chain(newest, start=PER_SESSION, parent=f"m{PER_SESSION - 1}"))
    for module in (tokens, snippet, sqlite_impact):
        for value in vars(module).values():
            clear = getattr(value, "cache_clear", None)
            if callable(clear):
                clear()
    re.purge()
    tokens.compile_steps(snippet.SNIPPET_WINDOW_TOKENS)  # what importing the snippets does
    compiled: list[Any] = []
    compile_pattern = re.compile

    def counted(pattern: Any, flags: int = 0) -> Any:
        compiled.append(pattern)
        return compile_pattern(pattern, flags)

    monkeypatch.setattr(re, "compile", counted)
    answer = corpus.search(CALLERS["all"], "alpha", limit=LIMIT, order="recent")
    monkeypatch.setattr(re, "compile", compile_pattern)
    assert compiled == []
    assert len(newest_walks) == 1
    found = {(h["sessionId"], h["messageId"]) for h in answer["results"]}
    assert {("s2", f"m{PER_SESSION + k}") for k in range(len(newest))} <= found
    assert any(h["snippet"].startswith("… ") for h in answer["results"])  # cut snippets
    fast, exact = _both_paths(corpus, monkeypatch, CALLERS["all"], "alpha", order="recent")
    assert [h[:2] for h in fast] == [h[:2] for h in exact]
    _check_newest_scores(corpus, monkeypatch, "alpha", fast, exact)


#: Text around a tracked word: the word and near spellings, Latin letters that fold to its
#: letters (and others), CJK, a combining mark, digits, separators and ``_``.
_AROUND = st.sampled_from(
    [
        *("sou", "SOU", "soù", "Sôu", "ſou", "sous", "xsou", "sou2", "µ", "ǆ", "é", "İ", "ß"),
        *("漢", "\u0301", "_", " ", "-", ".", "'", "\n", "1", "a", "ǅ", "Ø", "ø"),
    ]
)


@settings(max_examples=400, deadline=None)
@given(parts=st.lists(_AROUND | st.text(max_size=3), max_size=12))
def test_a_words_occurrences_are_counted_as_the_writer_counts_them(parts: list[str]) -> None:
    """What SQLite's ``recent`` walk scores a row outside a list with: the word's occurrences
    as the writer counts them for the lists (``words``), whatever the script around it."""
    body = "".join(parts)
    for word in ("sou", "s", "o2", "2"):
        assert sqlite_impact.occurrences(body, word) == sqlite_impact.words(body).count(word)


def test_the_fold_table_keeps_runs_apart() -> None:
    """``occurrences`` folds a whole text at once: every letter or digit it folds must stay one
    letter or digit (or vanish), or a run of the text would split or join."""
    for folded in sqlite_impact._FOLD_TABLE.values():
        assert folded == "" or (len(folded) == 1 and folded.isalnum())

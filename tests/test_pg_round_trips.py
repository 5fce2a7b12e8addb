"""Round trips of a search and an append on PostgreSQL, counted from libpq's own trace of the
store's connections (every message the client sends; a round trip ends with ``Sync`` under
the extended protocol, or is one simple ``Query`` such as ``BEGIN``), and what replaced the
pool's pre-ping: a dead pooled connection found at checkout, and a read retried once on a
fresh connection when it lost its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest
from factories import chain
from pgserver import PgServer
from psycopg import pq
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.orm import sessionmaker

import openclaw_fts
from openclaw_fts import AgentToAgent, Caller, TranscriptEvent, TranscriptStore, suggest
from openclaw_fts.check import check
from openclaw_fts.engine import make_engine
from openclaw_fts.index.impact import FREQUENT_TERM_MIN_DOCS
from openclaw_fts.index.postgresql.read import PostgresSearch

KEY = "agent:main:main"
SELF = Caller(KEY, visibility="self")
WIDE = Caller(KEY, visibility="all", agent_to_agent=AgentToAgent(True))
#: Hits asked of a search its word's impact list answers.
LIST_LIMIT = 10
#: The start of a one-statement search's row in the trace (``wrote`` NULL, ``pending``,
#: ``listed``, ``tracked``): answered by the word's list, or by ranking a word without one.
LISTED_ROW = "-1 1 'f' 1 't' 1 't'"
UNTRACKED_ROW = "-1 1 'f' 1 'f' 1 'f'"
#: Searches counted after the first (which also connects).
SEARCHES = 4
#: A frontend message that ends a round trip.
ROUND_TRIP = re.compile(r"^F\t\d+\t(?:Sync|Query)\b.*$", re.MULTILINE)
#: A statement the client parses (its text; a prepared one is not sent again).
PARSE = re.compile(r"^F\t\d+\tParse\t.*$", re.MULTILINE)
#: A statement's parameters bound: their count and format codes (0 text, 1 binary).
BIND_FORMATS = re.compile(r'^F\t\d+\tBind\t "[^"]*" "[^"]*" (\d+)((?: [01])*)', re.MULTILINE)
#: The arrays of an append's one write (ten event columns, seven index row columns; its
#: integers are bound in binary whatever the placeholder).
APPEND_ARRAYS = 17


class Trace:
    """libpq's trace of every connection the engine (a store's, or a host's) opens from now
    on."""

    def __init__(self, store: TranscriptStore | Engine, path: Path) -> None:
        self.path = path
        self.handle: IO[str] = path.open("w")

        def traced(dbapi_connection: Any, record: Any) -> None:
            dbapi_connection.pgconn.trace(self.handle.fileno())
            dbapi_connection.pgconn.set_trace_flags(
                pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE
            )

        engine = store if isinstance(store, Engine) else store.engine
        event.listen(engine, "connect", traced)
        engine.dispose()  # connections from here on are traced

    def mark(self) -> int:
        self.handle.flush()
        return len(self.path.read_text())

    def text(self, since: int) -> str:
        self.handle.flush()
        return self.path.read_text()[since:]

    def round_trips(self, since: int) -> list[str]:
        self.handle.flush()
        text = self.path.read_text()[since:]
        return [m.group(0) for m in ROUND_TRIP.finditer(text)]


@pytest.fixture
def pg_store(pg_url: str) -> Iterator[TranscriptStore]:
    s = TranscriptStore(pg_url, background=False)
    try:
        s.create_session("rt-1", KEY)
        s.append_many("rt-1", chain(["puffin on the cliff", "a second puffin", "noted"]))
        yield s
    finally:
        s.close()


def test_a_search_is_one_round_trip(pg_store: TranscriptStore, tmp_path: Path) -> None:
    """No pre-ping, no ``BEGIN`` / ``ROLLBACK``, no statement before the ranked one: the
    pending probe and its memo, the plan setting and the bodies are in it."""
    trace = Trace(pg_store, tmp_path / "trace")
    first = pg_store.search(SELF, "puffin")
    assert len(first["results"]) == 2
    mark = trace.mark()
    for _ in range(SEARCHES):
        assert pg_store.search(SELF, "puffin") == first
    trips = trace.round_trips(mark)
    assert len(trips) == SEARCHES, trips
    assert not any("Query" in t for t in trips)  # no BEGIN, no ROLLBACK


def test_a_batch_and_suggestions_still_read_one_snapshot(
    pg_store: TranscriptStore, tmp_path: Path
) -> None:
    """A search that needs more than one statement (a batch; a query that finds nothing and
    looks for near words through the GIN index) runs them in one REPEATABLE READ transaction;
    a narrow caller's near words from its own rows are one statement, in autocommit, and so is
    the check that a query's words are found (mostly the only statement after a search that
    found nothing: a filter or the combination left nothing)."""
    trace = Trace(pg_store, tmp_path / "trace")
    pg_store.search(SELF, "puffin")
    mark = trace.mark()
    batch = pg_store.search(SELF, None, queries=["puffin", "cliff"])
    assert [r["queryIndex"] for r in batch["results"]] == [0, 0, 1]
    trips = trace.round_trips(mark)
    assert "BEGIN ISOLATION LEVEL REPEATABLE READ" in trips[0] and "ROLLBACK" in trips[-1]
    mark = trace.mark()
    missed = pg_store.search(SELF, "puffim")
    assert missed["results"] == [] and "puffin" in missed.get("warning", "")
    trips = trace.round_trips(mark)
    # A narrow caller with few rows: whether the word is visible, its near words with their
    # counts, whether words start with it, and whether a row without a credential mask holds
    # a near word ("puffin" is short enough to be the kept start of a masked credential:
    # suggest.said_outside_masks, issue #36) come from ONE read of its rows' lexemes that
    # share the word's first letters, which also checks that the caller's rows are few: the
    # search's statement, then that one, no transaction around them (the mask check was a
    # REPEATABLE READ transaction of two statements of its own before, issue #38).
    assert len("puffin") <= suggest.MAX_FRAGMENT_CHARS
    assert len(trips) == 2 and not any("Query" in t for t in trips), trips
    lexemes = [p for p in PARSE.findall(trace.text(mark)) if "tsvector_to_array(mi.body_tsv)" in p]
    assert len(lexemes) <= 1  # the near words' read
    # Every word found, the filter leaving nothing: one statement after the search's,
    # in autocommit (no BEGIN, no ROLLBACK).
    mark = trace.mark()
    assert pg_store.search(SELF, "puffin", until="2000-01-02")["results"] == []
    trips = trace.round_trips(mark)
    assert len(trips) == 2 and not any("Query" in t for t in trips), trips
    # Counted through the GIN index (the caller's rows are not few): in one snapshot, after
    # the words' check (and, the engine's hint spent, whether the caller's rows are few).
    from openclaw_fts.index.postgresql import read

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(read, "NARROW_SCAN_EVENTS", -1)
        patch.setattr(read, "FEW_ROWS_HINT_USES", 0)  # asked afresh, not the engine's answer
        mark = trace.mark()
        assert "puffin" in pg_store.search(SELF, "puffim").get("warning", "")
        trips = trace.round_trips(mark)
    begin = [n for n, t in enumerate(trips) if "BEGIN ISOLATION LEVEL REPEATABLE READ" in t]
    assert begin and begin[0] <= 3 and "ROLLBACK" in trips[-1], trips
    assert len(begin) == 1 and not any("Query" in t for t in trips[: begin[0]]), trips


def write_of(trace: Trace, mark: int) -> str:
    """The one write statement parsed since ``mark``, its arrays checked to be bound in binary
    (the text format would escape each JSON's quotes)."""
    text = trace.text(mark)
    parsed = [p for p in PARSE.findall(text) if "transcript_events" in p]
    assert len(parsed) == 1, parsed
    assert all(t in parsed[0] for t in ("message_index", "openclaw_index_state", "last_seq"))
    formats = [m.group(2).split() for m in BIND_FORMATS.finditer(text)]
    assert formats[-1].count("1") >= APPEND_ARRAYS, formats
    return parsed[0]


def contents(store: TranscriptStore) -> list[str]:
    history = store.history(SELF, KEY)
    assert "messages" in history
    return [m["content"] for m in history["messages"]]


def test_an_append_is_four_round_trips_then_one(
    pg_store: TranscriptStore, pg_url: str, tmp_path: Path
) -> None:
    """A store that has not created or appended to the session: ``BEGIN``, the session row
    locked and read with its index state, ONE statement with every event, ``last_seq``, every
    index row, the index state and the branch tip, ``COMMIT``. From then on the store knows
    the session, and an append is that statement guarded by what it knows, in autocommit:
    one round trip."""
    store = TranscriptStore(pg_url, background=False)
    try:
        trace = Trace(store, tmp_path / "trace")
        store.search(SELF, "puffin")  # connects
        mark = trace.mark()
        texts = [f'puffin \\ "number" {i}' for i in range(5)]
        assert store.append_many("rt-1", chain(texts, start=3, parent="m2")) == [3, 4, 5, 6, 7]
        trips = trace.round_trips(mark)
        assert len(trips) == 4, trips
        assert "BEGIN" in trips[0] and "COMMIT" in trips[-1]
        assert "FOR UPDATE OF s, st" not in write_of(trace, mark)
        mark = trace.mark()
        more = chain(["puffin again", "and a puffin"], start=8, parent="m7")
        assert store.append_many("rt-1", more) == [8, 9]
        assert len(trace.round_trips(mark)) == 1
        assert "FOR UPDATE OF s, st" in write_of(trace, mark)
        assert len(store.search(SELF, "puffin")["results"]) == 9
        report = check(store.engine)
        assert report.ok, report.as_dict()
        assert contents(store)[3:] == [*texts, "puffin again", "and a puffin"]
    finally:
        store.close()


def test_the_first_append_to_a_session_the_store_created_is_one_round_trip(
    pg_store: TranscriptStore, tmp_path: Path
) -> None:
    trace = Trace(pg_store, tmp_path / "trace")
    pg_store.search(SELF, "puffin")  # connects
    pg_store.create_session("rt-2", "agent:main:other")
    mark = trace.mark()
    assert pg_store.append_many("rt-2", chain(["a puffin", "another"])) == [0, 1]
    assert len(trace.round_trips(mark)) == 1
    assert "FOR UPDATE OF s, st" in write_of(trace, mark)
    report = check(pg_store.engine)
    assert report.ok, report.as_dict()


def test_an_append_the_store_knows_wrong_writes_nothing_then_runs_in_a_transaction(
    pg_store: TranscriptStore, pg_url: str, tmp_path: Path
) -> None:
    """Another store appended meanwhile (``last_seq`` moved), or re-indexed the session (its
    index state's generation moved, ``last_seq`` did not): the guarded statement writes
    nothing and the append runs in a transaction, as from a store that never knew the
    session (here a fork, repaired: the other store's event is off the branch)."""
    other = TranscriptStore(pg_url, background=False)

    def append(text: str, seq: int, parent: str) -> list[str]:
        mark = trace.mark()
        event = chain([text], start=seq, parent=parent)[0]
        assert pg_store.append("rt-1", event) == seq
        return trace.round_trips(mark)

    try:
        trace = Trace(pg_store, tmp_path / "trace")
        pg_store.search(SELF, "puffin")  # connects
        assert other.append_many("rt-1", chain(["other puffin"], start=3, parent="m2")) == [3]
        trips = append("mine, a puffin", 4, "m2")  # pg_store thinks m2 is the leaf, at seq 2
        assert "Sync" in trips[0] and "BEGIN" in trips[1] and "COMMIT" in trips[-1], trips
        assert len(append("puffin again", 5, "m4")) == 4  # a repair is not remembered
        other.rebuild()
        trips = append("and a puffin", 6, "m5")
        assert len(trips) == 5 and "BEGIN" in trips[1], trips
        assert len(append("the last puffin", 7, "m6")) == 1
        assert contents(pg_store)[3:] == [
            "mine, a puffin",
            "puffin again",
            "and a puffin",
            "the last puffin",
        ]
        assert len(pg_store.search(SELF, "puffin")["results"]) == 6
        report = check(pg_store.engine)
        assert report.ok, report.as_dict()
    finally:
        other.close()


def test_an_orm_append_to_a_session_its_engine_knows_is_one_statement_in_the_host_transaction(
    pg_store: TranscriptStore, pg_url: str, tmp_path: Path
) -> None:
    """Through the host's installed ``sessionmaker``: the first append to a session its engine
    never wrote is ``BEGIN``, the locked read, the write, ``COMMIT``; from then on the flush
    writes the append as the store's guarded statement: ``BEGIN``, ONE statement, ``COMMIT``
    (SQLAlchemy-Searchable's three). When what the engine remembers is stale — another writer
    appended, or the host rolled its own append back — the guarded statement writes nothing
    and the flush numbers from the locked read: no seq is skipped or taken twice."""
    engine = make_engine(pg_url)
    factory = sessionmaker(engine)
    openclaw_fts.install(factory)

    def orm_append(text_: str, seq: int) -> list[str]:
        mark = trace.mark()
        with factory.begin() as db:
            event_ = chain([text_], start=seq, parent=f"m{seq - 1}")[0]
            obj = TranscriptEvent(session_id="rt-1", event=event_)
            db.add(obj)
            db.flush()
            assert obj.seq == seq
        return trace.round_trips(mark)

    try:
        trace = Trace(engine, tmp_path / "trace")
        with factory.begin() as db:
            db.execute(text("SELECT 1"))  # connects
        assert len(orm_append("an orm puffin", 3)) == 4
        mark = trace.mark()
        trips = orm_append("a second orm puffin", 4)
        assert len(trips) == 3 and "BEGIN" in trips[0] and "COMMIT" in trips[-1], trips
        assert "FOR UPDATE OF s, st" in write_of(trace, mark)
        assert len(orm_append("a third orm puffin", 5)) == 3
        # Another writer appended: the event is no extension of what the engine remembers,
        # so the flush numbers it from the locked read.
        assert pg_store.append("rt-1", chain(["the store's puffin"], start=6, parent="m5")[0]) == 6
        assert len(orm_append("after the store's puffin", 7)) == 4
        assert len(orm_append("remembered again, a puffin", 8)) == 3
        # Re-indexed meanwhile (the index state's generation moved, last_seq did not): the
        # guarded statement writes nothing, then the locked read and the write.
        pg_store.rebuild()
        trips = orm_append("after the rebuild, a puffin", 9)
        assert len(trips) == 5 and "BEGIN" in trips[0] and "COMMIT" in trips[-1], trips
        # The host's own append rolled back: remembered, never committed.
        with factory() as db:
            rolled_back = chain(["rolled back"], start=10, parent="m9")[0]
            db.add(TranscriptEvent(session_id="rt-1", event=rolled_back))
            db.flush()
            db.rollback()
        assert len(orm_append("after the rollback, a puffin", 10)) == 4
        assert len(orm_append("the last puffin", 11)) == 3
        assert contents(pg_store)[3:] == [
            "an orm puffin",
            "a second orm puffin",
            "a third orm puffin",
            "the store's puffin",
            "after the store's puffin",
            "remembered again, a puffin",
            "after the rebuild, a puffin",
            "after the rollback, a puffin",
            "the last puffin",
        ]
        assert len(pg_store.search(SELF, "puffin", limit=20)["results"]) == 11
        report = check(pg_store.engine)
        assert report.ok, report.as_dict()
    finally:
        engine.dispose()


def test_a_read_is_retried_once_when_the_server_cut_its_connection(
    pg_server: PgServer, pg_url: str
) -> None:
    """On an engine the host made (no check at checkout, no pre-ping), the first read after
    a server restart meets a dead pooled connection: it is run again on a fresh one."""
    host = create_engine(pg_url)
    store = TranscriptStore(host, background=False)
    try:
        store.create_session("rt-2", KEY)
        store.append_many("rt-2", chain(["puffin before the restart"]))
        assert len(store.search(SELF, "puffin")["results"]) == 1
        pg_server.restart()
        assert len(store.search(SELF, "puffin")["results"]) == 1
        pg_server.restart()
        assert len(store.history(SELF, KEY)["messages"]) == 1
    finally:
        store.close()
        host.dispose()


def test_a_search_one_frequent_word_answers_from_its_list_is_one_round_trip(
    pg_url: str, tmp_path: Path
) -> None:
    """A wide caller's one-word search of a tracked word walks the word's impact list inside
    the same one statement (the pending probe, the walk, the bodies): one round trip, the
    exact path's hits."""
    store = TranscriptStore(pg_url, background=False)
    try:
        store.create_session("rt-3", KEY)
        texts = [f"puffin {'cliff ' * (i % 7)}note {i}" for i in range(FREQUENT_TERM_MIN_DOCS)]
        store.append_many("rt-3", chain(texts))
        store.optimize()  # tracks "puffin"
        trace = Trace(store, tmp_path / "trace")
        first = store.search(WIDE, "puffin", limit=LIST_LIMIT)
        assert len(first["results"]) == LIST_LIMIT
        mark = trace.mark()
        for _ in range(SEARCHES):
            assert store.search(WIDE, "puffin", limit=LIST_LIMIT) == first
        trips = trace.round_trips(mark)
        assert len(trips) == SEARCHES, trips
        assert LISTED_ROW in trace.path.read_text()[mark:]  # the list answered
        # a word without a list (in 6 messages of 7: under the threshold) walks nothing
        rarer = store.search(WIDE, "cliff", limit=LIST_LIMIT)
        assert len(rarer["results"]) == LIST_LIMIT
        mark = trace.mark()
        for _ in range(SEARCHES):
            assert store.search(WIDE, "cliff", limit=LIST_LIMIT) == rarer
        assert len(trace.round_trips(mark)) == SEARCHES
        assert UNTRACKED_ROW in trace.path.read_text()[mark:]  # no walk
        # "cliff" becomes frequent: a pooled connection learns it from its next search there
        # (which ranks every match), then walks its list
        more = [f"cliff again {i}" for i in range(FREQUENT_TERM_MIN_DOCS // 5)]
        store.append_many("rt-3", chain(more, start=len(texts), parent=f"m{len(texts) - 1}"))
        store.optimize()
        learnt = store.search(WIDE, "cliff", limit=LIST_LIMIT)
        for _ in range(store.engine.pool.checkedin()):  # each pooled connection learns it
            assert store.search(WIDE, "cliff", limit=LIST_LIMIT) == learnt
        mark = trace.mark()
        for _ in range(SEARCHES):
            assert store.search(WIDE, "cliff", limit=LIST_LIMIT) == learnt
        assert len(trace.round_trips(mark)) == SEARCHES
        assert LISTED_ROW in trace.path.read_text()[mark:]  # the list answered
        PostgresSearch.IMPACT_LISTS = False
        try:
            assert store.search(WIDE, "puffin", limit=LIST_LIMIT) == first  # scores too
        finally:
            PostgresSearch.IMPACT_LISTS = True
    finally:
        store.close()


def test_a_wide_callers_miss_is_the_search_and_its_near_words_statement(
    pg_store: TranscriptStore, tmp_path: Path
) -> None:
    """A wide caller's one-word search that finds nothing: the search's statement, then, in
    one REPEATABLE READ transaction, the ``enable_seqscan`` setting and ONE statement that
    finds the near words (ordered by their frequency over the index, proved visible), reads
    whether their first visible rows hold no credential mask, and counts the word's prefix
    form -- what the near words' count, the mask check and the prefix form's count took three
    statements for before (issue #38)."""
    trace = Trace(pg_store, tmp_path / "trace")
    pg_store.search(WIDE, "puffin")
    mark = trace.mark()
    missed = pg_store.search(WIDE, "puffi")
    assert missed["results"] == []
    assert missed.get("warning") == "No matches. Did you mean: puffin, puffi*?"
    trips = trace.round_trips(mark)
    assert "BEGIN ISOLATION LEVEL REPEATABLE READ" in trips[1] and "ROLLBACK" in trips[-1]
    assert len(trips) == 5, trips  # the search, BEGIN, the setting, the near words, ROLLBACK

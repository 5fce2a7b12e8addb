"""Suggestions when nothing matches, on both engines: near words from the index's own
vocabulary and a prefix form, in ``warning`` (the one free-text field of OpenClaw's output
schema) and on the command line, never a word found only in sessions the caller cannot
search; ``--fail-if-empty`` for scripts."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from conftest import check_search_output
from factories import chain, msg
from sqlalchemy import event, update
from sqlalchemy import text as sql
from sqlalchemy.orm import Session, sessionmaker
from test_cli import loads, ok, run

from openclaw_fts import AgentToAgent, Caller, TranscriptEvent, TranscriptStore, spelling, tools
from openclaw_fts.cli import EXIT_NO_MATCH
from openclaw_fts.index import base

pytestmark = pytest.mark.both_engines

MAIN = Caller("agent:main:main", visibility="agent")
EVERYONE = Caller("agent:main:main", visibility="all", agent_to_agent=AgentToAgent(enabled=True))
SELF = Caller("agent:main:main", visibility="self")


@pytest.fixture
def populated(store: TranscriptStore) -> TranscriptStore:
    texts = {
        ("s-main", "agent:main:main", False): "please borrow the deployment notes",
        ("s-side", "agent:main:side", False): "the walrus sleeps",
        ("s-ops", "agent:ops:main", False): "the quokka eats the marmalade",
        ("s-dark", "agent:main:private", True): "secret zeppelin plans",
    }
    for (sid, key, incognito), text in texts.items():
        store.create_session(sid, key, incognito=incognito)
        store.append(sid, msg(f"{sid}-1", text, parent=None))
    return store


def warning(store: TranscriptStore, caller: Caller, query: str) -> str:
    out = check_search_output(tools.sessions_search(store, caller, {"query": query}))
    assert out["results"] == []
    return str(out.get("warning", ""))


def warning_of(store: TranscriptStore, caller: Caller, query: str, key: str) -> str:
    out = check_search_output(
        tools.sessions_search(store, caller, {"query": query, "sessionKey": key})
    )
    assert out["results"] == []
    return str(out.get("warning", ""))


def test_near_words_and_the_prefix_form(populated: TranscriptStore) -> None:
    assert warning(populated, MAIN, "borow") == "No matches. Did you mean: borrow?"
    assert "deployment" in warning(populated, MAIN, "deploymnt")
    assert "deploy*" in warning(populated, MAIN, "deploy")
    assert populated.suggest(MAIN, "deploymnt") == ["deployment"]
    # A word that is found, in a query that finds nothing: nothing to correct.
    assert warning(populated, MAIN, "borrow walrus") == ""
    assert warning(populated, MAIN, "xqzvvy") == ""
    hits = populated.search(MAIN, "borrow")
    assert hits["results"] and "warning" not in hits


def test_a_filter_that_leaves_nothing_gets_suggestions_only_for_words_not_found(
    populated: TranscriptStore,
) -> None:
    """Every word of the query is found, but not in the role or time asked for: no word to
    correct (the words are proved together, in one statement on PostgreSQL); beside a
    misspelt word, the found ones still leave room for its near word, for every caller."""
    for caller in (MAIN, SELF, EVERYONE):
        for args in ({"role": "assistant"}, {"since": "2000-01-01", "until": "2000-01-02"}):
            out = check_search_output(
                tools.sessions_search(
                    populated, caller, {"query": '"borrow the deployment" notes', **args}
                )
            )
            assert out["results"] == [] and "warning" not in out, (caller.visibility, args)
            out = check_search_output(
                tools.sessions_search(
                    populated, caller, {"query": "deployment borow notes", **args}
                )
            )
            assert out["results"] == []
            assert out["warning"] == "No matches. Did you mean: borrow?", caller.visibility


def test_a_filtered_search_proves_its_words_within_what_the_caller_may_search(
    populated: TranscriptStore,
) -> None:
    """A filter that leaves nothing: each word is looked for among the messages the caller
    may search, whatever the filter, only until one is found. A word found only in a
    session the caller cannot search counts as not found (its near words are looked for,
    among the caller's own), for every caller and either filter."""
    tree = Caller("agent:main:main", visibility="tree")
    side = Caller("agent:main:side", visibility="self")
    for args in ({"role": "assistant"}, {"since": "2000-01-01", "until": "2000-01-02"}):

        def said(caller: Caller, query: str, args: dict[str, str] = args) -> str:
            out = check_search_output(
                tools.sessions_search(populated, caller, {"query": query, **args})
            )
            assert out["results"] == [], (caller.visibility, query, args)
            return str(out.get("warning", ""))

        for caller in (MAIN, EVERYONE):  # walrus is theirs: every word found
            assert said(caller, '"borrow the" walrus') == "", caller.visibility
        for caller in (SELF, tree):  # walrus is another key's: not found, nothing near
            assert said(caller, '"borrow the" walrus') == "", caller.visibility
            assert said(caller, "borrow walrsu") == "", caller.visibility
        assert said(MAIN, "borrow walrsu") == "No matches. Did you mean: walrus?"
        assert said(side, "walrus borow") == ""  # borrow is main's own
        assert said(SELF, "walrus borow") == "No matches. Did you mean: borrow?"
        assert said(tree, "quokka deploymnt") == "No matches. Did you mean: deployment?"
        assert said(EVERYONE, "quokka deploymnt") == "No matches. Did you mean: deployment?"
        assert said(MAIN, "zeppelin borrow") == ""  # incognito: found by no caller


def test_a_narrow_callers_filtered_search_proves_only_the_words_its_rows_hold(
    store: TranscriptStore, host: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``self`` or ``tree`` caller's filtered search that finds nothing: on SQLite a message
    of its sessions that matched but failed the filters proves the words every match holds
    (each word of an AND, no alternative of an OR) without a statement per word; never a
    message of a session search hides (pending), whose words are not proved by it. The
    warnings and results are those of the statements per word (the fast paths off), and a
    word that is only an alternative, or found only in the hidden session, still gets its
    near words."""
    store.create_session("s-main", "agent:main:main")
    lines = ["please borrow the deployment notes", "a zebro here", "the walrus sleeps"]
    store.append_many("s-main", chain(lines, prefix="s-main-"))
    store.create_session("s-stale", "agent:main:main")
    store.append_many("s-stale", chain(["zebra crossing"], prefix="s-stale-"))
    rewritten = chain(["narwhal crossing"], prefix="s-stale-")[0]
    with host.begin() as db:  # the reconciler re-indexes it: hidden until then
        db.execute(
            update(TranscriptEvent), [{"session_id": "s-stale", "seq": 0, "event": rewritten}]
        )
    tree = Caller("agent:main:main", visibility="tree")
    queries = {
        '"borrow the deployment" notes': "",
        "borrow OR deploymnt": "No matches. Did you mean: deployment?",
        "deploymnt OR borrow": "No matches. Did you mean: deployment?",
        "zebra": "No matches. Did you mean: zebro?",  # only in the hidden session
        "zebra OR borrow": "No matches. Did you mean: zebro?",
        "deployment zebar": "",
        "notes walrsu": "No matches. Did you mean: walrus?",
    }
    backend = type(base.backend_for(store.engine.dialect.name))
    for caller in (SELF, tree):
        for query, said in queries.items():
            for args in ({"role": "assistant"}, {"since": "2000-01-01", "until": "2000-01-02"}):
                both = []
                for fast in (True, False):
                    monkeypatch.setattr(backend, "IMPACT_LISTS", fast)
                    out = check_search_output(
                        tools.sessions_search(store, caller, {"query": query, **args})
                    )
                    both.append(out)
                    assert out["results"] == [] and out.get("indexing") is True
                    # the warning also says the index is catching up (the hidden session)
                    warned = str(out.get("warning", ""))
                    assert ("Did you mean" in warned) == bool(said) and said in warned, (
                        caller.visibility,
                        query,
                        args,
                        fast,
                    )
                assert both[0] == both[1]


def test_a_narrow_callers_found_words_are_proved_without_reading_its_lexemes(
    store: TranscriptStore, db_engine: str
) -> None:
    """PostgreSQL: a ``self`` or ``tree`` caller's search that a filter empties asks whether
    its words are found; a found word is proved by its first visible message, not by reading
    every lexeme of the caller's rows that starts with its first letters (what near words
    read, and still read for a misspelt word, with the same answer)."""
    if not db_engine.startswith("postgresql"):
        pytest.skip("PostgreSQL's statements")
    store.create_session("s-main", "agent:main:main")
    lines = ["please borrow the deployment notes", "the walrus sleeps", "borrowed time"]
    store.append_many("s-main", chain(lines, prefix="s-main-"))
    ran: list[str] = []

    def seen(*args: object) -> None:
        ran.append(str(args[2]))

    window = {"since": "2000-01-01", "until": "2000-01-02"}
    event.listen(store.engine, "before_cursor_execute", seen)
    try:
        for caller in (SELF, Caller("agent:main:main", visibility="tree")):
            for query, said in (("borrow", ""), ("borrow walrus", ""), ("borow", "borrow")):
                del ran[:]
                out = check_search_output(
                    tools.sessions_search(store, caller, {"query": query, **window})
                )
                assert out["results"] == []
                assert (said in str(out.get("warning", ""))) and (
                    ("Did you mean" in str(out.get("warning", ""))) == bool(said)
                ), (caller.visibility, query)
                read = any("tsvector_to_array" in statement for statement in ran)
                assert read == bool(said), (caller.visibility, query)
    finally:
        event.remove(store.engine, "before_cursor_execute", seen)


def test_a_narrow_callers_found_words_are_proved_by_its_bodies_or_ruled_out_by_the_index(
    store: TranscriptStore, db_engine: str
) -> None:
    """SQLite: a ``self`` or ``tree`` caller's query that found nothing asks whether each of
    its words is found. One look-up in the index for all of them says which words some
    message holds: a misspelt word no message holds costs no proof. Of the others, those an
    ASCII message of the caller holds are proved by the bodies of its messages (read once,
    and shared with the near words); only the rest take a statement with the caller's
    sessions' tokens in the MATCH. Same answers: a word only another session holds is not
    found for the caller, and is corrected from the caller's own words."""
    if db_engine != "sqlite":
        pytest.skip("SQLite's statements")
    store.create_session("s-main", "agent:main:main")
    lines = [
        "please borrow the deployment notes",
        "the walrus sleeps",
        "borrowed time",
        "café crème brûlée",
    ]
    store.append_many("s-main", chain(lines, prefix="s-main-"))
    store.create_session("s-ops", "agent:ops:main")
    store.append_many("s-ops", chain(["the walrsu of ops"], prefix="s-ops-"))
    statements: list[str] = []

    @event.listens_for(store.engine, "checkout")
    def _trace(dbapi: object, record: object, proxy: object) -> None:
        dbapi.set_trace_callback(statements.append)  # type: ignore[attr-defined]

    for caller in (SELF, Caller("agent:main:main", visibility="tree")):
        for query, said, proofs in (
            ("borrow walrsu", "walrus", 1),  # walrsu: only s-ops holds it
            ("borrow walrux", "walrus", 0),  # walrux: no message holds it
            ('"the deploymnet notes"', "deployment", 0),
            ("borrow walrus", "", 0),  # found apart: the combination finds nothing
            ("creme walrux", "walrus", 1),  # creme: only a message beyond ASCII holds it
        ):
            del statements[:]
            assert said in warning(store, caller, query), (caller.visibility, query)
            scoped = [s for s in statements if ") AND sess : (" in s and "EXISTS" in s]
            assert len(scoped) == proofs, (caller.visibility, query, scoped)
            assert sum("SELECT mi.body FROM" in s for s in statements) <= 1


def test_never_a_word_the_caller_cannot_search(populated: TranscriptStore) -> None:
    # quokka / marmalade are only in agent ops's session; zeppelin only in an incognito one.
    for query in ("quoka", "marmelade", "quokka*x"):
        assert "quokka" not in warning(populated, MAIN, query)
        assert "marmalade" not in warning(populated, MAIN, query)
    assert "quokka" in warning(populated, EVERYONE, "quoka")
    assert "marmalade" in warning(populated, EVERYONE, "marmelade")
    assert "zeppelin" not in warning(populated, EVERYONE, "zepelin")
    assert "walrus" not in warning(populated, SELF, "walrsu")  # another key of main's agent
    assert "walrus" in warning(populated, MAIN, "walrsu")
    assert populated.suggest(SELF, "walrsu") == []
    # A narrow caller's own words are suggested (proved within its sessions' tokens).
    assert populated.suggest(SELF, "borow") == ["borrow"]
    assert populated.suggest(SELF, "deplyoment") == ["deployment"]
    assert "deploy*" in warning(populated, SELF, "deploy")
    assert "deploy*" not in warning(
        populated, Caller("agent:main:side", visibility="self"), "deploy"
    )


def test_near_words_are_ordered_by_what_the_caller_may_see(
    store: TranscriptStore, db_engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two words one edit from "walrut". Over every session "walrus" is the more frequent
    # (9 messages against 5), mostly in a session of another agent; what main's own session
    # holds, and what main's agent holds, has "walnut" the more frequent.
    texts = {
        ("s-main", "agent:main:main"): ["walnut bread", "walnut cake", "a walrus tusk"],
        ("s-side", "agent:main:side"): ["walnut tree"] * 3,
        ("s-ops", "agent:ops:main"): ["the walrus swims"] * 8,
    }
    for (sid, key), lines in texts.items():
        store.create_session(sid, key)
        store.append_many(sid, chain(lines, prefix=f"{sid}-"))
    assert store.suggest(SELF, "walrut") == ["walnut", "walrus"]  # 2 against 1
    assert warning(store, SELF, "walrut") == "No matches. Did you mean: walnut, walrus?"
    assert store.suggest(EVERYONE, "walrut") == ["walrus", "walnut"]  # 9 against 5
    # A wide caller: the index-wide order on both engines (9 against 5; it sees 5 against 1),
    # where counting among its visible messages cost more (bench/NOTES.md; near_words of
    # openclaw_fts/index/sqlite/read.py and _most_frequent_visible of .../postgresql/read.py).
    assert store.suggest(MAIN, "walrut") == ["walrus", "walnut"]
    if db_engine != "sqlite":
        # A narrow caller whose sessions are too many to read row by row: counted through the
        # GIN index, with the visibility inside the count.
        from openclaw_fts.index.postgresql import read

        monkeypatch.setattr(read, "NARROW_SCAN_EVENTS", -1)
        assert store.suggest(SELF, "walrut") == ["walnut", "walrus"]


def test_a_batch_names_the_query(populated: TranscriptStore) -> None:
    out = check_search_output(
        tools.sessions_search(populated, MAIN, {"queries": ["borrow", "borow"]})
    )
    assert out["warning"] == "Query 2: No matches. Did you mean: borrow?"


def test_the_command_line(populated: TranscriptStore, db_url: str, tmp_path: Path) -> None:
    populated.close()
    db = ("--db", db_url)
    agent = ("--visibility", "agent")
    text = ok(run(tmp_path, *db, "search", "borow", *agent))
    assert text.stdout.splitlines() == ["No matches.", "Did you mean: borrow?"]
    as_json = loads(run(tmp_path, *db, "search", "borow", *agent, "--json"))
    assert as_json["warning"] == "No matches. Did you mean: borrow?"
    hidden = ok(run(tmp_path, *db, "search", "quoka", *agent))
    assert hidden.stdout.splitlines() == ["No matches."]
    empty = run(tmp_path, *db, "search", "borow", "--fail-if-empty")
    assert empty.returncode == EXIT_NO_MATCH and empty.stderr == ""
    found = ok(run(tmp_path, *db, "search", "borrow", "--fail-if-empty"))
    assert "borrow" in found.stdout


def test_a_narrow_callers_near_words_are_the_same_from_its_rows_and_from_the_index(
    store: TranscriptStore, db_engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A narrow caller with few messages is answered from its own rows (one read for the
    word, its near words and its prefix form: the lexemes of its rows on PostgreSQL, the
    words of its messages tokenized like FTS5 on SQLite); with that read turned off the same
    questions go to the GIN index or FTS5's vocabulary. Every kind of slip, digits, accents,
    other scripts, CJK text, mixed case and words only other sessions hold give the same
    suggestions both ways."""
    lines = {
        ("s-main", "agent:main:main"): [
            "deploy the staging cluster with terraform",
            "the staging deploy failed at step 42",
            "rollback plan: deploy v2 again, then stage",
            "café au lait while the deployer runs",
            "stagings and stages and staged work",
            "STAGING，部署 staging失败了。Déploiement réussi…",
            "Планировщик запущен; the ṕlanner and the p\u0301lanner",
            "Kelvin \u212aelvin scale, ﬁle and Œuvre",
        ],
        # Characters newer than SQLite's Unicode tables: FTS5 keeps "deploy\U0001f972ed" and
        # "st\u2066aging" one token each, where the tokenizer's mirror would split them.
        ("s-new", "agent:main:subagent:new"): ["we deploy\U0001f972ed it", "st\u2066aging area"],
        ("s-child", "agent:main:subagent:child"): ["the child deploys the staging tree"],
        ("s-other", "agent:ops:main"): ["stagging deplyo terrafrom elsewhere"],
    }
    spawned = {"s-new": "agent:main:main"}  # in the `tree` caller's tree
    for (sid, key), texts in lines.items():
        store.create_session(sid, key, spawned_by=spawned.get(sid))
        store.append_many(sid, chain(texts, prefix=f"{sid}-"))
    queries = [
        "stagin", "stagnig", "staginng", "sxaging", "deplyo", "dpeloy", "terrafrom",
        "rolback", "cafe", "caff", "step4", "deployr", "stge", "xyzzy", "elswhere",
        "deploiment", "reussy", "planer", "plannr", "планировщик", "планировшик", "kelvn",
        "oeuvre", "uvre", "fille", "faile", "deplpy", "stagng", "wee",
    ]  # fmt: skip
    callers = [SELF, Caller("agent:main:main", visibility="tree"), MAIN]
    if db_engine == "sqlite":
        from openclaw_fts.index.sqlite import read as sqlite_read

        off: tuple[object, str] = (sqlite_read, "NARROW_SCAN_ROWS")
    else:
        from openclaw_fts.index.postgresql import read as postgresql_read

        off = (postgresql_read, "NARROW_SCAN_EVENTS")

    def answers() -> dict[tuple[str, str], tuple[list[str], str, int]]:
        out = {}
        for c in callers:
            for q in queries:
                found = check_search_output(tools.sessions_search(store, c, {"query": q}))
                out[c.visibility, q] = (
                    store.suggest(c, q),
                    str(found.get("warning", "")),
                    len(found["results"]),
                )
        return out

    own = answers()
    monkeypatch.setattr(*off, -1)
    index = answers()
    assert own == index
    assert sum(bool(words) for words, _, _ in own.values()) >= 10  # they do suggest
    # `self` is answered from its own rows; `tree` also sees s-new, whose characters the
    # mirror does not vouch for (SQLite then asks the vocabulary): the same answers.
    assert own["self", "deplpy"][0][0] == "deploy"


def test_never_a_word_of_a_session_search_hides_until_it_is_reindexed(
    store: TranscriptStore,
    host: sessionmaker[Session],
    db_engine: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A session whose index is not exact (here: its event rewritten by a bulk UPDATE, which
    the reconciler re-indexes) is hidden from search; its index rows still hold the old words.
    Suggesting one of them would send the agent to a query that finds nothing: every caller,
    on both the own-rows path and the index path, is suggested only words of exact sessions,
    and the new words once the session is re-indexed."""
    store.create_session("s-stale", "agent:main:main")
    store.append_many("s-stale", chain(["the walrus sleeps", "zebra crossing"], prefix="s-stale-"))
    store.create_session("s-exact", "agent:main:main")
    store.append_many("s-exact", chain(["borrow the notes"], prefix="s-exact-"))
    store.create_session("s-side", "agent:main:side")
    store.append_many("s-side", chain(["side notes"], prefix="s-side-"))
    rewritten = chain(["", "narwhal crossing"], prefix="s-stale-")[1]
    with host.begin() as db:
        rows = [{"session_id": "s-stale", "seq": 1, "event": rewritten}]
        db.execute(update(TranscriptEvent), rows)
    callers = [SELF, Caller("agent:main:main", visibility="tree"), MAIN, EVERYONE]
    if db_engine == "sqlite":
        from openclaw_fts.index.sqlite import read as sqlite_read

        off: tuple[object, str] = (sqlite_read, "NARROW_SCAN_ROWS")
    else:
        from openclaw_fts.index.postgresql import read as postgresql_read

        off = (postgresql_read, "NARROW_SCAN_EVENTS")
    for own_rows in (True, False):
        if not own_rows:
            monkeypatch.setattr(*off, -1)
        for caller in callers:
            hidden = store.search(caller, "walrus")
            assert hidden["results"] == [] and hidden.get("indexing") is True
            for query in ("walrsu", "zebar", "walr"):
                assert store.suggest(caller, query) == [], (caller.visibility, query, own_rows)
                assert "Did you mean" not in warning(store, caller, query)
            assert store.suggest(caller, "borow") == ["borrow"]  # an exact session's word
            if caller in (MAIN, EVERYONE):
                # A search of an exact session alone: nothing there is pending, but its
                # suggestions come from every session the caller may see.
                scoped = tools.sessions_search(
                    store, caller, {"query": "walrsu", "sessionKey": "agent:main:side"}
                )
                assert "indexing" not in check_search_output(scoped)
                assert "walrus" not in str(scoped.get("warning", ""))
                assert "notes" in warning_of(store, caller, "notse", "agent:main:side")
    store.reconcile()
    for caller in callers:
        assert store.suggest(caller, "narwhla") == ["narwhal"]
        assert store.suggest(caller, "walrsu") == ["walrus"]  # searchable again
        assert store.suggest(caller, "zebar") == []  # the rewritten text is gone


def _examined(caplog: pytest.LogCaptureFixture) -> list[int]:
    """The candidate counts of the near-word lookups logged since the last clear."""
    return [int(r.args[2]) for r in caplog.records if r.name == spelling.log.name]  # type: ignore[index]


def _crowd(n: int) -> list[str]:
    """``n`` distinct tokens of letters only, all starting with ``zq``, 7 letters long."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["zq" + "".join(letters[(i // 26**p) % 26] for p in range(5)) for i in range(n)]


def test_an_identifier_gets_no_suggestion_and_costs_no_lookup(
    store: TranscriptStore, caplog: pytest.LogCaptureFixture
) -> None:
    """Thousands of identifiers -- worker ids, hashes, tickets, UUIDs -- in the caller's own
    session and another agent's: an absent one (a different ticket, a hash no message holds)
    is not a misspelt word. No caller gets a suggestion, and no near-word lookup runs (the
    word-like gate of openclaw_fts/spelling.py); a word in the same store is still
    corrected."""
    lines = ["the deployment is done"]
    for k in range(1500):
        lines.append(
            f"w{k % 10}g{k // 10 % 10}n{k}q build {k * 2654435761 % 2**28:07x} ticket OPS-{k} "
            f"run {k:08x}-e29b-41d4-a716-{k:012x}"
        )
    store.create_session("s-main", "agent:main:main")
    store.append_many("s-main", chain(lines[:800], prefix="s-main-"))
    store.create_session("s-ops", "agent:ops:main")
    store.append_many("s-ops", chain(lines[800:], prefix="s-ops-"))
    assert store.search(EVERYONE, "w1g0n1q")["results"]  # the identifiers are indexed
    caplog.set_level(logging.DEBUG, logger=spelling.log.name)
    callers = [SELF, Caller("agent:main:main", visibility="tree"), MAIN, EVERYONE]
    for caller in callers:
        for query in (
            "w0g0n99999q", "w1g3n77777q", "3fa9c2e", "OPS-99999", "OPX-12",
            "550e8400-e29b-41d4-a716-446655440000", "1234567", "deadbeefcafe",
        ):  # fmt: skip
            caplog.clear()
            assert warning(store, caller, query) == "", (caller.visibility, query)
            assert store.suggest(caller, query) == []
            assert _examined(caplog) == [], (caller.visibility, query)
        assert store.suggest(caller, "deplyoment") == ["deployment"]


def test_near_words_examine_at_most_the_cap(
    store: TranscriptStore, db_engine: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A vocabulary range crowded by thousands of word-like tokens sharing a misspelt word's
    first letters: the lookup examines at most the cap of its engine (SQLite: that many
    vocabulary terms, or of a narrow caller's own words; PostgreSQL: one-edit words), on the
    index path and the own-rows path alike, and a misspelt word outside the crowd is still
    corrected."""
    crowd = _crowd(3 * spelling.MAX_NEAR_CANDIDATES)
    lines = [" ".join(crowd[i : i + 12]) for i in range(0, len(crowd), 12)]
    store.create_session("s-main", "agent:main:main")
    store.append_many("s-main", chain([*lines, "the deployment is done"], prefix="s-main-"))
    if db_engine == "sqlite":
        cap = spelling.MAX_NEAR_CANDIDATES
    else:
        from openclaw_fts.index.postgresql import read as postgresql_read

        cap = postgresql_read.MAX_ONE_EDIT_PROBES
    caplog.set_level(logging.DEBUG, logger=spelling.log.name)
    for caller in (SELF, MAIN, EVERYONE):
        caplog.clear()
        assert store.suggest(caller, "zqzzzzzq") == []  # word-like, absent, far from all
        examined = _examined(caplog)
        assert examined and max(examined) <= cap, (caller.visibility, examined)
        if db_engine == "sqlite":
            assert max(examined) == cap  # the crowd is larger: the cap binds
        caplog.clear()
        near = crowd[100][:-1] + "z" + crowd[100][-1]  # one letter added to a crowd token
        assert crowd[100] in store.suggest(caller, near), caller.visibility
        assert store.suggest(caller, "deplyoment") == ["deployment"]


def test_a_tracked_words_neighbours_in_the_vocabulary_are_still_near_words(
    store: TranscriptStore, db_engine: str
) -> None:
    """SQLite reads a tracked word (one with an impact list) from the list's table and the
    vocabulary around it, not through it: the words just before and after it in term order
    are still near words, and every suggestion is the one the store gave before the word was
    tracked."""
    if db_engine != "sqlite":
        pytest.skip("the vocabulary ranges are SQLite's")
    from openclaw_fts.index.sqlite import impact
    from openclaw_fts.index.sqlite.fts import cursor

    store.create_session("s-main", "agent:main:main")
    texts = [f"deploy step {i}" for i in range(8)] + ["deploys rolled back", "deplo typed"]
    store.append_many("s-main", chain(texts, prefix="s-main-"))
    queries = ["deployz", "deplox", "deplyo", "deploq"]
    before = {q: store.suggest(EVERYONE, q) for q in queries}
    with store.engine.begin() as conn:
        assert "deploy" in impact.promote(cursor(conn), 8)
    after = {q: store.suggest(EVERYONE, q) for q in queries}
    assert after == before
    assert after["deployz"] == ["deploy", "deploys", "deplo"]
    assert after["deplox"][:2] == ["deploy", "deplo"]
    assert "deploy" in after["deplyo"]


def test_the_vocabulary_table_is_made_with_the_connection_not_by_a_search(
    populated: TranscriptStore, db_engine: str
) -> None:
    """SQLite: the TEMP ``fts5vocab`` table a search that finds nothing reads is made when the
    connection gets the plugin's settings, outside any transaction. Made by the search, the
    search's ROLLBACK dropped it again, and every search that found nothing changed the
    connection's TEMP schema twice (each statement after it prepared again)."""
    if db_engine != "sqlite":
        pytest.skip("fts5vocab is SQLite's")
    with populated.engine.connect() as conn:
        temp = conn.exec_driver_sql("SELECT name FROM temp.sqlite_master").scalars().all()
    assert "openclaw_fts_vocab" in temp
    assert warning(populated, EVERYONE, "borow") == "No matches. Did you mean: borrow?"
    with populated.engine.connect() as conn:
        temp = conn.exec_driver_sql("SELECT name FROM temp.sqlite_master").scalars().all()
    assert "openclaw_fts_vocab" in temp


def test_a_wide_callers_near_word_is_proved_visible_and_unmasked_by_one_statement(
    store: TranscriptStore, db_engine: str
) -> None:
    """SQLite, a wide caller: the statement that proves a short near word visible also finds
    it in a visible message without a credential mask, so the mask check that follows runs
    no statement of its own; a near word that only a masked message holds is still asked
    (and, held only inside the mask, not suggested)."""
    if db_engine != "sqlite":
        pytest.skip("the statements are SQLite's")
    from sqlalchemy import event

    store.create_session("s-main", "agent:main:main")
    texts = ["walnut bread", "a walrus tusk", "key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"]
    store.append_many("s-main", chain(texts, prefix="s-main-"))
    statements: list[str] = []

    @event.listens_for(store.engine, "checkout")
    def _trace(dbapi: object, record: object, proxy: object) -> None:
        dbapi.set_trace_callback(statements.append)  # type: ignore[attr-defined]

    assert store.suggest(EVERYONE, "walrut") == ["walnut", "walrus"]  # 1 each: term order
    masked = [s for s in statements if "instr(mi.body" in s]
    assert len(masked) == 2 and all("CASE WHEN EXISTS" in s for s in masked), masked
    statements.clear()
    assert store.suggest(EVERYONE, "proq") == []  # "pro" only inside the mask (sk-pro…)
    assert any("instr(mi.body" in s and "CASE" not in s for s in statements)


def test_a_narrow_callers_mask_check_is_answered_by_the_read_of_its_rows(
    store: TranscriptStore, db_engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A narrow caller with few messages: the read of its rows that gave a word's near words
    also says which of those rows hold no credential mask, so whether a short near word is
    said outside every mask needs no statement of its own (SQLite: no ``instr`` proof per
    word; PostgreSQL: no transaction, ``test_pg_round_trips``). A word only a masked message
    holds is still judged by its ranked messages: inside the mask it is not suggested,
    outside it (the same message) it is. The answers are those of the index path."""
    store.create_session("s-main", "agent:main:main")
    texts = [
        "walnut bread",
        "a walrus tusk",
        "key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789",
        "the oboe tip: sk-obo1-abcdefghijklmnopqrstuvwxyz0123456789",
    ]
    store.append_many("s-main", chain(texts, prefix="s-main-"))
    store.create_session("s-other", "agent:ops:main")
    store.append_many("s-other", chain(["the wallet of ops", "a pro plan"], prefix="s-other-"))
    queries = ["walrut", "proq", "obq", "oboq", "wallrus"]

    def answers() -> dict[tuple[str, str], list[str]]:
        return {(c.visibility, q): store.suggest(c, q) for c in (SELF, MAIN) for q in queries}

    statements: list[str] = []
    if db_engine == "sqlite":

        @event.listens_for(store.engine, "checkout")
        def _trace(dbapi: object, record: object, proxy: object) -> None:
            dbapi.set_trace_callback(statements.append)  # type: ignore[attr-defined]

    assert store.suggest(SELF, "walrut") == ["walnut", "walrus"]
    if db_engine == "sqlite":
        assert not any("instr(mi.body, " in s for s in statements), statements
    assert store.suggest(SELF, "proq") == []  # "pro" only inside the mask (sk-pro…)
    assert store.suggest(SELF, "oboq") == ["oboe"]
    own = answers()
    if db_engine == "sqlite":
        from openclaw_fts.index.sqlite import read as sqlite_read

        monkeypatch.setattr(sqlite_read, "NARROW_SCAN_ROWS", -1)
    else:
        from openclaw_fts.index.postgresql import read as postgresql_read

        monkeypatch.setattr(postgresql_read, "NARROW_SCAN_EVENTS", -1)
    assert answers() == own


def test_a_wide_callers_near_words_are_proved_unmasked_by_their_count(
    store: TranscriptStore, db_engine: str
) -> None:
    """PostgreSQL, a wide caller: the statement that counts the near words also reads whether
    the first row it counted of each holds no credential mask, so the mask check that follows
    runs no statement of its own when it does; a near word whose first row is masked is still
    asked (here a later row holds it without a mask: suggested)."""
    if db_engine != "postgresql":
        pytest.skip("the statements are PostgreSQL's (SQLite's: the test above)")
    store.create_session("s-main", "agent:main:main")
    texts = [
        "the oboe tip: sk-obo1-abcdefghijklmnopqrstuvwxyz0123456789",
        "walnut bread",
        "a walrus tusk",
        "an oboe solo",
    ]
    store.append_many("s-main", chain(texts, prefix="s-main-"))
    statements: list[str] = []

    @event.listens_for(store.engine, "before_cursor_execute")
    def _trace(conn: object, cursor: object, statement: str, *args: object) -> None:
        statements.append(statement)

    assert store.suggest(EVERYONE, "walrut") == ["walnut", "walrus"]
    assert not any("strpos(mi.body" in s for s in statements), statements
    statements.clear()
    assert "oboe" in store.suggest(EVERYONE, "oboq")  # its first row is masked (sk-obo…)
    assert any("strpos(mi.body" in s for s in statements), statements


def test_identifiers_sharing_a_words_first_letters_do_not_crowd_it_out(
    store: TranscriptStore,
) -> None:
    """More identifiers than the cap of examined candidates (``ab0000z`` …) share a misspelt
    word's first two letters and sort before its near word: a wide caller's near words are
    word-like only, so on SQLite the cap counts words (the writer-kept vocabulary holds no
    identifier) and the near word is still examined and suggested; the identifiers took
    every place before (PostgreSQL probes the one-edit words: the same answer)."""
    ids = [f"ab{k:04d}z" for k in range(spelling.MAX_NEAR_CANDIDATES + 100)]
    lines = [" ".join(ids[i : i + 10]) for i in range(0, len(ids), 10)]
    store.create_session("s-main", "agent:main:main")
    store.append_many("s-main", chain([*lines, "the abxdefgh valve"], prefix="s-main-"))
    for caller in (MAIN, EVERYONE):
        assert store.suggest(caller, "abqdefgh") == ["abxdefgh"], caller.visibility


def test_a_word_written_again_after_a_rollback_is_a_near_word(
    store: TranscriptStore, host: sessionmaker[Session]
) -> None:
    """A word first written by a transaction that rolled back, then by one that commits, on
    the same connection: it is a near word (SQLite's writer remembers only the words it found
    committed in its vocabulary, never its own uncommitted ones)."""
    from openclaw_fts.models import AgentSession

    db = host()
    try:
        s = AgentSession(session_id="s1", session_key="agent:main:main")
        db.add(s)
        db.add(TranscriptEvent(session=s, event=msg("m1", "the quixotic plan", parent=None)))
        db.flush()
        db.rollback()
    finally:
        db.close()
    assert store.suggest(EVERYONE, "quixotix") == []
    with host.begin() as db:
        s = AgentSession(session_id="s1", session_key="agent:main:main")
        db.add(s)
        db.add(TranscriptEvent(session=s, event=msg("m1", "the quixotic plan", parent=None)))
    assert store.suggest(EVERYONE, "quixotix") == ["quixotic"]


def test_a_word_whose_rows_are_gone_is_no_near_word(store: TranscriptStore) -> None:
    """The words of deleted rows stay in SQLite's writer-kept vocabulary (terms are never
    deleted), but no index row holds them: no caller is offered one."""
    store.create_session("s-gone", "agent:main:main")
    store.append("s-gone", msg("g1", "the zanzibar ferry", parent=None))
    store.create_session("s-kept", "agent:main:main")
    store.append("s-kept", msg("k1", "the zanzibat typo", parent=None))
    assert store.suggest(EVERYONE, "zanzibax") == ["zanzibar", "zanzibat"]
    assert store.delete_session("s-gone")
    for caller in (MAIN, EVERYONE):
        assert store.suggest(caller, "zanzibax") == ["zanzibat"], caller.visibility


def test_a_misspelt_word_of_another_script_gets_its_near_word(
    store: TranscriptStore, db_engine: str
) -> None:
    """A word of Cyrillic letters: SQLite's writer-kept vocabulary reads Latin runs only (the
    impact lists' read of a body), so the near words of such a word come from FTS5's own
    vocabulary, as they did before it."""
    if db_engine != "sqlite":
        pytest.skip("the writer-kept vocabulary is SQLite's")
    store.create_session("s-main", "agent:main:main")
    store.append("s-main", msg("m1", "the планировщик runs nightly", parent=None))
    for caller in (MAIN, EVERYONE):
        assert store.suggest(caller, "планировщикк") == ["планировщик"], caller.visibility


def test_a_wide_callers_near_words_follow_the_index_and_are_proved_for_it(
    store: TranscriptStore,
) -> None:
    """A wide caller (``agent``, ``all``) gets its near words in the order of their frequency
    over the whole index, on both engines (PostgreSQL counted them among its visible messages
    before: ``walnut`` first for ``agent``), and still only words it may see: ``walrun``, the
    most frequent of the three, is held only by another agent's session."""
    texts = {
        ("s-main", "agent:main:main"): ["walnut bread", "walnut cake", "a walrus tusk"],
        ("s-side", "agent:main:side"): ["walnut tree"],
        ("s-ops", "agent:ops:main"): ["the walrus swims"] * 6 + ["walrun"] * 9,
    }
    for (sid, key), lines in texts.items():
        store.create_session(sid, key)
        store.append_many(sid, chain(lines, prefix=f"{sid}-"))
    assert store.suggest(MAIN, "walrut") == ["walrus", "walnut"]  # 7 against 3 (it sees 1, 3)
    assert store.suggest(EVERYONE, "walrut") == ["walrun", "walrus", "walnut"]  # 9, 7, 3
    assert store.suggest(SELF, "walrut") == ["walnut", "walrus"]  # its own: 2 against 1


def test_a_wide_callers_tracked_near_word_comes_first_and_ties_past_the_cap_go_by_the_word(
    store: TranscriptStore, db_engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL, a wide caller: a tracked near word (an impact list's word) is known present
    with the count it was tracked at (at least ``FREQUENT_TERM_MIN_DOCS``, as on SQLite), so
    it comes before every untracked one, and is proved visible from its list; untracked ones
    are counted over the index up to ``NEAR_WORD_COUNT_CAP``, past which they tie (the word
    orders them). No suggestion changes when a word becomes tracked."""
    if db_engine != "postgresql":
        pytest.skip("the cap and the tracked words' reading are PostgreSQL's")
    from openclaw_fts.index.postgresql import impact
    from openclaw_fts.index.postgresql import read as postgresql_read

    store.create_session("s-main", "agent:main:main")
    texts = ["walrus"] * 8 + ["walnut"] * 3 + ["walrun"] * 2 + ["walrux"]
    store.append_many("s-main", chain(texts, prefix="s-main-"))
    assert store.suggest(MAIN, "walrut") == ["walrus", "walnut", "walrun"]
    with store.engine.begin() as conn:
        conn.execute(sql("ANALYZE message_index"))
        assert impact.promote(conn, 8) == 1  # walrus
    assert store.suggest(MAIN, "walrut") == ["walrus", "walnut", "walrun"]
    monkeypatch.setattr(postgresql_read, "NEAR_WORD_COUNT_CAP", 2)
    # walnut (3) and walrun (2) both reach the cap: the word orders them, walrus still first
    assert store.suggest(MAIN, "walrut") == ["walrus", "walnut", "walrun"]
    monkeypatch.setattr(postgresql_read, "NEAR_WORD_COUNT_CAP", 1)
    assert store.suggest(MAIN, "walrut") == ["walrus", "walnut", "walrun"]
    with store.engine.begin() as conn:
        conn.execute(sql("DELETE FROM message_impact_terms WHERE term = 'walrus'"))
    # untracked again, and capped at 1 like the others: the word orders all four
    assert store.suggest(MAIN, "walrut") == ["walnut", "walrun", "walrus"]

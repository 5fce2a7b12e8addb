"""The query language against real FTS5 (stdlib sqlite3): meaning, CJK, safety, limits."""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openclaw_fts.query import (
    MAX_QUERY_TERMS,
    MAX_TERM_TOKENS,
    CompiledQuery,
    Term,
    compile_query,
)
from openclaw_fts.tokens import index_body

# The production table without the external-content options: same columns, same tokenizer.
DDL = (
    "CREATE VIRTUAL TABLE message_fts USING fts5(body, sess, "
    "tokenize='unicode61 remove_diacritics 2')"
)

CORPUS = [
    "Café résumé for the interview",
    "the staging deployment failed at noon",
    "deployment to production went fine; staging was skipped",
    "production is down",
    "or something like that",
    "a c",
    "b c",
    "a b",
    "c",
    "it's fine, edit gateway/run.py and mail user@host.com",
    "disk usage is at 50% on C:\\Users\\me",
    "TODO: fix the flaky test",
    "a-b testing with c++ and node.js, run with --verbose",
    "foo:bar and foo bar",
    "content:foo says we start now",
    "the unbalanced quote problem",
    "near a b and then x",
    "明天下午三点开项目评审会议",
    "我们的数据库很好",
    "项目的评审",
    "人々の生活",
    "明日の会議はキャンセルされました",
    "サーバーが落ちた",
    "ｻｰﾊﾞｰ ok",
    "회의록은 내일 공유합니다",
    "我们明天部署新的deploy脚本",
    "部署完成",
]
SESS_ONLY_ROW = 1000  # body empty, every interesting word only in the sess column


@pytest.fixture(scope="module")
def db() -> Iterator[sqlite3.Connection]:
    con = sqlite3.connect(":memory:")
    con.execute(DDL)
    con.executemany(
        "INSERT INTO message_fts(rowid, body, sess) VALUES (?, ?, ?)",
        [(i, index_body(text), f"s{i % 3}") for i, text in enumerate(CORPUS)],
    )
    sess_words = "s0 s1 s2 sess body a b c or and not near 明 天 회 의 foo bar x deploy staging"
    con.execute(
        "INSERT INTO message_fts(rowid, body, sess) VALUES (?, '', ?)", (SESS_ONLY_ROW, sess_words)
    )
    yield con
    con.close()


def run(con: sqlite3.Connection, compiled: CompiledQuery) -> list[int]:
    sql = "SELECT rowid FROM message_fts WHERE message_fts MATCH ? ORDER BY rank"
    return [row[0] for row in con.execute(sql, (compiled.match,))]


def search(con: sqlite3.Connection, query: str) -> set[str]:
    compiled = compile_query(query)
    if compiled is None:
        return set()
    rowids = run(con, compiled)
    assert SESS_ONLY_ROW not in rowids
    return {CORPUS[rowid] for rowid in rowids}


# Outside its double-quoted strings a compiled expression holds only our own syntax.
_FTS_STRING = re.compile(r'"(?:[^"]|"")*"\*?')
_OWN_SYNTAX = re.compile(r"(?:[() ]|AND|OR)*")


def assert_well_formed(compiled: CompiledQuery) -> None:
    assert compiled.match.startswith("body : (") and compiled.match.endswith(")")
    strings = _FTS_STRING.findall(compiled.match)
    assert strings and all(s not in ('""', '""*') for s in strings)
    rest = _FTS_STRING.sub(" ", compiled.match[len("body : ") :])
    assert _OWN_SYNTAX.fullmatch(rest), rest
    assert rest.count("(") == rest.count(")")
    assert compiled.terms and all(term.tokens for term in compiled.terms)
    assert len(strings) == len(compiled.terms)


# --- meaning ------------------------------------------------------------------------------------


def test_words_are_anded_and_folded(db: sqlite3.Connection) -> None:
    assert search(db, "cafe resume") == {"Café résumé for the interview"}
    assert search(db, "CAFÉ RESUME") == {"Café résumé for the interview"}
    assert search(db, "cafe production") == set()


def test_word_with_combining_marks_is_folded(db: sqlite3.Connection) -> None:
    assert search(db, "re\u0301sume\u0301") == {"Café résumé for the interview"}


def test_phrase_matches_adjacent_words_only(db: sqlite3.Connection) -> None:
    assert search(db, '"staging deployment"') == {"the staging deployment failed at noon"}
    assert search(db, "staging deployment") == {
        "the staging deployment failed at noon",
        "deployment to production went fine; staging was skipped",
    }
    assert search(db, '"deployment staging"') == set()


def test_prefix(db: sqlite3.Connection) -> None:
    both = {
        "the staging deployment failed at noon",
        "deployment to production went fine; staging was skipped",
        "我们明天部署新的deploy脚本",
    }
    assert search(db, "deploy*") == both
    assert search(db, '"deplo"*') == both
    assert search(db, "deploym*") == both - {"我们明天部署新的deploy脚本"}
    assert search(db, "deploy") == {"我们明天部署新的deploy脚本"}
    assert search(db, '"staging deplo"*') == {"the staging deployment failed at noon"}


def test_or_means_either(db: sqlite3.Connection) -> None:
    assert search(db, "staging OR production") == {
        "the staging deployment failed at noon",
        "deployment to production went fine; staging was skipped",
        "production is down",
    }


def test_or_binds_tighter_than_and(db: sqlite3.Connection) -> None:
    compiled = compile_query("a OR b c")
    assert compiled is not None
    assert compiled.match == 'body : (("a" OR "b") AND "c")'
    assert search(db, "a OR b c") == {
        "a c",
        "b c",
        "a-b testing with c++ and node.js, run with --verbose",
    }
    assert search(db, "c a OR b") == search(db, "a OR b c")


def test_or_without_a_term_on_one_side_is_the_word(db: sqlite3.Connection) -> None:
    assert search(db, "OR") == {"or something like that"}
    assert search(db, "OR something") == {"or something like that"}
    assert search(db, "something OR") == {"or something like that"}
    assert search(db, "OR OR") == {"or something like that"}
    compiled = compile_query("a OR OR b")
    assert compiled is not None and compiled.match == 'body : ("a" AND "OR" AND "OR" AND "b")'
    # Lowercase or is a word too.
    assert search(db, "or something") == {"or something like that"}
    assert search(db, "production or staging") == set()


def test_or_chain_and_dropped_terms() -> None:
    compiled = compile_query("a OR b OR c d")
    assert compiled is not None
    assert compiled.match == 'body : (("a" OR "b" OR "c") AND "d")'
    # A term without any token is dropped before OR finds its neighbours.
    compiled = compile_query("a OR ... b")
    assert compiled is not None and compiled.match == 'body : ("a" OR "b")'


def test_terms_for_the_snippet_builder() -> None:
    compiled = compile_query('Café "staging DEPLOY"* node.js 明天')
    assert compiled is not None
    assert compiled.terms == (
        Term(("cafe",), False),
        Term(("staging", "deploy"), True),
        Term(("node", "js"), False),
        Term(("明", "天"), False),
    )


@pytest.mark.parametrize(
    "query", ["", "   ", '""', '""*', "...", "*", "-", "(", ")", "\x00", "\ud800"]
)
def test_nothing_searchable_is_none(query: str) -> None:
    assert compile_query(query) is None


# --- everything else is literal -----------------------------------------------------------------

REGRESSIONS: list[tuple[str, set[str]]] = [
    ("it's", {"it's fine, edit gateway/run.py and mail user@host.com"}),
    ("gateway/run.py", {"it's fine, edit gateway/run.py and mail user@host.com"}),
    ("user@host.com", {"it's fine, edit gateway/run.py and mail user@host.com"}),
    ("50%", {"disk usage is at 50% on C:\\Users\\me"}),
    ("C:\\Users\\me", {"disk usage is at 50% on C:\\Users\\me"}),
    ("TODO: fix", {"TODO: fix the flaky test"}),
    ("a-b", {"a-b testing with c++ and node.js, run with --verbose", "a b", "near a b and then x"}),
    ('"unbalanced', {"the unbalanced quote problem"}),
    ('foo"bar', {"foo:bar and foo bar"}),
    ("OR", {"or something like that"}),
    ("*", set()),
    ("...", set()),
    (
        "deploy*",
        {
            "the staging deployment failed at noon",
            "deployment to production went fine; staging was skipped",
            "我们明天部署新的deploy脚本",
        },
    ),
    (
        "c++",
        {
            "a-b testing with c++ and node.js, run with --verbose",
            "a c",
            "b c",
            "c",
            "disk usage is at 50% on C:\\Users\\me",
        },
    ),
    ("node.js", {"a-b testing with c++ and node.js, run with --verbose"}),
    ("-verbose", {"a-b testing with c++ and node.js, run with --verbose"}),
    ("foo:bar", {"foo:bar and foo bar"}),
    (
        "AND",
        {
            "a-b testing with c++ and node.js, run with --verbose",
            "foo:bar and foo bar",
            "near a b and then x",
            "it's fine, edit gateway/run.py and mail user@host.com",
        },
    ),
    ("(x", {"near a b and then x"}),
    ('""', set()),
    ("content:foo", {"content:foo says we start now"}),
    ("^start", {"content:foo says we start now"}),
    ("NEAR(a b)", {"near a b and then x"}),
]


@pytest.mark.parametrize(("query", "expected"), REGRESSIONS, ids=[q for q, _ in REGRESSIONS])
def test_regression_inputs_are_literal(
    db: sqlite3.Connection, query: str, expected: set[str]
) -> None:
    compiled = compile_query(query)
    if compiled is not None:
        assert_well_formed(compiled)
    assert search(db, query) == expected


def test_operators_are_words(db: sqlite3.Connection) -> None:
    assert search(db, "NOT production") == set()  # needs the word "not"
    assert search(db, "- production") == search(db, "production")
    assert search(db, "content : foo") == {"content:foo says we start now"}
    assert search(db, "body:staging") == set()  # the words body and staging
    assert search(db, "{body}: staging") == set()
    # Parentheses are literal: "(staging" OR "production)" -- the same as without them.
    assert search(db, "(staging OR production)") == search(db, "staging OR production")


SESS_ATTACKS = [
    "sess:s1",
    "sess : s1",
    "s1",
    "s0",
    "{sess}: s1",
    "{sess} : (s1 OR s2)",
    "sess:(s1 OR s2)",
    '"s1"',
    "s1*",
    "s*",
    "- sess:s1",
    "body:x OR sess:s1",
    ") OR sess:s1 OR (",
    '") OR sess : "s1',
    "NEAR(sess s1)",
    "sess",
    "明 天 회",
    "foo bar",
]


@pytest.mark.parametrize("query", SESS_ATTACKS)
def test_query_never_reaches_the_sess_column(db: sqlite3.Connection, query: str) -> None:
    compiled = compile_query(query)
    if compiled is None:
        return
    assert_well_formed(compiled)
    rowids = run(db, compiled)
    assert SESS_ONLY_ROW not in rowids
    assert all(not any(t in ("s0", "s1", "s2") for t in CORPUS[r].split()) for r in rowids)


def test_composes_with_the_visibility_filter(db: sqlite3.Connection) -> None:
    compiled = compile_query("staging OR production")
    assert compiled is not None
    sql = "SELECT rowid FROM message_fts WHERE message_fts MATCH ? ORDER BY rowid"
    rows = [r[0] for r in db.execute(sql, (f"({compiled.match}) AND sess : (s1 OR s2)",))]
    assert rows == [1, 2]  # row 3 ("production is down") is in session s0


# --- CJK ----------------------------------------------------------------------------------------

CJK_CASES: list[tuple[str, set[str]]] = [
    ("会", {"明天下午三点开项目评审会议", "明日の会議はキャンセルされました"}),
    ("明天", {"明天下午三点开项目评审会议", "我们明天部署新的deploy脚本"}),
    ("评审会", {"明天下午三点开项目评审会议"}),
    ("下午三点开项", {"明天下午三点开项目评审会议"}),
    ("数据", {"我们的数据库很好"}),
    ("评项", set()),
    ('"项目 评审"', {"明天下午三点开项目评审会议"}),
    ("项目评审", {"明天下午三点开项目评审会议"}),
    ("项目 评审", {"明天下午三点开项目评审会议", "项目的评审"}),
    ("人々", {"人々の生活"}),
    ("会議", {"明日の会議はキャンセルされました"}),
    ("キャンセル", {"明日の会議はキャンセルされました"}),
    ("された", set()),
    ("されました", {"明日の会議はキャンセルされました"}),
    ("の", {"人々の生活", "明日の会議はキャンセルされました"}),
    ("サーバー", {"サーバーが落ちた"}),
    ("ｻｰﾊﾞｰ", {"ｻｰﾊﾞｰ ok"}),
    ("회의", {"회의록은 내일 공유합니다"}),
    ("회의록은", {"회의록은 내일 공유합니다"}),
    ("공유", {"회의록은 내일 공유합니다"}),
    ("部署 deploy", {"我们明天部署新的deploy脚本"}),
    ("部署", {"我们明天部署新的deploy脚本", "部署完成"}),
    (
        "部署 OR 会議",
        {"我们明天部署新的deploy脚本", "部署完成", "明日の会議はキャンセルされました"},
    ),
    ("明天*", {"明天下午三点开项目评审会议", "我们明天部署新的deploy脚本"}),
]


@pytest.mark.parametrize(("query", "expected"), CJK_CASES, ids=[q for q, _ in CJK_CASES])
def test_cjk_substrings(db: sqlite3.Connection, query: str, expected: set[str]) -> None:
    assert search(db, query) == expected


# --- limits -------------------------------------------------------------------------------------


def test_max_query_terms() -> None:
    compiled = compile_query(" ".join(f"w{i}" for i in range(500)))
    assert compiled is not None
    assert len(compiled.terms) == MAX_QUERY_TERMS
    assert compiled.terms[0] == Term(("w0",), False)
    assert compiled.terms[-1] == Term((f"w{MAX_QUERY_TERMS - 1}",), False)


def test_max_query_terms_drops_whole_trailing_groups() -> None:
    words = [f"w{i}" for i in range(MAX_QUERY_TERMS - 1)]
    compiled = compile_query(" ".join([*words, "x OR y"]))
    assert compiled is not None
    assert len(compiled.terms) == MAX_QUERY_TERMS - 1
    assert " OR " not in compiled.match
    compiled = compile_query(" OR ".join(f"w{i}" for i in range(200)))
    assert compiled is not None
    assert len(compiled.terms) == MAX_QUERY_TERMS
    assert compiled.match.count(" OR ") == MAX_QUERY_TERMS - 1


def test_tokenless_words_do_not_use_up_the_budget() -> None:
    compiled = compile_query("... " * 1000 + "needle")
    assert compiled is not None and compiled.terms == (Term(("needle",), False),)


def test_max_term_tokens(db: sqlite3.Connection) -> None:
    phrase = " ".join(f"t{i}" for i in range(100))
    compiled = compile_query(f'"{phrase}"*')
    assert compiled is not None
    (term,) = compiled.terms
    assert len(term.tokens) == MAX_TERM_TOKENS and not term.prefix
    cjk = compile_query("会" * 4096)
    assert cjk is not None and len(cjk.terms[0].tokens) == MAX_TERM_TOKENS
    run(db, cjk)


def test_worst_case_queries_are_small_and_fast(db: sqlite3.Connection) -> None:
    worst = [
        "a " * 2048,
        "a OR " * 819,
        '"a" ' * 1024,
        "会" * 4096,
        "x" * 4096,
        '"x' * 2048,
        "a*" * 2048,
        "ab* " * 1024,
    ]
    for query in worst:
        started = time.perf_counter()
        compiled = compile_query(query)
        assert compiled is not None
        assert len(compiled.match) < 4 * 4096
        run(db, compiled)
        assert time.perf_counter() - started < 1.0
    assert compile_query('"' * 4096) is None  # 2048 empty phrases
    huge = compile_query("word " * 2_000_000)  # 10 MB: lexing stops once the budget is full
    assert huge is not None and len(huge.terms) == MAX_QUERY_TERMS


# --- compile_query is total ---------------------------------------------------------------------

_SYMBOLS = list("\"*:^-(){}+,./\\'@")
_WORDS = ["NEAR", "NEAR(", "NOT", "OR", "AND", "or", "sess", "body", "sess:", "body:", "s1"]
_WORDS += ["deploy", "staging", "a", "b", "c", "x"]
_ODD = ["\x00", "\x01", "\x1f", "\x7f", "\t", "\n", " ", "  ", "\u3000", "\u00a0"]
_SURROGATES = ["\ud800", "\udfff", "\ud83d", "\ude00"]
_SCRIPTS = ["明天", "会議", "회의", "ー", "々", "ｱ", "é", "e\u0301", "ß", "İ", "😀"]
_SCRIPTS += ["👩\u200d👩\u200d👧", "ᦰ", "🥰"]
_PIECES = st.one_of(
    st.sampled_from(_SYMBOLS + _WORDS + _ODD + _SURROGATES + _SCRIPTS),
    st.characters(),
    st.text(max_size=12),
)
QUERIES = st.one_of(
    st.lists(_PIECES, max_size=40).map("".join),
    st.lists(_PIECES, max_size=1500).map(lambda pieces: "".join(pieces)[:4096]),
    st.text(max_size=4096),
)


@settings(
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(query=QUERIES)
def test_compile_query_is_total_and_match_never_fails(db: sqlite3.Connection, query: str) -> None:
    compiled = compile_query(query)
    if compiled is None:
        return
    assert_well_formed(compiled)
    assert len(compiled.terms) <= MAX_QUERY_TERMS
    assert all(len(term.tokens) <= MAX_TERM_TOKENS for term in compiled.terms)
    rowids = run(db, compiled)  # never raises: no FTS5 syntax error, always encodable
    assert SESS_ONLY_ROW not in rowids
    db.execute(
        "SELECT count(*) FROM message_fts WHERE message_fts MATCH ?",
        (f"({compiled.match}) AND sess : (s1 OR s2)",),
    ).fetchall()

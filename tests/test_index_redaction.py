"""The index holds the masked text (docs/redaction.md, "The index"): no query can match inside
a masked secret, and a database indexed before that (INDEX_VERSION 1) is re-indexed by the
reconciler."""

from __future__ import annotations

from factories import chain, msg
from sqlalchemy import text

from openclaw_fts import Caller, TranscriptStore
from openclaw_fts.check import check
from openclaw_fts.index.sqlite import CONTENT_TABLE, FTS_TABLE
from openclaw_fts.models import INDEX_VERSION
from openclaw_fts.redact import Redactor

KEY = "agent:main:main"
CALLER = Caller(KEY, visibility="agent")
SECRET = "sk-proj-q7vXk2Lm9Qr4Tv7Wn3YsBc6Hd1Fg8Jp5"
PASSWORD = "Tr0ub4dor-correct-horse-77"
#: Characters of the secret's hidden middle tried as a prefix query (each one a query).
ORACLE_PREFIX_CHARS = 12


def _prefix_queries(secret: str) -> list[str]:
    """What an attacker types to spell a key out: ``"sk proj q"*``, ``"sk proj q7"*`` …"""
    words = secret.replace("-", " ").split()
    head, last = words[:-1], words[-1]
    return [f'"{" ".join([*head, last[:n]])}"*' for n in range(1, ORACLE_PREFIX_CHARS + 1)]


def _seed(store: TranscriptStore) -> None:
    store.create_session("s1", KEY)
    store.append_many(
        "s1",
        chain(
            [
                f"here is the deploy key {SECRET} keep it safe",
                f"and the database: DB_PASSWORD={PASSWORD} for staging",
                "the deploy went fine",
            ]
        ),
    )


def test_prefix_queries_cannot_spell_out_a_masked_key(store: TranscriptStore) -> None:
    _seed(store)
    # the message is found by its words, and its snippet shows the mask
    out = store.search(CALLER, "deploy key")
    assert [r["messageId"] for r in out["results"]] == ["m0"]
    assert "sk-pro…Jp5" not in out["results"][0]["snippet"]  # (the kept end is 4 characters)
    assert "sk-pro…8Jp5" in out["results"][0]["snippet"]
    # the oracle: no prefix of the hidden middle matches, not even its first character
    for query in _prefix_queries(SECRET):
        assert store.search(CALLER, query)["results"] == [], query
    # nor does any piece of the hidden middle, nor the password or a prefix of it
    for query in ("q7vXk2Lm9Qr4Tv7Wn3YsBc6Hd1Fg8Jp5", "Lm9Qr4*", "Tr0ub4dor", "Tr0*", "horse"):
        assert store.search(CALLER, query)["results"] == [], query
    # the kept start of the mask is still searchable (it is shown anyway)
    assert [r["messageId"] for r in store.search(CALLER, '"sk pro"')["results"]] == ["m0"]


def test_the_index_file_holds_no_secret(store: TranscriptStore) -> None:
    _seed(store)
    with store.engine.connect() as conn:
        bodies = [row[0] for row in conn.execute(text(f"SELECT body FROM {CONTENT_TABLE}"))]
        conn.exec_driver_sql(f"CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, {FTS_TABLE}, row)")
        terms = {row[0] for row in conn.execute(text("SELECT term FROM temp.v"))}
    assert len(bodies) == 3
    for body in bodies:
        assert SECRET not in body and PASSWORD not in body
        assert "q7vXk2Lm9" not in body
    assert not {t for t in terms if t.startswith(("q7vx", "tr0ub"))}


def _index_as_version_one(store: TranscriptStore) -> None:
    """What INDEX_VERSION 1 left in a database: the unmasked message text in the index."""
    with store.engine.begin() as conn:
        rows = conn.execute(text(f"SELECT id, body, sess FROM {CONTENT_TABLE}")).all()
        raw = {
            0: f"here is the deploy key {SECRET} keep it safe",
            1: f"and the database: DB_PASSWORD={PASSWORD} for staging",
        }
        for position, (row_id, body, sess) in enumerate(sorted(rows)):
            if position not in raw:
                continue
            conn.execute(
                text(
                    f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, body, sess) "
                    "VALUES ('delete', :id, :body, :sess)"
                ),
                {"id": row_id, "body": body, "sess": sess},
            )
            conn.execute(
                text(f"UPDATE {CONTENT_TABLE} SET body = :body WHERE id = :id"),
                {"id": row_id, "body": raw[position]},
            )
            conn.execute(
                text(f"INSERT INTO {FTS_TABLE}(rowid, body, sess) VALUES (:id, :body, :sess)"),
                {"id": row_id, "body": raw[position], "sess": sess},
            )
        conn.execute(text("UPDATE openclaw_index_state SET index_version = 1"))


def _fts_matches(store: TranscriptStore, query: str) -> int:
    with store.engine.connect() as conn:
        found = conn.execute(
            text(f"SELECT count(*) FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH :q"), {"q": query}
        ).scalar_one()
    return int(found)


def test_a_database_indexed_at_version_one_is_reindexed_masked(store: TranscriptStore) -> None:
    assert INDEX_VERSION > 1  # older databases were indexed at version 1
    _seed(store)
    _index_as_version_one(store)
    # the old index is an oracle: a prefix of the key's middle matches in the file
    assert _fts_matches(store, '"sk proj q7v"*') == 1
    assert _fts_matches(store, "Tr0ub4dor*") == 1
    # ... but search does not use it: the session is pending until re-indexed
    assert store.index_status() == {"pending": 1, "indexed": 0, "total": 1}
    assert store.search(CALLER, '"sk proj q7v"*')["results"] == []
    report = store.reconcile()
    assert report["sessions"] == 1
    assert store.index_status() == {"pending": 0, "indexed": 1, "total": 1}
    assert _fts_matches(store, '"sk proj q7v"*') == 0
    assert _fts_matches(store, "Tr0ub4dor*") == 0
    for query in _prefix_queries(SECRET):
        assert store.search(CALLER, query)["results"] == [], query
    assert [r["messageId"] for r in store.search(CALLER, "staging")["results"]] == ["m1"]
    assert check(store.engine).ok  # the check compares the index with the masked text


def test_check_reports_an_index_that_holds_unmasked_text(store: TranscriptStore) -> None:
    _seed(store)
    assert check(store.engine).ok
    _index_as_version_one(store)
    with store.engine.begin() as conn:  # claims to be current, yet holds the raw text
        conn.execute(
            text("UPDATE openclaw_index_state SET index_version = :v"), {"v": INDEX_VERSION}
        )
    report = check(store.engine)
    assert not report.ok and report.drift == {"s1": {"missing": 2, "extra": 2}}


def test_history_and_search_agree_on_the_masked_text(store: TranscriptStore) -> None:
    store.create_session("s1", KEY)
    store.append("s1", msg("m0", f"rotate OPENAI_API_KEY={SECRET} tonight"))
    hit = store.search(CALLER, "rotate")["results"][0]
    history = store.history(CALLER, KEY)
    shown = history["messages"][0]["content"]
    assert SECRET not in hit["snippet"] and SECRET not in str(shown)
    assert "OPENAI_API_KEY=sk-pro…8Jp5" in hit["snippet"]
    assert "OPENAI_API_KEY=sk-pro…8Jp5" in str(shown)


def test_history_masks_sensitive_keys_in_fields_the_plugin_does_not_know(
    store: TranscriptStore,
) -> None:
    store.create_session("s1", KEY)
    event = msg(
        "m0",
        "calling the provider",
        providerPayload={
            "password": "hunter2-but-longer-than-eighteen",
            "apiKey": "Qm9vbGVhbkZhbHNlVHJ1ZQ42xyz",
            "retries": 3,
            "nested": [{"token": 1234567890, "note": "fine"}],
        },
    )
    store.append("s1", event)
    shown = store.history(CALLER, KEY)["messages"][0]
    payload = shown["providerPayload"]
    assert payload["password"] == "***"
    assert payload["apiKey"] == "Qm9vbG…2xyz"
    assert payload["retries"] == 3
    assert payload["nested"] == [{"token": "***", "note": "fine"}]


#: A host pattern: employee ids, which the built-in rules do not treat as secrets.
EMPLOYEE_ID_PATTERN = r"EMP-\d{6}"
EMPLOYEE_ID = "EMP-493817"


def test_a_host_pattern_still_masks_search_snippets(db_url: str) -> None:
    """The index holds text masked by the built-in rules only; a host's extra patterns are
    applied when search returns it, so skipping the built-in re-masking never skips theirs."""
    plain = TranscriptStore(db_url, background=False)
    try:
        plain.create_session("s1", KEY)
        plain.append("s1", msg("m0", f"payroll record {EMPLOYEE_ID} and key {SECRET}"))
        unmasked = plain.search(CALLER, "payroll")["results"][0]["snippet"]
    finally:
        plain.close()
    # without the host pattern the id is ordinary text (the index holds it as is)
    assert EMPLOYEE_ID in unmasked and SECRET not in unmasked
    hosted = TranscriptStore(
        db_url, background=False, redactor=Redactor(extra_patterns=[EMPLOYEE_ID_PATTERN])
    )
    try:
        snippet = hosted.search(CALLER, "payroll")["results"][0]["snippet"]
    finally:
        hosted.close()
    assert EMPLOYEE_ID not in snippet and "EMP-" not in snippet
    assert "payroll record ***" in snippet
    assert SECRET not in snippet and "sk-pro…8Jp5" in snippet


#: Secrets of the families masked since INDEX_VERSION 4, 5 and 6, each in the syntax users
#: paste, with a query word next to it and the pieces an attacker would search for.
NEW_FAMILIES = [
    ("mysqlflag", "mysql -u root -pZq8Wv3Kd9Lm shop", "Zq8Wv3Kd9Lm"),
    ("redisflag", "redis-cli -h cache -a Rx7Tq2Nb5Vw ping", "Rx7Tq2Nb5Vw"),
    ("netrcfile", "machine api.example.com login bob password Pk4Hs9Jd2Fx", "Pk4Hs9Jd2Fx"),
    ("yamlplain", "db:\n  password: correcthorse\n", "correcthorse"),
    ("clientlit", "const c = new Client('r2ofhhzv4tq8nbd7wpy3kxm5jcs6gfea');", "nbd7wpy3kxm5"),
    ("airtabpat", "patAbCdEfGhIjKlMn." + "0123456789abcdef" * 4, "0123456789abcdef"),
    ("vaultold", "vault: s.Ab3dEfGh1jKlMnOpQrStUvWx", "Ab3dEfGh1jKlMnOp"),
    # INDEX_VERSION 5: values under names that say little, vendor shapes, URL passwords
    ("clickupk", "token pk_12345678_Q3EGRPN7XKZL2M4TB8CD5EF6GH9JK2LM", "Q3EGRPN7XKZL2M4T"),
    ("twiliosk", 'client = Client("SK3f9a0c4d3f9a0c4d6b2e7f186b2e7f18", auth)', "3f9a0c4d3f9a0c4d"),
    ("hashpass", "mongodb+srv://app:#^_g86AG1uVkLlh@cluster0.example.net/prod", "g86AG1uVkLlh"),
    ("iniwrap", "[service]\napi_key =\n    l0abjygFswyM57GZ8UWW3a7E\n", "gFswyM57GZ8UWW3a"),
    ("yamlbin", "secret: !!binary gxHdyN8PveDdzWjpN3u2cZHR\n", "8PveDdzWjpN3u2cZ"),
    ("nestval", "creds:\n  nested:\n    secret_value: dcb5cd1a409f118e1a5a\n", "1a409f118e"),
    ("etsykey", '{"etsy_key": "rwqh7r0qrcisbuydmpunvxpe"}', "0qrcisbuydmpun"),
    ("gradlecred", 'credentials {\n    password "houi1gQm5m3Da3j9"\n}', "houi1gQm5m3Da3j9"),
    ("odbcpwd", "Server=srv;Uid=app;Pwd=k7w5JqOEudKaHV;", "k7w5JqOEudKaHV"),
    ("jenkinscrumb", "-H 'Jenkins-Crumb:47ecc2220810d7939da41fd810de92f9'", "2220810d7939da41"),
    ("ruledpass", "Ldap password ---- Y9zH1cImool7", "Y9zH1cImool7"),
    ("newrelicadmin", "admin_access:NRAA-5b73376be08025530e60d3250ac", "76be08025530e60d"),
    # INDEX_VERSION 6: UUIDs under a <word>_key name, SDK start-up keys, Composio keys
    ("saucekey", 'sauce_key: "e125d81f-8fb0-ac4b-7cb3-711c509dbd44"', "8fb0-ac4b-7cb3"),
    ("hockeyid", 'configure(withIdentifier: "40d47967e0e741c46a902d6712f5a23f")', "67e0e741c46a"),
    ("composiokey", "use oak_brhnjbzZFyofKYVlRxv9 for the org", "hnjbzZFyofKY"),
]


def test_new_families_are_masked_in_snippet_history_and_index(store: TranscriptStore) -> None:
    store.create_session("s1", KEY)
    store.append_many("s1", chain([f"{word} {text}" for word, text, _secret in NEW_FAMILIES]))
    history = str(store.history(CALLER, KEY)["messages"])
    with store.engine.connect() as conn:
        bodies = " ".join(row[0] for row in conn.execute(text(f"SELECT body FROM {CONTENT_TABLE}")))
    for word, _text, secret in NEW_FAMILIES:
        hits = store.search(CALLER, word)["results"]
        assert len(hits) == 1, word
        assert secret not in hits[0]["snippet"], hits[0]["snippet"]
        assert secret not in history and secret not in bodies, word
        assert store.search(CALLER, secret)["results"] == [], secret
        assert store.search(CALLER, f"{secret[:6]}*")["results"] == [], secret

"""The MCP server (``openclaw-fts mcp``, docs/mcp.md) driven in a subprocess by the official SDK's
own stdio client, on both engines: the tools it lists and their schemas, each tool's result
against the Python adapter's on the same database, bad arguments, attempts to act as another
caller, a search while sessions are being indexed, a database error, and its end (stdin's end,
SIGTERM) with its background jobs stopped. Its Streamable HTTP transport (``--http``) is driven
by the SDK's own streamable HTTP client the same way, with its bearer token checked."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx2
import pytest
from factories import chain, transcript_file
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from sqlalchemy import text

from openclaw_fts import Caller, TranscriptStore, tools
from openclaw_fts.importer import SessionMeta
from openclaw_fts.mcp_server import MCP_EXTRA_INSTALL, MIN_TOKEN_CHARS, TOKEN_ENV_VAR
from openclaw_fts.search import EMPTY_QUERY_ERROR

pytestmark = pytest.mark.both_engines

CLI = Path(sys.executable).with_name("openclaw-fts")
ME = "agent:main:main"
#: What the server is started as (its defaults: tree visibility, no other agents).
CALLER = Caller(ME)
OPS = "agent:ops:main"
SESSIONS_TABLE = "openclaw_sessions"
MOVED_TABLE = "openclaw_sessions_moved_away"
#: Seconds the background reconciler of the server gets to index the pending sessions.
INDEX_WAIT_SECONDS = 60
#: Seconds a server gets to exit after stdin's end or SIGTERM.
EXIT_SECONDS = 20
#: A handshake line of the protocol (the raw-pipe tests speak it without the SDK).
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}

T = TypeVar("T")


#: Calls whose result must equal the Python adapter's.
GOOD_CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "search": ("sessions_search", {"query": "zebra", "limit": 25}),
    "recent": ("sessions_search", {"query": "zebra", "order": "recent", "since": "1000w"}),
    "batch": ("sessions_search", {"queries": ["zebra", "giraffe"]}),
    "grouped": ("sessions_search", {"query": "zebra", "group": "session"}),
    "history": ("sessions_history", {"sessionKey": ME, "includeTools": True}),
    "around": ("sessions_history", {"sessionKey": ME, "messageId": "o1", "limit": 1}),
    "list": ("sessions_list", {"messageLimit": 1}),
}
#: Bad arguments, and attempts to act as another caller.
BAD_CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "empty": ("sessions_search", {"query": "  "}),
    "limit": ("sessions_search", {"query": "zebra", "limit": 0}),
    "since": ("sessions_search", {"query": "zebra", "since": "7 days"}),
    "no key": ("sessions_history", {}),
    "offset": ("sessions_history", {"sessionKey": ME, "offset": -1}),
    "unknown tool": ("sessions_delete", {"sessionKey": ME}),
    # other agents' (and a sibling's) keys and ids, and arguments crafted to change the caller
    "ops key": ("sessions_search", {"query": "zebra", "sessionKey": OPS}),
    "ops id": ("sessions_search", {"query": "zebra", "sessionKey": "ops"}),
    "sibling": ("sessions_search", {"query": "zebra", "session_key": "agent:main:sibling"}),
    "crafted": (
        "sessions_search",
        {
            "query": "zebra",
            "limit": 25,
            "caller": OPS,
            "as": OPS,
            "requesterSessionKey": OPS,
            "agentSessionKey": OPS,
            "visibility": "all",
            "agentToAgent": {"enabled": True},
            "agentId": "ops",
        },
    ),
    "ops history": ("sessions_history", {"sessionKey": OPS}),
    "ops history id": ("sessions_history", {"sessionKey": "ops", "includeTools": 1}),
    "ops message": ("sessions_history", {"sessionKey": ME, "messageId": "o0", "sessionId": "ops"}),
    "ops list": ("sessions_list", {"agentId": "ops", "search": "ops", "kinds": ["main"]}),
    "all list": ("sessions_list", {"limit": 100, "visibility": "all", "caller": OPS}),
}


def fill(store: TranscriptStore, tmp_path: Path, pending: int = 1) -> None:
    """Indexed sessions of the caller, its child, a sibling and another agent, and ``pending``
    imported children of the caller (left pending: the server's reconciler indexes them)."""
    for sid, key, spawned_by, texts in [
        ("own", ME, None, ["zebra alpha plan", "zebra beta reply", "giraffe notes"]),
        ("kid", "agent:main:kid", ME, ["zebra kid task"]),
        ("sib", "agent:main:sibling", None, ["zebra sibling private"]),
        ("ops", OPS, None, ["zebra ops secret rotation"]),
    ]:
        store.create_session(sid, key, spawned_by=spawned_by)
        store.append_many(sid, chain(texts, prefix=sid[0]))
    for i in range(pending):
        path = transcript_file(
            tmp_path / f"imp{i}.jsonl",
            f"imp{i}",
            [f"okapi imported batch{i} message {j}" for j in range(40)],
        )
        store.import_jsonl(path, session_key=f"agent:main:imp{i}", meta=SessionMeta(spawned_by=ME))


def server_args(db_url: str, *extra: str) -> list[str]:
    return ["--db", db_url, "mcp", "--as", ME, *extra]


def with_client(
    db_url: str, tmp_path: Path, body: Callable[[ClientSession], Awaitable[T]], *extra: str
) -> tuple[T, str]:
    """``body``'s result on a client session with a fresh server, and the server's stderr."""
    errlog = tmp_path / "server-stderr.txt"

    params = StdioServerParameters(command=str(CLI), args=server_args(db_url, *extra))
    with errlog.open("w") as err:

        async def main() -> T:
            async with (
                stdio_client(params, errlog=err) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return await body(session)

        result = anyio.run(main)
    return result, errlog.read_text()


async def call(session: ClientSession, name: str, args: dict[str, Any]) -> tuple[bool, Any]:
    """(isError, result): the structured content, checked equal to the JSON text."""
    res = await session.call_tool(name, args)
    assert len(res.content) == 1 and res.content[0].type == "text"
    assert json.loads(res.content[0].text) == res.structured_content
    return bool(res.is_error), res.structured_content


def keys(result: Any) -> set[str]:
    return {hit["sessionKey"] for hit in result["results"]}


def test_the_tools_over_mcp(store: TranscriptStore, db_url: str, tmp_path: Path) -> None:
    fill(store, tmp_path)

    async def body(s: ClientSession) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        # A search while a session is pending says so, and starts the server's reconciler.
        seen["first"] = await call(s, "sessions_search", {"query": "okapi"})
        deadline = time.monotonic() + INDEX_WAIT_SECONDS
        while True:
            seen["indexed"] = await call(s, "sessions_search", {"query": "okapi", "limit": 25})
            if "indexing" not in seen["indexed"][1] or time.monotonic() > deadline:
                break
            await anyio.sleep(0.2)
        seen["tools"] = (await s.list_tools()).tools
        for label, (name, args) in {**GOOD_CALLS, **BAD_CALLS}.items():
            seen[label] = await call(s, name, args)
        # A database error (the sessions table gone) is a tool error; the server goes on.
        with store.write_engine.begin() as conn:
            conn.execute(text(f"ALTER TABLE {SESSIONS_TABLE} RENAME TO {MOVED_TABLE}"))
        try:
            for name, args in [
                ("sessions_search", {"query": "zebra"}),
                ("sessions_history", {"sessionKey": ME}),
                ("sessions_list", {}),
            ]:
                seen[f"broken {name}"] = await call(s, name, args)
        finally:
            with store.write_engine.begin() as conn:
                conn.execute(text(f"ALTER TABLE {MOVED_TABLE} RENAME TO {SESSIONS_TABLE}"))
        seen["after"] = await call(s, *GOOD_CALLS["search"])
        return seen

    seen, stderr = with_client(db_url, tmp_path, body)
    assert "Traceback" not in stderr

    first_error, first = seen["first"]
    assert not first_error and first.get("indexing") is True, first
    assert "indexing" not in seen["indexed"][1], "the server's reconciler never indexed"
    assert keys(seen["indexed"][1]) == {"agent:main:imp0"}

    # list: the three tools, their input schemas exactly the Python tools' schemas
    listed = {tool.name: tool for tool in seen["tools"]}
    assert list(listed) == ["sessions_search", "sessions_history", "sessions_list"]
    for name, schema in [
        ("sessions_search", tools.SESSIONS_SEARCH_SCHEMA),
        ("sessions_history", tools.SESSIONS_HISTORY_SCHEMA),
        ("sessions_list", tools.SESSIONS_LIST_SCHEMA),
    ]:
        assert listed[name].input_schema == schema
        assert listed[name].description == schema["description"]

    # each call: the Python adapter's result on the same database, as the same caller
    adapters = {
        "sessions_search": tools.sessions_search,
        "sessions_history": tools.sessions_history,
        "sessions_list": tools.sessions_list,
    }
    for label in ("search", "recent", "batch", "grouped", "history", "around", "list"):
        is_error, result = seen[label]
        name, args = GOOD_CALLS[label]
        assert not is_error, (label, result)
        assert result == json.loads(json.dumps(adapters[name](store, CALLER, args))), label
    assert keys(seen["search"][1]) == {ME, "agent:main:kid"}
    assert seen["list"][1]["count"] == 3  # own, kid, the imported child

    # bad arguments: tool errors carrying the tool's own messages
    assert seen["empty"] == (True, {"status": "error", "error": EMPTY_QUERY_ERROR})
    assert seen["limit"] == (True, {"status": "error", "error": "limit must be a positive integer"})
    assert seen["since"][0] and seen["since"][1]["error"].startswith("since must be")
    assert seen["no key"] == (True, {"status": "error", "error": "sessionKey required"})
    assert seen["offset"][1]["error"] == "offset must be a non-negative integer"
    assert seen["unknown tool"][0] and "sessions_search" in seen["unknown tool"][1]["error"]

    # nothing reaches beyond the caller the server was started as
    for label in ("ops key", "ops id", "sibling", "ops history", "ops history id", "ops message"):
        is_error, result = seen[label]
        assert is_error and result["status"] in ("forbidden", "error"), (label, result)
        assert "secret" not in json.dumps(result) and "private" not in json.dumps(result)
    crafted = seen["crafted"][1]
    assert crafted == seen["search"][1]
    assert OPS not in keys(crafted) and "agent:main:sibling" not in keys(crafted)
    assert seen["ops list"][1] == {"count": 0, "sessions": []}
    listed_keys = {row["key"] for row in seen["all list"][1]["sessions"]}
    assert listed_keys == {ME, "agent:main:kid", "agent:main:imp0"}

    # a database error: a tool error of the same shape, one line; then the server serves again
    for name in ("sessions_search", "sessions_history", "sessions_list"):
        is_error, result = seen[f"broken {name}"]
        assert is_error and result["status"] == "error", (name, result)
        assert result["error"].startswith("database error: "), result
        assert "\n" not in result["error"] and MOVED_TABLE not in result["error"]
    assert seen["after"] == seen["search"]


def start_raw(db_url: str, tmp_path: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """A server on raw pipes, past the handshake (its answer read): ready and serving."""
    errlog = tmp_path / "raw-stderr.txt"
    with errlog.open("wb") as err:
        proc = subprocess.Popen(
            [str(CLI), *server_args(db_url)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
        )
    assert proc.stdin is not None and proc.stdout is not None
    send(proc, INITIALIZE)
    answer = json.loads(proc.stdout.readline())
    assert answer["id"] == 1 and answer["result"]["serverInfo"]["name"] == "openclaw-fts", answer
    send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    return proc, errlog


def send(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()


def search_request(request_id: int, query: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "sessions_search", "arguments": {"query": query}},
    }


def test_the_server_ends_at_the_end_of_stdin(
    store: TranscriptStore, db_url: str, tmp_path: Path
) -> None:
    fill(store, tmp_path)
    proc, errlog = start_raw(db_url, tmp_path)
    assert proc.stdin is not None and proc.stdout is not None
    send(proc, search_request(2, "zebra"))
    answer = json.loads(proc.stdout.readline())
    assert answer["id"] == 2 and not answer["result"].get("isError"), answer
    assert answer["result"]["structuredContent"]["indexing"] is True  # the reconciler started
    proc.stdin.close()  # EOF: the server closes its store (stopping the reconciler) and exits
    assert proc.wait(timeout=EXIT_SECONDS) == 0, errlog.read_text()
    assert proc.stdout.read() == b""
    assert "Traceback" not in errlog.read_text()
    store.reconcile()
    assert store.index_status()["pending"] == 0


def test_sigterm_stops_the_server_and_its_background_jobs(
    store: TranscriptStore, db_url: str, tmp_path: Path
) -> None:
    """SIGTERM while the reconciler indexes many pending sessions: a clean, prompt exit; what it
    left pending is indexed by the next reconcile, and nothing is lost."""
    fill(store, tmp_path, pending=30)
    proc, errlog = start_raw(db_url, tmp_path)
    assert proc.stdout is not None
    send(proc, search_request(2, "okapi"))
    answer = json.loads(proc.stdout.readline())
    assert answer["result"]["structuredContent"]["indexing"] is True, answer
    proc.send_signal(signal.SIGTERM)  # stdin stays open: the signal alone ends it
    assert proc.wait(timeout=EXIT_SECONDS) == 0, errlog.read_text()
    assert "Traceback" not in errlog.read_text()
    store.reconcile()
    assert store.index_status()["pending"] == 0
    hits = store.search(CALLER, "okapi batch7", limit=25)["results"]
    assert {hit["sessionKey"] for hit in hits} == {"agent:main:imp7"}


@pytest.mark.sqlite_only("the command line's checks, before any database work")
def test_without_the_extra_the_error_names_it(db_url: str, tmp_path: Path) -> None:
    shadow = tmp_path / "shadow" / "mcp"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('No module named mcp')\n")
    env = {**os.environ, "PYTHONPATH": str(shadow.parent)}
    proc = subprocess.run(
        [str(CLI), *server_args(db_url)],
        env=env,
        capture_output=True,
        text=True,
        timeout=EXIT_SECONDS * 3,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count("\n") == 1 and MCP_EXTRA_INSTALL in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.sqlite_only("a usage error")
def test_the_caller_must_be_named(db_url: str) -> None:
    proc = subprocess.run(
        [str(CLI), "--db", db_url, "mcp"],
        capture_output=True,
        text=True,
        timeout=EXIT_SECONDS * 3,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2 and "--as" in proc.stderr, proc.stderr


# -- Streamable HTTP ---------------------------------------------------------------------------

#: The HTTP transport's bearer token in these tests, and one of the same length that is not it.
TOKEN = "tok-" + "s3cret" * 5
WRONG_TOKEN = TOKEN[:-1] + "X"
#: Seconds an HTTP server gets to say where it listens.
LISTEN_SECONDS = 60


def start_http(
    db_url: str, tmp_path: Path, *extra: str, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], str, Path]:
    """An HTTP server on a free port of this machine, listening: (process, endpoint, stderr)."""
    errlog = tmp_path / "http-stderr.txt"
    environ = {**os.environ, TOKEN_ENV_VAR: TOKEN} if env is None else env
    with errlog.open("wb") as err:
        proc = subprocess.Popen(
            [str(CLI), *server_args(db_url, "--http", "--port", "0", *extra)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=environ,
        )
    deadline = time.monotonic() + LISTEN_SECONDS
    while "serving http" not in errlog.read_text():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the HTTP server did not start: {errlog.read_text()}")
        time.sleep(0.1)
    url = errlog.read_text().split("serving ", 1)[1].split()[0]
    return proc, url, errlog


def with_http_client(url: str, token: str, body: Callable[[ClientSession], Awaitable[T]]) -> T:
    """``body``'s result on a client session of the SDK's streamable HTTP client."""

    async def main() -> T:
        headers = {"Authorization": f"Bearer {token}"} if token else {}  # "": no header
        async with (
            create_mcp_http_client(headers=headers) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return await body(session)

    return anyio.run(main)


def test_the_tools_over_streamable_http(
    store: TranscriptStore, db_url: str, tmp_path: Path
) -> None:
    fill(store, tmp_path, pending=0)
    proc, url, errlog = start_http(db_url, tmp_path)
    try:
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp"), url  # this machine

        async def body(s: ClientSession) -> dict[str, Any]:
            seen: dict[str, Any] = {"tools": (await s.list_tools()).tools}
            for label in ("search", "batch", "history", "list"):
                seen[label] = await call(s, *GOOD_CALLS[label])
            for label in ("crafted", "ops key", "ops history", "all list"):
                seen[label] = await call(s, *BAD_CALLS[label])
            seen["empty"] = await call(s, *BAD_CALLS["empty"])
            return seen

        seen = with_http_client(url, TOKEN, body)

        # The SDK's client with a wrong token, or none, does not get past the handshake.
        refused = [handshake_errors(url, token) for token in (WRONG_TOKEN, "")]
        statuses = {label: raw_post(url, header) for label, header in RAW_HEADERS.items()}
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=EXIT_SECONDS)
    stderr = errlog.read_text()
    assert code == 0, stderr
    assert "Traceback" not in stderr and TOKEN not in stderr

    listed = {tool.name: tool for tool in seen["tools"]}
    assert list(listed) == ["sessions_search", "sessions_history", "sessions_list"]
    assert listed["sessions_search"].input_schema == tools.SESSIONS_SEARCH_SCHEMA
    adapters = {
        "sessions_search": tools.sessions_search,
        "sessions_history": tools.sessions_history,
        "sessions_list": tools.sessions_list,
    }
    for label in ("search", "batch", "history", "list"):
        name, args = GOOD_CALLS[label]
        expected = json.loads(json.dumps(adapters[name](store, CALLER, args)))
        assert seen[label] == (False, expected), label
    assert keys(seen["search"][1]) == {ME, "agent:main:kid"}
    # The caller is the server's, whatever the arguments say.
    assert seen["crafted"] == seen["search"]
    for label in ("ops key", "ops history"):
        assert seen[label][0] and "secret" not in json.dumps(seen[label][1]), label
    assert {row["key"] for row in seen["all list"][1]["sessions"]} == {ME, "agent:main:kid"}
    assert seen["empty"] == (True, {"status": "error", "error": EMPTY_QUERY_ERROR})

    for errors in refused:
        assert errors and all(isinstance(e, MCPError) for e in errors), errors
    # 401 before the MCP layer for anything but the token; the token alone gets an answer.
    assert statuses == {
        "no header": 401,
        "wrong token": 401,
        "longer token": 401,
        "basic": 401,
        "token": 200,
    }


def handshake_errors(url: str, token: str) -> list[BaseException]:
    """What the SDK's client raised trying to list the tools with ``token`` (its task groups
    wrap it in exception groups: the errors inside them)."""

    def leaves(exc: BaseException) -> list[BaseException]:
        inner = getattr(exc, "exceptions", None)
        return [leaf for sub in inner for leaf in leaves(sub)] if inner else [exc]

    try:
        with_http_client(url, token, lambda s: s.list_tools())
    except Exception as exc:
        return leaves(exc)
    return []


#: Authorization headers of raw requests (None: no header).
RAW_HEADERS: dict[str, str | None] = {
    "no header": None,
    "wrong token": f"Bearer {WRONG_TOKEN}",
    "longer token": f"Bearer {TOKEN}x",
    "basic": f"Basic {TOKEN}",
    "token": f"Bearer {TOKEN}",
}


def raw_post(url: str, authorization: str | None) -> int:
    """The status of a plain ``tools/list`` POST with this ``Authorization`` header."""
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }
    if authorization is not None:
        headers["Authorization"] = authorization
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    return httpx2.post(url, json=request, headers=headers, timeout=EXIT_SECONDS).status_code


@pytest.mark.sqlite_only("the command line's checks of the token, and one server's start")
def test_the_http_transport_needs_a_token(
    db_url: str, store: TranscriptStore, tmp_path: Path
) -> None:
    """No token, an empty or short one: refused before serving, in one line; a token file
    serves (and wins over the environment); the HTTP options alone are a usage error."""
    bare = {k: v for k, v in os.environ.items() if k != TOKEN_ENV_VAR}

    def run(*extra: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(CLI), *server_args(db_url, *extra)],
            env=env,
            capture_output=True,
            text=True,
            timeout=EXIT_SECONDS * 3,
            check=False,
            stdin=subprocess.DEVNULL,
        )

    missing = run("--http", env=bare)
    assert missing.returncode == 1 and TOKEN_ENV_VAR in missing.stderr, missing.stderr
    short = run("--http", env={**bare, TOKEN_ENV_VAR: "x" * (MIN_TOKEN_CHARS - 1)})
    assert short.returncode == 1 and "secrets.token_urlsafe" in short.stderr, short.stderr
    empty_file = tmp_path / "empty-token"
    empty_file.write_text("\n")
    empty = run("--http", "--token-file", str(empty_file), env={**bare, TOKEN_ENV_VAR: TOKEN})
    assert empty.returncode == 1 and "empty" in empty.stderr, empty.stderr
    for result in (missing, short, empty):
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    alone = run("--port", "0", env=bare)
    assert alone.returncode == 2 and "--http" in alone.stderr, alone.stderr

    token_file = tmp_path / "token"
    token_file.write_text(f"{WRONG_TOKEN}\n")
    proc, url, errlog = start_http(
        db_url, tmp_path, "--token-file", str(token_file), env={**bare, TOKEN_ENV_VAR: TOKEN}
    )
    try:
        statuses = [raw_post(url, f"Bearer {token}") for token in (WRONG_TOKEN, TOKEN)]
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=EXIT_SECONDS) == 0, errlog.read_text()
    assert statuses == [200, 401]

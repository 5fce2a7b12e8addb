"""The Model Context Protocol server: ``sessions_search``, ``sessions_history`` and
``sessions_list`` over stdio, or over Streamable HTTP behind a bearer token, for agents on any
MCP host (docs/mcp.md).

Invariant: the caller is fixed when the server starts (``openclaw-fts mcp --as KEY ...``) and no
tool argument changes it: each call's arguments go, as they are, to the adapters of
:mod:`openclaw_fts.tools` with that one :class:`~openclaw_fts.caller.Caller`, so a tool reads
the arguments OpenClaw's do and nothing else. The tools' input schemas are the adapters'
schemas (:data:`TOOLS`), and a call's result is the adapter's JSON object, as structured content
and as its JSON text; a ``{"status": ...}`` object (bad arguments, a session the caller may not
read) is a tool error (``isError``). Every call is answered: an exception (a database error)
becomes a tool error of the same shape with a one-line message, and the server goes on. The
store runs its background reconciler and segment merge as any :class:`TranscriptStore` does;
at the end of stdin, or on SIGTERM / SIGINT, the server stops serving and closes the store,
which stops those jobs. Over HTTP (:class:`HttpListen`) the same server answers on one endpoint,
listening on this machine only unless told otherwise; a request whose ``Authorization: Bearer``
token is not the configured one (compared in constant time) gets 401 before the MCP layer
reads it, and the server does not start without a token (:func:`read_token`). The ``mcp`` SDK
is an optional extra: without it :func:`serve` raises
:class:`~openclaw_fts.errors.MissingExtraError` naming ``pip install 'openclaw-fts[mcp]'``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy.engine import URL
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from . import __version__, jsonsafe, tools
from .caller import Caller
from .errors import MissingExtraError, OpenClawFtsError, shorten
from .store import TranscriptStore

if TYPE_CHECKING:
    import mcp_types
    from mcp.server.auth.provider import AccessToken
    from mcp.server.lowlevel import Server

log = logging.getLogger(__name__)

#: The name the server gives itself in the MCP handshake.
SERVER_NAME = "openclaw-fts"
#: How to install what the server needs (named by the error raised without it).
MCP_EXTRA_INSTALL = "pip install 'openclaw-fts[mcp]'"
MCP_EXTRA_ERROR = f"the MCP server needs the official MCP Python SDK: {MCP_EXTRA_INSTALL}"
#: Tool calls run at the same time (each on a worker thread, as the store is synchronous).
MAX_CONCURRENT_CALLS = 4
#: Longest error message a tool error carries for an unexpected exception.
MAX_ERROR_MESSAGE_CHARS = 500
#: Bytes of stdin read at a time.
STDIN_READ_BYTES = 65536
#: Database drivers whose own errors are reported as database errors.
DRIVER_MODULES = ("sqlite3", "psycopg")
#: The signals that stop the server cleanly (stdin's end does too).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)

#: Where the HTTP transport listens unless told otherwise: this machine only.
DEFAULT_HTTP_HOST = "127.0.0.1"
DEFAULT_HTTP_PORT = 8765
#: The one endpoint of the HTTP transport (the SDK's default path).
HTTP_PATH = "/mcp"
#: Host names that reach only this machine (the SDK also checks ``Host`` / ``Origin`` there,
#: against DNS rebinding).
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
#: The environment variable holding the HTTP transport's bearer token (else ``--token-file``).
TOKEN_ENV_VAR = "OPENCLAW_FTS_MCP_TOKEN"
#: Shortest and longest bearer token accepted (``secrets.token_urlsafe(32)`` is 43 characters).
MIN_TOKEN_CHARS = 16
MAX_TOKEN_CHARS = 4096
#: Seconds the HTTP transport waits for calls in flight when told to stop.
HTTP_SHUTDOWN_GRACE_SECONDS = 5

Adapter = Callable[[TranscriptStore, Caller, Any], Mapping[str, Any]]

#: The tools served: name -> (input schema, adapter). The schemas are the adapters' own.
TOOLS: dict[str, tuple[dict[str, Any], Adapter]] = {
    "sessions_search": (tools.SESSIONS_SEARCH_SCHEMA, tools.sessions_search),
    "sessions_history": (tools.SESSIONS_HISTORY_SCHEMA, tools.sessions_history),
    "sessions_list": (tools.SESSIONS_LIST_SCHEMA, tools.sessions_list),
}


def require_mcp() -> None:
    """Raise :class:`MissingExtraError` unless the ``mcp`` SDK can be imported."""
    try:
        import mcp.server.lowlevel  # noqa: F401
        import mcp_types  # noqa: F401
    except ImportError:
        raise MissingExtraError(MCP_EXTRA_ERROR) from None


class TokenError(OpenClawFtsError):
    """The HTTP transport's bearer token is missing or unusable: the server does not start."""


@dataclass(frozen=True)
class HttpListen:
    """Serve over Streamable HTTP on ``host``:``port`` (0: a free port), at :data:`HTTP_PATH`,
    to requests carrying ``Authorization: Bearer <token>``."""

    token: str
    host: str = DEFAULT_HTTP_HOST
    port: int = DEFAULT_HTTP_PORT

    def __post_init__(self) -> None:
        problem = token_problem(self.token)
        if problem is not None:
            raise TokenError(problem)

    def __repr__(self) -> str:  # never the token, in a log or a traceback
        return f"HttpListen(host={self.host!r}, port={self.port})"


def token_problem(token: str) -> str | None:
    """Why ``token`` cannot be the bearer token (None: it can): too short or too long, or not
    printable ASCII without spaces (what an ``Authorization`` header carries unchanged)."""
    if not MIN_TOKEN_CHARS <= len(token) <= MAX_TOKEN_CHARS:
        return (
            f"the bearer token must be {MIN_TOKEN_CHARS} to {MAX_TOKEN_CHARS} characters "
            f"(it is {len(token)}); make one with "
            "python -c 'import secrets; print(secrets.token_urlsafe(32))'"
        )
    if not all("!" <= ch <= "~" for ch in token):
        return "the bearer token must be printable ASCII without spaces"
    return None


def read_token(token_file: str | Path | None, environ: Mapping[str, str]) -> str:
    """The HTTP transport's bearer token: the content of ``token_file`` (surrounding
    whitespace dropped), else ``environ[TOKEN_ENV_VAR]``. Raises :class:`TokenError` when there
    is none or it is unusable (:func:`token_problem`), ``OSError`` when the file cannot be
    read."""
    if token_file is not None:
        token, where = Path(token_file).read_text(encoding="utf-8").strip(), str(token_file)
    else:
        token, where = environ.get(TOKEN_ENV_VAR, "").strip(), f"${TOKEN_ENV_VAR}"
    if not token:
        raise TokenError(
            f"the HTTP transport needs a bearer token: set {TOKEN_ENV_VAR} or pass --token-file"
            + (f" ({where} is empty)" if token_file is not None else "")
        )
    problem = token_problem(token)
    if problem is not None:
        raise TokenError(f"{where}: {problem}")
    return token


def _is_driver_error(exc: Exception) -> bool:
    """A database driver's own error (PEP 249's ``Error``: ``sqlite3.Error``, ``psycopg.Error``),
    raised by code that runs statements on the driver's connection."""
    return any(
        cls.__name__ == "Error" and cls.__module__.partition(".")[0] in DRIVER_MODULES
        for cls in type(exc).__mro__
    )


def _error_message(exc: Exception) -> str:
    """One line saying what failed, never a traceback (the log on stderr has that)."""
    if isinstance(exc, DBAPIError):
        text = f"database error: {exc.orig}"
    elif isinstance(exc, SQLAlchemyError) or _is_driver_error(exc):
        text = f"database error: {exc}"
    else:
        text = f"internal error ({type(exc).__name__}): {exc}"
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return shorten(first, MAX_ERROR_MESSAGE_CHARS)


def call_tool(
    store: TranscriptStore,
    caller: Caller,
    name: str,
    arguments: Any,
    *,
    traceback: bool = False,
) -> dict[str, Any]:
    """The tool's JSON result for ``arguments`` (synchronous; never raises): the adapter's
    object, or ``{"status": "error", "error": ...}`` for an unknown tool or an exception (also
    logged on stderr in one line, with its traceback when ``traceback``)."""
    entry = TOOLS.get(name)
    if entry is None:
        return {
            "status": "error",
            "error": f"unknown tool {shorten(name, 80)!r}; tools: {', '.join(TOOLS)}",
        }
    try:
        return dict(entry[1](store, caller, arguments))
    except Exception as exc:  # a database error or a bug: answered, the server goes on
        message = _error_message(exc)
        log.warning("openclaw-fts mcp: %s failed: %s", name, message, exc_info=traceback)
        return {"status": "error", "error": message}


def _tool_list() -> list[mcp_types.Tool]:
    import mcp_types

    return [
        mcp_types.Tool(
            name=name,
            description=schema["description"],
            input_schema=schema,
            annotations=mcp_types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
        )
        for name, (schema, _adapter) in TOOLS.items()
    ]


def _result(value: dict[str, Any]) -> mcp_types.CallToolResult:
    import mcp_types

    text = jsonsafe.dumps(value, ensure_ascii=False)
    return mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text=text)],
        structured_content=value,
        is_error="status" in value,
    )


class _StdinLines:
    """The lines of the file descriptor ``fd`` (stdin), read with ``os.read`` on a daemon
    thread: a read still waiting when a signal stops the server holds no lock of Python's and
    never holds up the exit (the SDK reads on a worker thread the process would wait for)."""

    def __init__(self, fd: int) -> None:
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()

        def put(line: str | None) -> None:
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody reads any more
                loop.call_soon_threadsafe(self._queue.put_nowait, line)

        def pump() -> None:
            pending = b""
            try:
                while chunk := os.read(fd, STDIN_READ_BYTES):
                    *lines, pending = (pending + chunk).split(b"\n")
                    for line in lines:
                        put(line.decode("utf-8", errors="replace") + "\n")
            except OSError:  # stdin closed under the thread
                pass
            finally:
                if pending:
                    put(pending.decode("utf-8", errors="replace"))
                put(None)

        threading.Thread(target=pump, name="openclaw-fts-mcp-stdin", daemon=True).start()

    def __aiter__(self) -> _StdinLines:
        return self

    async def __anext__(self) -> str:
        line = await self._queue.get()
        if line is None:
            raise StopAsyncIteration
        return line


def _server(store: TranscriptStore, caller: Caller, traceback: bool) -> Server[Any]:
    """The MCP server of the three tools for ``caller`` (either transport runs it)."""
    import anyio
    import mcp_types
    from mcp.server.lowlevel import Server

    limiter = anyio.CapacityLimiter(MAX_CONCURRENT_CALLS)

    async def list_tools(ctx: Any, params: Any) -> mcp_types.ListToolsResult:
        return mcp_types.ListToolsResult(tools=_tool_list())

    async def on_call(ctx: Any, params: mcp_types.CallToolRequestParams) -> Any:
        name, arguments = params.name, params.arguments or {}
        value = await anyio.to_thread.run_sync(
            lambda: call_tool(store, caller, name, arguments, traceback=traceback),
            limiter=limiter,
        )
        return _result(value)

    return Server(
        SERVER_NAME,
        version=__version__,
        instructions=(
            "Recall of your past conversation sessions: sessions_search finds messages, "
            "sessions_history reads around one, sessions_list lists the sessions you may see."
        ),
        on_list_tools=list_tools,
        on_call_tool=on_call,
    )


async def _serve_stdio(store: TranscriptStore, caller: Caller, traceback: bool) -> None:
    import anyio
    from mcp.server.stdio import stdio_server

    server = _server(store, caller, traceback)
    stdin = cast(Any, _StdinLines(sys.stdin.fileno()))
    async with anyio.create_task_group() as group:

        async def stop_on_signal() -> None:
            with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
                async for _signal in signals:
                    group.cancel_scope.cancel()
                    return

        group.start_soon(stop_on_signal)
        async with stdio_server(stdin=stdin) as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
        group.cancel_scope.cancel()  # stdin ended: stop waiting for a signal


class _OneToken:
    """The SDK's token verifier for one shared token, compared in constant time."""

    def __init__(self, token: str) -> None:
        self._token = token.encode("ascii")

    async def verify_token(self, token: str) -> AccessToken | None:
        from mcp.server.auth.provider import AccessToken

        # Header values arrive decoded as latin-1: encoding them back cannot fail.
        if hmac.compare_digest(token.encode("latin-1"), self._token):
            return AccessToken(token="", client_id=SERVER_NAME, scopes=[])
        return None


def _listening_socket(host: str, port: int) -> socket.socket:
    """A socket listening on ``host``:``port`` (its first address; port 0: a free one)."""
    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    return socket.create_server((host, port), family=family)


def endpoint_url(sock: socket.socket) -> str:
    """The URL of the MCP endpoint served on ``sock``."""
    address, port = sock.getsockname()[:2]
    shown = f"[{address}]" if sock.family == socket.AF_INET6 else address
    return f"http://{shown}:{port}{HTTP_PATH}"


async def _serve_http(
    store: TranscriptStore,
    caller: Caller,
    traceback: bool,
    listen: HttpListen,
    on_listening: Callable[[str], None] | None,
) -> None:
    import anyio
    import uvicorn
    from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
    from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend
    from starlette.middleware.authentication import AuthenticationMiddleware

    class Web(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            # uvicorn's own handlers re-raise the signal once it has stopped, which would end
            # the process before the store is closed: this server's receiver stops it instead.
            yield

    verifier = _OneToken(listen.token)
    # With a token verifier the SDK wraps the endpoint in its bearer check (401 without a
    # valid token); the authentication middleware sets the user that check reads.
    app = _server(store, caller, traceback).streamable_http_app(
        streamable_http_path=HTTP_PATH,
        stateless_http=True,  # every call stands alone: no session state, no open streams
        json_response=True,
        host=listen.host,
        token_verifier=verifier,
    )
    app.add_middleware(AuthContextMiddleware)
    app.add_middleware(AuthenticationMiddleware, backend=BearerAuthBackend(verifier))
    sock = _listening_socket(listen.host, listen.port)
    web = Web(
        uvicorn.Config(
            app,
            log_config=None,  # the process's logging stays as the command line set it
            log_level=logging.WARNING,
            access_log=False,
            server_header=False,
            timeout_graceful_shutdown=HTTP_SHUTDOWN_GRACE_SECONDS,
        )
    )
    with sock:
        async with anyio.create_task_group() as group:

            async def stop_on_signal() -> None:
                with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
                    async for _signal in signals:
                        web.should_exit = True
                        return

            group.start_soon(stop_on_signal)
            if on_listening is not None:
                on_listening(endpoint_url(sock))
            await web.serve(sockets=[sock])
            group.cancel_scope.cancel()  # it stopped on its own: stop waiting for a signal


def serve(
    url: str | URL,
    caller: Caller,
    *,
    traceback: bool = False,
    http: HttpListen | None = None,
    on_listening: Callable[[str], None] | None = None,
) -> None:
    """Serve the three tools to ``caller`` on a store over ``url`` (its schema already at
    head) with its background jobs: over stdio until stdin ends, or with ``http`` over
    Streamable HTTP (``on_listening`` is told the endpoint's URL once it listens), until
    SIGTERM / SIGINT. ``traceback``: log the traceback of a call that failed, not only its one
    line."""
    require_mcp()
    import anyio

    store = TranscriptStore(url, upgrade=False, background=True)
    try:
        if http is None:
            anyio.run(_serve_stdio, store, caller, traceback)
        else:
            anyio.run(_serve_http, store, caller, traceback, http, on_listening)
    finally:
        store.close()

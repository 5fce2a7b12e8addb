"""The Model Context Protocol server: ``sessions_search``, ``sessions_history`` and
``sessions_list`` over stdio, for agents on any MCP host (docs/mcp.md).

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
which stops those jobs. The ``mcp`` SDK is an optional extra: without it :func:`serve` raises
:class:`~openclaw_fts.errors.MissingExtraError` naming ``pip install 'openclaw-fts[mcp]'``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy.engine import URL
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from . import __version__, jsonsafe, tools
from .caller import Caller
from .errors import MissingExtraError, shorten
from .store import TranscriptStore

if TYPE_CHECKING:
    import mcp_types

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


async def _serve(store: TranscriptStore, caller: Caller, traceback: bool) -> None:
    import anyio
    import mcp_types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

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

    server: Server[Any] = Server(
        SERVER_NAME,
        version=__version__,
        instructions=(
            "Recall of your past conversation sessions: sessions_search finds messages, "
            "sessions_history reads around one, sessions_list lists the sessions you may see."
        ),
        on_list_tools=list_tools,
        on_call_tool=on_call,
    )
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


def serve(url: str | URL, caller: Caller, *, traceback: bool = False) -> None:
    """Serve the three tools to ``caller`` over stdio until stdin ends or SIGTERM / SIGINT,
    on a store over ``url`` (its schema already at head) with its background jobs.
    ``traceback``: log the traceback of a call that failed, not only its one line."""
    require_mcp()
    import anyio

    store = TranscriptStore(url, upgrade=False, background=True)
    try:
        anyio.run(_serve, store, caller, traceback)
    finally:
        store.close()

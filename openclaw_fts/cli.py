"""The ``openclaw-fts`` command line: import, search, history, reconcile, status, check, upgrade.

Invariant: this module (with :mod:`openclaw_fts.cli_render`, which shows results) is the ONLY
place in the project that reads environment variables (:data:`DB_ENV_VAR`) or talks to a
terminal, and it calls only the public API: the package's names, ``TranscriptStore`` and
:mod:`openclaw_fts.tools` (pyproject.toml's "cli-public-api" contract). A subcommand is one
``@cli.command`` function here and, if it prints more than a line, a ``print_*`` function in
``cli_render``. Every command opens its own
``TranscriptStore(..., background=False)`` and closes it before exiting; every failure becomes
one line on stderr and an exit code — :data:`EXIT_OK` on success, :data:`EXIT_FAILURE` for
runtime failures (a file that could not be imported, drift found by ``check``, a database that
cannot be used, a forbidden or unknown session), :data:`EXIT_USAGE` for bad arguments — and no
Python traceback is ever shown unless ``--traceback`` is given. With ``--json`` stdout carries
exactly one JSON document — on failure ``{"error": {"message", "exitCode", "kind"}}``, beside
the line on stderr; progress bars and diagnostics go to stderr only. Text shown to the
operator is the store's already redacted output; this module never prints raw transcript text.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, ParamSpec, TypeVar, cast

import click
from alembic.util.exc import CommandError
from rich.progress import (
    TaskID,
)
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, SQLAlchemyError

from . import (
    AgentToAgent,
    Caller,
    MissingDriverError,
    OpenClawFtsError,
    ToolInputError,
    TranscriptStore,
    __version__,
)
from .cli_render import (
    PROG_NAME,
    human_size,
    plural,
    print_history,
    print_import,
    print_search,
    print_sessions,
    progress_bar,
    stderr_console,
    stdout_console,
)
from .mcp_server import DEFAULT_HTTP_HOST as MCP_HTTP_HOST
from .mcp_server import DEFAULT_HTTP_PORT as MCP_HTTP_PORT
from .mcp_server import LOOPBACK_HOSTS as MCP_LOOPBACK_HOSTS
from .mcp_server import TOKEN_ENV_VAR as MCP_TOKEN_ENV_VAR
from .results import RebuildResult, ReconcileResult
from .tools import (
    AGENT_TO_AGENT_ADVICE,
    ALLOW_LIST_ADVICE,
    CROSS_AGENT_ADVICE,
    DEFAULT_HISTORY_LIMIT,
    DEFAULT_LIMIT,
    DEFAULT_LIST_LIMIT,
    DEFAULT_PARTITIONS,
    DEFAULT_SESSION_KEY,
    MAX_BATCH_QUERIES,
    MAX_ERROR_CHARS,
    MAX_HISTORY_LIMIT,
    MAX_LIMIT,
    MAX_LIST_LIMIT,
    MAX_PARTITIONS,
    NOT_FOUND_ADVICE,
    ORDERS,
    ROLES,
    SELF_ADVICE,
    SESSION_KINDS,
    TREE_ADVICE,
    VISIBILITIES,
    LeaseWait,
    Visibility,
    json_dumps,
    shorten,
)

#: Environment variable naming the database when ``--db`` is not given.
DB_ENV_VAR = "OPENCLAW_FTS_DB"
#: Database file used when neither ``--db`` nor :data:`DB_ENV_VAR` is set (current folder).
DEFAULT_DB_FILE = "openclaw_fts.sqlite"
#: The CLI user is the operator: by default they search as the main agent's main session...
DEFAULT_CALLER_KEY = "agent:main:main"
#: ...seeing every session of every agent (agent-to-agent on, no allow list).
DEFAULT_VISIBILITY = "all"
#: Side files of a SQLite database whose sizes ``status`` reports (besides the main file).
SQLITE_SIDE_FILES = ("-wal",)

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
#: ``search --fail-if-empty`` when nothing matched (as ``grep`` answers 1 for no match, but
#: told apart from a failure, which is 1 here).
EXIT_NO_MATCH = 3
#: Exit code after Ctrl-C (128 + SIGINT), as shells report it.
EXIT_INTERRUPTED = 130

P = ParamSpec("P")
R = TypeVar("R")
F = TypeVar("F", bound=Callable[..., Any])


class CliError(click.ClickException):
    """A runtime failure: one line on stderr, exit :data:`EXIT_FAILURE`."""

    exit_code = EXIT_FAILURE


@dataclass
class State:
    """Options of the command group, shared with every subcommand through ``ctx.obj``."""

    db: str | None = None
    json: bool = False
    traceback: bool = False
    _url: URL | None = field(default=None, repr=False)

    @property
    def url(self) -> URL:
        if self._url is None:
            self._url = resolve_db_url(self.db)
        return self._url


def _state(ctx: click.Context | None = None) -> State:
    ctx = ctx or click.get_current_context()
    root = ctx.find_root()
    return root.ensure_object(State)


def _one_line(message: str) -> str:
    """Collapse a possibly multi-line message (SQL errors, click hints) into one line, cut to
    :data:`~openclaw_fts.errors.MAX_ERROR_CHARS` (click quotes arguments whole)."""
    return shorten(re.sub(r"\s*\n\s*", " ", message.strip()), MAX_ERROR_CHARS)


# -- the database URL -------------------------------------------------------------------------


def resolve_db_url(value: str | None) -> URL:
    """``--db`` as a SQLAlchemy URL: a URL as given, a bare file path as a SQLite URL."""
    raw = (value or "").strip() or f"sqlite:///{DEFAULT_DB_FILE}"
    if "://" in raw:
        try:
            return make_url(raw)
        except ArgumentError as exc:
            raise click.BadParameter(_one_line(str(exc)), param_hint="'--db'") from None
    if raw == ":memory:":
        return URL.create("sqlite")
    return URL.create("sqlite", database=str(Path(raw).expanduser()))


def sqlite_path(url: URL) -> Path | None:
    """The database file of a SQLite URL (None for other backends and in-memory databases)."""
    return TranscriptStore.database_file(url)


def _describe(url: URL) -> str:
    path = sqlite_path(url)
    return str(path) if path is not None else url.render_as_string(hide_password=True)


#: How a command treats the database schema: ``auto`` migrates only when it is behind head (so
#: an up-to-date database is opened without a write) and creates it in an empty database (the
#: ``import`` and maintenance commands), ``read`` migrates one that is behind head but refuses
#: a database without the plugin's schema (the read-only commands: reading never creates the
#: schema), ``require`` refuses a database without the plugin's schema and never migrates,
#: ``any`` leaves it alone (the ``upgrade`` command).
SchemaMode = Literal["auto", "read", "require", "any"]


def no_schema_message(name: str) -> str:
    """What a read-only command says about a database that holds no openclaw-fts schema."""
    return (
        f"database {name} has no openclaw-fts schema: create it with `{PROG_NAME} upgrade`, "
        f"or import transcripts with `{PROG_NAME} import PATH` (or choose another database "
        f"with --db / ${DB_ENV_VAR})"
    )


@contextmanager
def open_store(
    state: State, *, schema: SchemaMode, must_exist: bool = True
) -> Iterator[TranscriptStore]:
    """A store on ``--db`` without a background thread; a one-line error if it is unusable."""
    url = state.url
    name = _describe(url)
    path = sqlite_path(url)
    if path is not None:
        folder = path.parent
        if not folder.is_dir():
            # Neither a read nor `upgrade` can help: SQLite creates files, never folders.
            what = "does not exist" if must_exist else "cannot be created"
            raise CliError(
                f"database {name} {what}: its folder {folder} "
                f"{'is not a folder' if folder.exists() else 'does not exist'} (create the "
                f"folder, or choose another database with --db / ${DB_ENV_VAR})"
            )
        if must_exist and not path.exists():
            raise CliError(
                f"database {name} does not exist (create it with `{PROG_NAME} import PATH` "
                f"or `{PROG_NAME} upgrade`, or choose one with --db / ${DB_ENV_VAR})"
            )
        if path.exists() and not path.is_file():
            raise CliError(f"database {name} is not a file")
        if schema in ("read", "require") and path.is_file() and path.stat().st_size == 0:
            # An empty file is an empty database: refused before a connection writes to it.
            raise CliError(no_schema_message(name))
    try:
        store = TranscriptStore(url, upgrade=False, background=False)
    except ArgumentError as exc:  # e.g. an unknown dialect in the URL
        raise click.BadParameter(_one_line(str(exc)), param_hint="'--db'") from None
    except MissingDriverError as exc:  # the URL's driver is not installed: names the extra
        raise CliError(f"cannot use database {name}: {_one_line(str(exc))}") from None
    except ImportError as exc:
        raise CliError(
            f"cannot use database {name}: its driver is not installed ({_one_line(str(exc))})"
        ) from None
    try:
        try:
            revisions = store.schema_revisions()
            behind = not store.schema_at_head()
            if behind and (schema == "auto" or (schema == "read" and revisions)):
                store.upgrade_schema()  # refuses a host-managed database behind head
        except DBAPIError as exc:
            raise CliError(f"cannot use database {name}: {_one_line(str(exc.orig))}") from None
        except CommandError as exc:
            raise CliError(f"cannot migrate database {name}: {_one_line(str(exc))}") from None
        if schema in ("read", "require") and not revisions:
            raise CliError(no_schema_message(name))
        yield store
    finally:
        store.close()


# -- error handling ---------------------------------------------------------------------------


def handled(fn: Callable[P, R]) -> Callable[P, R]:
    """Turn the plugin's and the database's exceptions into one-line CLI errors."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except BrokenPipeError:
            raise
        except ToolInputError as exc:
            raise click.UsageError(str(exc), click.get_current_context()) from None
        except OpenClawFtsError as exc:
            raise CliError(_one_line(str(exc))) from None
        except DBAPIError as exc:
            raise CliError(f"database error: {_one_line(str(exc.orig))}") from None
        except SQLAlchemyError as exc:
            raise CliError(f"database error: {_one_line(str(exc))}") from None
        except CommandError as exc:
            raise CliError(f"schema migration failed: {_one_line(str(exc))}") from None
        except OSError as exc:
            raise CliError(_one_line(str(exc))) from None
        except Exception as exc:
            if _state().traceback:
                raise
            raise CliError(
                f"unexpected error ({type(exc).__name__}): {_one_line(str(exc))} "
                "(run with --traceback for details)"
            ) from None

    return wrapper


# -- the tools' refusals, said for the command line ------------------------------------------

#: The advice in the tools' refusals (OpenClaw's, naming its configuration) -> what fixes it on
#: the command line. Only the CLI translates; the tool results keep OpenClaw's exact text.
CLI_ADVICE = {
    NOT_FOUND_ADVICE: f"(list the sessions you may read with `{PROG_NAME} sessions`)",
    CROSS_AGENT_ADVICE: (
        "Run with --visibility all --agent-to-agent to allow cross-agent access "
        "(--allow PATTERN restricts which agents)."
    ),
    AGENT_TO_AGENT_ADVICE: "Run with --agent-to-agent to allow cross-agent access.",
    ALLOW_LIST_ADVICE: "denied by --allow (add the agent's id to --allow, or give none).",
    SELF_ADVICE: "(--visibility self; widen it with --visibility tree, agent or all).",
    TREE_ADVICE: "(--visibility tree; widen it with --visibility agent or all).",
}


def cli_message(message: str) -> str:
    """A tool's refusal with its OpenClaw configuration advice replaced by the CLI's flags."""
    for openclaw, cli_text in CLI_ADVICE.items():
        message = message.replace(openclaw, cli_text)
    return message


def _refuse(result: Mapping[str, Any]) -> None:
    """A ``status`` result (an invalid argument, a session that cannot be read): the CLI's
    wording on stderr, exit :data:`EXIT_FAILURE`; with ``--json`` the tool's own result is
    already on stdout and stays as the tool returned it."""
    line = cli_message(str(result.get("error", result.get("status"))))
    if _state().json:
        click.echo(f"Error: {_one_line(line)}", err=True)
        click.get_current_context().exit(EXIT_FAILURE)
    raise CliError(line)


# -- output helpers ---------------------------------------------------------------------------


#: Whether this run has written its JSON document to stdout (an error then adds none).
_json_emitted = False


def _emit_json(data: Any) -> None:
    """One strict JSON document on stdout (no NaN / Infinity: docs/import.md)."""
    global _json_emitted
    _json_emitted = True
    click.echo(json_dumps(data, ensure_ascii=False, indent=2, sort_keys=False))


def _wants_json(argv: Sequence[str]) -> bool:
    """``--json`` among the options (anywhere before a ``--`` that ends them)."""
    args = list(argv)
    if "--" in args:
        args = args[: args.index("--")]
    return "--json" in args


def _json_error(message: str, code: int) -> None:
    """With ``--json``, a failure is still one JSON document on stdout (the line on stderr
    stays, for people): ``{"error": {"message", "exitCode", "kind"}}``."""
    kind = {EXIT_USAGE: "usage", EXIT_INTERRUPTED: "interrupted"}.get(code, "failure")
    click.echo(
        json.dumps(
            {"error": {"message": message, "exitCode": code, "kind": kind}},
            ensure_ascii=False,
            indent=2,
        )
    )


# -- shared options ---------------------------------------------------------------------------


def _json_callback(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    if value:
        _state(ctx).json = True
    return value


json_option = click.option(
    "--json",
    "as_json",
    is_flag=True,
    expose_value=False,
    callback=_json_callback,
    help="Machine-readable output: one JSON document on stdout.",
)


def caller_options(fn: F) -> F:
    """``--as``, ``--visibility``, ``--agent-to-agent`` and ``--allow``: who is asking."""
    decorators = [
        click.option(
            "--as",
            "caller_key",
            default=DEFAULT_CALLER_KEY,
            show_default=True,
            metavar="KEY",
            help="Session key of the caller whose visibility applies.",
        ),
        click.option(
            "--visibility",
            type=click.Choice(VISIBILITIES),
            default=DEFAULT_VISIBILITY,
            show_default=True,
            help="What the caller may see: self, tree (own + spawned), agent, all.",
        ),
        click.option(
            "--agent-to-agent/--no-agent-to-agent",
            "agent_to_agent",
            default=True,
            show_default=True,
            help="Under 'all', also show other agents' sessions (the operator default).",
        ),
        click.option(
            "--allow",
            "allow",
            multiple=True,
            metavar="PATTERN",
            help="Agent ids visible across agents ('*' wildcard; repeatable; none = any).",
        ),
    ]
    for decorator in reversed(decorators):
        fn = decorator(fn)
    return fn


def _caller(caller_key: str, visibility: str, agent_to_agent: bool, allow: Sequence[str]) -> Caller:
    return Caller(
        caller_key,
        visibility=cast(Visibility, visibility),
        agent_to_agent=AgentToAgent(enabled=agent_to_agent, allow=tuple(allow)),
    )


def _reconcile_with_progress(store: TranscriptStore, description: str) -> ReconcileResult:
    return _with_progress(description, store.reconcile)


def _with_progress(description: str, work: Callable[..., R]) -> R:
    """``work(progress=..., on_wait=...)`` (the store's reconcile or rebuild) with a progress
    bar on stderr, and a line there whenever it waits for another process's lease."""
    console = stderr_console()
    with progress_bar(console) as progress:
        task: TaskID | None = None

        def report(counts: dict[str, int]) -> None:
            nonlocal task
            if task is None:
                task = progress.add_task(description, total=counts["total"])
            progress.update(task, total=counts["total"], completed=counts["indexed"])

        def waiting(why: LeaseWait) -> None:
            # Said on stderr whether or not it is a terminal: a silent wait looks like a hang.
            progress.console.print(f"Waiting: {why.reason}.")

        return work(progress=report, on_wait=waiting)


# -- the command group ------------------------------------------------------------------------


@click.group(
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    help=(
        "Exact session recall for AI agents: import OpenClaw transcripts into a SQLite FTS5 "
        "store, search them and read the history around a hit.\n\n"
        "The CLI user is the operator: search and history default to "
        f"--as {DEFAULT_CALLER_KEY} --visibility {DEFAULT_VISIBILITY} --agent-to-agent, "
        "i.e. every session of every agent (incognito sessions are never searchable)."
    ),
)
@click.option(
    "--db",
    envvar=DB_ENV_VAR,
    show_envvar=True,
    metavar="URL",
    help=(f"SQLAlchemy URL or SQLite file path of the store [default: ./{DEFAULT_DB_FILE}]."),
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Machine-readable output (also accepted after the subcommand).",
)
@click.option("--traceback", is_flag=True, help="Show Python tracebacks of unexpected errors.")
@click.version_option(__version__, prog_name=PROG_NAME)
@click.pass_context
def cli(ctx: click.Context, db: str | None, as_json: bool, traceback: bool) -> None:
    state = _state(ctx)
    state.db = db
    state.json = state.json or as_json
    state.traceback = traceback
    state.url  # noqa: B018 - validate --db now, as a usage error before any work


# -- import -----------------------------------------------------------------------------------


@cli.command("import", short_help="Import .jsonl transcripts or sessions folders.")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--session-key",
    metavar="KEY",
    help=(
        "Session key for .jsonl files given on their own: each becomes that key's newest "
        "incarnation (what `history KEY` reads). Without it a file goes under "
        f"{DEFAULT_SESSION_KEY} while no other session holds that key, else under "
        "agent:main:orphan:<sessionId> (a re-import keeps the stored key). Sessions in a "
        "folder take theirs from its sessions.json."
    ),
)
@click.option(
    "--rekey",
    is_flag=True,
    help=(
        "Sessions already in the database take the key and agent the folder gives them "
        "(corrects imports made by versions that mapped folders differently)."
    ),
)
@json_option
@handled
def import_cmd(paths: tuple[Path, ...], session_key: str | None, rekey: bool) -> None:
    """Import .jsonl transcripts or OpenClaw folders: a state folder (~/.openclaw), its agents/
    folder, or a sessions folder (sessions.json + <id>.jsonl + <id>.jsonl.reset.<ms>).

    A transcript under agents/<agentId>/sessions/ belongs to that agent: under the key its
    sessions.json entry gives, else under agent:<agentId>:orphan:<sessionId>; reset archives
    become older incarnations of their key. A .jsonl file given on its own goes under
    --session-key, else as that option says; the key used is printed for every file. Events
    are stored as they are (re-importing skips
    events already stored); the sessions are left pending and get indexed by `reconcile` or the
    next `search`. Malformed lines are reported with file:line and skipped. Exit status 1 if a
    path could not be imported at all.
    """
    state = _state()
    if session_key is not None and not session_key.strip():
        raise click.BadParameter("must not be empty", param_hint="'--session-key'")
    result: dict[str, Any]
    if any(path.exists() for path in paths):
        with open_store(state, schema="auto", must_exist=False) as store:
            console = stderr_console()
            with progress_bar(console) as progress:
                task = progress.add_task("importing", total=None)
                imported = store.import_paths(
                    paths,
                    session_key=session_key,
                    rekey=rekey,
                    progress=lambda lines: progress.advance(task, lines),
                    on_file=lambda path: progress.update(
                        task, description=f"importing {path.name}"
                    ),
                )
            result = {**imported, "index": store.index_status()}
    else:  # nothing to import: no database is created for it
        missing = [f"{path}: no such file or folder" for path in paths]
        result = {"failedFiles": missing, "index": None}
    failures: list[str] = result["failedFiles"]
    if state.json:
        _emit_json(result)
    elif result.get("sessions"):  # no summary when nothing was imported
        print_import(result)
    for failure in failures:  # in both modes: one line each on stderr
        click.echo(f"Error: not imported: {_one_line(failure)}", err=True)
    if failures:
        click.get_current_context().exit(EXIT_FAILURE)


# -- search -----------------------------------------------------------------------------------


@cli.command("search", short_help="Full-text search (sessions_search).")
@click.argument("query")
@click.option(
    "--query",
    "-q",
    "more_queries",
    multiple=True,
    metavar="QUERY",
    help=f"Another query of the same batch (up to {MAX_BATCH_QUERIES} with QUERY); each hit "
    "names its query.",
)
@caller_options
@click.option(
    "--limit",
    type=int,  # validated once, by the search (the tool's rule and message)
    default=None,
    metavar="N",
    help=f"Most results to return [default: {DEFAULT_LIMIT}; max {MAX_LIMIT}].",
)
@click.option("--role", type=click.Choice(ROLES), help="Only messages of this role.")
@click.option("--since", metavar="WHEN", help="Not before (epoch ms, ISO 8601, or a span ago: 7d).")
@click.option("--until", metavar="WHEN", help="Not after (epoch ms, ISO 8601, or a span ago: 24h).")
@click.option(
    "--order",
    type=click.Choice(ORDERS),
    default=ORDERS[0],
    show_default=True,
    help="Best matches first, or newest first.",
)
@click.option("--session-key", metavar="KEY", help="Only this session key.")
@click.option(
    "--reconcile/--no-reconcile",
    "reconcile",
    default=True,
    show_default=True,
    help="Index pending sessions (e.g. fresh imports) before searching.",
)
@click.option(
    "--wait",
    is_flag=True,
    help="Always index pending sessions first, even with --no-reconcile.",
)
@click.option(
    "--per-session",
    is_flag=True,
    help="One hit per session key (its best) with the session's number of matching messages "
    "(Hits); --limit then counts sessions. Not with -q.",
)
@click.option(
    "--fail-if-empty",
    is_flag=True,
    help=f"Exit with status {EXIT_NO_MATCH} when nothing matches (for scripts).",
)
@json_option
@handled
def search_cmd(
    query: str,
    more_queries: tuple[str, ...],
    caller_key: str,
    visibility: str,
    agent_to_agent: bool,
    allow: tuple[str, ...],
    limit: int | None,
    role: str | None,
    since: str | None,
    until: str | None,
    order: str,
    session_key: str | None,
    reconcile: bool,
    wait: bool,
    per_session: bool,
    fail_if_empty: bool,
) -> None:
    """Full-text search of the transcripts (sessions_search).

    Words are ANDed and matched as whole words (case and diacritics folded: cafe finds Café);
    "a phrase" in double quotes, deploy* as a prefix, OR between terms; everything else is
    literal. Chinese, Japanese and Korean are matched as substrings.

    Pending sessions (fresh imports, rewinds) are indexed first unless --no-reconcile: then the
    results may be incomplete and a note says so. --session-key also takes current, main,
    global or a session id.

    The table lists hits in rank order: # is the rank (1 = best match, or newest with --order
    recent); Match is the hit's score as a share of the best hit's (100% is the best hit of the
    query; - when the hits carry no score). Raw scores (--json "score") depend on the
    engine and on which sessions the caller sees: compare them only within one query.
    """
    state = _state()
    caller = _caller(caller_key, visibility, agent_to_agent, allow)
    with open_store(state, schema="read") as store:
        if (reconcile or wait) and store.index_status()["pending"]:
            _reconcile_with_progress(store, "indexing")
        filters: dict[str, Any] = {
            "limit": limit,
            "session_key": session_key,
            "role": role,
            "since": since,
            "until": until,
            "order": order,
        }
        result: Mapping[str, Any]
        if per_session:
            if more_queries:
                raise click.UsageError("--per-session takes one query (no -q)")
            result = store.search_by_session(caller, query, **filters)
        else:
            result = store.search(
                caller, query, queries=list(more_queries) if more_queries else None, **filters
            )
        pending = store.index_status()["pending"] if result.get("indexing") else 0
    if state.json:
        _emit_json(result)
    elif "status" not in result:
        print_search(result, pending, query)
    if "status" in result:
        _refuse(result)
    if fail_if_empty and not result.get("results"):
        click.get_current_context().exit(EXIT_NO_MATCH)


# -- history ----------------------------------------------------------------------------------


@cli.command("history", short_help="Read a session's active branch (sessions_history).")
@click.argument("key")
@caller_options
@click.option("--message-id", metavar="ID", help="Show the window around this message.")
@click.option("--session-id", metavar="ID", help="Incarnation of KEY to read (with --message-id).")
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help=f"Most messages to return [default: {DEFAULT_HISTORY_LIMIT}; more than "
    f"{MAX_HISTORY_LIMIT} reads {MAX_HISTORY_LIMIT}].",
)
@click.option(
    "--offset",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="Skip this many newest messages (paging back; not with --message-id).",
)
@click.option(
    "--include-tools",
    is_flag=True,
    help="Also show tool results (tool calls always show, in their assistant turn).",
)
@json_option
@handled
def history_cmd(
    key: str,
    caller_key: str,
    visibility: str,
    agent_to_agent: bool,
    allow: tuple[str, ...],
    message_id: str | None,
    session_id: str | None,
    limit: int | None,
    offset: int | None,
    include_tools: bool,
) -> None:
    """The active branch of session KEY, oldest first (sessions_history).

    KEY is a session key, current (the --as key), main (its agent's main session), global, or a
    session id. With --message-id the window is read from the incarnation holding that message
    (the newest one that does, e.g. an imported reset archive) unless --session-id names one.

    Texts are redacted and cut, images omitted; tool results are left out unless
    --include-tools (an assistant turn made only of tool calls stays, as in OpenClaw). Each
    message's #N is its position in the transcript (1 = the first line of the session file):
    gaps are events not shown (tool results, other branches, session metadata), so #N stays
    the same whatever page or window shows it. A --message-id no event of the session holds
    is an error.
    """
    state = _state()
    caller = _caller(caller_key, visibility, agent_to_agent, allow)
    with open_store(state, schema="read") as store:
        result = store.history(
            caller,
            key,
            limit=limit,
            offset=offset,
            message_id=message_id,
            session_id=session_id,
            include_tools=include_tools,
        )
    if state.json:
        _emit_json(result)
    if "status" in result:
        _refuse(result)
    if not state.json:
        print_history(result, message_id)


# -- sessions ---------------------------------------------------------------------------------


@cli.command("sessions", short_help="List the sessions the caller may see (sessions_list).")
@caller_options
@click.option("--agent", "agent_id", metavar="ID", help="Only sessions of this agent.")
@click.option(
    "--kind",
    "kinds",
    multiple=True,
    type=click.Choice(SESSION_KINDS),
    help="Only sessions of this kind (repeatable).",
)
@click.option(
    "--search", metavar="TEXT", help="Only keys or session ids containing TEXT (case ignored)."
)
@click.option(
    "--active",
    "active_minutes",
    type=click.IntRange(min=1),
    metavar="MINUTES",
    help="Only sessions active in the last MINUTES.",
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help=f"Most sessions to list [default: {DEFAULT_LIST_LIMIT}; more than {MAX_LIST_LIMIT} "
    f"lists {MAX_LIST_LIMIT}].",
)
@json_option
@handled
def sessions_cmd(
    caller_key: str,
    visibility: str,
    agent_to_agent: bool,
    allow: tuple[str, ...],
    agent_id: str | None,
    kinds: tuple[str, ...],
    search: str | None,
    active_minutes: int | None,
    limit: int | None,
) -> None:
    """The session keys the caller may see, most recently active first (sessions_list): agent,
    key, current session id, messages, last activity and indexing state.

    Messages counts the message events of the current incarnation (every branch). Indexing is
    indexed, pending (new events not yet in the full-text index: `search` or `reconcile`
    indexes them) or never (an incognito session: never searchable). Pass a key to `history`
    or `search --session-key`.
    """
    state = _state()
    caller = _caller(caller_key, visibility, agent_to_agent, allow)
    with open_store(state, schema="read") as store:
        result = store.list_sessions(
            caller,
            limit=limit,
            kinds=list(kinds) or None,
            agent_id=agent_id,
            search=search,
            active_minutes=active_minutes,
            details=True,
        )
    if state.json:
        _emit_json(result)
        return
    print_sessions(result["sessions"])
    if result.get("truncated"):
        stdout_console().print(
            f"More sessions exist: narrow the list or raise --limit (max {MAX_LIST_LIMIT})."
        )


# -- reconcile / status / check / upgrade -----------------------------------------------------


@cli.command("reconcile", short_help="Index every pending session now.")
@json_option
@handled
def reconcile_cmd() -> None:
    """Index every pending session now (fresh imports, rewinds, rows written behind the hooks)."""
    state = _state()
    with open_store(state, schema="auto") as store:
        result = _reconcile_with_progress(store, "reconciling")
    if state.json:
        _emit_json(result)
        return
    stdout_console().print(
        f"Reconciled {plural(result.get('sessions', 0), 'session')} "
        f"({plural(result.get('inserted', 0), 'index row')} inserted, "
        f"{result.get('deleted', 0)} deleted). "
        f"Sessions: {result['indexed']} indexed, {result['pending']} pending, "
        f"{result['total']} total."
    )


@cli.command("rebuild", short_help="Re-index sessions from their transcripts.")
@click.argument("keys", nargs=-1, metavar="[KEY]...")
@json_option
@handled
def rebuild_cmd(keys: tuple[str, ...]) -> None:
    """Re-index the sessions with these session keys or ids (all sessions without KEY), after
    their events were changed behind the plugin's back."""
    state = _state()
    with open_store(state, schema="auto") as store:
        result: RebuildResult = _with_progress(
            "re-indexing", functools.partial(store.rebuild, keys or None)
        )
    marked = result["rebuilt"]
    if keys and not marked:
        raise CliError(f"no session has the key or id {', '.join(keys)}")
    if state.json:
        _emit_json(result)
        return
    stdout_console().print(
        f"Re-indexed {plural(len(marked), 'session')} "
        f"({plural(result.get('inserted', 0), 'index row')} inserted, "
        f"{result.get('deleted', 0)} deleted)."
    )


@cli.command("optimize", short_help="Merge the full-text index's segments.")
@json_option
@handled
def optimize_cmd() -> None:
    """Merge the FTS5 index into one segment (after large imports or many edits)."""
    state = _state()
    with open_store(state, schema="require") as store:
        store.optimize()
        name = _describe(store.engine.url)
    if state.json:
        _emit_json({"database": name, "optimized": True})
        return
    stdout_console().print(f"{name}: full-text index optimized.")


def _file_sizes(path: Path) -> dict[str, int]:
    sizes = {"db": path.stat().st_size if path.is_file() else 0}
    for suffix in SQLITE_SIDE_FILES:
        side = path.with_name(path.name + suffix)
        sizes[suffix.lstrip("-")] = side.stat().st_size if side.is_file() else 0
    return sizes


@cli.command("status", short_help="Pending / indexed / total sessions, size on disk.")
@json_option
@handled
def status_cmd() -> None:
    """Sessions pending / indexed / total, schema revision and the database's size on disk."""
    state = _state()
    with open_store(state, schema="require") as store:
        counts = store.index_status()
        revisions = store.schema_revisions()
        path = sqlite_path(store.engine.url)
        name = _describe(store.engine.url)
    result: dict[str, Any] = {"database": name, **counts, "schema": revisions}
    if path is not None:
        result["sizes"] = _file_sizes(path)
    if state.json:
        _emit_json(result)
        return
    out = stdout_console()
    out.print(f"database  {name}")
    out.print(f"schema    {', '.join(revisions)}")
    out.print(
        f"sessions  {counts['total']} total, {counts['indexed']} indexed, "
        f"{counts['pending']} pending"
    )
    if "sizes" in result:
        sizes: dict[str, int] = result["sizes"]
        out.print("size      " + ", ".join(f"{k} {human_size(v)}" for k, v in sizes.items()))


@cli.command("check", short_help="Verify the index; exit 1 on drift or corruption.")
@json_option
@handled
def check_cmd() -> None:
    """Verify the full-text index's integrity and that it equals the active branches (exit 1
    if not)."""
    state = _state()
    with open_store(state, schema="require") as store:
        report = store.check()
    data = report.as_dict()
    if state.json:
        _emit_json(data)
    else:
        out = stdout_console()
        out.print(f"Full-text index integrity: {data['ftsIntegrity']}")
        if report.drift:
            out.print(f"Drift in {plural(len(report.drift), 'indexed session')}:")
            for sid, diff in sorted(report.drift.items()):
                out.print(
                    f"  {sid}: {plural(diff.get('missing', 0), 'row')} missing, "
                    f"{diff.get('extra', 0)} extra"
                )
        else:
            out.print("Drift: none")
        out.print(f"Orphan index rows: {report.orphans}")
        out.print(
            f"Sessions: {data.get('total', 0)} total, {data.get('indexed', 0)} indexed, "
            f"{data.get('pending', 0)} pending (pending sessions are not checked)"
        )
        out.print("OK" if report.ok else "PROBLEMS FOUND")
    if not report.ok:
        click.get_current_context().exit(EXIT_FAILURE)


@cli.command("upgrade", short_help="Migrate the schema to head.")
@json_option
@handled
def upgrade_cmd() -> None:
    """Migrate the database schema to the newest revision (creates the database if missing)."""
    state = _state()
    with open_store(state, schema="any", must_exist=False) as store:
        before = store.schema_revisions()
        after = store.upgrade_schema()
        name = _describe(store.engine.url)
    if state.json:
        _emit_json({"database": name, "from": before, "to": after})
        return
    if before == after:
        stdout_console().print(f"{name}: schema already at head ({', '.join(after)}).")
    else:
        stdout_console().print(
            f"{name}: schema upgraded from {', '.join(before) or '(none)'} to {', '.join(after)}."
        )


# -- the layout partitioned by agent (PostgreSQL) ---------------------------------------------


@cli.command("partition", short_help="PostgreSQL: partition the index by agent.")
@click.option(
    "--partitions",
    type=click.IntRange(1, MAX_PARTITIONS),
    default=DEFAULT_PARTITIONS,
    show_default=True,
    help="Hash partitions of the index rows.",
)
@json_option
@handled
def partition_cmd(partitions: int) -> None:
    """Move the index rows into hash partitions by agent, in one transaction that keeps every
    row (docs/scale.md). Stop the writers first: it locks the index table throughout."""
    _convert(lambda store: store.partition_by_agent(partitions), "partitioned")


@cli.command("unpartition", short_help="PostgreSQL: back to the plain index table.")
@json_option
@handled
def unpartition_cmd() -> None:
    """Move the index rows back into the plain table, in one transaction that keeps every row
    (before a schema downgrade). Stop the writers first, and restart stores opened before."""
    _convert(lambda store: store.unpartition_by_agent(), "unpartitioned")


def _convert(run: Callable[[TranscriptStore], int], done: str) -> None:
    state = _state()
    with open_store(state, schema="require") as store:
        name = _describe(store.engine.url)
        started = time.perf_counter()
        try:
            rows = run(store)
        except ValueError as exc:  # the layout is already what was asked for
            raise CliError(f"{name}: {_one_line(str(exc))}") from None
        seconds = time.perf_counter() - started
    if state.json:
        _emit_json({"database": name, "rows": rows, "seconds": round(seconds, 3)})
        return
    stdout_console().print(f"{name}: {done}, {plural(rows, 'index row')} moved in {seconds:.1f} s.")


# -- mcp --------------------------------------------------------------------------------------


@cli.command("mcp", short_help="Serve the tools to an agent over MCP (stdio or HTTP).")
@click.option("--as", "caller_key", required=True, metavar="KEY", help="The agent's session key.")
@click.option(
    "--visibility",
    type=click.Choice(VISIBILITIES),
    default="tree",
    show_default=True,
    help="What the agent may see: self, tree (own + spawned), agent, all.",
)
@click.option(
    "--agent-to-agent/--no-agent-to-agent",
    default=False,
    show_default=True,
    help="Under 'all', also show other agents' sessions.",
)
@click.option("--allow", multiple=True, metavar="PATTERN", help="Agent ids visible across agents.")
@click.option(
    "--http",
    is_flag=True,
    help=f"Serve Streamable HTTP instead of stdio; needs a bearer token (${MCP_TOKEN_ENV_VAR}).",
)
@click.option(
    "--host",
    default=MCP_HTTP_HOST,
    show_default=True,
    help="With --http: the address to listen on (the default: this machine only).",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=MCP_HTTP_PORT,
    show_default=True,
    help="With --http: the port (0: any free one).",
)
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help=f"With --http: a file holding the bearer token (instead of ${MCP_TOKEN_ENV_VAR}).",
)
@handled
def mcp_cmd(
    caller_key: str,
    visibility: str,
    agent_to_agent: bool,
    allow: tuple[str, ...],
    http: bool,
    host: str,
    port: int,
    token_file: Path | None,
) -> None:
    """Serve sessions_search, sessions_history and sessions_list over the Model Context
    Protocol on stdin/stdout (or with --http over Streamable HTTP, behind a bearer token), as
    the one caller these options define (docs/mcp.md). Defaults are an agent's (OpenClaw's):
    its own tree, no other agents. Needs the mcp extra."""
    from .mcp_server import HttpListen, read_token, require_mcp, serve

    ctx = click.get_current_context()
    given = [
        f"--{name.replace('_', '-')}"
        for name in ("host", "port", "token_file")
        if ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT
    ]
    if given and not http:
        raise click.UsageError(f"{', '.join(given)} go(es) with --http", ctx)
    require_mcp()
    caller = _caller(caller_key, visibility, agent_to_agent, allow)
    listen = HttpListen(read_token(token_file, os.environ), host, port) if http else None
    with open_store(_state(), schema="read"):  # the checks every command makes, then served
        pass

    def on_listening(url: str) -> None:
        click.echo(f"{PROG_NAME} mcp: serving {url} (bearer token required)", err=True)
        if host not in MCP_LOOPBACK_HOSTS:
            click.echo(
                f"{PROG_NAME} mcp: warning: plain HTTP beyond this machine: the token and the "
                "results cross the network unencrypted (put a TLS proxy in front)",
                err=True,
            )

    state = _state()
    serve(state.url, caller, traceback=state.traceback, http=listen, on_listening=on_listening)


# -- entry point ------------------------------------------------------------------------------


def _usage_line(exc: click.UsageError) -> str:
    hint = ""
    if exc.ctx is not None:
        hint = f" (see '{exc.ctx.command_path} --help')"
    return f"Error: {_one_line(exc.format_message())}{hint}"


def run(argv: Sequence[str] | None = None) -> int:
    """Run the CLI on ``argv`` (default ``sys.argv[1:]``); the exit code."""
    global _json_emitted
    _json_emitted = False
    as_json = _wants_json(sys.argv[1:] if argv is None else argv)

    def fail(line: str, message: str, code: int) -> int:
        click.echo(line, err=True)
        if as_json and not _json_emitted:
            _json_error(message, code)
        return code

    try:
        rv = cli.main(args=argv, prog_name=PROG_NAME, standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:
        exc.show()
        return EXIT_USAGE
    except click.UsageError as exc:
        return fail(_usage_line(exc), _one_line(exc.format_message()), EXIT_USAGE)
    except click.ClickException as exc:
        message = _one_line(exc.format_message())
        return fail(f"Error: {message}", message, exc.exit_code)
    except click.exceptions.Abort:
        return fail("Aborted.", "aborted", EXIT_INTERRUPTED)
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_FAILURE
    return rv if isinstance(rv, int) and not isinstance(rv, bool) else EXIT_OK


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point of ``openclaw-fts``."""
    code = run(argv)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
        code = code or EXIT_FAILURE
    sys.exit(code)


def _silence_stdout() -> None:
    """After the reader of stdout went away (``| head``): no second error at interpreter exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())

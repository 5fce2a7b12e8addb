"""How the ``openclaw-fts`` command line shows results on a terminal: tables, history text,
summaries, progress bars.

Invariant: stdout carries only what the commands print through :func:`stdout_console`, whose
lines never end in padding spaces; progress bars go to stderr and only to a terminal; every text
shown is a store's or tool's already redacted output (nothing here reads a database or the
environment but the terminal's width). Only the public API is imported (pyproject.toml's
"cli-public-api" contract).
"""

from __future__ import annotations

import io
import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO, cast

from rich import box
from rich.console import Console
from rich.measure import Measurement
from rich.padding import Padding
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from . import tools
from .tools import (
    BY_DEFAULT_KEY,
    BY_GIVEN_KEY,
    BY_STORED_KEY,
    INDEXING_WARNING,
    MAX_ERROR_CHARS,
    MAX_LIMIT,
    shorten,
)

PROG_NAME = "openclaw-fts"

#: Line errors of an import listed in the human summary (the JSON lists what the report kept).
MAX_ERRORS_SHOWN = 20

#: Output width when stdout is not a terminal and ``$COLUMNS`` is unset (pipes, log files).
NON_TERMINAL_WIDTH = 160

#: The terminal-width variable Rich honours; an explicit value wins over the default above.
COLUMNS_ENV_VAR = "COLUMNS"

#: Session keys up to this long are never folded in the search table.
KEY_COLUMN_MAX_WIDTH = 40

#: The snippet column never gets narrower than this (wide layout).
SNIPPET_MIN_WIDTH = 24

#: Narrower outputs get the two-column search table (hit details stacked, snippet).
WIDE_TABLE_MIN_WIDTH = 120

#: A width no table reaches: what a table is measured in to learn its natural width.
UNBOUNDED_WIDTH = 1_000_000

#: Columns by which a session's details are indented under its key (narrow ``sessions``).
SESSION_DETAILS_INDENT = 2

#: Columns by which a history message's text is indented under its header line.
HISTORY_INDENT = 4

#: Spaces (and the style codes after them) that end a line: Rich pads every table cell and
#: wrapped line to its width, which leaves each line ending in blanks.
_TRAILING_BLANKS = re.compile(r" +((?:\x1b\[[0-9;]*m)*)(?=\n)")


class _TrimmedLines(io.TextIOBase):
    """A text stream that passes what it is given to ``target`` with each line's trailing
    spaces removed (a line is held until its end, or until :meth:`flush`)."""

    def __init__(self, target: TextIO) -> None:
        self._target = target
        self._held = ""

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self._target.isatty()

    def fileno(self) -> int:
        return self._target.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._target, "encoding", None) or "utf-8"

    def write(self, text: str) -> int:
        whole, newline, rest = (self._held + text).rpartition("\n")
        if newline:
            self._target.write(_TRAILING_BLANKS.sub(r"\1", whole + newline))
        self._held = rest
        return len(text)

    def flush(self) -> None:
        if self._held:
            self._target.write(self._held)
            self._held = ""
        self._target.flush()


def stdout_console() -> Console:
    trimmed = cast(TextIO, _TrimmedLines(sys.stdout))
    console = Console(file=trimmed, highlight=False, emoji=False, markup=False)
    if not console.is_terminal and not os.environ.get(COLUMNS_ENV_VAR):
        console.width = NON_TERMINAL_WIDTH  # logs and pipes: no 80-column squeeze
    return console


def stderr_console() -> Console:
    return Console(stderr=True, highlight=False, emoji=False, markup=False)


def progress_bar(console: Console) -> Progress:
    """A progress bar on stderr, shown only when stderr is a terminal (logs stay clean)."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    )


def iso(epoch_ms: Any) -> str:
    if isinstance(epoch_ms, bool) or not isinstance(epoch_ms, (int, float)):
        return "-"
    try:
        moment = datetime.fromtimestamp(epoch_ms / 1000, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return "-"
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"  # pragma: no cover - the loop always returns


def plural(count: int, noun: str) -> str:
    """``1 session``, ``2 sessions``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _flatten(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


#: How the text report names what a file became (``folders.AS_*``).
OUTCOME_WORDS = {
    "current": "current incarnation",
    "orphan": "no sessions.json entry",
    "resetArchive": "older incarnation",
}

#: How the text report names what a lone .jsonl file became (``as``, ``matchedBy``).
LONE_FILE_WORDS = {
    ("current", BY_GIVEN_KEY): "--session-key, its newest incarnation",
    ("current", BY_STORED_KEY): "the key it is stored under",
    ("current", BY_DEFAULT_KEY): "default key",
    ("orphan", BY_DEFAULT_KEY): "orphan key: the default key holds another session",
}


def print_import(result: dict[str, Any]) -> None:
    out = stdout_console()
    out.print(
        f"Imported {plural(result['imported'], 'event')} into "
        f"{plural(len(result['sessions']), 'session')} from {plural(result['files'], 'file')}; "
        f"{plural(result['skippedDuplicates'], 'duplicate')} skipped."
    )
    for outcome in result["outcomes"]:
        kind = LONE_FILE_WORDS.get(
            (outcome["as"], outcome["matchedBy"]), OUTCOME_WORDS.get(outcome["as"], outcome["as"])
        )
        out.print(
            f"  {Path(outcome['file']).name} → {outcome['sessionKey']} "
            f"({kind}, agent {outcome['agentId']})",
            markup=False,
            soft_wrap=True,
        )
        if outcome.get("note"):
            out.print(f"    note: {outcome['note']}", markup=False, soft_wrap=True)
    # Files and paths not imported at all are said on stderr: the rest are line errors.
    failed = {shorten(f, MAX_ERROR_CHARS) for f in result["failedFiles"]}
    errors: list[str] = [e for e in result["errors"] if e not in failed]
    count = result["errorCount"] - (len(result["errors"]) - len(errors))
    if count:
        out.print(f"{plural(count, 'line error')} (lines skipped):")
        for message in errors[:MAX_ERRORS_SHOWN]:
            out.print(f"  {message}")
        if count > min(len(errors), MAX_ERRORS_SHOWN):
            out.print(f"  … and {count - min(len(errors), MAX_ERRORS_SHOWN)} more")
    pending = (result["index"] or {}).get("pending", 0)
    if pending:
        out.print(
            f"{plural(pending, 'session')} pending indexing: `{PROG_NAME} search` indexes them "
            f"first (or run `{PROG_NAME} reconcile`)."
        )


def relative_scores(hits: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each hit's score as a share of the best score among ``hits`` (one query's results):
    ``100%`` for the best, ``-`` when the query ranks nothing (newest-first order, or scores of
    0). Raw scores depend on the engine, the caller and the corpus: only their order within
    one query means anything, which the share keeps."""
    best = max((float(h.get("score") or 0.0) for h in hits), default=0.0)
    if best <= 0:
        return ["-" for _ in hits]
    return [f"{max(0.0, float(h.get('score') or 0.0)) / best:.0%}" for h in hits]


def _hits_table(hits: list[dict[str, Any]], width: int) -> Table:
    """Search hits as a table: one column per field when wide, two stacked columns when narrow.
    ``#`` is the hit's place in the result order, ``Match`` its score relative to the best."""
    narrow = width < WIDE_TABLE_MIN_WIDTH
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, show_lines=narrow)
    shares = relative_scores(hits)
    grouped = any("sessionHits" in hit for hit in hits)
    if narrow:
        table.add_column("#", justify="right", no_wrap=True)
        table.add_column("Hit", overflow="fold", ratio=2)
        table.add_column("Snippet", overflow="fold", ratio=3)
        for place, (hit, share) in enumerate(zip(hits, shares, strict=True), start=1):
            head = Text(str(hit["sessionKey"]), style="bold")
            count = f" · {plural(int(hit['sessionHits']), 'hit')}" if grouped else ""
            head.append(
                f"\n{hit['messageId']} · {hit['role']} · match {share}{count}"
                f"\n{iso(hit['timestamp'])}",
                style="",
            )
            table.add_row(Text(str(place)), head, Text(_flatten(str(hit["snippet"]))))
        return table
    longest = max(len(str(hit["sessionKey"])) for hit in hits)
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("Session key", overflow="fold", min_width=min(longest, KEY_COLUMN_MAX_WIDTH))
    table.add_column("Id", overflow="fold")
    table.add_column("Time (UTC)", no_wrap=True)
    table.add_column("Role", no_wrap=True)
    table.add_column("Match", justify="right", no_wrap=True)
    if grouped:
        table.add_column("Hits", justify="right", no_wrap=True)
    table.add_column("Snippet", overflow="fold", ratio=1, min_width=SNIPPET_MIN_WIDTH)
    for place, (hit, share) in enumerate(zip(hits, shares, strict=True), start=1):
        cells = [
            Text(str(place)),
            Text(str(hit["sessionKey"])),
            Text(str(hit["messageId"])),
            Text(iso(hit["timestamp"])),
            Text(str(hit["role"])),
            Text(share),
        ]
        if grouped:
            cells.append(Text(str(hit["sessionHits"])))
        table.add_row(*cells, Text(_flatten(str(hit["snippet"]))))
    return table


#: Where the search result's ``warning`` is cut into lines: after a sentence, before the next.
WARNING_SENTENCE_BREAK = re.compile(r"(?<=[.?!])\s+(?=[A-Z])")


def warning_lines(result: Mapping[str, Any]) -> list[str]:
    """The result's ``warning`` (suggestions, a query without searchable words), one sentence
    a line, less the indexing warning: the command line says that itself, with the number of
    pending sessions and its own fix."""
    warning = str(result.get("warning") or "").replace(INDEXING_WARNING, "")
    return [line for line in WARNING_SENTENCE_BREAK.split(warning.strip()) if line]


#: What a query of punctuation and symbols only gets instead of "No matches.".
NO_WORDS_LINE = (
    "No matches: the query has no searchable words (punctuation and symbols are not indexed)."
)


def _no_matches(query: str) -> str:
    return "No matches." if tools.has_searchable_words(query) else NO_WORDS_LINE


def print_search(result: Mapping[str, Any], pending: int, query: str) -> None:
    out = stdout_console()
    notes = warning_lines(result)
    hits: list[dict[str, Any]] = result["results"]
    if result.get("batch"):
        for index, text in enumerate(result["queries"]):
            mine = [h for h in hits if h["queryIndex"] == index]
            out.print(Text(f"Query {index + 1}: {text}", style="bold"))
            out.print(_hits_table(mine, out.width) if mine else _no_matches(text))
        if result["results"]:
            first = result["results"][0]
            out.print(
                f"Read around a hit: {PROG_NAME} history {first['sessionKey']} "
                f"--message-id {first['messageId']}",
                soft_wrap=True,
            )
    elif not hits:
        for line in notes or [_no_matches(query)]:
            out.print(line)
        notes = []
    else:
        out.print(_hits_table(hits, out.width))
        first = hits[0]
        out.print(
            f"Read around a hit: {PROG_NAME} history {first['sessionKey']} "
            f"--message-id {first['messageId']}",
            soft_wrap=True,  # a command line to copy: never broken
        )
    for line in notes:
        out.print(line)
    if result.get("truncated"):
        cut = result.get("truncatedQueries")
        which = f" for query {', '.join(str(i + 1) for i in cut)}" if cut else ""
        out.print(
            f"More matches exist{which}: refine the query or raise --limit (max {MAX_LIMIT})."
        )
    if result.get("indexing"):
        out.print(
            f"Note: indexing incomplete ({plural(pending, 'session')} pending), results may be "
            f"missing; run `{PROG_NAME} reconcile` or search without --no-reconcile."
        )


def _block_text(block: Any) -> str:
    if not isinstance(block, dict):
        return str(block)
    kind = block.get("type")
    if kind in ("text", "input_text", "output_text"):
        return str(block.get("text", ""))
    if kind in ("thinking", "reasoning"):
        return f"[thinking] {block.get('thinking', block.get('text', ''))}"
    if kind == "image":
        size = block.get("bytes")
        return f"[image omitted, {size} bytes]" if size is not None else "[image omitted]"
    if kind in ("toolCall", "tool_use", "toolUse"):
        args = json.dumps(block.get("arguments", block.get("input", {})), ensure_ascii=False)
        return f"[tool call {block.get('name', '?')} {args}]"
    return f"[{kind}]"


def message_display_text(message: dict[str, Any]) -> str:
    """A history message's content as plain text for a terminal."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(t for t in (_block_text(b) for b in content) if t.strip())
    text = message.get("text")
    return text if isinstance(text, str) else ""


def print_history(result: Mapping[str, Any], anchor: str | None) -> None:
    out = stdout_console()
    messages: list[dict[str, Any]] = result["messages"]
    total = result.get("totalMessages", len(messages))
    out.print(
        f"{result['sessionKey']}: {len(messages)} of {plural(total, 'message')} "
        "(#N: the message's position in the transcript)"
    )
    if not messages:
        out.print("No messages." + (" (the anchor is not on the active branch)" if anchor else ""))
    for message in messages:
        meta = message.get("__openclaw") or {}
        role = str(message.get("role", "?"))
        if message.get("toolName"):
            role = f"{role} ({message['toolName']})"
        marker = "▶" if anchor is not None and meta.get("id") == anchor else " "
        out.print(
            Text(
                f"{marker} #{meta.get('seq', '?')} {meta.get('id', '')}  {role}  "
                f"{iso(meta.get('timestamp'))}",
                style="bold",
            )
        )
        out.print(
            Padding(Text(message_display_text(message)), (0, 0, 0, HISTORY_INDENT), expand=False)
        )
    if result.get("hasMore"):
        out.print(f"Older messages: --offset {result.get('nextOffset')}")
    if result.get("droppedMessages"):
        out.print("Some messages were left out to fit the size budget.")


def print_sessions(rows: list[dict[str, Any]]) -> None:
    out = stdout_console()
    if not rows:
        out.print("No sessions.")
        return
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    table.add_column("Agent", no_wrap=True)
    table.add_column("Session key", no_wrap=True)
    table.add_column("Session id", no_wrap=True)
    table.add_column("Messages", justify="right", no_wrap=True)
    table.add_column("Last activity (UTC)", no_wrap=True)
    table.add_column("Index", no_wrap=True)
    for row in rows:
        table.add_row(
            Text(str(row["agentId"])),
            Text(str(row["key"])),
            Text(str(row["sessionId"])),
            Text(str(row.get("messageCount", "-"))),
            Text(iso(row.get("updatedAt"))),
            Text(str(row.get("indexing", "-"))),
        )
    if Measurement.get(out, out.options.update_width(UNBOUNDED_WIDTH), table).maximum <= out.width:
        out.print(table)
    else:
        # Too narrow for one line a session: keys and ids are never cut (a key split
        # mid-word cannot be copied); each session gets its key on a line of its own.
        for row in rows:
            out.print(Text(str(row["key"]), style="bold"), soft_wrap=True)
            details = (
                f"id {row['sessionId']} · agent {row['agentId']}\n"
                f"{plural(int(row.get('messageCount') or 0), 'message')} · "
                f"last activity {iso(row.get('updatedAt'))} · {row.get('indexing', '-')}"
            )
            out.print(Padding(Text(details), (0, 0, 0, SESSION_DETAILS_INDENT), expand=False))

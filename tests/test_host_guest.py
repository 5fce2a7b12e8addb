"""The plugin inside a host's engine and transactions: what ``install()`` changes and what it
leaves alone — locks taken only to write, settings on every connection (pooled before install,
unbound sessionmakers), read-only files and folders, typed ``install()``."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from factories import chain, msg
from sqlalchemy import Engine, create_engine, delete, func, select, text
from sqlalchemy.orm import Session, sessionmaker

import openclaw_fts
from openclaw_fts import AgentSession, Caller, TranscriptEvent, TranscriptStore
from openclaw_fts.engine import BUSY_TIMEOUT_MS

CLI = Path(sys.executable).with_name("openclaw-fts")
#: A competing writer's busy timeout: far below the plugin's, so waiting on a lock shows.
OTHER_WRITER_TIMEOUT_S = 0.5
#: A read-only command behind a writer that holds the lock must answer well within this (the
#: busy timeout, which it would wait out if it asked for the lock, is 30 s).
READ_BEHIND_WRITER_S = 10.0
#: Seconds one CLI run may take on a loaded machine.
COMMAND_TIMEOUT = 120


@pytest.fixture
def seeded(store: TranscriptStore) -> TranscriptStore:
    store.create_session("s1", "agent:main:main")
    store.append_many("s1", chain(["deploy staging failed", "try again"]))
    return store


@pytest.fixture
def plain_engine(db_url: str, seeded: TranscriptStore) -> Iterator[Engine]:
    """A host's own engine, made without the plugin (pysqlite defaults)."""
    engine = create_engine(db_url)
    try:
        yield engine
    finally:
        engine.dispose()


def db_path(url: str) -> Path:
    return Path(url.removeprefix("sqlite:///"))


def other_writer_appends(path: Path) -> None:
    """Another process's write, impatient: fails if anyone holds the write lock."""
    con = sqlite3.connect(path, timeout=OTHER_WRITER_TIMEOUT_S, isolation_level=None)
    try:
        con.execute("BEGIN IMMEDIATE")
        con.execute("UPDATE openclaw_sessions SET archived = archived WHERE session_id = 's1'")
        con.execute("COMMIT")
    finally:
        con.close()


# -- locks ------------------------------------------------------------------------------------


def test_a_host_transaction_that_only_reads_takes_no_lock(
    db_url: str, plain_engine: Engine
) -> None:
    factory = sessionmaker(plain_engine)
    openclaw_fts.install(factory)
    with factory.begin() as db:
        assert db.get(AgentSession, "s1") is not None
        assert db.scalar(select(func.count()).select_from(TranscriptEvent)) == 2
        other_writer_appends(db_path(db_url))  # would be 'database is locked' under IMMEDIATE


def test_a_host_flush_of_plugin_objects_waits_for_the_lock_instead_of_failing(
    db_url: str, plain_engine: Engine
) -> None:
    factory = sessionmaker(plain_engine)
    openclaw_fts.install(factory)
    with factory.begin() as db:
        db.add(AgentSession(session_id="h1", session_key="agent:main:h1"))
        db.flush()  # the plugin's flush took the write lock ...
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            other_writer_appends(db_path(db_url))  # ... so an impatient writer is refused
    # A transaction that begins, lets another connection commit, then flushes: the flush
    # takes the lock before reading, so it sees the new state and succeeds.
    with factory.begin() as db:
        db.connection()  # BEGIN (deferred), no read yet
        other_writer_appends(db_path(db_url))
        db.add(TranscriptEvent(session_id="s1", event=msg("m9", "after the other writer")))
    with TranscriptStore(db_url, background=False) as s:
        hits = s.search(Caller("agent:main:main"), "other writer")
        assert [h["messageId"] for h in hits["results"]] == ["m9"]


def test_read_only_cli_commands_do_not_wait_behind_a_writer(
    db_url: str, seeded: TranscriptStore, tmp_path: Path
) -> None:
    path = db_path(db_url)
    seeded.close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("UPDATE openclaw_sessions SET archived = archived")
    try:
        for args in (
            ["search", "staging"],
            ["history", "agent:main:main"],
            ["status"],
            ["check"],
        ):
            started = time.monotonic()
            result = subprocess.run(
                [str(CLI), "--db", str(path), "--json", *args],
                capture_output=True,
                text=True,
                timeout=COMMAND_TIMEOUT,
                cwd=tmp_path,
            )
            elapsed = time.monotonic() - started
            assert result.returncode == 0, (args, result.stderr)
            assert elapsed < READ_BEHIND_WRITER_S < BUSY_TIMEOUT_MS / 1000, (args, elapsed)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


# -- settings on every connection -------------------------------------------------------------


def pragma(db: Session, name: str) -> object:
    return db.execute(text(f"PRAGMA {name}")).scalar()


def test_connections_pooled_before_install_get_the_settings(plain_engine: Engine) -> None:
    with plain_engine.connect() as conn:  # pooled now, with SQLite's default foreign_keys=0
        assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 0
    factory = sessionmaker(plain_engine)
    openclaw_fts.install(factory)
    with factory.begin() as db:
        assert pragma(db, "foreign_keys") == 1
        assert pragma(db, "busy_timeout") == BUSY_TIMEOUT_MS
        db.execute(delete(AgentSession).where(AgentSession.session_id == "s1"))
    with factory() as db:
        assert db.scalar(select(func.count()).select_from(TranscriptEvent)) == 0


def test_an_unbound_sessionmaker_configures_the_engine_of_its_first_transaction(
    plain_engine: Engine,
) -> None:
    factory = sessionmaker()
    openclaw_fts.install(factory)
    with factory(bind=plain_engine) as db, db.begin():
        assert pragma(db, "foreign_keys") == 1
        db.execute(delete(AgentSession).where(AgentSession.session_id == "s1"))
    with factory(bind=plain_engine) as db:
        assert db.scalar(select(func.count()).select_from(TranscriptEvent)) == 0
        assert pragma(db, "foreign_keys") == 1


def test_configure_engine_false_leaves_the_hosts_engine_alone(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'host.sqlite'}")
    try:
        openclaw_fts.metadata.create_all(engine)
        factory = sessionmaker(engine)
        openclaw_fts.install(factory, configure_engine=False)
        with factory.begin() as db:
            db.add(AgentSession(session_id="a", session_key="agent:main:a"))
            db.add(TranscriptEvent(session_id="a", event=msg("m1", "kept as the host set it")))
        with factory() as db:
            assert pragma(db, "foreign_keys") == 0
            assert pragma(db, "journal_mode") == "delete"
            assert db.scalar(select(TranscriptEvent.seq)) == 0
    finally:
        engine.dispose()


# -- read-only databases ----------------------------------------------------------------------


def read_only_runner(target: Path) -> list[str]:
    """A command prefix under which ``target`` (a file or a folder) cannot be written, even by
    root: a read-only bind mount in a private mount namespace."""
    if os.geteuid() != 0:
        pytest.skip("needs root for a read-only bind mount (chmod does not bind root)")
    if shutil.which("unshare") is None:
        pytest.skip("unshare(1) not available")
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip("user and mount namespaces not available")
    script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'
    return ["unshare", "-rm", "sh", "-c", script, str(target)]


def _run_read_only(prefix: list[str], path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, str(CLI), "--db", str(path), "--json", *args],
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        cwd=path.parent,
    )


@pytest.mark.parametrize("what", ["file", "folder"])
def test_read_only_commands_work_on_a_read_only_database(
    what: str, tmp_path: Path, db_url: str
) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "db.sqlite"
    with TranscriptStore(f"sqlite:///{path}", background=False) as s:
        s.create_session("s1", "agent:main:main")
        s.append_many("s1", chain(["deploy staging failed", "try again"]))
    prefix = read_only_runner(path if what == "file" else folder)
    found = _run_read_only(prefix, path, "search", "staging")
    assert found.returncode == 0, found.stderr
    assert [h["messageId"] for h in json.loads(found.stdout)["results"]] == ["m0"]
    history = _run_read_only(prefix, path, "history", "agent:main:main")
    assert history.returncode == 0, history.stderr
    status = _run_read_only(prefix, path, "status")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["indexed"] == 1
    checked = _run_read_only(prefix, path, "check")
    assert checked.returncode == 0, checked.stderr
    report = json.loads(checked.stdout)
    assert report["ok"] is True
    assert report["ftsIntegrity"] == "not run (read-only database)"
    # The Python store, with its default upgrade=True, opens it too and searches.
    script = (
        "import sys\n"
        "from openclaw_fts import Caller, TranscriptStore\n"
        "with TranscriptStore(sys.argv[1]) as s:\n"
        "    print(len(s.search(Caller('agent:main:main'), 'staging')['results']))\n"
    )
    store_run = subprocess.run(
        [*prefix, sys.executable, "-c", script, f"sqlite:///{path}"],
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        cwd=path.parent,
    )
    assert store_run.returncode == 0, store_run.stderr
    assert store_run.stdout.strip() == "1"
    # A write is refused with one line, not a traceback.
    refused = _run_read_only(prefix, path, "reconcile")
    assert refused.returncode == 1
    assert refused.stderr.strip() == "Error: database error: attempt to write a readonly database"

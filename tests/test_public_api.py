"""What a host programs against: the exported exception hierarchy, a typed ``install()``, JSON
errors of the command line, logging of repairs and reconcile batches, and the settings a host
tunes as constructor parameters."""

from __future__ import annotations

import inspect
import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest
from factories import chain
from sqlalchemy import text

import openclaw_fts
from openclaw_fts import TranscriptStore, errors

REPO = Path(__file__).resolve().parent.parent
CLI = Path(sys.executable).with_name("openclaw-fts")
#: Seconds a CLI or mypy run may take on a loaded machine.
COMMAND_TIMEOUT = 300


#: The plugin's errors that are not about input: not ``ValueError``s, so a host that drops an
#: event on a ``ValueError`` (bad input) never drops one because the disk was full.
NOT_INPUT_ERRORS = {"StorageFullError": OSError}


def test_every_error_class_is_exported_and_a_value_error() -> None:
    classes = {
        name: obj
        for name, obj in vars(errors).items()
        if inspect.isclass(obj) and issubclass(obj, Exception) and obj.__module__ == errors.__name__
    }
    assert "InvalidSessionError" in classes and "HostManagedSchemaError" in classes
    for name, cls in classes.items():
        assert getattr(openclaw_fts, name) is cls and name in openclaw_fts.__all__, name
        assert name in (errors.__doc__ or ""), f"{name} missing from the documented hierarchy"
        if name in NOT_INPUT_ERRORS:
            assert issubclass(cls, NOT_INPUT_ERRORS[name]) and not issubclass(cls, ValueError)
            continue
        assert issubclass(cls, openclaw_fts.OpenClawFtsError) and issubclass(cls, ValueError)


def test_invalid_session_error_is_raised_and_catchable_from_the_package(
    store: TranscriptStore,
) -> None:
    with pytest.raises(openclaw_fts.InvalidSessionError, match="session_key"):
        store.create_session("s1", "   ")


@pytest.mark.slow
def test_install_returns_its_argument_with_its_own_type_for_mypy(tmp_path: Path) -> None:
    snippet = tmp_path / "host_typing.py"
    snippet.write_text(
        "from sqlalchemy.orm import Session, sessionmaker\n"
        "import openclaw_fts\n\n"
        "F = openclaw_fts.install(sessionmaker())\n"
        "with F.begin() as db:\n"
        "    s: Session = db\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(snippet)],
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        cwd=REPO,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_cli_errors_are_json_with_json(tmp_path: Path) -> None:
    missing = tmp_path / "missing.sqlite"
    for args, code, kind in (
        (["--db", str(missing), "--json", "search", "x"], 1, "failure"),
        (["--db", str(missing), "search", "x", "--json"], 1, "failure"),
        (["--json", "search"], 2, "usage"),
    ):
        result = subprocess.run(
            [str(CLI), *args], capture_output=True, text=True, timeout=COMMAND_TIMEOUT, cwd=tmp_path
        )
        assert result.returncode == code
        error = json.loads(result.stdout)["error"]
        assert error["exitCode"] == code and error["kind"] == kind and error["message"]
        assert result.stderr.startswith("Error: ")
    plain = subprocess.run(
        [str(CLI), "--db", str(missing), "search", "x"],
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        cwd=tmp_path,
    )
    assert plain.returncode == 1 and plain.stdout == ""


def test_reconcile_batches_and_inline_repairs_are_logged(
    store: TranscriptStore, caplog: pytest.LogCaptureFixture
) -> None:
    store.create_session("s1", "agent:main:main")
    store.append_many("s1", chain(["one", "two", "three"]))
    with caplog.at_level(logging.DEBUG, logger="openclaw_fts"):
        store.rewind("s1", "m0")
        store.rebuild()
    messages = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("inline repair of session s1") for m in messages), messages
    assert any(m.startswith("rebuild: 1 sessions marked") for m in messages), messages
    assert any(m.startswith("reconcile batch:") for m in messages), messages
    assert any(m.startswith("reconcile done:") for m in messages), messages


def test_constructor_parameters_reach_the_engine_and_the_index(
    db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    with TranscriptStore(
        db_url,
        background=False,
        busy_timeout_ms=1234,
        reconcile_batch_rows=1,
        inline_repair_max_events=0,
    ) as s:
        with s.engine.connect() as conn:
            assert conn.execute(text("PRAGMA busy_timeout")).scalar() == 1234
        s.create_session("s1", "agent:main:main")
        s.append_many("s1", chain(["one", "two", "three"]))
        s.rewind("s1", "m0")  # not an append: beyond an inline bound of 0 events
        assert s.index_status()["pending"] == 1
        with caplog.at_level(logging.DEBUG, logger="openclaw_fts.reconcile"):
            s.reconcile()
        batches = [r for r in caplog.records if r.getMessage().startswith("reconcile batch: 1 ")]
        assert len(batches) >= 2  # one index row per transaction
        assert s.index_status()["pending"] == 0
    with TranscriptStore(db_url, background=False) as s:  # defaults: repaired inline
        s.rewind("s1", "m1")
        assert s.index_status()["pending"] == 0

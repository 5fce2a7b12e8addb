"""A host's first day with the plugin, exactly as docs/alembic.md writes it: the ``sh`` block
under "The first day", run line by line with a real ``alembic`` command in a copy of
``examples/host_app`` from which its two revisions are removed (a host that has none yet).

Invariant: runs only the page's own lines (plus the model change its step 3 asks for), in the
order written, and fails on the first command that exits non-zero or leaves the database or the
version folders other than the page says. Imports nothing of the plugin, so the wheel check
(scripts/wheel_check.sh) runs it against an installed wheel's ``alembic`` as well:

    python tests/first_day.py PATH/TO/bin/alembic WORK_DIR
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from sqlalchemy import create_engine, inspect, text
from sqlalchemy.pool import NullPool

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "alembic.md"
EXAMPLE = REPO / "examples" / "host_app"
#: The example env.py's variable naming another database than its alembic.ini's.
URL_ENV = "HOST_APP_DATABASE_URL"
#: Seconds one alembic run may take on a loaded machine.
COMMAND_TIMEOUT = 300
#: The comment of the page's step that asks for a model change before its commands.
CHANGE_STEP = "# 3."
#: The model change made at that step: a table of the host's with a foreign key to its own.
MODEL_CHANGE = '''

class ProjectNote(Base):
    """A later revision's table."""

    __tablename__ = "project_notes"

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey(Project.id, ondelete="CASCADE"))
'''


def commands() -> list[str]:
    """The lines (commands and step comments) of the page's first-day block."""
    text = PAGE.read_text(encoding="utf-8")
    section = text[text.index("## The first day") :]
    block = re.search(r"^```sh\n(.*?)^```", section, re.M | re.S)
    assert block is not None, "docs/alembic.md: no sh block under 'The first day'"
    return [line.strip() for line in block.group(1).splitlines() if line.strip()]


def host_copy(dest: Path) -> Path:
    """``examples/host_app`` copied to ``dest`` without its revisions and its database."""
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns("__pycache__", "*.sqlite"))
    for revision in (dest / "migrations" / "versions").glob("*.py"):
        revision.unlink()
    return dest


def tables(url: str) -> set[str]:
    engine = create_engine(url, poolclass=NullPool)
    try:
        return set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def versions(url: str) -> set[str]:
    """What the host's ``alembic_version`` holds."""
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            return set(conn.scalars(text("SELECT version_num FROM alembic_version")))
    finally:
        engine.dispose()


def revisions(app: Path) -> set[Path]:
    return set((app / "migrations" / "versions").glob("*.py"))


def run(alembic: Path, work: Path, url: str | None = None) -> dict[str, object]:
    """Run the page's first day in a fresh host copy under ``work`` with the ``alembic``
    command at that absolute path, on the database ``url`` (default: the copy's SQLite file);
    what it left behind."""
    app = host_copy(work / "host_app")
    url = url or f"sqlite:///{app / 'app.sqlite'}"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env[URL_ENV] = url
    seen: dict[str, object] = {"outputs": [], "url": url}
    for line in commands():
        if line.startswith("#"):
            if line.startswith(CHANGE_STEP):
                models = app / "host_app" / "models.py"
                models.write_text(models.read_text(encoding="utf-8") + MODEL_CHANGE)
            continue
        before = revisions(app)
        done = subprocess.run(
            line.replace("alembic", str(alembic), 1),
            shell=True,
            cwd=app,
            env=env,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT,
        )
        output = done.stdout + done.stderr
        assert done.returncode == 0, f"{line}\n{output}"
        outputs = seen["outputs"]
        assert isinstance(outputs, list)
        outputs.append((line, output))
        if line.startswith("alembic revision"):
            written = revisions(app) - before
            assert len(written) == 1, f"{line}: not one new file in migrations/versions\n{output}"
            seen.setdefault("first", next(iter(written)))
            seen["last"] = next(iter(written))
        if line == "alembic check":
            assert "No new upgrade operations detected" in output, output
    seen["tables"] = tables(url)
    seen["versions"] = versions(url)
    seen["app"] = app
    return seen


def main(argv: list[str]) -> int:
    alembic, work = Path(argv[1]).absolute(), Path(argv[2])
    seen = run(alembic, work)
    first, last = seen["first"], seen["last"]
    assert isinstance(first, Path) and isinstance(last, Path)
    text = first.read_text(encoding="utf-8")
    assert "branch_labels: tuple[str, ...] | None = ('host_app',)" in text, text
    assert "depends_on: str | None = None" not in text, "no depends_on the plugin's head"
    left = seen["tables"]
    assert isinstance(left, set)
    assert {"projects", "chats", "openclaw_sessions", "message_fts"} <= left, left
    assert "project_notes" not in left, "the downgrade did not undo the later revision"
    print(f"first day: {len(commands())} lines of docs/alembic.md ran; revisions {first.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

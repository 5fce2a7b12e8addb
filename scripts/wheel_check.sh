#!/usr/bin/env bash
# wheel_check.sh — the user's path, tested on what a user installs: builds the sdist and the
# wheel (`python -m build`: the wheel is built from the sdist, as pip does from PyPI), installs
# the wheel with its [testing] extra into a fresh virtualenv (no -e), and there, from a temporary
# folder (no source tree on sys.path), runs:
#   1. README.md's Python programs (the SQLite ones), their printed output checked;
#   2. scripts/demo.sh's import and searches, with the installed openclaw-fts command;
#   3. the first day of docs/alembic.md (tests/first_day.py) with the installed alembic, in a
#      copy of examples/host_app — the installed openclaw_fts/ folder hashed before and after;
#   4. examples/host_app/tests (the testing kit: its pytest11 fixture, factories, sessions).
#
# Invariant: reads the repository, writes only into its own temporary folder (removed at the
# end); fails on the first step that fails. Needs the development environment (.venv with
# the [dev] extra, as scripts/test.sh makes it) for `build` and for reading the pages.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEV_PYTHON="${DEV_PYTHON:-$ROOT/.venv/bin/python}"
PYTHON_BIN="${PYTHON:-python3}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/openclaw-fts-wheel.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
STARTED=$SECONDS

step() { printf '\n== wheel check: %s (%ss)\n' "$*" "$((SECONDS - STARTED))"; }

step "build the sdist and the wheel"
"$DEV_PYTHON" -m build --outdir "$WORK/dist" "$ROOT" >"$WORK/build.log" 2>&1 || {
    cat "$WORK/build.log"
    exit 1
}
WHEEL="$(ls "$WORK"/dist/openclaw_fts-*.whl)"
ls "$WORK"/dist/openclaw_fts-*.tar.gz >/dev/null
"$DEV_PYTHON" - "$WHEEL" <<'PY'
import sys, zipfile

names = set(zipfile.ZipFile(sys.argv[1]).namelist())
needed = [
    "openclaw_fts/py.typed",
    "openclaw_fts/migrations/env.py",
    "openclaw_fts/migrations/script.py.mako",
    "openclaw_fts/testing/sessions/sessions.json",
    "openclaw_fts/pytest_plugin.py",
]
missing = [n for n in needed if n not in names]
versions = [n for n in names if n.startswith("openclaw_fts/migrations/versions/")]
assert not missing and versions, f"the wheel lacks {missing or 'the revisions'}"
print(f"{sys.argv[1].rsplit('/', 1)[1]}: {len(names)} files, {len(versions)} revisions")
PY

step "install the wheel into a fresh virtualenv"
"$PYTHON_BIN" -m venv "$WORK/venv"
BIN="$WORK/venv/bin"
"$BIN/python" -m pip install --quiet --disable-pip-version-check "${WHEEL}[testing]" \
    >"$WORK/pip.log" 2>&1 || {
    cat "$WORK/pip.log"
    exit 1
}
mkdir "$WORK/run"
cd "$WORK/run"
PACKAGE="$("$BIN/python" -c 'import openclaw_fts, os; print(os.path.dirname(openclaw_fts.__file__))')"
case "$PACKAGE" in
"$WORK/venv/"*) echo "openclaw_fts imported from $PACKAGE" ;;
*) echo "openclaw_fts imported from $PACKAGE, not from the wheel" && exit 1 ;;
esac
package_hash() {
    (cd "$PACKAGE" && find . -type f ! -path '*/__pycache__/*' -print0 | sort -z |
        xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
}
BEFORE="$(package_hash)"

step "README.md's programs"
"$DEV_PYTHON" - "$ROOT" "$WORK/programs" <<'PY'
import sys
from pathlib import Path

root, out = Path(sys.argv[1]), Path(sys.argv[2])
sys.path.insert(0, str(root / "tests"))
from test_doc_programs import programs  # the suite's reading of the pages

for i, program in enumerate(p for p in programs(root / "README.md") if not p.needs_postgresql):
    folder = out / f"{i:02d}"
    folder.mkdir(parents=True)
    (folder / "program.py").write_text(program.source, encoding="utf-8")
    (folder / "name").write_text(program.name, encoding="utf-8")
    if program.output is not None:
        (folder / "expected").write_text(program.output.strip() + "\n", encoding="utf-8")
PY
for folder in "$WORK"/programs/*/; do
    (cd "$folder" && env -u OPENCLAW_FTS_DB "$BIN/python" program.py >stdout) || {
        echo "$(cat "$folder/name") failed" && exit 1
    }
    if [ -f "$folder/expected" ]; then
        diff <(sed -e 's/[[:space:]]*$//' "$folder/stdout" | sed -e '/./,$!d') \
            <(sed -e 's/[[:space:]]*$//' "$folder/expected") >/dev/null || {
            echo "$(cat "$folder/name") printed something else than README.md's output block"
            diff "$folder/stdout" "$folder/expected" || true
            exit 1
        }
    fi
    echo "ok: $(cat "$folder/name")"
done

step "scripts/demo.sh: import and search with the installed command"
OPENCLAW_FTS_VENV="$WORK/venv" OPENCLAW_FTS_DEMO_DB="$WORK/demo.sqlite" \
    bash "$ROOT/scripts/demo.sh" >"$WORK/demo.log" 2>&1 || {
    cat "$WORK/demo.log"
    exit 1
}
grep -q "Installing openclaw-fts" "$WORK/demo.log" && echo "demo.sh installed a package" && exit 1
tail -n 3 "$WORK/demo.log"

step "the first day of docs/alembic.md with the installed alembic"
mkdir "$WORK/first_day"
"$DEV_PYTHON" "$ROOT/tests/first_day.py" "$BIN/alembic" "$WORK/first_day"
AFTER="$(package_hash)"
if [ "$BEFORE" != "$AFTER" ]; then
    echo "the installed openclaw_fts/ folder changed during the first day" && exit 1
fi
echo "installed openclaw_fts/ unchanged: $AFTER"

step "examples/host_app/tests with the testing kit"
cp -r "$ROOT/examples/host_app" "$WORK/kit"
rm -rf "$WORK/kit/app.sqlite" "$WORK"/kit/**/__pycache__
(cd "$WORK/kit" && env -u PYTHONPATH "$BIN/python" -m pytest -q -p no:cacheprovider)

step "done"

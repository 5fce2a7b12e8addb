#!/usr/bin/env bash
# demo.sh — the Quick start's "main job": install openclaw-fts into ./.venv, import the bundled
# example transcripts (examples/sessions) into ./openclaw_fts.sqlite and run a few searches and
# one history read against them.
#
# Invariant: idempotent and safe to re-run from a clean clone on a machine with only python3 and
# access to PyPI — the virtualenv is created only if missing, the package installed only if its
# command is not working yet, and a re-import skips the events already stored. It touches
# nothing outside the repository folder — unless OPENCLAW_FTS_VENV (an environment where
# openclaw-fts is installed: scripts/wheel_check.sh passes the one it installed the wheel into)
# and OPENCLAW_FTS_DEMO_DB (the database file) name other places.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

PYTHON_BIN="${PYTHON:-python3}"
VENV="${OPENCLAW_FTS_VENV:-$ROOT/.venv}"
CLI="$VENV/bin/openclaw-fts"
DB="${OPENCLAW_FTS_DEMO_DB:-$ROOT/openclaw_fts.sqlite}"
EXAMPLES="$ROOT/examples/sessions"

if [ -t 1 ]; then
    step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
else
    step() { printf '\n==> %s\n' "$*"; }
fi

if [ ! -x "$VENV/bin/python" ]; then
    step "Creating a virtualenv in .venv"
    "$PYTHON_BIN" -m venv "$VENV"
fi

if ! "$CLI" --version >/dev/null 2>&1; then
    step "Installing openclaw-fts (pip install -e .)"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e "$ROOT"
fi

ocf() { "$CLI" --db "$DB" "$@"; }

step "openclaw-fts import examples/sessions"
ocf import "$EXAMPLES"

step 'openclaw-fts search "staging deployment"   (indexes the fresh import first)'
ocf search "staging deployment" --limit 5

step "openclaw-fts search cafe   (diacritics folded: cafe finds café)"
ocf search cafe

step "openclaw-fts search 部署   (Chinese, matched as a substring)"
ocf search 部署

step 'openclaw-fts search "admin console"   (the API key in that message is redacted)'
ocf search "admin console"

read -r KEY MESSAGE_ID < <(
    ocf search "staging deployment" --limit 1 --json |
        "$VENV/bin/python" -c \
            'import json, sys; hit = json.load(sys.stdin)["results"][0]; print(hit["sessionKey"], hit["messageId"])'
)
step "openclaw-fts history $KEY --message-id $MESSAGE_ID --limit 5   (around the top hit)"
ocf history "$KEY" --message-id "$MESSAGE_ID" --limit 5

step "openclaw-fts status"
ocf status

printf '\nDone. The store is %s; try: %s --db %s search "lock_timeout"\n' "$DB" "$CLI" "$DB"

"""Append messages to sessions of any database, one per transaction, until told to stop.

Usage: append_for.py DATABASE_URL STOP_FILE MAX_APPENDS SESSION_ID[,SESSION_ID...]

Appends messages round-robin over the sessions (each continues its session's current leaf), one
``store.append`` per message, so a clean session's index rows are written in the same
transaction, until ``STOP_FILE`` exists or ``MAX_APPENDS`` messages were appended (bounded: it
stops by itself). Prints ``{"started": true}`` after the first append and ``{"appended": n,
"stopped": <whether STOP_FILE ended it>}`` at the end.
"""

from __future__ import annotations

import sys
from pathlib import Path

from _common import emit, message

from openclaw_fts import TranscriptStore


def main() -> None:
    url, stop_file, max_appends, sessions = sys.argv[1:5]
    session_ids = sessions.split(",")
    stop = Path(stop_file)
    appended = 0
    with TranscriptStore(url, background=False, upgrade=False) as store:
        while appended < int(max_appends) and not stop.exists():
            sid = session_ids[appended % len(session_ids)]
            store.append(sid, message(f"live-{appended}", f"live append {appended} walrus"))
            appended += 1
            if appended == 1:
                emit(started=True)
    emit(appended=appended, stopped=stop.exists())


if __name__ == "__main__":
    main()

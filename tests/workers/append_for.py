"""Append a bounded number of messages to sessions of any database, one per transaction.

Usage: append_for.py DATABASE_URL COUNT SESSION_ID[,SESSION_ID...]

Appends ``COUNT`` messages round-robin over the sessions (each continues its session's
current leaf), one ``store.append`` per message: a clean session's index rows are written in
the same transaction. Prints ``{"started": true}`` after the first append and
``{"appended": n}`` at the end.
"""

from __future__ import annotations

import sys

from _common import emit, message

from openclaw_fts import TranscriptStore


def main() -> None:
    url, count, sessions = sys.argv[1:4]
    session_ids = sessions.split(",")
    with TranscriptStore(url, background=False, upgrade=False) as store:
        for n in range(int(count)):
            sid = session_ids[n % len(session_ids)]
            store.append(sid, message(f"live-{n}", f"live append number {n} walrus"))
            if n == 0:
                emit(started=True)
    emit(appended=int(count))


if __name__ == "__main__":
    main()

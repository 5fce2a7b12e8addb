"""Append one event, read from a JSON file, from a shallow call stack (a fresh interpreter).

Usage: append_one.py DB_PATH SESSION_ID EVENT_JSON_FILE

Prints ``{"seq": n}`` when stored, or ``{"refused": "<error class>: <message>"}`` when the store
refused it with one of its own errors; any other exception is a traceback and exit 1.
"""

from __future__ import annotations

import json
import sys

from _common import emit

from openclaw_fts import OpenClawFtsError, TranscriptStore


def main() -> None:
    db, session_id, event_file = sys.argv[1:4]
    with open(event_file, encoding="utf-8") as handle:
        event = json.load(handle)
    with TranscriptStore(f"sqlite:///{db}", background=False) as store:
        try:
            seq = store.append(session_id, event)
        except OpenClawFtsError as exc:
            emit(refused=f"{type(exc).__name__}: {exc}")
            return
    emit(seq=seq)


if __name__ == "__main__":
    main()

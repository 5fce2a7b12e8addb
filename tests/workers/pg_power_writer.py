"""Write until the server dies, on a PostgreSQL server whose data directory is on the
power-cut file system (tests/lazyfs.py, tests/pgpowercut.py).

Every step is one of the plugin's writes, in a fixed cycle the round enters at ``start``:
the store's ``append_many`` of an event pair (one transaction), a host's ORM commit of a pair
(the plugin's hooks index it in the host's transaction), an ``import_dir`` of a folder of
transcripts (each file one transaction), a ``reconcile()`` (in small batches) and an
``optimize()`` (the impact lists verified, repaired and promoted). It prints a line once a
write returned, flushed at once, so the parent knows what was acknowledged before the cut:
``pair ID``, ``import SESSION``, ``reconcile``, ``optimize`` (``session ID`` first), and
``begin KIND`` before each write.
"""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy.orm import sessionmaker

import openclaw_fts
from openclaw_fts import TranscriptStore
from openclaw_fts.models import TranscriptEvent

#: The cycle of writes.
STEPS = ("append", "orm", "import", "append", "orm", "reconcile", "append", "optimize")
#: Transcripts per imported folder, and messages per transcript.
IMPORT_FILES = 3
IMPORT_MESSAGES = 40
#: Index rows per reconciler transaction: a reconcile of one imported file takes several.
RECONCILE_BATCH_ROWS = 10
#: The word every message holds: tracked with an impact list (the harness seeds enough
#: messages), so every write also writes the list's rows.
COMMON_WORD = "powercut"


def event(event_id: str, parent: str | None, text: str, role: str = "user") -> dict[str, object]:
    return {
        "type": "message",
        "id": event_id,
        "parentId": parent,
        "timestamp": 1_790_000_000_000,
        "message": {"role": role, "content": text},
    }


def import_ids() -> list[str]:
    """The event ids of every imported transcript, in file order."""
    return [f"i{j}" for j in range(IMPORT_MESSAGES)]


def transcript(folder: Path, session_id: str) -> None:
    """An OpenClaw transcript of :func:`import_ids` in the loose sessions folder ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    lines: list[dict[str, object]] = [
        {"type": "session", "version": 3, "id": session_id, "timestamp": "2026-09-01T00:00:00Z"}
    ]
    parent = None
    for j, event_id in enumerate(import_ids()):
        role = "user" if j % 2 == 0 else "assistant"
        lines.append(event(event_id, parent, f"{COMMON_WORD} imported {session_id} {j}", role))
        parent = event_id
    text = "".join(json.dumps(line) + "\n" for line in lines)
    (folder / f"{session_id}.jsonl").write_text(text, encoding="utf-8")


def write(url: str, tag: str, imports: Path, start: int) -> None:
    """Write until killed or the server goes (see the module's docstring)."""
    store = TranscriptStore(url, background=False, reconcile_batch_rows=RECONCILE_BATCH_ROWS)
    host = openclaw_fts.install(sessionmaker(store.engine))
    store.create_session(tag, f"agent:main:{tag}")
    print(f"session {tag}", flush=True)
    parent = None
    n = 0
    for step in range(start, 1 << 30):
        kind = STEPS[step % len(STEPS)]
        print(f"begin {kind}", flush=True)
        if kind in ("append", "orm"):
            a, b = f"{tag}-{n}a", f"{tag}-{n}b"
            pair = [
                event(a, parent, f"{COMMON_WORD} {a} text"),
                event(b, a, f"{COMMON_WORD} {b} reply", "assistant"),
            ]
            if kind == "orm":
                with host.begin() as db_session:
                    for e in pair:
                        db_session.add(TranscriptEvent(session_id=tag, event=e))
            else:
                store.append_many(tag, pair)
            print(f"pair {tag}-{n}", flush=True)
            parent = b
            n += 1
        elif kind == "import":
            folder = imports / f"{tag}-{step}"
            session_ids = [f"{tag}-imp{step}-{k}" for k in range(IMPORT_FILES)]
            for session_id in session_ids:
                transcript(folder, session_id)
            result = store.import_dir(folder)
            if result["failedFiles"] or result["files"] != IMPORT_FILES:
                raise RuntimeError(f"import failed: {result}")
            for session_id in session_ids:
                print(f"import {session_id}", flush=True)
        elif kind == "reconcile":
            store.reconcile()
            print("reconcile", flush=True)
        else:
            store.optimize()
            print("optimize", flush=True)

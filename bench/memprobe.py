"""Peak-memory probe of the ``memory`` figure, run as a subprocess of ``bench.run``.

``python -m bench.memprobe probe MODE DB FILE`` runs ``python -m bench.memprobe MODE DB FILE`` as
its only child and prints ``{"maxrss_kb": ...}`` from ``resource.getrusage(RUSAGE_CHILDREN)``
(the peak resident set of that one child). Modes:

* ``import``: ``TranscriptStore.import_jsonl(FILE)`` into a fresh store at DB;
* ``import-reconcile``: the same, then ``reconcile()`` (indexes the big session);
* ``idle``: opens the store and returns (the interpreter + library floor).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time

MODES = ("import", "import-reconcile", "idle")


def child(mode: str, db: str, path: str) -> dict[str, object]:
    from openclaw_fts import TranscriptStore

    started = time.perf_counter()
    store = TranscriptStore(f"sqlite:///{db}", background=False)
    out: dict[str, object] = {}
    try:
        if mode in ("import", "import-reconcile"):
            report = store.import_jsonl(path, session_key="agent:bench:big")
            out["imported"] = report["imported"]
            out["errors"] = report["errorCount"]
        if mode == "import-reconcile":
            out["reconcile"] = {k: v for k, v in store.reconcile().items() if k != "ran"}
    finally:
        store.close()
    out["seconds"] = round(time.perf_counter() - started, 3)
    return out


def probe(mode: str, db: str, path: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", "bench.memprobe", mode, db, path],
        capture_output=True,
        text=True,
        check=False,
    )
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    result: dict[str, object] = {"maxrss_kb": usage.ru_maxrss, "returncode": done.returncode}
    if done.returncode == 0 and done.stdout.strip():
        result.update(json.loads(done.stdout.strip().splitlines()[-1]))
    else:
        result["stderr"] = done.stderr[-2000:]
    return result


def main(argv: list[str]) -> int:
    if len(argv) == 4 and argv[0] == "probe" and argv[1] in MODES:
        print(json.dumps(probe(argv[1], argv[2], argv[3])))
        return 0
    if len(argv) == 3 and argv[0] in MODES:
        print(json.dumps(child(argv[0], argv[1], argv[2])))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Fork server for the crash tests: import everything once, then fork one job per request.

Usage: forkserver.py   (commands on stdin, one JSON line each: ``{"script": name, "argv": [...]}``)

Starting a fresh interpreter and importing SQLAlchemy, Alembic and the plugin costs a second or
more per process; the crash tests kill a worker 20+ times, so each job is forked from this
already-warm process instead. The child runs ``<script>.main()`` with ``sys.argv`` set as if it
had been started as ``<script>.py ARGV...`` and prints on the shared stdout; the server prints
``{"pid": child}`` after forking and ``{"exited": child, "code": n}`` (n < 0: killed by signal
-n) once it is reaped, then reads the next command. EOF on stdin ends the server.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import traceback

import crash_reconciler
import crash_writer

import openclaw_fts

SCRIPTS = {"crash_writer": crash_writer, "crash_reconciler": crash_reconciler}


def reply(**fields: object) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def main() -> None:
    assert openclaw_fts.__version__
    for line in sys.stdin:
        command = json.loads(line)
        module = SCRIPTS.get(command["script"]) or importlib.import_module(command["script"])
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the job
            code = 0
            try:
                sys.argv = [f"{command['script']}.py", *command["argv"]]
                module.main()
            except BaseException:
                traceback.print_exc()
                code = 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        reply(pid=pid)
        _, status = os.waitpid(pid, 0)
        reply(exited=pid, code=os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main()

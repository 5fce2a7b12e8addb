"""Background jobs: the reconciler a search starts and the segment merge a writer starts.

Invariant: at most one thread of a :class:`BackgroundJob` runs at a time (a trigger while it
runs does nothing); the thread is a daemon, so it never keeps a host's process alive; an
exception ends the run, is logged and kept in :attr:`BackgroundJob.last_error`, never lost
silently — except one its ``retry_on`` calls transient (no space left for the database, a
connection the server cut), after which the same thread waits (:data:`RETRY_FIRST_SECONDS`,
doubling up to :data:`RETRY_MAX_SECONDS`) and runs the work again, until it succeeds, fails
otherwise, or is stopped; :meth:`BackgroundJob.stop` sets the event the job's work polls
between its bounded steps (and its waits), and after it no trigger starts a run again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

#: Seconds a job waits after its first transient failure before running again.
RETRY_FIRST_SECONDS = 0.5
#: Longest wait between two runs of a job that keeps failing transiently.
RETRY_MAX_SECONDS = 30.0


def _never(exc: BaseException) -> bool:
    return False


class BackgroundJob:
    """Runs ``work(stop)`` in a thread named ``name`` whenever :meth:`trigger` is called and
    no earlier run is still going; a failure ``retry_on`` accepts is waited out and the work
    run again in the same thread."""

    def __init__(
        self,
        name: str,
        work: Callable[[threading.Event], object],
        *,
        retry_on: Callable[[BaseException], bool] = _never,
    ) -> None:
        self._name = name
        self._work = work
        self._retry_on = retry_on
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._stopped = False
        self.last_error: BaseException | None = None
        #: Transient failures waited out since the job was made.
        self.retries = 0

    @property
    def running(self) -> bool:
        """Whether a run is in progress."""
        thread = self._thread
        return thread is not None and thread.is_alive()

    def trigger(self) -> None:
        """Start a run unless one is in progress or the job was stopped."""
        with self._lock:
            if self._stopped or self.running:
                return
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()

    def _run(self) -> None:
        pause = RETRY_FIRST_SECONDS
        while True:
            try:
                self._work(self._stop)
                return
            except BaseException as exc:  # a background thread must not die silently
                self.last_error = exc
                if not isinstance(exc, Exception) or not self._retry_on(exc):
                    log.exception("%s failed", self._name)
                    return
                log.warning("%s failed (%s); running again in %.1f s", self._name, exc, pause)
            self.retries += 1
            if self._stop.wait(pause):
                return
            pause = min(pause * 2, RETRY_MAX_SECONDS)

    def wait(self, timeout: float | None = None) -> None:
        """Wait for the run in progress, if any."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def stop(self) -> None:
        """Ask the run in progress to stop after its current step (:meth:`wait` for it), and
        start no run after this."""
        with self._lock:
            self._stopped = True
            self._stop.set()

"""The background job runner: one run at a time, errors kept, and nothing started once it
has been stopped (a store's close must not leave a thread that starts after it)."""

from __future__ import annotations

import threading

from openclaw_fts.background import BackgroundJob

#: Seconds a test waits for a thread that should finish at once.
PROMPT_SECONDS = 5.0


def test_a_trigger_while_a_run_goes_on_starts_no_second_run() -> None:
    release = threading.Event()
    runs: list[int] = []

    def work(stop: threading.Event) -> None:
        runs.append(1)
        release.wait(PROMPT_SECONDS)

    job = BackgroundJob("test-job", work)
    job.trigger()
    job.trigger()
    release.set()
    job.wait(PROMPT_SECONDS)
    assert runs == [1]
    assert not job.running


def test_stop_ends_the_run_after_its_step_and_no_trigger_starts_another() -> None:
    steps: list[int] = []
    started = threading.Event()

    def work(stop: threading.Event) -> None:
        started.set()
        while not stop.is_set():
            steps.append(1)
            stop.wait(0.01)

    job = BackgroundJob("test-job", work)
    job.trigger()
    assert started.wait(PROMPT_SECONDS)
    job.stop()
    job.wait(PROMPT_SECONDS)
    assert not job.running
    done = len(steps)
    job.trigger()  # what an append or a search racing with a close would do
    assert not job.running
    job.wait(PROMPT_SECONDS)
    assert len(steps) == done


def test_an_error_in_a_run_is_kept_and_the_next_trigger_runs_again() -> None:
    calls: list[int] = []

    def work(stop: threading.Event) -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("first run fails")

    job = BackgroundJob("test-job", work)
    job.trigger()
    job.wait(PROMPT_SECONDS)
    assert isinstance(job.last_error, RuntimeError)
    job.trigger()
    job.wait(PROMPT_SECONDS)
    assert calls == [1, 1]

"""The host's integration tests, written with the plugin's testing kit only: the
``transcript_store`` fixture (a migrated store on a database of the test's own: a temporary
SQLite file, or a new database on the PostgreSQL server ``--openclaw-fts-url`` names) and
``openclaw_fts.testing``'s factories and bundled sessions folder."""

from __future__ import annotations

from typing import Any

from host_app.models import Chat, Project, metadata
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

import openclaw_fts
from openclaw_fts import Caller, TranscriptStore
from openclaw_fts.testing import (
    AgentSessionFactory,
    CompactionEventFactory,
    MessageEventFactory,
    TranscriptEventFactory,
    fixture_sessions_dir,
    rewound_branch,
    tool_call_pair,
)

MAIN = Caller("agent:main:main")
#: The main agent's caller that may see all of its sessions (the discord channel's too).
MAIN_AGENT = Caller("agent:main:main", visibility="agent")


def texts(answer: Any) -> list[str]:
    assert "messages" in answer, answer
    return [m["content"] for m in answer["messages"] if isinstance(m["content"], str)]


def test_the_bundled_sessions_import_and_answer_searches(transcript_store: TranscriptStore) -> None:
    report = transcript_store.import_dir(fixture_sessions_dir())
    assert len(report["sessions"]) == 4 and not report.get("failedFiles")
    transcript_store.reconcile()

    found = transcript_store.search(MAIN, "staging deployment")
    assert "results" in found, found
    assert {hit["sessionKey"] for hit in found["results"]} >= {"agent:main:main"}
    # accents folded, CJK matched as substrings
    cafe = transcript_store.search(MAIN, "cafe")
    assert cafe.get("results"), cafe
    cjk = transcript_store.search(MAIN_AGENT, "部署")
    assert "results" in cjk
    assert {hit["sessionKey"] for hit in cjk["results"]} == {"agent:main:discord:channel:release"}
    # the credential in a user message is never shown whole
    key = transcript_store.search(MAIN, "admin console")
    assert key.get("results"), key
    assert all("Q7vX2mR9tK4wL8nB3cF6hJ1pZ5sD0gEy" not in hit["snippet"] for hit in key["results"])


def test_a_rewound_answer_is_neither_found_nor_shown(transcript_store: TranscriptStore) -> None:
    transcript_store.create_session("s1", "agent:main:main")
    events = rewound_branch(
        "How do we rotate the signing keys?",
        "Delete the keystore and hope.",
        "Rotate them one region at a time.",
    )
    for event in events:
        transcript_store.append("s1", event)
    assert transcript_store.search(MAIN, "keystore").get("results") == []
    assert texts(transcript_store.history(MAIN, "agent:main:main")) == [
        "How do we rotate the signing keys?",
        "Rotate them one region at a time.",
    ]


def test_tool_results_and_compactions_stay_out_of_the_default_history(
    transcript_store: TranscriptStore,
) -> None:
    transcript_store.create_session("s1", "agent:main:main")
    asked = MessageEventFactory(role="user", text="Is the disk full on the build host?")
    call, result = tool_call_pair(asked, name="exec", result="/dev/sda1 97% used")
    compaction = CompactionEventFactory(parent=result, first_kept=asked)
    answer = MessageEventFactory(role="assistant", text="Yes, 97 percent.", parent=compaction)
    for event in (asked, call, result, compaction, answer):
        transcript_store.append("s1", event)
    with_tools = transcript_store.history(MAIN, "agent:main:main", include_tools=True)
    assert "messages" in with_tools
    assert "toolResult" in [m["role"] for m in with_tools["messages"]]
    plain = transcript_store.history(MAIN, "agent:main:main")
    assert "messages" in plain
    assert "toolResult" not in [m["role"] for m in plain["messages"]]
    assert texts(plain)[-1] == "Yes, 97 percent."


def test_the_hosts_chats_follow_the_plugins_sessions(transcript_store: TranscriptStore) -> None:
    """The host's own tables beside the plugin's, written through the host's ORM with the
    plugin's hooks installed: a chat points at a transcript session and goes with it."""
    metadata.create_all(transcript_store.engine)
    host = openclaw_fts.install(sessionmaker(transcript_store.engine))
    with host.begin() as db:
        chat_session = AgentSessionFactory(session_id="web-1", session_key="agent:main:web:1")
        db.add(chat_session)
        db.add(TranscriptEventFactory(session=chat_session))
        db.add(
            TranscriptEventFactory(
                session=chat_session,
                event=MessageEventFactory(text="Export the invoices to the billing bucket"),
            )
        )
        project = Project(name="billing")
        db.add(project)
        db.flush()
        db.add(Chat(project_id=project.id, session_id="web-1"))
    found = transcript_store.search(Caller("agent:main:web:1"), "invoices")
    assert [hit["sessionId"] for hit in found.get("results", [])] == ["web-1"]

    assert transcript_store.delete_session("web-1")
    with Session(transcript_store.engine) as db:
        assert db.scalars(select(Chat)).all() == []
        assert [p.name for p in db.scalars(select(Project))] == ["billing"]

"""Model-based test: random sequences of everything a host can do to the store, checking after
every step that each session that is not pending is indexed exactly as THE predicate says.

The invariant is computed independently of the plugin's writers: events are read back with plain
SQL, ``transcript.index_rows`` gives the rows the active branch must produce, and they are
compared with ``message_index`` (and with what ``store.search`` returns). Half of the runs lower
``indexer.INLINE_REPAIR_MAX_EVENTS`` so that the "mark dirty, leave it to the reconciler" path is
exercised as often as inline repair.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)
from sqlalchemy import Connection, Engine, delete, text
from sqlalchemy.orm import Session, sessionmaker

import openclaw_fts
from openclaw_fts import (
    AgentSession,
    AgentToAgent,
    Caller,
    DuplicateEventError,
    TranscriptEvent,
    TranscriptStore,
    indexer,
    transcript,
)
from openclaw_fts.engine import READ_ONLY, make_engine
from openclaw_fts.models import INDEX_VERSION
from openclaw_fts.reconcile import Reconciler
from openclaw_fts.tokens import index_body

CALLER = Caller("agent:main:main", visibility="all")
#: Sees every session that is not incognito: search takes its FTS5-only ranking path.
EVERYTHING = Caller("agent:main:main", visibility="all", agent_to_agent=AgentToAgent(True))
#: Words the messages are made of, and how FTS folds them.
WORDS = {
    "alpha": "alpha",
    "Beta": "beta",
    "gamma": "gamma",
    "café": "cafe",
    "Crème": "creme",
    "deploy": "deploy",
    "rollback": "rollback",
    "明天": None,
    "评审": None,
}
#: The invariant also checks ``store.search`` every this many steps (it is the slow part).
SEARCH_EVERY = 3
#: Words searched by the invariant (one per search, in turn).
SEARCH_WORDS = ("alpha", "beta", "gamma", "cafe", "creme", "deploy", "rollback")
ROLES = ("user", "assistant", "user", "assistant", "toolResult", "system")
BLOCK_TYPES = ("text", "input_text", "output_text", "thinking", "toolCall", "image")
NON_MESSAGE_TYPES = (
    "model_change",
    "thinking_level_change",
    "compaction",
    "custom",
    "custom_message",
    "label",
    "session_info",
    "branch_summary",
    "reset",
)
#: Types OpenClaw's tree does not know (a plugin's rows): nodes that never move the leaf.
OPAQUE_TYPES = ("metadata", "plugin_state")
#: A leaf control's optional fields, drawn per control: absent, well formed, or malformed.
APPEND_MODES = (None, "side", "bogus")
MS_RANGE = (1_700_000_000_000, 1_900_000_000_000)


# -- strategies ------------------------------------------------------------------------------

phrases = st.lists(st.sampled_from(sorted(WORDS)), max_size=4).map(" ".join)
padded_phrases = st.tuples(st.sampled_from(["", " ", "\n "]), phrases).map(lambda t: t[0] + t[1])


def _iso(ms: int) -> str:
    dt = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return dt.isoformat(timespec="milliseconds").replace("+00:00", "Z")


timestamps = st.one_of(
    st.none(),
    st.integers(*MS_RANGE),
    st.integers(*MS_RANGE).map(lambda ms: ms - ms % 1000).map(_iso),
)


@st.composite
def blocks(draw: st.DrawFn) -> dict[str, Any]:
    btype = draw(st.sampled_from(BLOCK_TYPES))
    body = draw(padded_phrases)
    if btype == "thinking":
        return {"type": "thinking", "thinking": body, "text": body}
    if btype == "toolCall":
        return {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"cmd": body}}
    if btype == "image":
        return {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"}
    return {"type": btype, "text": body}


@st.composite
def messages(draw: st.DrawFn, role: str | None = None) -> dict[str, Any]:
    role = role or draw(st.sampled_from(ROLES))
    kind = draw(st.sampled_from(["string", "string", "blocks", "text"]))
    if kind == "string":
        return {"role": role, "content": draw(padded_phrases)}
    if kind == "text":
        message: dict[str, Any] = {"role": role, "text": draw(padded_phrases)}
        if draw(st.booleans()):
            message["content"] = draw(st.lists(blocks(), max_size=2))
        return message
    return {"role": role, "content": draw(st.lists(blocks(), max_size=4))}


# -- the model -------------------------------------------------------------------------------


@dataclass
class SessionModel:
    key: str
    incognito: bool = False
    ids: list[str] = field(default_factory=list)  # every event id stored in the session


_TEMPLATE: dict[str, Path] = {}


def template_db() -> Path:
    """A database migrated to head once; every run starts from a copy (fast, still real)."""
    if "path" not in _TEMPLATE:
        folder = Path(tempfile.mkdtemp(prefix="ocfts-model-template-"))
        path = folder / "template.sqlite"
        TranscriptStore(f"sqlite:///{path}", background=False).close()
        _TEMPLATE["path"] = path
    return _TEMPLATE["path"]


def reader(engine: Engine) -> Connection:
    return engine.connect().execution_options(**{READ_ONLY: True})


def load_events(conn: Connection, sid: str) -> list[tuple[int, dict[str, Any]]]:
    result = conn.execute(
        text("SELECT seq, event FROM transcript_events WHERE session_id = :sid ORDER BY seq"),
        {"sid": sid},
    )
    return [(int(seq), json.loads(raw)) for seq, raw in result]


def folded_words(body: str) -> set[str]:
    return {WORDS[w] or w for w in body.split() if w in WORDS}


class TranscriptModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.folder = Path(tempfile.mkdtemp(prefix="ocfts-model-"))
        db = self.folder / "model.sqlite"
        shutil.copyfile(template_db(), db)
        self.url = f"sqlite:///{db}"
        self.store = TranscriptStore(self.url, background=False)
        self.host_engine = make_engine(self.url)
        self.host: sessionmaker[Session] = sessionmaker(self.host_engine)
        openclaw_fts.install(self.host)
        self.sessions: dict[str, SessionModel] = {}
        self.counter = 0
        self.steps = 0
        self.saved_limit = indexer.INLINE_REPAIR_MAX_EVENTS

    def teardown(self) -> None:
        indexer.INLINE_REPAIR_MAX_EVENTS = self.saved_limit
        self.store.close()
        self.host_engine.dispose()
        shutil.rmtree(self.folder, ignore_errors=True)

    # -- helpers ----------------------------------------------------------------------------

    def fresh(self, prefix: str = "e") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def pick_session(self, data: st.DataObject) -> str:
        return data.draw(st.sampled_from(sorted(self.sessions)), label="session")

    def pick_id(self, data: st.DataObject, sid: str, *, allow_none: bool) -> str | None:
        ids: list[str | None] = list(self.sessions[sid].ids)
        if allow_none:
            ids.append(None)
        if not ids:
            return None
        return data.draw(st.sampled_from(ids), label="event id")

    def active_leaf(self, sid: str) -> str | None:
        with reader(self.store.engine) as conn:
            events = load_events(conn, sid)
        tree = transcript.resolve_tree(transcript.tree_node(s, e) for s, e in events)
        return tree.active_leaf

    def message_event(
        self,
        data: st.DataObject,
        parent: str | None,
        *,
        role: str | None = None,
        parent_key: bool = True,
    ) -> dict[str, Any]:
        event: dict[str, Any] = {"type": "message", "id": self.fresh()}
        if parent_key:
            event["parentId"] = parent
        ts = data.draw(timestamps, label="timestamp")
        if ts is not None:
            event["timestamp"] = ts
        event["message"] = data.draw(messages(role), label="message")
        return event

    def append(self, sid: str, event: dict[str, Any]) -> None:
        self.store.append(sid, event)
        self.sessions[sid].ids.append(event["id"])

    # -- rules ------------------------------------------------------------------------------

    @initialize(limit=st.sampled_from([indexer.INLINE_REPAIR_MAX_EVENTS, 2]))
    def set_inline_limit(self, limit: int) -> None:
        indexer.INLINE_REPAIR_MAX_EVENTS = limit

    @rule(incognito=st.sampled_from([False, False, False, False, True]))
    def create_session(self, incognito: bool) -> None:
        sid = self.fresh("s")
        key = f"agent:main:{sid}"
        self.store.create_session(sid, key, incognito=incognito)
        self.sessions[sid] = SessionModel(key, incognito)

    @precondition(lambda self: self.sessions)
    @rule(data=st.data())
    def append_linear(self, data: st.DataObject) -> None:
        sid = self.pick_session(data)
        self.append(sid, self.message_event(data, self.active_leaf(sid)))

    @precondition(lambda self: self.sessions)
    @rule(data=st.data())
    def append_branching(self, data: st.DataObject) -> None:
        sid = self.pick_session(data)
        parent = self.pick_id(data, sid, allow_none=True)
        self.append(sid, self.message_event(data, parent))

    @precondition(lambda self: self.sessions)
    @rule(data=st.data())
    def side_append(self, data: st.DataObject) -> None:
        sid = self.pick_session(data)
        parent = self.pick_id(data, sid, allow_none=True)
        event = self.message_event(data, parent)
        event["appendMode"] = "side"
        self.append(sid, event)

    @precondition(lambda self: self.sessions)
    @rule(data=st.data(), with_key=st.booleans())
    def parentless_append(self, data: st.DataObject, with_key: bool) -> None:
        sid = self.pick_session(data)
        self.append(sid, self.message_event(data, None, parent_key=with_key))

    @precondition(lambda self: self.sessions)
    @rule(data=st.data(), etype=st.sampled_from(NON_MESSAGE_TYPES), with_id=st.booleans())
    def non_message_event(self, data: st.DataObject, etype: str, with_id: bool) -> None:
        sid = self.pick_session(data)
        event: dict[str, Any] = {
            "type": etype,
            "parentId": self.active_leaf(sid),
            "summary": data.draw(phrases),
            "content": data.draw(phrases),
        }
        if with_id:
            event["id"] = self.fresh()
            self.append(sid, event)
        else:
            self.store.append(sid, event)

    @precondition(lambda self: self.sessions)
    @rule(data=st.data(), etype=st.sampled_from(OPAQUE_TYPES))
    def opaque_row(self, data: st.DataObject, etype: str) -> None:
        """A plugin's row: under any node (or none), it moves the append cursor only."""
        sid = self.pick_session(data)
        parent = self.pick_id(data, sid, allow_none=True)
        self.append(sid, {"type": etype, "id": self.fresh(), "parentId": parent, "v": 1})

    @precondition(lambda self: any(m.ids for m in self.sessions.values()))
    @rule(data=st.data())
    def append_to_cursor(self, data: st.DataObject) -> None:
        """A message naming the entry appended just before it (a side entry, a metadata row,
        a leaf control, ...): the raw append cursor."""
        sid = data.draw(st.sampled_from(sorted(s for s, m in self.sessions.items() if m.ids)))
        self.append(sid, self.message_event(data, self.sessions[sid].ids[-1]))

    @precondition(lambda self: self.sessions)
    @rule(data=st.data(), mode=st.sampled_from(APPEND_MODES), with_append=st.booleans())
    def live_leaf_control(self, data: st.DataObject, mode: str | None, with_append: bool) -> None:
        """A leaf control written by a host (not ``store.rewind``): any target, known or not,
        an optional ``appendParentId`` and ``appendMode``, well formed or not."""
        sid = self.pick_session(data)
        unknown = st.sampled_from([None, "nowhere", 7])
        pick = st.one_of(st.sampled_from([None, *self.sessions[sid].ids]), unknown)
        event: dict[str, Any] = {
            "type": "leaf",
            "id": self.fresh(),
            "parentId": self.pick_id(data, sid, allow_none=True),
            "targetId": data.draw(pick, label="targetId"),
        }
        if with_append:
            event["appendParentId"] = data.draw(pick, label="appendParentId")
        if mode is not None:
            event["appendMode"] = mode
        self.append(sid, event)

    @precondition(lambda self: self.sessions)
    @rule(data=st.data())
    def tool_result(self, data: st.DataObject) -> None:
        sid = self.pick_session(data)
        event = self.message_event(data, self.active_leaf(sid), role="toolResult")
        event["message"]["toolCallId"] = "c1"
        self.append(sid, event)

    @precondition(lambda self: self.sessions)
    @rule(data=st.data())
    def append_many(self, data: st.DataObject) -> None:
        sid = self.pick_session(data)
        parent = self.active_leaf(sid)
        events = []
        for _ in range(data.draw(st.integers(2, 4), label="count")):
            event = self.message_event(data, parent)
            events.append(event)
            parent = event["id"]
        self.store.append_many(sid, events)
        self.sessions[sid].ids.extend(e["id"] for e in events)

    @precondition(lambda self: any(m.ids for m in self.sessions.values()))
    @rule(data=st.data())
    def duplicate_id_rejected(self, data: st.DataObject) -> None:
        sid = data.draw(st.sampled_from(sorted(s for s, m in self.sessions.items() if m.ids)))
        taken = self.pick_id(data, sid, allow_none=False)
        event = self.message_event(data, None)
        event["id"] = taken
        with pytest.raises(DuplicateEventError):
            self.store.append(sid, event)

    @precondition(lambda self: self.sessions)
    @rule(data=st.data())
    def rewind(self, data: st.DataObject) -> None:
        sid = self.pick_session(data)
        target = self.pick_id(data, sid, allow_none=True)
        with reader(self.store.engine) as conn:
            kind = conn.execute(
                text(
                    "SELECT type FROM transcript_events WHERE session_id = :sid "
                    "AND event_id = :target"
                ),
                {"sid": sid, "target": target},
            ).scalar()
        if kind == "leaf":  # a leaf control is not a node of the tree: refused, nothing stored
            with pytest.raises(openclaw_fts.UnknownSessionError):
                self.store.rewind(sid, target)
            return
        seq = self.store.rewind(sid, target)
        with reader(self.store.engine) as conn:
            leaf_id = conn.execute(
                text(
                    "SELECT event_id FROM transcript_events WHERE session_id = :sid AND seq = :seq"
                ),
                {"sid": sid, "seq": seq},
            ).scalar_one()
        self.sessions[sid].ids.append(leaf_id)

    @precondition(lambda self: self.sessions)
    @rule(data=st.data(), how=st.sampled_from(["store", "orm", "bulk", "raw"]))
    def delete_session(self, data: st.DataObject, how: str) -> None:
        sid = self.pick_session(data)
        if how == "store":
            assert self.store.delete_session(sid)
        elif how == "orm":
            with self.host.begin() as db:
                obj = db.get(AgentSession, sid)
                assert obj is not None
                db.delete(obj)
        elif how == "bulk":
            with self.host.begin() as db:
                db.execute(delete(AgentSession).where(AgentSession.session_id == sid))
        else:
            with self.host_engine.begin() as conn:
                conn.exec_driver_sql("DELETE FROM openclaw_sessions WHERE session_id = ?", (sid,))
        del self.sessions[sid]

    @rule(data=st.data(), new=st.booleans(), malformed=st.booleans())
    def import_jsonl(self, data: st.DataObject, new: bool, malformed: bool) -> None:
        """Doctor-style import: stored behind the index, the session becomes pending."""
        if new or not self.sessions:
            sid = self.fresh("imp")
            model = SessionModel(f"agent:main:{sid}")
        else:
            sid = self.pick_session(data)
            model = self.sessions[sid]
        lines: list[str] = [json.dumps({"type": "session", "version": 4, "id": sid})]
        known = list(model.ids)
        new_ids: list[str] = []
        parent: str | None = data.draw(st.sampled_from([None, *known]), label="import parent")
        for _ in range(data.draw(st.integers(1, 4), label="import size")):
            if known and data.draw(st.integers(0, 4)) == 0:
                event: dict[str, Any] = {
                    "type": "leaf",
                    "id": self.fresh(),
                    "parentId": parent,
                    "targetId": data.draw(st.sampled_from(known)),
                }
                if data.draw(st.booleans()):
                    event["appendParentId"] = data.draw(st.sampled_from(known))
            else:
                event = self.message_event(data, parent)
                parent = event["id"]
            lines.append(json.dumps(event, ensure_ascii=False))
            new_ids.append(event["id"])
            known.append(event["id"])
        if malformed:
            lines.insert(data.draw(st.integers(1, len(lines))), '{"type": "message", "id": ')
        path = self.folder / f"{sid}.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        report = self.store.import_jsonl(path, session_key=model.key)
        assert report["errorCount"] == int(malformed)
        assert report["imported"] == len(new_ids) + (0 if sid in model.ids else 1)
        if sid not in model.ids:
            new_ids.insert(0, sid)  # the header line is stored too (its id is the session's)
        model.ids.extend(new_ids)
        self.sessions[sid] = model

    @precondition(lambda self: self.sessions)
    @rule(data=st.data(), with_new_session=st.booleans())
    def host_transaction_rolled_back(self, data: st.DataObject, with_new_session: bool) -> None:
        sid = self.pick_session(data)
        db = self.host()
        try:
            if with_new_session:
                ghost = AgentSession(session_id=self.fresh("ghost"), session_key="agent:main:g")
                db.add(ghost)
                db.add(TranscriptEvent(session=ghost, event=self.message_event(data, None)))
            db.add(
                TranscriptEvent(
                    session_id=sid, event=self.message_event(data, self.active_leaf(sid))
                )
            )
            db.flush()
            db.rollback()
        finally:
            db.close()

    @precondition(lambda self: self.sessions)
    @rule(data=st.data())
    def host_transaction_with_savepoint(self, data: st.DataObject) -> None:
        sid = self.pick_session(data)
        kept = self.message_event(data, self.active_leaf(sid))
        dropped = self.message_event(data, kept["id"])
        with self.host.begin() as db:
            db.add(TranscriptEvent(session_id=sid, event=kept))
            db.flush()
            nested = db.begin_nested()
            db.add(TranscriptEvent(session_id=sid, event=dropped))
            db.flush()
            nested.rollback()
        self.sessions[sid].ids.append(kept["id"])

    @precondition(lambda self: self.sessions)
    @rule(data=st.data())
    def toggle_incognito(self, data: st.DataObject) -> None:
        """A host flips a session's incognito flag through its own ORM session."""
        sid = self.pick_session(data)
        with self.host.begin() as db:
            obj = db.get(AgentSession, sid)
            assert obj is not None
            obj.incognito = not obj.incognito
        self.sessions[sid].incognito = not self.sessions[sid].incognito

    @rule(batch_rows=st.sampled_from([None, 1, 3, 2000]))
    def reconcile(self, batch_rows: int | None) -> None:
        if batch_rows is None:
            result = self.store.reconcile()
        else:
            result = Reconciler(self.store.engine, batch_rows=batch_rows).run()
        assert result["pending"] == 0
        assert self.store.index_status()["pending"] == 0
        assert not any(self.pending_sessions().values())

    # -- the invariant ------------------------------------------------------------------------

    def pending_sessions(self) -> dict[str, bool]:
        with reader(self.store.engine) as conn:
            rows = conn.execute(
                text(
                    "SELECT s.session_id, st.id, st.needs_rebuild, st.indexed_seq, s.last_seq, "
                    "st.index_version FROM openclaw_sessions s "
                    "LEFT JOIN openclaw_index_state st ON st.session_id = s.session_id"
                )
            ).all()
        return {
            sid: state is None or bool(dirty) or indexed != last or version != INDEX_VERSION
            for sid, state, dirty, indexed, last, version in rows
        }

    @invariant()
    def index_matches_the_predicate(self) -> None:
        self.steps += 1
        pending = self.pending_sessions()
        assert set(pending) == set(self.sessions)
        expected_hits: set[tuple[str, str]] = set()
        word = SEARCH_WORDS[self.steps // SEARCH_EVERY % len(SEARCH_WORDS)]
        with reader(self.store.engine) as conn, conn.begin():
            for sid, model in self.sessions.items():
                events = load_events(conn, sid)
                last_seq = conn.execute(
                    text("SELECT last_seq FROM openclaw_sessions WHERE session_id = :sid"),
                    {"sid": sid},
                ).scalar_one()
                assert last_seq == (events[-1][0] if events else -1), sid
                assert {e.get("id") for _, e in events} >= set(model.ids)
                if pending[sid]:
                    continue
                tree = transcript.resolve_tree(transcript.tree_node(s, e) for s, e in events)
                seq_of = {e["id"]: s for s, e in events if e.get("id") in tree.tips}
                tips = [(t, seq_of[t], t == tree.active_leaf) for t in tree.tips]
                if tree.active_leaf is None:
                    tips.append((None, None, True))
                branches = self.store.branches(sid)
                have_tips = [(b["tipId"], b["tipSeq"], b["active"]) for b in branches]
                assert sorted(have_tips, key=repr) == sorted(tips, key=repr), sid
                want = transcript.index_rows(events, incognito=model.incognito)
                have = conn.execute(
                    text(
                        "SELECT seq, event_id, role, body, timestamp_ms FROM message_index "
                        "WHERE session_id = :sid"
                    ),
                    {"sid": sid},
                ).all()
                assert {(r.seq, r.event_id, r.role, index_body(r.text)) for r in want} == {
                    (h[0], h[1], h[2], h[3]) for h in have
                }, sid
                stamps = {h[1]: h[4] for h in have}
                for r in want:
                    if r.timestamp is not None:
                        assert stamps[r.event_id] == r.timestamp, (sid, r.event_id)
                if not model.incognito:
                    expected_hits |= {
                        (sid, r.event_id) for r in want if word in folded_words(r.text)
                    }
            orphans = conn.execute(
                text(
                    "SELECT count(*) FROM message_index WHERE session_id NOT IN "
                    "(SELECT session_id FROM openclaw_sessions)"
                )
            ).scalar_one()
            assert orphans == 0
        status = self.store.index_status()
        assert status == {
            "pending": sum(pending.values()),
            "indexed": len(pending) - sum(pending.values()),
            "total": len(pending),
        }
        with self.store.engine.begin() as conn:
            conn.exec_driver_sql(
                "INSERT INTO message_fts(message_fts, rank) VALUES ('integrity-check', 1)"
            )
        if self.steps % SEARCH_EVERY:
            return
        caller = EVERYTHING if self.steps // SEARCH_EVERY % 2 else CALLER
        out = self.store.search(caller, word, limit=25)
        hits = {(h["sessionId"], h["messageId"]) for h in out["results"]}
        if len(expected_hits) <= 25:
            assert hits == expected_hits
            assert "truncated" not in out
        else:
            assert len(hits) == 25 and hits <= expected_hits and out["truncated"] is True
        visible_pending = any(p for sid, p in pending.items() if not self.sessions[sid].incognito)
        assert out.get("indexing", False) is visible_pending


TranscriptModel.TestCase.settings = settings(
    max_examples=300,
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestTranscriptModel = pytest.mark.slow(TranscriptModel.TestCase)

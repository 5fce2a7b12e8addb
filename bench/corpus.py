"""A deterministic, seeded generator of OpenClaw-shaped transcripts for the benchmarks.

Invariant: the same ``(size, seed, sessions)`` always yields byte-identical events, session by
session, in any order of generation — each session draws from its own RNG seeded with
``f"{seed}:{index}"`` — so the plugin and the plain-``sqlite3`` baseline always see the same
data, and a session can be regenerated without keeping the whole corpus in memory.

Shape (see ``bench/README.md``): a Zipf vocabulary of pseudo-words (a few real technical words
among them, ~3 % of words with Latin diacritics), 5–200 words per message, ~10 % CJK messages
(Chinese, Japanese, Korean), thinking and tool-call blocks, tool results, side appends, rewinds
(leaf controls), some credentials in user messages, and agent/subagent session trees linked by
``spawnedBy``. Session 0 (``agent:main:main``) and its four subagents form the 5-session tree the
``tree`` / ``self`` callers search.
"""

from __future__ import annotations

import base64
import itertools
import json
import random
import string
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

#: Named corpus sizes (transcript events, header lines not counted).
SIZES: dict[str, int] = {"10k": 10_000, "100k": 100_000, "1m": 1_000_000}
DEFAULT_SEED = 20261202
#: Sessions of a full-size corpus (the issue's "~2,000 sessions").
FULL_SESSIONS = 2000
#: Fewest sessions of a small corpus (10k events: 250 sessions of ~40 events).
MIN_SESSIONS = 200
#: Average events per session below which a small corpus gets fewer sessions.
MIN_EVENTS_PER_SESSION = 40
#: Longest generated session: stays inside the plugin's inline-repair bound (4,000 events), so
#: every rewind during live ingest is repaired inline and the corpus ends fully indexed.
MAX_SESSION_EVENTS = 3000
#: Shortest session.
MIN_SESSION_EVENTS = 4

VOCAB_SIZE = 50_000
ZIPF_EXPONENT = 1.07
CJK_VOCAB_SIZE = 4000
#: Share of messages written in Chinese, Japanese or Korean.
CJK_SHARE = 0.10
#: Share of vocabulary words carrying a Latin diacritic (``café``, ``naïve``).
DIACRITIC_SHARE = 0.03
MIN_WORDS, MAX_WORDS = 5, 200
#: Chance per user turn of a rewind (leaf control) first, and of a side append.
REWIND_CHANCE = 0.015
SIDE_APPEND_CHANCE = 0.01
#: Chance that a user message carries a credential; that a Latin message carries a stock phrase.
SECRET_CHANCE = 0.01
PHRASE_CHANCE = 0.04
#: Share of messages carrying an identifier (issue #38: agents' transcripts are full of them,
#: and most searches for one find nothing): a commit hash, a UUID, a ticket (``OPS-1234``) or a
#: worker id (``w0g0n1q``), :meth:`Corpus.identifier`. Drawn from an RNG of their own, so
#: ``id_share=0`` gives the corpus of earlier runs byte for byte.
ID_SHARE = 0.5
#: Identifiers per event of the corpus: message ``i`` names identifier ``n`` drawn uniformly
#: from ``range(ID_POOL_PER_EVENT * events)``, so most are named once or twice and every
#: ``n`` past the pool is an identifier of the same shapes that no message holds.
ID_POOL_PER_EVENT = 0.25
#: Hexadecimal digits of the commit-hash identifiers.
HASH_CHARS = 7
#: Ticket projects of the ``ABC-1234`` identifiers.
TICKET_PROJECTS = ("OPS", "INC", "PLAT", "SEC", "DATA", "WEB")
#: Distinct events of the big transcript of the memory figure (then repeated with new ids).
BIG_FILE_POOL_EVENTS = 5000
#: Subagents of the tree caller's session (its tree: itself + these).
TREE_CALLER_CHILDREN = 4
TREE_CALLER_KEY = "agent:main:main"
#: Agents and their share of the sessions.
AGENTS: tuple[tuple[str, float], ...] = (
    ("main", 0.55),
    ("ops", 0.2),
    ("research", 0.15),
    ("support", 0.10),
)
BASE_TIME_MS = 1_788_000_000_000  # 2026-08-29
SPAN_MS = 60 * 86_400_000

#: Real technical words placed among the pseudo-words (ranks spread over the head of the list).
_REAL_WORDS_TEXT = """
    deploy deployment staging production database migration pipeline error failed build
    release branch merge commit review test tests unit integration cache memory leak connection
    pool timeout retry request response server client config settings schema index query search
    session agent model token latency throughput queue worker thread process container cluster
    node service endpoint gateway proxy certificate secret password user account login logout
    dashboard metrics alert incident rollback snapshot backup restore upgrade version package
    dependency library module function class method variable parameter argument exception trace
    stack debug logging monitor health check rate limit quota billing invoice customer ticket
    support feature flag experiment rollout canary replica shard partition transaction lock
    deadlock vacuum analyze checkpoint journal write read insert update delete select table
    column row migration"""
REAL_WORDS: tuple[str, ...] = tuple(dict.fromkeys(_REAL_WORDS_TEXT.split()))
#: Stock phrases injected into some Latin messages (the phrase queries search them).
PHRASES: tuple[str, ...] = (
    "connection pool",
    "staging deployment failed",
    "database migration",
    "memory leak",
    "rate limit",
    "unit tests",
    "feature flag",
    "rollback snapshot",
    "health check",
    "stack trace",
)

_ONSETS = (
    "", "b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z",
    "br", "ch", "cl", "cr", "dr", "fl", "gr", "pl", "pr", "sh", "sl", "sp", "st", "str", "th", "tr",
)  # fmt: skip
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ea", "ou", "io", "y")
_CODAS = ("", "", "", "n", "r", "s", "t", "l", "m", "nd", "st", "ck", "x", "ng")
_ACCENTS = {"e": "é", "a": "à", "u": "ü", "o": "ö", "i": "ï", "n": "ñ", "c": "ç"}
_HIRAGANA_PARTICLES = (
    "の", "は", "を", "に", "が", "で", "と", "も",
    "から", "まで", "です", "ます",
)  # fmt: skip
_ALNUM = string.ascii_letters + string.digits
_PUNCTUATION = (".", ".", ",", "?", ":", ";")


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One session of the corpus (its events come from :meth:`Corpus.events`)."""

    index: int
    session_id: str
    session_key: str
    agent_id: str
    spawned_by: str | None
    parent_session_key: str | None
    owner_session_key: str | None
    n_events: int
    start_ms: int

    def sessions_json_entry(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"sessionId": self.session_id, "updatedAt": self.start_ms}
        if self.spawned_by:
            entry["spawnedBy"] = self.spawned_by
        if self.parent_session_key:
            entry["parentSessionKey"] = self.parent_session_key
        if self.owner_session_key:
            entry["ownerSessionKey"] = self.owner_session_key
        return entry


def parse_size(text: str) -> int:
    """``"10k"``, ``"100k"``, ``"1m"`` or a plain number of events."""
    key = text.strip().lower()
    if key in SIZES:
        return SIZES[key]
    mult = 1
    if key.endswith("k"):
        mult, key = 1000, key[:-1]
    elif key.endswith("m"):
        mult, key = 1_000_000, key[:-1]
    return int(float(key) * mult)


def default_sessions(size: int) -> int:
    return max(MIN_SESSIONS, min(FULL_SESSIONS, size // MIN_EVENTS_PER_SESSION))


def iso_ms(ms: int) -> str:
    """Epoch ms as OpenClaw's ISO 8601 form (``2026-09-21T09:00:05.000Z``)."""
    dt = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def _zipf_cum_weights(n: int, exponent: float) -> list[float]:
    return list(itertools.accumulate(1.0 / (rank**exponent) for rank in range(1, n + 1)))


class ZipfWords:
    """Words drawn by Zipf's law over a ranked list (the first the most frequent): the text
    model of both generators, this module's :class:`Corpus` and ``bench.pg_scale``'s."""

    def __init__(self, words: list[str], exponent: float) -> None:
        self.words = words
        self._cum = _zipf_cum_weights(len(words), exponent)

    def draw(self, rng: random.Random, k: int) -> list[str]:
        return rng.choices(self.words, cum_weights=self._cum, k=k)


def message_event(
    event_id: str, parent_id: str | None, timestamp: int | str, message: dict[str, Any]
) -> dict[str, Any]:
    """An OpenClaw ``message`` entry (keys in the order OpenClaw writes them)."""
    return {
        "type": "message",
        "id": event_id,
        "parentId": parent_id,
        "timestamp": timestamp,
        "message": message,
    }


def _pseudo_words(rng: random.Random, count: int, reserved: set[str]) -> list[str]:
    words: set[str] = set()
    while len(words) < count:
        syllables = rng.choice((1, 2, 2, 2, 3, 3, 4))
        word = "".join(
            rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(syllables)
        )
        if len(word) >= 2 and word not in reserved:
            words.add(word)
    ordered = sorted(words)
    rng.shuffle(ordered)
    ordered.sort(key=len)  # stable: short words are frequent, ties in random order
    return ordered


def _accent(rng: random.Random, word: str) -> str:
    spots = [i for i, ch in enumerate(word) if ch in _ACCENTS]
    if not spots:
        return word
    i = rng.choice(spots)
    return word[:i] + _ACCENTS[word[i]] + word[i + 1 :]


def _cjk_words(rng: random.Random, count: int) -> list[tuple[str, str]]:
    """``(language, word)`` pairs: Chinese 1–3 hanzi, Japanese katakana/kanji, Korean hangul."""
    hanzi = [chr(cp) for cp in rng.sample(range(0x4E00, 0x7000), 1800)]
    out: set[tuple[str, str]] = set()
    while len(out) < count:
        lang = rng.choices(("zh", "ja", "ko"), weights=(5, 3, 2))[0]
        if lang == "zh":
            word = "".join(rng.choices(hanzi, k=rng.choice((1, 2, 2, 2, 3))))
        elif lang == "ja":
            if rng.random() < 0.5:
                word = "".join(chr(rng.randint(0x30A2, 0x30F3)) for _ in range(rng.randint(2, 5)))
            else:
                word = "".join(rng.choices(hanzi, k=rng.choice((1, 2))))
        else:
            word = "".join(chr(rng.randint(0xAC00, 0xD7A3)) for _ in range(rng.randint(2, 3)))
        out.add((lang, word))
    ordered = sorted(out)
    rng.shuffle(ordered)
    return ordered


class Corpus:
    """The corpus of one benchmark run (see module docstring)."""

    def __init__(
        self,
        size: int,
        *,
        seed: int = DEFAULT_SEED,
        sessions: int | None = None,
        cjk_share: float = CJK_SHARE,
        id_share: float = ID_SHARE,
    ) -> None:
        self.size = size
        self.seed = seed
        self.cjk_share = cjk_share
        self.id_share = id_share
        self.id_pool = max(1000, int(size * ID_POOL_PER_EVENT))
        rng = random.Random(f"{seed}:vocabulary")
        reserved = set(REAL_WORDS) | {"or", "and", "not", "near"}
        pseudo = _pseudo_words(rng, VOCAB_SIZE - len(REAL_WORDS), reserved)
        vocab = list(pseudo)
        for i, word in enumerate(REAL_WORDS):  # spread over ranks 30 .. ~3,000
            vocab.insert(min(len(vocab), 30 + i * 17), word)
        for i in rng.sample(range(200, len(vocab)), int(len(vocab) * DIACRITIC_SHARE)):
            vocab[i] = _accent(rng, vocab[i])
        self.vocabulary: list[str] = vocab
        self._latin = ZipfWords(vocab, ZIPF_EXPONENT)
        cjk = _cjk_words(rng, CJK_VOCAB_SIZE)
        self.cjk_vocabulary: dict[str, list[str]] = {
            lang: [w for lg, w in cjk if lg == lang] for lang in ("zh", "ja", "ko")
        }
        self._cjk = {
            lang: ZipfWords(words, ZIPF_EXPONENT) for lang, words in self.cjk_vocabulary.items()
        }
        self.sessions: list[SessionInfo] = self._plan(sessions or default_sessions(size))

    # -- sessions ----------------------------------------------------------------------------

    def _plan(self, count: int) -> list[SessionInfo]:
        rng = random.Random(f"{self.seed}:sessions")
        count = max(count, TREE_CALLER_CHILDREN + 2)
        lengths = self._lengths(rng, count)
        infos: list[SessionInfo] = []
        roots: dict[str, list[str]] = {name: [] for name, _ in AGENTS}
        counters = dict.fromkeys(roots, 0)
        for index in range(count):
            sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            start = BASE_TIME_MS + int(SPAN_MS * index / count) + rng.randint(0, 3_600_000)
            spawned = parent = owner = None
            if index == 0:
                agent, key = "main", TREE_CALLER_KEY
            elif index <= TREE_CALLER_CHILDREN:
                agent, key = "main", f"agent:main:subagent:tree{index}"
                spawned = TREE_CALLER_KEY
            else:
                agent = rng.choices([a for a, _ in AGENTS], weights=[w for _, w in AGENTS])[0]
                candidates = roots[agent]
                roll = rng.random()
                if candidates and roll < 0.45:  # a subagent of an earlier session of the agent
                    spawned = rng.choice(candidates[-40:])
                    counters[agent] += 1
                    key = f"agent:{agent}:subagent:{counters[agent]:05x}"
                    if rng.random() < 0.2:
                        parent = spawned
                    if rng.random() < 0.1:
                        owner = spawned
                elif candidates and roll < 0.48:  # a reset: new incarnation of an earlier key
                    key = rng.choice(candidates[-40:])
                else:
                    counters[agent] += 1
                    key = f"agent:{agent}:chat:{counters[agent]:05x}"
                if key != TREE_CALLER_KEY:
                    roots[agent].append(key)
            infos.append(
                SessionInfo(index, sid, key, agent, spawned, parent, owner, lengths[index], start)
            )
        return infos

    def _lengths(self, rng: random.Random, count: int) -> list[int]:
        weights = [rng.lognormvariate(0.0, 1.0) for _ in range(count)]
        total_w = sum(weights)
        lo, hi = MIN_SESSION_EVENTS, MAX_SESSION_EVENTS
        lengths = [min(hi, max(lo, round(self.size * w / total_w))) for w in weights]
        if count * lo > self.size or count * hi < self.size:
            return lengths
        diff = self.size - sum(lengths)
        order = sorted(range(count), key=lambda i: -weights[i])
        while diff != 0:
            step = 1 if diff > 0 else -1
            changed = False
            for i in order:
                if diff == 0:
                    break
                share = max(1, abs(diff) * 2 // count) if abs(diff) > count else 1
                new = min(hi, max(lo, lengths[i] + step * share))
                if new != lengths[i]:
                    diff -= new - lengths[i]
                    lengths[i] = new
                    changed = True
            if not changed:
                break
        return lengths

    def by_key(self, session_key: str) -> list[SessionInfo]:
        return [s for s in self.sessions if s.session_key == session_key]

    def tree_of(self, session_key: str) -> list[SessionInfo]:
        """Sessions a ``tree`` caller with this key sees (own key, spawned/parent/owner)."""
        return [
            s
            for s in self.sessions
            if session_key
            in (s.session_key, s.spawned_by, s.parent_session_key, s.owner_session_key)
        ]

    @property
    def n_events(self) -> int:
        return sum(s.n_events for s in self.sessions)

    # -- text --------------------------------------------------------------------------------

    def latin_words(self, rng: random.Random, k: int) -> list[str]:
        return self._latin.draw(rng, k)

    def latin_text(self, rng: random.Random, k: int) -> str:
        words = self.latin_words(rng, k)
        if rng.random() < PHRASE_CHANCE:
            at = rng.randrange(len(words))
            words[at:at] = rng.choice(PHRASES).split()
        n = len(words)
        for at in rng.sample(range(5, n), min(n - 5, n // 9)) if n > 6 else ():
            words[at] = words[at] + rng.choice(_PUNCTUATION)
        words[0] = words[0][:1].upper() + words[0][1:]
        return " ".join(words) + "."

    def cjk_text(self, rng: random.Random, k: int) -> str:
        lang = rng.choices(("zh", "ja", "ko"), weights=(5, 3, 2))[0]
        words = self._cjk[lang].draw(rng, k)
        parts: list[str] = []
        for i, word in enumerate(words):
            if rng.random() < 0.06:  # Latin technical words inside CJK text
                parts.append(f" {rng.choice(REAL_WORDS)} ")
            parts.append(word)
            if lang == "ja" and rng.random() < 0.4:
                parts.append(rng.choice(_HIRAGANA_PARTICLES))
            if lang == "ko":
                parts.append(" ")
            elif i % 9 == 8:
                parts.append("，" if lang == "zh" else "、")
        return "".join(parts).strip() + ("。" if lang != "ko" else ".")

    def message_text(self, rng: random.Random) -> str:
        k = MIN_WORDS + int((MAX_WORDS - MIN_WORDS) * rng.betavariate(1.3, 3.0))
        if rng.random() < self.cjk_share:
            return self.cjk_text(rng, max(MIN_WORDS, k // 2))
        return self.latin_text(rng, k)

    @staticmethod
    def secret(rng: random.Random) -> str:
        def alnum(n: int) -> str:
            return "".join(rng.choices(_ALNUM, k=n))

        return rng.choice(
            (
                f"OPENAI_API_KEY=sk-{alnum(40)}",
                f"GITHUB_TOKEN=ghp_{alnum(36)}",
                f"Authorization: Bearer {alnum(32)}",
                f"postgres://app:{alnum(14)}@db.internal:5432/app",
                f'{{"apiKey": "{alnum(32)}"}}',
                f"--password {alnum(16)}",
            )
        )

    def identifier(self, n: int) -> str:
        """The ``n``-th identifier of the corpus (the same for every run of a seed); its shape
        by ``n % 4``: a commit hash of :data:`HASH_CHARS` digits, a UUID, a ticket, a worker id."""
        rng = random.Random(f"{self.seed}:identifier:{n}")
        shape = n % 4
        if shape == 0:
            return f"{rng.getrandbits(4 * HASH_CHARS):0{HASH_CHARS}x}"
        if shape == 1:
            return str(uuid.UUID(int=rng.getrandbits(128), version=4))
        if shape == 2:
            return f"{rng.choice(TICKET_PROJECTS)}-{rng.randint(1, 9999)}"
        return f"w{rng.randint(0, 9)}g{rng.randint(0, 9)}n{rng.randint(1, 99_999)}q"

    # -- events ------------------------------------------------------------------------------

    def header(self, info: SessionInfo) -> dict[str, Any]:
        return {
            "type": "session",
            "version": 4,
            "id": info.session_id,
            "timestamp": iso_ms(info.start_ms),
            "cwd": f"/home/dev/project{info.index % 17}",
        }

    def events(self, info: SessionInfo, *, rewinds: bool = True) -> list[dict[str, Any]]:
        """The session's ``info.n_events`` events (no header), deterministic."""
        rng = random.Random(f"{self.seed}:{info.index}")
        return self._events(rng, info.n_events, info.start_ms, rewinds=rewinds)

    def extra_events(
        self, tag: str, n: int, start_ms: int = BASE_TIME_MS, *, rewinds: bool = True
    ) -> list[dict[str, Any]]:
        """``n`` events of a session outside the planned corpus (rewind and memory figures)."""
        return self._events(random.Random(f"{self.seed}:extra:{tag}"), n, start_ms, rewinds=rewinds)

    def _events(
        self, rng: random.Random, n: int, start_ms: int, *, rewinds: bool
    ) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for event in self.stream_events(rng, start_ms, rewinds=rewinds):
            out.append(event)
            if len(out) >= n:
                break
        return out

    def stream_events(
        self, rng: random.Random, start_ms: int, *, rewinds: bool = True
    ) -> Iterator[dict[str, Any]]:
        """An endless transcript (without header); the caller stops it."""
        counter = itertools.count()
        clock = [start_ms]
        # Identifiers: an RNG of their own (the text's draws stay those of id_share=0).
        ids = random.Random(f"{self.seed}:ids:{start_ms}")

        def new_id() -> str:
            return f"{next(counter):06x}{rng.getrandbits(16):04x}"

        def stamp() -> int | str:
            clock[0] += rng.randint(800, 90_000)
            return clock[0] if rng.random() < 0.2 else iso_ms(clock[0])

        path: list[str] = []  # ids of the messages on the active branch, oldest first
        parent: str | None = None  # what the next canonical entry names as parentId
        first = new_id()
        yield {
            "type": "model_change",
            "id": first,
            "parentId": None,
            "timestamp": stamp(),
            "provider": "anthropic",
            "modelId": "claude-sonnet-4-6",
        }
        parent = first
        while True:
            if rewinds and len(path) >= 6 and rng.random() < REWIND_CHANCE:
                back = rng.randint(2, min(12, len(path) - 1))
                if rng.random() < 0.1:
                    back = len(path) // 2
                target = path[-back - 1]
                marker = new_id()
                yield {
                    "type": "leaf",
                    "id": marker,
                    "parentId": parent,
                    "targetId": target,
                    "timestamp": stamp(),
                }
                del path[len(path) - back :]
                parent = marker
            if rng.random() < SIDE_APPEND_CHANCE and path:
                yield {
                    "type": "custom",
                    "id": new_id(),
                    "parentId": path[-1],
                    "appendMode": "side",
                    "timestamp": stamp(),
                    "customType": "ui-note",
                    "data": {"text": "badge refreshed"},
                }
            text = self.message_text(rng)
            if rng.random() < SECRET_CHANCE:
                text = f"{text} {self.secret(rng)}"
            if self.id_share and ids.random() < self.id_share:
                text = f"{text} {self.identifier(ids.randrange(self.id_pool))}"
            mid = new_id()
            content: Any = text if rng.random() < 0.5 else [{"type": "text", "text": text}]
            yield message_event(mid, parent, stamp(), {"role": "user", "content": content})
            path.append(mid)
            parent = mid
            for _ in range(rng.choice((1, 1, 1, 2))):
                blocks: list[dict[str, Any]] = []
                if rng.random() < 0.4:
                    thought = self.latin_text(rng, rng.randint(10, 60))
                    blocks.append(
                        {
                            "type": "thinking",
                            "thinking": thought,
                            "thinkingSignature": base64.b64encode(rng.randbytes(24)).decode(),
                        }
                    )
                call = rng.random() < 0.3
                if not call or rng.random() < 0.5:
                    blocks.append({"type": "text", "text": self.message_text(rng)})
                call_id = f"call_{rng.getrandbits(32):08x}"
                if call:
                    blocks.append(
                        {
                            "type": "toolCall",
                            "id": call_id,
                            "name": rng.choice(("exec", "read", "grep", "web_fetch")),
                            "arguments": {"command": " ".join(self.latin_words(rng, 4))},
                        }
                    )
                aid = new_id()
                ts = stamp()  # before the usage: the draws stay in the corpus' order
                usage = {"input": rng.randint(100, 9000), "output": rng.randint(5, 900)}
                yield message_event(
                    aid, parent, ts, {"role": "assistant", "content": blocks, "usage": usage}
                )
                path.append(aid)
                parent = aid
                if not call:
                    break
                rid = new_id()
                yield message_event(
                    rid,
                    parent,
                    stamp(),
                    {
                        "role": "toolResult",
                        "toolCallId": call_id,
                        "toolName": "exec",
                        "isError": rng.random() < 0.1,
                        "content": [{"type": "text", "text": self.latin_text(rng, 30)}],
                    },
                )
                path.append(rid)
                parent = rid

    # -- files -------------------------------------------------------------------------------

    def write_session(
        self, folder: Path, info: SessionInfo, events: Sequence[dict[str, Any]]
    ) -> int:
        """Write ``<sessionId>.jsonl`` (header + events); returns its size in bytes."""
        path = folder / f"{info.session_id}.jsonl"
        lines = [json.dumps(self.header(info), ensure_ascii=False)]
        lines.extend(json.dumps(e, ensure_ascii=False) for e in events)
        data = ("\n".join(lines) + "\n").encode("utf-8")
        path.write_bytes(data)
        return len(data)

    def write_index(self, folder: Path) -> None:
        """``sessions.json``: the newest incarnation of each key (as OpenClaw keeps it)."""
        entries: dict[str, dict[str, Any]] = {}
        for info in self.sessions:
            entries[info.session_key] = info.sessions_json_entry()
        (folder / "sessions.json").write_text(json.dumps(entries, indent=1), encoding="utf-8")

    def write_dir(self, folder: Path) -> int:
        """The whole corpus as an OpenClaw sessions folder; returns the bytes written."""
        folder.mkdir(parents=True, exist_ok=True)
        total = sum(self.write_session(folder, i, self.events(i)) for i in self.sessions)
        self.write_index(folder)
        return total

    def write_big_transcript(self, path: Path, target_bytes: int, tag: str = "big") -> int:
        """One session's JSONL of about ``target_bytes`` (the memory figure); returns events.

        A pool of generated events is repeated with fresh ids (``<id>-<cycle>``), so a gigabyte
        is written in seconds; the transcript stays one tree with rewinds and side appends."""
        rng = random.Random(f"{self.seed}:bigfile:{tag}")
        sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        header = {"type": "session", "version": 4, "id": sid, "timestamp": iso_ms(BASE_TIME_MS)}
        pool = self._events(rng, BIG_FILE_POOL_EVENTS, BASE_TIME_MS, rewinds=True)
        written = 0
        count = 0
        with path.open("w", encoding="utf-8") as handle:
            written += handle.write(json.dumps(header, ensure_ascii=False) + "\n")
            for cycle in itertools.count():
                for event in pool:
                    copy = dict(event)
                    for key in ("id", "parentId", "targetId"):
                        if isinstance(copy.get(key), str):
                            copy[key] = f"{copy[key]}-{cycle}"
                    written += handle.write(json.dumps(copy, ensure_ascii=False) + "\n")
                    count += 1
                    if written >= target_bytes:
                        return count
        return count


def describe(corpus: Corpus) -> dict[str, Any]:
    """A few numbers about the corpus, for the results file."""
    lengths = sorted(s.n_events for s in corpus.sessions)
    return {
        "events": corpus.n_events,
        "sessions": len(corpus.sessions),
        "seed": corpus.seed,
        "sessionEvents": {
            "min": lengths[0],
            "median": lengths[len(lengths) // 2],
            "max": lengths[-1],
            "mean": round(corpus.n_events / len(lengths), 1),
        },
        "vocabulary": len(corpus.vocabulary),
        "zipfExponent": ZIPF_EXPONENT,
        "cjkShare": corpus.cjk_share,
        "idShare": corpus.id_share,
        "idPool": corpus.id_pool,
    }

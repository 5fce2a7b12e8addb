"""The search peers measured next to the plugin: what a user would otherwise pick.

* :class:`TantivyPeer` (both engines): tantivy's Python bindings, BM25 with block-max top-k, the
  limit of what a search engine answers on this corpus. Same rows as the raw baseline (its
  ``message_index``: the CJK-spaced ``tokens.index_body`` text), tokenized as close to the
  plugin as tantivy allows: ``simple`` (split on what is not a letter or digit), ``lowercase``,
  ``ascii_fold`` (SQLite's ``unicode61 remove_diacritics 2`` and PostgreSQL's ``simple`` +
  ``unaccent`` fold the same Latin accents). Visibility filters are zero-score clauses on
  keyword fields, so they never change the order.
* :class:`SearchablePeer` (PostgreSQL): SQLAlchemy-Searchable 3.0 as its documentation shows
  it: an ORM model with a ``TSVectorType`` column kept by the library's trigger
  (``make_searchable``), rows added through an ORM ``Session``, searched with
  ``search(select(Message), text, sort=True)`` and a ``LIMIT``; visibility is a join on the
  peer's own sessions table.

Invariant: a peer searches the same index rows as the raw baseline; where its query language
cannot express the raw expression exactly, :meth:`reference` returns the raw expression of what
it does match (SQLAlchemy-Searchable makes every word a prefix), and the bench checks the match
counts against that.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from openclaw_fts.tokens import index_body

try:  # optional: pip install -e ".[bench]"
    import tantivy
except ImportError:  # pragma: no cover - the bench runs without the column
    tantivy = None

try:  # optional: pip install -e ".[bench]" (PostgreSQL only)
    import sqlalchemy_searchable
except ImportError:  # pragma: no cover
    sqlalchemy_searchable = None

LIMIT = 10
TANTIVY_AVAILABLE = tantivy is not None
SEARCHABLE_AVAILABLE = sqlalchemy_searchable is not None
#: tantivy's writer heap (bytes) and the analyzer's name.
TANTIVY_HEAP = 64_000_000
TANTIVY_ANALYZER = "openclaw"
#: Rows per ORM flush when loading the SQLAlchemy-Searchable peer.
SEARCHABLE_BATCH = 100


@dataclass(frozen=True)
class PeerQuery:
    """A query of the bench as the peers need it: its kind (``word``, ``and``, ``phrase``,
    ``prefix``), the words, and the raw baseline's expression."""

    kind: str
    words: tuple[str, ...]
    match: str


class Peer(Protocol):
    label: str

    def search(self, q: PeerQuery, vis: str, scope: Mapping[str, Any]) -> list[Any]: ...

    def count(self, q: PeerQuery, vis: str, scope: Mapping[str, Any]) -> int: ...

    def reference(self, q: PeerQuery) -> str: ...

    def size_bytes(self) -> int: ...

    def close(self) -> None: ...


def version(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version(dist)
    except PackageNotFoundError:
        return None


# -- tantivy -----------------------------------------------------------------------------------


class TantivyPeer:
    """A tantivy index of the raw baseline's index rows and their sessions."""

    label = "tantivy"

    def __init__(self, path: Path) -> None:
        if tantivy is None:
            raise RuntimeError('tantivy is not installed: pip install -e ".[bench]"')
        self.path = path
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        b = tantivy.SchemaBuilder()
        b.add_integer_field("id", stored=True, indexed=False, fast=False)
        b.add_text_field("sess", stored=True, tokenizer_name="raw")
        b.add_text_field("agent", stored=False, tokenizer_name="raw")
        b.add_text_field("key", stored=False, tokenizer_name="raw")
        b.add_text_field("keys", stored=False, tokenizer_name="raw")
        b.add_integer_field("hidden", stored=False, indexed=True)
        b.add_text_field("body", stored=False, tokenizer_name=TANTIVY_ANALYZER)
        self.schema = b.build()
        self.index = tantivy.Index(self.schema, path=str(path))
        analyzer = (
            tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
            .filter(tantivy.Filter.lowercase())
            .filter(tantivy.Filter.ascii_fold())
            .build()
        )
        self.index.register_tokenizer(TANTIVY_ANALYZER, analyzer)
        self.searcher: Any = None
        self._filters: dict[tuple[str, str], Any] = {}

    def close(self) -> None:
        self.searcher = None
        shutil.rmtree(self.path, ignore_errors=True)

    def load(
        self, sessions: Iterable[Mapping[str, Any]], rows: Iterable[Mapping[str, Any]]
    ) -> dict[str, Any]:
        """Index ``rows`` (``id``, ``session_id``, ``body``) with their sessions' fields."""
        by_id = {s["session_id"]: s for s in sessions}
        t0 = time.perf_counter()
        writer = self.index.writer(TANTIVY_HEAP, 1)
        n = 0
        for r in rows:
            s = by_id[r["session_id"]]
            keys = [
                k
                for k in (
                    s["session_key"],
                    s["spawned_by"],
                    s["parent_session_key"],
                    s["owner_session_key"],
                )
                if k
            ]
            doc = tantivy.Document(
                id=int(r["id"]),
                sess=r["session_id"],
                agent=s["agent_id"],
                key=s["session_key"],
                keys=keys,
                hidden=int(bool(s["incognito"])),
                body=r["body"],
            )
            writer.add_document(doc)
            n += 1
        writer.commit()
        writer.wait_merging_threads()
        self.index.reload()
        self.searcher = self.index.searcher()
        return {
            "rows": n,
            "loadSeconds": round(time.perf_counter() - t0, 3),
            "sizeBytes": self.size_bytes(),
        }

    def size_bytes(self) -> int:
        """The index folder on disk (segments and meta; bodies are not stored)."""
        return sum(f.stat().st_size for f in self.path.rglob("*") if f.is_file())

    def _tokens(self, text: str) -> list[str]:
        """The analyzer's terms of ``text`` (the CJK-spaced form, as indexed)."""
        out: list[str] = []
        word = []
        for ch in index_body(text):
            if ch.isalnum():
                word.append(ch)
            elif word:
                out.append("".join(word))
                word = []
        if word:
            out.append("".join(word))
        return [_fold(t.lower()) for t in out]

    def _text(self, words: Sequence[str], *, phrase: bool = False) -> Any:
        terms = self._tokens(" ".join(words))
        if len(terms) == 1:
            return tantivy.Query.term_query(self.schema, "body", terms[0])
        if phrase:
            return tantivy.Query.phrase_query(self.schema, "body", terms)
        raise ValueError("several terms: use kind 'and'")

    def _query(self, q: PeerQuery) -> Any:
        if q.kind == "prefix":
            return tantivy.Query.phrase_prefix_query(self.schema, "body", self._tokens(q.words[0]))
        if q.kind == "phrase":
            return self._text(q.words, phrase=True)
        must = tantivy.Occur.Must
        parts = [self._text([w], phrase=True) for w in q.words]
        if len(parts) == 1:
            return parts[0]
        return tantivy.Query.boolean_query([(must, p) for p in parts])

    def _filter(self, vis: str, scope: Mapping[str, Any]) -> list[tuple[Any, Any]]:
        Q, occur = tantivy.Query, tantivy.Occur
        clauses = [(occur.MustNot, Q.term_query(self.schema, "hidden", 1))]
        if vis == "agent":
            term = Q.term_query(self.schema, "agent", scope["agent"])
        elif vis == "tree":
            term = Q.term_query(self.schema, "keys", scope["k"])
        elif vis == "self":
            term = Q.term_query(self.schema, "key", scope["k"])
        else:
            return clauses
        return [*clauses, (occur.Must, Q.const_score_query(term, 0.0))]

    def _full(self, q: PeerQuery, vis: str, scope: Mapping[str, Any]) -> Any:
        return tantivy.Query.boolean_query(
            [(tantivy.Occur.Must, self._query(q)), *self._filter(vis, scope)]
        )

    def search(self, q: PeerQuery, vis: str, scope: Mapping[str, Any]) -> list[Any]:
        """Top 10 by BM25 without counting the matches (block-max pruning), with the stored
        row id and session id of each hit."""
        found = self.searcher.search(self._full(q, vis, scope), LIMIT, count=False)
        return [
            (score, self.searcher.doc(addr)["id"][0], self.searcher.doc(addr)["sess"][0])
            for score, addr in found.hits
        ]

    def count(self, q: PeerQuery, vis: str, scope: Mapping[str, Any]) -> int:
        return int(self.searcher.search(self._full(q, vis, scope), 1, count=True).count)

    def reference(self, q: PeerQuery) -> str:
        return q.match


def _fold(text: str) -> str:
    """ASCII folding of Latin accents (what tantivy's ``ascii_fold`` does to the indexed text)."""
    import unicodedata

    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    folded = "".join(c for c in decomposed if not unicodedata.combining(c))
    return folded if folded.isascii() else text


# -- SQLAlchemy-Searchable ---------------------------------------------------------------------


class SearchablePeer:
    """SQLAlchemy-Searchable over its own tables in a database on the bench's server."""

    label = "sqlalchemy-searchable"

    def __init__(self, url: str, regconfig: str) -> None:
        if sqlalchemy_searchable is None:
            raise RuntimeError('sqlalchemy-searchable is not installed: pip install -e ".[bench]"')
        import sqlalchemy as sa
        from sqlalchemy.orm import DeclarativeBase, mapped_column, relationship
        from sqlalchemy_utils import TSVectorType

        class Base(DeclarativeBase):
            pass

        sqlalchemy_searchable.make_searchable(Base.metadata)

        class PeerSession(Base):
            __tablename__ = "peer_sessions"
            session_id = mapped_column(sa.String, primary_key=True)
            session_key = mapped_column(sa.String, index=True)
            agent_id = mapped_column(sa.String, index=True)
            spawned_by = mapped_column(sa.String, index=True)
            parent_session_key = mapped_column(sa.String, index=True)
            owner_session_key = mapped_column(sa.String, index=True)
            incognito = mapped_column(sa.Boolean, default=False)

        class PeerMessage(Base):
            __tablename__ = "peer_messages"
            id = mapped_column(sa.Integer, primary_key=True)
            session_id = mapped_column(sa.ForeignKey("peer_sessions.session_id"), index=True)
            seq = mapped_column(sa.Integer)
            event_id = mapped_column(sa.String)
            role = mapped_column(sa.String)
            timestamp_ms = mapped_column(sa.BigInteger)
            body = mapped_column(sa.Text)
            search_vector = mapped_column(TSVectorType("body", regconfig=regconfig))
            session = relationship(PeerSession)

        sa.orm.configure_mappers()  # the library's trigger DDL is attached here
        self.sa = sa
        self.Session_ = PeerSession
        self.Message = PeerMessage
        self.regconfig = regconfig
        # search() passes regconfig as a bound string: psycopg 3 types it VARCHAR, and
        # parse_websearch(regconfig, text) is then not found (psycopg2 sends it untyped). A
        # literal regconfig is what a user on psycopg 3 writes.
        self._regconfig: Any = sa.literal_column(f"'{regconfig}'::regconfig")
        self.engine = sa.create_engine(url)
        Base.metadata.create_all(self.engine)
        from sqlalchemy.orm import sessionmaker

        self.factory = sessionmaker(self.engine, expire_on_commit=False)
        self._next_id = 0

    def close(self) -> None:
        self.engine.dispose()

    def add_sessions(self, sessions: Iterable[Mapping[str, Any]]) -> None:
        with self.factory.begin() as db:
            db.add_all(self.Session_(**dict(s)) for s in sessions)

    def add_messages(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """One transaction: the rows as ORM objects (the trigger fills ``search_vector``)."""
        with self.factory.begin() as db:
            for r in rows:
                self._next_id += 1
                db.add(self.Message(id=self._next_id, **dict(r)))

    def load(
        self, sessions: Iterable[Mapping[str, Any]], rows: Iterable[Mapping[str, Any]]
    ) -> dict[str, Any]:
        t0 = time.perf_counter()
        self.add_sessions(sessions)
        batch: list[Mapping[str, Any]] = []
        n = 0
        for r in rows:
            batch.append({k: r[k] for k in _MESSAGE_COLUMNS})
            if len(batch) >= SEARCHABLE_BATCH:
                self.add_messages(batch)
                n += len(batch)
                batch = []
        if batch:
            self.add_messages(batch)
            n += len(batch)
        with self.engine.connect() as c:
            c.exec_driver_sql("ANALYZE")
        return {
            "rows": n,
            "loadSeconds": round(time.perf_counter() - t0, 3),
            "sizeBytes": self.size_bytes(),
        }

    def size_bytes(self) -> int:
        """Its two tables with their indexes and TOAST (``pg_total_relation_size``)."""
        with self.engine.connect() as c:
            return int(
                c.exec_driver_sql(
                    "SELECT pg_total_relation_size('peer_messages')"
                    " + pg_total_relation_size('peer_sessions')"
                ).scalar_one()
            )

    def text(self, q: PeerQuery) -> str:
        """What a user types into ``search()`` (web-search syntax; CJK spaced like the index,
        quoted so its characters stay a phrase)."""

        def word(w: str) -> str:
            spaced = index_body(w).strip()
            return f'"{spaced}"' if " " in spaced else spaced

        if q.kind == "phrase":
            return '"' + index_body(" ".join(q.words)).strip() + '"'
        if q.kind == "prefix":
            return q.words[0]
        return " ".join(word(w) for w in q.words)

    def _select(self, q: PeerQuery, vis: str, scope: Mapping[str, Any], *, sort: bool) -> Any:
        sa = self.sa
        S, M = self.Session_, self.Message
        stmt = sa.select(M).join(M.session).where(S.incognito.is_(False))
        if vis == "agent":
            stmt = stmt.where(S.agent_id == scope["agent"])
        elif vis == "tree":
            k = scope["k"]
            stmt = stmt.where(
                sa.or_(
                    S.session_key == k,
                    S.spawned_by == k,
                    S.parent_session_key == k,
                    S.owner_session_key == k,
                )
            )
        elif vis == "self":
            stmt = stmt.where(S.session_key == scope["k"])
        return sqlalchemy_searchable.search(
            stmt, self.text(q), regconfig=self._regconfig, sort=sort
        )

    def search(self, q: PeerQuery, vis: str, scope: Mapping[str, Any]) -> list[Any]:
        with self.factory() as db:
            return list(db.scalars(self._select(q, vis, scope, sort=True).limit(LIMIT)))

    def count(self, q: PeerQuery, vis: str, scope: Mapping[str, Any]) -> int:
        sa = self.sa
        with self.factory() as db:
            sub = self._select(q, vis, scope, sort=False).subquery()
            return int(db.scalar(sa.select(sa.func.count()).select_from(sub)) or 0)

    def reference(self, q: PeerQuery) -> str:
        """The raw ``to_tsquery`` input of what ``search()`` matches: every lexeme a prefix."""
        from bench import pg_baseline as pgraw

        return pgraw.tsquery(q.kind, q.words, prefix_all=True)


_MESSAGE_COLUMNS = ("session_id", "seq", "event_id", "role", "timestamp_ms", "body")

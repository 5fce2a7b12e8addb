"""The user query language, compiled to an FTS5 ``MATCH`` expression on the ``body`` column.

Language:

* whitespace-separated words are ANDed; each word matches as an exact word (case-insensitive,
  diacritics folded -- the tokenizer does this);
* a balanced ``"double-quoted phrase"`` matches its words adjacent and in order (a ``"`` opens a
  phrase only at the start of a word; the next ``"`` closes it);
* a word ending in ``*`` right after a letter or digit is a prefix match (``deplo*``); so is a
  phrase followed directly by ``*`` (``"staging deplo"*``: the last word is the prefix);
* an uppercase ``OR`` with a term on both sides means either; ``a OR b c`` is
  ``(a OR b) AND c`` (``OR`` binds tighter than the implicit AND, the way people read it); an
  ``OR`` without a term on one side (first, last, next to another ``OR``) is the word "or";
* everything else -- ``:``, ``-``, ``^``, ``(``, ``)``, ``NEAR``, ``NOT``, ``AND``, lowercase
  ``or``, unbalanced quotes, paths, e-mail addresses, code -- is literal text.

Invariant: :func:`compile_query` is total. For every ``str`` it returns ``None`` (no searchable
token: the caller returns zero results and does not run ``MATCH``) or a :class:`CompiledQuery`
whose ``match`` is a valid FTS5 expression that can only match the ``body`` column. Every term is
emitted as a double-quoted FTS5 string (``"`` doubled, text passed through
:func:`~openclaw_fts.tokens.index_body` so CJK characters are single-character tokens and the
string always encodes), so user text is never FTS5 syntax; the only syntax is the ``body :``
column filter, parentheses, ``AND``, ``OR`` and the prefix ``*`` this module writes itself. A
term without a token character is dropped (``""`` would be an empty phrase, which silently makes
an AND match nothing).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from .tokens import clean_text, has_token, index_body, is_token_char, iter_tokens

#: Most terms a compiled query keeps. A 4096-character query could hold ~2,000 one-letter terms;
#: each term is one more index lookup (and a phrase one more per token), so the expression, its
#: parse and its evaluation are bounded here. Whole trailing AND groups are dropped first, which
#: only widens the result (every row still matches the kept terms); only a single group of more
#: than this many OR alternatives is cut inside. Nobody types 64 terms: it affects pasted text.
MAX_QUERY_TERMS = 64

#: Most tokens a single term (word or phrase) keeps. A pasted 4,000-character CJK or log line is
#: one phrase of thousands of tokens (one doclist each); its first 32 consecutive tokens are
#: already practically unique. A cut term loses its prefix star: results can only widen.
MAX_TERM_TOKENS = 32

#: The FTS5 column the user query may address (never ``sess``, the visibility token column).
BODY_COLUMN = "body"

#: The uppercase word that is an operator between two terms.
OR_WORD = "OR"

# Lexing stops after this many kept items (searchable terms and ORs): an OR operator needs a term
# on both sides, so the first 2n+3 items always hold more than n terms whose grouping is decided.
_MAX_LEX_ITEMS = 2 * MAX_QUERY_TERMS + 3

_SPACE_RE = re.compile(r"\s")


@dataclass(frozen=True)
class Term:
    """One searchable term: its folded tokens (one for a word, several for a phrase or for text
    like ``node.js``, one per character for CJK) and whether the last token is a prefix."""

    tokens: tuple[str, ...]
    prefix: bool


@dataclass(frozen=True)
class CompiledQuery:
    """``match``: the FTS5 expression (``body`` column only); ``terms``: every term it holds,
    in query order; ``groups``: the same terms as the engine-neutral structure every backend
    renders -- an AND of OR-groups (each group holds one or more alternatives, in query order;
    ``[t for g in groups for t in g] == terms``)."""

    match: str
    terms: tuple[Term, ...]
    groups: tuple[tuple[Term, ...], ...]


@dataclass(frozen=True)
class _Compiled:
    fts: str  # the term as an FTS5 string: "..." or "..."*
    term: Term


#: An uppercase OR as the user typed it; it is an operator or the literal word "or".
_OR = None
_Item = _Compiled | None

_LITERAL_OR = _Compiled('"OR"', Term(("or",), False))


def _compile_term(raw: str, prefix: bool) -> _Compiled | None:
    """``raw`` (the term's text without phrase quotes and prefix star) as an FTS5 string, or
    ``None`` when it holds no token."""
    if not has_token(raw):
        return None
    tokens: list[str] = []
    end = 0
    for token in iter_tokens(raw):
        if len(tokens) == MAX_TERM_TOKENS:
            raw, prefix = raw[:end], False
            break
        tokens.append(token.norm)
        end = token.end
    if not tokens:  # has_token and the tokenizer agree; kept as a guard against an empty phrase
        return None
    fts = '"' + index_body(raw).replace('"', '""') + '"' + ("*" if prefix else "")
    return _Compiled(fts, Term(tuple(tokens), prefix))


def _lex(text: str) -> list[_Item]:
    """The searchable terms and the uppercase ORs of ``text``, in order (at most
    ``_MAX_LEX_ITEMS``); terms without a token are already left out."""
    items: list[_Item] = []
    i, n = 0, len(text)
    while i < n and len(items) < _MAX_LEX_ITEMS:
        if text[i].isspace():
            i += 1
            continue
        item: _Item
        close = text.find('"', i + 1) if text[i] == '"' else -1
        if close != -1:  # a balanced phrase; an unbalanced quote is literal text of a word
            raw = text[i + 1 : close]
            i = close + 1
            prefix = i < n and text[i] == "*"
            if prefix:
                i += 1
            item = _compile_term(raw, prefix)
        else:
            space = _SPACE_RE.search(text, i)
            end = n if space is None else space.start()
            word = text[i:end]
            i = end
            if word == OR_WORD:
                items.append(_OR)
                continue
            if len(word) >= 2 and word[-1] == "*" and is_token_char(word[-2]):
                item = _compile_term(word[:-1], True)
            else:
                item = _compile_term(word, False)
        if item is not None:
            items.append(item)
    return items


def _groups(items: list[_Item]) -> list[list[_Compiled]]:
    """The OR groups, in order, to be ANDed. An OR between two terms joins them; any other OR
    (first, last, or next to another OR) is the literal word "or"."""
    groups: list[list[_Compiled]] = []
    join = False
    for k, item in enumerate(items):
        if item is None:
            before = k > 0 and items[k - 1] is not None
            after = k + 1 < len(items) and items[k + 1] is not None
            if before and after:
                join = True
                continue
            item = _LITERAL_OR
        if join:
            groups[-1].append(item)
        else:
            groups.append([item])
        join = False
    return groups


def _limit(groups: list[list[_Compiled]]) -> list[list[_Compiled]]:
    """The longest run of leading groups with at most ``MAX_QUERY_TERMS`` terms (a first group
    that is larger on its own is cut)."""
    kept: list[list[_Compiled]] = []
    count = 0
    for group in groups:
        if count + len(group) > MAX_QUERY_TERMS:
            if not kept:
                kept.append(group[:MAX_QUERY_TERMS])
            break
        kept.append(group)
        count += len(group)
    return kept


def _group_expression(group: list[_Compiled]) -> str:
    if len(group) == 1:
        return group[0].fts
    return "(" + " OR ".join(item.fts for item in group) + ")"


def compile_query(text: str) -> CompiledQuery | None:
    """``text`` (the user's query) as an FTS5 expression, or ``None`` when it holds no
    searchable token. Never raises for a ``str``; see the module docstring for the language.
    The last :data:`COMPILED_QUERY_CACHE` queries are remembered (a :class:`CompiledQuery` is
    immutable; an agent repeats its searches)."""
    if len(text) > MAX_CACHED_QUERY_CHARS:
        return _compile(text)
    return _compile_cached(text)


def _compile(text: str) -> CompiledQuery | None:
    groups = _limit(_groups(_lex(clean_text(text))))
    if not groups:
        return None
    if len(groups) == 1:  # a lone OR group needs no parentheses of its own
        body = " OR ".join(item.fts for item in groups[0])
    else:
        body = " AND ".join(_group_expression(group) for group in groups)
    structure = tuple(tuple(item.term for item in group) for group in groups)
    terms = tuple(term for group in structure for term in group)
    return CompiledQuery(f"{BODY_COLUMN} : ({body})", terms, structure)


#: Compiled queries remembered by :func:`compile_query` (by text), and the longest query text
#: remembered (longer ones are compiled each time: a pasted page is rarely searched twice).
COMPILED_QUERY_CACHE = 256
MAX_CACHED_QUERY_CHARS = 1024
_compile_cached = functools.lru_cache(maxsize=COMPILED_QUERY_CACHE)(_compile)

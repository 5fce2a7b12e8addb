"""The compiled user query (:class:`~openclaw_fts.query.CompiledQuery`) as PostgreSQL
``to_tsquery`` input.

Invariant: :func:`render` is total. Every term's tokens come from the FTS5 tokenizer mirror
(``tokens.iter_tokens``: letters, digits, private-use and unassigned code points only, already
folded), and each one is written as a single-quoted ``to_tsquery`` operand with ``'`` doubled and
``\\`` escaped, so no user text is ever tsquery syntax; the only syntax is what this module
writes: ``<->`` between the tokens of a phrase, ``:*`` after a prefix term's last token, ``|``
inside an OR group and ``&`` between groups. ``to_tsquery`` then runs each operand through the
same configuration as the column (:data:`TEXT_SEARCH_CONFIG`: unaccent, lower case), so a query
lexeme is normalised exactly like the indexed lexeme of the same word. The indexed side reads
ASCII punctuation as spaces (:data:`PUNCTUATION`, revision 0002), so PostgreSQL's parser splits
words where FTS5's ``unicode61`` does; what still differs is listed in docs/postgresql.md.
"""

from __future__ import annotations

from ...query import CompiledQuery, Term
from .names import TEXT_SEARCH_CONFIG

#: ASCII punctuation: the indexed text reads each as a space (frozen copy in revision 0002).
PUNCTUATION = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"


def body_tsvector_sql(column: str = "body") -> str:
    """The generated column's expression over ``column`` (what revision 0002 creates)."""
    quoted = PUNCTUATION.replace("'", "''")
    return (
        f"to_tsvector('{TEXT_SEARCH_CONFIG}'::regconfig, translate({column}, '{quoted}', "
        f"'{' ' * len(PUNCTUATION)}'))"
    )


def _operand(token: str) -> str:
    """One token as a quoted ``to_tsquery`` operand (never empty: the caller skips those)."""
    return "'" + token.replace("\\", "\\\\").replace("'", "''") + "'"


def _term(term: Term) -> str | None:
    tokens = [t for t in term.tokens if t]
    if not tokens:
        return None
    operands = [_operand(t) for t in tokens]
    if term.prefix:
        operands[-1] += ":*"
    if len(operands) == 1:
        return operands[0]
    return "(" + " <-> ".join(operands) + ")"


def render(compiled: CompiledQuery) -> str | None:
    """``compiled`` as ``to_tsquery`` input (for :data:`TEXT_SEARCH_CONFIG`), or None when it
    holds no token (the caller then finds nothing, as for an uncompilable query)."""
    groups = []
    for group in compiled.groups:
        alternatives = [r for r in map(_term, group) if r is not None]
        if not alternatives:
            continue
        if len(alternatives) == 1:
            groups.append(alternatives[0])
        else:
            groups.append("(" + " | ".join(alternatives) + ")")
    if not groups:
        return None
    return " & ".join(groups)

"""The one pipeline every credential rule runs in (docs/redaction.md, "Architecture").

Invariant: :data:`PIPELINE` lists every built-in rule once, each a :class:`Rule`: a name, a
:class:`Prefilter` (DATA: the words one of which the text must hold, the pattern it must match,
the run of token characters it must hold) and a finder taking the per-text
:class:`~.scan.Scan`. :func:`run` runs each rule whose prefilter admits the text; a finder adds
the spans it finds to the scan (its budget and cutoff bound the work). Every span is found on
the ORIGINAL text and merged afterwards, so the order of :data:`PIPELINE` does not change the
output. :func:`nothing_to_find` is the whole pipeline's prefilter: a text it returns True for
has nothing any rule masks (tests/test_redact_prefilter.py checks it against the rules).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final

from . import families
from .judges import _INVISIBLE_CHARS, _LONG_RUN_CHARS, _RUN_RE, _SHORT_PASSWORD_FLAGS
from .rules import comparisons, flags, headers, key_files, named_values, opaque, tokens, urls
from .scan import Scan

# --------------------------------------------------------------------------- the prefilter

#: Every rule's trigger in one regex, on the LOWER-CASED text: a word a sensitive name, query
#: name, header, command or family keyword holds (each name rule judges a name holding one of
#: these words: :data:`rules.SECRET_COMPOUNDS`, :data:`rules.SECRET_QUERY_NAMES` … all do),
#: a password command's short flag, and ``%`` or an invisible character (a name may hide its
#: word behind them: ``client%5Fs%65cret``, ``se\u200bcret``). A text where this finds nothing
#: and that holds no run of :data:`MIN_VENDOR_RUN_CHARS` token characters (where every token
#: rule matches) has nothing any built-in rule masks. The suite checks this against the rules
#: (tests/test_redact_prefilter.py).
#: (Its words grouped by first character: the engine tests each first character once, not once
#: per word; only whether it finds something is read. 20,000 ordinary lines: ~0.063 s ->
#: ~0.045 s.)
_ANY_RULE_RE: Final = re.compile(
    r"k(?:ey|ind:)|token|s(?:ecret|ig|qlplus|qlldr)|l(?:ogin|icen)|a(?:uth|ccess)"
    r"|c(?:red|v[cv]|ode|rumb|ookie)|jwt|number|p(?:at|w|ass)|b(?:earer|undle_)|://|-u|rman"
    r"|expdp|impdp|%"
    rf"|[{_INVISIBLE_CHARS}]"
    r"|[ \t]-[" + "".join(sorted({f[-1].lower() for f in _SHORT_PASSWORD_FLAGS})) + "]"
)


def nothing_to_find(scan: Scan) -> bool:
    """Whether no built-in rule can find a credential in the text (see :data:`_ANY_RULE_RE`)."""
    return _RUN_RE.search(scan.text) is None and _ANY_RULE_RE.search(scan.lowered()) is None


# --------------------------------------------------------------------------- the rules


@dataclass(frozen=True)
class Prefilter:
    """When a rule's finder runs: every condition given holds (each one C-level search)."""

    #: One of these occurs in the text (empty: no word needed).
    any_of: tuple[str, ...] = ()
    #: ... in the lower-cased text rather than the text (so does :attr:`pattern`).
    lowered: bool = False
    #: This pattern finds a match.
    pattern: re.Pattern[str] | None = None
    #: The text holds a run of token characters at least this long (0: not needed).
    min_run: int = 0


#: No prefilter: the finder's own search is its prefilter.
ALWAYS: Final = Prefilter()


@dataclass(frozen=True)
class Rule:
    """One rule: its name, its prefilter and its finder."""

    name: str
    prefilter: Prefilter
    find: Callable[[Scan], None]


def _family_finder(
    find: Callable[[str, str], Iterator[families.Span]],
) -> Callable[[Scan], None]:
    """A finder of :mod:`.families` (spans yielded, not added) as a pipeline finder; it reads
    the scan's lower-cased text (one copy per text for every rule)."""

    def finder(scan: Scan) -> None:
        for start, end, kind in find(scan.text, scan.lowered()):
            if kind == families.OVERFLOW:
                scan.over_budget(start)
            else:
                scan.add(start, end, kind == families.WHOLE)

    return finder


#: Every built-in rule, by family.
PIPELINE: Final[tuple[Rule, ...]] = (
    # key files
    Rule("pem-private-keys", Prefilter(any_of=("-----BEGIN",)), key_files.pem_blocks),
    # name = value in every syntax
    Rule("assignments", ALWAYS, named_values.assignments),
    # comparisons
    Rule("comparisons", Prefilter(any_of=("==", "!=")), comparisons.comparisons),
    # name = value in markup
    Rule("markup", Prefilter(any_of=("<", "value")), named_values.markup),
    # command-line flags
    Rule("cli-flags", ALWAYS, flags.cli_flags),
    Rule("cli-users", Prefilter(any_of=("-u",)), flags.cli_users),
    Rule("openssl-passwords", Prefilter(any_of=("pass:",)), flags.openssl_passwords),
    Rule("netrc-passwords", Prefilter(any_of=("password",)), flags.netrc_passwords),
    Rule("slash-passwords", Prefilter(any_of=("/",)), flags.slash_passwords),
    Rule("command-passwords", Prefilter(any_of=_SHORT_PASSWORD_FLAGS), flags.command_passwords),
    # headers and cookies
    Rule("authorization", ALWAYS, headers.headers),
    Rule("bare-bearer", Prefilter(any_of=("earer",)), headers.bare_bearers),
    # URLs and query strings
    Rule("url-userinfo", Prefilter(any_of=("://",)), urls.url_userinfo),
    Rule("url-hash-passwords", Prefilter(any_of=("=#",)), urls.url_hash_passwords),
    Rule("query-params", ALWAYS, urls.query_params),
    # a password word, a rule, a value
    Rule("ruled-passwords", Prefilter(any_of=("--", "->", "=>")), named_values.ruled_passwords),
    # vendor tokens
    Rule("vendor-tokens", ALWAYS, tokens.tokens),
    # bare high-entropy tokens (a run of 20+ token characters)
    Rule("opaque-tokens", Prefilter(min_run=_LONG_RUN_CHARS), opaque.opaque),
    Rule(
        "code-literals",
        Prefilter(any_of=("'", '"', "`"), min_run=_LONG_RUN_CHARS),
        opaque.code_literals,
    ),
    Rule("prose-keys", Prefilter(min_run=_LONG_RUN_CHARS), opaque.prose_keys),
    # the families of :mod:`.families`
    *(
        Rule(
            family.name,
            Prefilter(any_of=family.words, lowered=family.on_lowered, pattern=family.prefilter),
            _family_finder(family.find),
        )
        for family in families.PIPELINE
    ),
)


#: :data:`PIPELINE` unpacked for :func:`run` (each text passes every prefilter: no attribute
#: lookups or method calls per rule on the way).
_STEPS: Final = tuple(
    (r.prefilter.any_of, r.prefilter.lowered, r.prefilter.pattern, r.prefilter.min_run, r.find)
    for r in PIPELINE
)


def run(scan: Scan) -> None:
    """Every rule of :data:`PIPELINE` whose prefilter admits the text, on ``scan``: each of
    the prefilter's conditions holds (one of its words occurs, its pattern finds a match, the
    text holds a run of token characters that long)."""
    text = scan.text
    lowered = scan.lowered()  # (computed once per text: the prefilter read it already)
    for words, on_lowered, pattern, min_run, find in _STEPS:
        target = lowered if on_lowered else text
        if words:
            for word in words:
                if word in target:
                    break
            else:
                continue
        if pattern is not None and pattern.search(target) is None:
            continue
        if min_run and not scan.has_run(min_run):
            continue
        find(scan)

"""Rule family ``command-line flags``: the values of sensitive flags and password options.

Invariant: each finder here is one rule of :mod:`..pipeline` (its prefilter there): a
sensitive ``--flag value``/``-flag=value`` (:func:`cli_flags`), ``curl -u user:password``,
``openssl … pass:``, ``.netrc``'s ``password``, ``sqlplus user/password@db``, and the short
password flags of the commands in :data:`..data.CLI_PASSWORD_COMMANDS` (``mysql -p…``); each
is driven by one ``finditer`` or ``str.find`` and bounded by the scan's candidate budget and
:data:`MAX_COMMAND_CHARS`. Passwords are masked whole.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

from .. import data as rules
from ..judges import (
    _SHORT_PASSWORD_FLAGS,
    MAX_NAME_CHARS,
    MAX_URL_PASSWORD_CHARS,
    MAX_URL_USER_CHARS,
    _is_reference,
    is_password_name,
    is_sensitive_name,
)
from ..scan import Scan

# ``--name=`` or ``--name <blanks>``; the ``--`` does not continue a word or a longer dash run.
# One dash also (``-storepass v``, ``-Password v``): then the name has 4+ characters and must
# be a password's (checked in Python), so ``-o file`` or ``-name x`` are never taken.
_CLI_FLAG_RE: Final = re.compile(
    r"-(?<![A-Za-z0-9_\-]-)(?P<dashes>-?)"
    rf"(?P<name>[A-Za-z][A-Za-z0-9_\-]{{0,{MAX_NAME_CHARS - 1}}})"
    r"(?P<sep>=|[ \t]+)"
)


def _command_table() -> dict[str, str]:
    table: dict[str, str] = {}
    for rule in rules.CLI_PASSWORD_COMMANDS:
        for command in rule.commands:
            table[command] = rule.flags
    return table


_COMMAND_FLAGS: Final = _command_table()


# Command words as typed (lower case, or capitalised: ``PsExec``); one literal alternative per
# word and the word boundary checked after it, so the regex skips ahead to their first letters.
_PASSWORD_COMMAND_RE: Final = re.compile(
    r"(?P<cmd>"
    + "|".join(re.escape(w) for w in sorted(_COMMAND_FLAGS, key=len, reverse=True))
    + r")(?:\.exe)?(?![A-Za-z0-9_.\-])"
)


#: A blank then one of those flags: where a password command's flag may start (one pass).
#: Matched from its ``-`` (the blank is behind it): the engine skips ahead to a literal, where
#: a blank first (a class) is tried at every position (a 10 MB message: ~0.035 s -> ~0.005 s).
_PASSWORD_FLAG_START_RE: Final = re.compile(
    "-(?<=[ \t]-)[" + "".join(sorted({f[-1] for f in _SHORT_PASSWORD_FLAGS})) + "]"
)


# A command ends at a line break, a pipe, ``;`` or ``&&``.
_COMMAND_END_RE: Final = re.compile(r"[\r\n|;]|&&")


# A short flag: ``-p`` alone or with its value glued (``-pSECRET``, ``-p'x'``).
_SHORT_FLAG_RE: Final = re.compile(r"(?<![^ \t])-(?P<flag>[A-Za-z])")


# ``openssl … -passin pass:SECRET`` (``env:``/``file:`` name where the secret is, not it).
_OPENSSL_PASS_RE: Final = re.compile(r"-pass(?:in|out|word)?[ \t]+pass:(?P<value>[^\s\"']+)")


_NETRC_RE: Final = re.compile(
    r"\b(?:machine[ \t]+\S{1,256}|default)(?:\s{1,64}(?:login|account|port)[ \t]+\S{1,256}){0,3}"
    r"\s{1,64}password[ \t]+(?P<value>\S{1,256})"
)


_SLASH_PASSWORD_RE: Final = re.compile(
    r"\b(?:sqlplus|rman|expdp|impdp|sqlldr)(?:[ \t]+-\w+)*[ \t]+\"?[A-Za-z0-9_$#]{1,64}"
    r"/(?P<value>[^\s@/\"]{1,256})(?=[@\s\"]|$)"
)


#: Longest command line (from its command word) searched for a password flag.
MAX_COMMAND_CHARS: Final = 1_000


# ``curl -u user:password`` / ``--user user:password``.
# The user may be empty (``-u :password``) and the password quoted on its own
# (``--user name:'password'``).
_CLI_USER_RE: Final = re.compile(
    r"-(?<![A-Za-z0-9_\-]-)(?:u|-user)(?:[ \t]+|=)\\?[\"']?"
    rf"[^\s:\"'\\]{{0,{MAX_URL_USER_CHARS}}}:"
    rf"(?:(?P<q>[\"'])(?P<quoted>[^\"'\r\n]{{1,{MAX_URL_PASSWORD_CHARS}}})(?P=q)"
    rf"|(?P<value>[^\s\"'\\]{{1,{MAX_URL_PASSWORD_CHARS}}}))"
)


def cli_flags(scan: Scan) -> None:
    text = scan.text
    for m in scan.within_budget(_CLI_FLAG_RE.finditer(text)):
        name = m.group("name")
        if not is_sensitive_name(name) or (
            not m.group("dashes") and (len(name) < 4 or not is_password_name(name))
        ):
            continue
        whole = is_password_name(name)
        if m.group("sep") == "=" and text[m.end() : m.end() + 1] in (" ", "\t", ""):
            continue  # "the option --passphrase= can be empty"
        found = scan.value_at(m.end(), whole)
        if found is None:
            continue
        start, end, quoted = found
        value = text[start:end]
        if not value.strip() or (not quoted and value.startswith("-")):
            continue  # ``--password-stdin --user x``: the next flag is not the value
        if not quoted and value.lower() in rules.PROSE_WORDS:
            continue  # "use either --password or --password-file"
        if not _is_reference(value, None):  # a flag's value is never a variable name
            scan.add(start, end, whole)


def cli_users(scan: Scan) -> None:
    """The password of ``curl -u user:password`` / ``--user`` (masked whole)."""
    scan.values(_CLI_USER_RE, whole=True, literal=True)


def openssl_passwords(scan: Scan) -> None:
    """``openssl … -passin pass:…``: the password (masked whole)."""
    scan.values(_OPENSSL_PASS_RE, whole=True)


def netrc_passwords(scan: Scan) -> None:
    """``machine host login user password …`` (.netrc): the password (masked whole)."""
    scan.values_at_words(rules.NETRC_WORDS, _NETRC_RE)


def slash_passwords(scan: Scan) -> None:
    """``sqlplus user/password@db`` and its kin: the password (masked whole)."""
    scan.values_at_words(rules.SLASH_PASSWORD_COMMANDS, _SLASH_PASSWORD_RE)


def command_passwords(scan: Scan) -> None:
    """``mysql -pSECRET``, ``sshpass -p x``, ``redis-cli -a x`` … (the command decides which
    short flag is a password): the value of the first such flag after the command word."""
    text = scan.text
    for m in scan.within_budget(password_command_words(scan)):
        if m.start() and text[m.start() - 1] in rules.COMMAND_GLUE:
            continue
        flags = _COMMAND_FLAGS[m.group("cmd").lower()]
        stop = _COMMAND_END_RE.search(text, m.end(), m.end() + MAX_COMMAND_CHARS)
        limit = stop.start() if stop is not None else min(len(text), m.end() + MAX_COMMAND_CHARS)
        for flag in _SHORT_FLAG_RE.finditer(text, m.end(), limit):
            if flag.group("flag") not in flags:
                continue
            pos = flag.end()
            found = scan.value_at(pos, whole=True) if pos < limit else None
            if found is None:
                continue
            start, end, quoted = found
            value = text[start:end]
            if not value.strip() or (not quoted and value.startswith("-")):
                continue
            if not _is_reference(value, None):
                scan.add(start, end, whole=True)
            break


def password_command_words(scan: Scan) -> Iterator[re.Match[str]]:
    """The command words (on the lower-cased text) that a password flag follows on the same
    line within :data:`MAX_COMMAND_CHARS`: the word regex runs only in the windows before
    the flags (found with ``str.find``), not over the whole text."""
    text = scan.text
    lowered = scan.lowered()
    window_end = -1
    window_start = 0
    for flag in _PASSWORD_FLAG_START_RE.finditer(text):
        flag_pos = flag.start() - 1  # (the blank before the ``-``)
        line_start = text.rfind("\n", max(0, flag_pos - MAX_COMMAND_CHARS), flag_pos) + 1
        start = max(line_start, flag_pos - MAX_COMMAND_CHARS)
        if start <= window_end:
            window_end = flag_pos
            continue
        if window_end >= 0:
            yield from _PASSWORD_COMMAND_RE.finditer(lowered, window_start, window_end)
        window_start, window_end = start, flag_pos
    if window_end >= 0:
        yield from _PASSWORD_COMMAND_RE.finditer(lowered, window_start, window_end)

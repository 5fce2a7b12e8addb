"""Rule family ``name = value in every syntax``: the value of a sensitive name.

Invariant: :func:`assignments` finds every ``name<sep>value`` whose name is sensitive
(:func:`..judges.is_sensitive_name`; a weak name only with a random-looking value) in the
syntaxes of env files, JSON/YAML/TOML, code declarations, make, CSV and setter calls;
:func:`markup` the same in XML elements and ``<add key value>``; :func:`ruled_passwords` a
password word, a rule of dashes or arrows and one word ending the line. Each is driven by one
search of the lower-cased text that never rescans a taken value, bounded by the scan's
candidate budget; references, placeholders and code are not values.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

from .. import data as rules
from ..judges import (
    _BLANKS,
    _NAME_CHARS,
    _NAME_WORD_RE,
    _PUBLIC_HASH_PREFIXES,
    _UUID_RE,
    MAX_NAME_CHARS,
    MAX_SEPARATOR_BLANKS,
    MIN_RANDOM_LITERAL_CHARS,
    _decode_name,
    _is_reference,
    _looks_like_credential,
    is_password_name,
    is_sensitive_name,
    is_weak_secret_name,
    looks_random,
    start_of_name,
)
from ..scan import Scan

# In code (``token = nextchar``, ``Token = Ignore + PlainToken``): blanks around ``=`` and a value
# that is an identifier without digits, or any identifier called or indexed, is an expression.
_CODE_VALUE_RE: Final = re.compile(
    r"[A-Za-z_][A-Za-z_.]*$|[A-Za-z_][A-Za-z0-9_.]*[(\[]|[a-z_][a-z0-9]*(?:_[a-z0-9]+)+$"
)


# The value of a ``*_KEY`` constant that names a key instead of holding one
# (``HOST_KEY = 'HTTP_HOST'``, ``SSE_KEY = 'fs.s3.enableServerSideEncryption'``, ``'-e'``).
_KEY_NAME_VALUE_RE: Final = re.compile(
    r"-{1,2}[A-Za-z][\w\-]*|_*[A-Za-z][A-Za-z0-9]*(?:[_.][A-Za-z0-9]+)+"
)


_PAYMENT_VALUE_RE: Final = re.compile(r"[0-9][0-9 \-]*")


def _is_payment_label(name: str, value: str) -> bool:
    """``security_code="CVV2"``: a payment name whose value is not made of digits."""
    words = _NAME_WORD_RE.findall(name)
    return (
        bool(words)
        and words[-1].lower() in rules.PAYMENT_WORDS
        and not is_password_name(name)
        and _PAYMENT_VALUE_RE.fullmatch(value) is None
    )


def _is_plain_password(text: str, value: str, end: int) -> bool:
    """``password: hunterpass`` (YAML): one plain word that ends its line is a password, unless
    it describes the field (``password: string``, ``password: required``)."""
    line_end = text.find("\n", end)
    rest = text[end : len(text) if line_end < 0 else line_end]
    return value.lower() not in rules.DESCRIPTIVE_VALUES and not rest.strip(" \t\r,}")


# ``=``, ``:``, ``:=``, ``=>``, make's ``::=`` ``:::=`` ``?=`` ``+=``, PHP's ``.=``, and ``,``
# (``setProperty("NAME", "value")``, CSV ``name,value,``; checked further in Python).
# A blank before a quoted value is one too (``private_key 'v';``), if a ``;`` follows the value.
_SEPARATOR: Final = r"(?P<sep>:{1,3}=|[?+.]=|=>|=(?![=~])|:(?![:=])|,|[ \t](?=[ \t]{0,8}[\"']))"


# A type between a name and its ``=`` (Go ``var apiToken string =``, Python ``API_KEY: str =``).
_TYPE_ANNOTATION: Final = (
    r"(?:[ \t]{0,8}:[ \t]{0,8}(?:str|string|String|&str|SecretStr)(?=[ \t]{0,8}=)"
    r"|[ \t]{1,8}(?:string|String|str|SecretString)(?=[ \t]{0,8}=))?"
)


# The END of a sensitive-looking name and its separator: a name ending in key/token/secret/pwd
# or holding password/passwd/passphrase, an optional closing quote (``"apiKey":``), ``=``,
# ``:``, ``:=`` or ``=>``. The start of the name is then read backwards
# (:func:`..judges.start_of_name`): anchoring on the keyword keeps the scan fast on prose, where
# almost every word starts a name but few names are sensitive.
_ASSIGN_TAIL_RE: Final = re.compile(
    # matched on the LOWER-CASED text (:meth:`_Scan.lowered`): a literal alternation runs ~8x
    # faster than case-insensitive groups, and lower-casing keeps every position
    # (the keywords grouped by first character, in the same order within a group: the
    # engine tests each first character once, not once per keyword; the same matches, as
    # two keywords with different first characters never match at one position; the
    # search over a 10 MB message: ~0.17 s -> ~0.13 s)
    r"(?P<kw>key|token|s(?:ecret|ig)|l(?:ogin|icense)|auth|c(?:redentials?|v[cv]|ode|rumb"
    r"|ookie)|jwt|number|p(?:at|wd|ass(?:word|wd|phrase)?"
    # the rest of a *PASSWORD* name, taken atomically: (?=(...))(?P=...) never backtracks
    rf"(?=(?P<rest>[{_NAME_CHARS}]{{0,{MAX_NAME_CHARS}}}))(?P=rest)))"
    # an index or an encoding after the keyword (``secretA``, ``api_key_2``, ``secret_value``)
    r"(?P<suffix>[_.\-]?(?:value|val|string|str|b64|base64|hex|raw|plaintext|plain|bytes"
    r"|[0-9]{1,2}|[a-z])(?![a-z0-9]))?"
    r"(?P<quote>\\?[\"'])?(?:\[\]|\])?" + _TYPE_ANNOTATION.lower() + _BLANKS + _SEPARATOR
)


# A name right after one of these is not an assignment: a name after ``? & #`` is a URL
# parameter (its own rule). ``$NAME`` is one only with ``=`` (PHP, Perl, PowerShell:
# ``$password = "…"``); ``$NAME:`` and ``$NAME,`` are shell expansions in prose.
_NOT_BEFORE_NAME: Final = "?&#"


# XML: ``<apiToken>value</apiToken>`` (the value may span lines) and .NET config
# ``<add key="ApiKey" value="…"/>`` (also ``name="…" value="…"``).
MAX_XML_NAME_CHARS: Final = 64


#: Longest element text taken as a value (longer text is content, not a credential).
MAX_XML_VALUE_CHARS: Final = 4096


_XML_ELEMENT_RE: Final = re.compile(
    rf"<(?P<name>[A-Za-z_][A-Za-z0-9_.\-]{{0,{MAX_XML_NAME_CHARS - 1}}})(?:[ \t][^<>]{{0,256}})?>"
    rf"(?P<value>[^<]{{1,{MAX_XML_VALUE_CHARS}}})</(?P=name)>"
)


_XML_VALUE_ATTRIBUTE_RE: Final = re.compile(r"value[ \t]*=[ \t]*[\"']")


_XML_KEY_VALUE_RE: Final = re.compile(
    r"(?:key(?<![A-Za-z0-9_]key)|name(?<![A-Za-z0-9_]name))[ \t]*=[ \t]*(?P<q>[\"'])"
    rf"(?P<name>[A-Za-z_][A-Za-z0-9_.:\-]{{0,{MAX_XML_NAME_CHARS - 1}}})(?P=q)"
    r"[ \t]+value[ \t]*=[ \t]*(?P<q2>[\"'])(?P<value>[^\"'\r\n]*)(?P=q2)"
)


_CSS_COLOUR_RE: Final = re.compile(r"#(?:[0-9a-fA-F]{3,4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})")


def _is_uuid_key(name: str, value: str) -> bool:
    """A UUID under a weak name whose last word says key (``sauce_key: "<uuid>"``): Sauce Labs
    and Heroku keys are UUIDs (:data:`rules.UUID_KEY_LAST_WORDS`)."""
    words = [w.lower() for w in _NAME_WORD_RE.findall(name)]
    return (
        len(words) >= 2
        and words[-1] in rules.UUID_KEY_LAST_WORDS
        and _UUID_RE.fullmatch(value.strip("\"'")) is not None
    )


# YAML block scalar indicators (``token: |`` then the value on the next, indented line).
_BLOCK_INDICATORS: Final = frozenset({"|", ">", "|-", ">-", "|+", ">+"})


# A password word, blanks, a rule (``----``, ``->``, ``=>``), blanks, one word ending the line.
# Runs on the LOWER-CASED text (literal words first: the scan skips ahead to them); the
# character before the word is checked in Python.
_RULED_PASSWORD_RE: Final = re.compile(
    r"pass(?:word|wd|phrase)[ \t]{1,40}(?:-{2,8}>?|=>|->)[ \t]{1,40}"
    r"(?P<value>[^\s]{4,128})[ \t]*(?=\r?\n|$)"
)


# A type path before a name (``AWS::IAM::``, ``Foo::Bar::``): a C++/CloudFormation type.
_TYPE_PATH_RE: Final = re.compile(r"(?<![A-Za-z0-9_:])[A-Z][A-Za-z0-9_]*::(?:[A-Za-z0-9_]+::)*$")


# A YAML tag standing for the value's type (``!!binary``, ``!!str``) or a function (``!Ref``).
_YAML_TAG_RE: Final = re.compile(r"!!?[A-Za-z][\w\-]{0,32}")


def assignments(scan: Scan) -> None:
    text = scan.text
    budget = scan.budget
    lowered = scan.lowered()
    search = _ASSIGN_TAIL_RE.search
    pos = 0
    while (m := search(lowered, pos)) is not None:
        # the next search starts after this name, or after the value taken for it (a
        # ``name=`` inside a value is part of that value): never one match per character
        # of a long value (the pattern never matches empty)
        pos = m.end()
        budget -= 1
        if budget < 0:
            scan.over_budget(m.start())
            return
        name_end = (
            m.start("quote")
            if m.group("quote")
            else m.end("suffix")
            if m.group("suffix")
            else m.end("kw")
        )
        name_start = start_of_name(text, name_end)
        if name_start < 0:
            continue  # a run of name characters longer than MAX_NAME_CHARS
        if text.startswith("-D", name_start) and name_end - name_start > 2:
            name_start += 2  # a Java system property: ``-Dsonar.password=…``
        first = text[name_start]
        sep = m.group("sep")
        before = text[name_start - 1] if name_start else ""
        if not (first.isalpha() or first == "_") or (
            (before and before in _NOT_BEFORE_NAME)
            or (before == "$" and sep in (":", ","))
            or (before == "=" and sep == ",")  # ``--tags Status=Secret,Team=x``
            or (  # ``"AWS::IAM::AccessKey": …`` (a type), not ``service::api_key: …``
                text.startswith("::", name_start - 2)
                and _TYPE_PATH_RE.search(text, max(0, name_start - MAX_NAME_CHARS), name_start)
                is not None
            )
        ):
            continue
        name = text[name_start:name_end]
        if "%" in name:
            name = _decode_name(name)
        if text.startswith("//", name_start - 2):
            continue  # ``postgres://secret:pw@`` is a URL user (its own rule)
        # a connection string's ``;Pwd=``: a password (alone, ``pwd`` is the shell's
        # current directory)
        connection = before == ";" and name.lower() in rules.CONNECTION_PASSWORD_NAMES
        # a weak name (``stripe_key``, ``sonar.login``) holds a secret only when its value
        # looks randomly generated
        weak = not connection and not is_sensitive_name(name)
        if weak and (sep == "," or not is_weak_secret_name(name)):
            continue  # (a weak name in CSV: ``LICENSE,sha256=…`` is a pip RECORD line)
        whole = connection or is_password_name(name)
        found = scan.value_at(m.end(), whole)
        if found is None and sep in ("=", ":"):
            found = scan.continuation(m.end(), whole)  # ``api_key =`` then the value, indented
        if found is None:
            continue
        start, end, quoted = found
        if sep == "," and text.startswith(_PUBLIC_HASH_PREFIXES, start):
            continue  # ``…/password.py,sha256=…,7821``: a pip RECORD line
        if sep == ",":
            # ``setProperty("NAME", "value")`` (a quoted name, a quoted value) or CSV
            # ``NAME,value,`` (no blank after the comma, the value ends at a comma)
            # (a bounded look back: the slice must not grow with the text)
            lo = max(0, name_start - 2 - MAX_SEPARATOR_BLANKS)
            opener = text[lo : name_start - 1].rstrip(" \t")[-1:]
            if (
                m.group("quote")
                and before
                and before in "\"'"
                and quoted
                and (
                    opener == "("
                    # after a ``,`` only a random-looking value: ``"password", "repository"``
                    # is a list of names
                    or (opener == "," and looks_random(text[start:end].strip("\"'"), True))
                )
            ):
                # ``setProperty("NAME", "value")``, Gradle's
                # ``buildConfigField 'String', 'API_KEY', '"value"'``
                if any(c.isspace() for c in text[start:end]):
                    continue  # ``namedtuple('Token', 'type string start')``: a word list
            elif (
                m.group("quote")
                or quoted
                or start != m.end()
                or text[end : end + 1] not in (",", "\n", "\r", "")
            ):
                continue
        if sep in (" ", "\t") and not (
            quoted and (text.startswith(";", end + 1) or scan.statement(name_start, end + 1))
        ):
            continue  # ``name "value";`` (C, Java) or alone on its line (Gradle, Ruby DSLs)
        value = text[start:end]
        if sep == ":" and not quoted and _YAML_TAG_RE.fullmatch(value):
            if not value.startswith("!!"):
                continue  # ``!Ref DbPassword``, ``!secret db_password``: a reference
            again = scan.value_at(end, whole)  # ``!!binary <base64>``: the value follows
            if again is None or "\n" in text[end : again[0]]:
                continue
            start, end, quoted = again
            value = text[start:end]
        pos = max(pos, end)  # a ``name=`` inside this value is part of it
        if sep == ":" and not quoted and value in _BLOCK_INDICATORS:
            block = scan.block_scalar(end)
            if block is not None and (whole or "…" not in text[block[0] : block[1]]):
                scan.add(block[0], block[1], whole)
            continue
        if weak and len(value) < MIN_RANDOM_LITERAL_CHARS:
            continue  # too short to look random (``key=value``): skips the checks below
        if not value.strip() or _is_reference(value, name):
            continue
        if not whole and _CSS_COLOUR_RE.fullmatch(value.strip("\"'")):
            continue  # Pygments' ``Token: "#cccccc"``: a colour (a password may be one)
        if weak:
            if looks_random(value, hex_ok=True) or _is_uuid_key(name, value):
                scan.add(start, end)
            continue
        if (
            quoted
            and not whole
            and name[-3:].lower() == "key"
            and _KEY_NAME_VALUE_RE.fullmatch(value) is not None
            and not looks_random(value)
        ):
            continue  # ``HOST_KEY = 'HTTP_HOST'``: the name of a key
        if _is_payment_label(name, value):
            continue
        if (
            sep in (":", ",")
            and not quoted
            and not _looks_like_credential(value)
            and not (sep == ":" and whole and _is_plain_password(text, value, end))
        ):
            continue
        if (
            not quoted
            and sep in ("=", "+=", ":=")
            and text[m.start("sep") - 1 : m.start("sep")] in (" ", "\t")
            and _CODE_VALUE_RE.match(value) is not None
        ):
            continue  # code: ``token = nextchar``, ``passwd = getpass(prompt)``
        if len(value) == 1 and not whole:
            continue  # ``HAS_KEY: 1``: one character is no secret
        scan.add(start, end, whole)


def key_values(text: str) -> Iterator[re.Match[str]]:
    """The matches of :data:`_XML_KEY_VALUE_RE` in ``text``, in order, as its ``finditer``
    finds them -- searched only on the lines holding a ``value=`` attribute
    (:data:`_XML_VALUE_ATTRIBUTE_RE`): every match holds one, and none holds a line break, so
    the matches of the text are those of its lines. (The pattern starts with ``key`` or
    ``name``, which the engine tries at every ``k`` and ``n``: a 10 MB message, ~0.03 s over
    the text -> ~0.005 s.)"""
    line_end = -1
    for attribute in _XML_VALUE_ATTRIBUTE_RE.finditer(text):
        at = attribute.start()
        if at < line_end:
            continue  # (a line searched already)
        line_start = text.rfind("\n", 0, at) + 1
        line_end = text.find("\n", at)
        if line_end < 0:
            line_end = len(text)
        yield from _XML_KEY_VALUE_RE.finditer(text, line_start, line_end)


def markup(scan: Scan) -> None:
    text = scan.text
    budget = scan.budget
    found: list[Iterator[re.Match[str]]] = [_XML_ELEMENT_RE.finditer(text)] if "<" in text else []
    if _XML_VALUE_ATTRIBUTE_RE.search(text) is not None:
        found.append(key_values(text))
    for matches in found:
        for m in matches:
            budget -= 1
            if budget < 0:
                scan.over_budget(m.start())
                return
            name = m.group("name")
            if not is_sensitive_name(name):
                continue
            start, end = m.start("value"), m.end("value")
            while start < end and text[start].isspace():
                start += 1
            while end > start and text[end - 1].isspace():
                end -= 1
            whole = is_password_name(name)
            if "…" in text[start:end] and not whole:
                continue  # already masked (keeps redaction idempotent)
            # (markup text and a quoted attribute are literals: never a variable's name)
            if end > start and not _is_reference(text[start:end], name, literal=True):
                scan.add(start, end, whole)


def ruled_passwords(scan: Scan) -> None:
    """``Ldap password ---- S3cret!x``: a password word, a rule of dashes or arrows, and one
    word that ends its line and holds a digit or a symbol (a table row, a note)."""
    text = scan.text
    for m in scan.within_budget(_RULED_PASSWORD_RE.finditer(scan.lowered())):
        if m.start() and (text[m.start() - 1].isalnum() or text[m.start() - 1] == "_"):
            continue
        value = text[m.start("value") : m.end("value")]
        if not value.isalpha() and not _is_reference(value, None):
            scan.add(m.start("value"), m.end("value"), whole=True)

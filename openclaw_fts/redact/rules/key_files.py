"""Rule family ``key files``: PEM private-key blocks.

Invariant: :func:`pem_blocks` finds each ``-----BEGIN … PRIVATE KEY-----`` block and records
it as one span whose mask keeps its BEGIN and END lines (the body becomes ``…redacted…``); an
unterminated block is masked to the end of its base64-looking body. Public blocks
(certificates, public keys) are not touched. One forward search: linear.
"""

from __future__ import annotations

import re
from typing import Final

from ..scan import Scan

#: Longest label between ``BEGIN`` and ``PRIVATE KEY`` (``ENCRYPTED``, ``OPENSSH``, ``RSA`` …).
MAX_PEM_LABEL_CHARS: Final = 40


_PEM_LABEL: Final = rf"[ A-Z0-9]{{0,{MAX_PEM_LABEL_CHARS}}}PRIVATE KEY(?: BLOCK)?-----"


_PEM_BEGIN_RE: Final = re.compile(r"-----BEGIN" + _PEM_LABEL)


_PEM_END_RE: Final = re.compile(r"-----END" + _PEM_LABEL)


# The body: base64 lines and ``Proc-Type:``/``DEK-Info:`` headers, possibly JSON-escaped
# (``\n``). It is matched only up to the next ``-----`` (found with ``str.find``), so each
# character is looked at by one block at most.
_PEM_BODY_RE: Final = re.compile(r"[A-Za-z0-9+/=\s:,.\\\-]*")


def pem_blocks(scan: Scan) -> None:
    text = scan.text
    pos = 0
    budget = scan.budget
    while (m := _PEM_BEGIN_RE.search(text, pos)) is not None:
        budget -= 1
        if budget < 0:
            scan.over_budget(m.start())
            return
        body_start = m.end()
        dashes = text.find("-----", body_start)
        if dashes < 0:
            dashes = len(text)
        body = _PEM_BODY_RE.match(text, body_start, dashes)
        stop = body.end() if body is not None else body_start
        closing = _PEM_END_RE.match(text, dashes) if stop == dashes else None
        if closing is not None:
            scan.spans.append((m.start(), closing.end(), len(scan.pems)))
            scan.pems.append((m.group(), closing.group()))
            pos = closing.end()
            continue
        pos = max(stop, body_start)
        while stop > body_start:  # drop trailing blanks and escaped line breaks
            if text[stop - 1].isspace():
                stop -= 1
            elif stop - 2 >= body_start and text[stop - 2 : stop] in ("\\n", "\\r"):
                stop -= 2
            else:
                break
        if stop > body_start:  # unterminated, with a body (a blank one hides nothing)
            scan.spans.append((m.start(), stop, len(scan.pems)))
            scan.pems.append((m.group(), None))

"""Rule family ``comparisons``: a quoted literal compared with a sensitive name.

Invariant: one finder, :func:`comparisons`, driven by one ``finditer`` of ``==``/``!=`` (its
prefilter in :mod:`..pipeline`: the text holds one); at each it looks at most
:data:`~..judges.MAX_NAME_CHARS` and :data:`MAX_COMPARED_LITERAL_CHARS` characters either
side, so the work is linear. ``if (password == "…")`` and ``if ("…" != apiKey)`` both mask the
literal; an empty or symbol-only literal is not a secret.
"""

from __future__ import annotations

import re
from typing import Final

from ..judges import _NAME_CHARS, MAX_NAME_CHARS, is_password_name, is_sensitive_name
from ..scan import Scan

# Comparisons with a literal (``if (api_key == "…")``, ``if ("…" !== password)``): found by
# their operator, then a sensitive name on one side and a quoted literal on the other.
#: Longest quoted literal compared with a sensitive name.
MAX_COMPARED_LITERAL_CHARS: Final = 256


_COMPARISON_RE: Final = re.compile(r"(?:==|!=)=?")


#: How every match of :data:`_COMPARISON_RE` starts.
_OPERATORS: Final = ("==", "!=")


# A word of a sensitive name (:func:`is_sensitive_name` decides), looked for near ``==``.
_COMPARED_HINT_RE: Final = re.compile(r"key|token|secret|pass|pwd|auth|cred|jwt|cookie|sig")


_COMPARED_NAME_AFTER_RE: Final = re.compile(rf"[A-Za-z_][{_NAME_CHARS}]{{0,{MAX_NAME_CHARS - 1}}}")


_COMPARED_NAME_BEFORE_RE: Final = re.compile(
    rf"(?<![{_NAME_CHARS}])[A-Za-z_][{_NAME_CHARS}]{{0,{MAX_NAME_CHARS - 1}}}\Z"
)


_COMPARED_LITERAL_AFTER_RE: Final = re.compile(
    rf"(?P<q>[\"'`])(?P<value>[^\"'`\r\n]{{1,{MAX_COMPARED_LITERAL_CHARS}}})(?P=q)"
)


_COMPARED_LITERAL_BEFORE_RE: Final = re.compile(
    rf"(?P<q>[\"'`])(?P<value>[^\"'`\r\n]{{1,{MAX_COMPARED_LITERAL_CHARS}}})(?P=q)\Z"
)


def comparisons(scan: Scan) -> None:
    """A quoted literal compared with a sensitive name, either side of ``==``/``!=``."""
    text = scan.text
    lowered = scan.lowered()
    # (tried only where ``==`` or ``!=`` starts, found with ``str.find``: the regex begins
    # with an alternation, which the engine tries at every position; a 10 MB message:
    # ~0.024 s -> ~0.01 s)
    found = scan.matches_at(_COMPARISON_RE, _OPERATORS, 0)
    for m in scan.within_budget(found):
        near = lowered[max(0, m.start() - MAX_NAME_CHARS) : m.end() + MAX_NAME_CHARS]
        if _COMPARED_HINT_RE.search(near) is None:
            continue  # no sensitive word on either side: most ``==`` in code
        left, right = m.start(), m.end()
        while left > 0 and text[left - 1] in " \t":
            left -= 1
        while right < len(text) and text[right] in " \t":
            right += 1
        back = max(0, left - MAX_COMPARED_LITERAL_CHARS - 2)
        name = _COMPARED_NAME_BEFORE_RE.search(text, max(0, left - MAX_NAME_CHARS), left)
        literal = _COMPARED_LITERAL_AFTER_RE.match(text, right)
        if name is None or literal is None:
            name = _COMPARED_NAME_AFTER_RE.match(text, right)
            literal = _COMPARED_LITERAL_BEFORE_RE.search(text, back, left)
        if name is None or literal is None or not is_sensitive_name(name.group()):
            continue
        value = literal.group("value")
        if not value.strip() or not any(c.isalnum() for c in value):
            continue  # ``password == ""``, ``token != '-'``
        whole = is_password_name(name.group())
        scan.value(literal.start("value"), literal.end("value"), name.group(), whole, True)

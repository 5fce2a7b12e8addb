"""Relative time spans for the ``since`` / ``until`` filters: ``90m``, ``24h``, ``7d``, ``2w``.

Invariant: pure — no clock and no I/O. :func:`span_ms` reads a span's length in milliseconds
(None when the text is not a span); :func:`back_from` turns it into an epoch-ms bound counted
back from the ``now`` its caller read from its own clock. A span is digits followed by one unit
letter (surrounding blanks ignored, nothing else allowed: ``7 d``, ``1.5h``, ``-2d`` and ``7D``
are not spans), at most :data:`MAX_SPAN_MS` long. This is the plugin's extension of OpenClaw's
``sessions_search`` arguments (docs/tools.md, "Relative time"); anything that is not a span is
read as before (epoch ms or ISO 8601).
"""

from __future__ import annotations

import re

MINUTE_MS = 60_000
HOUR_MS = 60 * MINUTE_MS
DAY_MS = 24 * HOUR_MS
WEEK_MS = 7 * DAY_MS
#: The unit letters of a span and their lengths (minutes, hours, days, weeks).
SPAN_UNITS_MS = {"m": MINUTE_MS, "h": HOUR_MS, "d": DAY_MS, "w": WEEK_MS}
#: The longest span taken (about 1,000 years): longer ones are refused as malformed, so a bound
#: counted back from now always stays within the range of a timestamp.
MAX_SPAN_MS = 52_000 * WEEK_MS
#: Examples named in the tools' error messages and schema descriptions.
SPAN_EXAMPLES = "90m, 24h, 7d, 2w"
#: Digits of a span's count: enough for :data:`MAX_SPAN_MS` in minutes, few enough that a
#: hostile string of a million digits is refused by the pattern before any arithmetic.
MAX_SPAN_DIGITS = 12

_SPAN_RE = re.compile(rf"([0-9]{{1,{MAX_SPAN_DIGITS}}})([{''.join(SPAN_UNITS_MS)}])\Z")


def span_ms(text: str) -> int | None:
    """The length in ms of the span ``text`` (``"90m"`` → 5,400,000); None when ``text`` is not
    a span or is longer than :data:`MAX_SPAN_MS`."""
    match = _SPAN_RE.match(text.strip())
    if match is None:
        return None
    length = int(match.group(1)) * SPAN_UNITS_MS[match.group(2)]
    return length if length <= MAX_SPAN_MS else None


def back_from(now_ms: int, text: str) -> int | None:
    """The epoch-ms instant ``text`` (a span) before ``now_ms``; None when it is not a span."""
    length = span_ms(text)
    return None if length is None else now_ms - length

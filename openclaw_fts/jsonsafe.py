"""Strict JSON in, strict JSON out: no ``NaN``/``Infinity`` ever crosses the plugin's edges.

Invariant: text the plugin accepts as an event (an import line, an appended event) is standard
JSON (RFC 8259): :func:`loads_strict` refuses ``NaN``, ``Infinity``, ``-Infinity``, numbers that
overflow a double (``1e400``), integers longer than :data:`MAX_INT_DIGITS` digits and nesting
Python cannot parse, each as a :class:`JsonLineError` whose message names the reason and
never quotes the input. Everything the plugin writes as JSON is produced with
``allow_nan=False`` semantics (:func:`dumps`); a non-finite number that reached the database
anyway (rows written behind the plugin's back, or by a version that accepted them) is read back
as ``null`` (:func:`loads_stored`). The rules are documented in ``docs/import.md``.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

#: Longest integer literal accepted, in digits, unless the interpreter was set otherwise: Python
#: refuses to convert longer ones (``sys.get_int_max_str_digits()``); no transcript needs more.
MAX_INT_DIGITS = 4300
#: The UTF-8 byte-order mark some editors write at the start of a file.
UTF8_BOM = b"\xef\xbb\xbf"


class JsonLineError(ValueError):
    """A text that is not strict JSON; the message is the reason (no input is quoted)."""


def _refuse_constant(name: str) -> Any:
    raise JsonLineError(f"non-finite number {name} (not valid JSON)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JsonLineError("number out of range (overflows a double-precision float)")
    return value


def loads_strict(text: str) -> Any:
    """Parse standard JSON; raise :class:`JsonLineError` for anything else (see module)."""
    try:
        return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    except JsonLineError:
        raise
    except json.JSONDecodeError as exc:
        if text.startswith("\ufeff"):
            raise JsonLineError("byte-order mark (U+FEFF) before the JSON value") from None
        # Some of json's messages end with "at" ("Unterminated string starting at"): the
        # column completes them instead of doubling the word.
        where = f"{exc.msg} column" if exc.msg.endswith(" at") else f"{exc.msg} at column"
        raise JsonLineError(f"malformed JSON ({where} {exc.colno})") from None
    except RecursionError:
        raise JsonLineError("nested too deeply to parse") from None
    except ValueError:
        # The only other ValueError json raises: an integer literal over Python's digit limit.
        raise JsonLineError(f"integer with more than {_int_digit_limit()} digits") from None


def _int_digit_limit() -> int:
    get = getattr(sys, "get_int_max_str_digits", None)
    limit = get() if get is not None else 0
    return int(limit) if limit else MAX_INT_DIGITS


def _none_for_constant(name: str) -> Any:
    return None


def _float_or_none(text: str) -> float | None:
    value = float(text)
    return value if math.isfinite(value) else None


def loads_stored(text: str | bytes) -> Any:
    """Parse a stored event for output: non-finite numbers become ``null`` (see module)."""
    return json.loads(text, parse_constant=_none_for_constant, parse_float=_float_or_none)


def dumps(value: Any, **kwargs: Any) -> str:
    """``json.dumps`` that refuses non-finite numbers (raises ``ValueError``) — strict JSON."""
    return json.dumps(value, allow_nan=False, **kwargs)


def stored_event(raw: Any) -> dict[str, Any]:
    """A stored event's JSON as a dict; ``{}`` for a row that is broken, absurdly deep or not an
    object (written behind the plugin's back: not indexable). Non-finite numbers read as null:
    what history returns must stay strict JSON (docs/import.md)."""
    try:
        event = loads_stored(raw) if raw is not None else {}
    except (ValueError, RecursionError):
        return {}
    return event if isinstance(event, dict) else {}

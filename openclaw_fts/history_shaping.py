"""Shaping of transcript messages for ``sessions_history`` (docs/tools.md). Pure: no SQL.

Invariant: :func:`sanitize_message` never mutates its input and returns a new message in which
nothing the caller may not see survives — ``details``, ``usage`` and ``cost`` are gone, thinking
signatures and other opaque replay payloads are gone, image data is replaced by its decoded
size, and every text (string content, text/thinking blocks, tool-call arguments, tool results,
nested blocks) has been redacted (:mod:`openclaw_fts.redact`) BEFORE being cut to
:data:`MAX_HISTORY_TEXT_CHARS` UTF-16 code units, so a cut can never expose part of a secret.
Any field not named here passes through unchanged (copied), except that a value nested deeper than
:data:`MAX_CONTENT_DEPTH` levels is replaced by :data:`TOO_DEEP_PLACEHOLDER`.
:func:`fit_to_budget` keeps a contiguous run of the given items whose JSON (as
``json.dumps(items, ensure_ascii=False)`` encodes it in UTF-8) fits the byte budget, or a single
placeholder.

Lengths are counted as JavaScript counts them, in UTF-16 code units (:func:`tokens.utf16_len`:
a character above U+FFFF, such as most emoji, counts 2), as OpenClaw's cut does. A cut never
splits a grapheme cluster (letter + combining marks, emoji ZWJ sequence, flag, CRLF) nor a
surrogate pair.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any, Final

import regex  # type: ignore[import-untyped,unused-ignore]  # no stubs in the venv

from .redact import DEFAULT_REDACTOR, Redactor, field_mask
from .tokens import clean_text, utf16_fit, utf16_len

__all__ = [
    "HISTORY_TRUNCATION_SUFFIX",
    "MAX_HISTORY_BYTES",
    "MAX_HISTORY_TEXT_CHARS",
    "OMITTED_MESSAGE",
    "SanitizedMessage",
    "base64_decoded_size",
    "cut_graphemes",
    "fit_to_budget",
    "is_hidden_from_history",
    "is_tool_message",
    "json_size",
    "sanitize_message",
]

#: UTF-16 code units of one text kept in a history message (OpenClaw's
#: ``SESSIONS_HISTORY_TEXT_MAX_CHARS``, compared with JavaScript's ``length``).
MAX_HISTORY_TEXT_CHARS: Final = 4000
#: Appended to a text that was cut (OpenClaw).
HISTORY_TRUNCATION_SUFFIX: Final = "\n…(truncated)…"
#: UTF-8 bytes of the JSON of the returned messages (OpenClaw: 80 KiB).
MAX_HISTORY_BYTES: Final = 80 * 1024
#: Stands for a message that does not fit the budget even alone (OpenClaw).
OMITTED_MESSAGE: Final[dict[str, str]] = {
    "role": "assistant",
    "content": "[sessions_history omitted: message too large]",
}

#: Characters of a long text that are redacted before the cut: the kept 4000 plus this margin.
#: Redacting a 10 MB text whole would cost seconds, but only its start is shown. The margin is
#: longer than any construct the redactor needs to see past the cut to decide about a secret
#: that starts before it (a URL password is at most 256 characters before its ``@``; a quoted
#: value, a PEM block or a token cut by the margin is still masked as far as it goes).
REDACTION_MARGIN_CHARS: Final = 64 * 1024
#: Characters looked back from a cut for a place where a grapheme cluster surely starts (between
#: two ASCII characters other than CR LF); segmenting from there is exact and costs O(this),
#: not O(cut). Without such a place within reach the text is segmented from its start.
GRAPHEME_RESYNC_CHARS: Final = 256
#: Nesting levels of a message that are walked and copied (blocks in tool results in blocks,
#: JSON arguments, unknown fields). Real messages stay far below; a stored event may nest
#: ~950 levels (the limit of json's encoder at write time). Anything deeper than this is
#: replaced by :data:`TOO_DEEP_PLACEHOLDER` rather than passed through unredacted or
#: overflowing the interpreter stack — here or in ``json.dumps`` of the result — even when the
#: caller's own stack is already deep.
MAX_CONTENT_DEPTH: Final = 64
#: Replaces a value nested deeper than :data:`MAX_CONTENT_DEPTH`.
TOO_DEEP_PLACEHOLDER: Final = "[sessions_history omitted: nested too deeply]"

#: Message fields that are dropped (OpenClaw): tool-result details, token usage, cost.
DROPPED_MESSAGE_FIELDS: Final = frozenset({"details", "usage", "cost"})
#: Block fields dropped wherever they appear: signatures and replay payloads of reasoning.
SIGNATURE_FIELDS: Final = frozenset(
    {
        "thinkingSignature",
        "thinking_signature",
        "thoughtSignature",
        "thought_signature",
        "openclawReasoningReplay",
        "encrypted_content",
        "encryptedContent",
    }
)
#: Block types whose ``signature`` is a thinking signature (and whose ``data`` is encrypted
#: reasoning, for ``redacted_thinking``).
THINKING_BLOCK_TYPES: Final = frozenset({"thinking", "redacted_thinking", "reasoning"})
#: Roles of the messages history leaves out without ``includeTools`` (OpenClaw's
#: ``stripToolMessages`` in chat-history-text.ts removes exactly these two).
STRIPPED_TOOL_ROLES: Final = frozenset({"toolResult", "tool"})
#: Whole texts of an assistant reply that is a silent control reply, hidden from history
#: (OpenClaw's ``SUPPRESSED_CONTROL_REPLY_TOKENS``, src/gateway/control-reply-text.ts; matched
#: exactly, case-sensitively, after trimming whitespace).
SILENT_CONTROL_REPLY_TOKENS: Final = frozenset({"NO_REPLY", "ANNOUNCE_SKIP", "REPLY_SKIP"})
#: Whole texts of a control acknowledgement, hidden too (matched without regard to case).
SILENT_CONTROL_REPLY_PHRASES: Final = frozenset({"visible reply sent.", "visible reply sent"})
#: Block types whose ``text`` is an assistant's visible text (OpenClaw's display projection).
ASSISTANT_TEXT_BLOCK_TYPES: Final = frozenset({"text", "input_text", "output_text"})
#: What JavaScript's ``trim()`` removes (``\s``: Unicode spaces, line terminators, BOM).
JS_WHITESPACE: Final = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
#: Message fields naming media attached to a user turn (a row with them is never empty).
MEDIA_PATH_FIELDS: Final = ("MediaPaths", "MediaPath")
#: Block types of an image.
IMAGE_BLOCK_TYPES: Final = frozenset({"image", "input_image", "image_url"})
#: Fields of an image block that may hold a URL (redacted: presigned URLs carry signatures).
IMAGE_URL_FIELDS: Final = frozenset({"url", "image_url", "source"})
#: Message fields holding text (besides ``content``).
MESSAGE_TEXT_FIELDS: Final = frozenset({"text", "errorMessage"})
#: Block fields holding text.
BLOCK_TEXT_FIELDS: Final = frozenset({"text", "thinking", "partialJson", "output"})
#: Block and message fields holding tool-call arguments or other structured payloads whose
#: strings are redacted (and whose values under sensitive keys are masked whole).
STRUCTURED_FIELDS: Final = frozenset(
    {"arguments", "input", "args", "parameters", "tool_calls", "function_call", "functionCall"}
)

_GRAPHEME_RE: Final = regex.compile(r"\X")
_DATA_URL_RE: Final = regex.compile(r"data:[^,;]*(?:;[^,;]*)*?;base64,", regex.IGNORECASE)


@dataclass
class SanitizedMessage:
    """A message ready for ``sessions_history`` and what was done to it.

    ``content_truncated``: a text was cut, or something was left out (dropped fields,
    signatures, image data), as OpenClaw reports it. ``content_redacted``: a text changed by
    redaction.
    """

    message: dict[str, Any]
    content_truncated: bool
    content_redacted: bool


# --------------------------------------------------------------------------- cutting


def _resync_point(text: str, limit: int) -> int:
    """A position at or before ``limit`` where a grapheme cluster surely starts."""
    low = max(0, limit - GRAPHEME_RESYNC_CHARS)
    for i in range(limit, low, -1):
        before, after = text[i - 1], text[i]
        if before < "\x80" and after < "\x80" and not (before == "\r" and after == "\n"):
            return i
    return 0


def cut_graphemes(text: str, units: int) -> str:
    """``text`` cut to at most ``units`` UTF-16 code units, only between grapheme clusters.

    A cluster straddling the limit is left out whole (so a text starting with one huge cluster
    can come back empty); a surrogate pair is never split.
    """
    if len(text) <= units and utf16_len(text) <= units:
        return text
    if units <= 0:
        return ""
    limit = utf16_fit(text, units)  # the characters that fit
    start = _resync_point(text, limit)
    end = start
    for m in _GRAPHEME_RE.finditer(text, start, limit + 1):
        if m.end() > limit:
            break
        end = m.end()
    if end and "\ud800" <= text[end - 1] <= "\udbff" and "\udc00" <= text[end] <= "\udfff":
        end -= 1  # a surrogate pair kept as two code points (e.g. decoded with surrogatepass)
    return text[:end]


# --------------------------------------------------------------------------- images


def base64_decoded_size(data: str) -> int:
    """Bytes that base64 ``data`` decodes to, from its length and padding (never decoded).

    A ``data:…;base64,`` prefix and whitespace are ignored; unpadded input is counted as the
    decoder would (each 4 characters make 3 bytes, 2 or 3 left over make 1 or 2).
    """
    prefix = _DATA_URL_RE.match(data)
    start = prefix.end() if prefix else 0
    blanks = sum(data.count(c, start) for c in " \t\r\n")
    chars = len(data) - start - blanks
    tail = data.rstrip(" \t\r\n")[-2:]
    padding = 2 if tail == "==" else 1 if tail.endswith("=") else 0
    return max(0, chars * 3 // 4 - padding)


def _image_data(block: dict[str, Any]) -> tuple[str, str] | None:
    """``(where, data)`` of an image block's inline base64 data, if it has any."""
    data = block.get("data")
    if isinstance(data, str):
        return "data", data
    source = block.get("source")
    if isinstance(source, dict) and isinstance(source.get("data"), str):
        return "source", source["data"]
    url = block.get("image_url")
    if isinstance(url, dict):
        url = url.get("url")
    if isinstance(url, str) and _DATA_URL_RE.match(url):
        return "image_url", url
    return None


# --------------------------------------------------------------------------- the walk


class _Shaper:
    """Sanitizes one message, remembering whether something was cut or redacted."""

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        self.truncated = False
        self.redacted = False

    def text(self, text: str, name: str | None = None) -> str:
        """``text`` redacted then cut (``name``: the key it is stored under, if structured).
        The redaction sees the text as stored (as the index's does: a NUL or an invisible
        character inside a name is judged there), then NUL becomes a space and a lone
        surrogate U+FFFD, so the result always encodes as UTF-8."""
        if "\x00" in text:
            stored = self.redactor.redact(text)
            self.redacted = self.redacted or stored != text
            text = stored
        text = clean_text(text)
        masked = None if name is None else field_mask(name, text)
        if masked is not None:  # a credential by its key: masked whole, from its real ends
            self.redacted = True
            return masked
        window = text
        windowed = len(text) > MAX_HISTORY_TEXT_CHARS + REDACTION_MARGIN_CHARS
        if windowed:
            window = cut_graphemes(text, MAX_HISTORY_TEXT_CHARS + REDACTION_MARGIN_CHARS)
        clean = self.redactor.redact(window)
        if clean != window:
            self.redacted = True
        if windowed or (
            len(clean) > MAX_HISTORY_TEXT_CHARS // 2 and utf16_len(clean) > MAX_HISTORY_TEXT_CHARS
        ):
            self.truncated = True
            return cut_graphemes(clean, MAX_HISTORY_TEXT_CHARS) + HISTORY_TRUNCATION_SUFFIX
        return clean

    def too_deep(self) -> str:
        self.truncated = True
        return TOO_DEEP_PLACEHOLDER

    # ``depth`` is the nesting level of the value at hand: the message is 0, its fields 1,
    # content blocks 2, their fields 3 … A list or dict deeper than MAX_CONTENT_DEPTH becomes
    # TOO_DEEP_PLACEHOLDER, so no walk (here, or json.dumps of the result later) recurses
    # more than that, whatever the stored event holds and however deep the caller's stack.

    def copy(self, value: Any, depth: int, name: str | None = None) -> Any:
        """An unknown value, copied (containers to their depth limit) with every string in it
        redacted and cut: fields the plugin does not know (provider payloads, host metadata)
        are passed through, but never a credential inside them. A string or number stored
        under a sensitive key (``password``, ``apiKey`` …, ``name``) is masked whole."""
        if isinstance(value, str):
            return self.text(value, name)
        if isinstance(value, dict):
            if depth > MAX_CONTENT_DEPTH:
                return self.too_deep()
            return {
                k: self.copy(v, depth + 1, k if isinstance(k, str) else None)
                for k, v in value.items()
            }
        if name is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
            masked = field_mask(name, str(value))
            if masked is not None:
                self.redacted = True
                return masked
        if isinstance(value, list):
            if depth > MAX_CONTENT_DEPTH:
                return self.too_deep()
            return [self.copy(v, depth + 1) for v in value]
        if value is None or isinstance(value, (int, float)):
            return value
        return copy.deepcopy(value)

    def content(self, content: Any, depth: int) -> Any:
        """A ``content`` value: a string, or a list of blocks (which may nest further)."""
        if isinstance(content, str):
            return self.text(content)
        if not isinstance(content, list):
            return self.copy(content, depth)
        if depth > MAX_CONTENT_DEPTH:
            return self.too_deep()
        out: list[Any] = []
        for block in content:
            if isinstance(block, dict):
                out.append(self.block(block, depth + 1))
            elif isinstance(block, str):
                out.append(self.text(block))
            else:
                out.append(self.copy(block, depth + 1))
        return out

    def block(self, block: dict[str, Any], depth: int) -> Any:
        if depth > MAX_CONTENT_DEPTH:
            return self.too_deep()
        kind = block.get("type")
        image = _image_data(block) if kind in IMAGE_BLOCK_TYPES else None
        out: dict[str, Any] = {}
        inner = depth + 1
        for key, value in block.items():
            if key in SIGNATURE_FIELDS or (
                kind in THINKING_BLOCK_TYPES
                and (key == "signature" or (kind == "redacted_thinking" and key == "data"))
            ):
                self.truncated = True
            elif image is not None and key == image[0]:
                self.truncated = True
                if isinstance(value, dict):  # keep the rest of ``source``/``image_url``
                    gone = "data" if key == "source" else "url"
                    out[key] = self.copy({k: v for k, v in value.items() if k != gone}, inner)
            elif key in BLOCK_TEXT_FIELDS and isinstance(value, str):
                out[key] = self.text(value)
            elif kind in IMAGE_BLOCK_TYPES and key in IMAGE_URL_FIELDS:
                out[key] = self.copy(value, inner)  # a presigned URL carries a signature
            elif key == "content":
                out[key] = self.content(value, inner)
            elif key in STRUCTURED_FIELDS:
                out[key] = self.copy(value, inner)
            else:
                out[key] = self.copy(value, inner, key if isinstance(key, str) else None)
        if image is not None:
            out["omitted"] = True
            out["bytes"] = base64_decoded_size(image[1])
        return out

    def message(self, message: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in message.items():
            if key in DROPPED_MESSAGE_FIELDS:
                self.truncated = True
            elif key == "content":
                out[key] = self.content(value, 1)
            elif key in MESSAGE_TEXT_FIELDS and isinstance(value, str):
                out[key] = self.text(value)
            elif key in STRUCTURED_FIELDS:
                out[key] = self.copy(value, 1)
            else:
                out[key] = self.copy(value, 1, key if isinstance(key, str) else None)
        return out


# --------------------------------------------------------------------------- public API


def sanitize_message(message: dict[str, Any], redactor: Redactor | None = None) -> SanitizedMessage:
    """A new, history-safe copy of OpenClaw's ``message`` object (see the module invariant).

    Dropped: ``details``, ``usage``, ``cost``; thinking signatures (``thinkingSignature``,
    ``thought_signature``, ``signature`` of a thinking block, encrypted reasoning). Image blocks
    (``data``, ``source.data`` or a ``data:`` URL) lose the data and gain ``"omitted": true``
    and ``"bytes"`` (its decoded size). Redacted and cut: string ``content``, ``text`` and
    ``errorMessage``; ``text``/``thinking``/``partialJson``/``output`` of blocks; strings inside
    tool-call ``arguments``/``input`` (a value under a sensitive key is masked whole); nested
    ``content``. Dropping anything or cutting a text sets ``content_truncated``.
    """
    shaper = _Shaper(redactor or DEFAULT_REDACTOR)
    clean = shaper.message(message)
    return SanitizedMessage(clean, shaper.truncated, shaper.redacted)


def is_tool_message(message: dict[str, Any]) -> bool:
    """Whether ``message`` is one that history leaves out without ``includeTools``: a message
    whose role is :data:`STRIPPED_TOOL_ROLES` (OpenClaw's ``stripToolMessages``). Everything
    else stays, an assistant turn made only of tool calls included."""
    return message.get("role") in STRIPPED_TOOL_ROLES


def _assistant_text(message: dict[str, Any]) -> str | None:
    """The whole visible text of an assistant message made only of text, else None."""
    text = message.get("text")
    if isinstance(text, str):
        return text
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list) or not content:
        return None
    texts = []
    for block in content:
        if not isinstance(block, dict) or block.get("type") not in ASSISTANT_TEXT_BLOCK_TYPES:
            return None
        if not isinstance(block.get("text"), str):
            return None
        texts.append(block["text"])
    return "\n".join(texts)


def _has_non_text_block(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(block, dict) and block.get("type") not in ASSISTANT_TEXT_BLOCK_TYPES
        for block in content
    )


def _is_blank_text_only(content: Any) -> bool:
    """A blank string, an empty list, or only ``text`` blocks holding blank strings."""
    if isinstance(content, str):
        return not content.strip(JS_WHITESPACE)
    if not isinstance(content, list):
        return False
    for block in content:
        if not isinstance(block, dict) or block.get("type") != "text":
            return False
        text = block.get("text")
        if not isinstance(text, str) or text.strip(JS_WHITESPACE):
            return False
    return True


def _has_media_paths(message: dict[str, Any]) -> bool:
    paths = message.get(MEDIA_PATH_FIELDS[0])
    if not isinstance(paths, list):
        one = message.get(MEDIA_PATH_FIELDS[1])
        paths = [one] if isinstance(one, str) else []
    return any(isinstance(p, str) and p.strip(JS_WHITESPACE) for p in paths)


def is_hidden_from_history(message: dict[str, Any]) -> bool:
    """Whether OpenClaw's chat display projection, which ``sessions_history`` reads through
    (src/gateway/chat-display-projection.ts), leaves ``message`` out: an assistant reply whose
    whole text is a silent control reply (:data:`SILENT_CONTROL_REPLY_TOKENS`, or a phrase of
    :data:`SILENT_CONTROL_REPLY_PHRASES`) with nothing but text in it, and a user row whose
    content (or ``text``) is blank text only and that names no media."""
    role = message.get("role")
    if role == "assistant":
        text = _assistant_text(message)
        if text is None or _has_non_text_block(message):
            return False
        trimmed = text.strip(JS_WHITESPACE)
        return (
            trimmed in SILENT_CONTROL_REPLY_TOKENS
            or trimmed.lower() in SILENT_CONTROL_REPLY_PHRASES
        )
    if isinstance(role, str) and role.lower() == "user":
        content = message.get("content")
        shown = content if content is not None else message.get("text")
        return _is_blank_text_only(shown) and not _has_media_paths(message)
    return False


def json_size(value: Any) -> int:
    """UTF-8 bytes of ``json.dumps(value, ensure_ascii=False)`` (a lone surrogate counts 3)."""
    return len(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))


def _item_size(item: Any) -> int | None:
    try:
        return json_size(item)
    except (TypeError, ValueError, RecursionError):
        return None  # not JSON: cannot be sent at all


def _placeholder(item: Any) -> dict[str, Any]:
    """:data:`OMITTED_MESSAGE`, keeping the ``__openclaw`` position of the item it replaces."""
    out: dict[str, Any] = dict(OMITTED_MESSAGE)
    meta = item.get("__openclaw") if isinstance(item, dict) else None
    if isinstance(meta, dict):
        out["__openclaw"] = copy.deepcopy(meta)
    return out


def fit_to_budget(
    items: list[dict[str, Any]],
    max_bytes: int = MAX_HISTORY_BYTES,
    anchor_index: int | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """A contiguous run of ``items`` whose JSON list fits ``max_bytes``, and how many were left out.

    The size counted is that of ``json.dumps(kept, ensure_ascii=False)`` in UTF-8 (brackets and
    ``", "`` separators included). Without ``anchor_index`` the newest items (the end of the
    list) are kept; with it, the window starts at that item and grows alternately one older,
    one newer; a side that reaches an item that does not fit is closed and the other side goes
    on. If not even the first item (the newest, or the anchor) fits, the result is a copy of
    :data:`OMITTED_MESSAGE` in its place (with its ``__openclaw`` metadata, if any; returned even
    if a tiny ``max_bytes`` cannot hold it), and every item counts as left out. Items are
    returned as given (not copied), in their order.
    """
    count = len(items)
    if count == 0:
        return [], 0
    if anchor_index is None:
        anchor_index = count - 1
    elif not 0 <= anchor_index < count:
        raise ValueError(f"anchor_index {anchor_index} out of range for {count} items")
    first = _item_size(items[anchor_index])
    if first is None or first + 2 > max_bytes:
        return [_placeholder(items[anchor_index])], count
    total = first + 2  # "[" + item + "]"
    lo, hi = anchor_index, anchor_index + 1
    older_open, newer_open = lo > 0, hi < count
    take_older = True
    while older_open or newer_open:
        if take_older and not older_open:
            take_older = False
        elif not take_older and not newer_open:
            take_older = True
        index = lo - 1 if take_older else hi
        size = _item_size(items[index])
        if size is not None and total + size + 2 <= max_bytes:  # ", " + item
            total += size + 2
            if take_older:
                lo -= 1
                older_open = lo > 0
            else:
                hi += 1
                newer_open = hi < count
        elif take_older:
            older_open = False
        else:
            newer_open = False
        take_older = not take_older
    return items[lo:hi], count - (hi - lo)

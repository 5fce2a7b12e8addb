"""Extract the upstream redaction test vectors, verbatim, into JSON fixtures.

Invariant: the fixtures under ``tests/fixtures/redaction_upstream/`` are written by this
script only, from the upstream files as published; every input string and every expected
outcome is the upstream text evaluated as its authors wrote it (string literals, and the
few data expressions the test files build strings with: concatenation, ``repeat``,
``join``, template substitution, ``str.format``). No upstream *code* is copied: only the
values. A vector whose text the evaluator cannot reproduce is kept as a record with its
source expression and ``"literal": false`` (never dropped), so the counts always add up.

Sources (see tests/fixtures/redaction_upstream/README.md):

* OpenClaw ``src/logging/redact.test.ts`` (a file path: the repository is too large to
  mirror here, the file is read from the public source index at a known commit);
* gitleaks ``cmd/generate/config/rules/*.go`` (a git mirror): the ``tps`` / ``fps`` samples;
* detect-secrets ``tests/plugins/*_test.py`` (a git mirror): every parametrized case.

    python scripts/extract_upstream_vectors.py \\
        --openclaw /tmp/oc/redact.test.ts --openclaw-commit <sha> \\
        --gitleaks /work/.mirror/gitleaks+gitleaks/repo \\
        --detect-secrets /work/.mirror/Yelp+detect-secrets/repo
    python scripts/extract_upstream_vectors.py ... --check   # the fixtures are current
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "redaction_upstream"
OPENCLAW_REPO = "openclaw/openclaw"
OPENCLAW_PATH = "src/logging/redact.test.ts"
GITLEAKS_REPO = "gitleaks/gitleaks"
GITLEAKS_DIR = "cmd/generate/config/rules"
DETECT_SECRETS_REPO = "Yelp/detect-secrets"
DETECT_SECRETS_DIR = "tests/plugins"


class NotLiteral(Exception):
    """An expression this evaluator does not reproduce (kept as a non-literal record)."""


# --------------------------------------------------------------------------------------
# TypeScript: a tokenizer and an evaluator for the string-building expressions of a test.
# --------------------------------------------------------------------------------------

_JS_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}
_PUNCT3 = ("...", "===", "!==")
_PUNCT2 = ("=>", "==", "!=", "&&", "||", "??", "++", "+=", "<=", ">=", "?.")
_REGEX_AFTER = set("(,=:[!&|?{};") | {"return", "=>", "", "==", "===", "!==", "!="}


def _js_unescape(raw: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(raw):
        c = raw[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        n = raw[i + 1]
        if n in _JS_ESCAPES and not (n == "0" and i + 2 < len(raw) and raw[i + 2].isdigit()):
            out.append(_JS_ESCAPES[n])
            i += 2
        elif n == "u" and raw[i + 2] == "{":
            end = raw.index("}", i)
            out.append(chr(int(raw[i + 3 : end], 16)))
            i = end + 1
        elif n == "u":
            code = int(raw[i + 2 : i + 6], 16)
            i += 6
            if 0xD800 <= code < 0xDC00 and raw[i : i + 2] == "\\u":
                low = int(raw[i + 2 : i + 6], 16)
                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                i += 6
            out.append(chr(code))
        elif n == "x":
            out.append(chr(int(raw[i + 2 : i + 4], 16)))
            i += 4
        elif n == "\n":
            i += 2
        else:
            out.append(n)
            i += 2
    return "".join(out)


class Tok:
    __slots__ = ("end", "kind", "parts", "pos", "value")

    def __init__(self, kind: str, value: Any, pos: int, parts: Any = None) -> None:
        self.kind, self.value, self.pos, self.parts = kind, value, pos, parts
        self.end = pos + 1

    def __repr__(self) -> str:
        return f"Tok({self.kind},{self.value!r})"


def ts_tokens(src: str, start: int = 0, end: int | None = None) -> list[Tok]:
    """Tokens of ``src[start:end]``; a template's ``parts`` are (raw text, cooked text) and
    token lists of its ``${…}`` substitutions."""
    end = len(src) if end is None else end
    toks: list[Tok] = []
    i = start
    prev = ""
    while i < end:
        count = len(toks)
        c = src[i]
        if c.isspace():
            i += 1
        elif src.startswith("//", i):
            i = src.index("\n", i) if "\n" in src[i:end] else end
        elif src.startswith("/*", i):
            i = src.index("*/", i) + 2
        elif c in "'\"":
            j = i + 1
            while src[j] != c:
                j += 2 if src[j] == "\\" else 1
            toks.append(Tok("str", _js_unescape(src[i + 1 : j]), i))
            i = j + 1
        elif c == "`":
            parts: list[Any] = []
            j = i + 1
            seg = j
            while src[j] != "`":
                if src[j] == "\\":
                    j += 2
                elif src.startswith("${", j):
                    parts.append(src[seg:j])
                    depth, k = 1, j + 2
                    while depth:
                        if src[k] in "`'\"":  # a nested string inside the substitution
                            q = src[k]
                            k += 1
                            while src[k] != q:
                                k += 2 if src[k] == "\\" else 1
                        elif src[k] == "{":
                            depth += 1
                        elif src[k] == "}":
                            depth -= 1
                        k += 1
                    parts.append(ts_tokens(src, j + 2, k - 1))
                    j = k
                    seg = j
                else:
                    j += 1
            parts.append(src[seg:j])
            toks.append(Tok("tpl", None, i, parts))
            i = j + 1
        elif c == "/" and prev in _REGEX_AFTER:
            j = i + 1
            in_class = False
            while src[j] != "/" or in_class:
                if src[j] == "\\":
                    j += 1
                elif src[j] == "[":
                    in_class = True
                elif src[j] == "]":
                    in_class = False
                j += 1
            k = j + 1
            while k < end and src[k].isalpha():
                k += 1
            toks.append(Tok("regex", src[i + 1 : j], i))
            i = k
        elif c.isdigit():
            m = re.match(r"[0-9_]+(\.[0-9]+)?n?", src[i:])
            assert m
            text = m.group(0).replace("_", "").rstrip("n")
            toks.append(Tok("num", float(text) if "." in text else int(text), i))
            i += len(m.group(0))
        elif c.isalpha() or c in "_$":
            m = re.match(r"[A-Za-z0-9_$]+", src[i:])
            assert m
            toks.append(Tok("id", m.group(0), i))
            i += len(m.group(0))
        else:
            for p in _PUNCT3 + _PUNCT2:
                if src.startswith(p, i):
                    toks.append(Tok("p", p, i))
                    i += len(p)
                    break
            else:
                toks.append(Tok("p", c, i))
                i += 1
        if len(toks) > count:
            toks[-1].end = i
        if toks:
            last = toks[-1]
            prev = last.value if last.kind in ("p", "id") else "x"
    return toks


def _matching(toks: list[Tok], i: int) -> int:
    """Index of the bracket closing the one at ``toks[i]``."""
    pairs = {"(": ")", "[": "]", "{": "}", "<": ">"}
    open_, close = toks[i].value, pairs[toks[i].value]
    depth = 0
    for j in range(i, len(toks)):
        if toks[j].kind == "p" and toks[j].value == open_:
            depth += 1
        elif toks[j].kind == "p" and toks[j].value == close:
            depth -= 1
            if depth == 0:
                return j
    raise ValueError("unbalanced")


def _split_commas(toks: list[Tok]) -> list[list[Tok]]:
    out: list[list[Tok]] = [[]]
    depth = 0
    for t in toks:
        if t.kind == "p" and t.value in "([{":
            depth += 1
        elif t.kind == "p" and t.value in ")]}":
            depth -= 1
        if depth == 0 and t.kind == "p" and t.value == ",":
            out.append([])
        else:
            out[-1].append(t)
    return [x for x in out if x]


class TsEval:
    """Evaluates the data expressions of a test body: literals, names bound by ``const``,
    ``+``, ``*``/``-`` on numbers, ``.repeat``, ``.join``, ``.slice``, ``.length``,
    ``.map(({ f }) => f)``, ``String.raw``, ``JSON.stringify`` and object/array literals."""

    def __init__(self, env: dict[str, Any]) -> None:
        self.env = env

    def eval(self, toks: list[Tok]) -> Any:
        value, k = self._expr(toks, 0)
        if k != len(toks):
            raise NotLiteral(f"trailing tokens {toks[k : k + 3]}")
        return value

    def _expr(self, toks: list[Tok], i: int) -> tuple[Any, int]:
        value, i = self._term(toks, i)
        while i < len(toks) and toks[i].kind == "p" and toks[i].value in ("+", "-"):
            op = toks[i].value
            rhs, i = self._term(toks, i + 1)
            if op == "+":
                if isinstance(value, str) or isinstance(rhs, str):
                    value = _js_str(value) + _js_str(rhs)
                else:
                    value = value + rhs
            else:
                value = value - rhs
        if i < len(toks) and toks[i].kind == "p" and toks[i].value == "??":
            rhs, i = self._expr(toks, i + 1)
            value = rhs if value is None else value
        if i < len(toks) and toks[i].kind == "id" and toks[i].value == "as":
            i = len(toks) if toks[i + 1].value == "const" else i + 2  # `as const` / a type
        return value, i

    def _term(self, toks: list[Tok], i: int) -> tuple[Any, int]:
        value, i = self._postfix(toks, i)
        while i < len(toks) and toks[i].kind == "p" and toks[i].value in ("*", "%"):
            op = toks[i].value
            rhs, i = self._postfix(toks, i + 1)
            value = value * rhs if op == "*" else value % rhs
        return value, i

    def _postfix(self, toks: list[Tok], i: int) -> tuple[Any, int]:
        value, i = self._primary(toks, i)
        while i < len(toks) and toks[i].kind == "p" and toks[i].value in (".", "["):
            if toks[i].value == "[":
                j = _matching(toks, i)
                index = self.eval(toks[i + 1 : j])
                value = value[index]
                i = j + 1
                continue
            name = toks[i + 1].value
            i += 2
            if name == "length":
                value = len(value)
                continue
            if i >= len(toks) or toks[i].value != "(":
                raise NotLiteral(f".{name}")
            j = _matching(toks, i)
            inner = toks[i + 1 : j]
            args = [self.eval(a) for a in _split_commas(inner)] if name != "map" else []
            if name == "repeat":
                value = value * args[0]
            elif name == "join":
                value = (args[0] if args else ",").join(_js_str(v) for v in value)
            elif name == "slice":
                value = value[args[0] : args[1]] if len(args) > 1 else value[args[0] :]
            elif name == "map":
                m = [t.value for t in inner]
                if m[:2] == ["(", "{"] and m[3:7] == ["}", ")", "=>", m[2]] and len(m) == 7:
                    value = [v[m[2]] for v in value]
                else:
                    raise NotLiteral(".map")
            else:
                raise NotLiteral(f".{name}()")
            i = j + 1
        return value, i

    def _template(self, tok: Tok, raw: bool) -> str:
        out: list[str] = []
        for part in tok.parts:
            if isinstance(part, str):
                out.append(part if raw else _js_unescape(part))
            else:
                out.append(_js_str(self.eval(part)))
        return "".join(out)

    def _primary(self, toks: list[Tok], i: int) -> tuple[Any, int]:
        t = toks[i]
        if t.kind == "str":
            return t.value, i + 1
        if t.kind == "tpl":
            return self._template(t, raw=False), i + 1
        if t.kind == "num":
            return t.value, i + 1
        if t.kind == "p" and t.value == "-":
            value, k = self._postfix(toks, i + 1)
            return -value, k
        if t.kind == "p" and t.value == "(":
            j = _matching(toks, i)
            return self.eval(toks[i + 1 : j]), j + 1
        if t.kind == "p" and t.value == "[":
            j = _matching(toks, i)
            items: list[Any] = []
            for elem in _split_commas(toks[i + 1 : j]):
                if elem[0].value == "...":
                    items.extend(self.eval(elem[1:]))
                else:
                    items.append(self.eval(elem))
            return items, j + 1
        if t.kind == "p" and t.value == "{":
            j = _matching(toks, i)
            obj: dict[str, Any] = {}
            for elem in _split_commas(toks[i + 1 : j]):
                if len(elem) == 1 and elem[0].kind == "id":
                    obj[elem[0].value] = self._name(elem[0].value)
                elif len(elem) >= 3 and elem[1].value == ":":
                    obj[elem[0].value] = self.eval(elem[2:])
                else:
                    raise NotLiteral("object member")
            return obj, j + 1
        if t.kind == "id" and t.value == "String" and toks[i + 2].value == "raw":
            return self._template(toks[i + 3], raw=True), i + 4
        if t.kind == "id" and t.value == "JSON" and toks[i + 2].value == "stringify":
            j = _matching(toks, i + 3)
            return _json_stringify(self.eval(_split_commas(toks[i + 4 : j])[0])), j + 1
        if t.kind == "id" and t.value == "Array" and toks[i + 2].value == "from":
            j = _matching(toks, i + 3)
            size_arg, fn_arg = _split_commas(toks[i + 4 : j])
            size = self.eval(size_arg)["length"]
            fn = _arrow(fn_arg)
            return [self._apply(fn, [None, k]) for k in range(size)], j + 1
        if (
            t.kind == "id"
            and i + 1 < len(toks)
            and toks[i + 1].value == "("
            and isinstance(self.env.get(t.value), Arrow)
        ):
            j = _matching(toks, i + 1)
            args = [self.eval(a) for a in _split_commas(toks[i + 2 : j])]
            return self._apply(self.env[t.value], args), j + 1
        if t.kind == "id" and t.value in ("true", "false", "null", "undefined"):
            return {"true": True, "false": False}.get(t.value), i + 1
        if t.kind == "id":
            return self._name(t.value), i + 1
        raise NotLiteral(f"token {t!r}")

    def _apply(self, fn: Arrow, args: list[Any]) -> Any:
        env = dict(self.env)
        env.update(zip(fn.params, args, strict=False))
        return TsEval(env).eval(fn.body)

    def _name(self, name: str) -> Any:
        if name not in self.env or self.env[name] is _UNKNOWN:
            raise NotLiteral(f"name {name}")
        return self.env[name]


_UNKNOWN = object()


class Arrow:
    """``(a: T, b: T): R => EXPR``: a data helper of a test (its parameters and body)."""

    def __init__(self, params: list[str], body: list[Tok]) -> None:
        self.params, self.body = params, body


def _arrow(toks: list[Tok]) -> Arrow:
    if not toks or toks[0].value != "(":
        raise NotLiteral("not an arrow function")
    close = _matching(toks, 0)
    arrow = next((k for k in range(close, len(toks)) if toks[k].value == "=>"), None)
    if arrow is None or toks[arrow + 1].value == "{":
        raise NotLiteral("not an expression arrow function")
    params = []
    expect_name = True
    depth = 0
    for t in toks[1:close]:
        if t.value in ("(", "[", "{", "<"):
            depth += 1
        elif t.value in (")", "]", "}", ">"):
            depth -= 1
        elif depth == 0 and t.value == ",":
            expect_name = True
        elif depth == 0 and expect_name and t.kind == "id":
            params.append(t.value)
            expect_name = False
    return Arrow(params, toks[arrow + 1 :])


def _js_str(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return value
    raise NotLiteral("string of a non-string")


def _json_stringify(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


TEXT_CALLS = (
    "redactSensitiveText",
    "redactSensitiveLines",
    "redactSourceInputTextWithConfig",
    "redactToolPayloadTextWithConfig",
    "redactModelVisibleToolPayloadText",
    "redactToolDetail",
    "redactSensitiveFieldValue",
    "redactSecrets",
    "redact",
    "redactFirst",
    "redactSecond",
    "redactEmpty",
    "captured",
    "replacePatternBounded",
    "redactRegisteredSecretValues",
)
MATCHERS = ("toBe", "toContain", "toEqual", "toStrictEqual", "toMatch")


def _openclaw_blocks(src: str) -> list[dict[str, Any]]:
    """Each ``it(…)`` / ``it.each(…)(…)`` test of the file, with its describe, title, line
    and token range."""
    toks = ts_tokens(src)
    blocks: list[dict[str, Any]] = []
    describes: list[tuple[str, int]] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        while describes and t.pos > describes[-1][1]:
            describes.pop()
        if t.kind == "id" and t.value == "describe" and toks[i + 1].value == "(":
            close = _matching(toks, i + 1)
            describes.append((toks[i + 2].value, toks[close].pos))
            i += 2
            continue
        if t.kind == "id" and t.value == "it" and toks[i + 1].value in ("(", "."):
            each_rows: list[list[Tok]] | None = None
            j = i + 1
            if toks[j].value == ".":  # it.each<…>([rows])(title, fn)
                j += 2
                if toks[j].value == "<":
                    j = _matching(toks, j) + 1
                close_rows = _matching(toks, j)
                each_rows = _split_commas(toks[j + 2 : close_rows - 1])
                j = close_rows + 1
            close = _matching(toks, j)
            title_tok = toks[j + 1]
            blocks.append(
                {
                    "describe": describes[-1][0] if describes else "",
                    "title": title_tok.value,
                    "line": src.count("\n", 0, t.pos) + 1,
                    "rows": each_rows,
                    "body": toks[j + 2 : close],
                    "params": _each_params(toks[j + 2 : close]) if each_rows is not None else [],
                }
            )
            i = close + 1
            continue
        i += 1
    return blocks


def _each_params(body: list[Tok]) -> list[str]:
    """The parameter names of an ``it.each`` callback: ``(a, b) =>`` or ``({ a, b }) =>``."""
    k = 0
    while body[k].value != "(":
        k += 1
    close = _matching(body, k)
    return [t.value for t in body[k + 1 : close] if t.kind == "id"]


def _statements_env(body: list[Tok], env: dict[str, Any]) -> dict[str, Any]:
    """Bind every ``const``/``let`` name of ``body`` it can evaluate (others are unknown)."""
    env = dict(env)
    i = 0
    while i < len(body):
        t = body[i]
        if t.kind == "id" and t.value in ("const", "let") and body[i + 1].kind == "id":
            name = body[i + 1].value
            j = i + 2
            if body[j].value == ":":  # a type annotation
                while body[j].value != "=":
                    j += 1
            if body[j].value != "=":
                i += 1
                continue
            k = j + 1
            depth = 0
            while k < len(body):
                v = body[k]
                if v.kind == "p" and v.value in "([{":
                    depth += 1
                elif v.kind == "p" and v.value in ")]}":
                    if depth == 0:
                        break
                    depth -= 1
                elif depth == 0 and v.kind == "p" and v.value == ";":
                    break
                k += 1
            try:
                rhs = body[j + 1 : k]
                if rhs and rhs[0].value == "(" and any(t.value == "=>" for t in rhs):
                    env[name] = _arrow(rhs)
                else:
                    env[name] = TsEval(env).eval(rhs)
            except (NotLiteral, IndexError, KeyError, TypeError, ValueError):
                env[name] = _UNKNOWN
            i = k
        i += 1
    return env


def _loops(body: list[Tok]) -> list[tuple[int, int, list[str], list[Tok]]]:
    """``for (const X of EXPR) { … }`` loops: (body start, body end, names, EXPR tokens)."""
    out = []
    for i, t in enumerate(body):
        if t.kind == "id" and t.value == "for" and body[i + 1].value == "(":
            close = _matching(body, i + 1)
            head = body[i + 2 : close]
            if not head or head[0].value != "const":
                continue
            of = next(k for k, h in enumerate(head) if h.kind == "id" and h.value == "of")
            names = [h.value for h in head[1:of] if h.kind == "id"]
            if body[close + 1].value == "{":
                end = _matching(body, close + 1)
            else:
                end = close + 1
                depth = 0
                while not (depth == 0 and body[end].value == ";"):
                    if body[end].value in "([{":
                        depth += 1
                    elif body[end].value in ")]}":
                        depth -= 1
                    end += 1
            out.append((close + 1, end, names, head[of + 1 :]))
    return out


def _calls(body: list[Tok]) -> list[tuple[int, int, str, list[list[Tok]]]]:
    """Every call of a redaction function: (start, end, function name, argument tokens)."""
    out = []
    for i, t in enumerate(body):
        if (
            t.kind == "id"
            and t.value in TEXT_CALLS
            and i + 1 < len(body)
            and body[i + 1].value == "("
            and not (i > 0 and body[i - 1].value == "." and body[i - 2].value != ")")
        ):
            if i > 0 and body[i - 1].value in ("function", "import"):
                continue
            close = _matching(body, i + 1)
            out.append((i, close, t.value, _split_commas(body[i + 2 : close])))
    return out


def _expects(body: list[Tok]) -> list[tuple[int, list[Tok], bool, str, list[Tok]]]:
    """``expect(A)[.not].matcher(B)``: (position, A tokens, negated, matcher, B tokens)."""
    out = []
    for i, t in enumerate(body):
        if t.kind == "id" and t.value == "expect" and body[i + 1].value == "(":
            close = _matching(body, i + 1)
            k = close + 1
            negated = False
            if body[k].value == "." and body[k + 1].value == "not":
                negated = True
                k += 2
            if body[k].value != "." or body[k + 1].value not in MATCHERS:
                continue
            matcher = body[k + 1].value
            mclose = _matching(body, k + 2)
            arg = _split_commas(body[i + 2 : close])
            margs = _split_commas(body[k + 3 : mclose])
            out.append((i, arg[0] if arg else [], negated, matcher, margs[0] if margs else []))
    return out


def _source(src: str, toks: list[Tok]) -> str:
    return src[toks[0].pos : toks[-1].end] if toks else ""


def _options(src: str, args: list[list[Tok]]) -> str:
    return " ".join(_source(src, a) for a in args[1:])


def extract_openclaw(src: str) -> dict[str, Any]:
    """One vector per (test, evaluated input text): the function, the options as written,
    the input and every expectation evaluated; non-reproducible inputs kept as records."""
    file_env = _statements_env(ts_tokens(src), {})
    vectors: list[dict[str, Any]] = []
    blocks = _openclaw_blocks(src)
    for block in blocks:
        body = block["body"]
        variants: list[dict[str, Any]] = []
        if block["rows"] is not None:
            for row in block["rows"]:
                env = dict(file_env)
                try:
                    value = TsEval(env).eval(row)
                    if not isinstance(value, list):
                        value = [value]
                    if block["params"] and isinstance(value[0], dict):
                        env.update(value[0])
                    else:
                        env.update(dict(zip(block["params"], value, strict=False)))
                    variants.append({"env": env, "row": _source(src, row), "ok": True})
                except (NotLiteral, IndexError, KeyError, TypeError, ValueError) as exc:
                    variants.append(
                        {"env": env, "row": _source(src, row), "ok": False, "why": str(exc)}
                    )
        else:
            variants.append({"env": dict(file_env), "row": None, "ok": True})
        for variant in variants:
            env = _statements_env(body, variant["env"]) if variant["ok"] else variant["env"]
            vectors.extend(_block_vectors(src, block, body, env, variant))
    return {"tests": len(blocks), "vectors": vectors}


def _block_vectors(
    src: str, block: dict[str, Any], body: list[Tok], env: dict[str, Any], variant: dict[str, Any]
) -> list[dict[str, Any]]:
    calls = _calls(body)
    expects = _expects(body)
    registered = []  # values the test registers with OpenClaw's exact-value registry
    for i, t in enumerate(body):
        if (
            t.kind == "id"
            and t.value == "registerSecretValueForRedaction"
            and body[i + 1].value == "("
        ):
            try:
                registered.append(TsEval(env).eval(body[i + 2 : _matching(body, i + 1)]))
            except (NotLiteral, IndexError, KeyError, TypeError, ValueError):
                registered.append(None)
    loops = _loops(body)
    out: list[dict[str, Any]] = []
    # `const output = CALL(...)`: which names hold which call's output.
    holders: dict[int, str] = {}
    for ci, (start, _end, _fn, _args) in enumerate(calls):
        if start >= 2 and body[start - 1].value == "=" and body[start - 2].kind == "id":
            holders[ci] = body[start - 2].value
    nested = {
        ci
        for ci, c in enumerate(calls)
        for cj, d in enumerate(calls)
        if cj != ci and d[0] < c[0] and c[1] < d[1]
    }
    for ci, (start, end, fn, args) in enumerate(calls):
        if ci in nested:
            continue
        loop = next((lp for lp in loops if lp[0] <= start <= lp[1]), None)
        items: list[dict[str, Any]] = [{}]
        if loop is not None:
            try:
                iterable = TsEval(env).eval(loop[3])
                items = []
                for item in iterable:
                    if len(loop[2]) == 1:
                        items.append({loop[2][0]: item})
                    else:
                        items.append({n: item[n] for n in loop[2]})
            except (NotLiteral, IndexError, KeyError, TypeError) as exc:
                items = [{"__why": str(exc)}]
        # the expects that judge this call: those wrapping it, or reading its holder after it
        mine = []
        next_same = min(
            (c[0] for cj, c in enumerate(calls) if cj > ci and holders.get(cj) == holders.get(ci)),
            default=10**9,
        )
        for pos, a_toks, neg, matcher, b_toks in expects:
            a_text = [t.value for t in a_toks]
            wraps = (
                any(pos < c and c < pos + len(a_toks) + 3 for c in (start,))
                and a_toks
                and a_toks[0].pos <= body[start].pos <= a_toks[-1].pos
            )
            reads = (
                ci in holders and a_text and a_text[0] == holders[ci] and start < pos < next_same
            )
            if wraps or reads:
                mine.append((pos, a_toks, neg, matcher, b_toks))
        for item in items:
            local = dict(env)
            local.update(item)
            record: dict[str, Any] = {
                "test": block["title"],
                "describe": block["describe"],
                "line": block["line"],
                "call_line": src.count("\n", 0, body[start].pos) + 1,
                "function": fn,
                "call": _source(src, body[start : end + 1]),
                "options": _options(src, args),
                "each_row": variant["row"],
            }
            if registered:
                record["registered"] = registered
            written = [
                c.parts[0]
                for c in body
                if c.kind == "tpl" and len(c.parts) == 1 and "logging" in c.parts[0]
            ]
            if written:  # the config file the test writes (writeConfig)
                record["config_files"] = written
            try:
                if not variant["ok"] or "__why" in item:
                    raise NotLiteral(variant.get("why") or item["__why"])
                value = TsEval(local).eval(args[0]) if args else None
                record["input"] = value
                if fn == "redactSensitiveFieldValue" and len(args) > 1:
                    record["field"] = value
                    record["input"] = TsEval(local).eval(args[1])
                record["literal"] = True
            except (NotLiteral, IndexError, KeyError, TypeError, ValueError) as exc:
                record["literal"] = False
                record["why"] = str(exc)
            if item and "__why" not in item:
                record["loop_item"] = {k: v for k, v in item.items()}
            record["expect"] = []
            for _pos, a_toks, neg, matcher, b_toks in mine:
                exp: dict[str, Any] = {
                    "matcher": ("not." if neg else "") + matcher,
                    "subject": _source(src, a_toks),
                    "source": _source(src, b_toks),
                }
                if b_toks and b_toks[0].kind == "regex":
                    exp["regex"] = b_toks[0].value
                else:
                    try:
                        exp["value"] = TsEval(local).eval(b_toks)
                    except (NotLiteral, IndexError, KeyError, TypeError, ValueError) as exc:
                        exp["why"] = str(exc)
                record["expect"].append(exp)
            out.append(record)
    if not calls:
        out.append(
            {
                "test": block["title"],
                "describe": block["describe"],
                "line": block["line"],
                "function": None,
                "literal": False,
                "why": "no redaction call on a text",
                "each_row": variant["row"],
                "expect": [],
            }
        )
    return out


def count_openclaw_tests(src: str) -> int:
    """An independent count: test declarations (``it(`` and ``it.each(``) in the file."""
    return len(re.findall(r"^\s*it(?:\.each(?:<[^>]*>)?)?\(", src, flags=re.M))


# --------------------------------------------------------------------------------------
# Go (gitleaks): string literals of the tps/fps sample lists.
# --------------------------------------------------------------------------------------

_GO_TOKEN = re.compile(
    r"""(?P<ws>\s+)|(?P<lc>//[^\n]*)|(?P<bc>/\*.*?\*/)|(?P<raw>`[^`]*`)|(?P<str>"(?:\\.|[^"\\\n])*")"""
    r"""|(?P<rune>'(?:\\.|[^'\\\n])*')|(?P<id>[A-Za-z_][A-Za-z0-9_]*)|(?P<num>[0-9][0-9a-fA-FxX_.]*)"""
    r"""|(?P<p>\.\.\.|:=|&&|\|\||==|!=|[-+*/%=<>!&|^(){}\[\],;:.])""",
    re.S,
)


def go_tokens(src: str) -> list[Tok]:
    toks = []
    for m in _GO_TOKEN.finditer(src):
        kind = m.lastgroup
        if kind in ("ws", "lc", "bc"):
            continue
        text = m.group(0)
        if kind == "raw":
            toks.append(Tok("str", text[1:-1].replace("\r", ""), m.start()))
        elif kind == "str":
            toks.append(Tok("str", _go_unescape(text[1:-1]), m.start()))
        else:
            toks.append(Tok("p" if kind == "p" else kind, text, m.start()))
        toks[-1].end = m.end()
    return toks


def _go_unescape(raw: str) -> str:
    return ast.literal_eval('"' + raw + '"') if "\\" in raw else raw


def _go_literal(toks: list[Tok]) -> str | None:
    """The value of ``"a" + `b` + …``, or None when any part is not a literal."""
    if not toks or len(toks) % 2 == 0:
        return None
    parts = []
    for k, t in enumerate(toks):
        if k % 2 == 0 and t.kind != "str":
            return None
        if k % 2 == 1 and not (t.kind == "p" and t.value == "+"):
            return None
        if k % 2 == 0:
            parts.append(t.value)
    return "".join(parts)


def _go_elements(toks: list[Tok], i: int) -> tuple[list[list[Tok]], int]:
    """The sample expressions of the right-hand side starting at ``toks[i]`` and its end."""
    t = toks[i]
    if t.value == "[" or t.value == "map":  # []string{…} / map[string]string{…}
        j = i
        while toks[j].value != "{":
            j += 1
        close = _matching(toks, j)
        return _split_commas(toks[j + 1 : close]), close
    if t.value == "append":
        close = _matching(toks, i + 1)
        return _split_commas(toks[i + 2 : close])[1:], close
    # a single call (utils.GenerateSampleSecrets(…)) or expression up to the line's end
    j = i
    while toks[j].value != "(":
        j += 1
    close = _matching(toks, j)
    return [toks[i : close + 1]], close


def extract_gitleaks(files: dict[str, str]) -> dict[str, Any]:
    vectors = []
    empty: list[dict[str, Any]] = []
    for path, src in sorted(files.items()):
        toks = go_tokens(src)
        for i, t in enumerate(toks):
            if not (
                t.kind == "id"
                and t.value in ("tps", "fps")
                and i + 1 < len(toks)
                and toks[i + 1].value in (":=", "=")
            ):
                continue
            if toks[i - 1].value in (",", "("):
                continue
            func = _enclosing_func(toks, i)
            elements, _end = _go_elements(toks, i + 2)
            if not elements:
                empty.append(
                    {
                        "path": path,
                        "function": func,
                        "list": t.value,
                        "assigned_at": src.count("\n", 0, t.pos) + 1,
                    }
                )
            for elem in elements:
                if elem and elem[-1].value == "...":
                    elem = elem[:-1]
                rec: dict[str, Any] = {
                    "path": path,
                    "function": func,
                    "list": t.value,
                    "assigned_at": src.count("\n", 0, t.pos) + 1,
                    "expect": "match" if t.value == "tps" else "no match",
                    "line": src.count("\n", 0, elem[0].pos) + 1,
                    "source": src[elem[0].pos : elem[-1].end],
                }
                key = None
                if len(elem) > 2 and elem[1].value == ":" and elem[0].kind == "str":
                    key, elem = elem[0].value, elem[2:]
                    rec["file_name"] = key
                value = _go_literal(elem)
                if value is not None:
                    rec["kind"] = "literal"
                    rec["text"] = value
                elif (
                    len(elem) > 4
                    and elem[0].value == "utils"
                    and elem[2].value in ("GenerateSampleSecrets", "GenerateSampleSecret")
                ):
                    args = _split_commas(elem[4 : _matching(elem, 3)])
                    ident = _go_literal(args[0]) if args else None
                    secret = _go_literal(args[1]) if len(args) > 1 else None
                    rec["generator"] = elem[2].value
                    if ident is not None and secret is not None:
                        rec["kind"] = "generated-from-literal"
                        rec["identifier"] = ident
                        rec["secret"] = secret
                    else:
                        rec["kind"] = "generated"
                else:
                    rec["kind"] = "computed"
                vectors.append(rec)
    return {"files": len(files), "vectors": vectors, "empty_lists": empty}


def _enclosing_func(toks: list[Tok], i: int) -> str:
    for k in range(i, -1, -1):
        if toks[k].kind == "id" and toks[k].value == "func" and toks[k + 1].kind == "id":
            return str(toks[k + 1].value)
    return ""


def count_gitleaks(files: dict[str, str]) -> int:
    """An independent count: assignments to tps/fps (each holds one or more samples)."""
    return sum(len(re.findall(r"^\s*(?:tps|fps)\s*:?=", s, flags=re.M)) for s in files.values())


# --------------------------------------------------------------------------------------
# Python (detect-secrets): every parametrized case.
# --------------------------------------------------------------------------------------


class PyEval:
    def __init__(self, env: dict[str, Any]) -> None:
        self.env = env

    def eval(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.Tuple, ast.List)):
            return [self.eval(e) for e in node.elts]
        if isinstance(node, ast.Name):
            if node.id in self.env:
                return self.env[node.id]
            raise NotLiteral(f"name {node.id}")
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult, ast.Mod)):
            left, right = self.eval(node.left), self.eval(node.right)
            if isinstance(node.op, ast.Add):
                return left + right
            if isinstance(node.op, ast.Mult):
                return left * right
            return left % (tuple(right) if isinstance(right, list) else right)
        if isinstance(node, ast.JoinedStr):
            out = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    out.append(str(v.value))
                elif isinstance(v, ast.FormattedValue) and v.conversion == -1 and not v.format_spec:
                    out.append(str(self.eval(v.value)))
                else:
                    raise NotLiteral("f-string conversion")
            return "".join(out)
        if isinstance(node, ast.Subscript):
            base = self.eval(node.value)
            sl = node.slice
            if isinstance(sl, ast.Slice):
                lo = self.eval(sl.lower) if sl.lower else None
                hi = self.eval(sl.upper) if sl.upper else None
                return base[lo:hi]
            return base[self.eval(sl)]
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "textwrap"
            and node.func.attr == "dedent"
        ):
            return textwrap.dedent(self.eval(node.args[0]))
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("format", "join")
        ):
            base = self.eval(node.func.value)
            args = [self.eval(a) for a in node.args]
            kwargs = {k.arg: self.eval(k.value) for k in node.keywords if k.arg}
            if not isinstance(base, str) or len(kwargs) != len(node.keywords):
                raise NotLiteral("method of a non-string")
            if node.func.attr == "format":
                return base.format(*args, **kwargs)
            return base.join(args[0])
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "param"
        ):
            return [self.eval(a) for a in node.args]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -self.eval(node.operand)
        raise NotLiteral(type(node).__name__)


def _py_param(env: dict[str, Any], node: ast.AST) -> Any:
    """A parameter's value; a class or constant the test imports is kept as its name."""
    if isinstance(node, ast.Attribute) or (
        isinstance(node, ast.Name)
        and node.id not in env
        and node.id[:1].isupper()
        and not node.id.isupper()
    ):
        return {"ref": ast.unparse(node)}
    return PyEval(env).eval(node)


def _py_env(tree: ast.Module) -> dict[str, Any]:
    env: dict[str, Any] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            if isinstance(target, ast.Name):
                with contextlib.suppress(NotLiteral):
                    env[target.id] = PyEval(env).eval(stmt.value)
    return env


def extract_detect_secrets(files: dict[str, str]) -> dict[str, Any]:
    vectors = []
    for path, src in sorted(files.items()):
        tree = ast.parse(src)
        env = _py_env(tree)
        lists = {
            s.targets[0].id: s.value
            for s in tree.body
            if isinstance(s, ast.Assign)
            and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name)
            and isinstance(s.value, ast.List)
        }
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                continue
            for deco in node.decorator_list:
                if not (
                    isinstance(deco, ast.Call)
                    and isinstance(deco.func, ast.Attribute)
                    and deco.func.attr == "parametrize"
                ):
                    continue
                names = [n.strip() for n in PyEval({}).eval(deco.args[0]).split(",")]
                values = deco.args[1]
                cases: list[tuple[ast.AST, list[str], dict[str, Any]]] = []
                if isinstance(values, (ast.List, ast.Tuple)):
                    cases = [(e, names, {}) for e in values.elts]
                else:  # parse_test_cases([(ext, CASES), …]): the lists, with their users
                    users: dict[str, list[Any]] = {}
                    for sub in ast.walk(values):
                        if (
                            isinstance(sub, ast.Tuple)
                            and len(sub.elts) == 2
                            and isinstance(sub.elts[1], ast.Name)
                        ):
                            users.setdefault(sub.elts[1].id, []).append(
                                PyEval({}).eval(sub.elts[0])
                            )
                    inner = [n for n in names if n != "file_extension"]
                    for list_name in lists:  # every *_CASES list, used by the test or not
                        if list_name.endswith("_CASES"):
                            users.setdefault(list_name, [])
                    for list_name, exts in users.items():
                        for e in lists[list_name].elts:
                            cases.append((e, inner, {"list": list_name, "file_extensions": exts}))
                for elem, case_names, extra in cases:
                    rec: dict[str, Any] = {
                        "path": path,
                        "test": node.name,
                        "line": elem.lineno,
                        "params": case_names,
                        "source": ast.get_source_segment(src, elem),
                    }
                    rec.update(extra)
                    try:
                        if len(case_names) == 1:
                            value = [_py_param(env, elem)]
                        elif isinstance(elem, ast.Tuple):
                            value = [_py_param(env, e) for e in elem.elts]
                        else:
                            value = PyEval(env).eval(elem)
                        rec["values"] = dict(zip(case_names, value, strict=True))
                        rec["literal"] = True
                    except (NotLiteral, ValueError, TypeError, IndexError, KeyError) as exc:
                        rec["literal"] = False
                        rec["why"] = str(exc)
                    vectors.append(rec)
    return {"files": len(files), "vectors": vectors}


def count_detect_secrets(files: dict[str, str]) -> int:
    """An independent count: elements of every parametrize list and of every module-level
    ``*_CASES`` list the keyword test expands."""
    total = 0
    for src in files.values():
        tree = ast.parse(src)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "parametrize"
                and isinstance(node.args[1], (ast.List, ast.Tuple))
            ):
                total += len(node.args[1].elts)
        for stmt in tree.body:
            if (
                isinstance(stmt, ast.Assign)
                and isinstance(stmt.targets[0], ast.Name)
                and stmt.targets[0].id.endswith("_CASES")
                and isinstance(stmt.value, ast.List)
            ):
                total += len(stmt.value.elts)
    return total


# --------------------------------------------------------------------------------------


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def _mirror_files(repo: Path, folder: str, suffix: str) -> tuple[str, dict[str, str]]:
    commit = _git(repo, "rev-parse", "HEAD").strip()
    names = _git(repo, "ls-tree", "--name-only", "HEAD", folder + "/").split()
    files = {
        n: _git(repo, "show", f"HEAD:{n}")
        for n in names
        if n.endswith(suffix) and not n.endswith("_test.go")
    }
    return commit, files


def build(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    oc_src = Path(args.openclaw).read_text(encoding="utf-8")
    oc = extract_openclaw(oc_src)
    out["openclaw.json"] = {
        "source": {
            "repository": OPENCLAW_REPO,
            "path": OPENCLAW_PATH,
            "commit": args.openclaw_commit,
            "chars": len(oc_src),
        },
        "counted_tests": count_openclaw_tests(oc_src),
        "tests": oc["tests"],
        "vectors": oc["vectors"],
    }
    commit, files = _mirror_files(Path(args.gitleaks), GITLEAKS_DIR, ".go")
    gl = extract_gitleaks(files)
    out["gitleaks.json"] = {
        "source": {"repository": GITLEAKS_REPO, "path": GITLEAKS_DIR + "/*.go", "commit": commit},
        "counted_assignments": count_gitleaks(files),
        "files": gl["files"],
        "empty_lists": gl["empty_lists"],
        "vectors": gl["vectors"],
    }
    commit, files = _mirror_files(Path(args.detect_secrets), DETECT_SECRETS_DIR, "_test.py")
    ds = extract_detect_secrets(files)
    out["detect_secrets.json"] = {
        "source": {
            "repository": DETECT_SECRETS_REPO,
            "path": DETECT_SECRETS_DIR + "/*_test.py",
            "commit": commit,
        },
        "counted_cases": count_detect_secrets(files),
        "files": ds["files"],
        "vectors": ds["vectors"],
    }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--openclaw", required=True, help="a copy of redact.test.ts")
    parser.add_argument("--openclaw-commit", required=True)
    parser.add_argument("--gitleaks", required=True, help="git mirror of gitleaks/gitleaks")
    parser.add_argument("--detect-secrets", required=True, help="git mirror of Yelp/detect-secrets")
    parser.add_argument("--check", action="store_true", help="compare with the fixtures")
    args = parser.parse_args()
    built = build(args)
    stale = []
    for name, data in built.items():
        text = json.dumps(data, ensure_ascii=False, indent=1) + "\n"
        path = OUT / name
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            OUT.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        n = len(data["vectors"])
        print(f"{name}: {n} vectors")
    if stale:
        print("stale:", ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

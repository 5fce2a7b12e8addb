"""Word lists of the rule families in :mod:`openclaw_fts.redact.families` (data only).

Invariant: this module holds DATA only: lower-case words and name stems, no scanning. A name
is split into words (``db_pass_secure`` -> ``db``, ``pass``, ``secure``; ``apiKeyMyService``
-> ``api``, ``key``, ``my``, ``service``) before it is compared with these lists.
"""

from __future__ import annotations

from typing import Final

#: A name word starting with one of these names a secret wherever it stands in the name
#: (``secrete``, ``secret_token_value``, ``passwordHash`` is spared by the last word below).
SECRET_STEMS: Final = ("secret", "passw", "passphrase", "apikey", "iamapikey", "credential")
#: A name word equal to one of these names a secret wherever it stands (``db_pass_secure``,
#: ``cloudant_pw``): too short to be a stem (``pass`` starts ``passage``, ``pw`` ``pwn``).
SECRET_WORDS: Final = frozenset({"pass", "pw", "pwd", "passwd", "pswd", "pword"})
#: The stems and words that make a PASSWORD name: its value is masked whole (``***``).
PASSWORD_STEMS: Final = ("passw", "passphrase")
PASSWORD_WORDS: Final = SECRET_WORDS
#: A secret stem does not make these words secret names.
NOT_SECRET_WORDS: Final = frozenset({"secretary", "secretaries", "secretariat", "secreted"})
#: Last words that make a name ABOUT a secret, not the secret (``password_hash``,
#: ``secret_name``, ``apikey_header``, ``pass_count``).
ABOUT_SECRET_LAST_WORDS: Final = frozenset(
    {
        "arn", "count", "dir", "enabled", "env", "error", "errors", "expiry", "expires",
        "field", "fields", "file", "files", "format", "hash", "hashed", "header", "hint",
        "id", "ids", "label", "len", "length", "level", "manager", "max", "min", "mode",
        "name", "names", "param", "path", "policy", "prompt", "rate", "ref", "regex",
        "required", "reset", "rotation", "rule", "rules", "salt", "size", "store", "strength",
        "text", "ttl", "type", "uri", "url", "var", "version",
    }
)  # fmt: skip
#: With a secret name, a bare (unquoted) value equal to one of these is a placeholder or a
#: type, not the secret.
PLACEHOLDER_VALUES: Final = frozenset(
    {
        "none", "null", "nil", "true", "false", "undefined", "string", "str", "bytes",
        "int", "secret", "password", "required", "optional", "redacted", "hidden", "xxx",
        "todo", "changeme", "empty", "default", "env", "example",
    }
)  # fmt: skip
#: ``<word>_key``: the previous words that make the key a harmless one (a dictionary key, a
#: database key, a public key) — the value of any other ``…_key``/``…-key`` name that looks
#: like a token (letters and digits, long enough) is masked.
HARMLESS_KEY_PREFIXES: Final = frozenset(
    {
        "cache", "dict", "foreign", "hash", "idempotency", "index", "lookup", "map", "object",
        "partition", "primary", "public", "pub", "range", "row", "s3", "sort", "storage",
        "unique", "composite", "natural", "surrogate", "shard", "group", "sign", "signing",
        "host", "ssh", "gpg", "pgp", "dedup", "dedupe", "routing", "message", "translation",
        "i18n", "l10n", "locale", "react", "list", "item", "sub", "meta", "config", "setting",
        "settings", "option", "options", "registry", "hotkey", "short", "shortcut", "music",
        "piano", "db", "table", "column", "field", "json", "yaml", "env", "var", "my", "the",
        "this", "that", "new", "old", "next", "prev", "last", "first", "ui", "session", "agent",
        "user", "account", "event", "job", "task", "request", "idem", "dedupe_key", "state",
    }
)  # fmt: skip
#: Kubernetes manifests: the kinds whose ``data:``/``stringData:`` values are secrets.
SECRET_MANIFEST_KINDS: Final = frozenset({"secret"})
#: Kubernetes manifests: the maps whose values are the secret material.
SECRET_MANIFEST_MAPS: Final = frozenset({"data", "stringdata"})

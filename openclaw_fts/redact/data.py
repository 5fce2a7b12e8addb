"""Rule data of credential masking: vendor prefixes, token shapes and password commands.

Invariant: this module holds DATA only (no scanning): every rule carries a ``sample`` that the
built-in redactor must mask (the test suite checks each one, so a rule is added as one line
here with its sample). The rule modules (:mod:`openclaw_fts.redact.rules`) compile these into
their finders; the last section holds their word lists. docs/redaction.md describes the
families in words.

Kinds of rules (and, at the end, the NAME words: which variable, field, flag and URL
parameter names hold a secret, which are harmless, which are weak):

* :class:`VendorToken`: a fixed-width ``prefix`` (a regex that starts with a literal
  character: then the combined regex skips ahead to the possible first characters, which keeps
  the scan fast), then at least ``minimum`` characters of ``body`` (a one-character class).
  All of them are compiled into ONE regex, so the text is scanned once for all families; the
  prefix must start a word.
* :class:`PatternToken`: a whole regex whose group ``value`` is the secret, for shapes a
  prefix cannot describe (JWTs, AWS key ids, Airtable's ``pat….<hex>``, Salesforce sessions).
  Each pattern must start at a literal character or a lookbehind-guarded class (linear time).
* :class:`PasswordCommand`: command words whose short flags (``mysql -p``, ``redis-cli -a``)
  take a password.

Samples are random-looking strings made for these tests, never real credentials.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

#: Characters of a base64url token.
TOKEN_CHARS: Final = r"[A-Za-z0-9_\-]"


@dataclass(frozen=True)
class VendorToken:
    """A vendor-prefixed token: ``prefix`` then ``minimum``+ characters of ``body``."""

    family: str
    prefix: str
    body: str
    minimum: int
    sample: str


@dataclass(frozen=True)
class PatternToken:
    """A token found by a whole regex; its group ``value`` is masked."""

    family: str
    pattern: str
    sample: str
    #: A literal every match holds: the pattern runs only on texts that contain it (a pattern
    #: that cannot start with a literal would otherwise be tried at every position).
    anchor: str = ""
    #: When > 0: every match lies inside one run of token characters (letters, digits and
    #: ``_-./+=@~:``) at least this long: a text without such a run is skipped, and when it
    #: is a long run (20+), the pattern runs on the long runs only (linear in the runs, not a
    #: regex pass over the whole text).
    in_runs: int = 0
    #: When >= 0: every match holds :attr:`anchor` this many characters after its start, so
    #: the pattern is tried only there (found with ``str.find``), not at every position.
    anchor_at: int = -1


@dataclass(frozen=True)
class PasswordCommand:
    """Commands (lower case, without ``.exe``) whose short ``flags`` take a password."""

    family: str
    commands: tuple[str, ...]
    flags: str
    sample: str


# The minimum is well below the vendor's real length and high enough that kebab-case words
# (``sk-button-primary``, ``fw-tooshort``) do not qualify.
VENDOR_TOKENS: Final[tuple[VendorToken, ...]] = (
    VendorToken(
        "sk", "sk-", r"(?=[A-Za-z0-9_\-]*?[0-9])[A-Za-z0-9_\-]", 16, "sk-aB3cD4eF5gH6jK7mN8pQ"
    ),
    # Composio organisation and user API keys (``oak_…``, ``uak_…``; a digit in the body, so
    # an identifier such as ``oak_tree_planting_guide`` is not one)
    VendorToken(
        "composio-org",
        "oak_",
        r"(?=[A-Za-z0-9_\-]*?[0-9])[A-Za-z0-9_\-]",
        20,
        "oak_q7vXb2Rk9LmZp4TnW8yC",
    ),
    VendorToken(
        "composio-user",
        "uak_",
        r"(?=[A-Za-z0-9_\-]*?[0-9])[A-Za-z0-9_\-]",
        20,
        "uak_Hf3kQ9zVn2LwX7pRt5Ym",
    ),
    VendorToken(
        "stripe-secret", "sk_(?:live|test)_", "[A-Za-z0-9]", 16, "sk_live_aB3cD4eF5gH6jK7mN8pQ"
    ),
    VendorToken(
        "stripe-restricted", "rk_(?:live|test)_", "[A-Za-z0-9]", 16, "rk_live_aB3cD4eF5gH6jK7mN8pQ"
    ),
    VendorToken("stripe-webhook", "whsec_", "[A-Za-z0-9]", 16, "whsec_aB3cD4eF5gH6jK7mN8pQ"),
    VendorToken(
        "github-pat", "github_pat_", "[A-Za-z0-9_]", 20, "github_pat_aB3cD4eF5gH6jK7mN8pQ9rS2"
    ),
    VendorToken("gitlab", "glpat-", TOKEN_CHARS, 20, "glpat-aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("slack", "xox[bapors]-", r"[A-Za-z0-9\-]", 10, "xoxb-aB3cD4eF5gH6jK"),
    VendorToken("slack-app", "xapp-", r"[A-Za-z0-9\-]", 10, "xapp-aB3cD4eF5gH6jK"),
    VendorToken("google-api", "AIza", TOKEN_CHARS, 30, "AIzaaB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0xYzb"),
    VendorToken("google-oauth", r"ya29\.", TOKEN_CHARS, 20, "ya29.aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("huggingface", "hf_", "[A-Za-z0-9]", 20, "hf_aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("npm", "npm_", "[A-Za-z0-9]", 20, "npm_aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("pypi", "pypi-", TOKEN_CHARS, 20, "pypi-aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("groq", "gsk_", "[A-Za-z0-9]", 20, "gsk_aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("xai", "xai-", "[A-Za-z0-9]", 20, "xai-aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("perplexity", "pplx-", "[A-Za-z0-9]", 20, "pplx-aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("anthropic", "sk-ant-", TOKEN_CHARS, 16, "sk-ant-aB3cD4eF5gH6jK7mN8pQ"),
    VendorToken("openai-project", "sk-proj-", TOKEN_CHARS, 16, "sk-proj-aB3cD4eF5gH6jK7mN8pQ"),
    VendorToken("openrouter", "sk-or-", TOKEN_CHARS, 16, "sk-or-aB3cD4eF5gH6jK7mN8pQ"),
    VendorToken(
        "openai-service", "sk-svcacct-", TOKEN_CHARS, 16, "sk-svcacct-aB3cD4eF5gH6jK7mN8pQ"
    ),
    VendorToken("openai-admin", "sk-admin-", TOKEN_CHARS, 16, "sk-admin-aB3cD4eF5gH6jK7mN8pQ"),
    VendorToken("sk-underscore", "sk_", "[A-Za-z0-9]", 20, "sk_aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("stripe-prod", "sk_prod_", "[A-Za-z0-9]", 16, "sk_prod_aB3cD4eF5gH6jK7mN8pQ"),
    VendorToken(
        "stripe-prod-restricted", "rk_prod_", "[A-Za-z0-9]", 16, "rk_prod_aB3cD4eF5gH6jK7mN8pQ"
    ),
    VendorToken("replicate", "r8_", "[A-Za-z0-9]", 20, "r8_aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("gitlab-oas", "gloas-", r"[A-Za-z0-9_.\-]", 20, "gloas-aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("gitlab-dt", "gldt-", r"[A-Za-z0-9_.\-]", 20, "gldt-aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("gitlab-cbt", "glcbt-", r"[A-Za-z0-9_.\-]", 20, "glcbt-aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("gitlab-ptt", "glptt-", r"[A-Za-z0-9_.\-]", 20, "glptt-aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("gitlab-ft", "glft-", r"[A-Za-z0-9_.\-]", 20, "glft-aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("gitlab-imt", "glimt-", r"[A-Za-z0-9_.\-]", 20, "glimt-aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken(
        "gitlab-agent", "glagent-", r"[A-Za-z0-9_.\-]", 20, "glagent-aB3cD4eF5gH6jK7mN8pQ9rS2"
    ),
    VendorToken("gitlab-wt", "glwt-", r"[A-Za-z0-9_.\-]", 20, "glwt-aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken(
        "gitlab-soat", "glsoat-", r"[A-Za-z0-9_.\-]", 20, "glsoat-aB3cD4eF5gH6jK7mN8pQ9rS2"
    ),
    VendorToken(
        "gitlab-ffct", "glffct-", r"[A-Za-z0-9_.\-]", 20, "glffct-aB3cD4eF5gH6jK7mN8pQ9rS2"
    ),
    VendorToken("gitlab-rt", "glrt-", r"[A-Za-z0-9_.\-]", 20, "glrt-aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("gitlab-rtr", "glrtr-", r"[A-Za-z0-9_.\-]", 20, "glrtr-aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken(
        "gitlab-ft-short",
        "glft-",
        r"(?=[A-Za-z0-9_\-]{0,19}[0-9])[A-Za-z0-9_\-]",
        8,
        "glft-aB3cD4eF5gH6",
    ),
    VendorToken(
        "gitlab-rt-short",
        "glrt-",
        r"(?=[A-Za-z0-9_\-]{0,19}[0-9])[A-Za-z0-9_\-]",
        8,
        "glrt-aB3cD4eF5gH6",
    ),
    VendorToken("gitlab-runner", "GR1348941", TOKEN_CHARS, 20, "GR1348941aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken(
        "gitlab-session",
        "_gitlab_session=",
        "[A-Za-z0-9]",
        20,
        "_gitlab_session=aB3cD4eF5gH6jK7mN8pQ9rS2",
    ),
    VendorToken(
        "grafana-sa", "glsa_", "[A-Za-z0-9_+/=]", 32, "glsa_aB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0xYzbdf"
    ),
    VendorToken(
        "grafana-cloud", "glc_", "[A-Za-z0-9_+/=]", 32, "glc_aB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0xYzbdf"
    ),
    VendorToken("fal", "fal_", TOKEN_CHARS, 20, "fal_aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("firecrawl", "fc-", "[A-Za-z0-9]", 20, "fc-aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("browserbase", "bb_live_", TOKEN_CHARS, 20, "bb_live_aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken(
        "huggingface-org", "api_org_", "[A-Za-z0-9]", 20, "api_org_aB3cD4eF5gH6jK7mN8pQ9rS2"
    ),
    VendorToken(
        "digitalocean", "do[opr]_v1_", "[A-Za-z0-9]", 20, "doo_v1_aB3cD4eF5gH6jK7mN8pQ9rS2"
    ),
    VendorToken("doppler-pt", r"dp\.pt\.", "[A-Za-z0-9]", 20, "dp.pt.aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("doppler-st", r"dp\.st\.", "[A-Za-z0-9]", 20, "dp.st.aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("doppler-sa", r"dp\.sa\.", "[A-Za-z0-9]", 20, "dp.sa.aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("doppler-ct", r"dp\.ct\.", "[A-Za-z0-9]", 20, "dp.ct.aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken(
        "docker", "dckr_(?:pat|oat)_", TOKEN_CHARS, 20, "dckr_pat_aB3cD4eF5gH6jK7mN8pQ9rS2"
    ),
    VendorToken("buildkite", "bkua_", "[A-Za-z0-9]", 20, "bkua_aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("circleci", "CCIPAT_", TOKEN_CHARS, 20, "CCIPAT_aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("supabase", "sbp_", "[A-Za-z0-9]", 20, "sbp_aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken(
        "databricks", "dapi", "[A-Za-z0-9]", 32, "dapiaB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0xYzbdf"
    ),
    VendorToken("datadog", "ddp_", "[A-Za-z0-9]", 20, "ddp_aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("netlify", "nfp_", "[A-Za-z0-9]", 20, "nfp_aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("contentful", "CFPAT-", TOKEN_CHARS, 20, "CFPAT-aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("atlassian", "ATATT", r"[A-Za-z0-9_\-=]", 20, "ATATTaB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken(
        "atlassian-cloud",
        "ATCTT3xFfG",
        r"[A-Za-z0-9_\-=]",
        20,
        "ATCTT3xFfGaB3cD4eF5gH6jK7mN8pQ9rS2",
    ),
    VendorToken("bitbucket", "ATBB", "[A-Za-z0-9]", 20, "ATBBaB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("bitbucket-dc", "BBDC-", TOKEN_CHARS, 20, "BBDC-aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("heroku", "HRKU-", TOKEN_CHARS, 20, "HRKU-aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken(
        "hubspot", "pat-(?:na|eu)[12]-", r"[A-Za-z0-9\-]", 20, "pat-na1-aB3cD4eF5gH6jK7mN8pQ9rS2"
    ),
    VendorToken("apify", "apify_api_", "[A-Za-z0-9]", 20, "apify_api_aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("frameio", "fio-u-", TOKEN_CHARS, 20, "fio-u-aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("agentmail", "am_", "[A-Za-z0-9]", 20, "am_aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("tavily", "tvly-", TOKEN_CHARS, 20, "tvly-aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("exa", "exa_", "[A-Za-z0-9]", 20, "exa_aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("matrix", "syt_", TOKEN_CHARS, 20, "syt_aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("retaindb", "retaindb_", "[A-Za-z0-9]", 20, "retaindb_aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("hsk", "hsk-", TOKEN_CHARS, 20, "hsk-aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("mem0", "mem0_", "[A-Za-z0-9]", 20, "mem0_aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("brv", "brv_", "[A-Za-z0-9]", 20, "brv_aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("fireworks", "fw[-_]", "[A-Za-z0-9]", 20, "fw-aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("fireworks-pk", "fpk_", "[A-Za-z0-9]", 20, "fpk_aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("tencent", "AKID", "[A-Za-z0-9]", 20, "AKIDaB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("alibaba", "LTAI", "[A-Za-z0-9]", 12, "LTAIaB3cD4eF5gH6jK7m"),
    VendorToken("google-refresh", "1//0", TOKEN_CHARS, 20, "1//0aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken(
        "slack-webhook",
        r"//hooks\.slack\.com/services/",
        r"[A-Za-z0-9/_\-]",
        20,
        "https://hooks.slack.com/services/aB3cD4eF5gH6jK7mN8pQ9rS2",
    ),
    VendorToken(
        "slack-workflow",
        r"//hooks\.slack\.com/workflows/",
        r"[A-Za-z0-9/_\-]",
        20,
        "https://hooks.slack.com/workflows/aB3cD4eF5gH6jK7mN8pQ9rS2",
    ),
    VendorToken(
        "discord-webhook",
        r"//discord\.com/api/webhooks/",
        r"[A-Za-z0-9/_\-]",
        20,
        "https://discord.com/api/webhooks/aB3cD4eF5gH6jK7mN8pQ9rS2",
    ),
    VendorToken(
        "discordapp-webhook",
        r"//discordapp\.com/api/webhooks/",
        r"[A-Za-z0-9/_\-]",
        20,
        "https://discordapp.com/api/webhooks/aB3cD4eF5gH6jK7mN8pQ9rS2",
    ),
    VendorToken("linear", "lin_api_", "[A-Za-z0-9]", 20, "lin_api_aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("postman", "PMAK-", r"[A-Za-z0-9\-]", 20, "PMAK-aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken(
        "shopify", "shp(?:at|ca|pa|ss)_", "[A-Fa-f0-9]", 20, "shpat_aB3cD4eF56789210bdfaB3cD"
    ),
    VendorToken("sentry", "sntry[su]_", "[A-Za-z0-9+/=_]", 20, "sntrys_aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("newrelic", "NRAK-", "[A-Z0-9]", 20, "NRAK-B3D4F5H6K7N8Q9S2U1W0YB3D"),
    VendorToken(
        "planetscale", "pscale_tkn_", TOKEN_CHARS, 20, "pscale_tkn_aB3cD4eF5gH6jK7mN8pQ9rS2"
    ),
    VendorToken(
        "planetscale-pw", "pscale_pw_", TOKEN_CHARS, 20, "pscale_pw_aB3cD4eF5gH6jK7mN8pQ9rS2"
    ),
    VendorToken(
        "age", "AGE-SECRET-KEY-1", "[A-Z0-9]", 20, "AGE-SECRET-KEY-1B3D4F5H6K7N8Q9S2U1W0YB3D"
    ),
    VendorToken("vault", r"hv[sbr]\.", TOKEN_CHARS, 20, "hvs.aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("mailgun", "key-", "[a-f0-9]", 32, "key-a3c4e56789210bdfa3c4e56789210bdfa3c4"),
    VendorToken("brevo", "xkeysib-", r"[A-Za-z0-9\-]", 20, "xkeysib-aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("dynatrace", r"dt0c01\.", "[A-Za-z0-9.]", 20, "dt0c01.aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("rubygems", "rubygems_", "[a-f0-9]", 20, "rubygems_a3c4e56789210bdfa3c4e567"),
    VendorToken("clojars", "CLOJARS_", "[A-Za-z0-9]", 20, "CLOJARS_aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken(
        "easypost", "EZ[AT]K", "[A-Za-z0-9]", 40, "EZAKaB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0xYzbdfaB3cD4eF"
    ),
    VendorToken(
        "duffel", "duffel_(?:test|live)_", TOKEN_CHARS, 20, "duffel_test_aB3cD4eF5gH6jK7mN8pQ9rS2"
    ),
    VendorToken(
        "flutterwave",
        "FLW(?:PUB|SEC)K_TEST-",
        r"[A-Za-z0-9\-]",
        20,
        "FLWPUBK_TEST-aB3cD4eF5gH6jK7mN8pQ9rS2",
    ),
    VendorToken("readme", "rdme_", "[a-z0-9]", 20, "rdme_a3c4e5g6j7m8p9r2t1v0xzbd"),
    VendorToken("prefect", "pnu_", "[A-Za-z0-9]", 20, "pnu_aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("typeform", "tfp_", TOKEN_CHARS, 20, "tfp_aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("figma", "figd_", TOKEN_CHARS, 20, "figd_aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken(
        "notion", "secret_", "[A-Za-z0-9]", 32, "secret_aB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0xYzbdf"
    ),
    VendorToken(
        "notion-ntn", "ntn_", "[A-Za-z0-9]", 32, "ntn_aB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0xYzbdf"
    ),
    VendorToken(
        "langsmith", "lsv2_(?:pt|sk)_", "[A-Za-z0-9_]", 20, "lsv2_pt_aB3cD4eF5gH6jK7mN8pQ9rS2"
    ),
    VendorToken("fernet", "gAAAA", r"[A-Za-z0-9_\-=]", 20, "gAAAAaB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("1password", "ops_eyJ", "[A-Za-z0-9+/=]", 20, "ops_eyJaB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken(
        "openai-org",
        "org-",
        "(?=[A-Za-z0-9]{0,23}[0-9])[A-Za-z0-9]",
        24,
        "org-aB3cD4eF5gH6jK7mN8pQ9rS2tU1v",
    ),
    VendorToken("twitch", "oauth:", "[a-z0-9]", 30, "oauth:a3c4e5g6j7m8p9r2t1v0xzbdfa3c4e5g6j"),
    VendorToken(
        "artifactory",
        "AKCp",
        "[A-Za-z0-9]",
        60,
        "AKCpaB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0xYzbdfaB3cD4eF5gH6jK7mN8pQ9rS2tU1v",
    ),
    VendorToken("adafruit", "aio_", "[A-Za-z0-9]", 28, "aio_aB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0xY"),
    VendorToken(
        "scalingo", "tk-us-", TOKEN_CHARS, 40, "tk-us-aB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0xYzbdfaB3cD4eF"
    ),
    VendorToken(
        "sourcegraph", "sgp_", "[A-Za-z0-9_]", 32, "sgp_aB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0xYzbdf"
    ),
    VendorToken(
        "pulumi", "pul-", "[a-f0-9]", 40, "pul-a3c4e56789210bdfa3c4e56789210bdfa3c4e5678921"
    ),
    VendorToken("github", "gh[pousr]_", "[A-Za-z0-9_]", 20, "ghp_aB3cD4eF5gH6jK7mN8pQ9rS2"),
    VendorToken("slack-config", "xox[ce]-", r"[A-Za-z0-9\-]", 10, "xoxc-aB3cD4eF5gH6jK"),
    VendorToken(
        "slack-refresh", r"xoxe\.xox[bp]-", r"[A-Za-z0-9\-]", 10, "xoxe.xoxb-aB3cD4eF5gH6jK"
    ),
    VendorToken(
        "slack-trigger",
        r"//hooks\.slack\.com/triggers/",
        r"[A-Za-z0-9/_\-]",
        20,
        "https://hooks.slack.com/triggers/aB3cD4eF5gH6jK7mN8pQ9rS2",
    ),
    VendorToken(
        "discord-ptb-webhook",
        r"//ptb\.discord\.com/api/webhooks/",
        r"[A-Za-z0-9/_\-]",
        20,
        "https://ptb.discord.com/api/webhooks/aB3cD4eF5gH6jK7mN8pQ9rS2",
    ),
    VendorToken(
        "discord-canary-webhook",
        r"//canary\.discord\.com/api/webhooks/",
        r"[A-Za-z0-9/_\-]",
        20,
        "https://canary.discord.com/api/webhooks/aB3cD4eF5gH6jK7mN8pQ9rS2",
    ),
    VendorToken(
        "teams-webhook",
        r"\.webhook\.office\.com/webhookb2/",
        r"[A-Za-z0-9@/_\-]",
        40,
        "https://acme.webhook.office.com/webhookb2/aB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0xYzbdfaB3cD4eF",
    ),
    VendorToken(
        "outlook-webhook",
        r"//outlook\.office\.com/webhook/",
        r"[A-Za-z0-9@/_\-]",
        40,
        "https://outlook.office.com/webhook/aB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0xYzbdfaB3cD4eF",
    ),
    VendorToken(
        "zapier-webhook",
        r"//hooks\.zapier\.com/hooks/catch/",
        r"[A-Za-z0-9/_\-]",
        10,
        "https://hooks.zapier.com/hooks/catch/aB3cD4eF5gH6jK",
    ),
    VendorToken(
        "ifttt-webhook",
        "/with/key/",
        TOKEN_CHARS,
        20,
        "https://maker.ifttt.com/trigger/deploy/with/key/aB3cD4eF5gH6jK7mN8pQ9rS2",
    ),
    VendorToken(
        "mattermost-webhook",
        "/hooks/",
        "[a-z0-9]",
        26,
        "https://chat.example.com/hooks/a3c4e5g6j7m8p9r2t1v0xzbdfa3c4e",
    ),
    VendorToken(
        "dropbox",
        r"sl\.",
        r"[A-Za-z0-9_\-=.]",
        100,
        "sl.aB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0xYzbdfaB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0xYzbdfaB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0xY",
    ),
    VendorToken(
        "mapbox-secret",
        r"sk\.eyJ",
        r"[A-Za-z0-9_\-.]",
        60,
        "sk.eyJaB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0xYzbdfaB3cD4eF5gH6jK7mN8pQ9rS2tU1v",
    ),
    VendorToken(
        "mapbox-temp",
        r"tk\.eyJ",
        r"[A-Za-z0-9_\-.]",
        60,
        "tk.eyJaB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0xYzbdfaB3cD4eF5gH6jK7mN8pQ9rS2tU1v",
    ),
    VendorToken(
        "doppler-audit", r"dp\.audit\.", "[A-Za-z0-9]", 20, "dp.audit.aB3cD4eF5gH6jK7mN8pQ9rS2"
    ),
    VendorToken(
        "doppler-scim", r"dp\.scim\.", "[A-Za-z0-9]", 20, "dp.scim.aB3cD4eF5gH6jK7mN8pQ9rS2"
    ),
    VendorToken(
        "nuget", "oy2", "[a-z0-9]", 43, "oy2a3c4e5g6j7m8p9r2t1v0xzbdfa3c4e5g6j7m8p9r2t1v0xz"
    ),
    VendorToken(
        "sonarqube-user", "squ_", "[a-z0-9]", 40, "squ_a3c4e5g6j7m8p9r2t1v0xzbdfa3c4e5g6j7m8p9r2t1v"
    ),
    VendorToken(
        "sonarqube-project",
        "sqp_",
        "[a-z0-9]",
        40,
        "sqp_a3c4e5g6j7m8p9r2t1v0xzbdfa3c4e5g6j7m8p9r2t1v",
    ),
    VendorToken(
        "sonarqube-analysis",
        "sqa_",
        "[a-z0-9]",
        40,
        "sqa_a3c4e5g6j7m8p9r2t1v0xzbdfa3c4e5g6j7m8p9r2t1v",
    ),
    VendorToken(
        "flyio-org", "fo1_", TOKEN_CHARS, 40, "fo1_aB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0xYzbdfaB3cD4eF"
    ),
    VendorToken(
        "flyio-machine",
        "fm[12][ar_]",
        TOKEN_CHARS,
        40,
        "fm1aaB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0xYzbdfaB3cD4eF",
    ),
    VendorToken("square-access", "sq0atp-", TOKEN_CHARS, 22, "sq0atp-aB3cD4eF5gH6jK7mN8pQ9rS2tU"),
    VendorToken(
        "square-secret",
        "sq0csp-",
        TOKEN_CHARS,
        40,
        "sq0csp-aB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0xYzbdfaB3cD4eF",
    ),
    VendorToken(
        "square-oauth",
        "EAAA",
        r"[A-Za-z0-9_\-+=]",
        60,
        "EAAAaB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0xYzbdfaB3cD4eF5gH6jK7mN8pQ9rS2tU1v",
    ),
    VendorToken(
        "facebook-page",
        "EAA[MC]",
        "[A-Za-z0-9]",
        100,
        "EAAMaB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0xYzbdfaB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0xYzbdfaB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0xY",
    ),
    VendorToken(
        "shippo",
        "shippo_(?:live|test)_",
        "[a-f0-9]",
        40,
        "shippo_live_a3c4e56789210bdfa3c4e56789210bdfa3c4e5678921",
    ),
    VendorToken("infracost", "ico-", "[A-Za-z0-9]", 32, "ico-aB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0xYzbdf"),
    VendorToken("octopus", "API-", "[A-Z0-9]", 26, "API-B3D4F5H6K7N8Q9S2U1W0YB3D4F5H6K"),
    VendorToken("settlemint", "sm_[pas]at_", "[A-Za-z0-9]", 16, "sm_pat_aB3cD4eF5gH6jK7mN8pQ"),
    VendorToken("adobe", "p8e-", "[A-Za-z0-9]", 32, "p8e-aB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0xYzbdf"),
    VendorToken(
        "cloudflare-origin",
        r"v1\.0-",
        r"[a-f0-9\-]",
        150,
        "v1.0-a3c4e56789210bdfa3c4e56789210bdfa3c4e56789210bdfa3c4e56789210bdfa3c4e56789210bdfa3c4e56789210bdfa3c4e56789210bdfa3c4e56789210bdfa3c4e56789210bdfa3c4e56789",
    ),
    VendorToken(
        "yandex-api", "AQVN", TOKEN_CHARS, 35, "AQVNaB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0xYzbdfaB3"
    ),
    VendorToken("newrelic-browser", "NRJS-", "[a-f0-9]", 19, "NRJS-a3c4e56789210bdfa3c4e56"),
    VendorToken(
        "newrelic-insert", "NRII-", TOKEN_CHARS, 32, "NRII-aB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0xYzbdf"
    ),
    VendorToken(
        "planetscale-oauth",
        "pscale_oauth_",
        TOKEN_CHARS,
        32,
        "pscale_oauth_aB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0xYzbdf",
    ),
    VendorToken(
        "gocardless",
        "live_",
        r"[A-Za-z0-9_\-=]",
        40,
        "live_aB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0xYzbdfaB3cD4eF",
    ),
    VendorToken(
        "openshift",
        "sha256~",
        TOKEN_CHARS,
        43,
        "sha256~aB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0xYzbdfaB3cD4eF5gH",
    ),
    VendorToken(
        "grafana-legacy",
        "eyJrIjoi",
        "[A-Za-z0-9]",
        70,
        "eyJrIjoiaB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0xYzbdfaB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0xYzbdfaB",
    ),
    VendorToken(
        "clickhouse", "4b1d", "[A-Za-z0-9]", 38, "4b1daB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0xYzbdfaB3cD4"
    ),
    VendorToken(
        "intra42",
        "s-s4t2[ua][df]-",
        "[a-f0-9]",
        64,
        "s-s4t2ud-a3c4e56789210bdfa3c4e56789210bdfa3c4e56789210bdfa3c4e56789210bdfa3c4",
    ),
    VendorToken(
        "defined-networking", "dnkey-", r"[a-z0-9=_\-]", 26, "dnkey-a3c4e5g6j7m8p9r2t1v0xzbdfa3c4e"
    ),
    VendorToken(
        "plaid-sand",
        "access-sandbox-",
        r"[a-f0-9\-]",
        36,
        "access-sandbox-a3c4e56789210bdfa3c4e56789210bdfa3c4e567",
    ),
    VendorToken(
        "plaid-deve",
        "access-development-",
        r"[a-f0-9\-]",
        36,
        "access-development-a3c4e56789210bdfa3c4e56789210bdfa3c4e567",
    ),
    VendorToken(
        "plaid-prod",
        "access-production-",
        r"[a-f0-9\-]",
        36,
        "access-production-a3c4e56789210bdfa3c4e56789210bdfa3c4e567",
    ),
    VendorToken("lob", "live_pub_", "[a-f0-9]", 31, "live_pub_a3c4e56789210bdfa3c4e56789210bdfa3c"),
    VendorToken(
        "lob-test", "test_pub_", "[a-f0-9]", 31, "test_pub_a3c4e56789210bdfa3c4e56789210bdfa3c"
    ),
    VendorToken("newrelic-admin", "NRAA-", "[a-f0-9]", 27, "NRAA-3f9a0c4d3f9a0c4d6b2e7f186b2"),
    VendorToken("newrelic-user", "NRAK-", "[A-Z0-9]", 27, "NRAK-Q3EGRPN7XKZL2M4TB8CD5EF6GH9"),
    VendorToken("newrelic-rest", "NRRA-", "[a-f0-9]", 42, "NRRA-" + "3f9a0c4d6b" * 4 + "2e"),
    VendorToken(
        "newrelic-insights", "NRI[IQ]-", TOKEN_CHARS, 32, "NRII-aB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0x"
    ),
    VendorToken("twilio-api-key", "SK", "[0-9a-f]", 32, "SK3f9a0c4d3f9a0c4d6b2e7f186b2e7f18"),
    VendorToken(
        "bittensor", "bt_", "[A-Za-z0-9]", 40, "bt_aB3cD4eF5gH6jK7mN8pQ9rS2tU1vW0xYzbdfaB3cD4eF"
    ),
    # issue #41: shapes from detect-secrets' and gitleaks' public rule lists
    VendorToken("sonarqube", "sq[pua]_", "[A-Za-z0-9]", 40, "sqp_" + "aB3cD4eF5gH6jK7mN8pQ" * 2),
    VendorToken("amazon-bedrock", "ABSK", "[A-Za-z0-9+/]", 100, "ABSK" + "QmVkcm9ja0FQSUtleS1" * 6),
)

#: Segments of a JWT shorter than this are not a JWT (a real header is ~36 characters).
MIN_JWT_SEGMENT_CHARS: Final = 5
#: Segments after a JWT's header and payload: 1 for a signed JWT (JWS), 3 for an encrypted one
#: (JWE: header.key.iv.ciphertext.tag).
MAX_JWT_EXTRA_SEGMENTS: Final = 3
#: Characters after ``AKIA``/``ASIA`` in an AWS access key id (exactly this many).
AWS_KEY_ID_BODY_CHARS: Final = 16
#: Both dot-separated parts of a SendGrid key are at least this long (real: 22 and 43).
MIN_SENDGRID_PART_CHARS: Final = 16

_T = TOKEN_CHARS
PATTERN_TOKENS: Final[tuple[PatternToken, ...]] = (
    PatternToken(
        "jwt",
        rf"(?P<value>eyJ(?<!{_T}eyJ){_T}{{{MIN_JWT_SEGMENT_CHARS},}}"
        rf"\.{_T}{{{MIN_JWT_SEGMENT_CHARS},}}(?:\.{_T}*){{1,{MAX_JWT_EXTRA_SEGMENTS}}})",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJlLXNhbXBsZQ",
        anchor="eyJ",
        anchor_at=0,
        in_runs=15,
    ),
    # a JWT with no signature (``alg: none``, or cut before it): header and payload both JSON
    PatternToken(
        "jwt-unsigned",
        rf"(?P<value>eyJ(?<!{_T}eyJ){_T}{{{MIN_JWT_SEGMENT_CHARS},}}"
        rf"\.eyJ{_T}{{{MIN_JWT_SEGMENT_CHARS},}})",
        "eyJhbGciOiJub25lIn0.eyJzdWIiOiIxMjM0NTY3ODkwIn0",
        anchor="eyJ",
        anchor_at=0,
        in_runs=17,
    ),
    # AWS key ids of the other principal kinds (IAM user, role, group …), 4 + 16 characters
    PatternToken(
        "aws-principal-key-id",
        r"(?P<value>A(?:3T[A-Z0-9]|BIA|CCA|GPA|IDA|IPA|NPA|NVA|PKA|ROA)(?<![A-Za-z0-9_\-]....)"
        rf"[A-Z0-9]{{{AWS_KEY_ID_BODY_CHARS}}})(?![A-Za-z0-9])",
        "AROAQ3EGRPN7XKZL2M4T",
        in_runs=20,
    ),
    # Twilio account sid / API key sid: ``AC``/``SK`` and 32 lower-case hex-like characters
    PatternToken(
        "twilio",
        r"(?P<value>(?:AC|SK)(?<![A-Za-z0-9_\-]..)[a-z0-9]{32})(?![A-Za-z0-9])",
        "SK3f9a0c4d3f9a0c4d3f9a0c4d3f9a0c4d",
        in_runs=34,
    ),
    # JFrog Artifactory API keys (``AKC…``) and passwords (``AP`` + hex digit …)
    PatternToken(
        "artifactory",
        r"(?P<value>A(?:KC|P[0-9A-F])(?<![A-Za-z0-9_\-]...)(?=[A-Za-z0-9]*[a-z0-9])[A-Za-z0-9]{10,})"
        r"(?![A-Za-z0-9])",
        "AKCp8aB3cD4eF5gH6jK7",
        in_runs=13,
    ),
    # SoftLayer's SOAP endpoint with its 64-character API key in the path
    PatternToken(
        "softlayer-url",
        r"api\.softlayer\.com/soap/v3(?:\.1)?/(?P<value>[a-z0-9]{64})",
        "https://api.softlayer.com/soap/v3/" + "3f9a0c4d" * 8,
        anchor="softlayer",
        anchor_at=4,
        in_runs=64,
    ),
    PatternToken(
        "sendgrid",
        rf"(?P<value>SG\.(?<!{_T}SG\.){_T}{{{MIN_SENDGRID_PART_CHARS},}}"
        rf"\.{_T}{{{MIN_SENDGRID_PART_CHARS},}})",
        "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",
        anchor="SG.",
        anchor_at=0,
        in_runs=35,
    ),
    PatternToken(
        "aws-access-key-id",
        rf"(?P<value>A[KS]IA(?<![A-Za-z0-9_\-]A[KS]IA)[A-Z0-9]{{{AWS_KEY_ID_BODY_CHARS}}})"
        r"(?![A-Za-z0-9])",
        "AKIAQ3EGRPN7XKZL2M4T",
        anchor="IA",
        anchor_at=2,
        in_runs=20,
    ),
    # Airtable personal access token: ``pat`` + 14 characters, ``.``, 64 hex.
    PatternToken(
        "airtable-pat",
        r"(?P<value>pat(?<![A-Za-z0-9_]pat)[A-Za-z0-9]{14}\.[a-f0-9]{64})",
        "patQ3egRPn7XkZl2M." + "3f9a0c4d" * 8,
        anchor="pat",
        anchor_at=0,
        in_runs=82,
    ),
    # Salesforce session id / access token: org id ``00D…``, ``!``, the session part.
    PatternToken(
        "salesforce-session",
        r"(?P<value>00D(?<![A-Za-z0-9_]00D)[A-Za-z0-9]{12,15}![A-Za-z0-9._]{20,})",
        "00D5g000004ABCD!AQ8AQHx9yJ2kLmNoPqRsTuVwXyZ0123456789abcdefghij",
        anchor="00D",
        anchor_at=0,
    ),
    # Azure AD client secret: 3 characters, a digit, ``Q~``, 31-34 characters.
    PatternToken(
        "azure-ad-client-secret",
        r"(?P<value>(?<![A-Za-z0-9_~.\-])[A-Za-z0-9_~.\-]{3}[0-9]Q~[A-Za-z0-9_~.\-]{31,34})"
        r"(?![A-Za-z0-9_~.\-])",
        "abc8Q~Zx9yW8vU7tS6rQ5pO4nM3lK2jI1hG0fE",
        anchor="Q~",
        anchor_at=4,
        in_runs=37,
    ),
    # Mailchimp API key: 32 hex, ``-us``, the data centre number.
    PatternToken(
        "mailchimp",
        r"(?P<value>(?<![A-Za-z0-9_\-])[0-9a-f]{32}-us[0-9]{1,2})(?![A-Za-z0-9_\-])",
        "3f9a0c4d" * 4 + "-us21",
        anchor="-us",
        anchor_at=32,
        in_runs=36,
    ),
    # HashiCorp Vault legacy service and batch tokens: ``s.``/``b.`` + 24 mixed-case characters.
    PatternToken(
        "vault-legacy",
        r"(?P<value>[sb]\.(?<![A-Za-z0-9_.\-][sb]\.)(?=[A-Za-z0-9]{0,23}[0-9])(?=[A-Za-z0-9]{0,23}[A-Z])"
        r"(?=[A-Za-z0-9]{0,23}[a-z])[A-Za-z0-9]{24})(?![A-Za-z0-9_.\-])",
        "s.Ab3dEfGh1jKlMnOpQrStUvWx",
        in_runs=26,
    ),
    # 1Password account secret key: ``A3-`` and dash-separated groups.
    PatternToken(
        "1password-secret-key",
        r"(?P<value>A3-(?<![A-Za-z0-9]A3-)[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})"
        r"-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5})",
        "A3-ASWWYB-798JRY-LJVD4-23DC2-86TVM-H43EB",
        anchor="A3-",
        anchor_at=0,
        in_runs=39,
    ),
    # Harness personal/service-account tokens: ``pat.``/``sat.`` + id . hex . secret.
    PatternToken(
        "harness",
        r"(?P<value>(?:pat|sat)(?<![A-Za-z0-9_.](?:pat|sat))\.[A-Za-z0-9_\-]{22}\.[0-9a-f]{24}"
        r"\.[A-Za-z0-9]{20})",
        "pat.aB3cD4eF5gH6jK7mN8pQ9r.3f9a0c4d3f9a0c4d3f9a0c4d.aB3cD4eF5gH6jK7mN8pQ",
        anchor="at.",
        anchor_at=1,
        in_runs=72,
    ),
    # Terraform Cloud / Atlas: 14 characters, ``.atlasv1.``, 60-70 characters.
    PatternToken(
        "terraform-cloud",
        r"(?P<value>(?<![A-Za-z0-9])[a-zA-Z0-9]{14}\.atlasv1\.[A-Za-z0-9\-_=]{60,70})",
        "aB3cD4eF5gH6jK.atlasv1." + "aB3cD4eF5gH6jK7mN8pQ9r" * 3,
        anchor=".atlasv1.",
        anchor_at=14,
        in_runs=83,
    ),
    # ClickUp personal token: ``pk_``, the user id, ``_``, 32 upper-case letters and digits
    # (``pk_live_…`` is Stripe's publishable key, public: not this shape).
    PatternToken(
        "clickup-personal",
        r"(?P<value>pk_(?<![A-Za-z0-9_]pk_)[0-9]{1,12}_[A-Z0-9]{32})(?![A-Za-z0-9_])",
        "pk_12345678_Q3EGRPN7XKZL2M4TB8CD5EF6GH9JK2LM",
        anchor="pk_",
        anchor_at=0,
        in_runs=37,
    ),
    # Fly.io: ``FlyV1 fm…`` (the only prefix with a blank, so a pattern rather than a prefix:
    # every vendor prefix and body is one run of token characters, which the scan relies on).
    PatternToken(
        "flyio",
        r"(?P<value>FlyV1 fm(?<![A-Za-z0-9_]FlyV1 fm)[A-Za-z0-9+/=_\-]{20,})",
        "FlyV1 fmaB3cD4eF5gH6jK7mN8pQ9rS2",
        anchor="FlyV1 fm",
        anchor_at=0,
    ),
    # Ansible Vault: the hex lines after the ``$ANSIBLE_VAULT`` header.
    PatternToken(
        "ansible-vault",
        r"\$ANSIBLE_VAULT;[0-9.]{1,8};AES256(?:;[A-Za-z0-9_]{1,64})?"
        r"(?P<value>(?:[ \t]*\r?\n[ \t]*[0-9a-f]{16,120}){1,4096})",
        "$ANSIBLE_VAULT;1.1;AES256\n" + "3f9a0c4d" * 10 + "\n" + "6b2e7f18" * 10,
        anchor="$ANSIBLE_VAULT",
        anchor_at=0,
    ),
)

CLI_PASSWORD_COMMANDS: Final[tuple[PasswordCommand, ...]] = (
    PasswordCommand(
        "mysql",
        (
            "mysql",
            "mysqldump",
            "mysqladmin",
            "mysqlimport",
            "mysqlcheck",
            "mysqlshow",
            "mysqlslap",
            "mysqlsh",
            "mariadb",
            "mariadb-dump",
            "mariadb-admin",
        ),
        "p",
        "mysql -u root -pQ3egRPn7Xk db",
    ),
    PasswordCommand(
        "psexec",
        ("psexec", "psexec64", "paexec"),
        "p",
        "psexec \\\\host -u admin -p Q3egRPn7Xk cmd",
    ),
    PasswordCommand("sshpass", ("sshpass",), "p", "sshpass -p 'Q3egRPn7Xk' ssh user@host"),
    PasswordCommand(
        "redis-cli", ("redis-cli", "keydb-cli"), "a", "redis-cli -h cache -a Q3egRPn7Xk ping"
    ),
    PasswordCommand("sqlcmd", ("sqlcmd", "bcp", "osql"), "P", "sqlcmd -S db -U sa -P Q3egRPn7Xk"),
    PasswordCommand(
        "ldap",
        ("ldapsearch", "ldapadd", "ldapmodify", "ldapdelete", "ldapwhoami", "ldappasswd"),
        "w",
        "ldapsearch -x -D cn=admin -w Q3egRPn7Xk -b dc=example",
    ),
    PasswordCommand(
        "mongo",
        ("mongo", "mongosh", "mongodump", "mongorestore", "mongoexport", "mongoimport"),
        "p",
        "mongosh --host db -u admin -p Q3egRPn7Xk",
    ),
    PasswordCommand("cqlsh", ("cqlsh",), "p", "cqlsh db 9042 -u cassandra -p Q3egRPn7Xk"),
    PasswordCommand(
        "zip", ("zip", "unzip", "7z", "7za", "rar", "unrar"), "pP", "7z a -pQ3egRPn7Xk out.7z dir"
    ),
    PasswordCommand("rdesktop", ("rdesktop",), "p", "rdesktop -u admin -p Q3egRPn7Xk host"),
    PasswordCommand(
        "login-subcommand",
        (
            "docker login",
            "podman login",
            "buildah login",
            "helm registry login",
            "az login",
            "oc login",
            "cf login",
            "cf auth",
            "nerdctl login",
        ),
        "p",
        "docker login -u ci -p Q3egRPn7Xk registry.example.com",
    ),
)

# Words of a name or callee that say its literal is public or an identifier, never a key
# (``commit_sha = "…"``, ``hashlib.sha256("…")``, ``UUID("…")``, ``"integrity": "sha512-…"``).
PUBLIC_VALUE_WORDS: Final = frozenset(
    {"id", "ids", "uuid", "guid", "uid", "oid", "hash", "hashes", "sha", "sha1", "sha256",
     "sha512", "md5", "digest", "hexdigest", "checksum", "crc", "etag", "commit", "rev",
     "revision", "ref", "version", "cursor", "nonce", "integrity", "fingerprint", "salt", "iv",
     "color", "colour", "seed", "tag", "slug", "name", "path", "url", "uri", "href", "src",
     "file", "filename", "image", "img", "data", "body", "content", "text", "payload",
     "expected", "result", "example", "sample", "fromhex", "unhexlify", "decode", "encode",
     "b64decode", "b64encode", "parse", "loads", "format", "compile", "match", "search",
     "fixture", "test", "mock", "dummy", "fake", "trace", "span", "request", "message",
     "session", "build", "hmac", "mac", "label", "title", "description", "alias", "prefix"}
)  # fmt: skip
# Words of a name or callee that say it takes a key: a hex literal is masked only there.
KEY_CONTEXT_WORDS: Final = frozenset(
    {"key", "keys", "login", "auth", "api", "client", "app", "access", "secret", "token",
     "pass", "pwd", "sig", "license", "pat", "cred", "creds", "credential", "credentials",
     "connect", "init", "configure", "setup", "sdk", "bearer", "account", "private"}
)  # fmt: skip
# Last words of names whose value is an identifier, a location or a pagination marker: a
# random-looking value there (``"VersionId": "B2Vs…"``, ``"NextToken": "eyJ…"``) is not masked
# by the rules for tokens with no name (a vendor prefix or a secret name still masks it).
PUBLIC_NAME_LAST_WORDS: Final = frozenset(
    {"id", "ids", "arn", "url", "location", "marker", "cursor"}
)

# --------------------------------------------------------------------------- names
# The words that make a name (a variable, a JSON field, a CLI flag, a URL parameter) hold a
# secret, or not: :func:`openclaw_fts.redact.is_sensitive_name` and its siblings read them.

# Words that make a name sensitive wherever they occur in it (``*PASSWORD*``, ``*PASSWD*``).
ANYWHERE_WORDS: Final = ("password", "passwd", "passphrase")

# Last words (or whole one-word names, lower-cased, separators removed) that are secrets.
SECRET_COMPOUNDS: Final = frozenset(
    {
        "apikey",
        "apisecret",
        "apitoken",
        "accesskey",
        "accesstoken",
        "authkey",
        "authtoken",
        "bearertoken",
        "clientsecret",
        "encryptionkey",
        "idtoken",
        "masterkey",
        "privatekey",
        "refreshtoken",
        "secretkey",
        "sessiontoken",
        "signingkey",
        # payment credentials (OpenClaw): a card number, its CVC, a payment credential
        "cardnumber",
        "securitycode",
        "paymentcredential",
    }
)

# Compounds recognised at the end of one glued lower-case word (``theapikey``).
GLUED_COMPOUNDS: Final = ("apikey", "apitoken", "accesstoken", "authtoken", "secretkey")

# Passwords glued to a word in one lower-case name (keytool's ``-storepass``, ``-srckeypass``).
GLUED_PASSWORDS: Final = ("storepass", "keypass")

# "<word> token" is NOT a secret for these words (pagination and language-model vocabulary).
HARMLESS_TOKEN_PREFIXES: Final = frozenset(
    {
        "bos",
        "cancel",
        "cancellation",
        "cls",
        "continuation",
        "change",
        "end",
        "eos",
        "idempotency",
        "pagination",
        "request",
        "resume",
        "starting",
        "mask",
        "max",
        "min",
        "next",
        "num",
        "pad",
        "page",
        "prev",
        "previous",
        "sep",
        "special",
        "start",
        "stop",
        "unk",
    }
)

# "<word> key" in lower/camel case (code, JSON) is a secret only after these words; a bare
# ``key`` or ``sort_key``/``sessionKey``/``cacheKey`` is an ordinary identifier.
SECRET_KEY_PREFIXES: Final = frozenset(
    {
        "access",
        "account",
        "admin",
        "api",
        "app",
        "application",
        "auth",
        "client",
        "encryption",
        "license",
        "master",
        "private",
        "secret",
        "service",
        "signing",
        "subscription",
    }
)

# "<WORD>_KEY" in UPPER case (environment variables) is a secret unless after these words.
HARMLESS_ENV_KEY_PREFIXES: Final = frozenset(
    {
        "cache",
        "foreign",
        "hash",
        "lookup",
        "partition",
        "primary",
        "pub",
        "public",
        "routing",
        "row",
        "session",
        "sort",
    }
)

# First words of a name that is a flag about a secret (``HAS_API_TOKEN``, ``USE_PASSWORD``).
FLAG_FIRST_WORDS: Final = frozenset({"have", "has", "is", "use", "enable", "disable", "no"})

# ``password_hint``, ``PASSWORD_MIN_LENGTH``: about a password, not one.
HARMLESS_PASSWORD_SUFFIXES: Final = frozenset(
    {
        "age",
        "attempts",
        "cmd",
        "command",
        "fd",
        "pattern",
        "changed",
        "days",
        "enabled",
        "hours",
        "minutes",
        "seconds",
        "timeout",
        "ttl",
        "expiry",
        "expires",
        "field",
        "hint",
        "label",
        "len",
        "length",
        "policy",
        "prompt",
        "required",
        "reset",
        "rules",
        "strength",
    }
)

# Last words that make any name sensitive (``client_secret``, ``db_credential``, ``jwt``,
# Jenkins' CSRF ``Jenkins-Crumb``).
SECRET_LAST_WORDS: Final = frozenset(
    {"secret", "credential", "credentials", "jwt", "cvc", "cvv", "crumb", "cookie"}
)

# Names that hold a password after a ``;`` of a connection string (ODBC ``Uid=app;Pwd=…;``).
CONNECTION_PASSWORD_NAMES: Final = frozenset({"pwd", "pass"})

# "<word> pass" that is not a password (``by pass``, ``first_pass``, ``boarding pass``).
HARMLESS_PASS_PREFIXES: Final = frozenset(
    {"by", "first", "second", "third", "last", "one", "two", "multi", "single", "boarding"}
)

# Names whose value is masked WHOLE (``***``), never as first 6 + last 4: a password is often
# short and human-chosen, so ten of its characters would give most of it away.
PASSWORD_LAST_WORDS: Final = frozenset({"pass", "pwd"})

# URL query/fragment parameters whose value is a credential (besides sensitive names).
SECRET_QUERY_NAMES: Final = frozenset(
    {
        "access_token",
        "api-key",
        "api_key",
        "apikey",
        "auth",
        "auth_token",
        "client_secret",
        "code",
        "credential",
        "authorization",
        "security_code",
        "cvc",
        "cvv",
        "x-api-key",
        "x-access-token",
        "x-auth-token",
        "id_token",
        "jwt",
        "key",
        "pass",
        "passwd",
        "password",
        "private_token",
        "pwd",
        "refresh_token",
        "secret",
        "sig",
        "signature",
        "token",
        "x-amz-credential",
        "x-amz-security-token",
        "x-amz-signature",
        "x-goog-credential",
        "x-goog-signature",
    }
)

# Last words that say how a secret is stored, not what it is (``secret_value``, ``token_b64``):
# the name before them decides.
VALUE_SUFFIX_WORDS: Final = frozenset(
    {"value", "val", "str", "string", "b64", "base64", "hex", "raw", "plain", "plaintext", "bytes"}
)

# Last words of a WEAK name: ``stripe_key``, ``sonar.login``, ``auth``. Such a name holds a
# secret only when its value looks randomly generated (:func:`looks_random`): ``sort_key: name``
# and ``login: alice`` stay.
WEAK_LAST_WORDS: Final = frozenset({"key", "login", "auth", "sig", "license", "pat"})

# ``<word>_key`` names whose value is public or an identifier even when it looks random.
PUBLIC_KEY_PREFIXES: Final = frozenset(
    {"public", "pub", "publishable", "primary", "foreign", "sort", "partition", "routing", "row",
     "cache", "lookup", "idempotency", "dedup", "dedupe", "object", "item", "hash", "map",
     "dict", "host", "ssh", "gpg", "pgp", "site", "recaptcha", "turnstile", "storage"}
)  # fmt: skip

# Last words of a weak name under which a UUID is a credential, not an identifier: Sauce Labs
# access keys and Heroku API keys are UUIDs (``sauce_key: "<uuid>"``). The name needs a word
# before it (a bare ``key`` is a React list key or a map key as often as a secret); names in
# :data:`PUBLIC_KEY_PREFIXES` (``cache_key``, ``idempotency_key``) stay public.
UUID_KEY_LAST_WORDS: Final = frozenset({"key"})

# SDK start-up calls whose labelled argument is the app's key even when the label calls it an
# identifier (HockeyApp's ``configure(withIdentifier: "<hex>")``, App Center's
# ``start(withAppSecret: "…")``, Instabug's ``start(withToken: "…")``): a random-looking
# literal there is masked, a hex one included.
SDK_SETUP_CALLS: Final = frozenset(
    {"configure", "start", "startSession", "initialize", "initWithAppId", "setup", "init"}
)
# Words of such a label that name the key (``withIdentifier``, ``appKey``, ``withAppSecret``).
SDK_KEY_LABEL_WORDS: Final = frozenset({"identifier", "key", "secret", "token"})


# --------------------------------------------------------------------------- rules' word lists

# An explicit body label (``body: code=…``, ``form_body=signature=…``), found on the
# lower-cased text, then the single pair after it.
BODY_LABELS: Final = ("body", "form", "payload")

# Words of a query parameter name that make it a secret wherever they stand in it
# (``__openclaw_mms_token_<id>``), unless the name ends in a harmless word (``token_count``).
QUERY_SECRET_WORDS: Final = frozenset({"token", "secret", "password", "signature"})

QUERY_HARMLESS_LAST: Final = frozenset({"count", "type", "kind", "name", "limit", "algorithm"})

#: A secret's word in prose, in its usual spellings (``the ritekit secret 3f9a…``).
PROSE_KEY_WORDS: Final = ("secret", "key", "token", "password", "passwd", "apikey", "credential")

#: Last words of the payment names (a card number, its CVC): their value is masked only when it
#: is made of digits (``cvc: 123``, ``card_number=4111 1111 …``); ``security_code="CVV2"`` is a
#: label.
PAYMENT_WORDS: Final = frozenset({"cvc", "cvv", "code", "number"})

#: Words after ``password:`` that describe the field rather than being the password.
DESCRIPTIVE_VALUES: Final = frozenset(
    {"string", "str", "text", "required", "optional", "none", "secret", "hidden", "masked",
     "redacted", "omitted", "empty", "blank", "unset", "yes", "no", "on", "off", "enabled",
     "disabled", "prompt", "ask", "env", "file", "see", "your", "the", "a", "an", "same",
     "boolean", "bool", "int", "integer", "object", "array", "secretstr", "password", "type"}
)  # fmt: skip

AUTH_SCHEMES: Final = ("bearer", "basic", "token", "bot", "apikey", "api-key", "sso-key")

# Words that follow a flag in prose ("pass --token or --token-file"), never a secret.
PROSE_WORDS: Final = frozenset(
    {"a", "an", "and", "as", "flag", "for", "if", "in", "is", "of", "option", "or", "the", "to",
     "with", "instead", "when"}
)  # fmt: skip

#: A command word right after one of these is part of a longer word or path (checked in Python).
COMMAND_GLUE: Final = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-/"
)

# ``.netrc``: ``machine host login user password SECRET`` (on one line or several).
NETRC_WORDS: Final = ("machine", "default")

# ``sqlplus user/SECRET@db`` (Oracle tools, also ``rman``, ``expdp``/``impdp``).
SLASH_PASSWORD_COMMANDS: Final = ("sqlplus", "rman", "expdp", "impdp", "sqlldr")

# Literal values that are never credentials (``token = None``, ``"password": null``). The short
# mask ``***`` is not one either (re-redacting a redacted text changes nothing).
LITERAL_VALUES: Final = frozenset(
    {"false", "nil", "none", "null", "true", "undefined", "yes", "no", "on", "off"}
)

PLACEHOLDERS: Final = frozenset({"%s", "%d", "%r", "%x", "?", "<redacted>", "<token>", "salt"})

# Where a tool reads the secret from (``--passphrase file://…``, ``pass:env:VAR``).
SOURCE_PREFIXES: Final = ("file:", "fileb:", "env:")

# Last words of a variable named for a password that a CamelCase value may end with; in an
# assignment WITHOUT blanks (``DB_PASSWORD=SuperPwd``, env and YAML) such a value is a password.
PASSWORD_VALUE_SUFFIXES: Final = ("pwd", "pass", "password", "passwd")

#: Words that start an expression rather than being a value (``token = await fetch()``): a
#: named value that is exactly one of them is read as code, never masked.
EXPRESSION_WORDS: Final = frozenset(
    {"await", "new", "lambda", "function", "async", "yield", "typeof", "not", "self", "this"}
)

"""Generate tests/fixtures/redaction_heldout.jsonl: secrets from sources the rules were NOT
tuned on, pasted in the forms users paste them (docs/redaction.md, "Figures").

Invariant: the output depends only on this file and ``--seed`` (default 23). Every sample is
random (from the alphabet and length a source describes), so no line is a live credential;
what is taken from public code is the SHAPE of each family and, for trufflehog, the keyword
that names it. Each line: ``{"split", "family", "source", "form", "text", "secret"}``.

The split is fixed HERE, by source, before any result is looked at:

* ``heldout`` (never used to tune a rule; report its leak rate separately):
  trufflesecurity/trufflehog ``pkg/detectors/<vendor>/<vendor>.go`` (keyword-prefixed
  detectors: the keyword, the alphabet and the length of the key), secretlint/secretlint
  ``secretlint-rule-database-connection-string`` (MongoDB/MySQL/PostgreSQL URIs with a
  password), Yelp/detect-secrets ``detect_secrets/plugins/*.py`` other than the keyword and
  high-entropy plugins (Azure storage, Cloudant, IBM Cloud IAM and COS HMAC, SoftLayer, npm,
  Twilio, Artifactory).
* ``tuned`` (the families listed as leaking in the project's issue tracker, which the rules
  were changed for): password flags, .netrc, plain YAML passwords, unnamed literals in code,
  aligned values, values holding ``! = @ ] |``, vendor formats after ``.``/``_``.
* ``heldout2``: written after the first ``heldout`` measurement and before any rule was
  changed in its light, measured once the rules were final: the forms of Yelp/detect-secrets
  ``test_data/`` (``config.ini`` sections and continuation lines, nested ``config.yaml``
  values and ``!!binary``, ``each_secret.py`` assignments) and of gitleaks'
  ``cmd/generate/config/utils/generate.go`` semi-generic rules (``<vendor>_<word> = key``)
  for vendors outside the tuned corpus, with keys of the alphabets those sources use.

* ``heldout3``: written before the rules were changed for ``heldout2``'s leaks (which made
  ``heldout2`` a tuned split), from a project no corpus of this project had used:
  praetorian-inc/noseyparker ``crates/noseyparker/data/default/rules/*.yml`` (the contexts its
  rules describe: generic passwords in Ruby/Perl hashes, JS objects, Python keyword arguments,
  Gradle ``credentials {}`` blocks and DSN parameter strings; ODBC and Azure connection
  strings; Jenkins, New Relic and Heroku keys in the forms its examples show), with keys of
  the alphabets and lengths those rules give. Measured once (21/104 leaked), then tuned on.

* ``heldout4``: written after ``heldout3``'s one measurement and before any rule was changed
  for it, from semgrep/semgrep-rules ``generic/secrets/security/detected-*.yaml`` (the rules'
  patterns: which names, separators, quotes, lengths and alphabets each expects around a
  key; AWS session tokens, sshpass, generic API keys later on a line, Artifactory, Kolide,
  HockeyApp, Onfido, Composio, Sauce Labs, Picatic), rendered in forms of this file's own.
  Measured once, with the final rules.

* ``heldout5``: written after ``heldout4``'s one measurement and before any rule was changed
  for it, from a project no corpus of this project had used: mongodb/kingfisher
  ``data/rules/*.yml`` (each rule's pattern, examples and validation request: the names,
  alphabets and lengths around age identities, Buildkite, Aiven, Atera, Better Stack, Azure
  Search, CircleCI, Bitbucket, Cloudflare and Blynk keys, and the headers a key is sent in),
  rendered in forms of this file's own. Measured once, after the rules changed for
  ``heldout4``; never tuned on.

Run: ``python scripts/make_redaction_heldout.py`` (writes the file; ``--check`` compares).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import string
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "redaction_heldout.jsonl"
#: Random secrets drawn per family (each rendered in every form of its group).
SAMPLES_PER_FAMILY = 3

ALNUM = string.ascii_letters + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
UPPER_ALNUM = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "_-"
PUNCT_PASSWORD = ALNUM + "!#%^*_-+="

TRUFFLEHOG = "trufflesecurity/trufflehog pkg/detectors/{}/{}.go"
# (detector, keyword, Vendor class name, alphabet, length, literal prefix)
KEYWORD_DETECTORS: list[tuple[str, str, str, str, int, str]] = [
    ("exchangerateapi", "exchangerate", "ExchangeRate", HEX, 24, ""),
    ("salescookie", "salescookie", "SalesCookie", ALNUM, 32, ""),
    ("accuweather", "accuweather", "AccuWeather", ALNUM, 32, ""),
    ("sumologickey", "sumo", "SumoLogic", ALNUM, 64, ""),
    ("hypertrack", "hypertrack", "HyperTrack", B64URL, 54, ""),
    ("ritekit", "ritekit", "RiteKit", HEX, 44, ""),
    ("clickuppersonaltoken", "clickup", "ClickUp", UPPER_ALNUM, 32, "pk_12345678_"),
    ("sentrytoken", "sentry", "Sentry", HEX, 64, ""),
    ("beamer", "beamer", "Beamer", ALNUM + "_+/", 45, ""),
    ("api2cart", "api2cart", "Api2Cart", HEX, 32, ""),
    ("signalwire", "signalwire", "SignalWire", ALNUM, 50, ""),
    ("anypoint", "anypoint", "Anypoint", HEX, 32, ""),
    ("bscscan", "bscscan", "BscScan", UPPER_ALNUM, 34, ""),
    ("edamam", "edamam", "Edamam", LOWER_ALNUM, 32, ""),
]
# The forms a key of a keyword detector is pasted in ({v}: keyword, {V}: upper, {C}: class).
KEYWORD_FORMS: dict[str, str] = {
    "prose": "You can find a {v} secret {s} within",
    "env": "{V}_API_KEY={s}",
    "export": 'export {V}_TOKEN="{s}"',
    "yaml": "{v}:\n  api_key: {s}",
    "json-camel": '{{"{v}Key": "{s}"}}',
    "python-client": '{v} = {C}Client("{s}")',
    "js-new": "const client = new {C}('{s}');",
    "go-new": 'client := {v}.NewClient("{s}")',
    "java": '{C}Client client = new {C}Client("{s}");',
    "curl-header": 'curl -H "X-Api-Key: {s}" https://api.{v}.example/v1/items',
    "url-query": "https://api.{v}.example/v1/items?apikey={s}",
    "docker": "docker run -e {V}_KEY={s} {v}/agent",
    "terraform": '{v}_api_key = "{s}"',
    "toml": '[{v}]\nkey = "{s}"',
    "ini": "[{v}]\napi_key = {s}",
}

SECRETLINT_DB = "secretlint/secretlint secretlint-rule-database-connection-string"
DB_FORMS: dict[str, str] = {
    "mongodb-uri": "mongodb+srv://app:{s}@cluster0.example.net/prod?retryWrites=true",
    "mysql-uri": "DATABASE_URL=mysql://app:{s}@db.internal:3306/shop",
    "postgres-uri": 'engine = create_engine("postgresql://app:{s}@db:5432/app")',
    "jdbc": "jdbc:mysql://db:3306/shop?user=app&password={s}",
    "yaml-url": "database:\n  url: postgres://app:{s}@db/app",
}

DETECT_SECRETS = "Yelp/detect-secrets detect_secrets/plugins/{}.py"
# (plugin file, family, template, alphabet, length, literal prefix)
PLUGIN_FAMILIES: list[tuple[str, str, str, str, int, str]] = [
    (
        "azure_storage_key",
        "azure-storage",
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={s};EndpointSuffix=core",
        B64,
        86,
        "",
    ),
    ("cloudant", "cloudant", "https://acct:{s}@acct.cloudant.com", HEX, 64, ""),
    ("ibm_cloud_iam", "ibm-cloud-iam", 'ibm_cloud_iam_key = "{s}"', B64URL, 44, ""),
    ("ibm_cos_hmac", "ibm-cos-hmac", "secret_access_key: {s}", HEX, 48, ""),
    ("softlayer", "softlayer", "SOFTLAYER_API_KEY={s}", HEX, 64, ""),
    ("npm", "npm-authtoken", "//registry.npmjs.org/:_authToken={s}", LOWER_ALNUM, 36, "npm_"),
    ("twilio", "twilio-api-key", 'client = Client("{s}", auth)', HEX, 32, "SK"),
    ("artifactory", "artifactory", "X-JFrog-Art-Api: {s}", ALNUM, 70, "AKCp"),
]

# --------------------------------------------------------------------------- tuned families
TUNED: list[tuple[str, str, str, int]] = [
    # (family, template, alphabet, length)
    ("password-flag", "psexec \\\\srv01 -u admin -p {s} cmd.exe", PUNCT_PASSWORD, 14),
    ("password-flag", "sshpass -p '{s}' ssh deploy@10.0.0.5", PUNCT_PASSWORD, 14),
    ("password-flag", "mysql -h db -u root -p{s} shop", ALNUM, 14),
    ("password-flag", "redis-cli -h cache -a {s} INFO", ALNUM, 20),
    ("password-flag", "backup --password {s} --target s3://b", PUNCT_PASSWORD, 20),
    ("netrc", "machine api.heroku.com\n  login me@example.com\n  password {s}\n", ALNUM, 24),
    ("yaml-plain-password", "db:\n  user: app\n  password: {s}\n", string.ascii_lowercase, 12),
    ("code-literal", "const client = new Client('{s}');", LOWER_ALNUM, 32),
    ("code-literal", 'c := api.NewClient("{s}")', HEX, 40),
    ("code-literal", 'key = "{s}"', LOWER_ALNUM, 28),
    ("code-literal", "mvn sonar:sonar -Dsonar.login={s}", HEX, 40),
    ("alignment", "password:                  {s}", PUNCT_PASSWORD, 12),
    ("value-symbols", "Authorization: Bearer {s}", ALNUM + "!|@]=", 40),
    ("vendor-after-dot", "vault token s.{s}", ALNUM, 24),
    ("vendor-after-dot", "dp.audit.{s}", ALNUM, 40),
]


DETECT_SECRETS_DATA = "Yelp/detect-secrets test_data/{}"
# (test_data file, form, template)
TEST_DATA_FORMS: list[tuple[str, str, str]] = [
    ("config.ini", "ini-section", "[credentials]\npassword = {s}\n"),
    ("config.ini", "ini-nested", "[parent]\n    [child]\n    secretA = {s}\n"),
    ("config.ini", "ini-continuation", "[service]\napi_key =\n    {s}\n"),
    ("config.ini", "ini-aws", "[aws]\naws_secret_key = {s}\n"),
    ("config.yaml", "yaml-nested", "credentials:\n    nested:\n        secret_value: {s}\n"),
    ("config.yaml", "yaml-quoted", "service::api_key: '{s}'\n"),
    ("config.yaml", "yaml-binary", "high_entropy_binary_secret: !!binary {s}\n"),
    ("each_secret.py", "python-base64", "base64_secret = '{s}'\n"),
    ("each_secret.py", "python-hex", "hex_secret = '{s}'\n"),
    ("each_secret.py", "python-basic-auth", "basic_auth = 'http://username:{s}@example.com'\n"),
    ("config.env", "env", "SECRET_TOKEN={s}\n"),
    ("config.md", "markdown", "Set the key in your shell:\n\n    export API_SECRET='{s}'\n"),
]
# (alphabet, length) of the keys drawn for the test_data forms
TEST_DATA_KEYS: list[tuple[str, int]] = [(B64, 44), (HEX, 40), (ALNUM, 32), (PUNCT_PASSWORD, 16)]
GITLEAKS_GENERATE = "gitleaks/gitleaks cmd/generate/config/utils/generate.go"
# vendors with semi-generic gitleaks rules that no corpus of this project used
# (vendor keyword, alphabet, length)
SEMI_GENERIC_VENDORS: list[tuple[str, str, int]] = [
    ("asana", LOWER_ALNUM, 32),
    ("bittrex", ALNUM, 32),
    ("codecov", HEX, 32),
    ("coinbase", B64URL, 64),
    ("confluent", ALNUM, 64),
    ("datadog", HEX, 40),
    ("droneci", ALNUM, 32),
    ("etsy", LOWER_ALNUM, 24),
    ("finnhub", LOWER_ALNUM, 20),
    ("flickr", LOWER_ALNUM, 32),
    ("gitter", B64URL, 40),
    ("kraken", B64 + "=", 88),
    ("kucoin", HEX, 24),
    ("launchdarkly", B64URL, 40),
    ("mattermost", LOWER_ALNUM, 26),
    ("messagebird", ALNUM, 25),
    ("nytimes", B64URL, 32),
    ("rapidapi", B64URL, 50),
    ("sendbird", HEX, 40),
    ("squarespace", LOWER_ALNUM + "-", 36),
    ("travisci", ALNUM, 22),
    ("zendesk", ALNUM, 40),
]
# the semi-generic rules' identifier forms: ``<vendor>`` then up to 20 characters, then the
# assignment (generate.go renders each in these syntaxes)
SEMI_GENERIC_FORMS: dict[str, str] = {
    "go": '{v}Secret := "{s}"',
    "python": "{v}_api_token = '{s}'",
    "yaml": "{v}:\n  secret: {s}",
    "env": "{V}_ACCESS_KEY={s}",
    "json": '{{"{v}_key": "{s}"}}',
    "ini": "{v}_client_secret = {s}",
    "php": '${v}Token .= "{s}";',
    "csharp": 'string {v}Key = "{s}";',
}


NOSEY_PARKER = "praetorian-inc/noseyparker crates/noseyparker/data/default/rules/{}.yml"
UUID_SHAPE = "8-4-4-4-12"
# (rules file, family, form, template, alphabet, length; alphabet "uuid": a random UUID)
NOSEY_PARKER_FORMS: list[tuple[str, str, str, str, str, int]] = [
    ("generic", "password", "ruby-hash", ":password       => '{s}',", PUNCT_PASSWORD, 12),
    ("generic", "password", "perl-hash", "beta => {\n  user => 'joe',\n  password => '{s}',\n}",
     PUNCT_PASSWORD, 14),
    ("generic", "password", "js-object", "login({{username: 'geronimo', password: '{s}'}});",
     ALNUM, 16),
    ("generic", "password", "python-kwargs",
     "cred = UsernamePasswordCredential(\n    username='jdoe',\n    password='{s}',\n"
     "    tenant_id='{u}')", PUNCT_PASSWORD, 12),
    ("generic", "password", "gradle-credentials",
     'credentials {{\n    username "deploy"\n    password "{s}"\n}}', ALNUM, 16),
    ("generic", "password", "dsn-params",
     ":authn_dbd_params => 'host=db port=3306 user=apache password={s} dbname=auth',",
     ALNUM, 12),
    ("generic", "password", "unquoted-pair", "user = alice\npassword = {s}", ALNUM + "_", 14),
    ("generic", "password", "aligned-prose", "Ldap password               ----   {s}",
     PUNCT_PASSWORD, 12),
    ("generic", "api-key", "gradle-build-config",
     "buildConfigField 'String', 'API_KEY', '\"{s}\"'", HEX, 32),
    ("generic", "secret", "java-constant", 'private static String CLIENT_SECRET = "{s}";', HEX, 40),
    ("odbc", "odbc", "user-id", "Server=host;Port=5432;User Id=app;Password={s};Database=shop;",
     PUNCT_PASSWORD.replace("=", ""), 14),
    ("odbc", "odbc", "uid-pwd", "Provider=SQLNCLI;Server=srv,1433;Database=db;Uid=app;Pwd={s};",
     ALNUM, 14),
    ("odbc", "odbc", "concatenated",
     'adoConn.Open("Provider=SQLOLEDB.1;User ID=bill; " & "Password ={s};Initial Catalog=P;")',
     ALNUM, 14),
    ("azure", "azure", "iot-hub",
     '"value": "HostName=hub.azure-devices.net;SharedAccessKeyName=rw;SharedAccessKey={s}="',
     B64, 43),
    ("azure", "azure", "app-configuration",
     "Endpoint=https://cfg.azconfig.io;Id=ABCD-E6-s0:tl6ABcdefGHi7kLMno/p;Secret={s}=", B64, 43),
    ("jenkins", "jenkins", "python", "jenkins_passwd = '{s}'   # Dev Token", HEX, 34),
    ("jenkins", "jenkins", "export", "export JENKINS_TOKEN={s}", HEX, 34),
    ("jenkins", "jenkins", "crumb-header",
     "curl -X POST http://ci/job/x/build -H 'Jenkins-Crumb:{s}'", HEX, 32),
    ("newrelic", "newrelic", "license-yaml", "# New Relic license\nlicense_key: {s}NRAL", HEX, 36),
    ("newrelic", "newrelic", "insights-insert", 'insertKey: "NRII-{s}")', B64URL, 32),
    ("newrelic", "newrelic", "insights-query", '"querykey": "NRIQ-{s}",', B64URL, 32),
    ("newrelic", "newrelic", "rest-header", 'curl -H "X-Api-Key:NRRA-{s}" https://api.newrelic.com',
     HEX, 42),
    ("newrelic", "newrelic", "admin-colon", "admin_access:NRAA-{s}", HEX, 27),
    ("newrelic", "newrelic", "powershell", "PS> Get-NR1Catalog -PersonalAPIKey 'NRAK-{s}'",
     UPPER_ALNUM, 27),
    ("newrelic", "newrelic", "pixie", "MW_PX_API_KEY=px-api-{s}", "uuid", 36),
    ("heroku", "heroku", "yaml", "  HEROKU_API_KEY: {s}", "uuid", 36),
]  # fmt: skip


SEMGREP = "semgrep/semgrep-rules generic/secrets/security/detected-{}.yaml"
B64_SESSION = ALNUM + "/+"
# (rule, family, form, template, alphabet, length; "uuid": a random UUID)
SEMGREP_FORMS: list[tuple[str, str, str, str, str, int]] = [
    ("aws-session-token", "aws-session", "ini", "aws_session_token = {s}", B64_SESSION, 120),
    ("aws-session-token", "aws-session", "json", '{{"SessionToken": "{s}"}}', B64_SESSION, 120),
    ("aws-session-token", "aws-session", "ruby", ":aws_session_token => '{s}',", B64_SESSION, 96),
    ("aws-session-token", "aws-session", "aligned",
     "AWS_SESSION_TOKEN:" + " " * 30 + "{s}", B64_SESSION, 96),
    ("ssh-password", "sshpass", "double-quoted", 'sshpass -p "{s}" ssh deploy@10.0.0.5',
     PUNCT_PASSWORD, 14),
    ("ssh-password", "sshpass", "attached", "sshpass -p'{s}' scp backup.tar host:/srv",
     PUNCT_PASSWORD, 14),
    ("generic-api-key", "generic-api-key", "comment", "// apiKey for the staging tenant: {s}",
     ALNUM, 40),
    ("generic-api-key", "generic-api-key", "html-meta", '<meta name="api-key" content="{s}">',
     ALNUM, 32),
    ("generic-api-key", "generic-api-key", "arrow", 'API_KEY(prod) -> "{s}"', ALNUM, 36),
    ("artifactory-password", "artifactory", "yaml", "artifactory_password: AP6{s}", ALNUM, 40),
    ("artifactory-password", "artifactory", "curl-user",
     "curl -u admin:AP6{s} https://repo.example/artifactory/api/repos", ALNUM, 40),
    ("kolide-api-key", "kolide", "env", "KOLIDE_TOKEN=k2sk_v1_{s}", ALNUM, 24),
    ("kolide-api-key", "kolide", "header", 'curl -H "Authorization: k2sk_v1_{s}" https://k2',
     ALNUM, 24),
    ("hockeyapp", "hockeyapp", "swift",
     'BITHockeyManager.shared().configure(withIdentifier: "{s}")', HEX, 32),
    ("hockeyapp", "hockeyapp", "yaml", "hockeyapp_token: {s}", HEX, 32),
    ("onfido-live-api-token", "onfido", "env", "ONFIDO_API_TOKEN=api_live.{s}", B64URL, 44),
    ("onfido-live-api-token", "onfido", "header",
     "Authorization: Token token=api_live_us.{s}", B64URL, 44),
    ("composio-api-key", "composio", "env", "COMPOSIO_API_KEY=ak_{s}", B64URL, 20),
    ("composio-api-key", "composio", "json", '{{"key": "uak_{s}"}}', B64URL, 43),
    ("composio-api-key", "composio", "prose", "use oak_{s} for the org", B64URL, 20),
    ("sauce-token", "sauce", "env", "SAUCE_ACCESS_KEY={s}", "uuid", 36),
    ("sauce-token", "sauce", "yaml", 'sauce_key: "{s}"', "uuid", 36),
    ("sauce-token", "sauce", "url", "https://alice:{s}@ondemand.saucelabs.com/wd/hub", "uuid", 36),
    ("picatic-api-key", "picatic", "ruby", 'Picatic.api_key = "sk_live_{s}"', LOWER_ALNUM, 32),
]  # fmt: skip


KINGFISHER = "mongodb/kingfisher data/rules/{}.yml"
BECH32_UPPER = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"
# (rules file, family, form, template, literal prefix of the secret, alphabet, length);
# alphabet "ccipat" and "cfca" are the two composite shapes built in ``kingfisher_body``
KINGFISHER_FORMS: list[tuple[str, str, str, str, str, str, int]] = [
    ("age", "age", "key-file",
     "# created: 2026-03-02T10:11:12Z\n# public key: age1{u}\n{s}", "AGE-SECRET-KEY-1",
     BECH32_UPPER, 58),
    ("age", "age", "env", "export SOPS_AGE_KEY={s}", "AGE-SECRET-KEY-1", BECH32_UPPER, 58),
    ("buildkite", "buildkite", "export", "export BUILDKITE_API_TOKEN={s}", "bkua_",
     LOWER_ALNUM, 40),
    ("buildkite", "buildkite", "curl-bearer",
     'curl -H "Authorization: Bearer {s}" https://api.buildkite.com/v2/user', "bkua_",
     LOWER_ALNUM, 40),
    ("aiven", "aiven", "python", 'FLASK_APP_AIVEN_API_KEY = "{s}"', "", B64, 372),
    ("aiven", "aiven", "auth-scheme", "Authorization: aivenv1 {s}", "", B64, 372),
    ("atera", "atera", "python", "atera_key = {s}", "", LOWER_ALNUM, 32),
    ("atera", "atera", "curl-header",
     'curl -H "X-API-KEY: {s}" https://app.atera.com/api/v3/alerts', "", LOWER_ALNUM, 32),
    ("betterstack", "betterstack", "prose", "betterstack SECRET={s}", "", ALNUM, 24),
    ("betterstack", "betterstack", "yaml", "  BETTERSTACK_TOKEN: {s}", "", ALNUM, 24),
    ("azuresearchquery", "azure-search", "python", "azure_search_key = {s}", "", ALNUM, 52),
    ("azuresearchquery", "azure-search", "curl-header",
     "curl -H 'api-key: {s}' https://svc.search.windows.net/indexes/docs/docs", "", ALNUM, 52),
    ("circleci", "circleci", "export", "export CIRCLECI_TOKEN={s}", "CCIPAT_", "ccipat", 63),
    ("circleci", "circleci", "curl-header",
     "curl -H 'Circle-Token: {s}' https://circleci.com/api/v2/me", "CCIPAT_", "ccipat", 63),
    ("circleci", "circleci-project", "python", "circleci_project_secret = '{s}'", "", HEX, 40),
    ("circleci", "circleci-project", "yaml", "CIRCLECI_API_TOKEN: {s}", "", HEX, 40),
    ("bitbucket", "bitbucket", "env", "bitbucket_secret={s}", "", LOWER_ALNUM + "_-", 44),
    ("cloudflare", "cloudflare", "camel", "cloudflareAPIKey = {s}", "", UPPER_ALNUM, 40),
    ("cloudflare", "cloudflare", "yaml", "CLOUDFLARE_API_TOKEN: '{s}'", "", LOWER_ALNUM + "_-", 40),
    ("cloudflare", "cloudflare-ca", "header", "X-Auth-User-Service-Key = {s}", "v1.0-", "cfca",
     258),
    ("blynk", "blynk", "url", 'curl "https://blynk.cloud/external/api/get?token={s}&V1"', "",
     B64URL, 32),
    ("blynk", "blynk", "bearer",
     'curl https://fra1.blynk.cloud/api/organization/profile -H "Authorization: Bearer {s}"', "",
     B64URL, 40),
    ("blynk", "blynk", "client-credentials",
     "curl -X POST -u oa2-client-id_{u}:{s} https://fra1.blynk.cloud/oauth2/token", "",
     B64URL, 40),
]  # fmt: skip


def uuid(rng: random.Random) -> str:
    return "-".join("".join(rng.choice(HEX) for _ in range(int(n))) for n in UUID_SHAPE.split("-"))


def draw(rng: random.Random, alphabet: str, length: int) -> str:
    # a password/key with at least one digit and one letter (as generators make them)
    while True:
        value = "".join(rng.choice(alphabet) for _ in range(length))
        has_digit = any(c.isdigit() for c in value) or not any(c.isdigit() for c in alphabet)
        if has_digit and any(c.isalpha() for c in value):
            return value


def kingfisher_body(rng: random.Random, alphabet: str, length: int) -> str:
    if alphabet == "ccipat":  # CircleCI: 22 mixed characters, ``_``, 40 lower-case ones
        return draw(rng, ALNUM, 22) + "_" + draw(rng, LOWER_ALNUM, 40)
    if alphabet == "cfca":  # Cloudflare origin CA key: three hex runs joined by ``-``
        return "-".join(draw(rng, HEX, n) for n in (64, 128, 64))
    return draw(rng, alphabet, length)


def render(template: str, **fields: str) -> str:
    out = template.replace("{{", "\x00").replace("}}", "\x01")
    for key, value in fields.items():
        out = out.replace("{" + key + "}", value)
    return out.replace("\x00", "{").replace("\x01", "}")


def build(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    cases: list[dict[str, Any]] = []

    def add(split: str, family: str, source: str, form: str, text: str, secret: str) -> None:
        cases.append(
            {"split": split, "family": family, "source": source, "form": form, "text": text,
             "secret": secret}
        )  # fmt: skip

    for detector, keyword, cls, alphabet, length, prefix in KEYWORD_DETECTORS:
        source = TRUFFLEHOG.format(detector, detector)
        for _ in range(SAMPLES_PER_FAMILY):
            secret = prefix + draw(rng, alphabet, length)
            for form, template in KEYWORD_FORMS.items():
                text = render(template, v=keyword, V=keyword.upper(), C=cls, s=secret)
                add("heldout", f"trufflehog:{detector}", source, form, text, secret)
    for _ in range(SAMPLES_PER_FAMILY * 2):
        secret = draw(rng, PUNCT_PASSWORD.replace("=", ""), rng.randint(12, 20))
        for form, template in DB_FORMS.items():
            add("heldout", "secretlint:db-uri", SECRETLINT_DB, form, render(template, s=secret),
                secret)  # fmt: skip
    for plugin, family, template, alphabet, length, prefix in PLUGIN_FAMILIES:
        source = DETECT_SECRETS.format(plugin)
        for _ in range(SAMPLES_PER_FAMILY * 2):
            secret = prefix + draw(rng, alphabet, length)
            add("heldout", f"detect-secrets:{family}", source, "config", render(template, s=secret),
                secret)  # fmt: skip
    for test_file, form, template in TEST_DATA_FORMS:
        for alphabet, length in TEST_DATA_KEYS:
            secret = draw(rng, alphabet, length)
            add("heldout2", f"detect-secrets-data:{test_file}",
                DETECT_SECRETS_DATA.format(test_file), form, render(template, s=secret),
                secret)  # fmt: skip
    for vendor, alphabet, length in SEMI_GENERIC_VENDORS:
        for form, template in SEMI_GENERIC_FORMS.items():
            secret = draw(rng, alphabet, length)
            text = render(template, v=vendor, V=vendor.upper(), s=secret)
            add("heldout2", f"gitleaks-semi-generic:{vendor}", GITLEAKS_GENERATE, form, text,
                secret)  # fmt: skip
    for family, template, alphabet, length in TUNED:
        for _ in range(SAMPLES_PER_FAMILY * 2):
            secret = draw(rng, alphabet, length)
            add("tuned", f"issue:{family}", "openclaw-fts issue tracker (leaking families)",
                template.split()[0], render(template, s=secret), secret)  # fmt: skip
    for rules_file, family, form, template, alphabet, length in NOSEY_PARKER_FORMS:
        for _ in range(SAMPLES_PER_FAMILY + 1):
            secret = uuid(rng) if alphabet == "uuid" else draw(rng, alphabet, length)
            # a literal prefix in the template (``NRII-``, ``px-api-``) belongs to the secret
            at = template.index("{s}")
            head = re.search(r"[A-Za-z0-9_\-]*$", template[:at])
            prefix = head.group() if head and template[:at].endswith("-") else ""
            tail = re.match(r"[A-Za-z0-9=]*", template[at + 3 :])
            suffix = tail.group() if tail else ""
            text = render(template, s=secret, u=uuid(rng))
            add("heldout3", f"noseyparker:{family}", NOSEY_PARKER.format(rules_file), form, text,
                prefix + secret + suffix)  # fmt: skip
    for rule, family, form, template, alphabet, length in SEMGREP_FORMS:
        for _ in range(SAMPLES_PER_FAMILY + 1):
            body = uuid(rng) if alphabet == "uuid" else draw(rng, alphabet, length)
            if family == "onfido":  # an 11-character id, ``.``, a 32-character secret
                body = body[:11] + "." + body[11:43]
            at = template.index("{s}")
            head = re.search(r"[A-Za-z0-9_.]*$", template[:at])
            prefix = (
                head.group() if head and head.group()[:1].islower() and "_" in head.group() else ""
            )  # ``k2sk_v1_``, ``api_live.``: part of the secret
            prefix = prefix if prefix.startswith(("k2sk_", "api_live", "ak_", "uak_", "oak_",
                                                  "sk_live_")) else ""  # fmt: skip
            if template[:at].endswith("AP6"):
                prefix = "AP6"
            text = render(template, s=body)
            add("heldout4", f"semgrep:{family}", SEMGREP.format(rule), form, text, prefix + body)
    krng = random.Random(seed + 5)  # its own stream: the earlier splits stay byte for byte
    for rules_file, family, form, template, prefix, alphabet, length in KINGFISHER_FORMS:
        for _ in range(SAMPLES_PER_FAMILY + 1):
            secret = prefix + kingfisher_body(krng, alphabet, length)
            other = draw(krng, BECH32_UPPER.lower() if family == "age" else B64URL, 58 if
                         family == "age" else 32)  # fmt: skip
            text = render(template, s=secret, u=other)
            add("heldout5", f"kingfisher:{family}", KINGFISHER.format(rules_file), form, text,
                secret)  # fmt: skip
    return cases


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args()
    lines = "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in build(args.seed))
    if args.check:
        same = OUT.exists() and OUT.read_text(encoding="utf-8") == lines
        print("up to date" if same else f"{OUT} is stale: rerun without --check")
        return 0 if same else 1
    OUT.write_text(lines, encoding="utf-8")
    print(f"wrote {lines.count(chr(10))} cases to {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

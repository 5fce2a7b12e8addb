"""OpenClaw's own redaction cases (its ``src/logging/redact.test.ts``), restated.

Each case says what OpenClaw's test asserts, in our terms: the secret values that must not
survive :func:`redact_text` (docs/redaction.md: what is masked is masked), the surrounding text
that must survive, and the texts that must come back unchanged. Where OpenClaw shows a long
password as first 6 + last 4, we mask it whole (docs/redaction.md, "Passwords"): the secret is
gone either way. Cases about OpenClaw machinery we do not have (its exact-value registry, the
``mode: "off"`` switch, JavaScript custom-pattern flags, chunked replacement) are left out;
docs/redaction.md lists them.
"""

from __future__ import annotations

import json

import pytest

from openclaw_fts.history_shaping import sanitize_message
from openclaw_fts.redact import mask_secret, redact_text

# (text, secrets that must be gone, pieces that must remain)
MASKED: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = [
    ("OPENAI_API_KEY=sk-1234567890abcdef", ("1234567890abcdef",), ("OPENAI_API_KEY=sk-123…cdef",)),
    ("DISCORD_BOT_TOKEN=$SUPERSECRET123", ("SUPERSECRET123",), ("DISCORD_BOT_TOKEN=",)),
    (
        'DISCORD_BOT_TOKEN="${DISCORD_BOT_TOKEN:-discordliteral1234567890}"',
        ("discordliteral1234567890", "literal1234"),
        ("DISCORD_BOT_TOKEN=",),
    ),
    (
        'raw_params={"command":"export XAI_API_KEY=\\"issue85049-xai-cleartext-token-ABCDEFGH'
        'IJKLMNOPQRSTUVWXYZ1234567890\\" && export BRAVE_API_KEY=\\\\\\"issue85049-brave-clear'
        'text-token-ABCDEFGHIJKLMNOPQRSTUVWXYZ1234567890\\\\\\" && echo blocked"}',
        ("xai-cleartext-token", "brave-cleartext-token"),
        ("XAI_API_KEY=", "BRAVE_API_KEY=", "echo blocked"),
    ),
    (
        "aws_secret_access_key = Wj7/Wj7/Wj7/Wj7/Wj7/Wj7/Wj7/Wj7/Wj7/Wj7/",
        ("Wj7/Wj7/Wj7/Wj7/Wj7/Wj7/Wj7/Wj7/Wj7/Wj7/",),
        ("aws_secret_access_key = ",),
    ),
    (
        '{"SecretAccessKey":"Wj7/Wj7/Wj7/Wj7/Wj7/Wj7/Wj7/Wj7/Wj7/Wj7/"}',
        ("Wj7/Wj7/Wj7/Wj7/Wj7/Wj7/Wj7/Wj7/Wj7/Wj7/",),
        ('"SecretAccessKey":"',),
    ),
    (
        "bare Wj7/Wj7/Wj7/Wj7/Wj7/Wj7/Wj7/Wj7/Wj7/Wj7/ key",
        ("Wj7/Wj7/Wj7/Wj7/Wj7/Wj7/Wj7/Wj7/Wj7/Wj7/",),
        ("bare ",),
    ),
    (
        "curl --token abcdef1234567890ghij https://api.test",
        ("abcdef1234567890ghij",),
        ("curl --token abcdef…ghij https://api.test",),
    ),
    (
        "gog gmail watch serve --hook-token abcdef1234567890ghij",
        ("abcdef1234567890ghij",),
        ("--hook-token abcdef…ghij",),
    ),
    (
        "cmd --aws-secret-access-key=AbCdAbCdAbCdAbCdAbCdAbCdAbCdAbCdAbCdAbCd\n"
        "cmd --awsSecretAccessKey AbCdAbCdAbCdAbCdAbCdAbCdAbCdAbCdAbCdAbCd",
        ("AbCdAbCdAbCdAbCdAbCdAbCdAbCdAbCdAbCdAbCd",),
        ("--aws-secret-access-key=AbCdAb…AbCd", "--awsSecretAccessKey AbCdAb…AbCd"),
    ),
    (
        "connect https://user.example/sync?access_token=abcdef1234567890ghij&safe=value",
        ("abcdef1234567890ghij",),
        ("?access_token=abcdef…ghij&safe=value",),
    ),
    (
        "cdp=https://browserless.example.com/?token=supersecret123",
        ("supersecret123",),
        ("?token=***",),
    ),
    (
        "GET https://gateway.example.com/webhooks/sms?safe=value&__openclaw_mms_token_"
        + "a" * 24
        + "="
        + "b" * 48,
        ("b" * 48,),
        ("safe=value&__openclaw_mms_token_",),
    ),
    (
        "matrix access_token=abcdef1234567890ghij next",
        ("1234567890",),
        ("matrix access_token=", " next"),
    ),
    (
        "Docker authentication failed (password=fixture-secret); install and start the engine",
        ("fixture-secret",),
        ("install and start the engine",),
    ),
    ("failed [token=fixture-secret]; retry", ("fixture-secret",), ("; retry",)),
    ("failed {client_secret=fixture-secret}; retry", ("fixture-secret",), ("; retry",)),
    ('failed (password="it\'s-a-secret"); retry', ("it's-a-secret", "secret"), ("; retry",)),
    ("failed [token='has\"quotes']; retry", ('has"quotes',), ("; retry",)),
    ("failed {secret=`has'quotes`}; retry", ("has'quotes",), ("; retry",)),
    ('failed (token="unterminated retry', ("unterminated",), (" retry",)),
    ('{"token":"abcdef1234567890ghij"}', ("1234567890",), ('{"token":"abcdef…ghij"}',)),
    (
        '{"card_number":"4242424242424242","cvc":"123","sharedPaymentToken":"spt_abcdefghijklmno'
        'pqrstuvwxyz","payment_credential":"paycred_abcdefghijklmnopqrstuvwxyz","amount":"4200"}',
        ("4242424242424242", "lmnopqrs"),
        ('"amount":"4200"',),
    ),
    (
        'body: {"app_secret":"feishu_app_secret_1234567890"}\n'
        "config: { appSecret: 'feishu_app_secret_1234567890', client_secret: "
        "'oauth_client_secret_1234567890' }\n"
        'payload: {"credential":"opaque_credential_1234567890"}\n'
        "details: { credential: 'opaque_credential_1234567890' }",
        ("feishu_app_secret_1234567890", "oauth_client_secret_1234567890", "opaque_credential_1"),
        ('"app_secret":"feishu…7890"', "appSecret: 'feishu…7890'"),
    ),
    (
        "LINK_CARD_NUMBER=4242424242424242 LINK_CVC=123 shared_payment_token=spt_abcdefghijklm"
        "nopqrstuvwxyz --payment-credential paycred_abcdefghijklmnopqrstuvwxyz "
        "--card-number 4000056655665556",
        ("4242424242424242", "4000056655665556", "lmnopqrs", "LINK_CVC=123"),
        ("LINK_CARD_NUMBER=", "--card-number "),
    ),
    # (OpenClaw also masks ``cookie: '…'``; we do not: see docs/redaction.md, "Not masked")
    (
        "headers: { authorization: 'Bearer feishu_tenant_access_abcdef123456' }",
        ("feishu_tenant_access_abcdef123456",),
        ("headers: { authorization: '",),
    ),
    (
        "POST /authorize?shared_payment_token=spt_abcdefghijklmnopqrstuvwxyz&card_number="
        "4242424242424242&amount=4200",
        ("lmnopqrs", "4242424242424242"),
        ("&amount=4200",),
    ),
    (
        "Authorization: Bearer abcdef1234567890ghij",
        ("1234567890",),
        ("Authorization: Bearer abcdef…ghij",),
    ),
    ("Authorization: Basic c2VjcmV0OnBhc3M=", ("c2VjcmV0OnBhc3M=",), ("Authorization: Basic ***",)),
    (
        "Authorization: Bot " + "A" * 24 + "." + "B" * 6 + "." + "C" * 27,
        ("BBBBBB", "C" * 27),
        ("Authorization: Bot AAAAAA…CCCC",),
    ),
    (
        "Authorization: token samplevalue1234567890abcd\n"
        "Proxy-Authorization: Digest sampleproxyvalue1234567890",
        ("samplevalue1234567890abcd", "sampleproxyvalue1234567890"),
        ("Authorization: token ", "Proxy-Authorization: Digest "),
    ),
    (
        'Authorization: Digest username="digest-user-example", 2fa="digest-extension-1234567890ab'
        'cdef", response="digest-response-1234567890abcdef", extension="digest-tail-1234567890abc'
        'def", cnonce="tail-nonce"; request_id=digest-example\n'
        "Authorization: AWS4-HMAC-SHA256 Credential=AKIAEXAMPLE1234567890/20260717/eu-west-1/s3/a"
        "ws4_request, SignedHeaders=:authority;x_custom;x.custom, Signature=aws-signature-1234567"
        "890abcdef; status=403\n"
        'Proxy-Authorization: Digest username="digest-user-example", response="digest-response-1'
        '234567890abcdef"; request_id=proxy-example',
        (
            "digest-user-example",
            "digest-response",
            "digest-extension",
            "digest-tail",
            "AKIAEXAMPLE",
            "aws-signature",
            "username=",
            "Credential=",
            "Signature=",
        ),
        (
            "Authorization: Digest ",
            "Authorization: AWS4-HMAC-SHA256 ",
            "; request_id=digest-example",
            "; status=403",
            "; request_id=proxy-example",
        ),
    ),
    (
        "Proxy-Authorization: Basic cHJveHk6cGFzcw==\nX-Authorization: Basic Y3VzdG9tOnBhc3M=\n"
        + json.dumps(
            {
                "x-access-token": "sample-access-value-1234567890",
                "x-goog-api-key": "sample-google-value-1234567890",
            }
        ),
        ("cHJveHk6cGFzcw==", "Y3VzdG9tOnBhc3M=", "sample-access-value", "sample-google-value"),
        ("Proxy-Authorization: Basic ***", "X-Authorization: Basic ***"),
    ),
    (
        'Authorization: Digest username="sample",,response="later-response-value-1234567890"; '
        "status=401\n"
        'Authorization: Digest uri=http://service, response="later-response-value-1234567890"; '
        "status=409\n"
        "Authorization: Digest response='later-response-value-1234567890'; status=410\n"
        "(Authorization: Negotiate cHJvb2YxMjM0NTY3ODkw)\n"
        "Authorization:\nBasic Zm9sZGVkOnNlY3JldA==\n"
        "Authorization:\\nBasic Zm9sZGVkOnNlY3JldA==\n"
        "Authorization:\\tBearer Zm9sZGVkOnNlY3JldA==\n"
        "Authorization: raw-header-value-1234567890   ",
        ("later-response-value", "cHJvb2YxMjM0NTY3ODkw", "Zm9sZGVkOnNlY3JldA==", "value-12345"),
        ("; status=401", "; status=409", "; status=410", "(Authorization: Negotiate cHJvb2…ODkw)"),
    ),
    (
        'Authorization: Digest realm=\\"Example Realm\\", response=\\"escaped-digest-response-1234'
        '567890abcdef\\"; status=401',
        ("escaped-digest-response",),
        ("Authorization: Digest ", "; status=401"),
    ),
    (
        'Authorization: Hawk id="client", mac="hawk-credential-proof-1234567890abcdef"; status=401',
        ("hawk-credential-proof",),
        ("Authorization: Hawk ***; status=401",),
    ),
    (
        "Authorization: Foo id=abc'def`ghi, proof=token-grammar-proof-1234567890abcdef; status=401",
        ("token-grammar-proof",),
        ("Authorization: Foo ", "; status=401"),
    ),
    (
        '{"Authorization":"Digest username=\\"example\\", response=\\"json-digest-response-1234567'
        '890abcdef\\""}',
        ("json-digest-response",),
        ('{"Authorization":"',),
    ),
    (
        "Authorization: Foo+Bar extension-token-1234567890abcdef; status=401",
        ("extension-token-1234567890abcdef",),
        ("Authorization: Foo+Bar ", "; status=401"),
    ),
    (
        "Authorization: Bearer /opaque-~bearer-1234567890abcdef",
        ("/opaque-~bearer-1234567890abcdef",),
        ("Authorization: Bearer ",),
    ),
    ("Authorization: Basic dXNlcg==, status=401", ("dXNlcg==",), ("Authorization: Basic ***",)),
    (
        'curl -H \'Authorization: Digest username="example", response="quoted-header-response-12'
        "34567890abcdef\"'",
        ("quoted-header-response",),
        ("curl -H 'Authorization: Digest ***'",),
    ),
    (
        "{Authorization: AWS4-HMAC-SHA256 Credential=scope/path, SignedHeaders=host, Signature=st"
        "ructural-aws-signature-1234567890abcdef}",
        ("structural-aws-signature",),
        ("{Authorization: AWS4-HMAC-SHA256 ",),
    ),
    (
        "x" * 32_768
        + '\nAuthorization: Digest username="example", '
        + 'response="cross-chunk-response-1234567890abcdef"',
        ("cross-chunk-response", "response="),
        (),
    ),
    (
        "x" * 32_760
        + " Authorization: Bearer "
        + "A" * 96
        + "==\nrequest failed: Bearer "
        + "B" * 96
        + "==",
        ("A" * 96, "B" * 96),
        ("Authorization: Bearer AAAAAA…AA==", "request failed: Bearer BBBBBB…BB=="),
    ),
    (
        "Authorization: opaque-auth-value-1234567890abcdef, status=401\n"
        "Proxy-Authorization: opaque-auth-value-1234567890abcdef; request_id=example",
        ("opaque-auth-value-1234567890abcdef",),
        (", status=401", "; request_id=example"),
    ),
    (
        "Authorization: Token scheme-auth-value-1234567890abcdef, status=401\n"
        "Proxy-Authorization: Basic scheme-auth-value-1234567890abcdef; request_id=example",
        ("scheme-auth-value-1234567890abcdef",),
        (", status=401", "; request_id=example"),
    ),
    (
        "api-key: samplekeyvalue1234567890\nx-goog-api-key=samplegoogvalue1234567890\n"
        "x-access-token: sampleaccessvalue1234567890",
        ("samplekeyvalue1234567890", "samplegoogvalue1234567890", "sampleaccessvalue1234567890"),
        ("api-key: ", "x-goog-api-key=", "x-access-token: "),
    ),
    (
        "api-key: samplekeyvalue1234567890, request_id=example, status=500",
        ("samplekeyvalue1234567890",),
        (),
    ),
    ("api-key: prefix)sensitive&suffix#tail", ("sensitive&suffix#tail",), ()),
    (
        "X-OpenClaw-Token: supersecretgatewaytoken1234567890\n"
        "x-pomerium-jwt-assertion: eyJheaderabcd.eyJpayloadabcd.signatureabcd123456\n"
        "X-Api-Key=shortsecret",
        ("supersecretgatewaytoken1234567890", "eyJpayloadabcd", "shortsecret"),
        ("X-OpenClaw-Token: supers…7890", "X-Api-Key=***"),
    ),
    ("X-Api-Key: prefix&secret#suffix", ("secret#suffix", "&secret"), ("X-Api-Key: ",)),
    ("X-OpenClaw-Token=prefix&actual-secret#tail", ("actual-secret",), ("X-OpenClaw-Token=",)),
    ("x-access-token=prefix&actual-secret#tail", ("actual-secret",), ("x-access-token=",)),
    ("prefix-ghp_" + "a" * 5_000 + " suffix", ("a" * 100,), ("prefix-ghp_aa…aaaa suffix",)),
    (
        "GET /_matrix/client/v3/sync?access_token=abcdef1234567890ghij",
        ("1234567890",),
        ("?access_token=abcdef…ghij",),
    ),
    ("123456:ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef", ("GHIJKLMNOP",), ("123456…cdef",)),
    (
        "GET https://api.example.test/bot123456:ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef/getMe HTTP/1.1",
        ("GHIJKLMNOP",),
        ("/bot123456…cdef/getMe HTTP/1.1",),
    ),
    ("TOKEN=shortvalue", ("shortvalue",), ("TOKEN=***",)),
    ("db pass=opaque-pass-secret-1234567890 next", ("opaque-pass-secret",), ("db pass=", " next")),
    (
        "password = db-password-fixture-1234567890\n"
        'password = "db-password-fixture-1234567890"\n'
        'password= "db-password-fixture-1234567890"\n'
        "password= db-password-fixture-1234567890\n"
        "db_password = db-password-fixture-1234567890\n"
        "database_password: database-password-fixture-1234567890\n"
        "api_secret: 'api-secret-fixture-1234567890'\n"
        "api_secret= 'api-secret-fixture-1234567890'\n"
        "db_password=db-password-fixture-1234567890\n"
        "api_secret: api-secret-fixture-1234567890\n"
        "api_secret=api-secret-fixture-1234567890\n"
        "api_secret= api-secret-fixture-1234567890\n"
        "jdbc.password=db-password-fixture-1234567890\n"
        'jdbc.password="db-password-fixture-1234567890"\n'
        "secret_key = django-secret-key-1234567890\n"
        "secret_key=django-secret-key-1234567890\n"
        "tls.passphrase: tls-passphrase-fixture-1234567890\n"
        "tls_passphrase=tls-passphrase-fixture-1234567890\n"
        "readonly_db_password = readonly-db-password-fixture-1234567890\n"
        "service_tls_passphrase: 'tls-passphrase-fixture-1234567890'\n"
        "db_pass=db-pass-fixture-1234567890\n"
        "jwt: jwt-fixture-1234567890\n"
        "access-token=access-token-fixture-1234567890\n"
        'secret = "bare-secret-fixture-1234567890"\n'
        "token: 'bare-token-fixture-1234567890'\n"
        "password = abc,def\n"
        "api_secret=abc,def\n"
        "passphrase=tls-passphrase-fixture-1234567890\n"
        "safe_option = visible",
        (
            "password-fixture",
            "secret-fixture",
            "secret-key-1234",
            "passphrase-fixture",
            "pass-fixture",
            "jwt-fixture",
            "token-fixture",
            "abc,def",
        ),
        ("safe_option = visible", "db_password = ***", "api_secret: 'api-se…7890'"),
    ),
    (
        "password=abc,def token=abc;def client_secret=abc]def pass=abc)def",
        ("abc,def", "abc;def", "abc]def", "abc)def"),
        ("password=*** token=*** client_secret=*** pass=***",),
    ),
    (
        "password='abc;def' token=\"abc;def\" secret=`abc;def`",
        ("abc;def",),
        ("password='***' token=\"***\" secret=`***`",),
    ),
    (
        "connect https://gateway.example/ws?Access-Token=short-token&ok=1",
        ("short-token",),
        ("?Access-Token=***&ok=1",),
    ),
    (
        "callback https://example.test/oauth?code=oauth-code-abc123&state=visible&x-amz-signature"
        "=abc123xyz&x-amz-security-token=aws-session-token-123&authorization=authz-secret-123&pri"
        "vate_key=pk-secret-123&app_secret=app-secret-123&credential=credential-secret-123",
        (
            "oauth-code",
            "abc123xyz",
            "aws-session-token",
            "authz-secret",
            "pk-secret",
            "app-secret-1",
            "credential-secret",
        ),
        ("&state=visible",),
    ),
    (
        "GET https://example.test/cb?sig=short-sig-123&X-Api-Key=long-api-key-1234567890&x-access"
        "-token=long-access-token-1234567890&x-auth-token=short-authtok&safe=value",
        ("short-sig", "long-api-key", "long-access-token", "short-authtok"),
        ("&safe=value",),
    ),
    ("https://example.test/cb?sig=opaque-signed-value", ("opaque-signed",), ("?sig=",)),
    (
        "https://browser-user:browser-password-1234567890@api.example.test/v1 "
        "https://:empty-username-password-1234567890@api.example.test/v1 "
        "https://same:same@example.test/v1 "
        "postgres://dbuser:database-password-1234567890@db.example.test/openclaw "
        "postgres://secret:secret@db.example.test/openclaw "
        "mongodb+srv://mongo:mongodb-password-1234567890@cluster.example.test/app "
        "redis://:redis-password-1234567890@cache.example.test/0 "
        "rediss://cache:redis-tls-password-1234567890@cache.example.test/0",
        ("password-1234567890",),
        (
            "https://browser-user:***@api.example.test/v1",
            "https://same:***@example.test/v1",
            "postgres://secret:***@db.example.test/openclaw",
            "redis://:***@cache.example.test/0",
        ),
    ),
    (
        "GET https://example.test/cb?scope=read,write&client%5Fsecret=oauth-secret",
        ("oauth-secret",),
        ("?scope=read,write&client%5Fsecret=",),
    ),
    (
        "GET https://example.test/cb?client%5Fsecret=abc,def&safe=1",
        ("abc,def", ",def"),
        ("&safe=1",),
    ),
    (
        "GET /cb?token=abc)def&safe=1 /cb?client%5Fsecret=abc]def&safe=1 /cb?code=short#frag",
        ("abc)def", "abc]def", "short#"),
        ("&safe=1", "#frag"),
    ),
    (
        'GET /cb?token="opaque-token-secret"&safe=1 /cb?client%5Fsecret="oauth-secret"',
        ("opaque-token-secret", "oauth-secret"),
        ("&safe=1",),
    ),
    ("client%5Fsecret=single-secret", ("single-secret",), ()),
    ("body=client_secret=oauth-secret&safe=1", ("oauth-secret",), ("&safe=1",)),
    (
        "form_body=client_secret=oauth-secret&app_secret=app-secret",
        ("oauth-secret", "app-secret"),
        (),
    ),
    ("password=value&safe=1", ("value",), ("&safe=1",)),
    (
        "-----BEGIN PRIVATE KEY-----\nABCDEF1234567890\nZYXWVUT987654321\n"
        "-----END PRIVATE KEY-----",
        ("ABCDEF1234567890", "ZYXWVUT987654321"),
        ("-----BEGIN PRIVATE KEY-----\n…redacted…\n-----END PRIVATE KEY-----",),
    ),
    (
        "x" * 40_000 + " OPENAI_API_KEY=sk-1234567890abcdef " + "y" * 40_000,
        ("1234567890abcdef",),
        ("OPENAI_API_KEY=sk-123…cdef",),
    ),
    ("SecretId is AKIDZ8EXAMPLEFAKE01KEY99TEST", ("EXAMPLEFAKE",), ("SecretId is AKIDZ8…TEST",)),
    ("AKIDz8exampleFake01Key99Test", ("exampleFake",), ("AKIDz8…Test",)),
    ("AccessKeyId=LTAI5tExampleFakeKeyXyz9", ("ExampleFake",), ("AccessKeyId=LTAI5t…Xyz9",)),
    ("hf_ABCDEFghijklmnopqrstuv", ("ghijklmnop",), ("hf_ABC…stuv",)),
    ("r8_ABCDEFghijklmnopqrstuv", ("ghijklmnop",), ("r8_ABC…stuv",)),
    ('password="it\'s-a-secret" next', ("it's-a-secret",), ('password="***" next',)),
    ('token="opaque-abc123 rest', ("opaque-abc123",), (" rest",)),
    ("password=abcdef…1234567890", ("1234567890", "abcdef"), ("password=***",)),
    (
        "ya29.fake-access-token-with-enough-length 1//0fake-refresh-token-with-enough-length "
        "eyJheaderabcd.eyJpayloadabcd.signatureabcd123456",
        ("fake-access-token", "fake-refresh-token", "eyJpayloadabcd.signatureabcd123456"),
        (),
    ),
    (
        "password=abcd-efgh-ijkl-mnop --password qrst-uvwx-yzab-cdef "
        '{"password":"lmno-pqrs-tuvw-xyza"} '
        "main-test-case-name",
        ("abcd-efgh-ijkl-mnop", "qrst-uvwx-yzab-cdef", "lmno-pqrs-tuvw-xyza"),
        ("main-test-case-name",),
    ),
    ("Bearer abcdef1234567890ghij", ("1234567890",), ("Bearer abcdef…ghij",)),
    (
        "https://example.test/callback?pass=opensesamevalue "
        "https://example.test/callback?security_code=123456 "
        "https://example.test/callback?id_token=id-value&private_key=private-value&x-amz-security"
        "-token=aws-value",
        ("opensesamevalue", "123456", "id-value", "private-value", "aws-value"),
        (),
    ),
    ("GET https://example.test/oauth?code=opaque-grant-123", ("opaque-grant",), ("?code=***",)),
    (
        "postgres://dbuser:opaquepw12345@db.example.test/openclaw",
        ("opaquepw12345",),
        ("postgres://dbuser:***@db",),
    ),
    (
        "fetch /buckets/AKIAABCDEFGHIJKLMNOP/objects",
        ("ABCDEFGHIJKLMNOP",),
        ("fetch /buckets/AKIAAB…MNOP/objects",),
    ),
    ("aws AKIA_ID=AKIAABCDEFGHIJKLMNOP", ("ABCDEFGHIJKLMNOP",), ("aws AKIA_ID=AKIAAB…MNOP",)),
    (
        "https://app.example/reset/gAAAA" + "B" * 24 + " visited",
        ("B" * 24,),
        ("https://app.example/reset/",),
    ),
]

# Every vendor fixture of OpenClaw's "expanded vendor-prefix token corpus" and GitLab tests,
# each redacted ALONE (a fixture must be found by itself, not thanks to a neighbour).
VENDOR_FIXTURES = [
    "sk-ant-abcdefghijklmnopqrstuvwxyz",
    "gho_abcdefghijklmnopqrstuvwxyz",
    "ghu_abcdefghijklmnopqrstuvwxyz",
    "ghs_abcdefghijklmnopqrstuvwxyz",
    "ghr_abcdefghijklmnopqrstuvwxyz",
    "glpat-abcdefghijklmnopqrstuvwxyz12.ab.abcdefghi",
    "gloas-" + "a" * 64,
    "xoxb-1234567890-abcdefghijklmnopqrstuvwxyz",
    "https://hooks.slack.com/services/T1234567890/B1234567890/abcdefghijklmnopqrstuvwxy",
    "https://discord.com/api/webhooks/123456789012345678/abcdefghijklmnopqrstuvwxyzABCDEFGHIJKL"
    "MNOPQRSTUVWXYZ0123456789abcdef",
    "discord bot token " + "A" * 24 + "." + "B" * 6 + "." + "C" * 27,
    "AIzaabcdefghijklmnopqrstuvwxyzABCDE",
    "pplx-abcdefghijklmnopqrstuvwxyz",
    "fal_abcdefghijklmnopqrstuvwxyz",
    "fc-abcdefghijklmnopqrstuvwxyz",
    "bb_live_abcdefghijklmnopqrstuvwxyz",
    "gAAAAabcdefghijklmnopqrstuvwxyz123456",
    "AKIAABCDEFGHIJKLMNOP",
    "ASIAABCDEFGHIJKLMNOP",
    "api_org_abcdefghijklmnopqrstuvwxyz12345678",
    "sk_live_abcdefghijklmnopqrstuvwxyz",
    "sk_test_abcdefghijklmnopqrstuvwxyz",
    "rk_live_abcdefghijklmnopqrstuvwxyz",
    "SG.abcdefghijklmnopqrstuvwxyz.0123456789abcdefghijklmnopqrstuvwxyz",
    "npm_abcdefghijklmnopqrstuvwxyz",
    "pypi-abcdefghijklmnopqrstuvwxyz",
    "dop_v1_abcdefghijklmnopqrstuvwxyz",
    "doo_v1_abcdefghijklmnopqrstuvwxyz",
    "dor_v1_abcdefghijklmnopqrstuvwxyz",
    "dp.pt." + "A" * 43,
    "dckr_pat_" + "A" * 27,
    "dckr_oat_" + "B" * 32,
    "bkua_" + "a" * 40,
    "CCIPAT_" + "A" * 22 + "_" + "a" * 40,
    "sbp_" + "a" * 40,
    "dapi" + "a" * 32 + "-1",
    "ddp_" + "A" * 36,
    "glsa_" + "A" * 41,
    "glc_eyJ" + "A" * 80,
    "nfp_" + "A" * 36,
    "CFPAT-" + "A" * 43,
    "ATCTT3xFfG" + "A" * 48 + "=ABCDEF12",
    "ATATT" + "A" * 48 + "=ABCDEF12",
    "ATBB" + "A" * 24,
    "BBDC-" + "A" * 42,
    "HRKU-AA" + "A" * 58,
    "pat-na1-12345678-1234-1234-1234-123456789abc",
    "apify_api_" + "A" * 36,
    "FlyV1 fm123_" + "A" * 120,
    "fio-u-" + "A" * 64,
    "am_abcdefghijklmnopqrstuvwxyz",
    "sk_abcdefghijklmnopqrstuvwxyz",
    "tvly-abcdefghijklmnopqrstuvwxyz",
    "exa_abcdefghijklmnopqrstuvwxyz",
    "gsk_abcdefghijklmnopqrstuvwxyz",
    "syt_abcdefghijklmnopqrstuvwxyz",
    "retaindb_abcdefghijklmnopqrstuvwxyz",
    "hsk-abcdefghijklmnopqrstuvwxyz",
    "mem0_abcdefghijklmnopqrstuvwxyz",
    "brv_abcdefghijklmnopqrstuvwxyz",
    "xai-abcdefghijklmnopqrstuvwxyzABCDE",
    "fw-" + "C" * 40,
    "fw_" + "A" * 40,
    "fpk_" + "B" * 40,
    # GitLab
    "gloas-" + "a" * 32,
    "gloas-" + "a" * 80,
    "gloas-" + "a" * 32 + "Z" + "b" * 31,
    "gldt-" + "A" * 20,
    "glcbt-a1B2_" + "A" * 20,
    "glptt-" + "A" * 40,
    "glft-" + "A" * 20,
    "glft-a0b1-123_",
    "glimt-" + "A" * 25,
    "glagent-" + "A" * 50,
    "glwt-" + "A" * 20,
    "glsoat-" + "A" * 20,
    "glffct-" + "A" * 20,
    "glrt-t1_" + "A" * 20,
    "glrt-2CR8_eVxiioB1QmzPZwa",
    "glrt-ABCdef1234567890xyzW",
    "glrt-" + "A" * 27 + ".01." + "a" * 9,
    "glrtr-" + "A" * 27 + ".01." + "a" * 9,
    "GR1348941" + "A" * 20,
    "_gitlab_session=" + "A" * 32,
]

# Texts OpenClaw leaves exactly as they are.
UNCHANGED = [
    "\n".join(
        [
            'DISCORD_BOT_TOKEN="${DISCORD_BOT_TOKEN:-}"',
            "OPENAI_API_KEY=$OPENAI_API_KEY",
            "API_KEY=$API_KEY",
            "TOKEN=${TOKEN}",
            "PASSWORD=${PASSWORD:-}",
            "GITHUB_TOKEN=${GITHUB_TOKEN}",
        ]
    ),
    " " * 16_381 + "compass=visible" + " " * 16_384,
    "<details>a" + "\n" * 60_000 + "X</details>",
    "Use either --password or --password-file.",
    "(token_count=42) [password_hint=visible] {mytoken=visible}",
    "the authorization model is open",
    'agents.defaults: Unrecognized key: "llm"',
    "Oops: failed: code=E1 status=500",
    "GET https://example.test/cb?signal=visible&sigmoid=visible&signature_algorithm=v4"
    "&x-api-version=1&x-request-id=req-123",
    "npm_telegram_package_spec ask_openclaw_query_patterns team_management risk_assessment "
    "glpat-docs gloas-docs gldt-docs glcbt-docs glptt-docs glft-docs glimt-docs glagent-docs "
    "glwt-docs glsoat-docs glffct-docs glrt-docs glrtr-docs GR1348941-docs _gitlab_session=short "
    "dapi-example sbp_short nfp_site CCIPAT_docs ATATT-example fw-tooshort fw_tooshort "
    "fpk_tooshort fixturefw-" + "C" * 40 + " fixture_fw_" + "A" * 40 + " fixture_fpk_" + "B" * 40,
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR4nGNgYAAAAAMAASsJ"
    "TYQAAAAASUVORK5CYII=",
    "blob: xxxxAKIAABCDEFGHIJKLMNOPqrstuv",
    "data:application/octet-stream;base64,AAAA+gAAAA" + "B" * 24,
    "data:application/octet-stream;base64,"
    + "A" * (16_384 * 2 - 37)
    + "gAAAA"
    + "B" * 24
    + "C" * 16_384,
    # source that computes a secret rather than holding one
    "const API_TOKEN = computeToken(); return API_TOKEN;",
    "const API_TOKEN: number = computeToken(); return API_TOKEN;",
    "const API_TOKEN = computeToken<string>(); return API_TOKEN;",
    "const API_TOKEN = (40 + 2); return API_TOKEN;",
    "const API_TOKEN = await computeToken(); return API_TOKEN;",
    "const HAS_API_TOKEN = false; return HAS_API_TOKEN;",
    "const HAS_API_TOKEN = true; return HAS_API_TOKEN;",
    "let API_TOKEN = null; return API_TOKEN;",
    "(token=computeToken());",
    "token = timeObserverToken",
    "API_KEY: str = computeKey()",
    "normal log line",
]

# Source literals OpenClaw's input-source policy masks (the literal must be gone).
SOURCE_LITERALS = [
    'const API_TOKEN = "fixture-only-not-a-real-secret"; return API_TOKEN;',
    "const API_TOKEN = 'fixture-only-not-a-real-secret'; return API_TOKEN;",
    "const API_TOKEN = `fixture-only-not-a-real-secret`; return API_TOKEN;",
    "const API_TOKEN = 987654321; return API_TOKEN;",
    'const note = "API_TOKEN=fixture-only-not-a-real-secret";',
    "// API_TOKEN=fixture-only-not-a-real-secret\nreturn 42;",
    'return { "api_key": "fixture-only-not-a-real-secret" };',
    'const API_TOKEN = "fixture-only-not-a-real-secret" + suffix; return API_TOKEN;',
    "const API_TOKEN = computeToken(); /* API_TOKEN=fixture-only-not-a-real-secret */",
    'const API_TOKEN = "fixture-only-not-a-real-secret"; @',
    '(token="fixture-only-not-a-real-secret");',
]


@pytest.mark.parametrize(("text", "gone", "kept"), MASKED, ids=lambda v: str(v)[:40])
def test_openclaw_masked_cases(text: str, gone: tuple[str, ...], kept: tuple[str, ...]) -> None:
    out = redact_text(text)
    for secret in gone:
        assert secret not in out, f"{secret!r} survived in {out[:300]!r}"
    for piece in kept:
        assert piece in out, f"{piece!r} missing from {out[:300]!r}"
    assert redact_text(out) == out  # idempotent


@pytest.mark.parametrize("token", VENDOR_FIXTURES)
def test_openclaw_vendor_fixtures_alone(token: str) -> None:
    out = redact_text(token)
    assert token not in out
    assert redact_text(out) == out


def test_openclaw_exact_vendor_masks() -> None:
    assert redact_text("AKIAABCDEFGHIJKLMNOP") == "AKIAAB…MNOP"
    assert redact_text("sk_live_abcdefghijklmnopqrstuvwxyz") == "sk_liv…wxyz"
    assert redact_text("xai-abcdefghijklmnopqrstuvwxyzABCDE") == "xai-ab…BCDE"
    for token, masked in (
        ("fw-" + "C" * 40, "fw-CCC…CCCC"),
        ("fw_" + "A" * 40, "fw_AAA…AAAA"),
        ("fpk_" + "B" * 40, "fpk_BB…BBBB"),
    ):
        assert redact_text(token) == masked
        assert redact_text(masked) == masked


@pytest.mark.parametrize("text", UNCHANGED, ids=lambda v: v[:40])
def test_openclaw_unchanged_cases(text: str) -> None:
    assert redact_text(text) == text


@pytest.mark.parametrize("source", SOURCE_LITERALS)
def test_openclaw_source_literals_are_masked(source: str) -> None:
    out = redact_text(source)
    assert "fixture-only-not-a-real-secret" not in out and "987654321" not in out
    assert "***" in out or "…" in out
    assert redact_text(out) == out


def test_telegram_tokens_at_a_chunk_boundary() -> None:
    credential = "123456:" + "A" * 28 + "WXYZ"
    for token, masked in ((f"bot{credential}", "bot123456…WXYZ"), (credential, "123456…WXYZ")):
        prefix = "x" * (16_384 - 13) + " "
        suffix = " " + "y" * 32_768
        assert redact_text(prefix + token + suffix) == prefix + masked + suffix


def test_unknown_fields_and_nested_payloads_in_history() -> None:
    """OpenClaw's redactSecrets cases, through what sessions_history returns."""
    message = {
        "role": "assistant",
        "content": "done",
        "plugin": {
            "config": {
                "apiKey": "AIzaSyD-very-real-looking-google-api-key-123",
                "access": "ya29.fake-access-token-with-enough-length",
                "refresh": "1//0fake-refresh-token-with-enough-length",
                "password": "abcd-efgh-ijkl-mnop",
            }
        },
        "transcript": [
            {
                "text": "jwt eyJheaderabcd.eyJpayloadabcd.signatureabcd123456 "
                "and main-test-case-name"
            },
        ],
        "oauth": {
            "accessToken": "opaque-access-token-value",
            "refreshToken": "opaque-refresh-token-value",
        },
        "permissions": {"access": "read", "refresh": "monthly"},
        "numericSecrets": {"cvc": 123, "token": 1234567890, "amount": 4200},
        "bearerToken": "bearer-token-value-1234567890",
    }
    out = sanitize_message(message).message
    dumped = json.dumps(out)
    for secret in (
        "AIzaSyD-very-real-looking",
        "ya29.fake-access-token",
        "1//0fake-refresh-token",
        "eyJpayloadabcd.signatureabcd123456",
        "abcd-efgh-ijkl-mnop",
        "opaque-access-token-value",
        "opaque-refresh-token-value",
        "1234567890",
        "bearer-token-value",
    ):
        assert secret not in dumped, secret
    assert "main-test-case-name" in dumped
    assert out["permissions"] == {"access": "read", "refresh": "monthly"}
    assert out["numericSecrets"]["amount"] == 4200
    assert out["plugin"]["config"]["password"] == "***"
    assert out["bearerToken"] == mask_secret("bearer-token-value-1234567890")

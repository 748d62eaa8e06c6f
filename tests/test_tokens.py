"""Bearer token verifiers: a static tokens file and JWTs from an identity provider.

Real keys, tokens signed by pyjwt (or forged by hand where an attack needs it), and a
JWKS served over real HTTP on loopback as well as read from a file.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm
from mcp.server.auth.provider import AccessToken

from groundkb.access.principal import Principal
from groundkb.access.tokens import JwtTokens, StaticTokens, new_token, principal_of
from groundkb.errors import ConfigError, InvalidInput

ISSUER = "https://idp.example.com/"
AUDIENCE = "groundkb"
RESOURCE = "https://kb.example.com/mcp"


# --- keys, JWKS and tokens ------------------------------------------------------------


@pytest.fixture(scope="module")
def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def ec_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


@pytest.fixture(scope="module")
def jwks(rsa_key: rsa.RSAPrivateKey, ec_key: ec.EllipticCurvePrivateKey) -> dict[str, Any]:
    rsa_jwk = RSAAlgorithm.to_jwk(rsa_key.public_key(), as_dict=True)
    ec_jwk = ECAlgorithm.to_jwk(ec_key.public_key(), as_dict=True)
    return {
        "keys": [
            {**rsa_jwk, "kid": "rsa-1", "alg": "RS256", "use": "sig"},
            {**ec_jwk, "kid": "ec-1", "alg": "ES256", "use": "sig"},
        ]
    }


class _JwksServer:
    """A JWKS endpoint on 127.0.0.1 that counts the requests it answers."""

    def __init__(self, body: bytes) -> None:
        self.hits = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.hits += 1
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/.well-known/jwks.json"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


@pytest.fixture(scope="module")
def jwks_server(jwks: dict[str, Any]) -> Iterator[_JwksServer]:
    server = _JwksServer(json.dumps(jwks).encode())
    yield server
    server.close()


@pytest.fixture(autouse=True)
def _loopback_without_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The JWKS client uses urllib, which would send loopback through a configured proxy."""
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")


@pytest.fixture
def jwks_file(tmp_path: Path, jwks: dict[str, Any]) -> Path:
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(jwks))
    return path


@pytest.fixture(params=["file", "url"])
def jwks_source(request: pytest.FixtureRequest, jwks_file: Path) -> str:
    """The JWKS both ways a deployment may give it."""
    if request.param == "file":
        return str(jwks_file)
    server: _JwksServer = request.getfixturevalue("jwks_server")
    return server.url


@pytest.fixture
def public_pem(tmp_path: Path, rsa_key: rsa.RSAPrivateKey) -> Path:
    path = tmp_path / "idp.pem"
    path.write_bytes(_pem(rsa_key))
    return path


def _pem(key: rsa.RSAPrivateKey) -> bytes:
    return key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def _verifier(jwks: str | Path, **options: Any) -> JwtTokens:
    return JwtTokens(issuer=ISSUER, audience=AUDIENCE, jwks=jwks, resource=RESOURCE, **options)


def _claims(**changes: Any) -> dict[str, Any]:
    claims: dict[str, Any] = {
        "iss": ISSUER,
        "aud": AUDIENCE,
        "sub": "alice",
        "exp": int(time.time()) + 600,
        "groups": ["legal", "staff"],
    }
    claims.update(changes)
    return {k: v for k, v in claims.items() if v is not None}


def _sign(key: Any, kid: str | None = "rsa-1", alg: str = "RS256", **changes: Any) -> str:
    headers = {"kid": kid} if kid else None
    return jwt.encode(_claims(**changes), key, algorithm=alg, headers=headers)


def _forge(header: dict[str, Any], secret: bytes | None) -> str:
    """A token pyjwt refuses to make: unsigned, or HMAC-signed with a given secret."""

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    signing_input = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(_claims()).encode())}"
    signature = b"" if secret is None else hmac.digest(secret, signing_input.encode(), "sha256")
    return f"{signing_input}.{b64(signature)}"


# --- JWTs -----------------------------------------------------------------------------


def test_a_valid_jwt_gives_its_user_groups_and_the_resource(
    jwks_source: str, rsa_key: rsa.RSAPrivateKey
) -> None:
    token = _sign(rsa_key, scope="kb:read kb:write")
    access = _verifier(jwks_source).verify(token)
    assert access is not None
    assert (access.subject, access.client_id, access.resource) == ("alice", "alice", RESOURCE)
    assert access.scopes == ["kb:read", "kb:write"]
    assert access.claims == {"groups": ["legal", "staff"], "via": "jwt", "iss": ISSUER}
    assert access.expires_at == jwt.decode(token, options={"verify_signature": False})["exp"]
    assert access.token == token


def test_an_es256_jwt_is_checked_with_the_ec_key_its_kid_names(
    jwks_source: str, ec_key: ec.EllipticCurvePrivateKey
) -> None:
    access = _verifier(jwks_source).verify(_sign(ec_key, kid="ec-1", alg="ES256"))
    assert access is not None and access.subject == "alice"


def test_a_key_is_chosen_by_kid_not_by_trying_them_all(
    jwks_source: str, ec_key: ec.EllipticCurvePrivateKey
) -> None:
    assert _verifier(jwks_source).verify(_sign(ec_key, kid="rsa-1", alg="ES256")) is None


@pytest.mark.parametrize("kid", ["rotated-away", None])
def test_a_jwt_whose_kid_is_unknown_or_missing_is_refused(
    jwks_source: str, rsa_key: rsa.RSAPrivateKey, kid: str | None
) -> None:
    assert _verifier(jwks_source).verify(_sign(rsa_key, kid=kid)) is None


def test_a_jwt_signed_by_another_key_is_refused(jwks_source: str) -> None:
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    assert _verifier(jwks_source).verify(_sign(stranger)) is None


@pytest.mark.parametrize(
    ("changes", "accepted"),
    [  # exp and nbf as seconds from now
        ({"exp": -120}, False),
        ({"exp": -10}, True),  # within the 30 s leeway
        ({"nbf": 600}, False),
        ({"nbf": 10}, True),
        ({"aud": "another-service"}, False),
        ({"aud": ["another-service", AUDIENCE]}, True),
        ({"iss": "https://evil.example.com/"}, False),
        ({"sub": None}, False),
        ({"sub": ""}, False),
        ({"exp": None}, False),
        ({"aud": None}, False),
        ({"iss": None}, False),
    ],
)
def test_time_audience_issuer_and_required_claims_are_checked(
    jwks_file: Path, rsa_key: rsa.RSAPrivateKey, changes: dict[str, Any], accepted: bool
) -> None:
    now = int(time.time())
    for claim in ("exp", "nbf"):
        if changes.get(claim) is not None:
            changes = {**changes, claim: now + changes[claim]}
    access = _verifier(jwks_file).verify(_sign(rsa_key, **changes))
    assert (access is not None) is accepted
    if access is not None:
        assert access.resource == RESOURCE


def test_an_unsigned_alg_none_jwt_is_refused(jwks_file: Path, public_pem: Path) -> None:
    token = _forge({"alg": "none", "kid": "rsa-1", "typ": "JWT"}, None)
    assert _verifier(jwks_file).verify(token) is None
    assert _verifier(public_pem).verify(token) is None


def test_hs256_signed_with_the_public_key_as_secret_is_refused(
    jwks_source: str, public_pem: Path, rsa_key: rsa.RSAPrivateKey
) -> None:
    """The key-confusion attack: the public key is public, so anyone could sign this."""
    token = _forge({"alg": "HS256", "kid": "rsa-1", "typ": "JWT"}, _pem(rsa_key))
    assert _verifier(jwks_source).verify(token) is None
    assert _verifier(public_pem).verify(token) is None


def test_an_algorithm_not_configured_is_refused(jwks_file: Path, ec_key: Any) -> None:
    verifier = _verifier(jwks_file, algorithms=["RS256"])
    assert verifier.verify(_sign(ec_key, kid="ec-1", alg="ES256")) is None


@pytest.mark.parametrize("algorithms", [["HS256"], ["RS256", "HS512"], ["none"], []])
def test_hmac_none_and_empty_algorithm_lists_are_a_config_error(
    jwks_file: Path, algorithms: list[str]
) -> None:
    with pytest.raises(ConfigError, match="not accepted"):
        _verifier(jwks_file, algorithms=algorithms)


@pytest.mark.parametrize(
    ("groups", "expected"),
    [(["legal", "staff"], ["legal", "staff"]), ("legal staff", ["legal", "staff"]), (None, [])],
)
def test_groups_may_be_a_list_or_a_space_separated_string(
    jwks_file: Path, rsa_key: rsa.RSAPrivateKey, groups: Any, expected: list[str]
) -> None:
    access = _verifier(jwks_file).verify(_sign(rsa_key, groups=groups))
    assert access is not None and access.claims is not None
    assert access.claims["groups"] == expected


def test_groups_of_another_shape_refuse_the_token(
    jwks_file: Path, rsa_key: rsa.RSAPrivateKey
) -> None:
    assert _verifier(jwks_file).verify(_sign(rsa_key, groups={"legal": True})) is None


def test_scopes_come_from_scp_and_claim_names_are_configurable(
    jwks_file: Path, rsa_key: rsa.RSAPrivateKey
) -> None:
    token = _sign(rsa_key, scp=["kb:read"], email="alice@example.com", roles="hr")
    access = _verifier(jwks_file, user_claim="email", groups_claim="roles").verify(token)
    assert access is not None and access.claims is not None
    assert (access.subject, access.scopes, access.claims["groups"]) == (
        "alice@example.com",
        ["kb:read"],
        ["hr"],
    )


def test_a_pem_public_key_checks_tokens_with_or_without_kid(
    public_pem: Path, rsa_key: rsa.RSAPrivateKey, ec_key: ec.EllipticCurvePrivateKey
) -> None:
    verifier = _verifier(public_pem)
    assert verifier.verify(_sign(rsa_key, kid=None)) is not None
    assert verifier.verify(_sign(rsa_key, kid="anything")) is not None
    assert verifier.verify(_sign(ec_key, kid=None, alg="ES256")) is None


def test_the_jwks_url_is_fetched_once_and_then_cached(
    jwks_server: _JwksServer, rsa_key: rsa.RSAPrivateKey
) -> None:
    verifier = _verifier(jwks_server.url)
    before = jwks_server.hits
    for _ in range(3):
        assert verifier.verify(_sign(rsa_key)) is not None
    assert jwks_server.hits - before == 1


def test_an_unreachable_jwks_refuses_tokens_and_warns(
    rsa_key: rsa.RSAPrivateKey, caplog: pytest.LogCaptureFixture
) -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    verifier = _verifier(f"http://127.0.0.1:{port}/jwks.json")
    with caplog.at_level(logging.WARNING, logger="groundkb.access.tokens"):
        assert verifier.verify(_sign(rsa_key)) is None
    assert "cannot fetch the JWKS" in caplog.text


@pytest.mark.parametrize("garbage", ["", "x", "a.b.c", "e30.e30.", "Bearer abc"])
def test_garbage_is_refused_without_raising(jwks_file: Path, garbage: str) -> None:
    assert _verifier(jwks_file).verify(garbage) is None


def test_a_refusal_is_logged_at_debug_with_the_reason_and_never_the_token(
    jwks_file: Path, rsa_key: rsa.RSAPrivateKey, caplog: pytest.LogCaptureFixture
) -> None:
    token = _sign(rsa_key, aud="another-service")
    with caplog.at_level(logging.DEBUG, logger="groundkb.access.tokens"):
        assert _verifier(jwks_file).verify(token) is None
    assert [r.levelno for r in caplog.records] == [logging.DEBUG]
    assert "audience" in caplog.text.lower()
    assert token not in caplog.text and token.split(".")[2] not in caplog.text


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"keys": []}', "neither a JWKS nor a PEM"),
        (b"[1, 2]", "neither a JWKS nor a PEM"),
        (b"not json", "neither a JWKS nor a PEM"),
        (b"-----BEGIN PUBLIC KEY-----\nnonsense\n-----END PUBLIC KEY-----\n", "not a PEM"),
    ],
)
def test_an_unusable_key_file_is_a_config_error_naming_it(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "keys"
    path.write_bytes(content)
    with pytest.raises(ConfigError, match=message) as caught:
        _verifier(path)
    assert str(path) in caught.value.message


def test_a_private_key_or_a_missing_file_is_a_config_error(
    tmp_path: Path, rsa_key: rsa.RSAPrivateKey
) -> None:
    private = tmp_path / "private.pem"
    private.write_bytes(
        rsa_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    with pytest.raises(ConfigError, match="not a PEM public key"):
        _verifier(private)
    with pytest.raises(ConfigError, match="cannot read"):
        _verifier(tmp_path / "absent.json")


@pytest.mark.anyio
async def test_verify_token_is_the_async_face_of_verify(
    jwks_server: _JwksServer, rsa_key: rsa.RSAPrivateKey
) -> None:
    verifier = _verifier(jwks_server.url)
    access = await verifier.verify_token(_sign(rsa_key))
    assert access is not None and access.subject == "alice"
    assert await verifier.verify_token("nonsense") is None


# --- static tokens --------------------------------------------------------------------


def _sha(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _write(path: Path, text: str) -> None:
    """Write and move the mtime on a second, as a later edit would, without sleeping."""
    old = path.stat().st_mtime_ns if path.exists() else time.time_ns()
    path.write_text(text)
    os.utime(path, ns=(old + 1_000_000_000, old + 1_000_000_000))


ALICE = "gkb_alice-secret"
BOB = "gkb_bob-secret"


@pytest.fixture
def tokens_file(tmp_path: Path) -> Path:
    path = tmp_path / "tokens.toml"
    _write(
        path,
        f"""
[[tokens]]
user = "alice"
groups = ["legal", "staff"]
sha256 = "{_sha(ALICE)}"

[[tokens]]
user = "bob"
token = "{BOB}"
expires = 2999-01-01T00:00:00Z
""",
    )
    return path


def _static(path: Path) -> StaticTokens:
    return StaticTokens(path, resource=RESOURCE)


def test_a_hashed_token_gives_its_user_groups_and_the_resource(tokens_file: Path) -> None:
    access = _static(tokens_file).verify(ALICE)
    assert access == AccessToken(
        token=ALICE,
        client_id="alice",
        subject="alice",
        scopes=["kb:read"],
        expires_at=None,
        resource=RESOURCE,
        claims={"groups": ["legal", "staff"], "via": "token"},
    )


def test_a_plain_token_is_accepted_and_its_expiry_reported(tokens_file: Path) -> None:
    access = StaticTokens(tokens_file, resource=RESOURCE, scopes=["kb:read", "kb:admin"]).verify(
        BOB
    )
    assert access is not None
    assert (access.subject, access.scopes) == ("bob", ["kb:read", "kb:admin"])
    assert access.expires_at == 32472144000  # 2999-01-01T00:00:00Z
    assert access.claims == {"groups": [], "via": "token"}


@pytest.mark.parametrize("wrong", ["", "gkb_alice-secreT", ALICE + " ", _sha(ALICE)])
def test_a_wrong_token_is_refused(tokens_file: Path, wrong: str) -> None:
    assert _static(tokens_file).verify(wrong) is None


def test_an_expired_token_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "tokens.toml"
    path.write_text(
        f'[[tokens]]\nuser = "carol"\nsha256 = "{_sha("old")}"\nexpires = 2020-01-01T00:00:00Z\n'
    )
    assert _static(path).verify("old") is None


def test_an_edit_takes_effect_without_a_restart(tokens_file: Path) -> None:
    verifier = _static(tokens_file)
    assert verifier.verify(ALICE) is not None
    _write(tokens_file, f'[[tokens]]\nuser = "dave"\nsha256 = "{_sha("gkb_dave")}"\n')
    assert verifier.verify("gkb_dave") is not None
    assert verifier.verify(ALICE) is None  # removed users are refused at once
    assert verifier.verify(BOB) is None


def test_a_broken_edit_keeps_the_last_good_tokens_and_warns_once(
    tokens_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    verifier = _static(tokens_file)
    with caplog.at_level(logging.WARNING, logger="groundkb.access.tokens"):
        _write(tokens_file, '[[tokens]]\nuser = "dave"\n')  # half-written entry
        assert verifier.verify(ALICE) is not None
        assert verifier.verify(BOB) is not None
        tokens_file.unlink()
        assert verifier.verify(ALICE) is not None
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 2  # one per change, not one per request
    assert str(tokens_file) in warnings[0] and "neither" in warnings[0]
    assert "keeping the 2 tokens" in warnings[0]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('[[tokens]]\ngroups = []\ntoken = "t"\n', "entry 1: user is missing"),
        ('[[tokens]]\nuser = " "\ntoken = "t"\n', "entry 1: user is missing"),
        ('[[tokens]]\nuser = "a"\n', r"entry 1 \(a\): give either sha256"),
        (f'[[tokens]]\nuser = "a"\ntoken = "t"\nsha256 = "{_sha("t")}"\n', "not both"),
        ('[[tokens]]\nuser = "a"\ngroups = "staff"\ntoken = "t"\n', "groups must be a list"),
        ('[[tokens]]\nuser = "a"\ngroups = ["x", 1]\ntoken = "t"\n', "groups must be a list"),
        ('[[tokens]]\nuser = "a"\nsha256 = "abc"\n', "64 hex digits"),
        ('[[tokens]]\nuser = "a"\ntoken = 5\n', "non-empty string"),
        ('[[tokens]]\nuser = "a"\ntoken = "t"\nrole = "admin"\n', "unknown keys 'role'"),
        ('[[tokens]]\nuser = "a"\ntoken = "t"\nexpires = 2027-01-01\n', "with a zone"),
        ('[[tokens]]\nuser = "a"\ntoken = "t"\nexpires = 2027-01-01T00:00:00\n', "with a zone"),
        (
            f'[[tokens]]\nuser = "a"\ntoken = "t"\n[[tokens]]\nuser = "b"\nsha256 = "{_sha("t")}"',
            r"entry 2 \(b\) has the same token as an entry for a",
        ),
        ('[[token]]\nuser = "a"\ntoken = "t"\n', "unknown keys 'token'"),
        ('tokens = ["t"]\n', "must be \\[\\[tokens\\]\\] tables"),
        ("[[tokens]\n", "cannot read tokens file"),
    ],
)
def test_a_malformed_file_is_a_config_error_naming_it(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "tokens.toml"
    path.write_text(content)
    with pytest.raises(ConfigError, match=message) as caught:
        _static(path)
    assert str(path) in caught.value.message
    assert '"t"' not in caught.value.message


def test_a_missing_file_is_a_config_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"cannot read tokens file .*absent\.toml"):
        _static(tmp_path / "absent.toml")


def test_an_empty_file_lets_nobody_in(tmp_path: Path) -> None:
    path = tmp_path / "tokens.toml"
    path.write_text("")
    assert _static(path).verify("") is None


@pytest.mark.parametrize(
    ("user", "groups"),
    [("erin", ["legal"]), ('o"brien\\x', ["r&d", "tab\there", "ünï"]), ("frank", [])],
)
def test_new_token_output_round_trips_through_the_file(
    tokens_file: Path, user: str, groups: list[str]
) -> None:
    verifier = _static(tokens_file)
    token, entry = new_token(user, groups)
    assert token.startswith("gkb_") and len(token) > 40
    assert token not in entry
    _write(tokens_file, tokens_file.read_text() + "\n" + entry)
    access = verifier.verify(token)
    assert access is not None and access.claims is not None
    assert (access.subject, access.claims["groups"]) == (user, groups)
    assert verifier.verify(ALICE) is not None


def test_new_tokens_differ_and_need_a_user(tmp_path: Path) -> None:
    assert new_token("a", [])[0] != new_token("a", [])[0]
    with pytest.raises(InvalidInput):
        new_token(" ", [])
    with pytest.raises(InvalidInput):
        new_token("a", [""])


@pytest.mark.anyio
async def test_static_verify_token_is_the_async_face_of_verify(tokens_file: Path) -> None:
    verifier = _static(tokens_file)
    access = await verifier.verify_token(ALICE)
    assert access is not None and access.subject == "alice"
    assert await verifier.verify_token("nope") is None


# --- principals -----------------------------------------------------------------------


def test_principal_of_a_static_token(tokens_file: Path) -> None:
    access = _static(tokens_file).verify(ALICE)
    assert access is not None
    assert principal_of(access) == Principal(
        "alice", groups=frozenset({"legal", "staff"}), via="token"
    )


def test_principal_of_a_jwt(jwks_file: Path, rsa_key: rsa.RSAPrivateKey) -> None:
    access = _verifier(jwks_file).verify(_sign(rsa_key, groups="hr"))
    assert access is not None
    assert principal_of(access) == Principal("alice", groups=frozenset({"hr"}), via="jwt")


def test_principal_of_a_bare_token_falls_back_to_the_client_id() -> None:
    bare = AccessToken(token="t", client_id="svc", scopes=[])
    assert principal_of(bare) == Principal("svc")


def test_expired_tells_an_expired_token_from_an_unknown_one(tmp_path: Path) -> None:
    """So the REST API can answer token_expired (get a new one) rather than unknown."""
    from groundkb.access.tokens import StaticTokens, new_token

    old, entry = new_token("ann", ["legal"])
    path = tmp_path / "tokens.toml"
    path.write_text(entry + "expires = 2020-01-01T00:00:00Z\n")
    tokens = StaticTokens(path, resource="http://127.0.0.1/mcp")
    assert tokens.verify(old) is None
    assert tokens.expired(old) and not tokens.expired("gkb_unknown")

"""Bearer tokens into callers: two verifiers for the MCP SDK's ``TokenVerifier`` protocol.

``StaticTokens`` reads a small TOML file of users and token digests, for small teams;
``JwtTokens`` checks JWTs signed by an identity provider, for larger deployments.
Both answer ``verify(token)`` synchronously (the REST API calls it from a worker
thread) and ``await verify_token(token)`` for the MCP SDK's bearer middleware;
``principal_of`` turns what they return into the :class:`Principal` a call runs as.

A refused token is ``None`` and a DEBUG log line saying why. Nothing here logs,
keeps or puts in an error message a presented token: the static table holds only
sha256 digests, even for tokens written in plain in the file.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import threading
import time
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio.to_thread
import jwt
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
from cryptography.hazmat.primitives.serialization import load_pem_public_key
from mcp.server.auth.provider import AccessToken

from groundkb.access.principal import Principal
from groundkb.errors import ConfigError, InvalidInput

if TYPE_CHECKING:
    from collections.abc import Callable

    from jwt.algorithms import AllowedPublicKeys

    _KeySource = Callable[[dict[str, Any]], jwt.PyJWK | AllowedPublicKeys]
    """Finds the key that checks a token, given its header (``kid``, ``alg``)."""

log = logging.getLogger(__name__)

TOKEN_PREFIX = "gkb_"
"""Starts every token ``new_token`` makes, so people and secret scanners recognise one."""


def principal_of(token: AccessToken) -> Principal:
    """The caller a verified token stands for (the verifiers put groups and ``via`` in
    ``claims``)."""
    claims = token.claims or {}
    return Principal(
        user=token.subject or token.client_id,
        groups=frozenset(claims.get("groups", ())),
        via=str(claims.get("via", "")),
    )


# --- Static tokens: a TOML file of users and token digests ----------------------------

_ROW_KEYS = ("user", "groups", "sha256", "token", "expires")
_HEX64 = re.compile(r"[0-9a-fA-F]{64}")


@dataclass(frozen=True, slots=True)
class _Holder:
    """One ``[[tokens]]`` entry, the token itself reduced to its digest."""

    sha256: str
    user: str
    groups: tuple[str, ...]
    expires_at: int | None


class StaticTokens:
    """Tokens listed in a TOML file of ``[[tokens]]`` tables (``user``, ``groups``,
    ``sha256`` or ``token``, optional ``expires``).

    The file is re-read when its size, mtime or inode changes, so adding or removing a
    user needs no restart. A broken edit keeps the last good table and logs a warning
    once: a half-saved file must not lock everyone out. The first load raises
    :class:`ConfigError`, naming the file and what is wrong with it.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        resource: str,
        scopes: Sequence[str] = ("kb:read",),
    ) -> None:
        self.path = Path(path)
        self.resource = resource
        self.scopes = tuple(scopes)
        self._lock = threading.Lock()
        self._stamp = _stamp(self.path)
        self._table = _read_tokens_file(self.path)

    def verify(self, token: str) -> AccessToken | None:
        """The token's holder, or ``None`` if the token is unknown or expired."""
        digest = _sha256(token)
        holder = self._current().get(digest)
        # The lookup is on a one-way digest, so its timing tells nothing about stored
        # tokens; the final equality check is constant-time all the same.
        if holder is None or not hmac.compare_digest(holder.sha256, digest):
            log.debug("token refused: not in %s", self.path)
            return None
        if holder.expires_at is not None and holder.expires_at <= time.time():
            log.debug("token refused: the token of %s in %s has expired", holder.user, self.path)
            return None
        return AccessToken(
            token=token,
            client_id=holder.user,
            subject=holder.user,
            scopes=list(self.scopes),
            expires_at=holder.expires_at,
            resource=self.resource,
            claims={"groups": list(holder.groups), "via": "token"},
        )

    def expired(self, token: str) -> bool:
        """Whether ``token`` is in the file but past its expiry (so the caller can be
        told to get a new one rather than that it is unknown)."""
        holder = self._current().get(_sha256(token))
        return (
            holder is not None
            and holder.expires_at is not None
            and (holder.expires_at <= time.time())
        )

    async def verify_token(self, token: str) -> AccessToken | None:
        """``verify`` in a worker thread, since it may re-read the file."""
        return await anyio.to_thread.run_sync(self.verify, token)

    def _current(self) -> dict[str, _Holder]:
        """The table, re-read first if the file changed since the last attempt."""
        stamp = _stamp(self.path)
        if stamp == self._stamp:
            return self._table
        with self._lock:
            if stamp != self._stamp:
                try:
                    self._table = _read_tokens_file(self.path)
                    log.info("reloaded %s: %d tokens", self.path, len(self._table))
                except ConfigError as exc:
                    log.warning("%s; keeping the %d tokens read before", exc, len(self._table))
                # A failed re-read is not retried (nor logged again) until the next change.
                self._stamp = stamp
        return self._table


def new_token(user: str, groups: Iterable[str] = ()) -> tuple[str, str]:
    """A fresh token for ``user`` and the ``[[tokens]]`` entry to paste into the tokens
    file. The entry holds only the token's sha256, so the file never holds a usable
    secret: hand the token to its user once, it cannot be recovered later."""
    group_list = list(groups)
    if not user.strip() or not all(group_list):
        raise InvalidInput("a token needs a user name, and group names cannot be empty")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    entry = (
        "[[tokens]]\n"
        f"user = {_toml_string(user)}\n"
        f"groups = [{', '.join(_toml_string(g) for g in group_list)}]\n"
        f'sha256 = "{_sha256(token)}"\n'
    )
    return token, entry


def _sha256(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _toml_string(text: str) -> str:
    """A TOML basic string: quotes, backslashes and control characters as ``\\uXXXX``."""
    escaped = (c if c >= " " and c not in '"\\\x7f' else f"\\u{ord(c):04x}" for c in text)
    return '"' + "".join(escaped) + '"'


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """What tells that the file changed: inode (editors that save by renaming), size and
    mtime; ``None`` while the file cannot be read."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _read_tokens_file(path: Path) -> dict[str, _Holder]:
    """The file's entries by digest, so a lookup costs the same for ten tokens or ten
    thousand."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read tokens file {path}: {exc}") from exc
    if set(data) - {"tokens"}:
        raise ConfigError(f"{path}: unknown keys {_names(set(data) - {'tokens'})}; use [[tokens]]")
    rows = data.get("tokens", [])
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        raise ConfigError(f"{path}: tokens must be [[tokens]] tables")
    table: dict[str, _Holder] = {}
    for number, row in enumerate(rows, 1):
        holder = _holder(row, f"{path}: [[tokens]] entry {number}")
        if holder.sha256 in table:
            raise ConfigError(
                f"{path}: [[tokens]] entry {number} ({holder.user}) has the same token as "
                f"an entry for {table[holder.sha256].user}"
            )
        table[holder.sha256] = holder
    return table


def _holder(row: dict[str, Any], where: str) -> _Holder:
    unknown = set(row) - set(_ROW_KEYS)
    if unknown:
        known = ", ".join(_ROW_KEYS)
        raise ConfigError(f"{where}: unknown keys {_names(unknown)} (known: {known})")
    user = row.get("user")
    if not isinstance(user, str) or not user.strip():
        raise ConfigError(f"{where}: user is missing or empty")
    where = f"{where} ({user})"
    groups = row.get("groups", [])
    if not isinstance(groups, list) or not all(isinstance(g, str) and g for g in groups):
        raise ConfigError(f"{where}: groups must be a list of group names")
    return _Holder(_row_digest(row, where), user, tuple(groups), _expiry(row.get("expires"), where))


def _row_digest(row: dict[str, Any], where: str) -> str:
    if ("sha256" in row) == ("token" in row):
        raise ConfigError(f"{where}: give either sha256 (preferred) or token, not both or neither")
    if "token" in row:
        if not isinstance(row["token"], str) or not row["token"]:
            raise ConfigError(f"{where}: token must be a non-empty string")
        return _sha256(row["token"])
    digest = row["sha256"]
    if not isinstance(digest, str) or not _HEX64.fullmatch(digest):
        raise ConfigError(f"{where}: sha256 must be 64 hex digits")
    return digest.lower()


def _expiry(value: object, where: str) -> int | None:
    """Epoch seconds; a zone is required so that an expiry means one instant everywhere."""
    if value is None:
        return None
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise ConfigError(
            f"{where}: expires must be a date-time with a zone, e.g. 2027-01-01T00:00:00Z"
        )
    return int(value.timestamp())


def _names(keys: Iterable[str]) -> str:
    return ", ".join(repr(k) for k in sorted(keys))


# --- JWTs from an identity provider ---------------------------------------------------

ASYMMETRIC_ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)
"""What ``JwtTokens`` may accept. HMAC algorithms are never among them: with a public key
taken for an HMAC secret, anyone could sign tokens (key confusion)."""

_JWKS_TIMEOUT_S = 5.0  # a request waits on this at most when the JWKS must be fetched
_KEY_FAMILIES: tuple[tuple[type, tuple[str, ...]], ...] = (
    (rsa.RSAPublicKey, ("RS", "PS")),
    (ec.EllipticCurvePublicKey, ("ES",)),
    (ed25519.Ed25519PublicKey, ("EdDSA",)),
    (ed448.Ed448PublicKey, ("EdDSA",)),
)
"""Public key types that check JWTs, and the algorithm names (by prefix) each serves."""


class _Refused(jwt.InvalidTokenError):
    """A token pyjwt accepted that groundkb does not (or one refused before pyjwt ran)."""


class JwtTokens:
    """JWTs signed by an identity provider, checked against its JWKS (an http(s) URL,
    or a local JWKS file) or a local PEM public key.

    A token must be signed with one of ``algorithms`` (public-key only) by the key its
    ``kid`` names in the JWKS (any ``kid`` with a PEM key), and carry ``exp``, ``iss``
    equal to ``issuer``, an ``aud`` containing ``audience`` and a non-empty
    ``user_claim``; ``nbf`` and ``iat`` are checked when present, all with ``leeway``
    seconds of clock skew. A JWKS URL is fetched on first use and cached by pyjwt for
    five minutes; an unknown ``kid`` refetches at most every 30 seconds, so a key
    rotation is picked up and junk tokens cannot flood the provider.
    """

    def __init__(
        self,
        *,
        issuer: str,
        audience: str,
        jwks: str | os.PathLike[str],
        algorithms: Sequence[str] = ("RS256", "ES256"),
        user_claim: str = "sub",
        groups_claim: str = "groups",
        leeway: float = 30,
        resource: str,
    ) -> None:
        refused = sorted(set(algorithms) - ASYMMETRIC_ALGORITHMS)
        if refused or not algorithms:
            raise ConfigError(
                f"JWT algorithms {refused or '(none given)'} are not accepted; "
                f"use public-key ones: {', '.join(sorted(ASYMMETRIC_ALGORITHMS))}"
            )
        if not issuer or not audience or not user_claim:
            raise ConfigError("JWT verification needs an issuer, an audience and a user claim")
        if leeway < 0:
            raise ConfigError(f"JWT leeway must be zero or more seconds, not {leeway}")
        self.issuer = issuer
        self.audience = audience
        self.algorithms = tuple(algorithms)
        self.user_claim = user_claim
        self.groups_claim = groups_claim
        self.leeway = leeway
        self.resource = resource
        self._keys = _key_source(os.fspath(jwks))

    def verify(self, token: str) -> AccessToken | None:
        """The token's user, groups and scopes, or ``None`` if any check fails."""
        try:
            claims = self._decode(token)
            user = claims[self.user_claim]
            if not isinstance(user, str) or not user:
                raise _Refused(f"claim {self.user_claim!r} is not a non-empty string")
            groups = _words(claims.get(self.groups_claim), self.groups_claim)
            scopes = _words(claims.get("scope", claims.get("scp")), "scope")
        except jwt.PyJWKClientConnectionError as exc:
            log.warning("JWT refused: cannot fetch the JWKS: %s", exc)
            return None
        except jwt.PyJWTError as exc:
            log.debug("JWT refused: %s", exc)
            return None
        return AccessToken(
            token=token,
            client_id=user,
            subject=user,
            scopes=scopes,
            expires_at=int(claims["exp"]),
            resource=self.resource,  # the audience check passed: the token is for us
            claims={"groups": groups, "via": "jwt", "iss": claims["iss"]},
        )

    def expired(self, token: str) -> bool:
        """Whether ``token`` passes every check but its expiry."""
        try:
            self._decode(token)
        except jwt.ExpiredSignatureError:
            return True
        except (jwt.PyJWTError, ValueError):
            return False
        return False

    async def verify_token(self, token: str) -> AccessToken | None:
        """``verify`` in a worker thread, since it may fetch the JWKS."""
        return await anyio.to_thread.run_sync(self.verify, token)

    def _decode(self, token: str) -> dict[str, Any]:
        header = jwt.get_unverified_header(token)
        # Checked before any key is looked up, so that `none`, HS256 and the like never
        # cost a JWKS fetch; pyjwt checks it again against the key.
        if header.get("alg") not in self.algorithms:
            raise _Refused(f"algorithm {header.get('alg')!r} is not accepted")
        return jwt.decode(
            token,
            self._keys(header),
            algorithms=list(self.algorithms),
            audience=self.audience,
            issuer=self.issuer,
            leeway=self.leeway,
            options={"require": ["exp", "iss", "aud", self.user_claim]},
        )


def _words(value: object, claim: str) -> list[str]:
    """A claim given as a list of strings or as one space-separated string."""
    if value is None:
        return []
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise _Refused(f"claim {claim!r} is neither a list of strings nor a space-separated string")


def _key_source(jwks: str) -> _KeySource:
    if jwks.startswith(("https://", "http://")):
        return _RemoteJwks(jwks)
    path = Path(jwks)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read JWKS or public key file {path}: {exc}") from exc
    if raw.lstrip().startswith(b"-----BEGIN"):
        return _PemKey(path, raw)
    return _FileJwks(path, raw)


class _RemoteJwks:
    def __init__(self, url: str) -> None:
        self._client = jwt.PyJWKClient(url, timeout=_JWKS_TIMEOUT_S)

    def __call__(self, header: dict[str, Any]) -> jwt.PyJWK:
        if "kid" not in header:
            raise _Refused("the token names no kid")
        return self._client.get_signing_key(header["kid"])


class _FileJwks:
    """A JWKS read once; signing keys with a ``kid``, as pyjwt's client keeps them."""

    def __init__(self, path: Path, raw: bytes) -> None:
        try:
            data = json.loads(raw)
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            keys = jwt.PyJWKSet.from_dict(data).keys
        except (ValueError, jwt.PyJWTError) as exc:
            raise ConfigError(f"{path} is neither a JWKS nor a PEM public key: {exc}") from exc
        self._keys = {k.key_id: k for k in keys if k.key_id and k.public_key_use in ("sig", None)}
        if not self._keys:
            raise ConfigError(f"{path}: the JWKS has no signing key with a kid")

    def __call__(self, header: dict[str, Any]) -> jwt.PyJWK:
        kid = header.get("kid")
        if kid not in self._keys:
            raise _Refused(f"no key with kid {kid!r} in the JWKS")
        return self._keys[kid]


class _PemKey:
    """One public key, whatever the ``kid``; only algorithms of its family may use it
    (pyjwt would take an RSA key for ES256 as a programming error and raise)."""

    def __init__(self, path: Path, raw: bytes) -> None:
        try:
            key = load_pem_public_key(raw)
        except ValueError as exc:
            raise ConfigError(f"{path} is not a PEM public key: {exc}") from exc
        families = [prefixes for kind, prefixes in _KEY_FAMILIES if isinstance(key, kind)]
        if not families:
            raise ConfigError(f"{path}: a {type(key).__name__} cannot check JWT signatures")
        self._key = cast("AllowedPublicKeys", key)
        self._algorithm_prefixes = families[0]

    def __call__(self, header: dict[str, Any]) -> AllowedPublicKeys:
        if not str(header["alg"]).startswith(self._algorithm_prefixes):
            raise _Refused(f"a {header['alg']} token cannot be checked with this public key")
        return self._key

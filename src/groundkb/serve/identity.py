"""Who is calling, as each transport establishes it (never as a model says).

- **stdio and the command line**: the configured local user (settings ``local_user`` and
  ``local_groups``); with no ``local_user``, the operator, who reads every source.
- **HTTP** (REST, MCP at ``/mcp``, the console): a bearer token in the ``Authorization``
  header, checked by the verifier the settings configure: a tokens file
  (``auth_tokens_file``) and/or JWTs (``auth_jwt_issuer``, ``auth_jwt_audience``,
  ``auth_jwt_jwks``). With a verifier, a request without a valid token is refused (401);
  without one, HTTP callers are anonymous and read only sources that have no groups.
  Tokens are taken from the header only: a token in the query string is refused.

The MCP endpoint is an OAuth 2.1 protected resource (the SDK's bearer middleware and
RFC 9728 metadata); its resource URL is ``public_url`` + ``/mcp``, and a token must have
been issued for it (static tokens are, by definition; a JWT's ``aud`` must name it).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..access.principal import ANONYMOUS, OPERATOR, Principal
from ..errors import ConfigError, Forbidden, TokenExpired, Unauthorized

if TYPE_CHECKING:
    from mcp.server.auth.provider import AccessToken

    from ..settings import Settings

SCOPE = "kb:read"


def local_principal(settings: Settings) -> Principal:
    """The caller of stdio and the command line."""
    if not settings.local_user.strip():
        return OPERATOR
    groups = frozenset(g.strip() for g in settings.local_groups.split(",") if g.strip())
    return Principal(settings.local_user.strip(), groups, via="local")


class Verifiers:
    """The configured bearer-token verifiers, tried in order (tokens file, then JWT)."""

    def __init__(self, verifiers: list[Any]) -> None:
        self.verifiers = verifiers

    def verify(self, token: str) -> AccessToken | None:
        for v in self.verifiers:
            found: AccessToken | None = v.verify(token)
            if found is not None:
                return found
        return None

    def expired(self, token: str) -> bool:
        return any(v.expired(token) for v in self.verifiers)

    async def verify_token(self, token: str) -> AccessToken | None:
        import anyio

        return await anyio.to_thread.run_sync(self.verify, token)


@dataclass(frozen=True)
class HttpIdentity:
    """How an HTTP server of this configuration identifies callers."""

    base_url: str  # e.g. http://127.0.0.1:8765, as clients reach the server
    verifier: Verifiers | None
    scope: str = ""  # a scope every token must carry ('' = none)

    @property
    def resource(self) -> str:
        """The protected resource (the MCP endpoint's URL)."""
        return self.base_url.rstrip("/") + "/mcp"

    def principal(self, access_token: AccessToken | None) -> Principal:
        """The caller of a request whose verified token (if any) is ``access_token``;
        Forbidden when it lacks the required scope."""
        if access_token is None:
            return ANONYMOUS
        if self.scope and self.scope not in access_token.scopes:
            raise Forbidden(f"the bearer token lacks the scope {self.scope!r}")
        from ..access.tokens import principal_of

        return principal_of(access_token)

    def from_header(self, authorization: str | None, query_token: bool = False) -> Principal:
        """The caller of a REST request from its ``Authorization`` header; Unauthorized
        for a missing, malformed, invalid, expired or foreign token when a verifier is
        configured."""
        if query_token:
            raise Unauthorized("send the token in the Authorization header, not in the URL")
        if self.verifier is None:
            return ANONYMOUS
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthorized("this server needs the header Authorization: Bearer <token>")
        found = self.verifier.verify(token.strip())
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            if self.verifier.expired(token.strip()):
                raise TokenExpired("the bearer token has expired: get a new one")
            raise Unauthorized("the bearer token is not valid here (unknown, expired or foreign)")
        if (found.resource or "").rstrip("/") != self.resource.rstrip("/"):
            raise Unauthorized("the bearer token was issued for another resource")
        return self.principal(found)


def http_identity(settings: Settings, base_url: str) -> HttpIdentity:
    """The identity of an HTTP server at ``base_url`` (``public_url`` wins)."""
    base = (settings.public_url.strip() or base_url).rstrip("/")
    resource = base + "/mcp"
    verifiers: list[Any] = []
    if settings.auth_tokens_file.strip():
        from ..access.tokens import StaticTokens

        verifiers.append(StaticTokens(settings.auth_tokens_file.strip(), resource=resource))
    jwt_parts = (settings.auth_jwt_issuer, settings.auth_jwt_jwks)
    if any(p.strip() for p in jwt_parts):
        if not all(p.strip() for p in jwt_parts):
            raise ConfigError("JWT callers need both auth_jwt_issuer and auth_jwt_jwks")
        from ..access.tokens import JwtTokens

        verifiers.append(
            JwtTokens(
                issuer=settings.auth_jwt_issuer.strip(),
                audience=settings.auth_jwt_audience.strip() or resource,
                jwks=settings.auth_jwt_jwks.strip(),
                groups_claim=settings.auth_jwt_groups_claim.strip() or "groups",
                resource=resource,
            )
        )
    scope = settings.auth_required_scope.strip()
    return HttpIdentity(base, Verifiers(verifiers) if verifiers else None, scope)


def with_unlocked(principal: Principal, sources: frozenset[str]) -> Principal:
    return replace(principal, unlocked=principal.unlocked | sources) if sources else principal

"""Fetching one URL safely: checked addresses, pinned connections, capped responses.

Crawling a site on a user's behalf is a server-side request forgery risk: a page (or a
redirect, or a DNS answer) can point the crawler at ``localhost``, the office network or
a cloud metadata service. So every request

- resolves the host first and refuses it when **any** of its addresses is loopback,
  private, link-local, shared (CGNAT), multicast, reserved, unspecified or a known cloud
  metadata address, unless the address lies in a network the source allows explicitly
  (``allow_networks = ["127.0.0.1/32"]`` for a docs server on this machine);
- then connects to the address it checked, never resolving the name again, so a DNS
  answer that changes between the check and the connection (rebinding) cannot redirect
  it; TLS still verifies the certificate for the host name;
- follows no redirect by itself: the crawler checks each hop against its allowlist and
  comes back here, so every hop is checked again;
- caps the time (a timeout per socket operation and a deadline for the whole response)
  and the size (Content-Length and the bytes actually read, also after gzip);
- ignores proxy environment variables, cookies and authentication: a crawl reads public
  documentation.

Nothing fetched is ever executed; the body is returned as bytes.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import time
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Public addresses that cloud platforms use for instance metadata or host agents.
METADATA_ADDRESSES: frozenset[IPAddress] = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean, ...
        "169.254.170.2",  # AWS ECS task metadata
        "168.63.129.16",  # Azure host agent (a public address)
        "100.100.100.200",  # Alibaba Cloud
        "192.0.0.192",  # Oracle Cloud (legacy)
        "fd00:ec2::254",  # AWS over IPv6
    )
)
REDIRECTS = frozenset({301, 302, 303, 307, 308})
_CHUNK = 64 * 1024


class FetchError(Exception):
    """A request that failed (network, protocol, size or time); the message says why."""


class Refused(FetchError):
    """A request that was never sent because policy forbids its address."""


@dataclass(frozen=True, slots=True)
class FetchPolicy:
    user_agent: str
    timeout: float = 15.0  # per socket operation, seconds
    deadline: float = 60.0  # for a whole response, seconds
    max_bytes: int = 25 * 2**20
    allow_networks: tuple[IPNetwork, ...] = ()


@dataclass(frozen=True, slots=True)
class Response:
    url: str
    status: int
    headers: Mapping[str, str]  # lower-case names
    body: bytes

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";")[0].strip().lower()

    @property
    def charset(self) -> str | None:
        for part in self.headers.get("content-type", "").split(";")[1:]:
            key, _, value = part.partition("=")
            if key.strip().lower() == "charset" and value.strip():
                return value.strip().strip("\"'")
        return None


def parse_networks(values: tuple[str, ...] | list[str]) -> tuple[IPNetwork, ...]:
    """CIDR strings (``"127.0.0.1/32"``, ``"10.0.0.0/8"``) to networks; ValueError if bad."""
    return tuple(ipaddress.ip_network(v.strip(), strict=False) for v in values)


def address_problem(ip: IPAddress, allowed: tuple[IPNetwork, ...]) -> str | None:
    """Why a request to ``ip`` is refused, or None when it may be made."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if any(ip.version == net.version and ip in net for net in allowed):
        return None
    if ip in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if ip.is_unspecified:
        return "not a public address"
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_link_local:
        return "a link-local address"
    if ip.is_private:
        return "a private address"
    if ip.is_multicast or ip.is_unspecified or ip.is_reserved or not ip.is_global:
        return "not a public address"
    return None


def resolve(host: str, port: int, policy: FetchPolicy) -> list[str]:
    """The addresses of ``host``, all checked; Refused if any of them is not allowed."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise FetchError(f"cannot resolve {host}: {exc}") from exc
    addresses: list[str] = []
    for info in infos:
        addr = str(info[4][0]).split("%")[0]
        ip = ipaddress.ip_address(addr)
        problem = address_problem(ip, policy.allow_networks)
        if problem:
            raise Refused(
                f"{host} resolves to {addr}, {problem}; allow it with allow_networks "
                f"if this source really lives there"
            )
        if addr not in addresses:
            addresses.append(addr)
    if not addresses:
        raise FetchError(f"cannot resolve {host}: no addresses")
    return addresses


class _Pinned:
    """Connection classes whose socket goes to a checked address, not to a new lookup."""

    @staticmethod
    def make(scheme: str, host: str, port: int, address: str, timeout: float) -> Any:
        def create(
            addr: tuple[str, int], timeout: float | None = None, source: Any = None
        ) -> socket.socket:
            return socket.create_connection((address, addr[1]), timeout, source)

        conn: http.client.HTTPConnection
        if scheme == "https":
            conn = http.client.HTTPSConnection(host, port, timeout=timeout)
        else:
            conn = http.client.HTTPConnection(host, port, timeout=timeout)
        conn._create_connection = create  # type: ignore[attr-defined]
        return conn


def fetch(url: str, policy: FetchPolicy, headers: Mapping[str, str] | None = None) -> Response:
    """GET ``url`` once (redirects are returned, not followed). Raises FetchError/Refused."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise FetchError(f"not an http(s) URL: {url}")
    host = parts.hostname
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise FetchError(f"bad port in {url}") from exc
    addresses = resolve(host, port, policy)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    send = {
        "User-Agent": policy.user_agent,
        "Accept": "text/html,application/xhtml+xml,application/pdf,*/*;q=0.5",
        "Accept-Encoding": "gzip",
        "Connection": "close",
        **(headers or {}),
    }
    started = time.monotonic()
    last: Exception | None = None
    for address in addresses:
        conn = _Pinned.make(parts.scheme, host, port, address, policy.timeout)
        try:
            conn.request("GET", path, headers=send)
            resp = conn.getresponse()
            got = {k.lower(): v for k, v in resp.getheaders()}
            body = _read_body(resp, got, policy, started)
            return Response(url, resp.status, got, body)
        except FetchError:
            raise
        except (OSError, http.client.HTTPException) as exc:
            last = exc
            if isinstance(exc, TimeoutError | socket.timeout):
                break  # another address of the same host would only wait again
        finally:
            conn.close()
    raise FetchError(_describe(last))


def _describe(exc: Exception | None) -> str:
    if isinstance(exc, TimeoutError | socket.timeout):
        return "timed out"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    return f"request failed: {exc}" if exc else "request failed"


def _read_body(
    resp: http.client.HTTPResponse,
    headers: Mapping[str, str],
    policy: FetchPolicy,
    started: float,
) -> bytes:
    if resp.status in REDIRECTS or resp.status == 304:
        return b""
    cap = policy.max_bytes
    declared = headers.get("content-length", "")
    if declared.isdigit() and int(declared) > cap:
        raise FetchError(f"response is {int(declared):,} bytes, over the {cap:,}-byte limit")
    encoding = headers.get("content-encoding", "").strip().lower()
    inflate = None
    if encoding in ("gzip", "x-gzip"):
        inflate = zlib.decompressobj(wbits=31)
    elif encoding not in ("", "identity"):
        raise FetchError(f"unsupported content encoding {encoding!r}")
    out = bytearray()
    while True:
        if time.monotonic() - started > policy.deadline:
            raise FetchError(f"response took longer than {policy.deadline:g} s")
        block = resp.read(_CHUNK)
        if not block:
            break
        if inflate is not None:
            try:
                block = inflate.decompress(block, cap + 1 - len(out))
            except zlib.error as exc:
                raise FetchError(f"bad gzip data: {exc}") from exc
        out += block
        if len(out) > cap:
            raise FetchError(f"response is over the {cap:,}-byte limit")
    return bytes(out)


__all__ = [
    "METADATA_ADDRESSES",
    "FetchError",
    "FetchPolicy",
    "Refused",
    "Response",
    "address_problem",
    "fetch",
    "parse_networks",
    "resolve",
]

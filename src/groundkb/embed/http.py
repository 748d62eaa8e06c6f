"""Embeddings from an OpenAI-compatible HTTP endpoint.

Talks to any server that implements OpenAI's embeddings API (OpenAI itself, or a local
server such as vLLM, llama.cpp, Ollama or LM Studio): ``POST {base_url}/embeddings`` with
``{"model": ..., "input": [...]}``, answered by ``{"data": [{"index": i, "embedding":
[...]}, ...]}``. Only the standard library is used for HTTP; numpy holds the vectors.

Requests go only to the configured ``base_url``: redirects are never followed, so the
``Authorization`` header cannot be forwarded to another host (a redirect is an error that
names where it pointed). The API key is read from an environment variable
(``OPENAI_API_KEY`` unless configured otherwise) when the embedder is created and checked
there: surrounding whitespace (a trailing newline from a file) is dropped, and a key with
other characters an HTTP header cannot carry is refused without showing it. Without a key
no ``Authorization`` header is sent, which suits local servers. The key never appears in
errors or logs: it is registered for redaction (``ops/querylog.py``).
"""

from __future__ import annotations

import http.client
import json
import logging
import math
import os
import random
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from groundkb.embed import EmbedderError
from groundkb.errors import ConfigError
from groundkb.ops import querylog

__all__ = ["OpenAIEmbedder"]

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: HTTP statuses worth another try: rate limiting and server-side failures.
RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504, 529})
_EXCERPT = 300


class _Retryable(Exception):
    """One failed attempt that may succeed if tried again."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class OpenAIEmbedder:
    """Embeddings from ``POST {base_url}/embeddings`` (the OpenAI embeddings API).

    Args:
        model: the model name sent with every request.
        base_url: the API root, e.g. ``http://127.0.0.1:8000/v1``.
        api_key_env: the environment variable holding the API key; unset or empty means
            no ``Authorization`` header.
        dimension: the expected vector size; every response is checked against it.
            ``None`` learns it from the first response (reading `dimension` before any
            `embed` call then sends one short request).
        batch_size: most texts per request.
        timeout: seconds to wait for a connection and for each read.
        max_retries: extra attempts per request after a connection error, a timeout, or
            a status in `RETRY_STATUSES` (429, 5xx, ...). Other statuses fail at once.
        backoff: seconds before the first retry; doubled for each further one, with up
            to 10 % random jitter, and capped at ``max_backoff``. A ``Retry-After``
            header given in seconds is honoured up to ``max_backoff``.
        max_backoff: the longest wait between two attempts.
        headers: extra request headers (e.g. an organisation or project header).

    ``name`` is ``openai:<model>``.

    Raises:
        EmbedderError: the server kept failing, refused the request, or answered with
            something that is not a usable embeddings response. The message has the
            HTTP status and an excerpt of the body.
        ConfigError: an invalid option.
    """

    remote = True  # a service: a warm-up sends it nothing (KnowledgeBase.warm)

    def __init__(
        self,
        model: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key_env: str = "OPENAI_API_KEY",
        dimension: int | None = None,
        batch_size: int = 64,
        timeout: float = 30.0,
        max_retries: int = 4,
        backoff: float = 0.5,
        max_backoff: float = 20.0,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if not model:
            raise ConfigError("the embeddings model name is empty")
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(
                f"embeddings base_url must start with http:// or https://: {base_url!r}"
            )
        if dimension is not None and dimension < 1:
            raise ConfigError("embeddings dimension must be at least 1")
        if batch_size < 1:
            raise ConfigError("embeddings batch_size must be at least 1")
        if not timeout > 0:
            raise ConfigError("embeddings timeout must be positive")
        if max_retries < 0 or backoff < 0 or max_backoff < 0:
            raise ConfigError("embeddings max_retries, backoff and max_backoff must be >= 0")
        self.model = model
        self.url = base_url.rstrip("/") + "/embeddings"
        self.batch_size = batch_size
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self._name = f"openai:{model}"
        self._dimension = dimension
        self._headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": "groundkb",
            **(headers or {}),
        }
        self._key = _api_key(api_key_env)
        if self._key:
            self._headers["Authorization"] = f"Bearer {self._key}"
        self._opener = urllib.request.build_opener(_NoRedirects())

    @property
    def name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        """The vector size; learnt from the server (one request) if it was not given."""
        if self._dimension is None:
            self.embed(["dimension"])
        assert self._dimension is not None
        return self._dimension

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts`` in batches of ``batch_size``; rows in input order, unit length."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings, not one string")
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        parts = [
            self._embed_batch(texts[i : i + self.batch_size])
            for i in range(0, len(texts), self.batch_size)
        ]
        return np.ascontiguousarray(np.concatenate(parts), dtype=np.float32)

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """``embed([text])[0]``."""
        row: NDArray[np.float32] = self.embed([text])[0]
        return row

    def _embed_batch(self, texts: list[str]) -> NDArray[np.float32]:
        body = json.dumps({"model": self.model, "input": texts}).encode("utf-8")
        payload = self._post(body)
        vectors = self._parse(payload, len(texts))
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        if not np.all(norms > 0) or not np.all(np.isfinite(norms)):
            raise EmbedderError(f"{self.url} returned a zero or non-finite embedding")
        unit: NDArray[np.float32] = (vectors / norms).astype(np.float32, copy=False)
        return unit

    def _post(self, body: bytes) -> Any:
        """POST ``body`` with retries; the decoded JSON answer."""
        attempt = 0
        while True:
            try:
                return self._attempt(body)
            except _Retryable as exc:
                if attempt >= self.max_retries:
                    tries = attempt + 1
                    raise EmbedderError(
                        f"embeddings request to {self.url} failed after {tries} "
                        f"attempt{'s' if tries > 1 else ''}: {exc}"
                    ) from None
                delay = self._delay(attempt, exc.retry_after)
                log.warning(
                    "embeddings request to %s failed (%s); retry %d/%d in %.2f s",
                    self.url,
                    exc,
                    attempt + 1,
                    self.max_retries,
                    delay,
                )
                time.sleep(delay)
                attempt += 1

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_backoff)
        base = self.backoff * 2.0**attempt
        return min(base * (1.0 + 0.1 * random.random()), self.max_backoff)

    def _attempt(self, body: bytes) -> Any:
        request = urllib.request.Request(self.url, data=body, headers=self._headers, method="POST")
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            try:
                detail = self._excerpt(exc.read() or b"")
            finally:
                exc.close()
            message = f"HTTP {exc.code} {exc.reason}: {detail}" if detail else f"HTTP {exc.code}"
            if exc.code in RETRY_STATUSES:
                raise _Retryable(message, _retry_after(exc.headers.get("Retry-After"))) from None
            raise EmbedderError(f"embeddings request to {self.url} failed: {message}") from None
        except TimeoutError:
            raise _Retryable(f"timed out after {self.timeout:g} s") from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise _Retryable(f"timed out after {self.timeout:g} s") from None
            raise _Retryable(f"connection failed: {exc.reason}") from None
        except (OSError, http.client.HTTPException) as exc:  # reset mid-response, ...
            raise _Retryable(f"connection failed: {exc!r}") from None
        try:
            return json.loads(raw)
        except ValueError:
            raise EmbedderError(
                f"{self.url} did not answer with JSON: {self._excerpt(raw)}"
            ) from None

    def _parse(self, payload: Any, count: int) -> NDArray[np.float32]:
        """Rows of ``payload["data"]`` ordered by ``index``, checked for count and size."""
        try:
            items = sorted(payload["data"], key=lambda item: int(item["index"]))
            indexes = [int(item["index"]) for item in items]
            rows = [item["embedding"] for item in items]
        except (KeyError, TypeError, ValueError):
            raise EmbedderError(
                f"{self.url} answered without data[].index/embedding: "
                f"{self._excerpt(json.dumps(payload).encode())}"
            ) from None
        if indexes != list(range(count)):
            raise EmbedderError(
                f"{self.url} returned embeddings for indexes {_short(indexes)}, "
                f"expected 0..{count - 1}"
            )
        try:
            vectors = np.asarray(rows, dtype=np.float32)
        except (TypeError, ValueError):
            raise EmbedderError(f"{self.url} returned embeddings that are not numbers") from None
        if vectors.ndim != 2 or vectors.shape[1] == 0:
            raise EmbedderError(f"{self.url} returned embeddings of unequal or zero length")
        size = int(vectors.shape[1])
        if self._dimension is None:
            self._dimension = size
        elif size != self._dimension:
            raise EmbedderError(
                f"{self.url} returned {size}-dimensional embeddings, expected {self._dimension}"
            )
        return vectors

    def _excerpt(self, body: bytes) -> str:
        """The start of a response body on one line, with the API key masked."""
        text = " ".join(body.decode("utf-8", "replace").split())
        if self._key:
            text = text.replace(self._key, "***")
        return text if len(text) <= _EXCERPT else text[: _EXCERPT - 1] + "…"

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(model={self.model!r}, url={self.url!r})"


def _api_key(env: str) -> str:
    """The key in the environment variable ``env``, checked (see the module docstring)."""
    key = os.environ.get(env, "").strip() if env else ""
    if key and not all(33 <= ord(ch) <= 126 for ch in key):
        raise ConfigError(
            f"the API key in ${env} has characters an HTTP header cannot carry (a line "
            "break, a space or a non-ASCII character inside it); set it to the key alone"
        )
    querylog.add_secret(key)
    return key


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """Never follow a redirect: it would carry the ``Authorization`` header elsewhere."""

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any,
                         newurl: str) -> None:  # fmt: skip
        fp.close()
        raise EmbedderError(
            f"{req.full_url} answered HTTP {code} redirecting to {_origin(newurl)}; "
            "redirects are not followed (set embedder_url to the final address)"
        )


def _origin(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    return f"{parts.scheme}://{parts.hostname}{port}" if parts.hostname else "another address"


def _retry_after(value: str | None) -> float | None:
    """A ``Retry-After`` header in seconds (HTTP dates are ignored)."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _short(values: list[int]) -> str:
    return str(values) if len(values) <= 10 else f"{values[:10]}…"


if TYPE_CHECKING:  # the protocol is structural; mypy checks that this class satisfies it
    from groundkb.embed import Embedder

    _conforms: type[Embedder] = OpenAIEmbedder

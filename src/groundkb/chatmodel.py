"""One call to an OpenAI-compatible chat endpoint that the user configured.

Synthesized answers (``answer/synthesis.py``) and the rerank model (``search/rerank.py``)
both ask a model through :func:`chat`: the key is read from the environment variable the
settings name and redacted from every log line, the request asks for a deterministic
reply (temperature 0), and redirects are not followed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError
from .ops.querylog import add_secret


@dataclass(frozen=True, slots=True)
class ModelEndpoint:
    url: str
    model: str
    key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 60.0

    def check(self, setting: str) -> None:
        """ConfigError unless ``url`` is http(s); ``setting`` names it in the message."""
        if not self.url.startswith(("http://", "https://")):
            raise ConfigError(f"{setting} must be an http(s) URL")


def chat(endpoint: ModelEndpoint, system: str, user: str, client: Any = None) -> dict[str, Any]:
    """The endpoint's reply to a system and a user message, as parsed JSON (its text is
    ``["choices"][0]["message"]["content"]``). ``client``: an ``httpx2.Client`` to reuse;
    without one a connection is made for the call. Raises what the HTTP client raises."""
    import httpx2

    key = os.environ.get(endpoint.key_env, "") if endpoint.key_env else ""
    add_secret(key)
    body = {
        "model": endpoint.model,
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        "temperature": 0,
    }
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    url = endpoint.url.rstrip("/") + "/chat/completions"
    if client is not None:
        r = client.post(url, json=body, headers=headers, timeout=endpoint.timeout_s)
    else:
        r = httpx2.post(
            url, json=body, headers=headers, timeout=endpoint.timeout_s, follow_redirects=False
        )
    r.raise_for_status()
    data: dict[str, Any] = r.json()
    return data


def reply_text(data: dict[str, Any]) -> str:
    """The text of a chat reply."""
    return str(data["choices"][0]["message"]["content"])


__all__ = ["ModelEndpoint", "chat", "reply_text"]

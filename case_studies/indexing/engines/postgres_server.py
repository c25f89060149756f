"""A throwaway PostgreSQL server in a directory of the user's choosing (``wield db start postgres``).

The server is for experiments, not for keeping data: it listens on a free loopback port only and turns off
durability (``fsync``, ``synchronous_commit``, ``full_page_writes``) and autovacuum, so loading is fast and
nothing changes planner statistics behind a run's back.

Secrets. Two roles with generated passwords (SCRAM): the superuser ``wield_admin``, used only by ``wield
db`` itself (creating the experiment role and the hypopg extension, removing schemas left by killed runs),
and the experiment role ``wield``, which is not a superuser: it may create schemas in the database and
owns the private schema of every run. Passwords live only in libpq password files (mode 0600) inside
``DIR`` (mode 0700); the URI a client gets carries no password but names the password file
(``postgresql://wield@127.0.0.1:PORT/postgres?passfile=DIR/pgpass``), so neither a command line, a run
record nor a message ever holds one. The role's password reaches the server as a SCRAM verifier, never in
clear.

Layout of ``DIR`` (0700):

- ``DIR/data``              the cluster (initdb)
- ``DIR/server.log``        the server's log
- ``DIR/server.json``       port, URI (without password) and binaries of the running server (atomic)
- ``DIR/pgpass``            the experiment role's password, in libpq's password-file format (0600)
- ``DIR/superuser.pgpass``  the superuser's password, same format (0600)

PostgreSQL refuses to run as root. When the effective user is root the cluster is owned by, and
``initdb`` / ``pg_ctl`` run as, an unprivileged user: ``$WIELD_PG_USER`` or the ``postgres`` system user
that the Debian packages create; ``DIR`` is handed to that user and must be reachable by it (e.g. under
``/tmp``, not under ``/root``).

Binaries come from ``$WIELD_PG_BINDIR``, else the newest ``/usr/lib/postgresql/*/bin``, else ``PATH``.
This module is system-level: it knows nothing about indexing or any case study.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.parse
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Iterator

from wield.errors import ConfigError, DataError, SystemFailure
from wield.io import atomic_write_bytes, atomic_write_json, read_json

ENGINES = ("postgres",)
SUPERUSER = "wield_admin"
ROLE = "wield"  # the experiments' role: no superuser, may create schemas in DEFAULT_DATABASE
DEFAULT_DATABASE = "postgres"
PASSFILE = "pgpass"
START_ATTEMPTS = 5
SUPERUSER_PASSFILE = "superuser.pgpass"
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
    """What a client needs to know about a started server (no secret: ``uri`` names the password file)."""

    engine: str
    directory: str
    port: int
    uri: str
    bindir: str
    os_user: str
    role: str = ROLE
    passfile: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def client_uri(directory: Path, port: int, user: str = ROLE, passfile: str = PASSFILE) -> str:
    """The connection URI of ``user`` on the server of ``directory``: no password, the password file named."""
    query = urllib.parse.urlencode({"passfile": str(directory / passfile)}, safe="/", quote_via=urllib.parse.quote)
    return f"postgresql://{user}@127.0.0.1:{port}/{DEFAULT_DATABASE}?{query}"


def scram_verifier(password: str, iterations: int = 4096) -> str:
    """The SCRAM-SHA-256 verifier PostgreSQL stores for ``password`` (RFC 5802/7677), so a role's password
    can be set without the clear text ever reaching the server (or its log)."""
    salt = secrets.token_bytes(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode("utf-8"), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    server_key = hmac.new(salted, b"Server Key", "sha256").digest()
    encode = lambda raw: base64.b64encode(raw).decode("ascii")  # noqa: E731
    return f"SCRAM-SHA-256${iterations}:{encode(salt)}${encode(hashlib.sha256(client_key).digest())}:{encode(server_key)}"


def _write_private(path: Path, text: str) -> None:
    """Write a secret: mode 0600 from the start (atomic, so no reader ever sees a wider-open file)."""
    previous = os.umask(0o077)
    try:
        atomic_write_bytes(path, text.encode("utf-8"))
    finally:
        os.umask(previous)
    path.chmod(0o600)


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
    data = read_json(path)
    known = {f.name for f in fields(ServerInfo)}
    if not isinstance(data, dict) or not {"engine", "directory", "port", "uri", "bindir", "os_user"} <= set(data):
        raise DataError(f"{path}: not a server description written by 'wield db start'")
    return ServerInfo(**{k: v for k, v in data.items() if k in known})


def is_running(directory: str | os.PathLike) -> bool:
    """Whether the server of ``directory`` is up (asks pg_ctl)."""
    from wield.workflows.ownership import pid_alive

    directory = Path(directory).resolve()
    info = server_info(directory)
    if info is None or not (directory / "data" / "PG_VERSION").exists():
        return False
    try:  # a killed postmaster may linger as a zombie that pg_ctl takes for a live server
        postmaster = int((directory / "data" / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return False
    if not pid_alive(postmaster):
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
    started again with its data (and a new free port unless ``port`` is given). Either way, private schemas
    that runs killed before they could drop them are removed.
    """
    if engine not in ENGINES:
        raise ConfigError("engine", engine, ENGINES)
    if port is not None and not 1 <= port <= 65535:
        raise ConfigError("port", port, reason="a TCP port is an integer from 1 to 65535")
    directory = Path(directory).resolve()
    if directory.exists() and not directory.is_dir():
        raise ConfigError("dir", str(directory), reason="is a file, not a directory")
    if is_running(directory):
        info = server_info(directory)
        remove_orphan_schemas(directory, info.port)
        return info
    bindir = find_bindir()
    user = _server_user()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        directory.chmod(0o700)
    except OSError as exc:
        raise ConfigError("dir", str(directory), reason=f"cannot create a private directory here "
                                                        f"({exc.strerror or exc})") from None
    data = directory / "data"
    first_start = not (data / "PG_VERSION").exists()
    if first_start:
        if data.exists() and any(data.iterdir()):
            raise ConfigError("dir", str(directory), reason="holds a 'data' directory that is not a cluster")
        _initialise(directory, bindir, user)
    elif not (directory / SUPERUSER_PASSFILE).exists():
        raise ConfigError("dir", str(directory), reason=(
            "holds a server made by an older Wield, whose superuser password is not kept private; remove it "
            f"with 'wield db stop --dir {directory} --remove' and start a new one"))
    _hand_to(directory, user)
    log = directory / "server.log"
    port = port or free_port()
    command = [str(bindir / "pg_ctl"), "start", "-D", str(data), "-l", str(log), "-w", "-t", "60",
               "-o", f"-p {port} -k {directory}"]
    for attempt in range(START_ATTEMPTS):
        try:
            _run(command, user, "starting PostgreSQL", log=log)
            break
        except SystemFailure:
            # after a kill -9 the old server's backends take a moment to notice and free shared memory
            if attempt == START_ATTEMPTS - 1:
                raise
            time.sleep(2.0)
    if first_start:
        _create_experiment_role(directory, port)
    else:
        remove_orphan_schemas(directory, port)
    info = ServerInfo(engine=engine, directory=str(directory), port=port, uri=client_uri(directory, port),
                      bindir=str(bindir), os_user=user or "", role=ROLE, passfile=str(directory / PASSFILE))
    atomic_write_json(_info_path(directory), info.as_dict())
    _hand_to(directory, user)
    return info


def _initialise(directory: Path, bindir: Path, user: str | None) -> None:
    """initdb with the superuser's generated password (handed over in a private file, deleted after)."""
    superuser_password = secrets.token_hex(16)
    _write_private(directory / SUPERUSER_PASSFILE, f"*:*:*:{SUPERUSER}:{superuser_password}\n")
    _write_private(directory / PASSFILE, f"*:*:*:{ROLE}:{secrets.token_hex(16)}\n")
    initdb_password = directory / ".initdb-password"
    _write_private(initdb_password, superuser_password + "\n")
    try:
        _hand_to(directory, user)
        _run([str(bindir / "initdb"), "-D", str(directory / "data"), "-U", SUPERUSER, "--auth=scram-sha-256",
              f"--pwfile={initdb_password}", "-E", "UTF8", "--locale=C", "--no-sync"], user, "initdb")
    finally:
        initdb_password.unlink(missing_ok=True)
    with open(directory / "data" / "postgresql.conf", "a") as conf:
        conf.write("\n# wield: throwaway experiment server\n")
        for name, value in SERVER_SETTINGS.items():
            conf.write(f"{name} = '{value}'\n")


def _passfile_password(path: Path) -> str:
    """The password of the one entry of a libpq password file written by ``_initialise``."""
    return path.read_text().strip().split(":", 4)[4]


def superuser_connection(directory: str | os.PathLike, port: int):
    """A psycopg connection as the superuser (``wield db`` uses it for administration only)."""
    import psycopg

    directory = Path(directory).resolve()
    try:
        return psycopg.connect(host="127.0.0.1", port=port, user=SUPERUSER, dbname=DEFAULT_DATABASE,
                               passfile=str(directory / SUPERUSER_PASSFILE), autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        raise SystemFailure(f"cannot connect to the PostgreSQL server of {directory} as {SUPERUSER}: "
                            f"{str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}") from exc


def _create_experiment_role(directory: Path, port: int) -> None:
    """The experiments' role (not a superuser; it may create schemas) and the hypopg extension."""
    import psycopg
    from psycopg import sql

    verifier = scram_verifier(_passfile_password(directory / PASSFILE))
    with superuser_connection(directory, port) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION "
                             "PASSWORD {}").format(sql.Identifier(ROLE), sql.Literal(verifier)))
        conn.execute(sql.SQL("GRANT CONNECT, CREATE ON DATABASE {} TO {}").format(
            sql.Identifier(DEFAULT_DATABASE), sql.Identifier(ROLE)))
        try:  # what-if mode; a server without the hypopg package still serves every other mode
            conn.execute("CREATE EXTENSION IF NOT EXISTS hypopg SCHEMA public")
        except psycopg.Error:
            pass


def remove_orphan_schemas(directory: str | os.PathLike, port: int) -> list[str]:
    """Drop the private schemas of runs that were killed before they could drop them (see
    ``case_studies.indexing.engines.postgres.drop_orphan_schemas``); returns their names."""
    from case_studies.indexing.engines.postgres import drop_orphan_schemas

    with superuser_connection(directory, port) as conn:
        return drop_orphan_schemas(conn)


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
    try:
        if server_info(directory) is not None:
            stop_server(directory, mode="immediate")
    except (SystemFailure, DataError):
        pass  # a server that cannot be stopped cleanly is gone or broken: remove its files regardless
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

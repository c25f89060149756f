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
- ``DIR/.wield-db.lock``    held by the ``wield db`` command working on ``DIR`` (see below)
- ``DIR/data.init``         the cluster while ``initdb`` writes it (renamed to ``data`` when complete)

PostgreSQL refuses to run as root. When the effective user is root the cluster is owned by, and
``initdb`` / ``pg_ctl`` run as, an unprivileged user: ``$WIELD_PG_USER`` or the ``postgres`` system user
that the Debian packages create; ``DIR`` is handed to that user and must be reachable by it (e.g. under
``/tmp``, not under ``/root``).

Safety of ``DIR``. ``DIR`` is made private (0700), handed to the server's user and, with ``--remove``,
deleted, so it is never reached through a symbolic link (a link at ``DIR`` is refused, and so is a link that
another user planted anywhere in its path), it must belong to the current user, root or the server's user,
and everything inside it is changed and removed without following links (``os.fwalk`` on descriptors, the
link-safe ``shutil.rmtree``). No external command goes through a shell: ``initdb`` and the ``postgres``
server are started with argument lists (not ``pg_ctl start``, whose ``-o`` options and paths a shell
would expand), so a space, a quote or ``$(...)`` in ``DIR`` is just a character.

One command at a time. ``start`` and ``stop`` hold an exclusive lock (``fcntl.flock`` on
``DIR/.wield-db.lock``, opened without following links); a second command on the same directory is refused
in one line. A ``stop`` on a directory that holds none of a server's files is refused before the lock file
is made, so it leaves the directory as it found it. The lock is passed on to ``initdb``, so an ``initdb``
left running by a killed ``start`` still holds it: the next command waits for it to end.

Killed commands. ``initdb`` writes into ``DIR/data.init``, renamed to ``DIR/data`` once the cluster is
complete, so a ``start`` killed during ``initdb`` leaves no half cluster: the next ``start`` initialises
afresh. A ``start`` killed after the server came up but before ``server.json`` was written leaves a server
that nobody recorded: ``start``, ``stop`` and ``stop --remove`` find it by ``DIR/data/postmaster.pid``
(a live process whose working directory is that cluster) and stop it, and ``start`` makes sure the
experiment role exists, however far the killed one got.

Binaries come from ``$WIELD_PG_BINDIR``, else the newest ``/usr/lib/postgresql/*/bin``, else ``PATH``.
This module is system-level: it knows nothing about indexing or any case study.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import fcntl
import hashlib
import hmac
import os
import secrets
import shutil
import signal
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
from wield.workflows.ownership import check_path, pid_alive, read_lock_pid, user_name

ENGINES = ("postgres",)
SUPERUSER = "wield_admin"
ROLE = "wield"  # the experiments' role: no superuser, may create schemas in DEFAULT_DATABASE
DEFAULT_DATABASE = "postgres"
PASSFILE = "pgpass"
START_ATTEMPTS = 5
SUPERUSER_PASSFILE = "superuser.pgpass"
LOCK_FILE = ".wield-db.lock"
INIT_DIR = "data.init"  # initdb writes here; renamed to "data" once the cluster is complete
STOP_SIGNALS = {"smart": signal.SIGTERM, "fast": signal.SIGINT, "immediate": signal.SIGQUIT}
# What a directory made by 'wield db start' holds (any one suffices); '--remove' deletes nothing else.
_SERVER_FILES = ("server.json", PASSFILE, SUPERUSER_PASSFILE, LOCK_FILE, INIT_DIR, "data/PG_VERSION")
# Fault injection for tests only: set, 'start' kills itself (SIGKILL) once its server is up, before the
# experiment role is made and server.json written (the window a later start, stop or remove repairs).
FAULT_KILL_BEFORE_RECORD = "WIELD_FAULT_KILL_DB_START_BEFORE_RECORD"
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
    """Write a secret: mode 0600 from the start (atomic, so no reader ever sees a wider-open file; the
    rename replaces a link in its place instead of following it)."""
    previous = os.umask(0o077)
    try:
        atomic_write_bytes(path, text.encode("utf-8"))
    finally:
        os.umask(previous)
    os.chmod(path, 0o600, follow_symlinks=False)


def find_bindir() -> Path:
    """The directory holding ``initdb`` and ``postgres``."""
    override = os.environ.get("WIELD_PG_BINDIR")
    if override:
        path = Path(override)
        if not (path / "initdb").exists() or not (path / "postgres").exists():
            raise ConfigError("WIELD_PG_BINDIR", override, reason="holds no initdb and postgres")
        return path
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin"),
                      key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)
    for path in reversed(versions):
        if (path / "initdb").exists() and (path / "postgres").exists():
            return path
    found = shutil.which("initdb")
    if found and (Path(found).parent / "postgres").exists():
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
        entry = pwd.getpwnam(name)
    except KeyError:
        raise ConfigError("WIELD_PG_USER", name,
                          reason="PostgreSQL cannot run as root and this user does not exist; create it or "
                                 "name an unprivileged user") from None
    if entry.pw_uid == 0:
        raise ConfigError("WIELD_PG_USER", name, reason="PostgreSQL cannot run as root: name an unprivileged user")
    return name


def _user_kwargs(user: str | None) -> dict:
    """``subprocess`` arguments that run a command as ``user`` (nothing when None or not root)."""
    if user is None or os.geteuid() != 0:
        return {}
    import pwd

    entry = pwd.getpwnam(user)
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


def _read_private(path: Path, limit: int = 1 << 20) -> str:
    """A file of ``DIR``, read without following a link ('' when it is missing or unreadable)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return ""
    try:
        with os.fdopen(fd, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            handle.seek(max(0, size - limit))
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _log_tail(log: Path | None, lines: int = 15) -> str:
    if log is None:
        return ""
    text = _read_private(log, 64 * 1024)
    return "\n--- server log (last lines) ---\n" + "\n".join(text.splitlines()[-lines:]) if text else ""


def _run(command: list[str], user: str | None, what: str, log: Path | None = None,
         pass_fds: tuple[int, ...] = ()) -> str:
    """Run a server tool (as ``user`` when given) from an argument list, never through a shell; a failure
    raises SystemFailure with its output."""
    completed = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                               pass_fds=pass_fds, **_user_kwargs(user))
    if completed.returncode != 0:
        detail = (completed.stderr or completed.stdout).strip()
        raise SystemFailure(f"{what} failed (exit {completed.returncode}): {detail}{_log_tail(log)}")
    return completed.stdout


def _open_directory(directory: Path) -> int:
    """A descriptor of ``directory`` itself, never of where a link in its place points."""
    try:
        return os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ConfigError("dir", str(directory), reason="is a symbolic link; Wield does not follow a link "
                                                            "for a directory it makes private, hands over or "
                                                            "removes: give the directory itself") from None
        if exc.errno == errno.ENOTDIR:
            raise ConfigError("dir", str(directory), reason="is a file, not a directory") from None
        raise ConfigError("dir", str(directory), reason=f"cannot open this directory ({exc.strerror or exc})") from None


def _check_owner(fd: int, directory: Path, user: str | None) -> None:
    """``DIR`` must belong to the current user, root or the server's user: another user could swap its
    files for links while we chmod, chown or remove them."""
    owner = os.fstat(fd).st_uid
    allowed = {os.geteuid(), 0}
    if user is not None:
        import pwd

        allowed.add(pwd.getpwnam(user).pw_uid)
    if owner not in allowed:
        raise ConfigError("dir", str(directory), reason=(
            f"belongs to user '{user_name(owner)}', not to you or the server's user; 'wield db' makes private, "
            "hands over and removes only a directory of your own: choose another path"))


def _private_directory(directory: str | os.PathLike, user: str | None) -> Path:
    """``DIR`` as an absolute path (links not resolved), created if missing and made private (0700) through a
    descriptor opened without following links. A link at ``DIR``, a link planted by another user in its
    path and a directory owned by another user are refused (``ConfigError`` naming ``dir``)."""
    path = check_path(directory, "dir", final_link=False)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise ConfigError("dir", str(path), reason=f"cannot create a private directory here "
                                                   f"({exc.strerror or exc})") from None
    check_path(path, "dir", final_link=False)  # again: nothing was planted while we created it
    fd = _open_directory(path)
    try:
        _check_owner(fd, path, user)
        os.fchmod(fd, 0o700)
    except OSError as exc:
        raise ConfigError("dir", str(path), reason=f"cannot make this directory private "
                                                   f"({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    return path


def _existing_directory(directory: str | os.PathLike, user: str | None) -> Path | None:
    """``DIR`` checked like ``_private_directory`` but not created: None when it does not exist."""
    path = check_path(directory, "dir", final_link=False)
    if not os.path.lexists(path):
        return None
    fd = _open_directory(path)
    try:
        _check_owner(fd, path, user)
    finally:
        os.close(fd)
    return path


def _hand_to(path: Path, user: str | None) -> None:
    """Give ``path`` and everything in it to ``user``, walking descriptors without following any link (a
    link inside is re-owned itself, its target untouched)."""
    if user is None:
        return
    import pwd

    entry = pwd.getpwnam(user)
    top = _open_directory(path)
    try:
        os.fchown(top, entry.pw_uid, entry.pw_gid)
        for _, directories, files, parent in os.fwalk(".", dir_fd=top, follow_symlinks=False):
            for name in [*directories, *files]:
                with contextlib.suppress(FileNotFoundError):
                    os.chown(name, entry.pw_uid, entry.pw_gid, dir_fd=parent, follow_symlinks=False)
    finally:
        os.close(top)
    probe = subprocess.run(["test", "-w", str(path)], user=entry.pw_uid, group=entry.pw_gid, extra_groups=[])
    if probe.returncode != 0:
        raise ConfigError("dir", str(path), reason=f"the server user '{user}' cannot reach this directory "
                                                    "(a parent is private); choose one under /tmp")


@contextlib.contextmanager
def _locked(directory: Path, wait_s: float = 0.5, orphan_wait_s: float = 120.0) -> Iterator[int]:
    """Hold ``DIR``'s lock (``LOCK_FILE``, opened without following a link) while a command works on it;
    yields the lock's descriptor. Held by another live command: a one-line ``ConfigError`` after ``wait_s``.
    Held while the recorded holder is dead (an ``initdb`` a killed ``start`` left running still holds it):
    wait up to ``orphan_wait_s`` for it to end."""
    try:
        fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        reason = (f"its {LOCK_FILE} is a symbolic link, which Wield does not follow; remove it"
                  if exc.errno == errno.ELOOP else f"cannot create its lock file ({exc.strerror or exc})")
        raise ConfigError("dir", str(directory), reason=reason) from None
    try:
        started = time.monotonic()
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                holder = read_lock_pid(fd)
                orphaned = holder is not None and not pid_alive(holder)
                if time.monotonic() - started >= (orphan_wait_s if orphaned else wait_s):
                    who = ("a program left running by a killed one" if orphaned else
                           f"process {holder}" if holder else "another process")
                    raise ConfigError("dir", str(directory), reason=(
                        f"another 'wield db start' or 'wield db stop' ({who}) is working on this directory "
                        "right now; wait for it to finish and try again")) from None
                time.sleep(0.05)
        with contextlib.suppress(OSError):  # the pid is only for messages
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield fd
    finally:
        os.close(fd)  # closing releases the lock


def _info_path(directory: Path) -> Path:
    return directory / "server.json"


def server_info(directory: str | os.PathLike) -> ServerInfo | None:
    """The recorded server of ``directory`` (running or not), or None when none was started there."""
    path = _info_path(check_path(directory, "dir"))
    if not path.exists():
        return None
    data = read_json(path)
    known = {f.name for f in fields(ServerInfo)}
    if not isinstance(data, dict) or not {"engine", "directory", "port", "uri", "bindir", "os_user"} <= set(data):
        raise DataError(f"{path}: not a server description written by 'wield db start'")
    return ServerInfo(**{k: v for k, v in data.items() if k in known})


def _live_postmaster(directory: Path) -> tuple[int, int | None] | None:
    """``(pid, port)`` of the live server of ``DIR``'s cluster, recorded or not: the pid in
    ``data/postmaster.pid`` when that process is alive (a zombie is not) and its working directory is the
    cluster (so a reused pid is never taken for it)."""
    data = directory / "data"
    lines = _read_private(data / "postmaster.pid", 4096).splitlines()
    try:
        pid = int(lines[0])
    except (IndexError, ValueError):
        return None
    if not pid_alive(pid):
        return None
    if not os.path.isdir("/proc/self"):  # no procfs (not Linux): the live pid of the lock file must do
        return pid, _port_line(lines)
    try:
        if os.readlink(f"/proc/{pid}/cwd") != os.path.realpath(data):
            return None
    except OSError:
        return None  # gone, or another user's process: not our server
    return pid, _port_line(lines)


def _port_line(lines: list[str]) -> int | None:
    """The port in the lines of a ``postmaster.pid`` (its fourth line)."""
    try:
        return int(lines[3])
    except (IndexError, ValueError):
        return None


def is_running(directory: str | os.PathLike) -> bool:
    """Whether the recorded server of ``directory`` is up: its postmaster lives and listens on the port
    that ``server.json`` names."""
    info = server_info(directory)
    if info is None:
        return False
    live = _live_postmaster(check_path(directory, "dir"))
    return live is not None and live[1] == info.port


# Servers this process started. A server is our child until this process ends (a 'wield db start' command
# ends at once; a test or throwaway_server lives on), so one that ended must be reaped (waited for).
_CHILDREN: list[subprocess.Popen] = []


def _reap() -> None:
    """Wait for the servers this process started that have ended, so none lingers as a zombie."""
    for child in list(_CHILDREN):
        if child.poll() is not None:
            _CHILDREN.remove(child)


def _stop_postmaster(pid: int, mode: str, timeout_s: float = 60.0) -> None:
    """Stop the postmaster ``pid`` the way ``pg_ctl stop -m mode`` does (a signal), and wait for it to end;
    "immediate" kills it when it does not end in time."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, STOP_SIGNALS[mode])
    deadline = time.monotonic() + timeout_s
    while pid_alive(pid):
        if time.monotonic() > deadline:
            if mode != "immediate":
                raise SystemFailure(f"stopping PostgreSQL failed: the server (process {pid}) did not stop within "
                                    f"{timeout_s:.0f} s; 'wield db stop --remove' stops it at once")
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + 10.0
            mode = "killed"
        time.sleep(0.05)
    _reap()


def _launch(directory: Path, bindir: Path, user: str | None, port: int, timeout_s: float = 60.0) -> int:
    """Start the ``postgres`` server of ``DIR/data`` on ``port`` (an argument list: no shell, whatever
    ``DIR`` holds) in a session of its own, writing to ``DIR/server.log``; wait until it accepts
    connections and return its pid. No Unix-domain socket: the server listens on loopback TCP only."""
    _reap()  # a server of ours that died is a zombie until reaped, and postgres takes a zombie for a live server
    log = directory / "server.log"
    log_fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        kwargs = _user_kwargs(user)
        if kwargs:
            os.fchown(log_fd, kwargs["user"], kwargs["group"])
        child = subprocess.Popen([str(bindir / "postgres"), "-D", str(directory / "data"), "-p", str(port),
                                  "-c", "unix_socket_directories="],
                                 stdin=subprocess.DEVNULL, stdout=log_fd, stderr=log_fd, start_new_session=True,
                                 **kwargs)
    finally:
        os.close(log_fd)
    _CHILDREN.append(child)
    deadline = time.monotonic() + timeout_s
    while True:
        code = child.poll()
        if code is not None:
            raise SystemFailure(f"starting PostgreSQL failed (exit {code}){_log_tail(log)}")
        lines = _read_private(directory / "data" / "postmaster.pid", 4096).splitlines()
        if len(lines) >= 8 and lines[0].strip() == str(child.pid) and lines[7].strip() == "ready":
            return child.pid
        if time.monotonic() > deadline:
            _stop_postmaster(child.pid, "immediate")
            raise SystemFailure(f"starting PostgreSQL failed: not ready within {timeout_s:.0f} s{_log_tail(log)}")
        time.sleep(0.05)


def start_server(directory: str | os.PathLike, engine: str = "postgres", port: int | None = None) -> ServerInfo:
    """Start (initialising on first use) a PostgreSQL server in ``directory``; returns its URI.

    Starting a directory whose server already runs returns the running server's info. A stopped server is
    started again with its data (and a new free port unless ``port`` is given). Either way, private schemas
    that runs killed before they could drop them are removed. A start that was killed is resumed: an
    interrupted ``initdb`` is redone, and a server that came up but was never recorded is stopped and started
    again (see the module docstring).
    """
    if engine not in ENGINES:
        raise ConfigError("engine", engine, ENGINES)
    if port is not None and not 1 <= port <= 65535:
        raise ConfigError("port", port, reason="a TCP port is an integer from 1 to 65535")
    user = _server_user()
    directory = _private_directory(directory, user)
    bindir = find_bindir()
    with _locked(directory) as lock:
        info = server_info(directory)
        live = _live_postmaster(directory)
        if live is not None and info is not None and live[1] == info.port:
            remove_orphan_schemas(directory, info.port)
            return info
        if live is not None:  # up but never recorded: its start was killed before it wrote server.json
            _stop_postmaster(live[0], "fast")
        data = directory / "data"
        if not (data / "PG_VERSION").exists():
            if os.path.lexists(data):
                raise ConfigError("dir", str(directory), reason=(
                    "holds a 'data' directory that is not a complete cluster (an interrupted initialisation by "
                    f"an older Wield?); remove it with 'wield db stop --dir {directory} --remove' and start again"))
            _initialise(directory, bindir, user, lock)
        elif not (directory / SUPERUSER_PASSFILE).exists():
            raise ConfigError("dir", str(directory), reason=(
                "holds a server made by an older Wield, whose superuser password is not kept private; remove it "
                f"with 'wield db stop --dir {directory} --remove' and start a new one"))
        _hand_to(directory, user)
        chosen = port
        for attempt in range(START_ATTEMPTS):
            chosen = port or free_port()
            try:
                _launch(directory, bindir, user, chosen)
                break
            except SystemFailure:
                # after a kill -9 the old server's backends take a moment to notice and free shared memory
                if attempt == START_ATTEMPTS - 1:
                    raise
                time.sleep(2.0)
        assert chosen is not None
        if os.environ.get(FAULT_KILL_BEFORE_RECORD):
            os.kill(os.getpid(), signal.SIGKILL)
        _prepare(directory, chosen)
        info = ServerInfo(engine=engine, directory=str(directory), port=chosen, uri=client_uri(directory, chosen),
                          bindir=str(bindir), os_user=user or "", role=ROLE, passfile=str(directory / PASSFILE))
        atomic_write_json(_info_path(directory), info.as_dict())
        _hand_to(directory, user)
        return info


def _initialise(directory: Path, bindir: Path, user: str | None, lock: int) -> None:
    """initdb into ``DIR/data.init`` with the superuser's generated password (handed over in a private file,
    deleted after), then rename it to ``DIR/data``: a cluster there is always complete. The lock's
    descriptor goes to initdb, so an initdb that outlives a killed ``start`` keeps the directory locked."""
    staging = directory / INIT_DIR
    if os.path.lexists(staging):  # left by a start killed during initdb
        shutil.rmtree(staging)
    superuser_password = secrets.token_hex(16)
    _write_private(directory / SUPERUSER_PASSFILE, f"*:*:*:{SUPERUSER}:{superuser_password}\n")
    _write_private(directory / PASSFILE, f"*:*:*:{ROLE}:{secrets.token_hex(16)}\n")
    initdb_password = directory / ".initdb-password"
    _write_private(initdb_password, superuser_password + "\n")
    try:
        _hand_to(directory, user)
        _run([str(bindir / "initdb"), "-D", str(staging), "-U", SUPERUSER, "--auth=scram-sha-256",
              f"--pwfile={initdb_password}", "-E", "UTF8", "--locale=C", "--no-sync"], user, "initdb",
             pass_fds=(lock,))
    finally:
        initdb_password.unlink(missing_ok=True)
    conf = os.open(staging / "postgresql.conf", os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW)
    with os.fdopen(conf, "a") as handle:
        handle.write("\n# wield: throwaway experiment server\n")
        for name, value in SERVER_SETTINGS.items():
            handle.write(f"{name} = '{value}'\n")
    os.rename(staging, directory / "data")


def _passfile_password(path: Path) -> str:
    """The password of the one entry of a libpq password file written by ``_initialise``."""
    return _read_private(path).strip().split(":", 4)[4]


def superuser_connection(directory: str | os.PathLike, port: int):
    """A psycopg connection as the superuser (``wield db`` uses it for administration only)."""
    import psycopg

    directory = check_path(directory, "dir")
    try:
        return psycopg.connect(host="127.0.0.1", port=port, user=SUPERUSER, dbname=DEFAULT_DATABASE,
                               passfile=str(directory / SUPERUSER_PASSFILE), autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        raise SystemFailure(f"cannot connect to the PostgreSQL server of {directory} as {SUPERUSER}: "
                            f"{str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}") from exc


def _prepare(directory: Path, port: int) -> None:
    """What every start makes sure of, however far a killed start got: the experiments' role (not a
    superuser; it may create schemas), the hypopg extension, and no private schemas of killed runs."""
    import psycopg
    from psycopg import sql

    from case_studies.indexing.engines.postgres import drop_orphan_schemas

    with superuser_connection(directory, port) as conn:
        if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (ROLE,)).fetchone() is None:
            verifier = scram_verifier(_passfile_password(directory / PASSFILE))
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION "
                                 "PASSWORD {}").format(sql.Identifier(ROLE), sql.Literal(verifier)))
        conn.execute(sql.SQL("GRANT CONNECT, CREATE ON DATABASE {} TO {}").format(
            sql.Identifier(DEFAULT_DATABASE), sql.Identifier(ROLE)))
        try:  # what-if mode; a server without the hypopg package still serves every other mode
            conn.execute("CREATE EXTENSION IF NOT EXISTS hypopg SCHEMA public")
        except psycopg.Error:
            pass
        drop_orphan_schemas(conn)


def remove_orphan_schemas(directory: str | os.PathLike, port: int) -> list[str]:
    """Drop the private schemas of runs that were killed before they could drop them (see
    ``case_studies.indexing.engines.postgres.drop_orphan_schemas``); returns their names."""
    from case_studies.indexing.engines.postgres import drop_orphan_schemas

    with superuser_connection(directory, port) as conn:
        return drop_orphan_schemas(conn)


def stop_server(directory: str | os.PathLike, mode: str = "fast") -> bool:
    """Stop the server of ``directory``; True if one was running (recorded or left by a killed start).
    ``mode``: smart, fast or immediate."""
    if mode not in STOP_SIGNALS:
        raise ConfigError("mode", mode, tuple(STOP_SIGNALS))
    path = _existing_directory(directory, _server_user())
    if path is None:
        raise ConfigError("dir", str(directory), reason="no such directory: no server was started there")
    if not _holds_server_files(path):  # refused before the lock file is made: the directory stays as it was
        raise ConfigError("dir", str(path), reason="no server was started in this directory")
    with _locked(path):
        live = _live_postmaster(path)
        if live is None:
            if server_info(path) is None:
                raise ConfigError("dir", str(path), reason="no server was started in this directory")
            return False
        _stop_postmaster(live[0], mode)
        return True


def _holds_server_files(path: Path) -> bool:
    """Whether ``path`` holds any file that 'wield db start' makes (``_SERVER_FILES``)."""
    return any(os.path.lexists(path / name) for name in _SERVER_FILES)


def remove_server(directory: str | os.PathLike) -> bool:
    """Stop the server of ``directory`` if one runs (recorded or left by a killed start) and delete
    ``directory`` with everything in it; False when there was no such directory. A link, a directory of
    another user and one that holds no 'wield db' files are refused, and nothing inside is followed."""
    path = _existing_directory(directory, _server_user())
    if path is None:
        return False
    if os.listdir(path) and not _holds_server_files(path):
        raise ConfigError("dir", str(path), reason="holds no server made by 'wield db start' (no server.json, "
                                                   "password file or cluster); not removing it")
    with _locked(path):
        live = _live_postmaster(path)
        if live is not None:
            _stop_postmaster(live[0], "immediate")
        try:
            shutil.rmtree(path)
        except OSError as exc:
            raise SystemFailure(f"cannot remove {exc.filename or path}: {exc.strerror or exc}") from None
    return True


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

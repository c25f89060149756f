"""Who is writing a record directory: an exclusive lock held while a process writes, and a probe for it.

A run record or an experiment directory is written by one process at a time. The writer holds an exclusive
``fcntl.flock`` on ``DIR/.wield.lock`` (the file holds its pid, for messages) from the moment it claims
the directory until it finishes; a second writer is refused with a clear error instead of interleaving
its files with the first one's. The kernel drops the lock when the holder dies, even by ``kill -9``, so a
lock is never left behind, and a directory whose status still says "running" while nobody holds its lock
belongs to a process that is gone: it is *stale*.

A forked child (a worker of the local process pool) closes its copies of the locks its parent holds
without unlocking them: it cannot release its parent's claim, and the parent's death still frees it at once.

Probes take a shared lock for an instant; a writer that meets a probe retries for half a second before
refusing, so a probe never makes a writer fail.

Planted links. A process run as root (or as anyone) must not be steered by another user into writing where
that user chooses. One policy (``check_path``) covers every directory Wield writes into or deletes in: a
symbolic link in its path is followed only when its owner is the current user or root, no directory on the
path may be writable by another user unless it is sticky (as OpenSSH's StrictModes), the directory itself
must belong to the current user or root (``check_owner``: another user could swap its files while we write),
and the lock file is opened without following a link (``O_NOFOLLOW``).
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import time
import weakref
from pathlib import Path

from wield.errors import ConfigError

LOCK_FILE = ".wield.lock"
_RETRIES = 10
_RETRY_PAUSE_S = 0.05


class DirectoryLock:
    """An exclusive claim on a directory; released by ``release()`` or when the process ends."""

    def __init__(self, directory: Path, fd: int) -> None:
        self.directory = directory
        self._fd: int | None = fd
        _HELD.add(self)

    @classmethod
    def acquire(cls, directory: str | os.PathLike, field: str = "out", what: str = "directory",
                wait_s: float = 0.0) -> "DirectoryLock":
        """Claim ``directory`` (created if missing). Held by another live process: ``ConfigError`` naming
        ``field`` and that process, after waiting up to ``wait_s`` seconds for it to finish."""
        directory = ensure_directory(directory, field, owned=True)
        try:
            fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise ConfigError(field, str(directory), reason=f"its {LOCK_FILE} is a symbolic link, which Wield "
                                                                "does not follow; remove it") from None
            raise ConfigError(field, str(directory), reason=f"cannot write into this {what} "
                                                            f"({exc.strerror or exc})") from None
        deadline = time.monotonic() + max(wait_s, _RETRIES * _RETRY_PAUSE_S)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES) or time.monotonic() >= deadline:
                    holder = read_lock_pid(fd)
                    os.close(fd)
                    if exc.errno not in (errno.EAGAIN, errno.EACCES):
                        raise ConfigError(field, str(directory), reason=f"cannot lock this {what} "
                                                                        f"({exc.strerror or exc})") from None
                    who = f"process {holder}" if holder else "another process"
                    raise ConfigError(field, str(directory), reason=(
                        f"{who} is writing into this {what} right now; wait for it to finish (or stop it) "
                        "or choose another directory")) from None
                time.sleep(_RETRY_PAUSE_S)
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError:
            pass  # the pid is only for messages; a full disk must not stop the claim itself
        return cls(directory, fd)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    def __del__(self) -> None:
        try:
            self.release()
        except OSError:
            pass


_HELD: "weakref.WeakSet[DirectoryLock]" = weakref.WeakSet()


def _forget_inherited_locks() -> None:
    """In a forked child: close the copies of the parent's lock descriptors without unlocking (an unlock
    through a shared descriptor would release the parent's claim)."""
    for lock in list(_HELD):
        fd, lock._fd = lock._fd, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_inherited_locks)


def is_claimed(directory: str | os.PathLike) -> bool:
    """Whether a live process holds ``directory``'s lock (False when it has no lock file)."""
    try:
        fd = os.open(Path(directory) / LOCK_FILE, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing drops the probe's shared lock
    return False


def claimant(directory: str | os.PathLike) -> int | None:
    """The pid recorded by the last process that claimed ``directory`` (it may be gone)."""
    try:
        fd = os.open(Path(directory) / LOCK_FILE, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        return read_lock_pid(fd)
    finally:
        os.close(fd)


def read_lock_pid(fd: int) -> int | None:
    """The process id a lock file holds (its first 32 bytes), or None when it holds none."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def user_name(uid: int) -> str:
    """The login name of ``uid`` (its number when it has none)."""
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def check_path(directory: str | os.PathLike, field: str = "out", *, final_link: bool = True) -> Path:
    """The one ownership policy of every directory Wield writes into or deletes in (``--out``, ``db --dir``,
    the cache root, tracker stores): ``directory`` as an absolute path (links kept, not resolved) after
    checking every component that exists, as OpenSSH's StrictModes does.

    - A symbolic link anywhere in the path is followed only when it belongs to the current user or root
      (another user may have planted it to make this process write, chmod or delete where it points); with
      ``final_link`` False the last component must not be a link at all.
    - Every directory above ``directory`` (on the path as given and on the path the links lead to) must
      belong to the current user or root and must not be writable by another user, unless it is sticky
      (``/tmp``): otherwise that user could rename ``directory`` away after these checks and put a link in
      its place, redirecting every file written afterwards.
    - ``directory`` itself, when it exists, must not be writable by another user, sticky or not (they could
      plant the names Wield is about to write); who owns it is ``check_owner``'s question.

    A refusal is a ``ConfigError`` naming ``field``, the component and what makes it unsafe."""
    path = Path(directory)
    absolute = path if path.is_absolute() else Path.cwd() / path
    parts = absolute.parts[1:]
    current = Path(absolute.anchor)
    deepest = current
    for index, part in enumerate(parts):
        current = current / part
        try:
            info = os.lstat(current)
        except OSError:
            break  # missing (created later) or unreachable: the caller's own checks report it
        deepest = current
        last = index == len(parts) - 1
        if stat.S_ISLNK(info.st_mode):
            _check_link(current, info, directory, field, last and not final_link)
        elif stat.S_ISDIR(info.st_mode):
            _check_component(current, info, directory, field, last)
    if deepest != Path(absolute.anchor):  # the directories the links lead to, checked the same way
        resolved = Path(os.path.realpath(deepest))
        final = deepest == absolute
        current = Path(resolved.anchor)
        for index, part in enumerate(resolved.parts[1:]):
            current = current / part
            try:
                info = os.lstat(current)
            except OSError:
                break
            if stat.S_ISDIR(info.st_mode):
                _check_component(current, info, directory, field, final and index == len(resolved.parts) - 2)
    return absolute


def _check_link(link: Path, info: os.stat_result, directory: str | os.PathLike, field: str,
                refuse_any: bool) -> None:
    try:
        target = os.readlink(link)
    except OSError:
        target = "?"
    if refuse_any:
        raise ConfigError(field, str(directory), reason=(
            f"is a symbolic link (to {target}); Wield does not follow a link for a directory it makes "
            "private, hands over or removes: give the directory itself"))
    if info.st_uid not in (os.geteuid(), 0):
        raise ConfigError(field, str(directory), reason=(
            f"{link} is a symbolic link (to {target}) owned by user '{user_name(info.st_uid)}'; Wield "
            "does not follow another user's link: choose a path of your own"))


def _check_component(component: Path, info: os.stat_result, directory: str | os.PathLike, field: str,
                     last: bool) -> None:
    """Refuse a directory on the path that another user could rename things in (see ``check_path``)."""
    if not last and info.st_uid not in (os.geteuid(), 0):
        raise ConfigError(field, str(directory), reason=(
            f"{component} belongs to user '{user_name(info.st_uid)}', who could replace what lies below it "
            "with a link: choose a path whose every directory belongs to you or root"))
    if not last and info.st_mode & stat.S_ISVTX:
        return  # sticky (/tmp): nobody else can rename or delete what lies in it
    writers = _other_writers(info)
    if writers:
        where = "is" if component == Path(directory) else f"{component} is"
        raise ConfigError(field, str(directory), reason=(
            f"{where} writable by {writers} (mode {stat.S_IMODE(info.st_mode):04o}), who could replace what "
            "lies in it with a link: remove their write permission (chmod go-w) or choose another path"))


def _other_writers(info: os.stat_result) -> str | None:
    """Who other than the owner may write into a directory with these bits: every user (o+w), the members
    of its group (g+w, unless the group is the owner's private group), or nobody (None)."""
    if info.st_mode & stat.S_IWOTH:
        return "every user"
    if not info.st_mode & stat.S_IWGRP:
        return None
    import grp
    import pwd

    try:
        group = grp.getgrgid(info.st_gid)
    except KeyError:
        return f"group {info.st_gid}"
    owner = user_name(info.st_uid)
    others = {member for member in group.gr_mem if member != owner}
    others |= {entry.pw_name for entry in pwd.getpwall() if entry.pw_gid == info.st_gid and entry.pw_uid != info.st_uid}
    return f"the members of group '{group.gr_name}'" if others else None


def check_owner(directory: Path, field: str, allowed: set[int] | None = None) -> None:
    """Refuse a directory owned by someone other than the current user, root or ``allowed`` (its owner could
    swap its files for links while we write)."""
    owner = os.stat(directory).st_uid
    if owner not in {os.geteuid(), 0, *(allowed or ())}:
        raise ConfigError(field, str(directory), reason=(
            f"belongs to user '{user_name(owner)}', not to you; Wield writes only into a directory of your own: "
            "choose another path"))


def ensure_directory(directory: str | os.PathLike, field: str = "out", owned: bool = False) -> Path:
    """``directory`` created if missing; a file in its place or a directory that cannot be created is a
    ``ConfigError`` naming ``field``, and so is a path that fails the ownership policy (``check_path``)
    and, with ``owned``, a directory that belongs to another user (``check_owner``)."""
    path = Path(directory)
    check_path(path, field)  # before creating anything through a planted link or in another user's directory
    if path.exists() and not path.is_dir():
        raise ConfigError(field, str(path), reason="is a file, not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ConfigError(field, str(path), reason="a part of this path is a file, not a directory") from None
    except OSError as exc:
        raise ConfigError(field, str(path), reason=f"cannot create this directory ({exc.strerror or exc})") from None
    check_path(path, field)  # again: a link planted in place of a part while it was created
    if owned:
        check_owner(path, field)
    return path


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this machine (a zombie counts as gone)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except OSError:
        return True

"""One ownership policy for every directory Wield writes or deletes in (issue 45, items 1, 2 and 10).

``--out``, ``db --dir``, the cache root (``$WIELD_CACHE_DIR``, ``--cache-dir``) and tracker stores go
through ``wield.workflows.ownership.check_path``: a link of another user's anywhere in the path is refused,
and so is any directory on the path that another user could write into (unless it is sticky, like /tmp),
since that user could rename the run directory away after the checks and put a link in its place. The
cache root is marked as Wield's (``CACHEDIR.TAG``) and ``wield cache clear`` removes only Wield's entries,
after asking (or with ``--yes``).

The other-user tests create a throwaway local user (``useradd``, removed afterwards) and need root; they are
skipped otherwise. Before the fix root's ``wield cache list`` listed a planted link's target and ``wield
cache clear`` deleted it (exit 0), and ``--out`` under another user's directory was accepted.
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from wield.cache import MARKER, cache_root
from wield.cli import main
from wield.errors import ConfigError
from wield.workflows.ownership import check_path

QUICK = ["--documents", "500", "--queries", "3", "--episodes", "2", "--repetitions", "1", "--quiet"]
HAS_USERADD = shutil.which("useradd") is not None and shutil.which("userdel") is not None
needs_second_user = pytest.mark.skipif(os.geteuid() != 0 or not HAS_USERADD,
                                       reason="acting as a throwaway second local user needs root and useradd")


@pytest.fixture(scope="module")
def other_user():
    """A throwaway unprivileged user, removed at the end."""
    name = f"wieldt{os.getpid() % 100000}"
    subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", "--user-group", name],
                   check=True, capture_output=True)
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", name], capture_output=True)


def as_user(entry: pwd.struct_passwd, *command: str) -> None:
    subprocess.run(command, check=True, user=entry.pw_uid, group=entry.pw_gid, extra_groups=[], cwd="/",
                   stdin=subprocess.DEVNULL)


@pytest.fixture
def sticky():
    directory = Path(tempfile.mkdtemp(prefix="wield-sticky-"))
    directory.chmod(0o1777)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def snapshot(root: Path) -> dict[str, tuple]:
    seen = {}
    for path in [root, *sorted(root.rglob("*"))]:
        info = path.lstat()
        content = path.read_bytes() if stat.S_ISREG(info.st_mode) else None
        seen[str(path.relative_to(root))] = (stat.S_IMODE(info.st_mode), info.st_uid, content)
    return seen


def refused(capsys, command: list, *words: str) -> str:
    assert main([str(part) for part in command]) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert all(word in lines[0] for word in words), lines[0]
    return lines[0]


@pytest.fixture
def victim(tmp_path) -> Path:
    target = tmp_path / "victim"
    (target / "sqlite-keep-1docs-0123456789abcdef.sqlite").parent.mkdir(parents=True)
    (target / "sqlite-keep-1docs-0123456789abcdef.sqlite").write_text("root's file\n")
    (target / "measurements").mkdir()
    (target / "measurements" / "store.sqlite").write_text("root's store\n")
    (target / MARKER).write_text("Signature: 8a477f597d28d172789f06886806bc55\n# This file is written by Wield\n")
    target.chmod(0o755)
    return target


@needs_second_user
def test_a_cache_root_planted_as_another_users_link_is_refused_and_its_target_untouched(other_user, victim, sticky,
                                                                                         capsys, monkeypatch):
    before = snapshot(victim)
    planted = sticky / "cache"
    as_user(other_user, "ln", "-s", str(victim), str(planted))
    monkeypatch.setenv("WIELD_CACHE_DIR", str(planted))
    refused(capsys, ["cache", "list"], "WIELD_CACHE_DIR", "symbolic link", other_user.pw_name)
    refused(capsys, ["cache", "clear", "--yes"], "WIELD_CACHE_DIR", "symbolic link", other_user.pw_name)
    refused(capsys, ["run", "indexing", "--out", sticky.parent / f"{sticky.name}-out", *QUICK],
            "WIELD_CACHE_DIR", "symbolic link")
    assert snapshot(victim) == before


@needs_second_user
def test_a_cache_root_of_another_user_or_below_one_is_refused(other_user, sticky, capsys, monkeypatch):
    team = sticky / "team-cache"  # a team cache: another user's, open to all
    as_user(other_user, "mkdir", "-m", "0777", str(team))
    monkeypatch.setenv("WIELD_CACHE_DIR", str(team))
    refused(capsys, ["cache", "list"], "WIELD_CACHE_DIR", "writable by every user")
    monkeypatch.setenv("WIELD_CACHE_DIR", str(team / "mine"))
    refused(capsys, ["cache", "list"], "WIELD_CACHE_DIR", f"belongs to user '{other_user.pw_name}'")
    theirs = sticky / "theirs"
    as_user(other_user, "mkdir", "-m", "0755", str(theirs))
    monkeypatch.setenv("WIELD_CACHE_DIR", str(theirs))
    refused(capsys, ["cache", "clear", "--yes"], "WIELD_CACHE_DIR", f"belongs to user '{other_user.pw_name}'")


@needs_second_user
def test_out_and_dir_under_a_parent_another_user_can_write_are_refused(other_user, sticky, tmp_path, capsys):
    """The other user owns (or may write into) a directory above --out: they could rename the run directory
    away after the checks and put a link in its place, so nothing is written there at all."""
    theirs = sticky / "theirs"
    as_user(other_user, "mkdir", "-m", "0755", str(theirs))
    run = theirs / "run"
    os.mkdir(run)  # root's own run directory, inside the other user's
    refused(capsys, ["run", "indexing", "--out", run, *QUICK], str(theirs), f"belongs to user '{other_user.pw_name}'")
    assert list(run.iterdir()) == []
    refused(capsys, ["db", "start", "postgres", "--dir", theirs / "pg"], f"belongs to user '{other_user.pw_name}'")
    assert not (theirs / "pg").exists()
    open_parent = tmp_path / "open"
    open_parent.mkdir()
    open_parent.chmod(0o777)  # root's, but writable by every user and not sticky
    refused(capsys, ["run", "indexing", "--out", open_parent / "run", *QUICK], "writable by every user")
    refused(capsys, ["compare", "indexing", "--methods", "random", "--out", open_parent / "cmp", *QUICK],
            "writable by every user")
    assert list(open_parent.iterdir()) == []


def test_check_path_accepts_sticky_parents_and_refuses_open_ones(tmp_path):
    parent = tmp_path / "p"
    parent.mkdir()
    parent.chmod(0o1777)
    assert check_path(parent / "run") == parent / "run"  # sticky, like /tmp: fine as a parent
    with pytest.raises(ConfigError, match="writable by every user"):
        check_path(parent)  # but never as the directory written into
    parent.chmod(0o777)
    with pytest.raises(ConfigError, match=r"'out'.*writable by every user \(mode 0777\)"):
        check_path(parent / "run" / "deeper")
    link = tmp_path / "link"
    link.symlink_to(parent)  # our own link is followed, and what it leads to is checked the same way
    with pytest.raises(ConfigError, match="writable by every user"):
        check_path(link / "run")
    parent.chmod(0o755)
    assert check_path(link / "run") == link / "run"


def test_cache_is_marked_and_clear_removes_only_wields_entries_after_asking(tmp_path, monkeypatch, capsys):
    cache = tmp_path / "cache"
    monkeypatch.setenv("WIELD_CACHE_DIR", str(cache))
    root = cache_root(create=True)
    assert (root / MARKER).read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    (cache / "sqlite-a-1docs-0123456789abcdef.sqlite").write_text("x" * 100)
    (cache / "notes with spaces.txt").write_text("not Wield's")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep").write_text("keep")
    (cache / "measurements").symlink_to(elsewhere)
    completed = subprocess.run([sys.executable, "-m", "wield.cli", "cache", "clear"], capture_output=True, text=True,
                               stdin=subprocess.DEVNULL, timeout=120)
    assert completed.returncode == 2 and "--yes" in completed.stderr and "Traceback" not in completed.stderr
    assert (cache / "sqlite-a-1docs-0123456789abcdef.sqlite").exists()
    refused(capsys, ["cache", "clear", "--yes", "measurements"], "not an entry of Wield's")
    assert main(["cache", "clear", "--yes"]) == 0
    assert "removed sqlite-a-1docs" in capsys.readouterr().out
    assert sorted(p.name for p in cache.iterdir()) == sorted([MARKER, "measurements", "notes with spaces.txt"])
    assert (elsewhere / "keep").read_text() == "keep"

    unmarked = tmp_path / "unmarked"
    unmarked.mkdir()
    (unmarked / "sqlite-b.sqlite").write_text("x")
    monkeypatch.setenv("WIELD_CACHE_DIR", str(unmarked))
    refused(capsys, ["cache", "clear", "--yes"], MARKER, "nothing was removed")
    assert (unmarked / "sqlite-b.sqlite").exists()

"""Security with real users, real links and real files (issue 37, items 1, 2 and 7).

- Planted links. Another user plants a symbolic link (or a directory of their own holding a link) at the
  path that root then gives to ``wield db start --dir``, ``wield db stop --dir [--remove]`` or ``--out``;
  every command is refused in one line naming the path, and the link's target keeps its mode, owner and
  contents. Before the fix ``db start`` made the target 0700 and gave every file in it to ``postgres``,
  ``db stop --remove`` deleted it, and a run wrote its record into it (and truncated the file a planted
  ``.wield.lock`` pointed to). These tests need root (to act as two users) and are skipped otherwise.
- Code in a model file. A finished run record whose ``model.pt`` carries a ``__reduce__`` payload (with
  ``checksums.json`` recomputed, so the record is "intact") runs nothing under ``wield reproduce`` or
  ``wield run indexing --evaluate-checkpoint``: both refuse the file and exit non-zero. Before the fix both
  unpickled it with ``weights_only=False`` and ran the payload (``--evaluate-checkpoint`` even exited 0).
- Shell injection. A ``--dir`` holding a space and ``$(...)`` is just a directory name: the server starts
  there, and nothing is run.
"""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from case_studies.indexing.engines.postgres_server import remove_server
from wield.cli import main

QUICK = ["--documents", "500", "--queries", "3", "--episodes", "2", "--repetitions", "1", "--quiet"]
OTHER_USER = "nobody"

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="acting as a second local user (planting links as "
                                                          f"'{OTHER_USER}') needs root")


def wield(*args: object, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wield.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def as_other_user(*command: str) -> None:
    """Run ``command`` as the unprivileged second user."""
    entry = pwd.getpwnam(OTHER_USER)
    subprocess.run(command, check=True, user=entry.pw_uid, group=entry.pw_gid, extra_groups=[],
                   cwd="/", stdin=subprocess.DEVNULL)


def snapshot(root: Path) -> dict[str, tuple]:
    """Mode, owner and contents of ``root`` and everything in it (links not followed)."""
    seen = {}
    for path in [root, *sorted(root.rglob("*"))]:
        info = path.lstat()
        content = path.read_bytes() if stat.S_ISREG(info.st_mode) else None
        seen[str(path.relative_to(root))] = (stat.S_IMODE(info.st_mode), info.st_uid, info.st_gid, content)
    return seen


def assert_refused(capsys, command: list, path: Path, *words: str) -> None:
    """``wield COMMAND`` (as root, in this process) exits 2 with one line naming ``path`` and ``words``."""
    assert main([str(part) for part in command]) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert str(path)[:40] in lines[0] and all(word in lines[0] for word in words), lines[0]


@pytest.fixture
def victim(tmp_path) -> Path:
    """Root's directory that the other user wants taken over: a private file, a subdirectory and a
    world-readable file, with mixed modes."""
    target = tmp_path / "victim"
    (target / "keys").mkdir(parents=True)
    (target / "keys" / "secret").write_text("root's secret\n")
    (target / "notes.txt").write_text("keep me\n")
    (target / "keys" / "secret").chmod(0o600)
    (target / "keys").chmod(0o750)
    target.chmod(0o755)
    return target


@pytest.fixture
def sticky():
    """A sticky, world-writable temporary directory (like /tmp) where the other user plants links."""
    directory = Path(tempfile.mkdtemp(prefix="wield-sticky-"))
    directory.chmod(0o1777)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@needs_root
def test_db_start_stop_and_remove_refuse_a_link_or_a_directory_planted_by_another_user(victim, sticky, capsys):
    before = snapshot(victim)
    planted = sticky / "wield-pg"
    as_other_user("ln", "-s", str(victim), str(planted))
    assert_refused(capsys, ["db", "start", "postgres", "--dir", planted], planted, "symbolic link")
    assert_refused(capsys, ["db", "stop", "--dir", planted, "--remove"], planted, "symbolic link")
    assert_refused(capsys, ["db", "stop", "--dir", planted], planted, "symbolic link")
    below = planted / "server"  # a link higher up in the path: nothing is created through it either
    assert_refused(capsys, ["db", "start", "postgres", "--dir", below], below, "symbolic link", OTHER_USER)
    assert snapshot(victim) == before

    theirs = sticky / "theirs"  # a real directory of the other user's, its lock file a link to root's file
    as_other_user("mkdir", str(theirs))
    as_other_user("ln", "-s", str(victim / "notes.txt"), str(theirs / ".wield-db.lock"))
    as_other_user("ln", "-s", str(victim), str(theirs / "data"))
    for command in (["db", "start", "postgres", "--dir", theirs], ["db", "stop", "--dir", theirs, "--remove"]):
        assert_refused(capsys, command, theirs, f"belongs to user '{OTHER_USER}'")
    assert snapshot(victim) == before
    assert theirs.is_dir() and (theirs / "data").is_symlink()


@needs_root
def test_out_refuses_a_link_or_a_directory_planted_by_another_user(victim, sticky, capsys):
    before = snapshot(victim)
    planted = sticky / "run"
    as_other_user("ln", "-s", str(victim), str(planted))
    assert_refused(capsys, ["run", "indexing", "--out", planted, *QUICK], planted, "symbolic link", OTHER_USER)
    assert_refused(capsys, ["run", "indexing", "--class", "C2", "--trials", "1", "--out", planted, *QUICK], planted,
                   "symbolic link", OTHER_USER)
    below = planted / "run"
    assert_refused(capsys, ["run", "indexing", "--out", below, *QUICK], below, "symbolic link")
    assert snapshot(victim) == before

    theirs = sticky / "theirs"  # the other user's directory, its lock file a link to root's file
    as_other_user("mkdir", str(theirs))
    as_other_user("ln", "-s", str(victim / "notes.txt"), str(theirs / ".wield.lock"))
    assert_refused(capsys, ["run", "indexing", "--out", theirs, *QUICK], theirs, f"belongs to user '{OTHER_USER}'")
    assert snapshot(victim) == before  # the lock file's target was neither truncated nor written


class _Payload:
    """Pickles to a call of ``exec`` that creates ``marker``: what a hostile model.pt would carry."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({str(self.marker)!r}, 'w').write('code ran')",))


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("security") / "run"
    completed = wield("run", "indexing", "--out", out, *QUICK)
    assert completed.returncode == 0, completed.stderr
    return out


def _plant_payload(run: Path, marker: Path) -> None:
    """Replace the run's model.pt with its own weights plus a payload, and recompute checksums.json so
    the record still verifies."""
    import torch

    state = torch.load(run / "model.pt", weights_only=True)
    state["payload"] = _Payload(marker)
    torch.save(state, run / "model.pt")
    sums = json.loads((run / "checksums.json").read_text())
    sums["model.pt"] = hashlib.sha256((run / "model.pt").read_bytes()).hexdigest()
    (run / "checksums.json").write_text(json.dumps(sums))


def test_a_model_file_with_a_pickle_payload_never_runs_under_reproduce_or_evaluate_checkpoint(finished_run,
                                                                                                tmp_path):
    run = tmp_path / "run"
    shutil.copytree(finished_run, run)
    marker = tmp_path / "code-ran"
    _plant_payload(run, marker)
    # the payload is live: an unsafe load (what Wield did before) runs it
    subprocess.run([sys.executable, "-c", "import sys, torch; torch.load(sys.argv[1], weights_only=False)",
                    str(run / "model.pt")], check=True, capture_output=True)
    assert marker.exists()
    marker.unlink()

    for command in (["reproduce", run], ["run", "indexing", "--evaluate-checkpoint", run, "--engine", "sqlite"]):
        completed = wield(*command)
        assert completed.returncode != 0, completed.stdout
        assert not marker.exists(), f"the payload ran under 'wield {command[0]}'"
        lines = completed.stderr.strip().splitlines()
        assert len(lines) == 1 and "model.pt" in lines[0] and "refused" in lines[0], completed.stderr


def test_a_space_and_command_substitution_in_dir_are_only_characters(tmp_path):
    marker = Path(tempfile.gettempdir()) / f"wield-injected-{os.getpid()}"
    parent = Path(tempfile.mkdtemp(prefix="wield-pg-quoting-"))
    parent.chmod(0o755)  # under /tmp and open: reachable by the server's user
    directory = parent / f"a dir $(touch {marker}) `touch {marker}` \"quoted\""
    try:
        started = wield("db", "start", "postgres", "--dir", directory, timeout=120)
        assert started.returncode == 0, started.stderr
        assert started.stdout.startswith("postgresql://wield@127.0.0.1:")
        assert wield("db", "status", "--dir", directory).returncode == 0
        assert wield("db", "stop", "--dir", directory, "--remove").returncode == 0
        assert not directory.exists() and not marker.exists()
    finally:
        remove_server(directory)
        shutil.rmtree(parent, ignore_errors=True)
        marker.unlink(missing_ok=True)

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
        lines = [line for line in completed.stderr.strip().splitlines() if not line.startswith("reproduce: ")]
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


# -- issue 37, second round: what the first fixes left ------------------------------------------------------
def _listing(directory: Path) -> list[str]:
    return sorted(str(path.relative_to(directory)) for path in directory.rglob("*"))


def test_db_stop_where_no_server_was_started_leaves_the_directory_as_it_was(tmp_path):
    """A stop that finds nothing to stop refuses in one line and creates nothing (it left .wield-db.lock)."""
    empty, other = tmp_path / "empty", tmp_path / "other"
    empty.mkdir()
    other.mkdir()
    (other / "placeholder").write_text("")
    for directory in (empty, other):
        before = _listing(directory)
        completed = wield("db", "stop", "--dir", directory, timeout=60)
        assert completed.returncode == 2, completed.stdout
        lines = completed.stderr.strip().splitlines()
        assert len(lines) == 1 and "no server was started" in lines[0], completed.stderr
        assert _listing(directory) == before, f"'db stop' left {set(_listing(directory)) - set(before)}"
    missing = tmp_path / "missing"
    assert wield("db", "stop", "--dir", missing, timeout=60).returncode == 2 and not missing.exists()


def _copy_record(finished_run: Path, tmp_path: Path, name: str = "run") -> Path:
    run = tmp_path / name
    shutil.copytree(finished_run, run, symlinks=True)
    return run


def _set_checksum(run: Path, name: str, digest: str | None = None, source: Path | None = None) -> None:
    """Put ``name`` into the record's checksums.json with ``digest`` (default: the sha256 of ``source`` or of
    the record's file ``name``), as a hand-edited record would."""
    sums = json.loads((run / "checksums.json").read_text())
    sums[name] = digest or hashlib.sha256((source or run / name).read_bytes()).hexdigest()
    (run / "checksums.json").write_text(json.dumps(sums))


def _refused(completed: subprocess.CompletedProcess, *words: str) -> str:
    assert completed.returncode not in (0, 1), completed.stdout
    lines = [line for line in completed.stderr.splitlines() if line.startswith("wield: error")]  # progress aside
    assert len(lines) == 1 and "Traceback" not in completed.stderr, completed.stderr
    assert all(word in lines[0] for word in words), lines[0]
    return lines[0]


def test_checksums_name_only_plain_files_inside_the_record(finished_run, tmp_path):
    """checksums.json naming a file outside the record ('../../etc/passwd', '/etc/passwd', a directory link
    on the way) or a checked file that is a link or a FIFO: the record is refused as damaged, nothing outside
    it is hashed. Before the fix every one of these verified (the link and the outside files hashed through)
    and reproduce reran the record."""
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(finished_run / "schema.json", outside / "schema.json")
    passwd = Path("/etc/passwd")

    run = _copy_record(finished_run, tmp_path, "up")
    _set_checksum(run, "../../../../../../../../etc/passwd", source=passwd)
    _refused(wield("reproduce", run, timeout=120), "checksums.json names", "etc/passwd", "not a plain name")

    run = _copy_record(finished_run, tmp_path, "absolute")
    _set_checksum(run, str(passwd), source=passwd)
    _refused(wield("reproduce", run, timeout=120), "not a plain name")

    run = _copy_record(finished_run, tmp_path, "through")
    (run / "sub").symlink_to(outside)
    _set_checksum(run, "sub/schema.json", source=outside / "schema.json")
    _refused(wield("reproduce", run, timeout=120), "sub/schema.json", "symbolic link is not followed")

    run = _copy_record(finished_run, tmp_path, "link")  # the same bytes, but through a link
    (run / "schema.json").unlink()
    (run / "schema.json").symlink_to(outside / "schema.json")
    _refused(wield("reproduce", run, timeout=120), "schema.json", "symbolic link")

    run = _copy_record(finished_run, tmp_path, "fifo")
    (run / "schema.json").unlink()
    os.mkfifo(run / "schema.json")
    _refused(wield("reproduce", run, timeout=60), "schema.json", "FIFO")


class _Listener:
    """A loopback TCP port that counts the connections made to it (and closes them at once)."""

    def __init__(self) -> None:
        import socket
        import threading

        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        self.connections = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            self.connections += 1
            connection.close()

    def close(self) -> None:
        self.socket.close()


def _edit_config(run: Path, **changes: object) -> None:
    config = json.loads((run / "config.json").read_text())
    config.update(changes)
    (run / "config.json").write_text(json.dumps(config))
    _set_checksum(run, "config.json")


def test_reproduce_connects_only_to_the_server_the_user_names(finished_run, tmp_path):
    """A record naming a PostgreSQL server (its uri, or a server_dir) is not rerun there: reproduce refuses
    and says to pass --server-dir or --uri; given --uri, the rerun connects to that server and no other.
    Before the fix reproduce connected to the record's URI."""
    recorded, mine = _Listener(), _Listener()
    try:
        run = _copy_record(finished_run, tmp_path)
        _edit_config(run, engine="postgres", uri=f"postgresql://wield@127.0.0.1:{recorded.port}/postgres",
                     server_dir=None)
        _refused(wield("reproduce", run, timeout=120), "never connects", "--server-dir DIR", "--uri URI")
        other = _copy_record(finished_run, tmp_path, "server-dir")
        _edit_config(other, engine="postgres", uri=None, server_dir=str(tmp_path / "their-server"))
        _refused(wield("reproduce", other, timeout=120), "--server-dir DIR")

        completed = wield("reproduce", run, "--uri", f"postgresql://wield@127.0.0.1:{mine.port}/postgres",
                          timeout=120)
        assert completed.returncode != 0  # not a PostgreSQL server: the point is which one was tried
        assert mine.connections > 0, completed.stderr
        assert recorded.connections == 0, "reproduce connected to the server the record names"
        _refused(wield("reproduce", finished_run, "--uri", f"postgresql://wield@127.0.0.1:{mine.port}/postgres",
                       timeout=120), "needs no server")
    finally:
        recorded.close()
        mine.close()


@pytest.fixture(scope="module")
def demonstrations(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("demonstrations") / "set"
    completed = wield("demonstrate", "indexing", "--out", out, "--documents", "500", "--queries", "3",
                      "--episodes", "1", "--quiet")
    assert completed.returncode == 0, completed.stderr
    return out


def test_reproduce_reads_a_demonstration_dataset_only_with_its_recorded_sha256(finished_run, demonstrations,
                                                                             tmp_path):
    """config.json's demonstrations path is read only when the record's demonstrations.json holds its sha256
    and the dataset there has it; a FIFO in the dataset is refused, not waited on. Before the fix reproduce
    pretrained on whatever the path held."""
    run = _copy_record(finished_run, tmp_path)
    _edit_config(run, agent="dqfd", demonstrations=str(demonstrations))
    _refused(wield("reproduce", run, timeout=120), "demonstrations", "no sha256")

    (run / "demonstrations.json").write_text(json.dumps({"sha256": "0" * 64, "path": str(demonstrations)}))
    _set_checksum(run, "demonstrations.json")
    _refused(wield("reproduce", run, timeout=120), "demonstrations", "not the dataset this run pretrained on")

    recorded = json.loads((demonstrations / "manifest.json").read_text())["content_sha256"]
    (run / "demonstrations.json").write_text(json.dumps({"sha256": recorded, "path": str(demonstrations)}))
    _set_checksum(run, "demonstrations.json")
    config = json.loads((run / "config.json").read_text())
    from case_studies.indexing.reproduce import _check_demonstrations
    from wield.workflows import RunRecord

    _check_demonstrations(RunRecord(run), config)  # the run's own dataset passes

    planted = tmp_path / "planted"
    shutil.copytree(demonstrations, planted)
    (planted / "arrays.npz").unlink()
    os.mkfifo(planted / "arrays.npz")
    _edit_config(run, demonstrations=str(planted))
    _refused(wield("reproduce", run, timeout=60), "demonstrations", "not the dataset")


@needs_root
def test_report_and_checkpoint_out_refuse_a_directory_of_another_user(finished_run, victim, sticky, capsys):
    """'wield report --out' and '--evaluate-checkpoint --out' get the ownership check of every other --out:
    a directory of another user (who could swap its files for links) and a planted link are refused, and
    nothing is written. Before the fix both wrote their files into the other user's directory."""
    theirs = sticky / "theirs"
    as_other_user("mkdir", str(theirs))
    for command in (["report", finished_run, "--out", theirs],
                    ["run", "indexing", "--evaluate-checkpoint", finished_run, "--engine", "sqlite",
                     "--repetitions", "1", "--out", theirs]):
        assert_refused(capsys, command, theirs, f"belongs to user '{OTHER_USER}'")
        assert list(theirs.iterdir()) == []
    before = snapshot(victim)
    planted = sticky / "link"
    as_other_user("ln", "-s", str(victim), str(planted))
    assert_refused(capsys, ["report", finished_run, "--out", planted], planted, "symbolic link", OTHER_USER)
    assert snapshot(victim) == before


def test_a_collection_that_is_a_fifo_is_not_a_regular_file(tmp_path):
    fifo = tmp_path / "collection.json"
    os.mkfifo(fifo)
    line = _refused(wield("run", "indexing", "--collection", fifo, "--out", tmp_path / "run", *QUICK, timeout=60),
                    "collection", "FIFO", "not a regular file")
    assert "no such file" not in line

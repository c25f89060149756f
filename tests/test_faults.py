"""Fault injection with real processes, real signals and real files: SIGTERM, kill -9 of a whole run or of
only the parent of worker processes, Ctrl-C on the process group, two runs released into one directory at
once, a killed database build, a damaged or empty database cache, a full disk and read-only directories,
'wield db start' killed during initdb and before its server was recorded, and two starts at once.

After every fault an experiment resumes with nothing lost, and its results are identical, under the
deterministic work metric, to those of one uninterrupted run of the same plan (``baseline``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from case_studies.indexing.reproduce import DETERMINISTIC
from wield.cli import main
from wield.workflows import RunRecord

FAULT = ["--documents", "3000", "--queries", "6", "--episodes", "4", "--repetitions", "1", "--quiet"]
QUICK = ["--documents", "3000", "--queries", "6", "--episodes", "2", "--repetitions", "1", "--quiet"]
TRIALS = 2


def plan(trials: int = TRIALS) -> list[str]:
    return ["run", "indexing", "--class", "C2", "--trials", str(trials)]


def wield(*args: object) -> list[str]:
    return [sys.executable, "-m", "wield.cli", *map(str, args)]


def _as_from_a_terminal() -> None:
    """Ctrl-C reaches a command started from a terminal. A shell that ran these tests in the background
    ignores SIGINT, and the ignoring is inherited: the command under test must not inherit it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(command: list[str], **kwargs) -> subprocess.Popen:
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=_as_from_a_terminal, **kwargs)


def wait_for(condition, process: subprocess.Popen | None = None, timeout: float = 300.0) -> None:
    deadline = time.time() + timeout
    while not condition():
        if process is not None and process.poll() is not None:
            raise AssertionError(f"the process ended early ({process.returncode}): {process.stderr.read()}")
        if time.time() > deadline:
            raise AssertionError("timed out waiting for the fault's moment")
        time.sleep(0.05)


def summaries(directory: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(directory.glob("trials/trial-*/summary.json"))]


def work_view(directory: Path, trials: int = TRIALS) -> dict:
    """Everything the work metric determines, per trial."""
    return {s["trial"]: {"transitions": s["transitions"],
                         "methods": {m: {c: v.get(c) for c in DETERMINISTIC} for m, v in s["methods"].items()}}
            for s in summaries(directory) if s["trial"] < trials}


def children_of(pid: int) -> list[int]:
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":\t", 1) for line in status.read_text().splitlines() if ":\t" in line)
        except OSError:
            continue
        if fields.get("PPid", "").strip() == str(pid):
            found.append(int(status.parent.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def describe_processes(pids: list[int]) -> dict[int, str]:
    """What each live process is doing (state, kernel wait channel, command), for a failure message."""
    described = {}
    for pid in pids:
        if alive(pid):
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
                wchan = Path(f"/proc/{pid}/wchan").read_text()
                command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:200]
            except OSError:
                continue
            described[pid] = f"state {state}, waiting in {wchan or '-'}: {command}"
    return described


def trial_states(directory: Path) -> dict[str, str]:
    return {path.name: RunRecord(path).state for path in sorted(directory.glob("trials/trial-*"))}


def assert_nothing_running_or_discarded(directory: Path) -> None:
    """No trial is left "running", and no trial that completed lacks its summary (none is discarded)."""
    for name, state in trial_states(directory).items():
        assert state in ("interrupted", "complete"), (name, state)
        if state == "complete":
            assert (directory / "trials" / name / "summary.json").exists(), f"{name} finished but was discarded"


@pytest.fixture(scope="module")
def baseline(tmp_path_factory) -> dict:
    """The plan run once without any fault."""
    out = tmp_path_factory.mktemp("baseline") / "experiment"
    assert main([*plan(), "--out", str(out), *FAULT]) == 0
    return work_view(out)


def test_sigterm_marks_the_run_interrupted_and_the_experiment_resumes_identically(tmp_path, baseline):
    out = tmp_path / "term"
    process = start(wield(*plan(2), "--out", out, *FAULT))
    first = out / "trials/trial-000/summary.json"
    wait_for(lambda: first.exists() and (out / "trials/trial-001/episodes.csv").exists(), process)
    process.send_signal(signal.SIGTERM)  # what timeouts and job schedulers send
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 143, stderr
    assert "Traceback" not in stderr and stderr.strip().splitlines()[-1].startswith("wield: interrupted (SIGTERM)")
    assert_nothing_running_or_discarded(out)
    status = json.loads((out / "trials/trial-001/status.json").read_text())
    assert status["status"] == "interrupted" and status["signal"] == "SIGTERM"
    finished = first.read_text()
    assert main([*plan(2), "--out", str(out), *FAULT]) == 0
    assert first.read_text() == finished
    assert work_view(out, 2) == {t: v for t, v in baseline.items() if t < 2}


def test_sigterm_of_a_single_run_says_that_it_does_not_resume_in_place(tmp_path):
    out = tmp_path / "single"
    process = start(wield("run", "indexing", "--out", out, *FAULT))
    wait_for(lambda: (out / "episodes.csv").exists(), process)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 143, stderr
    last = stderr.strip().splitlines()[-1]
    assert "does not resume in place" in last and "another --out" in last and str(out) in last
    assert RunRecord(out).state == "interrupted"


def test_kill_9_is_reported_stale_leaves_no_database_copy_and_resumes_identically(tmp_path, baseline, capsys):
    out, scratch = tmp_path / "killed", tmp_path / "tmp"
    scratch.mkdir()
    process = start(wield(*plan(2), "--out", out, *FAULT), env={**os.environ, "TMPDIR": str(scratch)})
    wait_for(lambda: (out / "trials/trial-000/summary.json").exists()
             and (out / "trials/trial-001/episodes.csv").exists(), process)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert trial_states(out)["trial-001"] == "stale"  # says running, but its process is gone
    # Runs work on private copies of the database in their own memory: a killed one leaves none on disk.
    assert not list(scratch.glob("wield-*.sqlite"))
    # Every reader says so instead of showing it as live or failing with a traceback.
    assert main(["classify", str(out)]) == 0
    assert "stale" in capsys.readouterr().out
    assert main(["report", str(out), "--out", str(tmp_path / "report")]) == 0
    assert "process is gone" in capsys.readouterr().out
    assert "stale" in (tmp_path / "report" / "report.md").read_text()
    assert main(["reproduce", str(out / "trials/trial-001")]) == 2
    assert "its process is gone" in capsys.readouterr().err
    # The next run moves the partial trial aside and reruns it.
    assert main([*plan(2), "--out", str(out), *FAULT]) == 0
    assert list((out / "trials/.incomplete").iterdir())
    assert work_view(out, 2) == {t: v for t, v in baseline.items() if t < 2}


def _start_with_workers(out: Path) -> tuple[subprocess.Popen, list[int]]:
    process = start(wield(*plan(), "--workers", 2, "--out", out, *FAULT))
    wait_for(lambda: (out / "trials/trial-000/episodes.csv").exists()
             and (out / "trials/trial-001/episodes.csv").exists(), process)
    workers = children_of(process.pid)
    assert len(workers) >= 2
    return process, workers


def test_killing_only_the_parent_of_workers_leaves_no_orphans_and_loses_nothing(tmp_path, baseline):
    out = tmp_path / "parent-killed"
    process, workers = _start_with_workers(out)
    os.kill(process.pid, signal.SIGKILL)  # the parent only: its workers are not signalled by anyone
    process.wait()
    try:
        wait_for(lambda: not any(alive(pid) for pid in workers), timeout=120)  # they die with their parent
    except AssertionError:
        raise AssertionError(f"workers outlived their parent: {describe_processes(workers)}") from None
    assert_nothing_running_or_discarded(out)
    kept = {path: path.read_text() for path in out.glob("trials/trial-*/summary.json")}
    assert main([*plan(), "--out", str(out), *FAULT]) == 0
    assert all(path.read_text() == text for path, text in kept.items())  # finished trials were kept
    assert work_view(out) == baseline


def test_ctrl_c_on_the_process_group_with_workers_stops_everything_and_resumes(tmp_path, baseline):
    out = tmp_path / "ctrl-c"
    process, workers = _start_with_workers(out)
    os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr and stderr.strip().splitlines()[-1].startswith("wield: interrupted (SIGINT)")
    wait_for(lambda: not any(alive(pid) for pid in workers), timeout=60)
    assert_nothing_running_or_discarded(out)
    assert main([*plan(), "--out", str(out), *FAULT]) == 0
    assert work_view(out) == baseline


RELEASE = """import pathlib, sys, time
from wield.cli import main
pathlib.Path(sys.argv[1]).touch()
while not pathlib.Path(sys.argv[2]).exists():
    time.sleep(0.001)
sys.exit(main(sys.argv[3:]))
"""


def test_two_runs_released_together_into_one_directory_one_runs_the_other_is_refused(tmp_path):
    """Both imported and waiting, then released at the same instant: one claims the directory, the other is
    refused with a clear error; the record is whole (not two runs interleaved)."""
    run_dir, experiment_dir, go = tmp_path / "run", tmp_path / "experiment", tmp_path / "go"
    commands = [["run", "indexing", "--out", str(run_dir), *QUICK]] * 2 + \
               [["run", "indexing", "--class", "C1", "--trials", "1", "--out", str(experiment_dir), *QUICK]] * 2
    processes = [start([sys.executable, "-c", RELEASE, str(tmp_path / f"ready-{i}"), str(go), *command])
                 for i, command in enumerate(commands)]
    wait_for(lambda: all((tmp_path / f"ready-{i}").exists() for i in range(len(commands))), timeout=300)
    go.touch()
    results = [(p.wait(timeout=600), p.stderr.read()) for p in processes]
    for _, stderr in results:
        assert "Traceback" not in stderr, stderr
    run_codes = sorted(code for code, _ in results[:2])
    assert run_codes == [0, 2], results[:2]
    refused = next(stderr for code, stderr in results[:2] if code == 2)
    assert "is writing into this run directory right now" in refused or "already holds a run" in refused
    assert RunRecord(run_dir).status == "complete"
    assert len(RunRecord(run_dir).read_episodes()) == 2  # one run's episodes, not two interleaved
    experiment_codes = sorted(code for code, _ in results[2:])
    assert experiment_codes in ([0, 2], [0, 0]), results[2:]  # [0, 0]: the second came after, found it done
    if experiment_codes == [0, 2]:
        assert "is writing into this experiment directory right now" in results[2 + [c for c, _ in
                                                                                      results[2:]].index(2)][1]
    assert not (experiment_dir / "trials" / ".incomplete").exists()  # the live trial was never moved aside
    assert len(summaries(experiment_dir)) == 1


BUILD = """import sys
from case_studies.indexing.engines.sqlite import SQLiteEngine
from workloads import generate_imdb_collection
SQLiteEngine.base_database(generate_imdb_collection(int(sys.argv[2]), 5), sys.argv[1])
"""


def test_a_database_build_killed_midway_leaves_nothing_the_next_run_keeps(tmp_path, small_collection):
    from case_studies.indexing.engines.sqlite import SQLiteEngine

    cache = tmp_path / "cache"
    process = start([sys.executable, "-c", BUILD, str(cache), "400000"])
    wait_for(lambda: list(cache.glob(".loading-*.sqlite")), process)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert list(cache.glob(f".loading-{process.pid}-*.sqlite"))  # the half-built file of the dead process
    engine = SQLiteEngine.for_collection(small_collection, tmp_path / "work", cache_dir=cache)
    engine.close()
    assert not list(cache.glob(".loading-*.sqlite"))
    assert not list((tmp_path / "work").iterdir())  # the private copy went with the engine


def test_a_damaged_or_empty_database_cache_is_rebuilt_and_gives_the_same_results(tmp_path, capsys):
    cache = tmp_path / "cache"

    def run(name: str) -> dict:
        assert main(["run", "indexing", "--out", str(tmp_path / name), "--cache-dir", str(cache), "--json",
                     *QUICK]) == 0
        methods = json.loads(capsys.readouterr().out)["methods"]
        return {m: {c: v.get(c) for c in DETERMINISTIC} for m, v in methods.items()}

    first = run("first")
    (base,) = cache.glob("sqlite-*.sqlite")
    with sqlite3.connect(base) as conn:  # half the rows gone: still a valid database, but not this one
        table = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchone()[0]
        conn.execute(f"DELETE FROM {table} WHERE rowid % 2 = 0")
    assert run("after-damage") == first
    with sqlite3.connect(base) as conn:
        assert conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 3000  # rebuilt
    base.write_bytes(b"")  # a 0-byte cache file
    assert run("after-truncation") == first
    assert base.stat().st_size > 0


def _assert_failed_cleanly(completed: subprocess.CompletedProcess, out: Path, *words: str) -> None:
    assert completed.returncode == 3, completed.stderr  # a system failure (the machine), not a usage error
    assert "Traceback" not in completed.stderr, completed.stderr
    last = completed.stderr.strip().splitlines()[-1]
    assert last.startswith("wield: error:") and all(word in last for word in words), last
    status = json.loads((out / "status.json").read_text())
    assert status["status"] == "failed", status  # not left "running"


def test_a_file_size_limit_fails_the_run_with_one_clear_line(tmp_path):
    import resource

    out = tmp_path / "limited"

    def limit() -> None:  # the cached database (~250 KB) fits; its private copy with indexes does not
        resource.setrlimit(resource.RLIMIT_FSIZE, (400_000, 400_000))

    completed = subprocess.run(wield("run", "indexing", "--out", out, "--cache-dir", tmp_path / "cache", *QUICK),
                               capture_output=True, text=True, preexec_fn=limit, timeout=600)
    _assert_failed_cleanly(completed, out, "ulimit")
    assert (out / "config.json").exists()  # what was recorded before stays


@pytest.fixture
def small_tmpfs(mount_tmpfs):
    """A 3 MB tmpfs (root only, where mounting is allowed); skipped elsewhere."""
    return mount_tmpfs("3m")


def test_a_full_disk_fails_the_run_with_one_clear_line_and_marks_it_failed(tmp_path, small_tmpfs):
    out = small_tmpfs / "run"
    filler = small_tmpfs / "filler"
    with open(filler, "wb") as handle:  # leave ~200 KB: the run starts, model.pt (~470 KB) does not fit
        handle.write(b"\0" * (3 * 1024 * 1024 - 200 * 1024))
    completed = subprocess.run(wield("run", "indexing", "--out", out, "--cache-dir", tmp_path / "cache", *QUICK),
                               capture_output=True, text=True, timeout=600)
    _assert_failed_cleanly(completed, out, "No space left on device", "disk is full")
    assert not list(out.glob(".*.tmp"))


READ_ONLY = """import contextlib, io, json, sys
from wield.cli import main
results = []
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    results.append([code, err.getvalue()])
print(json.dumps(results))
"""


@pytest.fixture
def read_only(tmp_path):
    """A directory no one may write into: mode 0555, and for root (who ignores modes) a read-only bind
    mount; skipped where root may not mount."""
    directory = tmp_path / "read-only"
    directory.mkdir()
    directory.chmod(0o555)
    mounted = False
    if os.geteuid() == 0:
        bind = subprocess.run(["mount", "--bind", str(directory), str(directory)], capture_output=True)
        if bind.returncode != 0:
            pytest.skip("root ignores permission bits and may not mount a read-only directory here")
        mounted = True
        if subprocess.run(["mount", "-o", "remount,bind,ro", str(directory)], capture_output=True).returncode:
            subprocess.run(["umount", "-l", str(directory)], check=False)
            pytest.skip("root ignores permission bits and may not remount a directory read-only here")
    yield directory
    if mounted:
        subprocess.run(["umount", "-l", str(directory)], check=False)
    directory.chmod(0o755)


def test_read_only_out_cache_and_report_directories_are_clear_errors(tmp_path, read_only):
    """A read-only --out parent, cache and report directory each give one clear line, no traceback, and
    nothing half-written (a run whose cache cannot be written is marked failed, not left running)."""
    writable = tmp_path / "writable"
    assert main(["run", "indexing", "--out", str(writable / "finished"), "--cache-dir", str(writable / "cache"),
                 *QUICK]) == 0
    argvs = [["run", "indexing", "--out", str(read_only / "run"), "--cache-dir", str(writable / "cache"), *QUICK],
             ["run", "indexing", "--out", str(writable / "run"), "--cache-dir", str(read_only), *QUICK],
             ["report", str(writable / "finished"), "--out", str(read_only / "report")]]
    completed = subprocess.run([sys.executable, "-c", READ_ONLY, json.dumps(argvs)], capture_output=True,
                               text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr
    # --out and the report's --out are checked as options before anything runs (a usage error, 2); the cache
    # is found read-only when it is written (a failure of the machine, 3)
    for (code, stderr), expected in zip(json.loads(completed.stdout), (2, 3, 2)):
        lines = stderr.strip().splitlines()
        assert code == expected and "Traceback" not in stderr and len(lines) == 1, stderr
        assert any(word in lines[0] for word in ("Permission denied", "Read-only file system")), lines[0]
    assert not any(read_only.iterdir())
    assert RunRecord(writable / "run").status == "failed"


def test_reproduce_never_matches_a_damaged_record(tmp_path, capsys):
    """A truncated schedule.json or model.pt is found by the checksums written when the run finished, and,
    in a record without them, by comparing with the rerun (schedules) or by failing to load (model)."""
    run = tmp_path / "run"
    assert main(["run", "indexing", "--out", str(run), *QUICK]) == 0
    capsys.readouterr()
    for name, keep in (("schedule.json", 500), ("model.pt", 4096)):
        for checksums in (True, False):
            damaged = tmp_path / f"{name}-{checksums}"
            shutil.copytree(run, damaged, ignore=shutil.ignore_patterns(".wield.lock"))
            (damaged / name).write_bytes((damaged / name).read_bytes()[:keep])
            if not checksums:
                (damaged / "checksums.json").unlink()
            code = main(["reproduce", str(damaged)])
            printed = capsys.readouterr()
            assert code != 0 and "match exactly" not in printed.out, (name, checksums, printed)
            assert name in printed.out + printed.err


# -- how the local pool starts its workers ---------------------------------------------------------------

def _db_directory() -> Path:
    """A directory for a 'wield db' server under the temp directory, reachable by the server's user."""
    import tempfile

    parent = Path(tempfile.mkdtemp(prefix="wield-pg-fault-"))
    parent.chmod(0o755)
    return parent / "server"


def _connects(uri: str) -> bool:
    import psycopg

    with psycopg.connect(uri, connect_timeout=10) as conn:
        return conn.execute("SELECT current_user").fetchone() == ("wield",)


def test_db_start_killed_during_initdb_starts_again(capsys):
    """Issue 37.8: 'wield db start' killed (kill -9) while initdb ran left a half-made cluster, and the
    directory never started again (nothing said to use --remove). initdb now writes into data.init, renamed
    when complete; the next start waits for the orphaned initdb (it still holds the directory's lock),
    discards its half cluster and initialises afresh."""
    directory = _db_directory()
    try:
        process = start(wield("db", "start", "postgres", "--dir", directory))
        wait_for(lambda: (directory / "data.init").exists(), process, timeout=120)
        os.kill(process.pid, signal.SIGKILL)  # the command alone: its initdb runs on, orphaned
        process.wait()
        assert not (directory / "data" / "PG_VERSION").exists()  # no cluster there until one is complete
        assert main(["db", "start", "postgres", "--dir", str(directory)]) == 0
        uri = capsys.readouterr().out.strip()
        assert _connects(uri) and not (directory / "data.init").exists()
    finally:
        assert main(["db", "stop", "--dir", str(directory), "--remove"]) == 0
        shutil.rmtree(directory.parent, ignore_errors=True)
    assert not directory.exists()


def _kill_once_the_server_is_up_but_unrecorded(directory: Path) -> tuple[int, int]:
    """'wield db start' killed (kill -9, injected at that very point) after its postmaster came up, before
    the experiment role was made and server.json written; the postmaster's pid and port."""
    from case_studies.indexing.engines.postgres_server import FAULT_KILL_BEFORE_RECORD

    recorded = (directory / "server.json").read_text() if (directory / "server.json").exists() else None
    killed = subprocess.run(wield("db", "start", "postgres", "--dir", directory), capture_output=True, text=True,
                            timeout=120, env={**os.environ, FAULT_KILL_BEFORE_RECORD: "1"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    lines = (directory / "data" / "postmaster.pid").read_text().splitlines()
    postmaster, port = int(lines[0]), int(lines[3])
    assert alive(postmaster)
    assert ((directory / "server.json").read_text() if (directory / "server.json").exists() else None) == recorded
    return postmaster, port


def test_db_start_killed_before_server_json_leaves_no_stray_server(capsys):
    """Issue 37.8: killed after the postmaster started but before server.json was written, a stray server
    kept listening and 'db stop --remove' reported success and deleted its directory under it. Stop finds
    it by data/postmaster.pid and stops it before removing; a new start stops it and starts afresh."""
    directory = _db_directory()
    try:
        stray, _ = _kill_once_the_server_is_up_but_unrecorded(directory)  # the first start: no role yet
        assert main(["db", "status", "--dir", str(directory)]) == 1
        capsys.readouterr()
        assert main(["db", "start", "postgres", "--dir", str(directory)]) == 0  # resumes
        uri = capsys.readouterr().out.strip()
        assert not alive(stray) and _connects(uri)
        assert main(["db", "stop", "--dir", str(directory)]) == 0
        capsys.readouterr()

        stray, port = _kill_once_the_server_is_up_but_unrecorded(directory)  # server.json names an old port
        assert main(["db", "status", "--dir", str(directory)]) == 1  # not taken for the recorded server
        assert main(["db", "stop", "--dir", str(directory), "--remove"]) == 0
        assert not alive(stray) and not directory.exists()
        import socket

        with socket.socket() as probe:  # nothing listens on the stray's port any more
            assert probe.connect_ex(("127.0.0.1", port)) != 0
    finally:
        main(["db", "stop", "--dir", str(directory), "--remove"])
        shutil.rmtree(directory.parent, ignore_errors=True)


def test_a_second_db_start_on_a_directory_being_started_is_refused_in_one_line(capsys):
    """Issue 37.14: two 'wield db start' on one directory at once raced (the loser retried about 10 s and
    failed with a 19-line error). The first holds the directory's lock from before initdb until its server is
    recorded; a second start, and a 'stop --remove', are refused in one line meanwhile, never run under it.

    The start releases the lock when its work is done, a moment before its process exits (about 0.1 s, more
    under load): a removal that gets the lock then is correct, and must find the finished server."""
    directory = _db_directory()
    try:
        first = start(wield("db", "start", "postgres", "--dir", directory))
        wait_for(lambda: (directory / "data.init").exists(), first, timeout=120)  # the first is in initdb
        second = main(["db", "start", "postgres", "--dir", str(directory)])
        out, err = capsys.readouterr()
        if second == 2:  # refused while the first still works
            err = err.strip().splitlines()
            assert len(err) == 1 and "another 'wield db start' or 'wield db stop'" in err[0], err
            assert f"process {first.pid}" in err[0]
        else:  # under load the first can finish (initdb, server, record) before the second asks for the lock:
            # then the second finds the first's server running and prints its URI, as a start on a started one
            assert second == 0 and out.startswith("postgresql://") and (directory / "server.json").exists(), \
                (second, out, err)
        removed = main(["db", "stop", "--dir", str(directory), "--remove"])
        refusal = capsys.readouterr().err.strip().splitlines()
        _, stderr = first.communicate(timeout=120)
        assert first.returncode == 0, stderr  # nothing was removed under it
        if removed == 2:  # refused while the first still worked: its server is there, recorded
            assert len(refusal) == 1 and "another 'wield db start' or 'wield db stop'" in refusal[0], refusal
            assert (directory / "server.json").exists()
        else:  # the first had recorded its server and let go of the lock: removed after it, whole
            assert removed == 0 and not directory.exists(), (removed, refusal)
    finally:
        main(["db", "stop", "--dir", str(directory), "--remove"])
        shutil.rmtree(directory.parent, ignore_errors=True)


def test_the_pool_forks_only_without_other_threads_and_a_bad_start_method_is_named(monkeypatch):
    import threading

    from wield.errors import ConfigError
    from wield.workflows.executors import ProcessPoolTrialExecutor, start_method

    monkeypatch.delenv("WIELD_START_METHOD", raising=False)
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, daemon=True)
    thread.start()
    try:
        assert start_method() == "spawn"  # forking beside a running thread could copy a lock it holds
    finally:
        stop.set()
        thread.join()
    if sys.platform.startswith("linux") and threading.active_count() == 1:
        assert start_method() == "fork"
    monkeypatch.setenv("WIELD_START_METHOD", "spawn")
    assert start_method() == "spawn"
    monkeypatch.setenv("WIELD_START_METHOD", "thread")
    with pytest.raises(ConfigError, match="WIELD_START_METHOD.*'thread'.*allowed: 'fork'"):
        ProcessPoolTrialExecutor(2)


_HOLD_AND_FORK = """
import os, sys, time
from wield.workflows.ownership import DirectoryLock
lock = DirectoryLock.acquire(sys.argv[1])
child = os.fork()
if child == 0:
    print("child holds:", lock.held, file=sys.stderr, flush=True)  # not stdout, where its parent writes
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1), os.dup2(devnull, 2)  # let the test read its parent's output without waiting
    time.sleep(30)
    os._exit(0)
print(child, flush=True)
time.sleep(0.5)
os._exit(0)  # dies holding the claim, as under kill -9; its forked child lives on
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_neither_keeps_nor_releases_its_parents_directory_lock(tmp_path):
    from wield.workflows.ownership import DirectoryLock, is_claimed

    # A forked child cannot release its parent's claim (its copy is closed, not unlocked) ...
    lock = DirectoryLock.acquire(tmp_path / "mine")
    child = os.fork()
    if child == 0:
        os._exit(0 if not lock.held else 1)
    assert os.waitpid(child, 0)[1] == 0
    assert lock.held and is_claimed(tmp_path / "mine")
    lock.release()
    # ... and a parent that dies frees its claim at once, though its forked child lives on.
    out = subprocess.run([sys.executable, "-c", _HOLD_AND_FORK, str(tmp_path / "theirs")], capture_output=True,
                         text=True, timeout=60)
    lines = out.stdout.split("\n")
    grandchild = int(next(line for line in lines if line.isdigit()))
    try:
        assert "child holds: False" in out.stderr
        assert alive(grandchild)
        assert not is_claimed(tmp_path / "theirs")
    finally:
        os.kill(grandchild, signal.SIGKILL)


def test_compare_claims_its_directory_against_a_second_comparison_and_a_run(tmp_path, capsys):
    """Issue 37.13: two comparisons with different methods into one --out both succeeded (comparison.json
    kept one's methods), and a run and a comparison into one directory mixed it. A comparison claims its
    directory like an experiment: while one runs, a second (or a run) is refused; afterwards a run into a
    comparison's directory, or a comparison into an experiment's, is refused too."""
    out = tmp_path / "compared"
    compare = ["compare", "indexing", "--class", "C2", "--trials", "1", "--out", out]
    process = start(wield(*compare, "--methods", "dqn", *FAULT))
    try:
        wait_for(lambda: (out / "dqn" / "experiment.json").exists(), process)
        assert main([*map(str, compare), "--methods", "random", *QUICK]) == 2
        assert "is writing into this comparison directory right now" in capsys.readouterr().err
        assert main([*plan(1), "--out", str(out), *QUICK]) == 2
        refused = capsys.readouterr().err
        assert "is writing into this" in refused or "holds a comparison of methods" in refused
    finally:
        _, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr
    assert not (out / "random").exists() and not (out / "experiment.json").exists()
    assert [row["method"] for row in json.loads((out / "comparison.json").read_text())["methods"]] == ["dqn"]
    assert main([*plan(1), "--out", str(out), *QUICK]) == 2
    assert "holds a comparison of methods" in capsys.readouterr().err
    experiment = tmp_path / "experiment"
    assert main([*plan(1), "--out", str(experiment), *QUICK]) == 0
    capsys.readouterr()
    assert main(["compare", "indexing", "--class", "C2", "--trials", "1", "--out", str(experiment),
                 "--methods", "random", *QUICK]) == 2
    assert "holds an experiment" in capsys.readouterr().err
    assert not (experiment / "random").exists() and not (experiment / "comparison.json").exists()


def test_a_kill_between_a_trials_summary_and_its_complete_status_is_repaired_by_the_resume(tmp_path, capsys):
    """Issue 37.9: killed (kill -9, injected at that very point) after a trial's summary.json was written
    and before its record was marked "complete", the trial counted as finished but said "running" forever:
    'wield reproduce' refused it and resuming never repaired it. The resume marks it complete, keeping its
    summary, and the trial then reproduces exactly."""
    from wield.workflows.trial import FAULT_KILL_AFTER_SUMMARY

    out = tmp_path / "experiment"
    killed = subprocess.run(wield(*plan(2), "--out", out, *QUICK), capture_output=True, text=True, timeout=300,
                            env={**os.environ, FAULT_KILL_AFTER_SUMMARY: "1"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    trial = out / "trials" / "trial-000"
    finished = (trial / "summary.json").read_text()
    assert RunRecord(trial).state == "stale" and not (out / "trials" / "trial-001").exists()
    assert main(["reproduce", str(trial)]) == 2
    assert "says running but its process is gone" in capsys.readouterr().err
    assert main([*plan(2), "--out", str(out), *QUICK]) == 0
    assert (trial / "summary.json").read_text() == finished  # kept, not rerun
    assert trial_states(out) == {"trial-000": "complete", "trial-001": "complete"}
    assert not (out / "trials" / ".incomplete").exists()
    capsys.readouterr()
    assert main(["reproduce", str(trial)]) == 0
    assert "match exactly" in capsys.readouterr().out

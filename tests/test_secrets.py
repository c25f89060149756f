"""No secret leaks: the passwords of a 'wield db' server appear in no file that 'wield db', a run and an
experiment write, in no command line (of wield or of the server's processes) and in no output; they live
only in mode-0600 password files inside the server's mode-0700 directory, and experiments connect as a role
that is not a superuser."""

from __future__ import annotations

import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg

from case_studies.indexing.engines.postgres_server import remove_server
from wield.cli import main

QUICK = ["--documents", "3000", "--queries", "6", "--episodes", "2", "--repetitions", "1", "--quiet"]


def wield(*args: object) -> list[str]:
    return [sys.executable, "-m", "wield.cli", *map(str, args)]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def _server_processes(directory: Path) -> list[int]:
    """The postmaster of ``directory`` and every process it started (backends, background workers)."""
    postmaster = [int(p.parent.name) for p in Path("/proc").glob("[0-9]*/cmdline")
                  if f"{directory}/data" in _cmdline(int(p.parent.name))]
    children = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            ppid = next(line.split()[1] for line in status.read_text().splitlines() if line.startswith("PPid:"))
        except (OSError, StopIteration):
            continue
        if int(ppid) in postmaster:
            children.append(int(status.parent.name))
    return postmaster + children


def test_no_password_in_any_file_command_line_or_output(tmp_path, capsys, isolated_cache):
    server = Path(tempfile.mkdtemp(prefix="wield-pg-secrets-"))  # under /tmp: reachable by the server's user
    outputs, cmdlines = [], []
    try:
        assert main(["db", "start", "postgres", "--dir", str(server)]) == 0
        started = capsys.readouterr()
        uri = started.out.strip()
        assert uri.startswith("postgresql://wield@127.0.0.1:") and "passfile=" in uri  # no password in it
        assert "pgpass" in started.err  # says where the password is
        outputs += [started.out, started.err]
        run_dir = tmp_path / "run"
        process = subprocess.Popen(wield("run", "indexing", "--engine", "postgres", "--server-dir", server,
                                         "--out", run_dir, *QUICK), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True)
        while process.poll() is None:  # sample every command line while the run talks to the server
            cmdlines += [_cmdline(pid) for pid in [process.pid, *_server_processes(server)]]
            time.sleep(0.25)
        stdout, stderr = process.communicate()
        assert process.returncode == 0, stderr
        outputs += [stdout, stderr]
        assert any("postgres:" in line and "wield" in line for line in cmdlines)  # a backend was seen
        experiment = tmp_path / "experiment"
        assert main(["run", "indexing", "--class", "C1", "--trials", "1", "--engine", "postgres", "--server-dir",
                     str(server), "--out", str(experiment), *QUICK]) == 0
        assert main(["db", "status", "--dir", str(server)]) == 0
        outputs += list(capsys.readouterr())
        with psycopg.connect(uri) as conn:  # the experiments' role cannot run programs on the server
            assert conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone() == (False,)
        assert main(["db", "stop", "--dir", str(server)]) == 0
        outputs += list(capsys.readouterr())

        passfiles = [server / "pgpass", server / "superuser.pgpass"]
        passwords = [path.read_text().strip().split(":", 4)[4] for path in passfiles]
        assert all(len(password) >= 32 for password in passwords)
        assert stat.S_IMODE(server.stat().st_mode) == 0o700
        assert all(stat.S_IMODE(path.stat().st_mode) == 0o600 for path in passfiles)
        files = [p for root in (server, run_dir, experiment, isolated_cache) for p in root.rglob("*")
                 if p.is_file() and p not in passfiles]
        assert len(files) > 30 and (server / "server.log").exists() and (run_dir / "config.json").exists()
        for password in passwords:
            for path in files:
                assert password.encode() not in path.read_bytes(), f"a password is in {path}"
            for text in outputs + cmdlines:
                assert password not in text
    finally:
        remove_server(server)

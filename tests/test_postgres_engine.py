"""PostgreSQL specifics: the server command, bad URIs, a server stopping mid-run, the hypopg what-if mode,
runs on PostgreSQL from the command line and a checkpoint evaluated on another engine."""

from __future__ import annotations

import json
import tempfile
import threading
import time
from dataclasses import asdict
from pathlib import Path

import pytest

from case_studies.indexing.build import build_indexing_task
from case_studies.indexing.run import IndexingRunConfig
from case_studies.indexing.index_spec import IndexSpec
from case_studies.indexing.engines.postgres import PostgresEngine
from wield.cli import main
from wield.errors import SystemFailure
from case_studies.indexing.engines.postgres_server import remove_server, start_server, stop_server
from wield.workflows import RunRecord, run_trial
from workloads import Predicate, Query

SMALL = ["--documents", "3000", "--queries", "6", "--episodes", "3", "--repetitions", "1", "--quiet"]


@pytest.fixture(scope="module")
def server_dir():
    """A server of this module's own, which tests may stop (the session's server stays up)."""
    directory = Path(tempfile.mkdtemp(prefix="wield-pg-stoppable-"))
    yield directory
    remove_server(directory)


def test_db_command_starts_reports_and_stops_a_server(tmp_path, capsys):
    directory = Path(tempfile.mkdtemp(prefix="wield-pg-cli-"))
    try:
        assert main(["db", "start", "postgres", "--dir", str(directory)]) == 0
        uri = capsys.readouterr().out.strip()
        assert uri.startswith("postgresql://wield@127.0.0.1:") and f"passfile={directory}/pgpass" in uri
        assert main(["db", "start", "postgres", "--dir", str(directory)]) == 0  # already running: same server
        assert capsys.readouterr().out.strip() == uri
        assert main(["db", "status", "--dir", str(directory)]) == 0 and uri in capsys.readouterr().out
        assert main(["db", "stop", "--dir", str(directory)]) == 0
        assert main(["db", "status", "--dir", str(directory)]) == 1 and "stopped" in capsys.readouterr().out
        assert main(["db", "stop", "--dir", str(directory), "--remove"]) == 0
        assert not directory.exists()
        assert main(["db", "stop", "--dir", str(tmp_path / "never")]) == 2
        assert "no server was started" in capsys.readouterr().err
    finally:
        remove_server(directory)


def test_missing_wrong_and_unreachable_uris_are_clear_errors(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "indexing", "--engine", "postgres", "--out", str(out), *SMALL]) == 2
    assert "needs the server's URI" in capsys.readouterr().err and not out.exists()
    assert main(["run", "indexing", "--engine", "postgres", "--uri", "mongodb://127.0.0.1/x", *SMALL]) == 2
    assert "postgresql://" in capsys.readouterr().err
    assert main(["run", "indexing", "--engine", "sqlite", "--whatif", *SMALL]) == 2
    assert "--engine postgres" in capsys.readouterr().err
    with_password = "postgresql://wield:secret@127.0.0.1:1/postgres"
    assert main(["run", "indexing", "--engine", "postgres", "--uri", with_password, "--out", str(out), *SMALL]) == 2
    error = capsys.readouterr().err
    assert "holds a password" in error and "PGPASSFILE" in error and "secret" not in error and not out.exists()
    assert main(["run", "indexing", "--uri", with_password, "--out", str(out), *SMALL]) == 2  # SQLite
    error = capsys.readouterr().err
    assert "takes no URI" in error and "secret" not in error
    unreachable = "postgresql://wield@127.0.0.1:1/postgres"
    assert main(["run", "indexing", "--engine", "postgres", "--uri", unreachable, "--out", str(out), *SMALL]) == 3
    assert "cannot connect to PostgreSQL" in capsys.readouterr().err
    assert RunRecord(out).status == "failed" and (out / "config.json").exists()


def test_a_server_stopping_mid_run_fails_clearly_and_keeps_the_record(server_dir, tmp_path, monkeypatch):
    from case_studies.indexing import run as run_module

    uri = start_server(server_dir).uri
    out = tmp_path / "run"
    config = IndexingRunConfig(documents=3000, queries=6, episodes=4, repetitions=1, engine="postgres", uri=uri)
    evaluate = run_module.evaluate_methods

    def stop_before_evaluation(*args, **kwargs):
        stop_server(server_dir, mode="immediate")
        return evaluate(*args, **kwargs)

    monkeypatch.setattr(run_module, "evaluate_methods", stop_before_evaluation)
    with pytest.raises(SystemFailure, match="the server stopped or the connection was lost"):
        run_trial("indexing", asdict(config), config.single_run_seeds(), str(out))
    record = RunRecord(out)
    assert record.status == "failed" and "PostgreSQL" in record.read_json("status.json")["error"]
    assert len(record.read_episodes()) == 4 and record.exists("model.pt")
    assert IndexingRunConfig.from_dict(record.read_json("config.json")).uri == uri


def _private_schemas(directory) -> list[str]:
    from case_studies.indexing.engines.postgres import PRIVATE_SCHEMA
    from case_studies.indexing.engines.postgres_server import server_info, superuser_connection

    with superuser_connection(directory, server_info(directory).port) as conn:
        return [n for (n,) in conn.execute("SELECT nspname FROM pg_namespace") if PRIVATE_SCHEMA.match(n)]


def test_an_experiment_resumes_after_the_server_is_killed_and_restarts_on_another_port(server_dir, tmp_path,
                                                                                       capsys):
    """kill -9 of the postmaster mid-experiment, a restart on a new port, the same command again: the
    experiment resumes (its identity holds no host, port or password), the finished trial is kept, and the
    schema the killed trial left on the server is removed."""
    import os
    import signal

    port = start_server(server_dir).port
    out = tmp_path / "experiment"
    command = ["run", "indexing", "--class", "C2", "--trials", "2", "--engine", "postgres", "--server-dir",
               str(server_dir), "--out", str(out), *SMALL]
    first = out / "trials/trial-000/summary.json"
    second_loaded = out / "trials/trial-001/schedule.json"

    def kill_during_second_trial() -> None:
        deadline = time.time() + 120
        while time.time() < deadline and not (first.exists() and second_loaded.exists()):
            time.sleep(0.01)
        postmaster = int((server_dir / "data" / "postmaster.pid").read_text().split()[0])
        os.kill(postmaster, signal.SIGKILL)

    watcher = threading.Thread(target=kill_during_second_trial)
    watcher.start()
    code = main(command)
    watcher.join()
    assert code == 3 and "PostgreSQL" in capsys.readouterr().err  # a system failure, not a usage error
    finished = first.read_text()
    assert not (out / "trials/trial-001/summary.json").exists()
    assert json.loads((out / "trials/trial-001/status.json").read_text())["status"] == "failed"
    assert start_server(server_dir).port != port  # restarted elsewhere: the recorded URI is out of date
    assert _private_schemas(server_dir) == []  # start removed what the killed trial left
    assert main(command) == 0
    assert first.read_text() == finished  # the finished trial was kept, not rerun
    assert (out / "trials/trial-001/summary.json").exists()
    assert json.loads((out / "classification.json").read_text())["s"] == 2
    assert json.loads((out / "experiment.json").read_text())["config"]["uri"].startswith(
        f"postgresql://wield@127.0.0.1:{start_server(server_dir).port}/")
    assert _private_schemas(server_dir) == []  # every trial dropped its schema


def test_whatif_mode_estimates_without_building(postgres_uri, small_collection):
    engine = PostgresEngine.for_collection(small_collection, postgres_uri, whatif=True)
    try:
        query = Query((Predicate("director_id", "eq", 17),))
        before = engine.run_query(query)
        spec = IndexSpec.of([("director_id", "asc"), ("start_year", "desc")])
        engine.create_index(spec)
        after = engine.run_query(query)
        assert after.work < before.work / 10 and after.indexes_used == (spec.name,)
        assert engine.list_indexes() == [spec] and engine.index_size(spec) > 0
        engine.leave_whatif()
        assert engine.list_indexes() == []  # nothing was built
        real = engine.run_query(query, repetitions=1)
        assert real.indexes_used == () and real.latency_s > 0
    finally:
        engine.close()


def test_work_is_the_same_in_parallel_schemas(postgres_uri, small_collection, small_workload):
    first = build_indexing_task(small_collection, engine="postgres", uri=postgres_uri)
    second = build_indexing_task(small_collection, engine="postgres", uri=postgres_uri)
    try:
        assert first.system.engine.schema != second.system.engine.schema
        for system in (first.system, second.system):
            system.configure([IndexSpec.of([("genre", "asc"), ("start_year", "desc")])])
        assert first.system.measure(small_workload)["costs"] == second.system.measure(small_workload)["costs"]
    finally:
        first.close()
        second.close()


def test_postgres_run_then_its_checkpoint_on_sqlite(postgres_uri, tmp_path, capsys):
    out = tmp_path / "pg"
    assert main(["run", "indexing", "--engine", "postgres", "--uri", postgres_uri, "--whatif", "--json",
                 "--out", str(out), *SMALL]) == 0
    evaluation = json.loads(capsys.readouterr().out)
    assert evaluation["engine"] == "postgres" and evaluation["work_unit"].startswith("PostgreSQL shared buffers")
    assert evaluation["methods"]["full"]["mean_work_improvement"] > 0.5  # measured for real, not estimated
    assert main(["run", "indexing", "--evaluate-checkpoint", str(out), "--engine", "sqlite", "--json",
                 "--out", str(tmp_path / "transfer")]) == 0
    transfer = json.loads(capsys.readouterr().out)
    assert transfer["source_engine"] == "postgres" and transfer["engine"] == "sqlite"
    assert transfer["greedy_same_as_source"]  # the agent's view does not depend on the engine
    assert transfer["methods"]["dqn"]["indexes"] == evaluation["methods"]["dqn"]["indexes"]
    assert (tmp_path / "transfer" / "evaluation-sqlite.json").exists()
    assert main(["run", "indexing", "--evaluate-checkpoint", str(tmp_path), "--engine", "sqlite"]) == 2
    assert "not a finished indexing run record" in capsys.readouterr().err


def test_a_killed_client_leaves_a_schema_that_the_next_engine_drops(server_dir, tmp_path, small_collection):
    """kill -9 of a run while the server stays up: its private schema stays behind (nobody could drop it);
    the next engine to open on that server removes it, and never a schema an open engine holds."""
    import os
    import signal
    import subprocess
    import sys

    start_server(server_dir)
    out = tmp_path / "killed"
    process = subprocess.Popen([sys.executable, "-m", "wield.cli", "run", "indexing", "--engine", "postgres",
                                "--server-dir", str(server_dir), "--out", str(out), *SMALL[:4], "--episodes", "50",
                                "--repetitions", "1", "--quiet"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               start_new_session=True)
    deadline = time.time() + 300
    while not (out / "episodes.csv").exists():
        assert process.poll() is None and time.time() < deadline, process.stderr.read()
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    time.sleep(1.0)  # the server notices the dropped connection and ends its session
    left = _private_schemas(server_dir)
    assert len(left) == 1
    engine = PostgresEngine.for_collection(small_collection, start_server(server_dir).uri)
    try:
        assert _private_schemas(server_dir) == [engine.schema]  # the orphan went, the open one stays
        other = PostgresEngine.for_collection(small_collection, start_server(server_dir).uri)
        assert sorted(_private_schemas(server_dir)) == sorted([engine.schema, other.schema])
        other.close()
    finally:
        engine.close()
    assert _private_schemas(server_dir) == []


def test_postgres_indexes_whose_names_once_collided_and_reserved_fields(postgres_uri, tmp_path):
    """Issue 37.4 on PostgreSQL: (p asc, q asc) and (p_a__q asc) are two indexes (their names were one);
    issue 37.3: a field named like a system column (ctid, xmin, ...) is refused at load, naming it."""
    from test_sqlite_engine import colliding_collection, write_csv

    from wield.errors import ConfigError
    from workloads.files import load_collection

    pair, single = IndexSpec.of([("p", "asc"), ("q", "asc")]), IndexSpec.of([("p_a__q", "asc")])
    engine = PostgresEngine.for_collection(colliding_collection(tmp_path / "pq.csv"), postgres_uri)
    try:
        engine.create_index(pair)
        engine.create_index(single)
        assert engine.list_indexes() == sorted([pair, single])
        single_bytes = engine.index_size(single)
        engine.drop_index(pair)
        assert engine.list_indexes() == [single] and engine.index_size(single) == single_bytes
    finally:
        engine.close()
    data = write_csv(tmp_path / "data.csv", ["genre", "xmin"], [(f"g{i % 5}", i) for i in range(50)])
    with pytest.raises(ConfigError, match="'xmin'.*ctid, xmin"):
        PostgresEngine.for_collection(load_collection(data), postgres_uri)

"""Logging (issue 46 item 7): Wield's diagnostics go through ``logging`` under the logger ``wield``; ``-v`` shows
the steps of a run on stderr, which the default does not, and ``-q`` hides warnings; every run record, and the
experiment directory, holds a ``wield.log`` with the run's messages, never a password, never written through a
planted link; a program using the Python API sees nothing from Wield's loggers until it configures logging."""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys

import pytest

from wield.cli import main
from wield.cli.verbosity import add_verbosity_options, command_logging, level_of
from wield.errors import DataError
from wield.logs import LOG_FILE, ConsoleHandler, RecordLogHandler, get_logger, record_log, redact_secrets
from wield.workflows.run_record import check_finished

FAST = ["--episodes", "1", "--class", "C1", "--trials", "1"]


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    """One finished one-trial experiment of the caching example, run with ``-vv --quiet`` (INFO on stderr)."""
    out = tmp_path_factory.mktemp("logging") / "experiment"
    assert main(["run", "caching", *FAST, "--quiet", "-vv", "--out", str(out)]) == 0
    return out


def _wield_handlers() -> list[logging.Handler]:
    return [h for h in logging.getLogger("wield").handlers if isinstance(h, (RecordLogHandler, ConsoleHandler))]


def test_the_records_hold_wield_log_with_the_runs_messages(experiment):
    trial = experiment / "trials" / "trial-000"
    lines = (trial / LOG_FILE).read_text().splitlines()
    assert any(" INFO    wield.workflows.trial: trial 0 of caching started in " in line for line in lines), lines
    assert any(" DEBUG   wield.workflows.trial: seeds: " in line for line in lines)  # DEBUG even at -v
    assert lines[-1].split(" INFO    ")[-1].startswith("wield.workflows.trial: trial 0 finished in ")
    directory = (experiment / LOG_FILE).read_text()
    assert "wield.workflows.experiment: experiment " in directory and "1 of 1 trials to run" in directory
    assert "trial 0 of caching started" not in directory  # the trial's own messages are in its record
    check_finished(trial)  # the log, written after "complete", is not under the record's checksums
    assert "verbose" not in (experiment / "config.toml").read_text()  # how it printed is not what it ran
    assert _wield_handlers() == [] and logging.getLogger("wield").level == logging.NOTSET  # nothing left over


def test_verbose_shows_the_steps_the_default_does_not(experiment, capsys):
    resume = ["run", "caching", *FAST, "--out", str(experiment)]  # finished: resuming runs nothing
    assert main(resume) == 0
    default = capsys.readouterr().err
    assert main([*resume, "-v"]) == 0
    verbose = capsys.readouterr().err
    assert "wield: info: experiment " in verbose and " resumed: caching, class C1" in verbose
    assert "wield: info:" not in default and "wield: debug:" not in verbose
    assert main([*resume, "-vv"]) == 0
    assert "wield: debug: trial 0 of " in capsys.readouterr().err  # with its logger's name at the end
    assert "resumed: caching" in (experiment / LOG_FILE).read_text()  # each run appends to the directory's log


def test_levels_quiet_hides_warnings_and_each_v_shows_one_level_more(capsys):
    parser = argparse.ArgumentParser()
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    add_verbosity_options(parser)
    assert "-q" in parser._option_string_actions  # the short form of the command's own --quiet
    log = get_logger("tests.levels")
    expected = {(): "WW", ("-q",): "", ("-v",): "IWW", ("-vv",): "DIWW", ("-q", "-v"): "WW"}
    for flags, shown in expected.items():
        with command_logging(level_of(parser.parse_args(list(flags)))):
            log.debug("D")
            log.info("I")
            log.warning("W")
            log.warning("W")
        err = capsys.readouterr().err
        assert "".join(line.split(": ")[2][0] for line in err.splitlines()) == shown, (flags, err)
    assert _wield_handlers() == []


def test_no_password_reaches_a_log_file_or_stderr(tmp_path, capsys):
    uri = "postgresql://wield:s3cr3t-pw@127.0.0.1:5432/wield?sslmode=disable&password=other-pw"
    assert redact_secrets(uri) == "postgresql://wield:***@127.0.0.1:5432/wield?sslmode=disable&password=***"
    with command_logging(logging.INFO), record_log(tmp_path):
        get_logger("case_studies.indexing.build").info("opening the postgres engine at %s", uri)
        get_logger("tests").info("libpq: host=x PGPASSWORD=pw3 password = 'pw4'")
    written = (tmp_path / LOG_FILE).read_text() + capsys.readouterr().err
    assert "wield.case_studies.indexing.build" in written and "127.0.0.1:5432" in written
    for secret in ("s3cr3t-pw", "other-pw", "pw3", "pw4"):
        assert secret not in written


def test_the_log_is_never_written_through_a_planted_link(tmp_path):
    target = tmp_path / "elsewhere"
    target.write_text("kept\n")
    record = tmp_path / "record"
    record.mkdir()
    os.symlink(target, record / LOG_FILE)
    with pytest.raises(DataError, match="symbolic link"):
        with record_log(record):
            get_logger("tests").warning("never written")
    assert target.read_text() == "kept\n" and _wield_handlers() == []
    os.unlink(record / LOG_FILE)
    os.mkfifo(record / LOG_FILE)  # nothing reads it: refused, never waited on
    with pytest.raises(DataError):
        with record_log(record):
            pass


def test_a_library_user_sees_nothing_until_logging_is_configured():
    script = ("import logging, wield\n"
              "from wield.logs import get_logger\n"
              "assert [type(h).__name__ for h in logging.getLogger('wield').handlers] == ['NullHandler']\n"
              "get_logger('wield.workflows.trial').warning('unseen')\n"
              "logging.basicConfig(level=logging.INFO, format='%(name)s %(message)s')\n"
              "get_logger('case_studies.indexing.build').info('routed')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert done.stderr == "wield.case_studies.indexing.build routed\n", done.stderr

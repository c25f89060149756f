"""The ``wield`` command's exit codes (``wield.cli.exits``): one per kind of outcome, documented in
``wield --help`` and the README."""

from __future__ import annotations

import errno
import sys
from pathlib import Path

import pytest

from wield.cli import main
from wield.cli.exits import EPILOG, INTERNAL, SYSTEM_FAILURE, USAGE
from wield.errors import ConfigError, DataError, SystemFailure

ROOT = Path(__file__).resolve().parents[1]


def _failing_with(monkeypatch, exc: BaseException, capsys) -> tuple[int, str]:
    """Run ``wield run caching`` with its handler raising ``exc``: (exit code, stderr)."""
    def run_command(study, args):
        raise exc

    monkeypatch.setattr(sys.modules["wield.cli.main"], "run_command", run_command)
    code = main(["run", "caching", "--out", "unused"])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("exc, expected", [
    (ConfigError("frames", 1, reason="must be >= 3"), USAGE),
    (DataError("trace.csv: line 3: not a number"), USAGE),
    (SystemFailure("PostgreSQL at x failed while creating an index"), SYSTEM_FAILURE),
    (OSError(errno.ENOSPC, "No space left on device", "model.pt"), SYSTEM_FAILURE),
], ids=["config", "data", "system", "machine"])
def test_each_kind_of_failure_has_its_code_and_one_line(monkeypatch, capsys, exc, expected):
    code, err = _failing_with(monkeypatch, exc, capsys)
    assert code == expected
    assert len(err.strip().splitlines()) == 1 and err.startswith("wield: error: ") and "Traceback" not in err


def test_a_bug_prints_its_traceback_and_exits_70(monkeypatch, capsys):
    code, err = _failing_with(monkeypatch, ZeroDivisionError("division by zero"), capsys)
    assert code == INTERNAL == 70
    assert "Traceback" in err and "internal error (ZeroDivisionError)" in err


def test_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["run", "caching", "--no-such-option"])
    assert exc.value.code == USAGE == 2
    assert main(["run", "caching", "--frames", "1", "--out", "unused"]) == USAGE


def test_the_codes_are_documented_in_the_help_and_the_readme(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert EPILOG in capsys.readouterr().out
    readme = (ROOT / "README.md").read_text()
    for code in ("| 0 |", "| 1 |", "| 2 |", "| 3 |", "| 70 |", "| 130 / 143 |", "| 141 |"):
        assert code in readme, code

"""The fixed baselines' trials of a comparison measure their two rows once, not twice.

Trial i of the method ``full`` and trial i of the method ``none`` do exactly the same measurement: the
no-index and the full-index configurations side by side, in rounds, on trial i's test workload, until the
objective can tell for both rows (``evaluation.evaluate_methods`` with no set of their own); each then reports
its own row. At 1,000,000 documents that is about 31 CPU-seconds a trial, 155 per comparison of five trials
(issue 48). So the trial that runs second takes both rows from the first one's ``evaluation.json`` instead of
measuring them again, and says so (``evaluation.json``: ``rows_from``, the other trial's directory relative
to its own, and a line in the log). ``wield compare`` runs every ``full`` trial before the ``none`` trials
(``methods.METHOD_COSTS``), so with two workers the ``none`` trials find theirs.

The other trial is used only where it is certainly the same measurement: the sibling directory of the same
comparison (``<comparison>/<other>/trials/<this trial's name>``, no component a symbolic link), a record that
finished intact (``run_record.check_finished``: ``complete``, every file matching its checksum), whose
``config.json`` is this trial's but for the method, whose seeds and test workload are this trial's byte for
byte, and whose objective is this trial's. Anything else (no such trial, one still running, one of an other run) and the
trial measures its rows itself, as a trial outside a comparison always does.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping

from case_studies.indexing.evaluation import FULL, NONE
from wield.errors import ConfigError, DataError
from wield.io import read_bytes
from wield.workflows import RunRecord
from wield.workflows.run_record import check_finished

FIXED_PAIR = {FULL: NONE, NONE: FULL}
SAME_BYTES = ("seeds.json", "schedule-test.json")  # the trial's seeds and the test workload measured


def shared_rows(record: RunRecord, method: str, objective: Mapping[str, Any]) -> tuple[dict[str, Any], str] | None:
    """(the rows of the other fixed method's finished trial on the same workload, its directory relative to
    this trial's) where the module docstring's conditions hold, else None."""
    other = FIXED_PAIR.get(method)
    here = record.path
    if other is None or here.parent.name != "trials" or here.parent.parent.name != method:
        return None
    comparison = here.parent.parent.parent
    sibling = comparison / other / "trials" / here.name
    try:
        if any(path.is_symlink() or not path.is_dir() for path in
               (comparison / other, comparison / other / "trials", sibling)):
            return None
        finished = check_finished(sibling)  # complete, every file as its checksums.json says
        for name in SAME_BYTES:
            if read_bytes(sibling / name, follow_symlinks=False) != read_bytes(here / name, follow_symlinks=False):
                return None
        if {**finished.read_json("config.json"), "method": method} != record.read_json("config.json"):
            return None
        evaluation = finished.read_json("evaluation.json")
        methods = evaluation.get("methods")
        if evaluation.get("objective") != json.loads(json.dumps(objective)) or not isinstance(methods, dict) \
                or set(methods) != {FULL, NONE}:
            return None
    except (OSError, ConfigError, DataError, AttributeError):
        return None
    return methods, os.path.relpath(sibling, here)


def rows_source_line(source: str) -> str:
    """The log line of a trial whose rows another trial measured."""
    return (f"evaluation: the no-index and full-index rows as {Path(source).as_posix()} measured them side by side "
            f"on this workload (the same measurement: neither baseline has a set of its own)")

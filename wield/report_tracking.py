"""``wield report DIR --log mlflow``: a report written after a run is added to the MLflow run that tracked it.

A run, an experiment or a comparison tracked with ``--log mlflow`` gets its files as artifacts when it ends
(``wield.tracking``), but its report is written later, by ``wield report``. ``log_report_to_mlflow`` finds
the MLflow run of the record ``DIR`` (in ``MLFLOW_TRACKING_URI`` when set, else in ``DIR/mlruns``, the store
the run wrote into by default): the run whose tag ``run_record`` names ``DIR`` and whose ``kind`` is the
record's own (a single run's ``trial``; an experiment's or comparison's parent run). It copies the report
and its figures under the artifact folder ``report/`` (text with passwords redacted, files over
``MAX_ARTIFACT_BYTES`` left out, as for a run's own artifacts). No such run, or no store, is a
``ConfigError`` that says where it looked.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Sequence

from wield.errors import ConfigError
from wield.logs import get_logger

log = get_logger(__name__)

REPORT_FOLDER = "report"


def _same_record(tag: str | None, directory: Path) -> bool:
    if not tag:
        return False
    if tag == str(directory):
        return True
    try:
        return Path(tag).resolve() == directory.resolve()
    except OSError:
        return False


def log_report_to_mlflow(directory: str | os.PathLike, files: Sequence[Path]) -> str:
    """Copy ``files`` (a report and its figures, all in one directory) into the artifacts (``report/``) of the
    MLflow run that tracked the record ``directory``; that run's id."""
    from wield.tracking import artifact_files
    from wield.tracking_backends import import_mlflow_client, mlflow_store

    record = Path(directory)
    uri = mlflow_store(record, create=False)
    client = import_mlflow_client()(tracking_uri=uri)
    experiments = [e.experiment_id for e in client.search_experiments() if e.name.startswith("wield-")]
    runs = [run for run in (client.search_runs(experiments, max_results=5000) if experiments else [])
            if _same_record(run.data.tags.get("run_record"), record)]
    own = [run for run in runs if run.data.tags.get("kind") in ("experiment", "comparison")] or \
          [run for run in runs if run.data.tags.get("kind") == "trial"]
    if not own:
        raise ConfigError("--log mlflow", str(record), reason=f"no MLflow run of this record in {uri}")
    run = max(own, key=lambda found: found.info.start_time or 0)
    folders = {Path(path).parent for path in files}
    if len(folders) != 1:
        raise ValueError(f"the report's files are in {len(folders)} directories, not one")
    with tempfile.TemporaryDirectory(prefix="wield-report-") as scratch:
        kept, skipped = artifact_files(folders.pop(), [Path(path).name for path in files], scratch)
        for _, path in kept:
            client.log_artifact(run.info.run_id, str(path), REPORT_FOLDER)
    if skipped:
        log.warning("not added to MLflow run %s: %s", run.info.run_id, "; ".join(skipped))
    return str(run.info.run_id)
